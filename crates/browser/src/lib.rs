//! Everything of tvir-eval that touches a web browser: finding Chromium
//! ([`find_browser`], [`browser_version`]), running one headless Chromium per run
//! ([`Browser`]), rendering an untrusted report page in it ([`Browser::render`] with a
//! [`PageRequest`]) and returning each chart a script drew as a PNG of its box plus
//! the chart's data read from the live chart library ([`RenderedChart`], [`ChartData`]).
//!
//! It owns the browser process (spawned in its own process group, killed with it on
//! close, drop, Ctrl-C, panic or the parent's death), the DevTools-protocol session,
//! request interception (files only from the report folder, scripts/styles/fonts only
//! through the caller's [`ResourceProvider`], everything else refused), the viewport
//! ([`VIEWPORT`]) and the JavaScript that finds charts in the live page.
//!
//! The process: spawned by a thread that lives as long as it, in its own process
//! group, with `PR_SET_PDEATHSIG` (killed when our process dies, however it dies), a
//! fresh profile folder; [`Browser::close`] asks it to exit then kills and reaps the
//! whole group, dropping a [`Browser`] (an unwinding panic too) kills the group,
//! [`kill_all`] serves a Ctrl-C handler. The sandbox ([`SandboxMode::Auto`]): Chromium's
//! own sandbox stays on, except as root, where Chromium refuses to start with it (and
//! root containers lack the user namespaces it needs): then `--no-sandbox`, with
//! isolation from the container, request interception, a dead proxy and no DNS.
//! Details: docs/browser.md.
//!
//! It must never depend on any other crate of the suite (report model, fetcher, cache,
//! engine): callers adapt their own types to [`PageRequest`] and [`ResourceProvider`].

mod capture;
mod detected;
pub mod libs;
mod process;
mod render;
mod serve;

pub use process::kill_all;
pub use render::MAX_CHARTS_PER_PAGE;
pub use serve::{MAX_FOLDER_FILE, ORIGIN};

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use chromiumoxide::cdp::browser_protocol::target::{CloseTargetParams, EventTargetCreated};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

/// The page size and device scale every page is rendered at.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Viewport {
    /// CSS pixels.
    pub width: u32,
    /// CSS pixels.
    pub height: u32,
    /// Device pixels per CSS pixel.
    pub scale: f64,
}

/// Fingerprint of this crate's code, its Rust and its page scripts (made by
/// `build.rs`): what a page shows depends on it as much as on the page, so render
/// caches key by it.
pub const CODE_FINGERPRINT: &str = env!("TVIR_BROWSER_CODE");

/// The one fixed viewport: 1280×900 CSS px at scale 1. A chart sized by the viewport
/// (`height: 60vh`, a responsive canvas) therefore has the same size on every run and
/// machine. The window keeps this size while charts are captured: each chart is
/// scrolled into view and only its visible pixels are taken (`captureBeyondViewport`
/// would make Chromium resize the page around the shot, and responsive charts redraw
/// or move meanwhile). A chart larger than the viewport is cut to its visible part,
/// noted in [`PageRender::notes`].
pub const VIEWPORT: Viewport = Viewport {
    width: 1280,
    height: 900,
    scale: 1.0,
};

/// How Chromium's own sandbox is run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SandboxMode {
    /// Sandbox on, except when running as root (Chromium refuses to start as root
    /// with its sandbox on).
    #[default]
    Auto,
    /// Always on (start fails as root).
    On,
    /// Always off (`--no-sandbox`).
    Off,
}

/// How the browser is started and how pages are rendered.
#[derive(Clone, Debug)]
pub struct BrowserConfig {
    pub executable: PathBuf,
    /// Pages rendered at the same time (one browser context each).
    pub max_pages: usize,
    pub viewport: Viewport,
    /// Time limit for one attempt at one page, load to last screenshot.
    pub page_budget: Duration,
    pub sandbox: SandboxMode,
}

impl BrowserConfig {
    /// Defaults: 2 pages at once, [`VIEWPORT`], 20 s per page attempt, [`SandboxMode::Auto`].
    pub fn new(executable: PathBuf) -> Self {
        BrowserConfig {
            executable,
            max_pages: 2,
            viewport: VIEWPORT,
            page_budget: Duration::from_secs(20),
            sandbox: SandboxMode::Auto,
        }
    }
}

/// No usable browser executable was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no Chromium found ({tried}); install Chromium (e.g. `apt-get install chromium`) or pass --browser PATH")]
pub struct BrowserNotFound {
    /// What was looked at, for the message.
    pub tried: String,
}

/// Starting or talking to the browser failed.
#[derive(Debug, thiserror::Error)]
pub enum BrowserError {
    #[error("browser {path}: {message}")]
    Start { path: String, message: String },
    #[error("browser protocol: {0}")]
    Protocol(String),
}

/// The browser executable: `explicit` when given (the caller resolves `--browser`,
/// `TVIR_BROWSER` and `tvir.toml`, in that order), else the first of `chromium`,
/// `chromium-browser`, `google-chrome` on `PATH`.
pub fn find_browser(explicit: Option<&Path>) -> Result<PathBuf, BrowserNotFound> {
    if let Some(p) = explicit {
        return if is_executable(p) {
            Ok(p.to_path_buf())
        } else {
            Err(BrowserNotFound {
                tried: format!("{} is not an executable file", p.display()),
            })
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for name in BROWSER_NAMES {
        for dir in std::env::split_paths(&path) {
            let candidate = dir.join(name);
            if is_executable(&candidate) {
                return Ok(candidate);
            }
        }
    }
    Err(BrowserNotFound {
        tried: format!("none of {} on PATH", BROWSER_NAMES.join(", ")),
    })
}

/// Looked up on `PATH`, in this order.
pub const BROWSER_NAMES: [&str; 3] = ["chromium", "chromium-browser", "google-chrome"];

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The executable's `--version` line (no browser session), e.g. `Chromium 156.0.8078.114
/// built on Debian …`; at most 10 s.
pub fn browser_version(executable: &Path) -> Result<String, BrowserError> {
    let err = |message: String| BrowserError::Start {
        path: executable.display().to_string(),
        message,
    };
    let mut child = std::process::Command::new(executable)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| err(e.to_string()))?;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        match child.try_wait().map_err(|e| err(e.to_string()))? {
            Some(_) => break,
            None if std::time::Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(err("--version did not answer in 10 s".into()));
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    let mut out = String::new();
    if let Some(mut o) = child.stdout.take() {
        use std::io::Read;
        let _ = o.read_to_string(&mut out);
    }
    out.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_string)
        .ok_or_else(|| err("--version printed nothing".into()))
}

/// What a page may load from the network: scripts, styles and fonts of public hosts,
/// fetched by the caller (address rules, size caps, cache, offline mode).
pub trait ResourceProvider: Send + Sync {
    /// The resource at `url`, or the reason it is refused or failed (recorded in the
    /// render's request list).
    fn fetch<'a>(
        &'a self,
        url: &'a str,
        kind: ResourceKind,
    ) -> BoxFuture<'a, Result<Resource, String>>;
}

/// The kinds of network resource a page may obtain through a [`ResourceProvider`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResourceKind {
    Script,
    Stylesheet,
    Font,
}

/// A fetched resource.
#[derive(Clone, Debug, Default)]
pub struct Resource {
    pub body: Vec<u8>,
    pub content_type: Option<String>,
}

/// One page to render.
#[derive(Clone)]
pub struct PageRequest {
    /// The report folder: only files inside it are served to the page.
    pub root: PathBuf,
    /// The entry document, relative to `root` (`/`-separated).
    pub entry: String,
    /// Bytes served for the entry instead of the file (annotated HTML, Markdown
    /// rendered to HTML).
    pub entry_override: Option<Vec<u8>>,
    pub resources: Arc<dyn ResourceProvider>,
    /// `data-tvir-at` anchors of the elements the caller expects to hold charts: the
    /// live page says what each shows ([`PageRender::slots`]).
    pub probes: Vec<usize>,
}

/// What happened to one request the page made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestRecord {
    pub url: String,
    /// Serialized inline: `{"url": …, "outcome": "provided", "sha256": …}`.
    #[serde(flatten)]
    pub outcome: RequestOutcome,
    /// Chromium's resource type (`Script`, `Stylesheet`, `Font`, `Document`,
    /// `Fetch`, …), when it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_type: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum RequestOutcome {
    /// A file inside the report folder (or the entry override).
    ServedFromFolder,
    /// Given by the [`ResourceProvider`]; `sha256` of the body, hex.
    Provided { sha256: String },
    /// Refused or failed, with the reason.
    Refused { reason: String },
}

/// The result of rendering one page.
#[derive(Clone, Debug, Default)]
pub struct PageRender {
    pub charts: Vec<RenderedChart>,
    pub requests: Vec<RequestRecord>,
    /// Load timeout, dialogs dismissed, pop-ups closed, retries.
    pub notes: Vec<String>,
    /// Set when the page crashed or hung twice: its charts are unknown.
    pub failure: Option<String>,
    /// Charts found in the live page but not captured, each with why (captured
    /// blank, hidden, gone when captured).
    pub dropped: Vec<DroppedChart>,
    /// Errors the page's own scripts threw (uncaught or rejected), in order.
    pub script_errors: Vec<ScriptError>,
    /// What the live page shows at each anchor of [`PageRequest::probes`].
    pub slots: Vec<SlotProbe>,
}

/// What the live page shows at an element the caller expected to hold a chart, read
/// after the page's scripts ran. `state`: `chart` (a chart was found there), `empty` (a
/// box or a blank canvas/svg nothing drew into: a chart left undrawn), `frame` (a frame
/// whose document is searched on its own), `hidden` (inside a hidden panel), `failed`
/// (a chart file the page could not draw; `detail` says why), and the states that are
/// no chart: `control` (a button, link, form field or widget), `text` (a box showing
/// text and no drawing, other than a loading placeholder), `layer` (an empty fixed or
/// absolutely placed element: a progress bar, a tooltip, an overlay), `small` (a canvas
/// or svg under 40 px), `drawn` (a drawing that is no chart), `not-a-chart` (a chart
/// file whose content holds no chart), `after-click` (an empty or hidden box only code
/// a reader's action runs fills: a tab's chart made when the tab is clicked, a "show"
/// button's, a modal's; no chart at load, and nothing is clicked to find out), `gone`
/// (not in the live page).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlotProbe {
    pub anchor: usize,
    pub state: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl SlotProbe {
    /// Whether the element is a place where a chart should have been drawn.
    pub fn is_chart_slot(&self) -> bool {
        matches!(
            self.state.as_str(),
            "chart" | "empty" | "frame" | "hidden" | "failed"
        )
    }
}

/// A chart the live page has that gave no picture.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DroppedChart {
    pub library: String,
    /// As [`RenderedChart::anchor`].
    pub anchor: Option<usize>,
    pub frame: Option<String>,
    pub selector: String,
    pub reason: String,
    /// Lost to this render rather than to the page: the page's time limit ran out
    /// before the chart's turn (a busy page or a loaded machine), or the browser
    /// failed under the page (a crash, a lost connection) after other charts were
    /// captured. Another render of the same page may capture it, so a render holding
    /// one is incomplete. False for what the page itself does (a blank or hidden
    /// chart, its data refused, a script that keeps the page busy, a hang).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub transient: bool,
}

/// An error a script of the page threw.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScriptError {
    /// The frame document's path, None for the page itself.
    pub frame: Option<String>,
    pub message: String,
    /// `file:line` when known.
    pub r#where: Option<String>,
}

/// One chart found in the live page.
#[derive(Clone, Debug)]
pub struct RenderedChart {
    /// `chartjs`, `echarts`, `plotly`, `highcharts`, `apexcharts`, `vega`, `d3`,
    /// `svg-script`, `unknown` (a canvas no library claims) or `static` (what a chart
    /// file with no chart drawn by script shows: an svg, a canvas or a picture).
    pub library: String,
    /// `data-tvir-at` of the chart element or its nearest ancestor in the top
    /// document, or of the `<iframe>`/`<embed>`/`<object>` holding the chart.
    pub anchor: Option<usize>,
    /// The frame document's path when the chart is inside a same-origin frame.
    pub frame: Option<String>,
    /// A CSS selector for the chart element inside its document.
    pub selector: String,
    /// PNG of the element's box at the configured viewport.
    pub png: Vec<u8>,
    /// PNG size in pixels.
    pub width: u32,
    pub height: u32,
    pub data: ChartData,
}

/// A chart's content as read from its library, bounded.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ChartData {
    pub library: String,
    pub chart_type: Option<String>,
    pub title: Option<String>,
    pub labels: Vec<String>,
    pub series: Vec<ChartSeries>,
    /// Something was cut to the bounds.
    pub truncated: bool,
    /// `<figcaption>` or a "Figure N" line shown next to the chart.
    pub caption: Option<String>,
    /// Where `caption` was found: `figcaption` or `caption line`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caption_source: Option<String>,
    /// The visible title that labels the chart's own container (a card's heading,
    /// an element marked as the chart's title, a bold line right above it); never
    /// a heading over a section of several charts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heading: Option<String>,
    /// Set when the chart never revealed itself after being scrolled to (its box or
    /// an ancestor stayed transparent, hidden or moving) and was captured with the
    /// reveal forced: what was forced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reveal: Option<String>,
}

/// One data series of a chart.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ChartSeries {
    pub name: Option<String>,
    pub values: Vec<serde_json::Value>,
    /// Number of values in the chart (before bounding).
    pub total: usize,
}

/// Most series kept per chart; more set [`ChartData::truncated`].
pub const MAX_SERIES: usize = 12;
/// Most values kept per series ([`ChartSeries::total`] keeps the real count).
pub const MAX_POINTS: usize = 100;
/// Most category labels kept per chart.
pub const MAX_LABELS: usize = 100;
/// Longest title, label, caption or string value kept, in characters.
pub const MAX_STRING: usize = 200;

/// The running browser (one per run). Dropping it kills Chromium's whole process
/// group; [`Browser::close`] first asks it to exit.
pub struct Browser {
    version: String,
    cdp: Arc<chromiumoxide::Browser>,
    handler: tokio::task::JoinHandle<()>,
    popup_closer: Option<tokio::task::JoinHandle<()>>,
    process: process::ChromiumProcess,
    slots: Arc<tokio::sync::Semaphore>,
    cfg: BrowserConfig,
}

impl Browser {
    /// Start Chromium with `cfg` (fresh profile, own process group) and connect to it.
    pub async fn start(cfg: BrowserConfig) -> Result<Browser, BrowserError> {
        let exe = cfg.executable.clone();
        let (viewport, sandbox) = (cfg.viewport, cfg.sandbox);
        let (process, ws) = tokio::task::spawn_blocking(move || {
            process::ChromiumProcess::spawn(&exe, viewport, sandbox, Duration::from_secs(30))
        })
        .await
        .map_err(|e| BrowserError::Protocol(e.to_string()))??;
        let handler_cfg = chromiumoxide::handler::HandlerConfig {
            viewport: None,
            request_timeout: Duration::from_secs(30),
            ..Default::default()
        };
        let (cdp, mut handler) = chromiumoxide::Browser::connect_with_config(ws, handler_cfg)
            .await
            .map_err(|e| BrowserError::Start {
                path: cfg.executable.display().to_string(),
                message: format!("DevTools connection: {e}"),
            })?;
        // One undecodable event must not end the session: log and go on.
        let handler = tokio::spawn(async move {
            use futures::StreamExt;
            while let Some(r) = handler.next().await {
                if let Err(e) = r {
                    tracing::debug!("browser event: {e}");
                }
            }
        });
        let cdp = Arc::new(cdp);
        // Any page opened by another (window.open, target=_blank) is closed at once;
        // hooks.js already makes window.open a no-op and the popup blocker stays on.
        let popup_closer = match cdp.event_listener::<EventTargetCreated>().await {
            Ok(mut created) => {
                let cdp = cdp.clone();
                Some(tokio::spawn(async move {
                    use futures::StreamExt;
                    while let Some(ev) = created.next().await {
                        if ev.target_info.opener_id.is_some() {
                            let id = ev.target_info.target_id.clone();
                            tracing::info!(url = %ev.target_info.url, "pop-up closed");
                            let _ = cdp.execute(CloseTargetParams::new(id)).await;
                        }
                    }
                }))
            }
            Err(e) => {
                handler.abort();
                return Err(BrowserError::Protocol(format!("target events: {e}")));
            }
        };
        let version = match cdp.version().await {
            Ok(v) => v.product,
            Err(e) => {
                handler.abort();
                return Err(BrowserError::Protocol(format!("Browser.getVersion: {e}")));
            }
        };
        tracing::info!(pid = process.pid(), %version, sandbox = !process::sandbox_off(cfg.sandbox), "browser started");
        Ok(Browser {
            version,
            cdp,
            handler,
            popup_closer,
            process,
            slots: Arc::new(tokio::sync::Semaphore::new(cfg.max_pages.max(1))),
            cfg,
        })
    }

    /// The browser's product version, e.g. `HeadlessChrome/156.0.8078.114`.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Chromium's process id (its process group id too).
    pub fn pid(&self) -> u32 {
        self.process.pid() as u32
    }

    /// Render one page; never fails as a whole (see [`PageRender::failure`]). At most
    /// `max_pages` renders run at once; a crash or hang is retried once in a fresh tab.
    pub async fn render(&self, page: PageRequest) -> PageRender {
        let _slot = self.slots.acquire().await;
        let settings = render::Settings {
            viewport: self.cfg.viewport,
            budget: self.cfg.page_budget,
        };
        let mut out = PageRender::default();
        for attempt in 0..2 {
            let log = Arc::new(std::sync::Mutex::new(render::Log::default()));
            let r = tokio::time::timeout(
                self.cfg.page_budget + Duration::from_secs(15),
                render::attempt(&self.cdp, &page, &settings, log.clone()),
            )
            .await
            .unwrap_or_else(|_| {
                Err(format!(
                    "page hung: no result within {} s",
                    self.cfg.page_budget.as_secs() + 15
                ))
            });
            let (requests, notes, mut dropped, errors, slots, captured, waiting) = log
                .lock()
                .map(|mut l| {
                    (
                        std::mem::take(&mut l.requests),
                        std::mem::take(&mut l.notes),
                        std::mem::take(&mut l.dropped),
                        std::mem::take(&mut l.script_errors),
                        std::mem::take(&mut l.slots),
                        std::mem::take(&mut l.captured),
                        std::mem::take(&mut l.waiting),
                    )
                })
                .unwrap_or_default();
            out.requests = requests;
            out.notes.extend(notes);
            out.script_errors = errors;
            out.slots = slots;
            // A failure never loses finished work: charts captured before the page
            // stopped answering are kept, the ones still waiting fail with the reason,
            // and the page is not rendered again (it would hang again).
            let r = match r {
                Err(reason) if !captured.is_empty() => {
                    // A hang is the page's doing (the same page hangs again); a crash
                    // or the browser failing is this render's.
                    let transient = !reason.starts_with("page hung");
                    for c in &waiting {
                        dropped.push(DroppedChart {
                            library: c.library.clone(),
                            anchor: c.anchor.filter(|a| *a >= 0.0).map(|a| a as usize),
                            frame: c.frame.clone(),
                            selector: c.selector.clone(),
                            reason: format!("not captured: {reason}"),
                            transient,
                        });
                    }
                    out.notes.push(format!(
                        "{} chart(s) captured before the page failed ({reason}): kept; {} not captured",
                        captured.len(),
                        waiting.len()
                    ));
                    Ok(captured)
                }
                r => r,
            };
            out.dropped = dropped;
            match r {
                Ok(charts) => {
                    out.charts = charts;
                    out.failure = None;
                    return out;
                }
                Err(reason) if attempt == 0 => {
                    out.notes
                        .push(format!("retried in a fresh tab after: {reason}"));
                }
                Err(reason) => out.failure = Some(reason),
            }
        }
        out
    }

    /// Ask the browser to exit (≤ 3 s), then kill its process group and remove the profile.
    /// The DevTools connection is ended from our side first, then the browser gets
    /// SIGTERM: a browser that closes the socket under a live client makes the
    /// protocol library log a connection error, which at shutdown is no error.
    pub async fn close(mut self) {
        if let Some(t) = self.popup_closer.take() {
            t.abort();
        }
        self.handler.abort();
        let _ = (&mut self.handler).await;
        self.process.terminate();
        self.process.wait_exit(Duration::from_secs(3)).await;
        self.process.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_records_serialize_flat() {
        let r = RequestRecord {
            url: "https://cdn.example.org/a.js".into(),
            outcome: RequestOutcome::Provided {
                sha256: "ab".into(),
            },
            resource_type: None,
        };
        let json = serde_json::to_string(&r).unwrap();
        assert_eq!(
            json,
            r#"{"url":"https://cdn.example.org/a.js","outcome":"provided","sha256":"ab"}"#
        );
        assert_eq!(serde_json::from_str::<RequestRecord>(&json).unwrap(), r);
    }

    #[test]
    fn a_missing_browser_names_the_remedy() {
        let e = find_browser(Some(Path::new("/no/such/chromium")))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("/no/such/chromium")
                && e.contains("--browser")
                && e.contains("install Chromium"),
            "{e}"
        );
    }
}
