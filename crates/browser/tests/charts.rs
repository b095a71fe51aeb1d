//! Real Chromium on our own chart pages: which charts are found, their data, their PNGs.
//! Needs Chromium (`skipped: no Chromium` otherwise) and the npm chart libraries
//! (`scripts/fetch_chart_libs.sh target/chart-libs`, or TVIR_CHART_LIBS).

use crate::common;

use common::*;
use tvir_browser::{Browser, RenderedChart};

fn titles(charts: &[RenderedChart]) -> Vec<String> {
    charts
        .iter()
        .map(|c| c.data.title.clone().unwrap_or_default())
        .collect()
}

fn check_pngs(page: &str, charts: &[RenderedChart]) {
    for c in charts {
        assert!(!c.png.is_empty(), "{page}: {} has no PNG", c.selector);
        let img = pixels(&c.png);
        assert_eq!(
            (img.width(), img.height()),
            (c.width, c.height),
            "{page}: PNG size"
        );
        assert!(!is_blank(&c.png), "{page}: {} PNG is blank", c.selector);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn library_pages_give_their_charts_with_data() {
    let (Some(exe), Some(libs)) = (chromium(), libraries()) else {
        return;
    };
    let browser = Browser::start(config(exe)).await.expect("browser starts");
    assert!(
        browser.version().contains('/'),
        "version {}",
        browser.version()
    );
    let pages = [
        "chartjs-report.html",
        "echarts-report.html",
        "plotly-report.html",
        "d3-report.html",
        "vegalite-report.html",
        "highcharts-report.html",
        "apex-report.html",
        "vh-chart.html",
    ];
    let renders = futures::future::join_all(pages.iter().map(|p| render(&browser, &libs, p))).await;
    for (page, r) in pages.iter().zip(&renders) {
        assert!(
            r.failure.is_none(),
            "{page}: {:?} notes {:?}",
            r.failure,
            r.notes
        );
        check_pngs(page, &r.charts);
    }
    let by = |name: &str| &renders[pages.iter().position(|p| *p == name).unwrap()];

    // Chart.js: three charts, titles, labels, series and figcaptions from the live charts.
    let cj = &by("chartjs-report.html").charts;
    assert_eq!(cj.len(), 3, "{cj:#?}");
    assert!(cj.iter().all(|c| c.library == "chartjs"));
    assert_eq!(
        titles(cj),
        [
            "Bicycle trips per quarter, 2024",
            "Average daily trips by weekday",
            "Trip purpose (%)"
        ]
    );
    assert_eq!(cj[0].data.chart_type.as_deref(), Some("bar"));
    assert_eq!(cj[0].data.labels, ["Q1", "Q2", "Q3", "Q4"]);
    assert_eq!(
        cj[0].data.series[0].name.as_deref(),
        Some("Trips (thousands)")
    );
    assert_eq!(
        cj[0].data.series[0].values,
        [41, 63, 77, 52].map(serde_json::Value::from).to_vec()
    );
    assert_eq!(cj[1].data.series.len(), 2);
    assert!(cj[0]
        .data
        .caption
        .as_deref()
        .unwrap()
        .starts_with("Figure 1: Bicycle trips"));
    assert_eq!(cj[0].selector, "#tripsByQuarter");
    assert_eq!(cj[0].frame, None);
    // The pie's box is fixed by the page at 420×300 CSS px: the PNG is exactly that.
    assert_eq!((cj[2].width, cj[2].height), (420, 300));
    // Every request was the entry or a provided library; nothing refused.
    let reqs = &by("chartjs-report.html").requests;
    assert!(
        reqs.iter()
            .any(|r| matches!(r.outcome, tvir_browser::RequestOutcome::Provided { .. })),
        "{reqs:?}"
    );

    let ec = &by("echarts-report.html").charts;
    assert_eq!(ec.len(), 2, "{ec:#?}");
    assert!(ec
        .iter()
        .all(|c| c.library == "echarts" && !c.data.series.is_empty() && !c.data.labels.is_empty()));
    assert!(ec.iter().all(|c| c.data.title.is_some()));

    let pl = &by("plotly-report.html").charts;
    assert_eq!(pl.len(), 2, "{pl:#?}");
    assert!(pl
        .iter()
        .all(|c| c.library == "plotly" && !c.data.series.is_empty()));

    // D3 chart file shown through an <iframe>: found inside the frame, its box is the SVG's.
    let d3 = &by("d3-report.html").charts;
    assert_eq!(d3.len(), 1, "{d3:#?}");
    assert_eq!(d3[0].library, "d3");
    assert_eq!(d3[0].frame.as_deref(), Some("charts/d3-loans.html"));
    assert_eq!((d3[0].width, d3[0].height), (700, 400));
    assert_eq!(
        d3[0].data.title.as_deref(),
        Some("Loans by genre (thousands)")
    );
    assert!(
        d3[0].data.labels.contains(&"Graphic novels".to_string()),
        "{:?}",
        d3[0].data.labels
    );
    assert!(d3[0]
        .data
        .caption
        .as_deref()
        .unwrap_or("")
        .starts_with("Figure 1: Loans by genre"));

    let vl = &by("vegalite-report.html").charts;
    assert_eq!(vl.len(), 1, "{vl:#?}");
    assert_eq!(vl[0].library, "vega");
    assert!(
        !vl[0].data.series.is_empty() && vl[0].data.series[0].total > 0,
        "{:?}",
        vl[0].data
    );

    let hc = &by("highcharts-report.html").charts;
    assert_eq!(hc.len(), 1, "{hc:#?}");
    assert_eq!(hc[0].library, "highcharts");
    assert!(hc[0].data.title.is_some() && !hc[0].data.series[0].values.is_empty());

    let ax = &by("apex-report.html").charts;
    assert_eq!(ax.len(), 1, "{ax:#?}");
    assert_eq!(ax[0].library, "apexcharts");
    assert_eq!(ax[0].data.title.as_deref(), Some("Median wait (minutes)"));
    assert_eq!(
        ax[0].data.labels,
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun"]
    );
    assert_eq!(
        ax[0].data.series[0].values,
        [34, 31, 24, 21, 19, 18]
            .map(serde_json::Value::from)
            .to_vec()
    );

    // A chart sized by the viewport (50vw × 50vh), far below the fold, keeps the
    // viewport's size: 640×450 at 1280×900, not stretched by the page's height.
    let vh = &by("vh-chart.html").charts;
    assert_eq!(vh.len(), 1, "{vh:#?}");
    assert_eq!((vh[0].width, vh[0].height), (640, 450));
    browser.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anchors_come_from_the_served_document_and_frame_hosts() {
    let (Some(exe), Some(libs)) = (chromium(), libraries()) else {
        return;
    };
    let browser = Browser::start(config(exe)).await.expect("browser starts");
    // What the integration serves: the same HTML with `data-tvir-at` on start tags.
    let html = read(&pages_dir().join("chartjs-report.html"));
    let mut annotated = String::new();
    let mut n = 0;
    for (i, part) in html.split("<figure>").enumerate() {
        if i > 0 {
            n += 1;
            annotated.push_str(&format!("<figure data-tvir-at=\"{}\">", 1000 * n));
        }
        annotated.push_str(part);
    }
    let mut req = request(&libs, "chartjs-report.html");
    req.entry_override = Some(annotated.into_bytes());
    let r = browser.render(req).await;
    let anchors: Vec<_> = r.charts.iter().map(|c| c.anchor).collect();
    assert_eq!(
        anchors,
        [Some(1000), Some(2000), Some(3000)],
        "{:?}",
        r.notes
    );

    let html = read(&pages_dir().join("d3-report.html"))
        .replace("<iframe ", "<iframe data-tvir-at=\"77\" ");
    let mut req = request(&libs, "d3-report.html");
    req.entry_override = Some(html.into_bytes());
    let r = browser.render(req).await;
    assert_eq!(r.charts.len(), 1, "{:?}", r.notes);
    assert_eq!(r.charts[0].anchor, Some(77));
    browser.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_page_twice_gives_the_same_pixels() {
    let (Some(exe), Some(libs)) = (chromium(), libraries()) else {
        return;
    };
    let browser = Browser::start(config(exe)).await.expect("browser starts");
    for page in [
        "chartjs-report.html",
        "echarts-report.html",
        "apex-report.html",
    ] {
        let a = render(&browser, &libs, page).await;
        let b = render(&browser, &libs, page).await;
        assert_eq!(a.charts.len(), b.charts.len(), "{page}");
        assert!(!a.charts.is_empty(), "{page}: {:?}", a.notes);
        for (x, y) in a.charts.iter().zip(&b.charts) {
            assert!(
                x.png == y.png || pixels(&x.png) == pixels(&y.png),
                "{page}: {} differs between two renders",
                x.selector
            );
            assert_eq!(x.data, y.data);
        }
    }
    browser.close().await;
}
