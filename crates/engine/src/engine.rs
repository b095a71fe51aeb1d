//! [`Engine`]: everything a run shares (rubrics, judge, pages, settings, counters,
//! the judge-call bound, the figure registry) and how it is set up. The per-report
//! flow is in [`crate::flow`], evidence gathering in [`crate::evidence`], unit
//! judging in [`crate::judging`].

use std::path::Path;
use std::sync::Arc;

use tokio::sync::Semaphore;

use crate::figure_ops::{FigureOps, ImagePipeline};
use crate::figures::{FactsMemo, ImageRegistry};
use crate::pages::Pages;
use crate::render::{BrowserChoice, RenderSettings, Renderer, NO_BROWSER_REMEDY};
use crate::settings::{EvalSettings, JudgeMode};
use crate::stats::{NoProgress, Progress, RunStats};
use crate::timing::RunTiming;
use tvir_judge::Judge;
use tvir_report::Report;
use tvir_rubric::{Rubric, RubricSet};

/// Turns a report path into the parsed model (`report::load` unless substituted).
pub type ReportLoader = Arc<dyn Fn(&Path) -> Result<Report, String> + Send + Sync>;

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
    pub(crate) slots: Arc<Semaphore>,
    /// Figures of the reports in flight, by the reference their requests carry.
    pub images: Arc<ImageRegistry>,
    /// Whether the judge resolves image references itself (after its cache lookup).
    pub(crate) judge_resolves: bool,
    pub timing: Arc<RunTiming>,
    /// Figure facts of the built-in image pipeline (reused vs computed counts).
    pub figure_facts: Arc<FactsMemo>,
    /// Figure thumbnails of the output folder by content (reused vs decoded counts).
    pub thumbnails: Arc<crate::figures::ThumbnailMemo>,
    /// The render stage for charts drawn by script (by default: no browser, so
    /// those charts are not evaluated).
    pub renderer: Arc<Renderer>,
    /// Cited pages read and not read, and whether any server answered.
    pub page_watch: Arc<crate::network::PageWatch>,
    /// (report label, sample) of the reports that sent the judge a request (or
    /// tried to) rather than reading every answer from the cache; taken out when
    /// the report's markers are made (see [`Engine::blind_markers_reason`]).
    pub(crate) sending: Arc<std::sync::Mutex<std::collections::HashSet<(String, u32)>>>,
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
            settings.image_size.max_side(),
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
            thumbnails: Arc::default(),
            page_watch: Arc::default(),
            sending: Arc::default(),
            timing: Arc::new(RunTiming::new(settings.concurrency.max(1))),
            rubrics,
            judge,
            pages,
            settings,
            stats: Arc::new(RunStats::default()),
            progress: Arc::new(NoProgress),
            figure_ops,
            loader: Arc::new(|p: &Path| tvir_report::load(p).map_err(|e| e.to_string())),
            slots,
            renderer: Arc::new(Renderer::new(
                RenderSettings::new(BrowserChoice::Unavailable(format!(
                    "no browser in this run; {NO_BROWSER_REMEDY}"
                ))),
                None,
                None,
            )),
        }
    }

    /// Render charts drawn by script with `renderer` (its browser, cache and
    /// resource fetcher).
    pub fn with_renderer(mut self, renderer: Arc<Renderer>) -> Self {
        self.renderer = renderer;
        self
    }

    /// Keep figure facts (decodability, IQ analyses) and thumbnails in `store` across
    /// runs.
    pub fn with_figure_store(mut self, store: tvir_store::Store) -> Self {
        self.thumbnails = Arc::new(crate::figures::ThumbnailMemo::new(Some(store.clone())));
        let ops = ImagePipeline::new(
            self.settings.image_limits.clone(),
            self.settings.image_size.max_side(),
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

    pub(crate) fn rubric(&self, id: &str) -> &Rubric {
        // The set is validated to hold every required rubric at load time.
        self.rubrics.get(id).expect("rubric set validated at load")
    }

    /// The judge's blind reason, asked only when judges are called (the client
    /// checks once and remembers).
    pub(crate) async fn blind_reason(&self) -> Option<String> {
        match (&self.judge, self.settings.mode) {
            (Some(judge), JudgeMode::Judge) => judge.blind_reason().await,
            _ => None,
        }
    }

    /// Whether the vision check waits until a vision request misses the cache (a
    /// judge that can tell what is cached, judging for real): a fully cached run
    /// then sends nothing at all, and does not wait on a server that is down.
    pub(crate) fn defers_vision_check(&self) -> bool {
        self.settings.mode == JudgeMode::Judge
            && self.judge.as_ref().is_some_and(|j| j.defers_vision_check())
    }

    /// The reason a vision unit is not asked: the judge is blind. With the check
    /// deferred, a verdict known at the start decides; else a request the cache
    /// answers is asked (nothing is sent), and one it does not is checked first.
    pub(crate) async fn vision_unit_blind_reason(
        &self,
        request: &tvir_judge::JudgeRequest,
    ) -> Option<String> {
        let judge = self.judge.as_ref()?;
        match judge.known_blind_reason() {
            Some(known) => known,
            None if judge.answers_from_cache(request) => None,
            None => self.blind_reason().await,
        }
    }

    /// The reason every vision metric of a report is marked not evaluated (the
    /// judge is blind), asked once the report's units are done. With the check
    /// deferred, a report that sent nothing (every answer from the cache) takes
    /// the verdict known at the start and never causes a check; one that sent a
    /// request takes the check's verdict. So a report's markers depend on that
    /// report, the start and the check, never on which reports ran first.
    pub(crate) async fn blind_markers_reason(&self, label: &str, sample: u32) -> Option<String> {
        if !self.defers_vision_check() {
            return self.blind_reason().await;
        }
        let sent = self
            .sending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&(label.to_string(), sample));
        match self.judge.as_ref()?.known_blind_reason() {
            Some(known) => known,
            None if sent => self.blind_reason().await,
            None => None,
        }
    }

    pub(crate) fn judging(&self) -> bool {
        self.settings.mode == JudgeMode::Judge
    }
}
