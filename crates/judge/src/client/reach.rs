//! Whether the judge server is still there. Every attempt that ends in a
//! connection-level failure (refused, no route, DNS failure, connect time-out) is
//! reported here, every HTTP reply too (whatever its status: a server that answers
//! is reachable). When the server has refused every attempt for the whole of
//! `JudgeConfig::unreachable_window` (at least [`MIN_REFUSALS`] attempts, no reply in
//! between), it is declared gone: the attempt loop stops asking, units waiting
//! for a retry wake up at once, and each fails with "judge server unreachable since
//! TIME". A server that answers again within the window resets the count, so a
//! restart shorter than the window loses nothing.

use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

/// Refused attempts needed, besides the elapsed window, before the server is
/// declared gone (one refusal followed by a long idle spell proves little).
pub const MIN_REFUSALS: u32 = 3;

#[derive(Default)]
struct Streak {
    /// First refusal since the last reply: when (monotonic, and wall clock for
    /// the message) and what the error said.
    first: Option<(Instant, SystemTime)>,
    refusals: u32,
    last_error: String,
}

pub(crate) struct Reachability {
    window: Duration,
    streak: Mutex<Streak>,
    gone: OnceLock<String>,
    woken: tokio::sync::Notify,
}

impl Reachability {
    pub(crate) fn new(window: Duration) -> Self {
        Self {
            window,
            streak: Mutex::new(Streak::default()),
            gone: OnceLock::new(),
            woken: tokio::sync::Notify::new(),
        }
    }

    /// The server answered (any HTTP status).
    pub(crate) fn on_reply(&self) {
        let mut streak = self.streak.lock().unwrap_or_else(|p| p.into_inner());
        *streak = Streak::default();
    }

    /// An attempt failed at connection level at `now` / `wall`. Returns the reason
    /// when this refusal is the one that declares the server gone.
    pub(crate) fn on_refused(&self, error: &str, now: Instant, wall: SystemTime) -> Option<String> {
        if self.gone.get().is_some() {
            return None;
        }
        let mut streak = self.streak.lock().unwrap_or_else(|p| p.into_inner());
        let (since, since_wall) = *streak.first.get_or_insert((now, wall));
        streak.refusals += 1;
        streak.last_error = error.to_string();
        if streak.refusals < MIN_REFUSALS || now.duration_since(since) < self.window {
            return None;
        }
        let reason = format!(
            "judge server unreachable since {} ({} attempts in {:.0} s, none answered; last: {}); \
             start the server and run again: answers already received are reused from the cache",
            format_wall(since_wall),
            streak.refusals,
            now.duration_since(since).as_secs_f64(),
            streak.last_error,
        );
        drop(streak);
        if self.gone.set(reason.clone()).is_ok() {
            self.woken.notify_waiters();
            Some(reason)
        } else {
            None
        }
    }

    /// Why the server is considered gone, once it is.
    pub(crate) fn gone(&self) -> Option<&String> {
        self.gone.get()
    }

    /// Sleep `wait`, or less when the server is declared gone meanwhile.
    pub(crate) async fn sleep(&self, wait: Duration) {
        let woken = self.woken.notified();
        if self.gone.get().is_some() {
            return;
        }
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            () = woken => {}
        }
    }
}

/// `2026-12-02 08:01:02 UTC`.
fn format_wall(at: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(at)
        .format("%Y-%m-%d %H:%M:%S UTC")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gone_after_the_window_and_enough_refusals() {
        let r = Reachability::new(Duration::from_secs(20));
        let t0 = Instant::now();
        let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_790_000_000);
        assert!(r.on_refused("refused", t0, wall).is_none());
        // Enough refusals, too early.
        for s in 1..5 {
            assert!(r
                .on_refused("refused", t0 + Duration::from_secs(s), wall)
                .is_none());
        }
        assert!(r.gone().is_none());
        let why = r
            .on_refused("connection refused", t0 + Duration::from_secs(21), wall)
            .expect("declared gone");
        assert!(
            why.starts_with("judge server unreachable since 2026-"),
            "{why}"
        );
        assert!(why.contains("6 attempts in 21 s"), "{why}");
        assert!(why.contains("connection refused"), "{why}");
        assert_eq!(r.gone(), Some(&why));
        // Declared once.
        assert!(r
            .on_refused("refused", t0 + Duration::from_secs(22), wall)
            .is_none());
    }

    #[test]
    fn a_reply_within_the_window_resets_the_streak() {
        let r = Reachability::new(Duration::from_secs(20));
        let t0 = Instant::now();
        let wall = SystemTime::now();
        for s in 0..10 {
            assert!(r
                .on_refused("refused", t0 + Duration::from_secs(s), wall)
                .is_none());
        }
        r.on_reply();
        // 25 s after the first refusal, but only 3 s after the new first one.
        for s in 22..25 {
            assert!(r
                .on_refused("refused", t0 + Duration::from_secs(s), wall)
                .is_none());
        }
        assert!(r.gone().is_none());
    }

    #[test]
    fn two_refusals_over_a_long_spell_are_not_enough() {
        let r = Reachability::new(Duration::from_secs(20));
        let t0 = Instant::now();
        let wall = SystemTime::now();
        assert!(r.on_refused("refused", t0, wall).is_none());
        assert!(r
            .on_refused("refused", t0 + Duration::from_secs(60), wall)
            .is_none());
        assert!(r
            .on_refused("refused", t0 + Duration::from_secs(61), wall)
            .is_some());
    }

    #[tokio::test]
    async fn sleepers_wake_when_the_server_is_declared_gone() {
        let r = std::sync::Arc::new(Reachability::new(Duration::ZERO));
        let sleeper = {
            let r = r.clone();
            tokio::spawn(async move { r.sleep(Duration::from_secs(3600)).await })
        };
        tokio::task::yield_now().await;
        let now = Instant::now();
        let wall = SystemTime::now();
        for _ in 0..MIN_REFUSALS {
            r.on_refused("refused", now, wall);
        }
        assert!(r.gone().is_some());
        // Returns although it asked for an hour (the test would hang otherwise).
        sleeper.await.unwrap();
    }
}
