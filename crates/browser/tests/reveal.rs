//! Charts as a reader sees them after scrolling to them (issue 34): cards that fade
//! in when scrolled into view (a CSS transition started by an observer, a script
//! stepping opacity frame by frame, a chart created only when its card is first
//! seen) are captured revealed; a card that never reveals is captured with the
//! reveal forced and its record says so. The visible title above a chart in its own
//! card is read as its heading, a heading over several charts is not; library UI
//! (mode bars, export buttons, zoom controls, open tooltips) is not in the picture.
//! Needs Chromium and the npm chart libraries (skipped otherwise).

use crate::common;

use common::*;
use tvir_browser::{Browser, PageRender, RenderedChart};

fn no_blank(page: &str, r: &PageRender) {
    assert!(r.failure.is_none(), "{page}: {:?} {:?}", r.failure, r.notes);
    for c in &r.charts {
        assert!(
            !is_blank(&c.png),
            "{page}: {} is one colour ({:?})",
            c.selector,
            r.notes
        );
    }
}

/// The chart whose element is `sel` or inside it.
fn in_box<'a>(r: &'a PageRender, sel: &str) -> &'a RenderedChart {
    r.charts
        .iter()
        .find(|c| c.selector == sel || c.selector.starts_with(&format!("{sel} > ")))
        .unwrap_or_else(|| panic!("no chart in {sel}: {:?} {:?}", selectors(r), r.notes))
}

fn by_selector<'a>(r: &'a PageRender, sel: &str) -> &'a RenderedChart {
    r.charts
        .iter()
        .find(|c| c.selector == sel)
        .unwrap_or_else(|| panic!("no chart {sel}: {:?} {:?}", selectors(r), r.notes))
}

fn selectors(r: &PageRender) -> Vec<&str> {
    r.charts.iter().map(|c| c.selector.as_str()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn charts_revealed_on_scroll_are_captured_revealed() {
    let (Some(exe), Some(libs)) = (chromium(), libraries()) else {
        return;
    };
    let page = "p-reveal-on-scroll.html";
    let browser = Browser::start(config(exe)).await.expect("browser starts");
    let revealed = render(&browser, &libs, page).await;
    // The same page with every card shown from the start (the lazily created chart
    // still waits for its card to be seen).
    let html = read(&pages_dir().join(page));
    let still = html.replace(
        "</head>",
        "<style>.card { opacity: 1 !important; transform: none !important; transition: none !important; }</style></head>",
    );
    let mut req = request(&libs, page);
    req.entry_override = Some(still.into_bytes());
    let plain = browser.render(req).await;
    browser.close().await;
    no_blank(page, &revealed);
    no_blank("(shown from the start)", &plain);
    assert_eq!(
        selectors(&revealed),
        ["#quarters", "#piers", "#tickets", "#crossing"],
        "{:?}",
        revealed.notes
    );
    for sel in ["#quarters", "#piers", "#crossing", "#tickets"] {
        let (r, p) = (by_selector(&revealed, sel), by_selector(&plain, sel));
        assert_eq!((r.width, r.height), (p.width, p.height), "{sel}");
        let d = mean_difference(&r.png, &p.png);
        assert!(
            d < 2.0,
            "{sel}: differs from the chart shown from the start by {d} ({:?})",
            revealed.notes
        );
    }
    // Only the card that never reveals was forced, and its record says so.
    for sel in ["#quarters", "#piers", "#crossing"] {
        let c = by_selector(&revealed, sel);
        assert_eq!(c.data.reveal, None, "{sel}");
    }
    let forced = by_selector(&revealed, "#tickets");
    let why = forced.data.reveal.as_deref().unwrap_or_default();
    assert!(
        why.contains("forced") && why.contains("opacity"),
        "{why:?} {:?}",
        revealed.notes
    );
    assert!(by_selector(&plain, "#tickets").data.reveal.is_none());
}

const TITLES: &str = "p-titles-and-chrome.html";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_chart_gets_the_title_of_its_own_card_and_no_library_ui() {
    let (Some(exe), Some(libs)) = (chromium(), libraries()) else {
        return;
    };
    let browser = Browser::start(config(exe)).await.expect("browser starts");
    let with_ui = render(&browser, &libs, TITLES).await;
    // The same charts configured without their UI (mode bar, export button, toolbox,
    // toolbar, credits, vega-embed's action menu).
    let html = read(&pages_dir().join(TITLES));
    let bare = html.replace("var CHROME = !window.NO_CHROME;", "var CHROME = false;");
    assert_ne!(html, bare);
    let mut req = request(&libs, TITLES);
    req.entry_override = Some(bare.into_bytes());
    let without = browser.render(req).await;
    browser.close().await;
    no_blank(TITLES, &with_ui);
    no_blank("(configured without UI)", &without);
    let headings: Vec<(&str, Option<&str>)> = with_ui
        .charts
        .iter()
        // The vega chart is the view's drawing inside `#shelves`.
        .map(|c| {
            let host = c.selector.split(" > ").next().unwrap_or_default();
            (host, c.data.heading.as_deref())
        })
        .collect();
    assert_eq!(
        headings,
        [
            ("#branches", Some("Visitors per branch")),
            ("#weekdayA", None),
            ("#weekdayB", None),
            ("#evenings", Some("Evening visits by month")),
            ("#formats", Some("Loans by format")),
            ("#rooms", Some("Study-room bookings per week")),
            ("#wifi", Some("Wi-Fi sessions per day")),
            ("#shelves", Some("Shelf metres by genre")),
        ],
        "{:?}",
        with_ui.notes
    );
    for sel in ["#evenings", "#formats", "#rooms", "#wifi", "#shelves"] {
        let (a, b) = (in_box(&with_ui, sel), in_box(&without, sel));
        assert_eq!((a.width, a.height), (b.width, b.height), "{sel}");
        let (pa, pb) = (pixels(&a.png), pixels(&b.png));
        let differing = pa.pixels().zip(pb.pixels()).filter(|(x, y)| x != y).count();
        let total = (pa.width() * pa.height()) as usize;
        assert!(
            differing * 1000 <= total,
            "{sel} ({}): {differing} of {total} pixels differ from the chart drawn without its UI",
            a.library
        );
    }
}

const STANDINS: &str = "p-chrome-standins.html";

/// The UI rules of Google Charts and amCharts (open tooltips, export menus), whose
/// libraries are not on npm under the addresses pages load, checked on elements of
/// our own carrying their class names over a Chart.js chart: none of their colour
/// is in the picture, which matches the chart drawn without them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ui_of_libraries_not_on_npm_is_hidden_by_its_class_names() {
    let (Some(exe), Some(libs)) = (chromium(), libraries()) else {
        return;
    };
    let browser = Browser::start(config(exe)).await.expect("browser starts");
    let with_ui = render(&browser, &libs, STANDINS).await;
    let html = read(&pages_dir().join(STANDINS));
    let start = html.find("<!--UI-->").expect("marked UI");
    let end = html.find("<!--/UI-->").expect("marked UI end");
    let bare = format!("{}{}", &html[..start], &html[end..]);
    let mut req = request(&libs, STANDINS);
    req.entry_override = Some(bare.into_bytes());
    let without = browser.render(req).await;
    browser.close().await;
    no_blank(STANDINS, &with_ui);
    no_blank("(without the stand-ins)", &without);
    let (a, b) = (in_box(&with_ui, "#ferries"), in_box(&without, "#ferries"));
    let magenta = pixels(&a.png)
        .pixels()
        .filter(|p| p[0] > 230 && p[1] < 40 && p[2] > 230)
        .count();
    assert_eq!(magenta, 0, "stand-in UI painted over the chart");
    assert_eq!(pixels(&a.png), pixels(&b.png), "{:?}", with_ui.notes);
}
