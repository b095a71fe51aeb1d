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

    pub(crate) fn judging(&self) -> bool {
        self.settings.mode == JudgeMode::Judge
    }
}
