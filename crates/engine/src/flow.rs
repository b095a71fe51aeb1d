//! The per-report flow: load the report (on the blocking pool), judge extraction
//! when asked, gather evidence once, judge every run, release the report's figures;
//! many reports at a time, each on its own task. A report that cannot be loaded
//! gets one failed `report_load` unit per run.

use std::sync::Arc;
use std::time::Instant;

use futures::future::join_all;
use futures::StreamExt;
use serde_json::json;

use crate::engine::Engine;
use crate::extract::Extractor;
use crate::input::{ReportJob, Task};
use crate::record::{ReportRecord, UnitRecord, UnitStatus, UsageRecord, REPORT_LOAD};
use crate::score::rescore;
use crate::timing::{with_cpu, ReportTiming, Stage, StageTime};

impl Engine {
    /// Evaluate every job; `on_report` is called with each report's records (one per
    /// run) as soon as they are final, so outputs appear while the run goes on.
    pub async fn evaluate_all(
        &self,
        jobs: Vec<(ReportJob, Option<Task>)>,
        on_report: &(dyn Fn(&[ReportRecord]) + Sync),
    ) -> Vec<ReportRecord> {
        let mut all: Vec<ReportRecord> = self
            .evaluate_each(jobs, &|records, _timing| {
                on_report(&records);
                records
            })
            .await
            .into_iter()
            .flatten()
            .collect();
        all.sort_by(|a, b| (&a.system, &a.task_id, a.run).cmp(&(&b.system, &b.task_id, b.run)));
        all
    }

    /// Evaluate every job, handing each report's records (one per run) to `keep` as
    /// soon as they are final; only what `keep` returns stays in memory, so a caller
    /// that writes the records and keeps compact rows runs in memory flat in the
    /// number of reports. Results come in completion order.
    pub async fn evaluate_each<T: Send>(
        &self,
        jobs: Vec<(ReportJob, Option<Task>)>,
        keep: &(dyn Fn(Vec<ReportRecord>, ReportTiming) -> T + Sync),
    ) -> Vec<T> {
        let parallel = self.settings.report_parallelism.max(1);
        // Each report is a task of its own on the runtime's worker threads: polled
        // here, inside the caller's `block_on`, every report would share one thread.
        let mut stream = futures::stream::iter(jobs)
            .map(|(job, task)| {
                let engine = self.clone();
                let (job2, task2) = (job.clone(), task.clone());
                let handle =
                    tokio::spawn(
                        async move { engine.evaluate_report_timed(&job, task.as_ref()).await },
                    );
                async move {
                    match handle.await {
                        Ok(done) => done,
                        Err(e) => {
                            let why = format!("evaluating the report crashed: {e}");
                            let records = self.failed_records(&job2, task2.as_ref(), &why);
                            (records, ReportTiming::default())
                        }
                    }
                }
            })
            .buffer_unordered(parallel);
        let mut kept = Vec::new();
        while let Some((records, timing)) = stream.next().await {
            kept.push(keep(records, timing));
        }
        kept
    }

    /// Evaluate one report for every run.
    pub async fn evaluate_report(&self, job: &ReportJob, task: Option<&Task>) -> Vec<ReportRecord> {
        self.evaluate_report_timed(job, task).await.0
    }

    /// [`Self::evaluate_report`] with the report's stage times (also added to the
    /// run totals in [`Engine::timing`]; writing is the caller's).
    pub async fn evaluate_report_timed(
        &self,
        job: &ReportJob,
        task: Option<&Task>,
    ) -> (Vec<ReportRecord>, ReportTiming) {
        let mut timing = ReportTiming::default();
        let label = format!("{}/{}", job.system, job.folder);
        let path = job.path.clone();
        let loader = self.loader.clone();
        let started = Instant::now();
        let loaded = tokio::task::spawn_blocking(move || with_cpu(|| loader(&path)))
            .await
            .map(|(r, cpu)| {
                timing.parse = StageTime::new(started.elapsed(), cpu);
                r
            })
            .map_err(|e| format!("parser crashed: {e}"))
            .and_then(|r| r);
        let records = match loaded {
            Err(error) => self.failed_records(job, task, &error),
            Ok(report) => {
                // Charts drawn by script: rendered (or found in the render cache)
                // before anything reads the figures.
                let (report, render) = match self.renderer.render_report(&report).await {
                    Some((rendered, result)) => (rendered, Some(result)),
                    None => (report, None),
                };
                let extractor = Extractor {
                    rubrics: &self.rubrics,
                    mode: self.settings.mode,
                    extraction: self.settings.extraction,
                    judge: self,
                };
                let (mut report, extraction_usage) =
                    extractor.extract_with_judge(report, &label).await;
                if self.settings.figure_kinds == crate::settings::FigureKinds::Path {
                    kinds_by_path(&mut report);
                }
                let report = Arc::new(report);
                let evidence = self
                    .gather_evidence(&report, render.as_ref(), &mut timing)
                    .await;
                let judging = Instant::now();
                let runs = (1..=self.settings.runs).map(|run| {
                    let report = report.clone();
                    let evidence = &evidence;
                    let label = &label;
                    async move {
                        self.judge_report(job, task, run, &report, evidence, label)
                            .await
                    }
                });
                let mut records = join_all(runs).await;
                timing.judge_wait = StageTime::new(judging.elapsed(), None);
                for f in &evidence.figures {
                    if let Some(r) = &f.data_uri {
                        self.images.release(r);
                    }
                }
                // Extraction is done once per report: its calls count in the first run.
                if let Some(first) = records.first_mut() {
                    add_usage(&mut first.usage, &extraction_usage);
                }
                records
            }
        };
        self.progress.report_done(&label);
        for stage in [Stage::Parse, Stage::Fetch, Stage::Images, Stage::Judge] {
            self.timing.add(stage, *timing.get_mut(stage));
        }
        (records, timing)
    }

    /// The records of a report that could not be evaluated: one failed
    /// `report_load` unit per run, with `error` as its reason.
    fn failed_records(
        &self,
        job: &ReportJob,
        task: Option<&Task>,
        error: &str,
    ) -> Vec<ReportRecord> {
        (1..=self.settings.runs)
            .map(|run| {
                let mut r = self.empty_record(job, task, run, None);
                r.error = Some(error.to_string());
                r.units.push(UnitRecord {
                    metric: REPORT_LOAD.into(),
                    unit: "report".into(),
                    status: UnitStatus::Failed,
                    reason: Some(error.to_string()),
                    score: None,
                    answer: None,
                    justification: None,
                    detail: json!({"path": job.path.display().to_string()}),
                });
                rescore(&r, &self.rubrics, &self.settings.score)
            })
            .collect()
    }
}

/// `--figure-kinds path`: each figure typed by its path prefix alone, as the
/// reference evaluator: `images/` (or `./images/`) or an http(s) address is an
/// image, `charts/` (or `./charts/`) a chart, anything else unknown (no CQ, no
/// IQ). A chart this run drew from a page's script stays a chart (the reference's
/// authors saved such charts under `charts/` by hand).
pub(crate) fn kinds_by_path(report: &mut tvir_report::Report) {
    use tvir_report::FigureKind;
    for f in &mut report.figures {
        if f.render.is_some() {
            continue;
        }
        let c = f.content.trim();
        f.kind = if c.starts_with("images/") || c.starts_with("./images/") || c.starts_with("http")
        {
            FigureKind::Image
        } else if c.starts_with("charts/") || c.starts_with("./charts/") {
            FigureKind::Chart
        } else {
            FigureKind::Unknown
        };
    }
}

fn add_usage(total: &mut UsageRecord, more: &UsageRecord) {
    total.calls += more.calls;
    total.cache_hits += more.cache_hits;
    total.failed_calls += more.failed_calls;
    total.prompt_tokens += more.prompt_tokens;
    total.completion_tokens += more.completion_tokens;
    total.cached_tokens += more.cached_tokens;
    if let Some(c) = more.cost_usd {
        total.cost_usd = Some(total.cost_usd.unwrap_or(0.0) + c);
    }
}
