//! Figures as a reader counts them (issue 45, requirement 7). A box or canvas the page
//! fills only when a reader clicks (a tab, a "show" button, a box a button fills, a
//! modal) is no chart at load: its probe says `after-click`, which is no chart's place,
//! so it gives no unit; a chart the page meant to draw at load and did not (its script
//! failed, also when a button draws it again) stays a chart's place. A card holding one
//! chart lends it its heading also when an icon, an icon font's glyph or an emoji
//! stands in or beside the heading, without those glyphs; a heading over two charts
//! labels neither. Handlers bound through jQuery count as the page's own. Nothing is
//! clicked. Needs Chromium and the npm chart libraries
//! (skipped otherwise).

use crate::common;

use common::*;
use tvir_browser::Browser;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boxes_filled_only_after_a_click_are_no_place_for_a_chart_at_load() {
    let (Some(exe), Some(libs)) = (chromium(), libraries()) else {
        return;
    };
    let r = render_probed(
        exe,
        &libs,
        "p-filled-on-click.html",
        None,
        vec![10, 11, 20, 21, 30, 31, 40, 50, 60, 70],
    )
    .await;
    // The chart drawn at load is found, with its card's heading; nothing else is.
    let found: Vec<&str> = r.charts.iter().map(|c| c.selector.as_str()).collect();
    assert_eq!(found, ["#rides"], "{:?}", r.notes);
    assert!(!is_blank(&r.charts[0].png));
    assert_eq!(r.charts[0].data.heading.as_deref(), Some("Rides per week"));
    let states = slot_states(&r);
    assert_eq!(
        states,
        [
            (10, "chart"),
            (11, "chart"),
            // A tab panel's chart, made the first time its tab is clicked.
            (20, "after-click"),
            (21, "after-click"),
            // A "show" button's chart (an onclick attribute).
            (30, "after-click"),
            (31, "after-click"),
            // A visible empty box a button's onclick property fills.
            (40, "after-click"),
            // A modal's chart, made by a function the click handler calls.
            (50, "after-click"),
            // Meant for load: the script stops on missing data.
            (60, "empty"),
            // Meant for load and redrawn by a button: the load-time call fails.
            (70, "empty"),
        ],
        "{:?}",
        r.slots
    );
    let places: Vec<bool> = r.slots.iter().map(|s| s.is_chart_slot()).collect();
    assert_eq!(
        places,
        [true, true, false, false, false, false, false, false, true, true]
    );
    // The two failures are the page's script errors, kept as the reason.
    let errors: Vec<&str> = r.script_errors.iter().map(|e| e.message.as_str()).collect();
    assert!(
        errors.iter().any(|e| e.contains("outOfService"))
            && errors.iter().any(|e| e.contains("rideLengths")),
        "{errors:?}"
    );
}

/// The same page with its chart library refused: the chart meant for load is still a
/// chart's place (its library failed), the click-only one still none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chart_whose_library_failed_stays_a_place_for_a_chart() {
    let (Some(exe), Some(libs)) = (chromium(), libraries()) else {
        return;
    };
    let page = "p-filled-on-click.html";
    let html = read(&pages_dir().join(page));
    let refused = html.replace(
        "https://cdn.jsdelivr.net/npm/chart.js@4/dist/chart.umd.min.js",
        "https://cdn.example.invalid/never-served/chart.js",
    );
    assert_ne!(html, refused);
    let r = render_probed(
        exe,
        &libs,
        page,
        Some(refused),
        vec![10, 11, 30, 31, 60, 70],
    )
    .await;
    assert!(r.charts.is_empty(), "{:?}", r.notes);
    let states = slot_states(&r);
    assert_eq!(
        states,
        [
            (10, "empty"),
            (11, "empty"),
            (30, "after-click"),
            (31, "after-click"),
            (60, "empty"),
            (70, "empty"),
        ],
        "{:?}",
        r.slots
    );
}

/// The same rule when the page binds its handlers with jQuery (`.on`, `.click`, a
/// delegated `.on` handing over a named function, `.one`), which addEventListener sees
/// only as jQuery's own dispatcher: the chart drawn when the document is ready is
/// found, every box a click fills is none, and the chart meant for load whose data is
/// missing stays a chart's place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boxes_a_jquery_click_handler_fills_are_no_place_for_a_chart_at_load() {
    let (Some(exe), Some(libs)) = (chromium(), libraries()) else {
        return;
    };
    let r = render_probed(
        exe,
        &libs,
        "p-filled-on-click-jquery.html",
        None,
        vec![10, 11, 20, 21, 30, 31, 40, 50, 60],
    )
    .await;
    let found: Vec<&str> = r.charts.iter().map(|c| c.selector.as_str()).collect();
    assert_eq!(found, ["#crossings"], "{:?}", r.notes);
    let states = slot_states(&r);
    assert_eq!(
        states,
        [
            (10, "chart"),
            (11, "chart"),
            (20, "after-click"),
            (21, "after-click"),
            (30, "after-click"),
            (31, "after-click"),
            (40, "after-click"),
            (50, "after-click"),
            (60, "empty"),
        ],
        "{:?}",
        r.slots
    );
    assert!(r.slots.last().unwrap().is_chart_slot());
    let errors: Vec<&str> = r.script_errors.iter().map(|e| e.message.as_str()).collect();
    assert!(errors.iter().any(|e| e.contains("hourly")), "{errors:?}");
}

/// One function shows a tab and draws its chart the first time; the page runs it for
/// the first tab at load. The first chart is found; the second tab's box, which that
/// function fills only for the second tab and no code asked for at load, is none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tab_drawn_by_the_function_that_shows_the_first_tab_is_none_at_load() {
    let (Some(exe), Some(libs)) = (chromium(), libraries()) else {
        return;
    };
    let r = render_probed(
        exe,
        &libs,
        "p-tabs-drawn-on-show.html",
        None,
        vec![10, 11, 20, 21],
    )
    .await;
    let found: Vec<&str> = r.charts.iter().map(|c| c.selector.as_str()).collect();
    assert_eq!(found, ["#harvestChart"], "{:?}", r.notes);
    let states = slot_states(&r);
    assert_eq!(
        states,
        [
            (10, "chart"),
            (11, "chart"),
            (20, "after-click"),
            (21, "after-click")
        ],
        "{:?}",
        r.slots
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_card_lends_its_one_chart_its_heading_without_icons_or_emoji() {
    let (Some(exe), Some(libs)) = (chromium(), libraries()) else {
        return;
    };
    let browser = Browser::start(config(exe)).await.expect("browser starts");
    let r = render(&browser, &libs, "p-card-headings.html").await;
    browser.close().await;
    assert!(r.failure.is_none(), "{:?} {:?}", r.failure, r.notes);
    let headings: Vec<(&str, Option<&str>)> = r
        .charts
        .iter()
        .map(|c| (c.selector.as_str(), c.data.heading.as_deref()))
        .collect();
    // The 44-pixel icon of nine bars beside "Passenger growth" is no chart.
    assert_eq!(
        headings,
        [
            // An icon-font <i> beside the heading, a private-use glyph inside it.
            ("#revenue", Some("Revenue by year")),
            // A Material Icons ligature inside the heading.
            ("#tickets", Some("Tickets sold by type")),
            // An emoji in its own span before the words.
            ("#share", Some("Market share")),
            // An inline svg icon (with its own <title>) inside the heading.
            ("#crossings", Some("Crossings per day")),
            // A heading two levels down in a header row, an svg icon and a badge
            // beside it, an emoji after the words.
            ("#growth", Some("Passenger growth")),
            // A bold line after an emoji.
            ("#bikes", Some("Bikes carried per sailing")),
            // One heading over two charts labels neither.
            ("#rain", None),
            ("#wind", None),
            // A title element starting with an emoji (ECharts, found after Chart.js).
            ("#berths", Some("Berth use")),
        ],
        "{:?}",
        r.notes
    );
}
