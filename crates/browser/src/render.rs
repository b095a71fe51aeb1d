//! One page in the running browser: a fresh browser context and tab, every request
//! intercepted and answered (`serve`), the entry loaded within a budget, chart
//! animations finished (`js/finish.js`), charts found in the live page (`js/detect.js`),
//! each chart scrolled into the fixed viewport and its box captured as PNG (`capture`). A busy script is stopped with
//! `Runtime.terminateExecution`; a crash or hang fails the attempt (the caller retries
//! once in a fresh tab).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use chromiumoxide::cdp::browser_protocol::browser::{
    BrowserContextId, SetDownloadBehaviorBehavior, SetDownloadBehaviorParams,
};
use chromiumoxide::cdp::browser_protocol::emulation::{
    MediaFeature, SetDeviceMetricsOverrideParams, SetEmulatedMediaParams,
};
use chromiumoxide::cdp::browser_protocol::fetch::{
    self, EventRequestPaused, FailRequestParams, FulfillRequestParams, HeaderEntry, RequestPattern,
    RequestStage,
};
use chromiumoxide::cdp::browser_protocol::inspector;
use chromiumoxide::cdp::browser_protocol::network::ErrorReason;
use chromiumoxide::cdp::browser_protocol::page::{
    AddScriptToEvaluateOnNewDocumentParams, CaptureScreenshotFormat, CaptureScreenshotParams,
    EventJavascriptDialogOpening, EventLoadEventFired, HandleJavaScriptDialogParams,
    StopLoadingParams, Viewport as ClipViewport,
};
use chromiumoxide::cdp::browser_protocol::target::{
    CreateBrowserContextParams, CreateTargetParams,
};
use chromiumoxide::cdp::js_protocol::runtime::{
    EvaluateParams, EventExceptionThrown, TerminateExecutionParams,
};
use chromiumoxide::Page;
use futures::StreamExt;
use serde::Deserialize;
use sha2::{Digest, Sha256};

mod losses;
mod whole;
use losses::{busy_stopped, dropped, dropped_as, kept, out_of_time};

use crate::capture;
use crate::detected::{Detected, DetectedChart};
use crate::serve::{self, Route};
use crate::{
    ChartData, ChartSeries, DroppedChart, PageRequest, RenderedChart, RequestOutcome,
    RequestRecord, ScriptError, Viewport, MAX_LABELS, MAX_POINTS, MAX_SERIES, MAX_STRING,
};

const HOOKS_JS: &str = include_str!("../js/hooks.js");
const FINISH_JS: &str = include_str!("../js/finish.js");
const DETECT_JS: &str = include_str!("../js/detect.js");

/// Most charts captured per page.
pub const MAX_CHARTS_PER_PAGE: usize = 200;
/// Most requests recorded per page (later ones are still answered).
const MAX_RECORDS: usize = 2000;
/// Source HTML kept per page for the script-drawn-SVG rule.
const MAX_STATIC_HTML: usize = 8 << 20;

/// What one attempt collects while it runs (kept even when the attempt fails).
#[derive(Default)]
pub(crate) struct Log {
    pub requests: Vec<RequestRecord>,
    pub notes: Vec<String>,
    pub dropped: Vec<DroppedChart>,
    pub script_errors: Vec<ScriptError>,
    pub slots: Vec<crate::SlotProbe>,
    /// Charts captured so far: kept when the attempt fails later (the page hangs).
    pub captured: Vec<RenderedChart>,
    /// Charts found in the live page and not yet captured or dropped.
    pub waiting: Vec<DetectedChart>,
    /// A script of the page kept it busy until it was stopped (`terminateExecution`).
    stopped: bool,
    static_html: BTreeMap<String, String>,
    static_len: usize,
}

type SharedLog = Arc<Mutex<Log>>;

fn note(log: &SharedLog, s: String) {
    if let Ok(mut l) = log.lock() {
        if l.notes.len() < 200 && !l.notes.contains(&s) {
            l.notes.push(s);
        }
    }
}

fn record(log: &SharedLog, url: &str, rtype: &str, outcome: RequestOutcome) {
    if let Ok(mut l) = log.lock() {
        if l.requests.len() < MAX_RECORDS {
            let url: String = url.chars().take(2000).collect();
            let resource_type = (!rtype.is_empty()).then(|| rtype.to_string());
            l.requests.push(RequestRecord {
                url,
                outcome,
                resource_type,
            });
        }
    }
}

pub(crate) struct Settings {
    pub viewport: Viewport,
    pub budget: Duration,
}

/// Run one attempt: create the context and tab, render, always clean up.
pub(crate) async fn attempt(
    browser: &chromiumoxide::Browser,
    req: &PageRequest,
    settings: &Settings,
    log: SharedLog,
) -> Result<Vec<RenderedChart>, String> {
    let step = Duration::from_secs(10);
    let ctx = tokio::time::timeout(
        step,
        browser.create_browser_context(CreateBrowserContextParams {
            dispose_on_detach: Some(true),
            ..Default::default()
        }),
    )
    .await
    .map_err(|_| "browser did not create a context in 10 s".to_string())?
    .map_err(|e| format!("browser context: {e}"))?;
    let page = match tokio::time::timeout(
        step,
        browser.new_page(CreateTargetParams {
            url: "about:blank".into(),
            browser_context_id: Some(ctx.clone()),
            ..Default::default()
        }),
    )
    .await
    {
        Ok(Ok(p)) => p,
        Ok(Err(e)) => {
            dispose(browser, ctx).await;
            return Err(format!("new tab: {e}"));
        }
        Err(_) => {
            dispose(browser, ctx).await;
            return Err("browser did not open a tab in 10 s".into());
        }
    };
    let mut tasks = Vec::new();
    let result = run(browser, &page, &ctx, req, settings, &log, &mut tasks).await;
    for t in tasks {
        t.abort();
    }
    let _ = tokio::time::timeout(Duration::from_secs(5), page.close()).await;
    dispose(browser, ctx).await;
    result
}

async fn dispose(browser: &chromiumoxide::Browser, ctx: BrowserContextId) {
    let _ =
        tokio::time::timeout(Duration::from_secs(5), browser.dispose_browser_context(ctx)).await;
}

#[allow(clippy::too_many_arguments)]
async fn run(
    browser: &chromiumoxide::Browser,
    page: &Page,
    ctx: &BrowserContextId,
    req: &PageRequest,
    settings: &Settings,
    log: &SharedLog,
    tasks: &mut Vec<tokio::task::JoinHandle<()>>,
) -> Result<Vec<RenderedChart>, String> {
    let started = Instant::now();
    let deadline = started + settings.budget;
    let proto = |e: chromiumoxide::error::CdpError| format!("browser protocol: {e}");

    // Listeners first, so nothing the page does is missed.
    let mut paused = page
        .event_listener::<EventRequestPaused>()
        .await
        .map_err(proto)?;
    let mut dialogs = page
        .event_listener::<EventJavascriptDialogOpening>()
        .await
        .map_err(proto)?;
    let mut loads = page
        .event_listener::<EventLoadEventFired>()
        .await
        .map_err(proto)?;
    let mut crashes = page
        .event_listener::<inspector::EventTargetCrashed>()
        .await
        .map_err(proto)?;
    // Uncaught exceptions as the browser reports them: in full even when the page's
    // own error event only says "Script error." (thrown inside a library served from
    // another origin, such as a CDN).
    let mut exceptions = page
        .event_listener::<EventExceptionThrown>()
        .await
        .map_err(proto)?;
    let thrown: Arc<Mutex<Vec<ScriptError>>> = Arc::default();
    {
        let thrown = thrown.clone();
        tasks.push(tokio::spawn(async move {
            while let Some(ev) = exceptions.next().await {
                let d = &ev.exception_details;
                let described = d
                    .exception
                    .as_ref()
                    .and_then(|e| e.description.as_deref())
                    .and_then(|t| t.lines().next())
                    .unwrap_or(&d.text);
                let message: String = described
                    .trim_start_matches("Uncaught ")
                    .chars()
                    .take(300)
                    .collect();
                let r#where = d
                    .url
                    .as_ref()
                    .filter(|u| !u.is_empty())
                    .map(|u| format!("{u}:{}", d.line_number + 1));
                if let Ok(mut t) = thrown.lock() {
                    if t.len() < 20 {
                        t.push(ScriptError {
                            frame: None,
                            message,
                            r#where,
                        });
                    }
                }
            }
        }));
    }

    let load_budget = settings.budget / 2;
    let entry_url = serve::entry_url(&req.entry);
    let main_frame = page.target_id().as_ref().to_string();
    {
        let page = page.clone();
        let log = log.clone();
        let req = req.clone();
        let entry_url = entry_url.clone();
        tasks.push(tokio::spawn(async move {
            while let Some(ev) = paused.next().await {
                let page = page.clone();
                let log = log.clone();
                let req = req.clone();
                let entry_url = entry_url.clone();
                let main_frame = main_frame.clone();
                tokio::spawn(async move {
                    answer(&page, &ev, &req, &entry_url, &main_frame, load_budget, &log).await;
                });
            }
        }));
    }
    {
        let page = page.clone();
        let log = log.clone();
        tasks.push(tokio::spawn(async move {
            while let Some(ev) = dialogs.next().await {
                note(
                    &log,
                    format!("dialog dismissed: {:?}", ev.r#type).to_lowercase(),
                );
                let _ = page
                    .execute(HandleJavaScriptDialogParams {
                        accept: false,
                        prompt_text: None,
                    })
                    .await;
            }
        }));
    }

    let vp = settings.viewport;
    let setup = async {
        page.execute(inspector::EnableParams::default()).await?;
        page.execute(chromiumoxide::cdp::js_protocol::runtime::EnableParams::default())
            .await?;
        page.execute(
            fetch::EnableParams::builder()
                .pattern(
                    RequestPattern::builder()
                        .url_pattern("*")
                        .request_stage(RequestStage::Request)
                        .build(),
                )
                .build(),
        )
        .await?;
        page.execute(SetDeviceMetricsOverrideParams::new(
            vp.width as i64,
            vp.height as i64,
            vp.scale,
            false,
        ))
        .await?;
        page.execute(SetEmulatedMediaParams {
            media: None,
            features: Some(vec![MediaFeature::new("prefers-reduced-motion", "reduce")]),
        })
        .await?;
        page.execute(AddScriptToEvaluateOnNewDocumentParams::new(HOOKS_JS))
            .await?;
        browser
            .execute(SetDownloadBehaviorParams {
                behavior: SetDownloadBehaviorBehavior::Deny,
                browser_context_id: Some(ctx.clone()),
                download_path: None,
                events_enabled: None,
            })
            .await?;
        Ok::<(), chromiumoxide::error::CdpError>(())
    };
    tokio::time::timeout(Duration::from_secs(10), setup)
        .await
        .map_err(|_| "tab setup took over 10 s".to_string())?
        .map_err(proto)?;

    let work = async {
        // Navigate from a script of the blank tab, not with Page.navigate: chromiumoxide
        // holds a Page.navigate answer until the page's whole lifecycle completes, which a
        // hostile page can delay forever; the load event is awaited below with a budget.
        let go = format!(
            "location.replace({})",
            serde_json::Value::from(entry_url.clone())
        );
        eval(page, go, false, Duration::from_secs(5))
            .await
            .map_err(|e| format!("entry {} not opened: {e}", req.entry))?;
        let left = deadline
            .saturating_duration_since(Instant::now())
            .min(load_budget);
        if tokio::time::timeout(left, loads.next()).await.is_err() {
            note(
                log,
                format!(
                    "load did not finish in {} s: loading stopped, charts drawn so far used",
                    left.as_secs()
                ),
            );
            let _ = tokio::time::timeout(
                Duration::from_secs(2),
                page.execute(StopLoadingParams::default()),
            )
            .await;
        }
        // Scroll the page as a reader would before looking for charts: charts created
        // when first seen and reveal-on-scroll observers run.
        let pass = serde_json::json!({"op": "scrollPass", "maxSteps": 80, "waitMs": 300});
        if let Err(e) = eval(page, capture::op(pass), true, Duration::from_secs(10)).await {
            note(log, format!("scrolling through the page: {e}"));
        }
        finish_animations(page, log, deadline).await?;
        let detected = detect(page, log, req, deadline).await?;
        if detected.popups_blocked > 0 {
            note(log, format!("pop-ups blocked: {}", detected.popups_blocked));
        }
        for w in detected.warnings.iter().take(20) {
            note(log, format!("detect: {w}"));
        }
        let errors = crate::detected::with_thrown(detected.script_errors.clone(), &thrown);
        if let Ok(mut l) = log.lock() {
            l.script_errors = errors;
            l.slots = detected.probes.clone();
        }
        shoot(page, log, detected.charts, settings.budget, deadline).await
    };
    tokio::select! {
        r = work => r,
        _ = crashes.next() => Err("page crashed".into()),
    }
}

/// Answer one paused request (every one must be answered or the page stalls).
async fn answer(
    page: &Page,
    ev: &EventRequestPaused,
    req: &PageRequest,
    entry_url: &str,
    main_frame: &str,
    provider_budget: Duration,
    log: &SharedLog,
) {
    let url = ev.request.url.as_str();
    let id = ev.request_id.clone();
    let rtype = ev.resource_type.as_ref();
    let bare = url.split('#').next().unwrap_or(url);
    // The top document never navigates away: a 204 keeps the current page.
    if rtype == "Document" && ev.frame_id.as_ref() == main_frame && bare != entry_url {
        record(
            log,
            url,
            rtype,
            RequestOutcome::Refused {
                reason: "navigation away from the report".into(),
            },
        );
        note(log, "navigation away refused".into());
        fulfil(page, id, 204, None, Vec::new()).await;
        return;
    }
    match serve::route(url, rtype) {
        Route::Folder(rel) => {
            let body = if bare == entry_url && req.entry_override.is_some() {
                Ok(req.entry_override.clone().unwrap_or_default())
            } else {
                serve::folder_file(&req.root, &rel)
                    .and_then(|p| std::fs::read(p).map_err(|e| e.to_string()))
            };
            match body {
                Ok(body) => {
                    let ctype = serve::content_type(&rel);
                    if serve::is_html(&rel) {
                        if let Ok(mut l) = log.lock() {
                            if l.static_len + body.len() <= MAX_STATIC_HTML {
                                l.static_len += body.len();
                                let text = String::from_utf8_lossy(&body).into_owned();
                                l.static_html.insert(bare.to_string(), text);
                            }
                        }
                    }
                    record(log, url, rtype, RequestOutcome::ServedFromFolder);
                    fulfil(page, id, 200, Some(ctype.to_string()), body).await;
                }
                Err(reason) => {
                    record(
                        log,
                        url,
                        rtype,
                        RequestOutcome::Refused {
                            reason: reason.clone(),
                        },
                    );
                    fulfil(
                        page,
                        id,
                        404,
                        Some("text/plain".into()),
                        reason.into_bytes(),
                    )
                    .await;
                }
            }
        }
        Route::Provider(kind) => {
            let got = tokio::time::timeout(provider_budget, req.resources.fetch(url, kind)).await;
            match got {
                Ok(Ok(res)) => {
                    let sha = hex::encode(Sha256::digest(&res.body));
                    record(log, url, rtype, RequestOutcome::Provided { sha256: sha });
                    let ctype = res.content_type.clone().unwrap_or_else(|| match kind {
                        crate::ResourceKind::Script => "text/javascript".into(),
                        crate::ResourceKind::Stylesheet => "text/css".into(),
                        crate::ResourceKind::Font => {
                            serve::content_type(url.split('?').next().unwrap_or(url)).into()
                        }
                    });
                    fulfil(page, id, 200, Some(ctype), res.body).await;
                }
                Ok(Err(reason)) => {
                    record(log, url, rtype, RequestOutcome::Refused { reason });
                    fail(page, id).await;
                }
                Err(_) => {
                    record(
                        log,
                        url,
                        rtype,
                        RequestOutcome::Refused {
                            reason: format!("not fetched within {} s", provider_budget.as_secs()),
                        },
                    );
                    fail(page, id).await;
                }
            }
        }
        Route::Refuse(reason) => {
            record(log, url, rtype, RequestOutcome::Refused { reason });
            fail(page, id).await;
        }
    }
}

async fn fulfil(
    page: &Page,
    id: fetch::RequestId,
    code: i64,
    ctype: Option<String>,
    body: Vec<u8>,
) {
    let mut headers = vec![
        HeaderEntry::new("Access-Control-Allow-Origin", "*"),
        HeaderEntry::new("Cache-Control", "no-store"),
    ];
    if let Some(c) = ctype {
        headers.push(HeaderEntry::new("Content-Type", c));
    }
    let params = FulfillRequestParams {
        request_id: id,
        response_code: code,
        response_headers: Some(headers),
        binary_response_headers: None,
        body: Some(
            base64::engine::general_purpose::STANDARD
                .encode(&body)
                .into(),
        ),
        response_phrase: None,
    };
    let _ = page.execute(params).await;
}

async fn fail(page: &Page, id: fetch::RequestId) {
    let _ = page
        .execute(FailRequestParams::new(id, ErrorReason::BlockedByClient))
        .await;
}

/// Evaluate `expr` with a time limit; a busy page is stopped with terminateExecution.
async fn eval(
    page: &Page,
    expr: String,
    await_promise: bool,
    limit: Duration,
) -> Result<serde_json::Value, String> {
    let params = EvaluateParams {
        expression: expr,
        return_by_value: Some(true),
        await_promise: Some(await_promise),
        ..EvaluateParams::new("")
    };
    match tokio::time::timeout(limit, page.execute(params)).await {
        Ok(Ok(r)) => {
            if let Some(ex) = &r.result.exception_details {
                let msg = ex
                    .exception
                    .as_ref()
                    .and_then(|e| e.description.clone())
                    .unwrap_or_else(|| ex.text.clone());
                return Err(format!(
                    "script error: {}",
                    msg.chars().take(300).collect::<String>()
                ));
            }
            Ok(r.result
                .result
                .value
                .clone()
                .unwrap_or(serde_json::Value::Null))
        }
        Ok(Err(e)) => Err(format!("browser protocol: {e}")),
        Err(_) => {
            let _ = tokio::time::timeout(
                Duration::from_secs(3),
                page.execute(TerminateExecutionParams::default()),
            )
            .await;
            Err(format!(
                "busy: no answer in {} s (script stopped)",
                limit.as_secs()
            ))
        }
    }
}

#[derive(Deserialize)]
struct FinishState {
    #[serde(default)]
    pending: bool,
    /// A chart file of the report is still being read, or its library loaded.
    #[serde(default)]
    loading: bool,
}

/// Finish animations: repeat finish.js + two animation frames until nothing is pending
/// twice in a row (at most ~3 s). A page busy in a loop is stopped once; busy again fails the attempt.
async fn finish_animations(page: &Page, log: &SharedLog, deadline: Instant) -> Result<(), String> {
    let until = (Instant::now() + Duration::from_secs(3)).min(deadline);
    // A chart file whose library is still arriving (Plotly is 4.6 MB) may take longer.
    let until_loaded = (Instant::now() + Duration::from_secs(10)).min(deadline);
    let mut stopped = false;
    // A script may start a transition in the frames just waited for (a section
    // shown from a load-time requestAnimationFrame, late on a busy machine): only
    // two quiet passes in a row end the wait.
    let mut quiet_before = false;
    // Until a pass has said no chart file is loading, a pass may land while a
    // library that just arrived is being compiled (Plotly takes seconds on a busy
    // machine): it is given until `until_loaded` rather than stopped after 3 s,
    // which would kill the library half-run and leave its chart undrawn.
    let mut maybe_loading = true;
    loop {
        let limit = if maybe_loading {
            until_loaded
                .saturating_duration_since(Instant::now())
                .max(Duration::from_secs(3))
        } else {
            Duration::from_secs(3)
        };
        let r = eval(page, format!("({FINISH_JS})()"), false, limit).await;
        let (pending, loading) = match r {
            Ok(v) => serde_json::from_value::<FinishState>(v)
                .map(|s| (s.pending, s.loading))
                .unwrap_or((false, false)),
            Err(e) if e.starts_with("busy") => {
                if stopped {
                    return Err("page hung: its scripts never let the page be read".into());
                }
                stopped = true;
                busy_stopped(log);
                note(
                    log,
                    "a script kept the page busy after load: stopped".into(),
                );
                continue;
            }
            Err(e) => {
                note(log, format!("finish animations: {e}"));
                (false, false)
            }
        };
        maybe_loading = loading;
        let frames =
            "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))";
        let _ = eval(page, frames.into(), true, Duration::from_secs(2)).await;
        let quiet = !pending && quiet_before;
        quiet_before = !pending;
        let now = Instant::now();
        if quiet || (now >= until && !(loading && now < until_loaded)) {
            if loading {
                note(
                    log,
                    "a chart file was still loading after 10 s: captured as it was".into(),
                );
            } else if pending {
                note(
                    log,
                    "animations still running after 3 s: captured as they were".into(),
                );
            }
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn detect(
    page: &Page,
    log: &SharedLog,
    req: &PageRequest,
    deadline: Instant,
) -> Result<Detected, String> {
    let static_html = log
        .lock()
        .map(|l| l.static_html.clone())
        .unwrap_or_default();
    let opts = serde_json::json!({
        "maxSeries": MAX_SERIES, "maxPoints": MAX_POINTS, "maxLabels": MAX_LABELS,
        "maxString": MAX_STRING, "staticHtml": static_html, "probes": req.probes,
    });
    let expr = format!("({DETECT_JS})({opts})");
    let limit = deadline
        .saturating_duration_since(Instant::now())
        .clamp(Duration::from_secs(1), Duration::from_secs(8));
    let v = match eval(page, expr.clone(), false, limit).await {
        Ok(v) => v,
        Err(e) if e.starts_with("busy") => {
            busy_stopped(log);
            note(log, "a script kept the page busy: stopped".into());
            eval(page, expr, false, limit)
                .await
                .map_err(|e| format!("page hung: charts could not be read ({e})"))?
        }
        Err(e) => return Err(format!("charts could not be read: {e}")),
    };
    serde_json::from_value(v).map_err(|e| format!("chart list unreadable: {e}"))
}

/// Capture each chart without resizing the window (js/capture.js, src/capture.rs):
/// finish the page's CSS animations, freeze charts whose box still grows, scroll each
/// chart into the fixed viewport, hide fixed/sticky bars over it, re-measure, shoot the
/// visible pixels (`captureBeyondViewport` off). A one-colour shot is redrawn and taken
/// once more, then dropped as "captured blank". Charts in `display:none` panels (tabs)
/// are shown one at a time after all others, shot, and hidden again.
async fn shoot(
    page: &Page,
    log: &SharedLog,
    charts: Vec<DetectedChart>,
    budget: Duration,
    deadline: Instant,
) -> Result<Vec<RenderedChart>, String> {
    let (charts, files) = whole::chart_files_whole(page, log, charts).await;
    // A chart file shot whole is named by its file, as its content, and shown without
    // the empty margins of the box we laid its frame out in.
    let as_file = |mut r: RenderedChart| {
        if let Some(file) = files.get(&r.selector) {
            r.frame = Some(file.clone());
            r.selector = ":root".into();
            if let Some(png) = capture::trim_margins(&r.png) {
                if let Some((w, h)) = capture::png_size(&png) {
                    (r.width, r.height, r.png) = (w, h, png);
                }
            }
        }
        r
    };
    let total = charts.len();
    let charts: Vec<DetectedChart> = charts.into_iter().take(MAX_CHARTS_PER_PAGE).collect();
    let step = |v: serde_json::Value| eval(page, capture::op(v), true, Duration::from_secs(10));
    if let Err(e) = step(serde_json::json!({"op": "prepare"})).await {
        note(log, format!("finishing the page's CSS animations: {e}"));
    }
    if let Ok(mut l) = log.lock() {
        l.waiting = charts.clone();
    }
    let (visible, hidden): (Vec<_>, Vec<_>) = charts.into_iter().partition(|c| c.visible);
    let list: Vec<_> = visible
        .iter()
        .map(|c| serde_json::json!([c.frame, c.selector]))
        .collect();
    if !list.is_empty() {
        match step(serde_json::json!({"op": "growth", "charts": list, "waitMs": 200})).await {
            Ok(v) => {
                for g in v["grown"].as_array().into_iter().flatten() {
                    let Some(c) = g["index"].as_u64().and_then(|i| visible.get(i as usize)) else {
                        continue;
                    };
                    note(
                        log,
                        format!(
                            "{} chart {} kept growing (from {}x{} px within 200 ms): frozen and drawn at {}x{} px",
                            c.library, c.selector, g["from"][0], g["from"][1], g["to"][0], g["to"][1]
                        ),
                    );
                }
            }
            Err(e) => note(log, format!("growth check: {e}")),
        }
    }
    let mut out = Vec::new();
    // A chart leaves the waiting list when it is kept or dropped: one the attempt
    // fails on (the page crashes while it is shot) is still waiting, and the failure
    // names it.
    for c in visible {
        let refused = log.lock().ok().and_then(|l| c.data_refused(&l.requests));
        if let Some(why) = refused {
            dropped(log, &c, "", why);
            continue;
        }
        if out_of_time(log, &c, budget, deadline) {
            continue;
        }
        if let Some(r) = shoot_one(page, log, c, "", deadline).await? {
            kept(log, &r);
            out.push(as_file(r));
        }
    }
    for c in hidden {
        if out_of_time(log, &c, budget, deadline) {
            continue;
        }
        let shown =
            step(serde_json::json!({"op": "reveal", "frame": c.frame, "selector": c.selector}))
                .await
                .unwrap_or_default();
        let big = |k: &str| shown[k].as_f64().unwrap_or(0.0) >= 40.0;
        if shown["shown"].as_bool() == Some(true) && big("width") && big("height") {
            let r = shoot_one(
                page,
                log,
                c,
                " (in a hidden panel, shown for the shot)",
                deadline,
            )
            .await;
            let _ = step(serde_json::json!({"op": "unreveal"})).await;
            if let Some(r) = r? {
                kept(log, &r);
                out.push(as_file(r));
            }
        } else {
            if shown["shown"].as_bool() == Some(true) {
                let _ = step(serde_json::json!({"op": "unreveal"})).await;
            }
            dropped(log, &c, "", "hidden or under 40 px: not captured".into());
        }
    }
    if total > MAX_CHARTS_PER_PAGE {
        note(
            log,
            format!("{total} charts on the page: the first {MAX_CHARTS_PER_PAGE} captured"),
        );
    }
    Ok(out)
}

/// Place and shoot one chart; a blank shot is redrawn and taken once more. Ok(None)
/// when it cannot be captured (noted); Err when the browser fails.
async fn shoot_one(
    page: &Page,
    log: &SharedLog,
    c: DetectedChart,
    how: &str,
    deadline: Instant,
) -> Result<Option<RenderedChart>, String> {
    // The wait for a chart's own reveal: 2.5 s, less when the page's time runs out.
    let left = deadline.saturating_duration_since(Instant::now());
    let settle = left
        .saturating_sub(Duration::from_secs(3))
        .min(Duration::from_millis(2500));
    let at = serde_json::json!({"frame": c.frame, "selector": c.selector,
        "settleMs": settle.as_millis() as u64});
    let mut forced = None;
    let step = |name: &str| {
        let mut v = at.clone();
        v["op"] = name.into();
        eval(page, capture::op(v), true, Duration::from_secs(10))
    };
    let mut png = Vec::new();
    for attempt in 0..2 {
        if attempt == 1 {
            let _ = step("redraw").await;
        }
        let placed = match step("place").await {
            Ok(v) => serde_json::from_value::<capture::Placed>(v).unwrap_or_default(),
            Err(e) => {
                // The browser failing under the page is this render's loss; a script
                // that kept the page busy is the page's.
                let ours = e.starts_with("browser protocol");
                if e.starts_with("busy") {
                    busy_stopped(log);
                }
                dropped_as(log, &c, how, format!("not placed: {e}"), ours);
                return Ok(None);
            }
        };
        if placed.forced.is_some() {
            forced = placed.forced.clone();
        }
        let clip = placed.found.then(|| capture::clip(&placed)).flatten();
        let Some(clip) = clip else {
            let _ = eval(
                page,
                capture::op(serde_json::json!({"op": "restore"})),
                true,
                Duration::from_secs(5),
            )
            .await;
            dropped(
                log,
                &c,
                how,
                "gone or outside the page when captured".into(),
            );
            return Ok(None);
        };
        if clip.cut {
            let why = placed
                .cut_why
                .clone()
                .unwrap_or_else(|| format!("larger than the {}x{} viewport", placed.vw, placed.vh));
            note(
                log,
                format!(
                    "{} chart {}{how} is {}x{} px, {why}: cut to its visible part",
                    c.library,
                    c.selector,
                    placed.width.round(),
                    placed.height.round()
                ),
            );
        }
        if placed.unclipped > 0 && attempt == 0 {
            note(
                log,
                format!(
                    "{} chart {}{how}: {} box(es) around it that clipped it (overflow) opened for the shot",
                    c.library, c.selector, placed.unclipped
                ),
            );
        }
        let params = CaptureScreenshotParams {
            format: Some(CaptureScreenshotFormat::Png),
            clip: Some(ClipViewport {
                x: clip.x,
                y: clip.y,
                width: clip.width,
                height: clip.height,
                scale: 1.0,
            }),
            capture_beyond_viewport: Some(false),
            from_surface: Some(true),
            ..Default::default()
        };
        let shot = tokio::time::timeout(Duration::from_secs(10), page.execute(params)).await;
        let _ = eval(
            page,
            capture::op(serde_json::json!({"op": "restore"})),
            true,
            Duration::from_secs(5),
        )
        .await;
        let shot = shot
            .map_err(|_| "page hung: screenshot took over 10 s".to_string())?
            .map_err(|e| format!("screenshot: {e}"))?;
        png = base64::engine::general_purpose::STANDARD
            .decode(AsRef::<str>::as_ref(&shot.result.data))
            .map_err(|e| format!("screenshot data: {e}"))?;
        if !capture::is_one_colour(&png) {
            break;
        }
        if attempt == 1 {
            dropped(
                log,
                &c,
                how,
                "captured blank (one colour) twice: no figure".into(),
            );
            return Ok(None);
        }
    }
    if !how.is_empty() {
        note(log, format!("{} chart {}{how}", c.library, c.selector));
    }
    if let Some(f) = &forced {
        note(log, format!("{} chart {}{how}: {f}", c.library, c.selector));
    }
    let (pw, ph) = capture::png_size(&png).ok_or("screenshot is not a PNG")?;
    let data = ChartData {
        library: c.library.clone(),
        chart_type: c.chart_type.clone(),
        title: c.title.clone(),
        labels: c
            .labels
            .iter()
            .map(|l| l.clone().unwrap_or_default())
            .collect(),
        series: c
            .series
            .iter()
            .map(|s| ChartSeries {
                name: s.name.clone(),
                values: s.values.clone(),
                total: s.n.max(s.values.len()),
            })
            .collect(),
        truncated: c.truncated,
        caption: c.caption.clone(),
        caption_source: c.caption_source.clone(),
        heading: c.heading.clone(),
        reveal: forced,
    };
    Ok(Some(RenderedChart {
        library: c.library,
        anchor: c.anchor.filter(|a| *a >= 0.0).map(|a| a as usize),
        frame: c.frame,
        selector: c.selector,
        png,
        width: pw,
        height: ph,
        data,
    }))
}
