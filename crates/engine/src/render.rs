//! The render stage (between parse and judging): a report whose charts a script
//! draws is shown in a headless browser ([`tvir_browser`]), and each chart found in
//! the live page becomes a figure of kind `chart` through
//! [`tvir_report::parse_rendered`], with its PNG held in memory for the image stages
//! and the judges.
//!
//! - **Cache first.** A render is stored (tvir-store `renders`) under the hash of the
//!   served page, the browser version and the viewport, plus the bytes of every
//!   file and resource the page used. The browser version is remembered by
//!   executable path, size and modification time, so a warm re-run starts no
//!   browser and spawns no `--version`. A render that lost charts to itself (the
//!   page's time limit, a browser failure) is stored marked incomplete and rendered
//!   again by the next run with a browser ([`cache`]).
//! - **One browser per run**, started on the first cache miss, shared by every
//!   report (the browser bounds the pages rendered at once), ended by
//!   [`Renderer::close`] when the run ends (and by the browser crate's own guards
//!   on a crash).
//! - **Resources** (scripts, styles, fonts of public hosts) come through
//!   [`crate::Pages::resource`]: the fetcher's address rules, size caps and
//!   persistent cache; `--offline` is cache only.
//! - **No browser, no zero**: without one, the report's charts stay pseudo-visuals
//!   and become `not_evaluated` units with the reason and the remedy.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::pages::{Pages, ResourceFailure};
use crate::render_requests::{
    error_of_decoration, folder_file_hash, is_chart_script, is_data_request, page_scripts_text,
    unused_by_scripts,
};
use tvir_browser::{
    Browser, BrowserConfig, ChartData, DroppedChart, PageRequest, RequestOutcome, RequestRecord,
    Resource, ResourceKind, ResourceProvider, ScriptError, SlotProbe,
};
use tvir_report::render::{Candidate, RenderMap, RenderPlan, RenderedFigure};
use tvir_report::Report;
use tvir_store::Store;

#[cfg(test)]
mod browser_tests;
mod cache;
mod key;

/// Prefix of the unit name of a chart drawn by script that was not rendered
/// (`script_chart:K`, K counting those charts in the report).
pub const UNRENDERED_UNIT: &str = "script_chart:";

/// The remedy named wherever a chart could not be rendered for want of a browser.
pub const NO_BROWSER_REMEDY: &str =
    "install Chromium (e.g. `apt-get install chromium`) or pass --browser PATH";

/// Where the run's browser comes from (resolved by the command line:
/// `--browser`, `TVIR_BROWSER`, `tvir.toml`, then `PATH`).
#[derive(Debug, Clone, PartialEq)]
pub enum BrowserChoice {
    Executable(PathBuf),
    /// No browser in this run: why, with the remedy.
    Unavailable(String),
}

/// How the render stage runs.
#[derive(Debug, Clone)]
pub struct RenderSettings {
    pub browser: BrowserChoice,
    /// Pages rendered at the same time.
    pub max_pages: usize,
    /// Time limit for one attempt at one page.
    pub page_budget: Duration,
}

impl RenderSettings {
    pub fn new(browser: BrowserChoice) -> Self {
        Self {
            browser,
            max_pages: 2,
            page_budget: Duration::from_secs(20),
        }
    }
}

/// A render as stored in the cache and used by a run.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StoredRender {
    pub charts: Vec<StoredChart>,
    pub requests: Vec<RequestRecord>,
    pub notes: Vec<String>,
    pub failure: Option<String>,
    /// Charts the live page had that gave no picture, with why.
    #[serde(default)]
    pub dropped: Vec<DroppedChart>,
    /// Errors the page's scripts threw.
    #[serde(default)]
    pub script_errors: Vec<ScriptError>,
    /// The browser version that made this render.
    #[serde(default)]
    pub browser: Option<String>,
    /// What the live page showed at each candidate's elements (a render stored before
    /// they were recorded has none: its undrawn candidates all count as chart places).
    #[serde(default)]
    pub slots: Vec<SlotProbe>,
    /// Why the render is incomplete: charts it lost to itself (the page's time limit,
    /// the browser failing), not to the page. None: complete. See [`cache`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<String>,
    /// Renders of the page in a row that ended incomplete, this one included (0: a
    /// complete render, or one stored before they were counted). At
    /// [`cache::MAX_INCOMPLETE_RENDERS`] the render is served as it is: a page that
    /// loses charts to every render is not made again on every run.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub attempts: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoredChart {
    pub library: String,
    pub anchor: Option<usize>,
    pub frame: Option<String>,
    pub selector: String,
    /// The PNG, base64 (standard alphabet).
    pub png: String,
    pub width: u32,
    pub height: u32,
    pub data: ChartData,
}

/// What the render stage made of one report.
#[derive(Debug, Clone, Default)]
pub struct RenderResult {
    /// `rendered`, `cached`, `unavailable` (no browser) or `failed` (the page
    /// crashed or hung twice).
    pub status: String,
    pub reason: Option<String>,
    /// Browser version the charts were rendered with.
    pub browser: Option<String>,
    /// PNG bytes of each rendered chart, by the figure `content` naming it.
    pub pngs: BTreeMap<String, Arc<Vec<u8>>>,
    /// Library, size and data of each rendered chart, by figure `content`.
    pub charts: BTreeMap<String, (String, u32, u32)>,
    /// Charts expected that no figure stands for, each with why: skipped (no
    /// browser) or failed (missing library, page failure).
    pub unrendered: Vec<Unrendered>,
    pub requests: Vec<RequestRecord>,
    pub notes: Vec<String>,
    /// Why the render used is incomplete (charts lost to the page's time limit or a
    /// browser failure, which another render may capture), None when complete.
    pub incomplete: Option<String>,
}

/// A chart the report was expected to show that was not rendered.
#[derive(Debug, Clone, PartialEq)]
pub struct Unrendered {
    pub candidate: Candidate,
    /// Skipped (not our failure to judge: no browser) rather than failed.
    pub skipped: bool,
    pub reason: String,
    /// The chart's library when known: the live page's for a chart it dropped, else
    /// the one chart library the page loads or drew with (none when several).
    pub library: Option<String>,
}

/// Counters of the render stage (the warm re-run test asserts on them).
#[derive(Debug, Default)]
pub struct RenderCounters {
    pub browser_starts: AtomicUsize,
    pub version_probes: AtomicUsize,
    pub pages_rendered: AtomicUsize,
    pub cache_hits: AtomicUsize,
    pub charts: AtomicUsize,
    /// Charts not rendered for want of a browser, and the reports holding them.
    pub skipped_charts: AtomicUsize,
    pub skipped_reports: AtomicUsize,
    /// Pages rendered again because their stored render was incomplete.
    pub rerendered: AtomicUsize,
    /// Renders used that were incomplete, and the charts they lost to themselves.
    pub incomplete_reports: AtomicUsize,
    pub lost_charts: AtomicUsize,
}

enum BrowserState {
    NotStarted,
    Running(Arc<Browser>),
    Failed(String),
}

/// The run's render stage: settings, cache, the lazily started browser, counters.
pub struct Renderer {
    settings: RenderSettings,
    store: Option<Store>,
    pages: Option<Arc<dyn Pages>>,
    version: tokio::sync::OnceCell<Result<String, String>>,
    browser: tokio::sync::Mutex<BrowserState>,
    pub counters: RenderCounters,
    said: AtomicBool,
}

impl Renderer {
    /// `store` keeps renders across runs (None: this process only); `pages` gives
    /// the pages their scripts, styles and fonts.
    pub fn new(
        settings: RenderSettings,
        store: Option<Store>,
        pages: Option<Arc<dyn Pages>>,
    ) -> Self {
        Self {
            settings,
            store,
            pages,
            version: tokio::sync::OnceCell::new(),
            browser: tokio::sync::Mutex::new(BrowserState::NotStarted),
            counters: RenderCounters::default(),
            said: AtomicBool::new(false),
        }
    }

    /// Why charts are not rendered in this run, if they are not.
    pub fn unavailable_reason(&self) -> Option<&str> {
        match &self.settings.browser {
            BrowserChoice::Unavailable(r) => Some(r),
            BrowserChoice::Executable(_) => None,
        }
    }

    /// End the browser, if one was started. Called when the run ends (on error too).
    pub async fn close(&self) {
        let state = std::mem::replace(&mut *self.browser.lock().await, BrowserState::NotStarted);
        if let BrowserState::Running(b) = state {
            match Arc::try_unwrap(b) {
                Ok(browser) => browser.close().await,
                // Still held by a render in flight: dropping the last handle ends it.
                Err(shared) => drop(shared),
            }
        }
    }

    /// Render `report` when it needs a browser: the re-parsed report (its charts
    /// as figures) and what the stage did; None when nothing in it needs one.
    pub async fn render_report(&self, report: &Report) -> Option<(Report, RenderResult)> {
        let plan = tvir_report::render::render_plan(report)?;
        let exe = match &self.settings.browser {
            BrowserChoice::Unavailable(reason) => {
                return Some(self.without_browser(report, &plan, reason).await);
            }
            BrowserChoice::Executable(p) => p.clone(),
        };
        let version = match self.version(&exe).await {
            Ok(v) => v,
            Err(e) => return Some(self.without_browser(report, &plan, &e).await),
        };
        let (stored, from_cache) = match self.cached(report, &plan, &version).await {
            Some(mut hit) if cache::settled(&hit) => {
                self.counters.cache_hits.fetch_add(1, Ordering::Relaxed);
                if hit.incomplete.is_some() {
                    hit.notes.push(format!(
                        "the stored render is incomplete after {} renders in a row that lost charts to themselves: it is used, not made again",
                        hit.attempts
                    ));
                }
                (hit, true)
            }
            // Nothing stored, or a render that lost charts to itself.
            stale => match self
                .render_again(report, &plan, &version, &exe, stale)
                .await
            {
                Ok(r) => r,
                Err(e) => return Some((report.clone(), self.skipped(&plan, &e))),
            },
        };
        Some(self.apply(report, &plan, stored, from_cache, version))
    }

    /// No browser in this run: a render of the same page, resources and viewport in
    /// the cache is used whatever browser version made it (the record names that
    /// version); without one every candidate is skipped for `reason`.
    async fn without_browser(
        &self,
        report: &Report,
        plan: &RenderPlan,
        reason: &str,
    ) -> (Report, RenderResult) {
        let Some(mut stored) = self.cached_any_version(report, plan).await else {
            return (report.clone(), self.skipped(plan, reason));
        };
        self.counters.cache_hits.fetch_add(1, Ordering::Relaxed);
        let version = stored
            .browser
            .clone()
            .unwrap_or_else(|| "an unrecorded browser".into());
        stored.notes.push(format!(
            "no browser in this run ({reason}): the cached render made by {version} is used"
        ));
        self.apply(report, plan, stored, true, version)
    }

    /// Every candidate of `plan` skipped for `reason` (said once per run).
    fn skipped(&self, plan: &RenderPlan, reason: &str) -> RenderResult {
        let n = plan.candidates.len();
        if n > 0 {
            self.counters.skipped_charts.fetch_add(n, Ordering::Relaxed);
            self.counters
                .skipped_reports
                .fetch_add(1, Ordering::Relaxed);
            if !self.said.swap(true, Ordering::Relaxed) {
                tracing::warn!("charts drawn by script are not evaluated in this run: {reason}");
            }
        }
        RenderResult {
            status: "unavailable".into(),
            reason: Some(reason.to_string()),
            unrendered: plan
                .candidates
                .iter()
                .map(|c| Unrendered {
                    candidate: c.clone(),
                    skipped: true,
                    reason: format!("chart drawn by script not rendered: {reason}"),
                    library: None,
                })
                .collect(),
            ..RenderResult::default()
        }
    }

    /// The browser's version, from the store when this executable (path, size,
    /// modification time) was asked before.
    async fn version(&self, exe: &Path) -> Result<String, String> {
        self.version
            .get_or_init(|| async {
                let meta = std::fs::metadata(exe)
                    .map_err(|e| format!("browser {}: {e}; {NO_BROWSER_REMEDY}", exe.display()))?;
                let size = meta.len() as i64;
                let mtime = meta
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_secs() as i64);
                let name = exe.display().to_string();
                if let Some(store) = &self.store {
                    if let Ok(Some(v)) =
                        store.with_conn(|c| tvir_store::renders::get_version(c, &name, size, mtime))
                    {
                        return Ok(v);
                    }
                }
                self.counters.version_probes.fetch_add(1, Ordering::Relaxed);
                let exe2 = exe.to_path_buf();
                let v = tokio::task::spawn_blocking(move || tvir_browser::browser_version(&exe2))
                    .await
                    .map_err(|e| format!("browser version: {e}"))?
                    .map_err(|e| format!("{e}; {NO_BROWSER_REMEDY}"))?;
                if let Some(store) = &self.store {
                    let _ = store
                        .with_conn(|c| tvir_store::renders::put_version(c, &name, size, mtime, &v));
                }
                Ok(v)
            })
            .await
            .clone()
    }

    /// [`page_key`] with this build's browser-stage code.
    fn page_key(&self, plan: &RenderPlan, version: Option<&str>) -> String {
        key::page_key(plan, version, tvir_browser::CODE_FINGERPRINT)
    }

    /// The render key: the page key plus the current content of what it used.
    async fn render_key(&self, page_key: &str, root: &Path, used: &[Used]) -> Option<String> {
        let mut h = Sha256::new();
        h.update(page_key.as_bytes());
        for u in used {
            let digest = match u.kind.as_str() {
                "folder" => folder_file_hash(root, &u.url)?,
                // Missing when the page was rendered: the key holds while it still is.
                "absent" => {
                    let pages = self.pages.as_ref()?;
                    match pages.resource(&u.url, "*/*").await {
                        Ok((body, _)) => hex::encode(Sha256::digest(&body)),
                        Err(ResourceFailure::Missing(_)) => "absent".into(),
                        Err(_) => return None,
                    }
                }
                _ => {
                    let pages = self.pages.as_ref()?;
                    let (body, _) = pages.resource(&u.url, "*/*").await.ok()?;
                    hex::encode(Sha256::digest(&body))
                }
            };
            h.update(b"\n");
            h.update(u.url.as_bytes());
            h.update(b"\0");
            h.update(digest.as_bytes());
        }
        Some(hex::encode(h.finalize()))
    }

    async fn cached(
        &self,
        report: &Report,
        plan: &RenderPlan,
        version: &str,
    ) -> Option<StoredRender> {
        self.cached_under(
            report,
            self.page_key(plan, Some(version)),
            plan.candidates.len(),
        )
        .await
    }

    /// The newest render of the page by any browser version.
    async fn cached_any_version(&self, report: &Report, plan: &RenderPlan) -> Option<StoredRender> {
        self.cached_under(report, self.page_key(plan, None), plan.candidates.len())
            .await
    }

    /// The render stored under `page_key` for the files and resources as they are
    /// now; `expected`: the charts the render plan expects.
    async fn cached_under(
        &self,
        report: &Report,
        page_key: String,
        expected: usize,
    ) -> Option<StoredRender> {
        let store = self.store.as_ref()?;
        let used = store
            .with_conn(|c| tvir_store::renders::get_used(c, &page_key))
            .ok()??;
        let used: Vec<Used> = serde_json::from_str(&used).ok()?;
        let key = self.render_key(&page_key, &report.root, &used).await?;
        let json = store
            .with_conn(|c| tvir_store::renders::get_render(c, &key))
            .ok()??;
        let mut stored: StoredRender = serde_json::from_str(&json).ok()?;
        // A render stored before incomplete ones were marked says so in its reasons.
        if stored.incomplete.is_none() {
            stored.incomplete = cache::incompleteness(&stored, expected);
        }
        Some(stored)
    }

    async fn browser(&self, exe: &Path) -> Result<Arc<Browser>, String> {
        let mut state = self.browser.lock().await;
        match &*state {
            BrowserState::Running(b) => return Ok(b.clone()),
            BrowserState::Failed(e) => return Err(e.clone()),
            BrowserState::NotStarted => {}
        }
        let mut cfg = BrowserConfig::new(exe.to_path_buf());
        cfg.max_pages = self.settings.max_pages.max(1);
        cfg.page_budget = self.settings.page_budget;
        self.counters.browser_starts.fetch_add(1, Ordering::Relaxed);
        match Browser::start(cfg).await {
            Ok(b) => {
                let b = Arc::new(b);
                *state = BrowserState::Running(b.clone());
                Ok(b)
            }
            Err(e) => {
                let why = format!("{e}; {NO_BROWSER_REMEDY}");
                *state = BrowserState::Failed(why.clone());
                Err(why)
            }
        }
    }

    async fn render_fresh(
        &self,
        report: &Report,
        plan: &RenderPlan,
        version: &str,
        exe: &Path,
        prior_attempts: u32,
    ) -> Result<StoredRender, String> {
        let browser = self.browser(exe).await?;
        let resources = Arc::new(PageResources {
            pages: self.pages.clone(),
            failures: Mutex::new(Vec::new()),
        });
        let render = browser
            .render(PageRequest {
                root: report.root.clone(),
                entry: plan.entry.clone(),
                entry_override: Some(plan.html.as_bytes().to_vec()),
                resources: resources.clone(),
                probes: plan.probes.clone(),
            })
            .await;
        self.counters.pages_rendered.fetch_add(1, Ordering::Relaxed);
        use base64::Engine as _;
        let mut stored = StoredRender {
            charts: render
                .charts
                .into_iter()
                .map(|c| StoredChart {
                    png: base64::engine::general_purpose::STANDARD.encode(&c.png),
                    library: c.library,
                    anchor: c.anchor,
                    frame: c.frame,
                    selector: c.selector,
                    width: c.width,
                    height: c.height,
                    data: c.data,
                })
                .collect(),
            requests: render.requests,
            notes: render.notes,
            failure: render.failure,
            dropped: render.dropped,
            script_errors: render.script_errors,
            slots: render.slots,
            browser: Some(version.to_string()),
            incomplete: None,
            attempts: 0,
        };
        let failures = resources
            .failures
            .lock()
            .map(|f| f.clone())
            .unwrap_or_default();
        for (url, f) in &failures {
            if let ResourceFailure::Missing(_) = f {
                stored.notes.push(format!(
                    "{url}: not in the cache (offline); seed it with `tvir cache put {url} FILE`"
                ));
            } else {
                stored.notes.push(f.reason().to_string());
            }
        }
        stored.incomplete = cache::incompleteness(&stored, plan.candidates.len());
        if stored.incomplete.is_some() {
            stored.attempts = prior_attempts + 1;
        }
        self.keep(report, plan, version, &stored, &failures).await;
        Ok(stored)
    }

    /// The report re-parsed with the charts of `stored`, and the stage's result.
    fn apply(
        &self,
        report: &Report,
        plan: &RenderPlan,
        stored: StoredRender,
        from_cache: bool,
        version: String,
    ) -> (Report, RenderResult) {
        use base64::Engine as _;
        let mut map = RenderMap::default();
        let mut result = RenderResult {
            status: if from_cache { "cached" } else { "rendered" }.into(),
            browser: Some(version),
            requests: stored.requests.clone(),
            notes: stored.notes.clone(),
            incomplete: stored.incomplete.clone(),
            ..RenderResult::default()
        };
        self.count_lost(&stored);
        let mut seen = std::collections::HashSet::new();
        for c in &stored.charts {
            let Some(at) = c.anchor else {
                continue;
            };
            let doc = c.frame.clone().unwrap_or_else(|| plan.entry.clone());
            // `report.html#sales` for `#sales`, `charts/x.html#div > svg` otherwise.
            let element = c.selector.strip_prefix('#').unwrap_or(&c.selector);
            let mut content = format!("{doc}#{element}");
            let mut k = 2;
            while !seen.insert(content.clone()) {
                content = format!("{doc}#{element} ({k})");
                k += 1;
            }
            let Ok(png) = base64::engine::general_purpose::STANDARD.decode(&c.png) else {
                continue;
            };
            result.pngs.insert(content.clone(), Arc::new(png));
            result
                .charts
                .insert(content.clone(), (c.library.clone(), c.width, c.height));
            map.charts.entry(at).or_default().push(RenderedFigure {
                content,
                // A caption the page shows next to a chart in a frame: the report's
                // own text cannot give it.
                caption: c.frame.as_ref().and(c.data.caption.clone()),
                caption_source: c.frame.as_ref().and(c.data.caption_source.clone()),
                title: c.data.title.clone(),
                heading: c.data.heading.clone(),
                chart_data: serde_json::to_value(&c.data).ok(),
            });
        }
        self.counters
            .charts
            .fetch_add(result.pngs.len(), Ordering::Relaxed);
        let mut parsed = tvir_report::parse_rendered(
            &report.text,
            report.format,
            &report.path,
            &report.root,
            &map,
        );
        parsed.warnings = report.warnings.clone();
        parsed.warnings.extend(
            stored
                .notes
                .iter()
                .map(|n| format!("{}: rendering: {n}", report.path.display())),
        );
        // Scripts (never a style sheet, a font or an analytics script) that the page
        // could not have: missing from the cache offline, or refused (a private or
        // loopback address, a host the fetcher may not reach).
        let mut missing = Vec::new();
        let mut refused = Vec::new();
        let mut data = Vec::new();
        for r in &stored.requests {
            let RequestOutcome::Refused { reason } = &r.outcome else {
                continue;
            };
            // Data a script asked for (fetch, XHR) and did not get: a cause too.
            if is_data_request(r) && data.len() < 3 {
                data.push(format!("{} ({reason})", r.url));
                continue;
            }
            if !is_chart_script(r) || missing.len() + refused.len() >= 5 {
                continue;
            }
            if reason.contains("tvir cache put") {
                let url = &r.url;
                missing.push(format!(
                    "{url}: not in the cache (offline); seed it with `tvir cache put {url} FILE`"
                ));
            } else {
                refused.push(format!("{} ({reason})", r.url));
            }
        }
        let errors: Vec<String> = stored
            .script_errors
            .iter()
            .filter(|e| !error_of_decoration(&e.message, e.r#where.as_deref(), &stored.requests))
            .take(3)
            .map(|e| match &e.r#where {
                Some(w) => format!("{} (at {w})", e.message),
                None => e.message.clone(),
            })
            .collect();
        // Charts the live page had that gave no picture fail with their own reason,
        // at their own place when their anchor is known.
        let lines = tvir_report::line_index(&report.text);
        let page_library = page_library(&stored);
        let mut dropped_units: Vec<Unrendered> = Vec::new();
        for d in &stored.dropped {
            let line = d.anchor.map(&lines);
            let candidate = line
                .and_then(|l| plan.candidates.iter().find(|c| c.line == l).cloned())
                .unwrap_or_else(|| Candidate {
                    line: line.unwrap_or(0),
                    what: format!("{} chart {}", d.library, d.selector),
                });
            // A chart left blank while a script of the page failed (its library threw
            // while building it) was not drawn because of that error: say so.
            let cause = if d.reason.contains("blank") && !errors.is_empty() {
                format!("; a script of the page failed: {}", errors.join("; "))
            } else {
                String::new()
            };
            // A chart lost to the render (its time limit, the browser failing) says
            // the render is incomplete and what comes of it.
            let incomplete = if cache::lost_to_render(d) {
                "; the render is incomplete (the chart was lost to the render, not to the page): the next run with a browser renders the page again"
            } else {
                ""
            };
            let why = d.reason.strip_prefix("not captured: ").unwrap_or(&d.reason);
            dropped_units.push(Unrendered {
                candidate,
                skipped: false,
                reason: format!(
                    "{} chart {} drawn but not captured: {why}{cause}{incomplete}",
                    d.library, d.selector
                ),
                library: Some(d.library.clone()),
            });
        }
        let dropped_count = dropped_units.len();
        let drawn = parsed.figures.iter().filter(|f| f.render.is_some()).count();
        let short = plan
            .candidates
            .len()
            .saturating_sub(drawn + dropped_units.len());
        if let Some(failure) = &stored.failure {
            let failure = &if from_cache {
                format!("{failure} (remembered from an earlier render of the same page bytes, resources and viewport)")
            } else {
                failure.clone()
            };
            result.status = "failed".into();
            result.reason = Some(failure.clone());
            result.unrendered = plan
                .candidates
                .iter()
                .map(|c| Unrendered {
                    candidate: c.clone(),
                    skipped: false,
                    reason: format!("the page could not be rendered: {failure}"),
                    library: page_library.clone(),
                })
                .collect();
        } else {
            result.unrendered = dropped_units;
            // What the live page showed on each candidate's line: a candidate whose
            // elements show no place for a chart (a control, a line of text, a small or
            // unrelated drawing, a chart file holding no chart, an element gone) is no
            // chart and gives no unit, whatever the cause of missing charts.
            let mut shown: BTreeMap<usize, Vec<&SlotProbe>> = BTreeMap::new();
            for p in &stored.slots {
                shown.entry(lines(p.anchor)).or_default().push(p);
            }
            let scripts = page_scripts_text(report, &stored.requests);
            let chart_place = |c: &Candidate| match shown.get(&c.line) {
                // No element of the live page on the candidate's line (the parse placed
                // it where the page has none): nothing to show a chart in. A render made
                // before the page was probed counts every candidate.
                None => stored.slots.is_empty(),
                // A chart was found there (its figure may stand on another line).
                Some(ps) if ps.iter().any(|p| p.state == "chart") => false,
                // Only empty boxes and blank canvases: a chart's place if a script
                // of the page (the report's own or a file of its folder) meant to
                // draw there.
                Some(ps) if ps.iter().all(|p| p.state == "empty") => {
                    !unused_by_scripts(&report.text, &scripts, c)
                }
                Some(ps) => ps.iter().any(|p| p.is_chart_slot()),
            };
            // Fewer charts than expected and a cause: libraries missing or refused,
            // else a script error. Without a cause the candidates the live page did
            // not draw a chart into are no charts: no unit.
            let reason = if !missing.is_empty() {
                Some(format!(
                    "chart library not available: {}",
                    missing.join("; ")
                ))
            } else if !refused.is_empty() {
                Some(format!(
                    "chart not drawn: its page's scripts were refused: {}",
                    refused.join("; ")
                ))
            } else if !data.is_empty() {
                Some(format!(
                    "chart not drawn: data its page's scripts asked for was refused: {}",
                    data.join("; ")
                ))
            } else if !errors.is_empty() {
                Some(format!(
                    "chart not drawn: a script of the page failed: {}",
                    errors.join("; ")
                ))
            } else {
                // No cause in the page, in a render that ran short of time: the
                // charts missing were lost to the render.
                stored.incomplete.as_ref().map(|why| {
                    format!("chart not drawn: the render is incomplete ({why}): the next run with a browser renders the page again")
                })
            };
            // A chart file the page could not draw says why on its own, unless it is
            // the library missing or refused, which the cause above names with its
            // remedy.
            let own_reason = |c: &Candidate| {
                shown.get(&c.line).and_then(|ps| {
                    ps.iter().find(|p| p.state == "failed").and_then(|p| {
                        let detail = p.detail.as_deref().unwrap_or("its library failed");
                        let library = detail.starts_with("library not loaded");
                        (!(library && reason.is_some()))
                            .then(|| format!("{} not drawn: {detail}", c.what))
                    })
                })
            };
            let taken: HashSet<usize> =
                result.unrendered.iter().map(|u| u.candidate.line).collect();
            let drawn_lines: HashSet<usize> = parsed
                .figures
                .iter()
                .filter(|f| f.render.is_some())
                .map(|f| f.line)
                .collect();
            let open: Vec<&Candidate> = plan
                .candidates
                .iter()
                .filter(|c| !taken.contains(&c.line) && !drawn_lines.contains(&c.line))
                .filter(|c| chart_place(c))
                .collect();
            let (own, mut rest): (Vec<&Candidate>, Vec<&Candidate>) =
                open.into_iter().partition(|c| own_reason(c).is_some());
            for c in own {
                result.unrendered.push(Unrendered {
                    candidate: c.clone(),
                    skipped: false,
                    reason: own_reason(c).unwrap_or_default(),
                    library: page_library.clone(),
                });
            }
            let short = short.saturating_sub(result.unrendered.len() - dropped_count);
            if let (Some(reason), true) = (reason, short > 0) {
                result.reason = Some(reason.clone());
                // Lines may not match (a chart anchored inside its candidate's block):
                // the last ones stand for the charts missing.
                if rest.len() > short {
                    rest.drain(..rest.len() - short);
                }
                result
                    .unrendered
                    .extend(rest.into_iter().map(|c| Unrendered {
                        candidate: c.clone(),
                        skipped: false,
                        reason: reason.clone(),
                        library: page_library.clone(),
                    }));
            }
        }
        (parsed, result)
    }
}

/// The one chart library a rendered page used: from the charts it drew or dropped,
/// else from the chart scripts it asked for (served or not); None when several or
/// none is known.
fn page_library(stored: &StoredRender) -> Option<String> {
    let mut seen: BTreeSet<String> = stored
        .charts
        .iter()
        .map(|c| c.library.clone())
        .chain(stored.dropped.iter().map(|d| d.library.clone()))
        .filter(|l| !l.is_empty() && l != "unknown" && l != "static")
        .collect();
    if seen.is_empty() {
        seen = stored
            .requests
            .iter()
            .filter(|r| is_chart_script(r))
            .filter_map(|r| crate::render_requests::library_of_script(&r.url))
            .map(str::to_string)
            .collect();
    }
    (seen.len() == 1).then(|| seen.into_iter().next().unwrap_or_default())
}

/// One file or resource a page used, as listed in the cache.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Used {
    url: String,
    /// `folder` (a file of the report folder), `resource` (through the fetcher) or
    /// `absent` (requested, not in the cache offline).
    kind: String,
}

/// The resources of one page: through [`Pages::resource`], every failure noted.
struct PageResources {
    pages: Option<Arc<dyn Pages>>,
    failures: Mutex<Vec<(String, ResourceFailure)>>,
}

impl ResourceProvider for PageResources {
    fn fetch<'a>(
        &'a self,
        url: &'a str,
        kind: ResourceKind,
    ) -> BoxFuture<'a, Result<Resource, String>> {
        Box::pin(async move {
            let accept = match kind {
                ResourceKind::Script => "application/javascript,text/javascript,*/*;q=0.5",
                ResourceKind::Stylesheet => "text/css,*/*;q=0.5",
                ResourceKind::Font => "font/woff2,font/woff,font/ttf,*/*;q=0.5",
            };
            let result = match &self.pages {
                Some(p) => p.resource(url, accept).await,
                None => Err(ResourceFailure::Missing(format!(
                    "{url}: no network in this run"
                ))),
            };
            match result {
                Ok((body, content_type)) => Ok(Resource { body, content_type }),
                Err(f) => {
                    let reason = match &f {
                        ResourceFailure::Missing(r) => {
                            format!("{r}; seed it with `tvir cache put {url} FILE`")
                        }
                        other => other.reason().to_string(),
                    };
                    if let Ok(mut log) = self.failures.lock() {
                        log.push((url.to_string(), f));
                    }
                    Err(reason)
                }
            }
        })
    }
}

/// The `render` block of a record: each rendered chart with its unit name, PNG
/// path (written beside `report.json`) and data.
pub(crate) fn render_record(report: &Report, r: &RenderResult) -> crate::record::RenderRecord {
    let charts = report
        .figures
        .iter()
        .enumerate()
        .filter(|(_, f)| f.render.is_some())
        .map(|(i, f)| {
            let (library, width, height) = r.charts.get(&f.content).cloned().unwrap_or_default();
            crate::record::RenderedChartRecord {
                unit: format!("figure:{}", i + 1),
                content: f.content.clone(),
                library,
                png: format!("figures/chart-{}.png", i + 1),
                width,
                height,
                chart_data: f.chart_data.clone(),
                bytes: r.pngs.get(&f.content).cloned(),
            }
        })
        .collect();
    crate::record::RenderRecord {
        status: r.status.clone(),
        reason: r.reason.clone(),
        browser: r.browser.clone(),
        charts,
        incomplete: r.incomplete.clone(),
        unrendered: r
            .unrendered
            .iter()
            .map(
                |u| json!({"line": u.candidate.line, "what": u.candidate.what, "reason": u.reason}),
            )
            .collect(),
        notes: r.notes.clone(),
    }
}

#[cfg(test)]
mod page_library_tests {
    use super::*;

    fn script(url: &str) -> RequestRecord {
        RequestRecord {
            url: url.into(),
            outcome: RequestOutcome::Provided {
                sha256: String::new(),
            },
            resource_type: Some("Script".into()),
        }
    }

    #[test]
    fn the_one_library_of_a_page_is_known_from_its_scripts_or_charts() {
        // A page that hung: no chart, its scripts name one chart library (G6 is none).
        let hung = StoredRender {
            requests: vec![
                script("https://cdn.jsdelivr.net/npm/vega@5"),
                script("https://cdn.jsdelivr.net/npm/vega-embed@6"),
                script("https://unpkg.com/@antv/g6@5/dist/g6.min.js"),
            ],
            failure: Some("page hung".into()),
            ..StoredRender::default()
        };
        assert_eq!(page_library(&hung).as_deref(), Some("vega"));
        // Two libraries: none is claimed.
        let mut two = hung.clone();
        two.requests
            .push(script("https://cdn.plot.ly/plotly-2.35.2.min.js"));
        assert_eq!(page_library(&two), None);
        // A chart the page dropped names it, whatever the scripts say.
        two.dropped.push(DroppedChart {
            library: "plotly".into(),
            anchor: None,
            frame: None,
            selector: "#p".into(),
            reason: "captured blank".into(),
            transient: false,
        });
        assert_eq!(page_library(&two).as_deref(), Some("plotly"));
    }
}
