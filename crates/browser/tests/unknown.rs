//! What the live page draws decides (issue 34): a chart drawn on a canvas by a script
//! the suite has no registry for is a chart (library `unknown`); a background layer, a
//! logo-sized drawing or a blank canvas is not. At the elements a caller expects charts
//! in (`PageRequest::probes`), the live page says what it shows: a chart, an empty box
//! or blank canvas nothing drew into, or no place for a chart at all (text a script
//! filled in, a control, a small drawing). Needs Chromium (skipped otherwise).

use crate::common;

use common::*;
use tvir_browser::Browser;

const PAGE: &str = "p-unknown-library.html";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_canvas_drawn_by_an_unknown_script_is_a_chart_and_decoration_is_not() {
    let (Some(exe), Some(libs)) = (chromium(), libraries()) else {
        return;
    };
    let r = render_probed(
        exe,
        &libs,
        PAGE,
        None,
        vec![5, 10, 11, 20, 30, 40, 50, 60, 70],
    )
    .await;
    let found: Vec<(&str, &str)> = r
        .charts
        .iter()
        .map(|c| (c.selector.as_str(), c.library.as_str()))
        .collect();
    assert_eq!(found, [("#ships", "unknown")], "{:?}", r.notes);
    let ships = &r.charts[0];
    assert!(!is_blank(&ships.png), "{:?}", r.notes);
    assert_eq!((ships.width, ships.height), (720, 300));
    assert_eq!(ships.data.heading.as_deref(), Some("Ships per month"));
    let states = slot_states(&r);
    assert_eq!(
        states,
        [
            (5, "drawn"),
            (10, "chart"),
            (11, "chart"),
            (20, "small"),
            (30, "text"),
            (40, "control"),
            (50, "empty"),
            (60, "empty"),
            (70, "gone"),
        ],
        "{:?}",
        r.slots
    );
    let slots: Vec<bool> = r.slots.iter().map(|s| s.is_chart_slot()).collect();
    assert_eq!(
        slots,
        [false, true, true, false, false, false, true, true, false]
    );
}

/// A chart whose configuration loads a data file the page could not fetch draws an
/// empty frame (title and axes, no marks); that is not the chart a reader sees. It is
/// not captured: it is dropped naming the refused request, and a chart beside it with
/// its data inline is captured as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chart_drawn_without_its_refused_data_file_is_dropped_naming_the_file() {
    let (Some(exe), Some(libs)) = (chromium(), libraries()) else {
        return;
    };
    let browser = Browser::start(config(exe)).await.expect("browser starts");
    let r = render(&browser, &libs, "p-data-refused.html").await;
    browser.close().await;
    assert!(r.failure.is_none(), "{:?} {:?}", r.failure, r.notes);
    let captured: Vec<&str> = r.charts.iter().map(|c| c.selector.as_str()).collect();
    assert_eq!(captured.len(), 1, "{captured:?} {:?}", r.notes);
    assert!(captured[0].starts_with("#inline"), "{captured:?}");
    let d = r
        .dropped
        .iter()
        .find(|d| d.selector.starts_with("#from-file"))
        .unwrap_or_else(|| panic!("no drop for #from-file: {:?} {:?}", r.dropped, r.notes));
    assert_eq!(d.library, "vega");
    assert!(
        d.reason.contains("drawn without its data")
            && d.reason
                .contains("https://data.example.org/lighthouse-visits.csv"),
        "{}",
        d.reason
    );
}

/// The same class when inline rows are mixed in (a threshold rule, a note, a lookup
/// table, a dataset no mark reads): whether a chart was drawn is decided by the marks
/// that read the refused file, not by whether the view holds any row. Layered,
/// concatenated, repeated and faceted charts, Vega-Lite and plain Vega, and inline rows
/// filtered by what a lookup to the refused file found are dropped naming that file,
/// since the marks reading it drew nothing; charts whose marks drew from inline rows
/// (all inline, a lookup to the refused file that found nothing, a refused file no
/// mark reads) are captured.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chart_whose_file_fed_marks_drew_nothing_is_dropped_though_inline_rows_drew() {
    let (Some(exe), Some(libs)) = (chromium(), libraries()) else {
        return;
    };
    let browser = Browser::start(config(exe)).await.expect("browser starts");
    let r = render(&browser, &libs, "p-data-refused-mixed.html").await;
    browser.close().await;
    assert!(r.failure.is_none(), "{:?} {:?}", r.failure, r.notes);
    let id = |s: &str| s.split(' ').next().unwrap_or("").to_string();
    let mut captured: Vec<String> = r.charts.iter().map(|c| id(&c.selector)).collect();
    captured.sort();
    assert_eq!(
        captured,
        ["#inline-layers", "#lookup-missing", "#vega-unused-file"],
        "dropped: {:?} notes: {:?}",
        r.dropped,
        r.notes
    );
    for c in &r.charts {
        assert!(!is_blank(&c.png), "{} blank", c.selector);
    }
    let file = "https://data.example.org/harbour-arrivals.csv";
    for (chart, named) in [
        ("#layer-threshold", file),
        ("#lookup-notes", file),
        ("#repeat-rule", file),
        ("#vega-facet", "https://data.example.org/tides.json"),
        (
            "#lookup-filtered",
            "https://data.example.org/harbour-names.csv",
        ),
    ] {
        let d = r
            .dropped
            .iter()
            .find(|d| id(&d.selector) == chart)
            .unwrap_or_else(|| panic!("no drop for {chart}: {:?} {:?}", r.dropped, r.notes));
        assert_eq!(d.library, "vega");
        assert!(
            d.reason.starts_with("drawn without its data")
                && d.reason.contains(named)
                && d.reason.matches("data.example.org").count() == 1,
            "{chart}: {}",
            d.reason
        );
    }
    assert_eq!(r.dropped.len(), 5, "{:?}", r.dropped);
}
