//! The capture step on our own defect pages (`tests/pages/p-*.html`): a page that
//! rebuilds its chart on every window resize, a chart whose box keeps growing, charts
//! under the page's own fade-in, charts in hidden tab panels, a fixed bar over a long
//! smooth-scrolling page. Needs Chromium and the npm chart libraries (skipped otherwise).

use crate::common;

use common::*;
use tvir_browser::{Browser, PageRender, RenderedChart};

const PAGES: [&str; 5] = [
    "p-resize-rebuild.html",
    "p-runaway-height.html",
    "p-fade-in.html",
    "p-hidden-tabs.html",
    "p-fixed-bar-smooth-scroll.html",
];

fn sizes(charts: &[RenderedChart]) -> Vec<(u32, u32)> {
    charts.iter().map(|c| (c.width, c.height)).collect()
}

fn no_blank(page: &str, r: &PageRender) {
    assert!(r.failure.is_none(), "{page}: {:?} {:?}", r.failure, r.notes);
    for c in &r.charts {
        let img = pixels(&c.png);
        assert_eq!((img.width(), img.height()), (c.width, c.height), "{page}");
        assert!(!is_blank(&c.png), "{page}: {} is one colour", c.selector);
    }
}

/// Mean HSV saturation (0..1) over all pixels.
fn mean_saturation(png: &[u8]) -> f64 {
    let img = pixels(png);
    let mut sum = 0.0;
    for p in img.pixels() {
        let (r, g, b) = (p[0] as f64, p[1] as f64, p[2] as f64);
        let max = r.max(g).max(b);
        let min = r.min(g).min(b);
        if max > 0.0 {
            sum += (max - min) / max;
        }
    }
    sum / (img.width() * img.height()) as f64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn defect_pages_give_whole_charts() {
    let (Some(exe), Some(libs)) = (chromium(), libraries()) else {
        return;
    };
    let browser = Browser::start(config(exe)).await.expect("browser starts");
    let mut renders = Vec::new();
    for p in PAGES {
        renders.push(render(&browser, &libs, p).await);
    }
    for (p, r) in PAGES.iter().zip(&renders) {
        no_blank(p, r);
    }
    let by = |name: &str| &renders[PAGES.iter().position(|p| *p == name).unwrap()];

    // Rebuilt on every resize: the window is never resized, so the bars are there and
    // the PNG is the canvas box (900 px wide body, 260 px tall plot).
    let rb = by("p-resize-rebuild.html");
    assert_eq!(sizes(&rb.charts), [(900, 260)], "{:?}", rb.notes);
    let img = pixels(&rb.charts[0].png);
    let yellow = img
        .pixels()
        .filter(|p| p[0] > 230 && p[1] > 180 && p[1] < 215 && p[2] < 110)
        .count();
    assert!(yellow > 5000, "bars missing: {yellow} yellow pixels");

    // Still growing: frozen at no more than the viewport, noted, never cut.
    let rh = by("p-runaway-height.html");
    assert_eq!(rh.charts.len(), 1, "{:?}", rh.notes);
    assert!(rh.charts[0].height <= 900, "{:?}", sizes(&rh.charts));
    assert!(
        rh.notes.iter().any(|n| n.contains("kept growing")),
        "{:?}",
        rh.notes
    );
    assert!(
        !rh.notes.iter().any(|n| n.contains(": cut")),
        "{:?}",
        rh.notes
    );

    // Hidden tab panels: both hidden charts shown for their shot and noted; the chart
    // that only a click creates does not exist.
    let ht = by("p-hidden-tabs.html");
    let sel: Vec<&str> = ht.charts.iter().map(|c| c.selector.as_str()).collect();
    assert_eq!(sel, ["#ridersChart", "#faresChart", "#delaysChart"]);
    assert_eq!(sizes(&ht.charts), [(900, 300); 3]);
    assert_eq!(
        ht.notes
            .iter()
            .filter(|n| n.contains("hidden panel"))
            .count(),
        2,
        "{:?}",
        ht.notes
    );

    // Fixed bar + smooth scrolling: whole charts, and the 96 px bar (#0f4c75, full width)
    // not over their top rows (the nitrate bars' outline has the same colour: few pixels).
    let fb = by("p-fixed-bar-smooth-scroll.html");
    assert_eq!(
        sizes(&fb.charts),
        [(900, 320), (900, 780)],
        "{:?}",
        fb.notes
    );
    for c in &fb.charts {
        let img = pixels(&c.png);
        let bar = (0..96)
            .flat_map(|y| (0..img.width()).map(move |x| (x, y)))
            .filter(|&(x, y)| {
                let p = img.get_pixel(x, y);
                p[0] == 0x0f && p[1] == 0x4c && p[2] == 0x75
            })
            .count();
        assert!(
            bar * 20 < 96 * img.width() as usize,
            "{}: {bar} pixels of the fixed bar",
            c.selector
        );
    }
    browser.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_fade_in_does_not_pale_the_charts() {
    let (Some(exe), Some(libs)) = (chromium(), libraries()) else {
        return;
    };
    let browser = Browser::start(config(exe)).await.expect("browser starts");
    let faded = render(&browser, &libs, "p-fade-in.html").await;
    // The same page without its entrance animation and fading transition.
    let html = read(&pages_dir().join("p-fade-in.html"));
    let still = html
        .replace(".panel { animation: rise 3s ease-in-out both; }", "")
        .replace(".late { opacity: 0; transition: opacity 2.5s linear; }", "");
    assert_ne!(html, still, "the fixture's fade rules changed");
    let mut req = request(&libs, "p-fade-in.html");
    req.entry_override = Some(still.into_bytes());
    let plain = browser.render(req).await;
    no_blank("p-fade-in.html", &faded);
    no_blank("p-fade-in.html (no fade)", &plain);
    assert_eq!(sizes(&faded.charts), [(900, 300), (900, 300)]);
    assert_eq!(sizes(&faded.charts), sizes(&plain.charts));
    for (f, p) in faded.charts.iter().zip(&plain.charts) {
        let (sf, sp) = (mean_saturation(&f.png), mean_saturation(&p.png));
        assert!(sp > 0.003, "{}: reference has no colour ({sp})", f.selector);
        assert!(sf > sp * 0.95, "{}: pale ({sf} vs {sp})", f.selector);
        let d = mean_difference(&f.png, &p.png);
        assert!(
            d < 2.0,
            "{}: differs from the unfaded chart by {d}",
            f.selector
        );
    }
    browser.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_renders_give_identical_pngs() {
    let (Some(exe), Some(libs)) = (chromium(), libraries()) else {
        return;
    };
    let browser = Browser::start(config(exe)).await.expect("browser starts");
    for page in PAGES {
        let mut runs = Vec::new();
        for _ in 0..3 {
            let r = render(&browser, &libs, page).await;
            no_blank(page, &r);
            let px: Vec<_> = r
                .charts
                .iter()
                .map(|c| (c.selector.clone(), pixels(&c.png).into_raw()))
                .collect();
            runs.push(px);
        }
        assert!(!runs[0].is_empty(), "{page}: no chart");
        for (i, run) in runs.iter().enumerate().skip(1) {
            assert_eq!(run.len(), runs[0].len(), "{page}: run {i} chart count");
            for (a, b) in run.iter().zip(&runs[0]) {
                assert_eq!(a.0, b.0, "{page}: run {i}");
                assert!(a.1 == b.1, "{page}: run {i}: {} PNG differs", a.0);
            }
        }
    }
    browser.close().await;
}

/// A chart that fits the window but sits in a sideways-scrolling box narrower than
/// itself, beside a fixed sidebar: captured whole (its green first bar and red last
/// bar both in the PNG), with no "larger than the viewport" note.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chart_in_a_narrow_scrolling_box_is_captured_whole() {
    let (Some(exe), Some(libs)) = (chromium(), libraries()) else {
        return;
    };
    let browser = Browser::start(config(exe)).await.expect("browser starts");
    let r = render(&browser, &libs, "p-scroll-box-sidebar.html").await;
    // The same page with the chart pulled 700 px left: opened, it reaches past the
    // page's left edge, where no scroll goes. It cannot be shown whole, and the note
    // says why (not "larger than the viewport": it is not).
    let mut req = request(&libs, "p-scroll-box-sidebar.html");
    req.entry_override = Some(
        read(&pages_dir().join("p-scroll-box-sidebar.html"))
            .replace("height:340px\"", "height:340px;margin-left:-700px\"")
            .into_bytes(),
    );
    let pinned = browser.render(req).await;
    browser.close().await;
    assert_eq!(pinned.charts.len(), 1, "{:?}", pinned.notes);
    let cut: Vec<&String> = pinned
        .notes
        .iter()
        .filter(|n| n.contains("cut to"))
        .collect();
    assert_eq!(cut.len(), 1, "{:?}", pinned.notes);
    assert!(
        cut[0].contains("fits the 1280x900 viewport") && !cut[0].contains("larger than"),
        "{}",
        cut[0]
    );
    assert!(r.failure.is_none(), "{:?}", r.failure);
    assert_eq!(sizes(&r.charts), [(1100, 340)], "{:?}", r.notes);
    assert!(
        !r.notes.iter().any(|n| n.contains("cut to")),
        "{:?}",
        r.notes
    );
    let img = pixels(&r.charts[0].png);
    let count = |xs: std::ops::Range<u32>, want: fn(&image::Rgba<u8>) -> bool| {
        xs.flat_map(|x| (0..img.height()).map(move |y| (x, y)))
            .filter(|&(x, y)| want(img.get_pixel(x, y)))
            .count()
    };
    let green = count(0..150, |p| p[0] < 40 && p[1] > 140 && p[2] < 40);
    let red = count(img.width() - 150..img.width(), |p| {
        p[0] > 200 && p[1] < 40 && p[2] < 40
    });
    assert!(green > 200, "first bar missing: {green} green pixels");
    assert!(red > 200, "last bar missing: {red} red pixels");
}
