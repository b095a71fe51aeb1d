//! The render cache on a real headless Chromium (needs Chromium and the npm chart
//! libraries of `scripts/fetch_chart_libs.sh`, `TVIR_CHART_LIBS`; else `skipped: …`):
//! a render that lost charts to the page's time limit is stored incomplete, answers a
//! run without a browser with units that say so, and is rendered again by the next run
//! with a browser, which replaces it; a complete render is served with no render.
//! Renders are counted; no test measures time (the page's busy work only makes a small
//! time limit run out: each chart's box keeps the page busy for 700 ms when it first
//! comes into view, 2.8 s in all, against a 2 s limit).

// The checkout's one skip rule (`TVIR_REQUIRE_ALL_TESTS=1` turns a skip into a failure).
#[path = "../../../../tests/common/skip.rs"]
mod skip_rule;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tvir_sources::PageOutcome;
use tvir_store::Store;

use super::{BrowserChoice, RenderResult, RenderSettings, Renderer};
use crate::pages::{Pages, ResourceBytes, ResourceFailure};

const CHART_JS: &str = "https://cdn.jsdelivr.net/npm/chart.js@4.6.1/dist/chart.umd.min.js";

/// Four Chart.js charts far apart on a page whose boxes each keep it busy for 700 ms
/// the first time they come into view (a reader's scroll, then never again).
fn busy_page() -> String {
    let mut body = String::new();
    for k in 1..=4 {
        body.push_str(&format!(
            "<h2>Region {k}</h2>\n<div class=\"box\" style=\"width:480px;height:240px\"><canvas id=\"c{k}\"></canvas></div>\n<div style=\"height:1400px\"></div>\n"
        ));
    }
    format!(
        r#"<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Busy while scrolled</title>
<script src="{CHART_JS}"></script></head>
<body>
<h1>Sales by region</h1>
{body}<script>
[1, 2, 3, 4].forEach(function (k) {{
  new Chart(document.getElementById('c' + k), {{ type: 'bar',
    data: {{ labels: ['Q1', 'Q2', 'Q3'], datasets: [{{ label: 'units ' + k, data: [3 + k, 5, 2 + k] }}] }},
    options: {{ animation: false, maintainAspectRatio: false }} }});
}});
var seen = new Set();
var watch = new IntersectionObserver(function (entries) {{
  entries.forEach(function (e) {{
    if (!e.isIntersecting || seen.has(e.target)) return;
    seen.add(e.target);
    var until = performance.now() + 700;
    while (performance.now() < until) {{}}
  }});
}});
document.querySelectorAll('.box').forEach(function (b) {{ watch.observe(b); }});
</script>
</body></html>
"#
    )
}

/// The chart libraries' files by URL (`manifest.tsv`), as an offline cache gives them.
struct Libraries(HashMap<String, PathBuf>);

impl Pages for Libraries {
    fn page<'a>(&'a self, url: &'a str) -> BoxFuture<'a, PageOutcome> {
        Box::pin(async move { PageOutcome::with_text(url, String::new()) })
    }
    fn image_bytes<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<Vec<u8>, String>> {
        Box::pin(async move { Err(format!("{url}: no images here")) })
    }
    fn resource<'a>(
        &'a self,
        url: &'a str,
        _accept: &'a str,
    ) -> BoxFuture<'a, Result<ResourceBytes, ResourceFailure>> {
        Box::pin(async move {
            match self.0.get(url) {
                Some(p) => std::fs::read(p)
                    .map(|b| (b, Some("text/javascript".to_string())))
                    .map_err(|e| ResourceFailure::Failed(e.to_string())),
                None => Err(ResourceFailure::Missing(format!("{url}: not in the cache"))),
            }
        })
    }
}

/// Chromium and the chart libraries, or None after saying which is missing.
fn browser_and_libraries() -> Option<(PathBuf, Libraries)> {
    let Ok(exe) = tvir_browser::find_browser(
        std::env::var_os("TVIR_BROWSER")
            .map(PathBuf::from)
            .as_deref(),
    ) else {
        skip_rule::skip("no Chromium");
        return None;
    };
    let dir = std::env::var_os("TVIR_CHART_LIBS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/chart-libs"));
    let Ok(manifest) = std::fs::read_to_string(dir.join("manifest.tsv")) else {
        skip_rule::skip(
            "chart libraries missing (run scripts/fetch_chart_libs.sh and set TVIR_CHART_LIBS)",
        );
        return None;
    };
    let files = manifest
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(url, file)| (url.to_string(), dir.join(file)))
        .collect();
    Some((exe, Libraries(files)))
}

/// A report folder (removed on drop) holding `report.html`.
struct Folder(PathBuf);

impl Folder {
    fn new(name: &str, html: &str) -> Folder {
        let dir = std::env::temp_dir().join(format!("tvir-render-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("report.html"), html).unwrap();
        Folder(dir)
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One run of the render stage over `report` with `store`: its result and renderer.
async fn run(
    report: &tvir_report::Report,
    store: &Store,
    pages: &Arc<dyn Pages>,
    browser: BrowserChoice,
    budget: Duration,
) -> (RenderResult, Renderer) {
    let mut settings = RenderSettings::new(browser);
    settings.page_budget = budget;
    let renderer = Renderer::new(settings, Some(store.clone()), Some(pages.clone()));
    let (_, result) = renderer
        .render_report(report)
        .await
        .expect("the page needs a browser");
    renderer.close().await;
    (result, renderer)
}

fn rendered(r: &Renderer) -> usize {
    r.counters.pages_rendered.load(Ordering::Relaxed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn charts_lost_to_the_time_limit_are_rendered_again_and_a_complete_render_is_not() {
    let Some((exe, libs)) = browser_and_libraries() else {
        return;
    };
    let pages: Arc<dyn Pages> = Arc::new(libs);
    let folder = Folder::new("busy", &busy_page());
    let report = tvir_report::load(&folder.0.join("report.html")).expect("report loads");
    let store = Store::in_memory().unwrap();
    let with_browser = || BrowserChoice::Executable(exe.clone());

    // 1. A 2 s limit on a page that is busy for 2.8 s while scrolled: the charts are
    //    lost to the time limit, each a failed unit saying so, the render incomplete.
    let (r1, c1) = run(
        &report,
        &store,
        &pages,
        with_browser(),
        Duration::from_secs(2),
    )
    .await;
    assert_eq!(rendered(&c1), 1);
    assert_eq!(r1.status, "rendered");
    let why = r1.incomplete.clone().unwrap_or_else(|| {
        panic!(
            "a render that lost charts to its time limit is incomplete: {:?} {:?}",
            r1.unrendered, r1.notes
        )
    });
    assert!(r1.pngs.len() < 4, "{:?}", r1.notes);
    let lost = 4 - r1.pngs.len();
    assert_eq!(r1.unrendered.len(), lost, "{:#?}", r1.unrendered);
    for u in &r1.unrendered {
        assert!(!u.skipped);
        assert!(
            u.reason.contains("the render is incomplete")
                && u.reason.matches("the render is incomplete").count() == 1,
            "{}",
            u.reason
        );
    }
    assert!(why.contains("time limit"), "{why}");
    assert_eq!(c1.counters.incomplete_reports.load(Ordering::Relaxed), 1);
    let line = c1.incomplete_lines();
    assert!(
        line.contains(&format!(
            "note: {lost} chart(s) drawn by script in 1 report(s) lost to the page's time limit"
        )),
        "{line}"
    );

    // 2. No browser: the stored incomplete render is used, its lost charts say so.
    let none = BrowserChoice::Unavailable("no Chromium found".into());
    let (r2, c2) = run(
        &report,
        &store,
        &pages,
        none.clone(),
        Duration::from_secs(20),
    )
    .await;
    assert_eq!((rendered(&c2), r2.status.as_str()), (0, "cached"));
    assert_eq!(r2.incomplete.as_deref(), Some(why.as_str()));
    assert_eq!(r2.pngs.len(), r1.pngs.len());
    assert_eq!(r2.unrendered, r1.unrendered);

    // 3. A browser and the normal limit: the page is rendered again, all four charts
    //    drawn, and the complete render replaces the incomplete one.
    let (r3, c3) = run(
        &report,
        &store,
        &pages,
        with_browser(),
        Duration::from_secs(20),
    )
    .await;
    assert_eq!(rendered(&c3), 1, "an incomplete render is rendered again");
    assert_eq!(c3.counters.rerendered.load(Ordering::Relaxed), 1);
    assert_eq!(
        c3.incomplete_lines(),
        "note: 1 page(s) rendered again: their stored render was incomplete\n"
    );
    assert_eq!(r3.status, "rendered");
    assert_eq!(r3.pngs.len(), 4, "{:?} {:?}", r3.unrendered, r3.notes);
    assert!(r3.unrendered.is_empty(), "{:?}", r3.unrendered);
    assert_eq!(r3.incomplete, None);

    // 4. The complete render answers: no render, with a browser or without one.
    let (r4, c4) = run(
        &report,
        &store,
        &pages,
        with_browser(),
        Duration::from_secs(2),
    )
    .await;
    assert_eq!(
        rendered(&c4),
        0,
        "a complete render is never rendered again"
    );
    assert_eq!(c4.counters.browser_starts.load(Ordering::Relaxed), 0);
    assert_eq!((r4.status.as_str(), r4.pngs.len()), ("cached", 4));
    assert_eq!(r4.pngs, r3.pngs);
    assert_eq!(c4.incomplete_lines(), "");
    let (r5, c5) = run(&report, &store, &pages, none, Duration::from_secs(2)).await;
    assert_eq!(
        (rendered(&c5), r5.status.as_str(), r5.pngs.len()),
        (0, "cached", 4)
    );
    assert_eq!(r5.incomplete, None);
}

/// A page that loses charts to every render (here a 2 s limit on a page busy for
/// 2.8 s) is made again at most `MAX_INCOMPLETE_RENDERS` times in a row; the run after
/// that serves the last render as it is, says why, and renders nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_that_loses_charts_to_every_render_is_not_rendered_on_every_run() {
    let Some((exe, libs)) = browser_and_libraries() else {
        return;
    };
    let pages: Arc<dyn Pages> = Arc::new(libs);
    let folder = Folder::new("always-busy", &busy_page());
    let report = tvir_report::load(&folder.0.join("report.html")).expect("report loads");
    let store = Store::in_memory().unwrap();
    let limit = Duration::from_secs(2);
    let max = super::cache::MAX_INCOMPLETE_RENDERS as usize;
    let mut last = None;
    for k in 1..=max + 1 {
        let (r, c) = run(
            &report,
            &store,
            &pages,
            BrowserChoice::Executable(exe.clone()),
            limit,
        )
        .await;
        if k <= max {
            assert_eq!(rendered(&c), 1, "run {k} renders the page");
            assert!(r.incomplete.is_some(), "run {k}: {:?}", r.notes);
        }
        last = Some((r, c));
    }
    let (r, c) = last.expect("runs");
    assert_eq!(rendered(&c), 0, "after {max} incomplete renders in a row");
    assert_eq!(c.counters.browser_starts.load(Ordering::Relaxed), 0);
    assert_eq!(r.status, "cached");
    assert!(r.incomplete.is_some());
    assert!(!r.unrendered.is_empty());
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains(&format!("incomplete after {max} renders in a row"))),
        "{:?}",
        r.notes
    );
}
