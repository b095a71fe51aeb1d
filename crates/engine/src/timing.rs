//! Where the time went: wall and CPU time by stage (parse, fetch, images, waiting
//! for the judge, writing), per report and for the run, and how busy the judge pool
//! was (mean and peak calls in flight against `--concurrency`).
//!
//! CPU time is the time of the thread doing the stage's work (Unix; `null`
//! elsewhere): parsing runs on one blocking thread, figure work on the rayon pool
//! (each figure's decode and analysis measured on the thread that ran it). Fetching
//! and judging are asynchronous I/O and get a wall time only; the process's total
//! CPU is in `run.json`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{json, Value};

/// Stages of a report, in pipeline order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Parse,
    Fetch,
    Images,
    Judge,
    Write,
}

pub const STAGES: [Stage; 5] = [
    Stage::Parse,
    Stage::Fetch,
    Stage::Images,
    Stage::Judge,
    Stage::Write,
];

impl Stage {
    pub fn name(self) -> &'static str {
        match self {
            Stage::Parse => "parse",
            Stage::Fetch => "fetch",
            Stage::Images => "images",
            Stage::Judge => "judge_wait",
            Stage::Write => "write",
        }
    }
}

/// CPU time of the calling thread, when the platform tells.
pub fn thread_cpu() -> Option<Duration> {
    #[cfg(unix)]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes one timespec through a valid pointer.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        (rc == 0).then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// User + system CPU time of the whole process.
pub fn process_cpu() -> Option<Duration> {
    #[cfg(unix)]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes one timespec through a valid pointer.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
        (rc == 0).then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// CPU time spent by `f` on this thread (None when unmeasurable), and its result.
pub fn with_cpu<T>(f: impl FnOnce() -> T) -> (T, Option<Duration>) {
    let before = thread_cpu();
    let out = f();
    let spent = match (before, thread_cpu()) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    (out, spent)
}

/// Wall and CPU seconds of one stage.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct StageTime {
    pub wall_seconds: f64,
    /// None where the stage is I/O (fetch, judge) or the platform cannot measure.
    pub cpu_seconds: Option<f64>,
}

impl StageTime {
    pub fn new(wall: Duration, cpu: Option<Duration>) -> Self {
        Self {
            wall_seconds: wall.as_secs_f64(),
            cpu_seconds: cpu.map(|c| c.as_secs_f64()),
        }
    }
}

/// Stage times of one report (`report.json`'s `timing` object).
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ReportTiming {
    pub parse: StageTime,
    pub fetch: StageTime,
    pub images: StageTime,
    pub judge_wait: StageTime,
    pub write: StageTime,
}

impl ReportTiming {
    pub fn get_mut(&mut self, stage: Stage) -> &mut StageTime {
        match stage {
            Stage::Parse => &mut self.parse,
            Stage::Fetch => &mut self.fetch,
            Stage::Images => &mut self.images,
            Stage::Judge => &mut self.judge_wait,
            Stage::Write => &mut self.write,
        }
    }
}

#[derive(Debug)]
struct Pool {
    in_flight: usize,
    peak: usize,
    /// Integral of calls in flight over time (call-seconds).
    busy: f64,
    last_change: Instant,
    first: Option<Instant>,
    last_end: Option<Instant>,
}

/// Run totals: stage sums over reports and the judge pool's occupancy.
#[derive(Debug)]
pub struct RunTiming {
    concurrency: usize,
    wall_us: [AtomicU64; 5],
    cpu_us: [AtomicU64; 5],
    pool: Mutex<Pool>,
    calls: AtomicU64,
}

impl RunTiming {
    pub fn new(concurrency: usize) -> Self {
        Self {
            concurrency,
            wall_us: Default::default(),
            cpu_us: Default::default(),
            pool: Mutex::new(Pool {
                in_flight: 0,
                peak: 0,
                busy: 0.0,
                last_change: Instant::now(),
                first: None,
                last_end: None,
            }),
            calls: AtomicU64::new(0),
        }
    }

    fn index(stage: Stage) -> usize {
        STAGES.iter().position(|s| *s == stage).unwrap_or(0)
    }

    /// Add a report's stage time to the run totals.
    pub fn add(&self, stage: Stage, t: StageTime) {
        let i = Self::index(stage);
        self.wall_us[i].fetch_add((t.wall_seconds * 1e6) as u64, Ordering::Relaxed);
        if let Some(c) = t.cpu_seconds {
            self.cpu_us[i].fetch_add((c * 1e6) as u64, Ordering::Relaxed);
        }
    }

    fn change(&self, delta: isize) {
        let now = Instant::now();
        let mut p = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        if p.first.is_none() {
            p.first = Some(now);
        }
        p.busy += p.in_flight as f64 * now.duration_since(p.last_change).as_secs_f64();
        p.last_change = now;
        p.in_flight = (p.in_flight as isize + delta).max(0) as usize;
        p.peak = p.peak.max(p.in_flight);
        if delta < 0 {
            p.last_end = Some(now);
        }
    }

    /// A judge call holds a pool slot until the guard drops.
    pub fn call(&self) -> CallGuard<'_> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.change(1);
        CallGuard(self)
    }

    /// Mean and peak calls in flight between the first call and the last answer.
    pub fn pool(&self) -> (f64, usize, f64) {
        let p = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        let span = match (p.first, p.last_end) {
            (Some(a), Some(b)) => b.duration_since(a).as_secs_f64(),
            _ => 0.0,
        };
        let mean = if span > 0.0 { p.busy / span } else { 0.0 };
        (mean, p.peak, span)
    }

    /// The `timing` block of `run.json`.
    pub fn to_json(&self, wall: Duration, process_cpu: Option<Duration>) -> Value {
        let mut stages = serde_json::Map::new();
        for (i, s) in STAGES.iter().enumerate() {
            let cpu = self.cpu_us[i].load(Ordering::Relaxed);
            let measured = !matches!(s, Stage::Fetch | Stage::Judge) && thread_cpu().is_some();
            stages.insert(
                s.name().into(),
                json!({
                    "wall_seconds": self.wall_us[i].load(Ordering::Relaxed) as f64 / 1e6,
                    "cpu_seconds": measured.then_some(cpu as f64 / 1e6),
                }),
            );
        }
        let (mean, peak, span) = self.pool();
        json!({
            "wall_seconds": wall.as_secs_f64(),
            "process_cpu_seconds": process_cpu.map(|c| c.as_secs_f64()),
            "stages_summed_over_reports": stages,
            "judge_pool": {
                "concurrency": self.concurrency,
                "calls": self.calls.load(Ordering::Relaxed),
                "mean_in_flight": mean,
                "peak_in_flight": peak,
                "busy_fraction": if self.concurrency > 0 { mean / self.concurrency as f64 } else { 0.0 },
                "active_seconds": span,
            },
        })
    }

    /// The one-line breakdown printed at the end of `tvir eval`: `wall` and
    /// `process_cpu` must cover the same span (the whole command).
    pub fn line(&self, wall: Duration, process_cpu: Option<Duration>) -> String {
        let mut parts = vec![format!("time {}", seconds(wall.as_secs_f64()))];
        if let Some(c) = process_cpu {
            parts.push(format!("cpu {}", seconds(c.as_secs_f64())));
        }
        for (i, s) in STAGES.iter().enumerate() {
            parts.push(format!(
                "{} {}",
                s.name(),
                seconds(self.wall_us[i].load(Ordering::Relaxed) as f64 / 1e6)
            ));
        }
        let (mean, peak, _) = self.pool();
        parts.push(format!(
            "judge pool {:.1}/{} mean, {} peak in flight",
            mean, self.concurrency, peak
        ));
        format!("{} (stage times summed over reports)", parts.join(" | "))
    }
}

/// Seconds for the one-line breakdown: two decimals below 10 s, so a short run
/// never reads `0.0s`; one above.
fn seconds(s: f64) -> String {
    if s < 10.0 {
        format!("{s:.2}s")
    } else {
        format!("{s:.1}s")
    }
}

pub struct CallGuard<'a>(&'a RunTiming);

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        self.0.change(-1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_counts_peak_and_calls() {
        let t = RunTiming::new(4);
        {
            let _a = t.call();
            let _b = t.call();
            let _c = t.call();
        }
        let _d = t.call();
        drop(_d);
        let (mean, peak, _) = t.pool();
        assert_eq!(peak, 3);
        assert!((0.0..=3.0).contains(&mean), "{mean}");
        let v = t.to_json(Duration::from_secs(1), None);
        assert_eq!(v["judge_pool"]["calls"], 4);
        assert_eq!(v["judge_pool"]["peak_in_flight"], 3);
    }

    #[test]
    fn stage_totals_add_up() {
        let t = RunTiming::new(1);
        t.add(Stage::Parse, StageTime::new(Duration::from_millis(5), None));
        t.add(Stage::Parse, StageTime::new(Duration::from_millis(7), None));
        let v = t.to_json(Duration::from_secs(1), None);
        let w = v["stages_summed_over_reports"]["parse"]["wall_seconds"]
            .as_f64()
            .unwrap();
        assert!((w - 0.012).abs() < 1e-6, "{w}");
        assert!(t.line(Duration::from_secs(1), None).contains("parse 0.01s"));
    }

    #[test]
    fn short_runs_do_not_read_zero() {
        let t = RunTiming::new(1);
        let line = t.line(Duration::from_millis(40), Some(Duration::from_millis(30)));
        assert!(line.starts_with("time 0.04s | cpu 0.03s |"), "{line}");
        let line = t.line(Duration::from_secs_f64(12.34), None);
        assert!(line.starts_with("time 12.3s |"), "{line}");
    }

    #[test]
    fn cpu_of_work_is_measured_on_unix() {
        let (_, cpu) = with_cpu(|| (0..200_000u64).map(|x| x * x).sum::<u64>());
        if cfg!(unix) {
            assert!(cpu.is_some());
        }
    }
}
