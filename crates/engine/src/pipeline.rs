//! The run: for each report, parse -> (fetch sources | decode figures) -> judged
//! units, with only the true dependencies (dedup -> CS; FCQ -> caption revision ->
//! IA, MC) serialising anything. All reports' units share one bounded pool of judge
//! calls, so a large run keeps the configured concurrency busy.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use futures::future::{join_all, BoxFuture};
use futures::{FutureExt, StreamExt};
use serde_json::{json, Value};
use tokio::sync::Semaphore;

use super::dedup::DedupMode;
use super::figures::{content_hash, image_ref, Encoder, FactsMemo, ImageRegistry};
use super::input::{ReportJob, Task};
use super::record::{ReportRecord, UnitRecord, UnitStatus, UsageRecord};
use super::score::{rescore, ScoreOptions};
use super::timing::{with_cpu, ReportTiming, Stage, StageTime};
use tvir_images::{ImageInput, ImageLimits, IqResult};
use tvir_judge::{Judge, JudgeError, JudgeRequest};
use tvir_report::{Figure, FigureKind, Report};
use tvir_rubric::{
    build_request, justification, validate_answer, RequestLabel, Rubric, RubricSet, SourceText,
    UnitInputs,
};
use tvir_sources::{Fetcher, PageOutcome, PageStatus};

/// Units of one metric, each with the usage of its judge answer (None when no answer
/// came back: rules, computed metrics, failures).
pub(super) type JudgedUnits = Vec<(UnitRecord, Option<UsageRecord>)>;

/// Remote pages and images as the pipeline sees them (`Fetcher` is the real one).
pub trait Pages: Send + Sync {
    fn page<'a>(&'a self, url: &'a str) -> BoxFuture<'a, PageOutcome>;
    fn image_bytes<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<Vec<u8>, String>>;

    /// Bytes of a remote figure, telling a broken figure (refused address, HTTP
    /// 404, not an image) from one that was simply not fetched (`--offline`, a
    /// transient network failure). By default every failure is a broken figure.
    fn figure_bytes<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<Vec<u8>, FigureFailure>> {
        Box::pin(
            self.image_bytes(url)
                .map(|r| r.map_err(|e| FigureFailure::Broken(format!("broken link: {e}")))),
        )
    }
}

/// Why a figure has no usable bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FigureFailure {
    /// A property of the report: missing file, refused or dead link, not an image.
    /// Scores 0 where METRICS.md says so.
    Broken(String),
    /// Not fetched in this run (`--offline`, a transient failure): its units are
    /// skipped and the metrics they feed are not evaluated.
    Unavailable(String),
}

impl Pages for Fetcher {
    fn page<'a>(&'a self, url: &'a str) -> BoxFuture<'a, PageOutcome> {
        Box::pin(Fetcher::page(self, url))
    }
    fn image_bytes<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<Vec<u8>, String>> {
        Box::pin(Fetcher::image_bytes(self, url).map(|r| r.map_err(|e| e.to_string())))
    }
    fn figure_bytes<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<Vec<u8>, FigureFailure>> {
        Box::pin(Fetcher::image_bytes(self, url).map(|r| {
            r.map_err(|e| match &e {
                tvir_sources::FetchError::Offline { .. } => {
                    FigureFailure::Unavailable(format!("remote figure not fetched: {e}"))
                }
                tvir_sources::FetchError::Failed { reason, .. } if transient(reason) => {
                    FigureFailure::Unavailable(format!(
                        "remote figure not fetched (transient failure): {e}"
                    ))
                }
                _ => FigureFailure::Broken(format!("broken link: {e}")),
            })
        }))
    }
}

/// Failures that say nothing about the figure: timeouts, connection errors, server
/// errors and rate limits (the fetcher's own wording).
fn transient(reason: &str) -> bool {
    reason.starts_with("timed out")
        || reason.starts_with("connection failed")
        || reason.starts_with("request failed")
        || reason.starts_with("HTTP 5")
        || reason.starts_with("HTTP 429")
        || reason.starts_with("HTTP 408")
}

/// Decoding, judge encoding and IQ of figures. [`ImagePipeline`] is the real one
/// (the `images` module); tests may substitute it.
pub trait FigureOps: Send + Sync {
    /// Decode `bytes`; `Err(reason)` when unusable. With `want_uri`, also the PNG data
    /// URI sent to vision judges.
    fn prepare(&self, bytes: &[u8], name: &str, want_uri: bool) -> Result<Option<String>, String>;
    /// IQ of a report's images, in order (failures count with Q = 0).
    fn score(&self, inputs: &[ImageInput]) -> IqResult;

    /// `prepare(bytes, name, false)` for bytes whose [`content_hash`] is `sha256`,
    /// which an implementation keyed by content uses instead of hashing them again.
    fn check_hashed(&self, bytes: &[u8], sha256: &str, name: &str) -> Result<(), String> {
        let _ = sha256;
        self.prepare(bytes, name, false).map(|_| ())
    }
    /// `score(inputs)` with each input's [`content_hash`] (`None` where it has no
    /// bytes), likewise.
    fn score_hashed(&self, inputs: &[ImageInput], sha256: &[Option<&str>]) -> IqResult {
        let _ = sha256;
        self.score(inputs)
    }
}

/// The `images` module behind [`FigureOps`]. Whether a figure decodes and its IQ
/// analysis come from `facts` (by content hash and decoding limits) when known, so an
/// unchanged image is decoded once, across runs when `facts` has a store.
pub struct ImagePipeline {
    pub limits: ImageLimits,
    pub max_side: u32,
    pub facts: Arc<FactsMemo>,
}

impl ImagePipeline {
    pub fn new(limits: ImageLimits, max_side: u32, store: Option<tvir_store::Store>) -> Self {
        Self {
            limits,
            max_side,
            facts: Arc::new(FactsMemo::new(store)),
        }
    }

    fn facts_of(&self, bytes: &[u8], name: &str) -> super::figures::FigureFacts {
        self.facts_of_hashed(bytes, &content_hash(bytes), name)
    }

    /// [`Self::facts_of`] for bytes whose content hash is known.
    fn facts_of_hashed(
        &self,
        bytes: &[u8],
        sha256: &str,
        name: &str,
    ) -> super::figures::FigureFacts {
        let key = FactsMemo::key_of_hash(sha256, &format!("{:?}", self.limits));
        self.facts.get_or_compute(&key, || {
            match tvir_images::analyze_bytes(bytes, name, &self.limits) {
                Ok(a) => super::figures::FigureFacts {
                    error: None,
                    analysis: Some((&a).into()),
                },
                Err(e) => super::figures::FigureFacts {
                    error: Some(e.to_string()),
                    analysis: None,
                },
            }
        })
    }
}

impl FigureOps for ImagePipeline {
    fn prepare(&self, bytes: &[u8], name: &str, want_uri: bool) -> Result<Option<String>, String> {
        if !want_uri {
            return match self.facts_of(bytes, name).error {
                Some(e) => Err(format!("does not decode as an image: {e}")),
                None => Ok(None),
            };
        }
        let img = tvir_images::decode(bytes, name, &self.limits)
            .map_err(|e| format!("does not decode as an image: {e}"))?;
        tvir_images::to_png_data_uri(&img, self.max_side)
            .map(Some)
            .map_err(|e| format!("cannot encode for the judge: {e}"))
    }
    fn score(&self, inputs: &[ImageInput]) -> IqResult {
        self.score_hashed(inputs, &[])
    }
    fn check_hashed(&self, bytes: &[u8], sha256: &str, name: &str) -> Result<(), String> {
        match self.facts_of_hashed(bytes, sha256, name).error {
            Some(e) => Err(format!("does not decode as an image: {e}")),
            None => Ok(()),
        }
    }
    fn score_hashed(&self, inputs: &[ImageInput], sha256: &[Option<&str>]) -> IqResult {
        use rayon::prelude::*;
        let analyses: Vec<Result<tvir_images::ImageAnalysis, String>> = inputs
            .par_iter()
            .enumerate()
            .map(|(i, input)| {
                let bytes = input
                    .bytes
                    .as_ref()
                    .map_err(|e| format!("{}: {e}", input.label))?;
                let facts = match sha256.get(i).copied().flatten() {
                    Some(hash) => self.facts_of_hashed(bytes, hash, &input.label),
                    None => self.facts_of(bytes, &input.label),
                };
                match (facts.error, facts.analysis.and_then(|a| a.to_analysis())) {
                    (Some(e), _) => Err(e),
                    (None, Some(a)) => Ok(a),
                    (None, None) => Err(format!("{}: no analysis", input.label)),
                }
            })
            .collect();
        tvir_images::iq_from_analyses(inputs, &analyses, &tvir_images::IqParams::paper())
    }
}

/// Turns a report path into the parsed model (`report::load` unless substituted).
pub type ReportLoader = Arc<dyn Fn(&Path) -> Result<Report, String> + Send + Sync>;

/// Whether judges are called.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum JudgeMode {
    Judge,
    /// Judge-free metrics only; judged ones are not evaluated.
    NoJudge,
    /// Build every request, count it, call nothing.
    DryRun,
}

/// Which report-level judges read the caption-revised text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RevisionScope {
    /// IA and MC (the paper).
    Paper,
    /// IA, MC, WQ, ADB and FLC (the reference evaluator).
    Reference,
}

#[derive(Debug, Clone)]
pub struct EvalSettings {
    /// Output folder name of the judge (`{judge_model}` in the layout).
    pub judge_model: String,
    pub runs: u32,
    /// Judge requests in flight across all reports.
    pub concurrency: usize,
    /// Reports prepared (parsed, decoded, fetched) at once.
    pub report_parallelism: usize,
    pub mode: JudgeMode,
    pub dedup: DedupMode,
    pub caption_revision: bool,
    pub revision_scope: RevisionScope,
    pub image_limits: ImageLimits,
    /// Longest side of figures sent to vision judges.
    pub judge_image_max_side: u32,
    pub score: ScoreOptions,
    /// Who extracts references and facts: the parser, the judge, or the judge for
    /// suspect parses only.
    pub extraction: super::extract::ExtractionMode,
}

impl Default for EvalSettings {
    fn default() -> Self {
        Self {
            judge_model: "judge".into(),
            runs: 1,
            concurrency: 16,
            report_parallelism: 8,
            mode: JudgeMode::Judge,
            dedup: DedupMode::Prefilter,
            caption_revision: true,
            revision_scope: RevisionScope::Paper,
            image_limits: ImageLimits::default(),
            judge_image_max_side: 1024,
            score: ScoreOptions::default(),
            extraction: super::extract::ExtractionMode::Rules,
        }
    }
}

/// Counters of this process (not written into per-report results, which must not
/// depend on what the cache already held).
#[derive(Debug, Default)]
pub struct RunStats {
    pub requests: AtomicU64,
    pub answers: AtomicU64,
    pub cache_hits: AtomicU64,
    pub failed_calls: AtomicU64,
    pub skipped_calls: AtomicU64,
    /// Dry run: characters of text and number of images the requests carry.
    pub request_text_chars: AtomicU64,
    pub request_images: AtomicU64,
    pub spend_micro_usd: AtomicU64,
    /// Dry run: the judge client's own estimates (tokens and dollars).
    pub est_prompt_tokens: AtomicU64,
    pub est_completion_tokens: AtomicU64,
    pub est_cost_micro_usd: AtomicU64,
    /// Batch mode: units waiting for a batch wave (their own request, or one they
    /// depend on). A run with pending units is not complete.
    pub pending: AtomicU64,
}

impl RunStats {
    pub fn spend_usd(&self) -> f64 {
        self.spend_micro_usd.load(Ordering::Relaxed) as f64 / 1e6
    }
    /// Prompt tokens of the requests built, for `--dry-run`: the judge's estimate
    /// when it gives one, else 4 characters a token and ~1000 tokens an image.
    pub fn estimated_prompt_tokens(&self) -> u64 {
        match self.est_prompt_tokens.load(Ordering::Relaxed) {
            0 => {
                self.request_text_chars.load(Ordering::Relaxed) / 4
                    + 1000 * self.request_images.load(Ordering::Relaxed)
            }
            n => n,
        }
    }

    /// Estimated dollars of a dry run (None when the judge has no price).
    pub fn estimated_cost_usd(&self) -> Option<f64> {
        match self.est_cost_micro_usd.load(Ordering::Relaxed) {
            0 => None,
            n => Some(n as f64 / 1e6),
        }
    }
}

/// Reason of a unit that waits for a batch wave (batch mode; never written to
/// final outputs, which are only written once nothing is pending).
pub const PENDING_REASON: &str = "pending: waiting for a batch wave";

pub(super) fn is_pending(unit: &UnitRecord) -> bool {
    unit.status == UnitStatus::Skipped && unit.reason.as_deref() == Some(PENDING_REASON)
}

/// Progress reporting seam (the CLI shows a bar; tests ignore it).
pub trait Progress: Send + Sync {
    fn planned(&self, _units: u64) {}
    fn finished(&self, _units: u64, _failed: u64) {}
    fn report_done(&self, _label: &str) {}
}

pub struct NoProgress;
impl Progress for NoProgress {}

/// Everything a run needs; cheap to share (and to clone: every part is shared).
#[derive(Clone)]
pub struct Engine {
    pub rubrics: Arc<RubricSet>,
    pub judge: Option<Arc<dyn Judge>>,
    pub pages: Option<Arc<dyn Pages>>,
    pub settings: EvalSettings,
    pub stats: Arc<RunStats>,
    pub progress: Arc<dyn Progress>,
    pub figure_ops: Arc<dyn FigureOps>,
    pub loader: ReportLoader,
    slots: Arc<Semaphore>,
    /// Figures of the reports in flight, by the reference their requests carry.
    pub images: Arc<ImageRegistry>,
    /// Whether the judge resolves image references itself (after its cache lookup).
    judge_resolves: bool,
    pub timing: Arc<super::timing::RunTiming>,
    /// Figure facts of the built-in image pipeline (reused vs computed counts).
    pub figure_facts: Arc<FactsMemo>,
}

/// The result of asking for one unit.
#[derive(Debug, Clone)]
pub(super) enum Outcome {
    Answer { value: Value, usage: UsageRecord },
    Failed(String),
    Skipped(String),
}

/// Evidence gathered once per report and shared by its runs.
pub(super) struct Evidence {
    pub(super) figures: Vec<FigureEvidence>,
    pub(super) iq: IqResult,
    /// By reference idx; None when sources were not fetched (no judge, dry run).
    pub(super) sources: Option<BTreeMap<String, SourceText>>,
    /// By reference idx: how its page fetch ended (`ok`, `refused`, `blocked`,
    /// `failed`, `unavailable`, or `no_url` / `no_reference`) and why.
    fetch: BTreeMap<String, (String, Option<String>)>,
}

pub(super) struct FigureEvidence {
    /// Why the figure is unusable (missing file, broken link, undecodable, empty path).
    pub(super) invalid: Option<String>,
    /// Why the figure was not fetched in this run (offline, transient failure): its
    /// units are skipped, not scored 0.
    pub(super) unavailable: Option<String>,
    /// The image reference vision requests carry (see [`super::figures`]).
    pub(super) data_uri: Option<String>,
}

impl Evidence {
    /// The audit of `sources` shown in unit details.
    pub(super) fn audit(&self, sources: &[SourceText]) -> Vec<Value> {
        source_audit(sources, &self.fetch)
    }
}

impl FigureEvidence {
    pub(super) fn usable(&self) -> bool {
        self.invalid.is_none() && self.unavailable.is_none()
    }
}

impl Engine {
    pub fn new(
        rubrics: Arc<RubricSet>,
        judge: Option<Arc<dyn Judge>>,
        pages: Option<Arc<dyn Pages>>,
        settings: EvalSettings,
    ) -> Self {
        let slots = Arc::new(Semaphore::new(settings.concurrency.max(1)));
        let figure_ops = Arc::new(ImagePipeline::new(
            settings.image_limits.clone(),
            settings.judge_image_max_side,
            None,
        ));
        let figure_facts = figure_ops.facts.clone();
        let images = Arc::new(ImageRegistry::default());
        let judge_resolves = judge.as_ref().is_some_and(|j| {
            let registry = images.clone();
            j.set_image_resolver(Arc::new(move |part: &str| registry.resolve(part)))
        });
        Self {
            images,
            judge_resolves,
            figure_facts,
            timing: Arc::new(super::timing::RunTiming::new(settings.concurrency.max(1))),
            rubrics,
            judge,
            pages,
            settings,
            stats: Arc::new(RunStats::default()),
            progress: Arc::new(NoProgress),
            figure_ops,
            loader: Arc::new(|p: &Path| tvir_report::load(p).map_err(|e| e.to_string())),
            slots,
        }
    }

    /// Keep figure facts (decodability, IQ analyses) in `store` across runs.
    pub fn with_figure_store(mut self, store: tvir_store::Store) -> Self {
        let ops = ImagePipeline::new(
            self.settings.image_limits.clone(),
            self.settings.judge_image_max_side,
            Some(store),
        );
        self.figure_facts = ops.facts.clone();
        self.figure_ops = Arc::new(ops);
        self
    }

    pub fn with_figure_ops(mut self, ops: Arc<dyn FigureOps>) -> Self {
        self.figure_ops = ops;
        self
    }

    pub fn with_loader(mut self, loader: ReportLoader) -> Self {
        self.loader = loader;
        self
    }

    pub fn with_progress(mut self, progress: Arc<dyn Progress>) -> Self {
        self.progress = progress;
        self
    }

    pub(super) fn rubric(&self, id: &str) -> &Rubric {
        // The set is validated to hold every required rubric at load time.
        self.rubrics.get(id).expect("rubric set validated at load")
    }

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
                let (report, extraction_usage) = self.extract_with_judge(report, &label).await;
                let report = Arc::new(report);
                let evidence = self.gather_evidence(&report, &mut timing).await;
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
                    metric: super::record::REPORT_LOAD.into(),
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

    pub(super) fn empty_record(
        &self,
        job: &ReportJob,
        task: Option<&Task>,
        run: u32,
        report: Option<&Report>,
    ) -> ReportRecord {
        let judge_model = if self.settings.runs > 1 {
            format!("{}-run{run}", self.settings.judge_model)
        } else {
            self.settings.judge_model.clone()
        };
        let count =
            |k: FigureKind| report.map_or(0, |r| r.figures.iter().filter(|f| f.kind == k).count());
        ReportRecord {
            system: job.system.clone(),
            task_id: task.map_or_else(|| job.folder.clone(), |t| t.id.clone()),
            judge_model,
            run,
            language: task.and_then(|t| t.language.clone()).or_else(|| {
                report.map(|r| {
                    serde_json::to_value(r.language)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default()
                })
            }),
            complexity: task.and_then(|t| t.complexity.clone()),
            domain: task.and_then(|t| t.domain.clone()),
            metrics: BTreeMap::new(),
            ta: None,
            va: None,
            overall: None,
            effective_citations: None,
            structural_error_counts: Default::default(),
            structural_errors: report
                .map(|r| r.structural_errors.clone())
                .unwrap_or_default(),
            units: Vec::new(),
            usage: UsageRecord::default(),
            n_images: count(FigureKind::Image),
            n_charts: count(FigureKind::Chart),
            n_figures: report.map_or(0, |r| r.figures.len()),
            error: None,
            extraction: report.map(|r| r.extraction.clone()),
        }
    }

    /// The judge's blind reason, asked only when judges are called (the client
    /// checks once and remembers).
    pub(super) async fn blind_reason(&self) -> Option<String> {
        match (&self.judge, self.settings.mode) {
            (Some(judge), JudgeMode::Judge) => judge.blind_reason().await,
            _ => None,
        }
    }

    fn judging(&self) -> bool {
        self.settings.mode == JudgeMode::Judge
    }

    async fn gather_evidence(&self, report: &Arc<Report>, timing: &mut ReportTiming) -> Evidence {
        let timed = |started: Instant| started.elapsed();
        let (figures, sources) = futures::join!(
            async {
                let t = Instant::now();
                let r = self.figure_evidence(report).await;
                (r, timed(t))
            },
            async {
                let t = Instant::now();
                let r = self.source_texts(report).await;
                (r, timed(t))
            }
        );
        let (((figures, iq), images_cpu), images_wall) = figures;
        let (sources, fetch_wall) = sources;
        timing.images = StageTime::new(images_wall, images_cpu);
        timing.fetch = StageTime::new(fetch_wall, None);
        let (sources, fetch) = match sources {
            Some((s, f)) => (Some(s), f),
            None => (None, BTreeMap::new()),
        };
        Evidence {
            figures,
            iq,
            sources,
            fetch,
        }
    }

    /// Bytes of every figure (local files inside the report folder, or remote), then
    /// decodability and IQ on the blocking pool (rayon inside), from the figure facts
    /// memo when the content is known. Usable figures are registered under the image
    /// reference their requests carry; nothing is encoded here. Also returns the CPU
    /// time of that work.
    async fn figure_evidence(
        &self,
        report: &Arc<Report>,
    ) -> ((Vec<FigureEvidence>, IqResult), Option<std::time::Duration>) {
        let limits = self.settings.image_limits.clone();
        let bytes: Vec<Result<Arc<Vec<u8>>, FigureFailure>> = join_all(
            report
                .figures
                .iter()
                .map(|f| self.figure_bytes(report, f, &limits)),
        )
        .await
        .into_iter()
        .map(|r| r.map(Arc::new))
        .collect();
        let n = report.figures.len();
        let figures_report = report.clone();
        let want_ref = self.settings.mode != JudgeMode::NoJudge;
        let max_side = self.settings.judge_image_max_side;
        let ops = self.figure_ops.clone();
        let work = move || {
            use rayon::prelude::*;
            let report = figures_report;
            let cpu_us = AtomicU64::new(0);
            // Each figure's bytes are hashed once here; the decode check, the image
            // reference and the IQ facts all take that digest.
            let (evidence, hashes): (Vec<FigureEvidence>, Vec<Option<String>>) = bytes
                .par_iter()
                .zip(report.figures.par_iter())
                .map(|(b, f)| {
                    let (e, cpu) =
                        with_cpu(|| figure_check(ops.as_ref(), b, f, want_ref, max_side));
                    if let Some(c) = cpu {
                        cpu_us.fetch_add(c.as_micros() as u64, Ordering::Relaxed);
                    }
                    e
                })
                .unzip();
            let (iq, score_cpu) = with_cpu(|| {
                let (inputs, input_hashes) = iq_inputs(&report, &bytes, &hashes);
                ops.score_hashed(&inputs, &input_hashes)
            });
            let cpu = score_cpu.map(|c| c + std::time::Duration::from_micros(cpu_us.into_inner()));
            (evidence, iq, bytes, cpu)
        };
        match tokio::task::spawn_blocking(work).await {
            Ok((evidence, iq, bytes, cpu)) => {
                let ops = self.figure_ops.clone();
                let encode: Encoder = Arc::new(move |b: &[u8], name: &str| {
                    ops.prepare(b, name, true)
                        .and_then(|u| u.ok_or_else(|| "no image produced".to_string()))
                });
                for ((e, b), f) in evidence.iter().zip(&bytes).zip(&report.figures) {
                    if let (Some(r), Ok(b)) = (&e.data_uri, b) {
                        self.images
                            .register(r, b.clone(), &f.content, encode.clone());
                    }
                }
                ((evidence, iq), cpu)
            }
            Err(e) => (
                (
                    (0..n)
                        .map(|_| FigureEvidence {
                            invalid: Some(format!("image processing crashed: {e}")),
                            unavailable: None,
                            data_uri: None,
                        })
                        .collect(),
                    IqResult {
                        images: Vec::new(),
                        duplicate_penalty: 0.0,
                        iq: 0.0,
                    },
                ),
                None,
            ),
        }
    }

    async fn figure_bytes(
        &self,
        report: &Report,
        figure: &Figure,
        limits: &ImageLimits,
    ) -> Result<Vec<u8>, FigureFailure> {
        let content = figure.content.trim();
        if content.is_empty() {
            return Err(FigureFailure::Broken("empty image path".into()));
        }
        if content.starts_with("http://") || content.starts_with("https://") {
            return match &self.pages {
                Some(p) => p.figure_bytes(content).await,
                None => Err(FigureFailure::Unavailable(
                    "remote image not fetched (no network)".into(),
                )),
            };
        }
        if content.starts_with("data:") {
            return decode_data_uri(content).map_err(FigureFailure::Broken);
        }
        read_local(&report.root, content, limits.max_file_bytes).map_err(FigureFailure::Broken)
    }

    /// Text of every reference cited by a fact or a chart, fetched once per URL.
    #[allow(clippy::type_complexity)]
    async fn source_texts(
        &self,
        report: &Report,
    ) -> Option<(
        BTreeMap<String, SourceText>,
        BTreeMap<String, (String, Option<String>)>,
    )> {
        if !self.judging() {
            return None;
        }
        let mut cited: BTreeSet<&str> = report
            .facts
            .iter()
            .flat_map(|f| f.ref_idxs.iter().map(String::as_str))
            .collect();
        cited.extend(
            report
                .figures
                .iter()
                .filter(|f| f.kind == FigureKind::Chart)
                .flat_map(|f| f.ref_idxs.iter().map(String::as_str)),
        );
        let refs: BTreeMap<&str, &tvir_report::Reference> = report
            .references
            .iter()
            .map(|r| (r.idx.as_str(), r))
            .collect();
        let urls: BTreeSet<String> = cited
            .iter()
            .filter_map(|i| refs.get(i).and_then(|r| r.url.clone()))
            .collect();
        // URL -> (text, status, reason).
        let pages: BTreeMap<String, (String, String, Option<String>)> = match &self.pages {
            None => urls
                .into_iter()
                .map(|u| {
                    let why = Some("no fetcher in this run".to_string());
                    (u, (String::new(), "unavailable".into(), why))
                })
                .collect(),
            Some(p) => {
                futures::stream::iter(urls)
                    .map(|u| async move {
                        let page = p.page(&u).await;
                        let status = page.status.as_str().to_string();
                        let mut reason = page.reason;
                        let text = if page.status == PageStatus::Ok {
                            page.text
                        } else {
                            String::new()
                        };
                        if text.trim().is_empty() && reason.is_none() {
                            reason = Some(if page.status == PageStatus::Ok {
                                "the page has no readable text".to_string()
                            } else {
                                format!("fetch ended {status}")
                            });
                        }
                        (u, (text, status, reason))
                    })
                    .buffer_unordered(16)
                    .collect()
                    .await
            }
        };
        let mut texts = BTreeMap::new();
        let mut fetch = BTreeMap::new();
        for idx in cited {
            let r = refs.get(idx);
            let url = r.and_then(|r| r.url.clone());
            let (text, note) = match (r, url.as_ref().and_then(|u| pages.get(u))) {
                (None, _) => (
                    String::new(),
                    (
                        "no_reference".to_string(),
                        Some(format!("no reference [{idx}] in the report")),
                    ),
                ),
                (Some(_), None) => (
                    String::new(),
                    (
                        "no_url".to_string(),
                        Some("the reference has no URL".to_string()),
                    ),
                ),
                (Some(_), Some((text, status, reason))) => {
                    (text.clone(), (status.clone(), reason.clone()))
                }
            };
            fetch.insert(idx.to_string(), note);
            texts.insert(
                idx.to_string(),
                SourceText {
                    idx: idx.to_string(),
                    url,
                    title: r.and_then(|r| r.title.clone()),
                    text,
                },
            );
        }
        Some((texts, fetch))
    }

    /// Ask the judge about one unit, honouring the mode, the shared concurrency bound
    /// and answer validation.
    pub(super) async fn ask(
        &self,
        rubric: &Rubric,
        inputs: &UnitInputs,
        report: &str,
        unit: &str,
        sample: u32,
    ) -> Outcome {
        if rubric.is_vision() {
            if let Some(reason) = self.blind_reason().await {
                return Outcome::Skipped(reason);
            }
        }
        let request = match self.settings.mode {
            JudgeMode::NoJudge => {
                return Outcome::Skipped("--no-judge: judged metric not evaluated".into())
            }
            _ => match build_request(
                &self.rubrics,
                rubric,
                inputs,
                RequestLabel {
                    report,
                    unit,
                    sample,
                },
            ) {
                Ok(r) => r,
                Err(e) => return Outcome::Failed(e.to_string()),
            },
        };
        self.stats.requests.fetch_add(1, Ordering::Relaxed);
        if self.settings.mode == JudgeMode::DryRun {
            if let Some((prompt, completion, cost)) =
                self.judge.as_ref().and_then(|j| j.estimate(&request))
            {
                self.stats
                    .est_prompt_tokens
                    .fetch_add(prompt, Ordering::Relaxed);
                self.stats
                    .est_completion_tokens
                    .fetch_add(completion, Ordering::Relaxed);
                if let Some(c) = cost {
                    self.stats
                        .est_cost_micro_usd
                        .fetch_add((c * 1e6).round() as u64, Ordering::Relaxed);
                }
            }
            for m in &request.messages {
                for p in &m.parts {
                    match p {
                        tvir_judge::Part::Text { text } => {
                            self.stats
                                .request_text_chars
                                .fetch_add(text.chars().count() as u64, Ordering::Relaxed);
                        }
                        tvir_judge::Part::Image { .. } => {
                            self.stats.request_images.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            }
            self.stats.skipped_calls.fetch_add(1, Ordering::Relaxed);
            return Outcome::Skipped("dry run: not called".into());
        }
        let Some(judge) = &self.judge else {
            return Outcome::Skipped("no judge configured".into());
        };
        let item_count = inputs.checklist.len();
        // A judge that cannot resolve image references gets the data URIs now.
        let request = if self.judge_resolves {
            request
        } else {
            match self.resolve_images(request) {
                Ok(r) => r,
                Err(e) => return Outcome::Failed(e),
            }
        };
        let answer = {
            let _slot = self.slots.acquire().await;
            let _busy = self.timing.call();
            judge.ask(request).await
        };
        match answer {
            Ok(a) => {
                self.stats.answers.fetch_add(1, Ordering::Relaxed);
                if a.cached {
                    self.stats.cache_hits.fetch_add(1, Ordering::Relaxed);
                } else if let Some(c) = a.cost_usd {
                    self.stats
                        .spend_micro_usd
                        .fetch_add((c * 1e6).round() as u64, Ordering::Relaxed);
                }
                let cost = judge.judgment_cost(&a);
                if let Err(e) = validate_answer(rubric, &a.value, item_count) {
                    self.stats.failed_calls.fetch_add(1, Ordering::Relaxed);
                    return Outcome::Failed(e.to_string());
                }
                Outcome::Answer {
                    value: a.value,
                    usage: UsageRecord {
                        calls: 1,
                        cache_hits: 0,
                        failed_calls: 0,
                        prompt_tokens: a.usage.prompt_tokens,
                        completion_tokens: a.usage.completion_tokens,
                        cached_tokens: a.usage.cached_tokens,
                        cost_usd: cost,
                    },
                }
            }
            Err(JudgeError::DryRun) => Outcome::Skipped("dry run: not called".into()),
            Err(JudgeError::Pending) => {
                self.stats.pending.fetch_add(1, Ordering::Relaxed);
                Outcome::Skipped(PENDING_REASON.into())
            }
            Err(JudgeError::BudgetExhausted) => {
                self.stats.skipped_calls.fetch_add(1, Ordering::Relaxed);
                Outcome::Skipped("--max-cost reached: not judged".into())
            }
            Err(e) => {
                self.stats.failed_calls.fetch_add(1, Ordering::Relaxed);
                Outcome::Failed(e.to_string())
            }
        }
    }

    fn resolve_images(&self, mut request: JudgeRequest) -> Result<JudgeRequest, String> {
        for m in &mut request.messages {
            for p in &mut m.parts {
                if let tvir_judge::Part::Image { data_uri } = p {
                    if let Some(uri) = self.images.resolve(data_uri) {
                        *data_uri = uri.map_err(|e| {
                            format!("the figure could not be prepared for the judge: {e}")
                        })?;
                    }
                }
            }
        }
        Ok(request)
    }

    /// Turn an outcome into a unit record (answer kept for re-scoring).
    pub(super) fn unit_from(
        &self,
        metric: &str,
        unit: String,
        outcome: Outcome,
        detail: Value,
    ) -> (UnitRecord, Option<UsageRecord>) {
        let mut rec = UnitRecord {
            metric: metric.into(),
            unit,
            status: UnitStatus::Scored,
            reason: None,
            score: None,
            answer: None,
            justification: None,
            detail,
        };
        let usage = match outcome {
            Outcome::Answer { value, usage } => {
                rec.justification = justification(&value);
                rec.answer = Some(value);
                Some(usage)
            }
            Outcome::Failed(reason) => {
                rec.status = UnitStatus::Failed;
                rec.reason = Some(reason);
                None
            }
            Outcome::Skipped(reason) => {
                rec.status = UnitStatus::Skipped;
                rec.reason = Some(reason);
                None
            }
        };
        (rec, usage)
    }

    pub(super) fn rule_unit(
        &self,
        metric: &str,
        unit: String,
        rule: &str,
        reason: String,
        mut detail: Value,
    ) -> (UnitRecord, Option<UsageRecord>) {
        if let Value::Object(m) = &mut detail {
            m.insert("rule".into(), Value::String(rule.into()));
        }
        (
            UnitRecord {
                metric: metric.into(),
                unit,
                status: UnitStatus::Scored,
                reason: Some(reason),
                score: None,
                answer: None,
                justification: None,
                detail,
            },
            None,
        )
    }
}

/// What one figure's bytes amount to: broken, not fetched, or usable (with the image
/// reference its vision requests carry); and the bytes' content hash, when there are
/// bytes.
fn figure_check(
    ops: &dyn FigureOps,
    bytes: &Result<Arc<Vec<u8>>, FigureFailure>,
    figure: &Figure,
    want_ref: bool,
    max_side: u32,
) -> (FigureEvidence, Option<String>) {
    let b = match bytes {
        Ok(b) => b,
        Err(failure) => return (figure_failure(failure), None),
    };
    let hash = content_hash(b);
    let evidence = match ops.check_hashed(b, &hash, &figure.content) {
        Err(reason) => FigureEvidence {
            invalid: Some(reason),
            unavailable: None,
            data_uri: None,
        },
        Ok(()) => FigureEvidence {
            invalid: None,
            unavailable: None,
            data_uri: want_ref.then(|| image_ref(&hash, max_side)),
        },
    };
    (evidence, Some(hash))
}

/// The evidence of a figure with no bytes.
fn figure_failure(failure: &FigureFailure) -> FigureEvidence {
    match failure {
        FigureFailure::Unavailable(reason) => FigureEvidence {
            invalid: None,
            unavailable: Some(reason.clone()),
            data_uri: None,
        },
        FigureFailure::Broken(reason) => FigureEvidence {
            invalid: Some(reason.clone()),
            unavailable: None,
            data_uri: None,
        },
    }
}

/// IQ inputs: the image figures this run could fetch (the others are skipped units),
/// each with its content hash (from `hashes`, by figure).
fn iq_inputs<'h>(
    report: &Report,
    bytes: &[Result<Arc<Vec<u8>>, FigureFailure>],
    hashes: &'h [Option<String>],
) -> (Vec<ImageInput>, Vec<Option<&'h str>>) {
    report
        .figures
        .iter()
        .zip(bytes)
        .zip(hashes)
        .filter(|((f, _), _)| f.kind == FigureKind::Image)
        .filter_map(|((f, b), h)| {
            let bytes = match b {
                Ok(b) => Ok(b.as_ref().clone()),
                Err(FigureFailure::Broken(r)) => Err(r.clone()),
                Err(FigureFailure::Unavailable(_)) => return None,
            };
            let input = ImageInput {
                label: f.content.clone(),
                bytes,
            };
            Some((input, h.as_deref()))
        })
        .unzip()
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

pub(super) fn no_task_reason(label: &str) -> String {
    format!("report {label} matches no task in the tasks file")
}

pub(super) fn figure_detail(f: &Figure) -> Value {
    json!({"content": f.content, "kind": f.kind, "line": f.line, "caption": f.caption})
}

pub(super) fn cited_sources(
    idxs: &[String],
    sources: Option<&BTreeMap<String, SourceText>>,
) -> Vec<SourceText> {
    idxs.iter()
        .map(|i| {
            sources
                .and_then(|s| s.get(i).cloned())
                .unwrap_or_else(|| SourceText {
                    idx: i.clone(),
                    url: None,
                    title: None,
                    text: String::new(),
                })
        })
        .collect()
}

/// Sources in one order whatever order the fact cites them in (numeric indices
/// numerically), so prompts of facts citing overlapping sources share the longest
/// prefix a provider's prompt cache can serve.
pub(super) fn canonical_order(mut sources: Vec<SourceText>) -> Vec<SourceText> {
    sources.sort_by(|a, b| {
        let key = |s: &SourceText| (s.idx.parse::<u64>().unwrap_or(u64::MAX), s.idx.clone());
        key(a).cmp(&key(b))
    });
    sources
}

/// Each cited source as the unit details show it: its address, how much text it
/// gave, and how its fetch ended (`ok`, `refused`, `blocked`, `failed`,
/// `unavailable`, `no_url`, `no_reference`) with the reason when it gave none.
fn source_audit(
    sources: &[SourceText],
    fetch: &BTreeMap<String, (String, Option<String>)>,
) -> Vec<Value> {
    sources
        .iter()
        .map(|s| {
            let (status, reason) = match fetch.get(&s.idx) {
                Some((status, reason)) => (status.as_str(), reason.clone()),
                None => (
                    "no_reference",
                    Some(format!("no reference [{}] in the report", s.idx)),
                ),
            };
            json!({"idx": s.idx, "url": s.url, "chars": s.text.chars().count(),
                   "fetch": status, "reason": reason})
        })
        .collect()
}

/// Upper bound of units a report will produce (for the progress bar).
pub(super) fn planned_units(report: &Report, task: Option<&Task>) -> u64 {
    let charts = report
        .figures
        .iter()
        .filter(|f| f.kind == FigureKind::Chart)
        .count();
    let images = report
        .figures
        .iter()
        .filter(|f| f.kind == FigureKind::Image)
        .count();
    (report.facts.len()
        + task.map_or(1, |t| t.checklist.len())
        + 4
        + 2 * report.figures.len()
        + 2 * charts
        + images) as u64
}

/// Read a figure file that must lie inside the report folder, capped in size.
fn read_local(root: &Path, content: &str, cap: u64) -> Result<Vec<u8>, String> {
    let rel = content.split(['?', '#']).next().unwrap_or(content);
    let rel = percent_decode(rel);
    let rel_path = Path::new(&rel);
    if rel_path.is_absolute() {
        return Err(format!("absolute image path refused: {content}"));
    }
    let root_abs = std::fs::canonicalize(root).map_err(|e| format!("report folder: {e}"))?;
    let full = std::fs::canonicalize(root_abs.join(rel_path))
        .map_err(|_| format!("missing image file: {content}"))?;
    if !full.starts_with(&root_abs) {
        return Err(format!("image path leaves the report folder: {content}"));
    }
    let meta = std::fs::metadata(&full).map_err(|e| format!("{content}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("not a file: {content}"));
    }
    if meta.len() > cap {
        return Err(format!(
            "{content}: {} bytes exceeds the {cap}-byte image cap",
            meta.len()
        ));
    }
    std::fs::read(&full).map_err(|e| format!("{content}: {e}"))
}

fn percent_decode(s: &str) -> String {
    if !s.contains('%') {
        return s.to_string();
    }
    url::form_urlencoded::parse(format!("x={}", s.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_else(|| s.to_string())
}

fn decode_data_uri(uri: &str) -> Result<Vec<u8>, String> {
    use base64::Engine as _;
    let (head, data) = uri.split_once(',').ok_or("malformed data: URI")?;
    if !head.ends_with(";base64") {
        return Err("data: URI is not base64".into());
    }
    base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| format!("data: URI: {e}"))
}
