//! A chart file is one figure: an MDX report shows three local chart files through a
//! JSX component. One file is an infographic with its own `<title>` and two panels
//! drawn by script; it is one chart figure, shot whole and captioned by that title
//! (the report gives none), not two uncaptioned ones. A file with one chart found in
//! it, a heading of its own and a panel drawn without a library is shot whole too,
//! captioned by its `<title>`. A file drawn with no script at all (a static SVG) is
//! one figure too, through a component or a plain `<iframe>`, and its picture is the
//! drawing, not the frame's empty box; a local page of prose with a small picture in
//! it is no chart. A chart the report's own page draws stays one figure per chart.
//! With Chromium (no chart library needed).

use crate::common;

use std::path::Path;

use common::charts::{chromium, units, ChartRun};

/// An SVG panel drawn by an inline script: a bar and a label per value in the
/// element `id`.
fn panel(id: &str, values: &[u32]) -> String {
    format!(
        r#"<svg id="{id}" width="300" height="220"></svg>
<script>
(function () {{
  var s = document.getElementById('{id}'), ns = 'http://www.w3.org/2000/svg';
  {values:?}.forEach(function (v, i) {{
    var r = document.createElementNS(ns, 'rect');
    r.setAttribute('x', 20 + i * 55); r.setAttribute('y', 200 - v * 2); r.setAttribute('width', 40);
    r.setAttribute('height', v * 2); r.setAttribute('fill', i % 2 ? '#e76f51' : '#264653'); s.appendChild(r);
    var t = document.createElementNS(ns, 'text');
    t.setAttribute('x', 30 + i * 55); t.setAttribute('y', 215); t.textContent = 'Q' + (i + 1); s.appendChild(t);
  }});
}})();
</script>"#
    )
}

fn two_panels() -> String {
    format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>Ferry use at a glance</title></head>\
         <body><div style=\"display:flex;gap:20px\"><div>{}</div><div>{}</div></div></body></html>\n",
        panel("left", &[30, 50, 70, 90, 80]),
        panel("right", &[80, 60, 40, 20, 10])
    )
}

/// One chart drawn by script under a heading of its own, beside a small pie drawn
/// as static shapes (no library, too few marks to count as a chart of its own): a
/// reader sees one picture, the file's title over both.
fn one_chart() -> String {
    format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>Fares by zone</title></head>\
         <body><div style=\"display:flex;gap:20px\"><div><h3>Zone 1 to zone 5</h3>{}</div>\
         <svg width=\"160\" height=\"160\"><circle cx=\"80\" cy=\"80\" r=\"70\" fill=\"#2a9d8f\"/>\
         <path d=\"M80 80 L80 10 A70 70 0 0 1 150 80 Z\" fill=\"#e9c46a\"/></svg></div></body></html>\n",
        panel("fares", &[20, 40, 60, 80, 90])
    )
}

fn fixture(dir: &Path) {
    let report = dir.join("reports/sysA/ferry1");
    std::fs::create_dir_all(report.join("charts")).unwrap();
    std::fs::write(
        report.join("report.mdx"),
        "# Ferry briefing\n\nimport ChartFrame from '../components/ChartFrame'\n\n\
         Weekday crossings doubled between 2020 and 2024 [1].\n\n\
         <ChartFrame src=\"charts/c2.html\" />\n\n\
         Fares rise with each zone crossed [1].\n\n\
         <ChartFrame src=\"charts/fares.html\" height={300} />\n\n\
         ## References\n\n1. Ferry office https://example.org/ferry/use\n",
    )
    .unwrap();
    std::fs::write(report.join("charts/c2.html"), two_panels()).unwrap();
    std::fs::write(report.join("charts/fares.html"), one_chart()).unwrap();
    std::fs::write(
        dir.join("tasks.json"),
        serde_json::json!([{"id": "ferry1", "query": "Brief the ferry board on use and fares.",
            "checklist": {"Use": ["Does the report give the crossings trend?"]}}])
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.join("sources.jsonl"),
        "{\"url\": \"https://example.org/ferry/use\", \"text\": \"Crossings doubled from 2020 to 2024; fares rise by zone.\"}\n",
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chart_file_with_two_panels_is_one_figure_captioned_by_its_title() {
    if chromium().is_none() {
        common::skip("no Chromium");
        return;
    }
    let run = ChartRun::new("ferry1", fixture).await;
    let (_, r) = run.eval("out", &[]).await;
    let cq = units(&r, "chart_quality");
    assert_eq!(cq.len(), 2, "one figure per chart file: {}", r["render"]);
    for u in &cq {
        assert_eq!(u["status"], "scored", "{u}");
    }
    let mut captions: Vec<(String, String)> = units(&r, "figure_caption_quality")
        .iter()
        .map(|u| {
            (
                u["detail"]["caption"].as_str().unwrap_or("").to_string(),
                u["detail"]["caption_source"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
            )
        })
        .collect();
    captions.sort();
    assert_eq!(
        captions,
        [
            ("Fares by zone".into(), "chart file title".into()),
            ("Ferry use at a glance".into(), "chart file title".into())
        ],
        "{}",
        r["render"]
    );
    // Each file is shot whole, named by its file: the two panels, and the chart
    // with the pie beside it (not the chart alone under its own heading).
    let mut contents: Vec<&str> = cq
        .iter()
        .filter_map(|u| u["detail"]["content"].as_str())
        .collect();
    contents.sort();
    assert_eq!(
        contents,
        ["charts/c2.html#:root", "charts/fares.html#:root"],
        "{}",
        r["render"]
    );
}

/// A chart file drawn once and for all: an `<svg>` of shapes, with no script.
fn static_bars(title: &str, heights: &[u32]) -> String {
    let bars: String = heights
        .iter()
        .enumerate()
        .map(|(i, h)| {
            format!(
                "<rect x=\"{}\" y=\"{}\" width=\"50\" height=\"{h}\" fill=\"#3b7dd8\"/>",
                40 + i * 70,
                260 - h
            )
        })
        .collect();
    format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{title}</title></head>\
         <body style=\"margin:0\"><svg width=\"420\" height=\"280\"><line x1=\"30\" y1=\"260\" x2=\"400\" \
         y2=\"260\" stroke=\"#333\"/>{bars}</svg></body></html>\n"
    )
}

/// Two static chart files, one shown through a JSX component and one through a plain
/// `<iframe>`, and a local page of prose with a small picture in it, also in an
/// `<iframe>` (no chart file: it gives no figure).
fn static_fixture(dir: &Path) {
    let report = dir.join("reports/sysA/dock1");
    std::fs::create_dir_all(report.join("charts")).unwrap();
    std::fs::write(
        report.join("report.mdx"),
        "# Dock briefing\n\nimport ChartFrame from '../components/ChartFrame'\n\n\
         Containers handled rose every year from 2020 to 2024 [1].\n\n\
         <ChartFrame src=\"charts/boxes.html\" height={320} />\n\n\
         Berth waits fell as the new cranes came in [1].\n\n\
         <iframe src=\"charts/waits.html\" width=\"600\" height=\"320\"></iframe>\n\n\
         Lanes open per hour followed the cranes [1].\n\n\
         <ChartFrame src=\"charts/lanes.svg\" />\n\n\
         The port's notes on method are kept beside the data [1].\n\n\
         <iframe src=\"notes.html\" width=\"600\" height=\"400\"></iframe>\n\n\
         ## References\n\n1. Port office https://example.org/port/boxes\n",
    )
    .unwrap();
    std::fs::write(
        report.join("charts/boxes.html"),
        static_bars(
            "Containers handled per year (millions)",
            &[60, 90, 130, 170, 220],
        ),
    )
    .unwrap();
    std::fs::write(
        report.join("charts/waits.html"),
        static_bars("Average berth wait (hours)", &[200, 170, 120, 90, 70]),
    )
    .unwrap();
    // A picture file shown by a component: that picture, captioned by its <title>.
    let svg = static_bars("x", &[50, 80, 120, 160, 200]);
    let svg = &svg[svg.find("<svg").unwrap()..svg.find("</svg>").unwrap() + 6];
    std::fs::write(
        report.join("charts/lanes.svg"),
        svg.replacen("<svg ", "<svg xmlns=\"http://www.w3.org/2000/svg\" ", 1)
            .replacen(">", "><title>Lanes open per hour</title>", 1),
    )
    .unwrap();
    let prose = "The counts are taken from the berth log each night and checked against \
                 the gate records the next morning. ";
    std::fs::write(
        report.join("notes.html"),
        format!(
            "<!DOCTYPE html><html><head><title>Method notes</title></head><body>\
             <h1>Method notes</h1>{}<svg width=\"130\" height=\"90\"><rect width=\"40\" height=\"40\" \
             fill=\"#2a9d8f\"/><circle cx=\"90\" cy=\"45\" r=\"30\" fill=\"#e76f51\"/>\
             <line x1=\"0\" y1=\"88\" x2=\"130\" y2=\"88\" stroke=\"#333\"/></svg>{}</body></html>\n",
            format!("<p>{}</p>", prose.repeat(12)).repeat(6),
            format!("<p>{}</p>", prose.repeat(12)).repeat(6)
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("tasks.json"),
        serde_json::json!([{"id": "dock1", "query": "Brief the port board on throughput.",
            "checklist": {"Throughput": ["Does the report give the container trend?"]}}])
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.join("sources.jsonl"),
        "{\"url\": \"https://example.org/port/boxes\", \"text\": \"Containers handled rose each year; waits fell.\"}\n",
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chart_file_drawn_without_a_script_is_one_figure_through_a_component_or_an_iframe() {
    if chromium().is_none() {
        common::skip("no Chromium");
        return;
    }
    let run = ChartRun::new("dock1", static_fixture).await;
    let (_, r) = run.eval("out", &[]).await;
    let cq = units(&r, "chart_quality");
    let mut contents: Vec<&str> = cq
        .iter()
        .map(|u| {
            assert_eq!(u["status"], "scored", "{u}");
            u["detail"]["content"].as_str().unwrap_or("")
        })
        .collect();
    contents.sort();
    // One figure per chart file, shot whole; the page of prose is no chart.
    assert_eq!(
        contents,
        [
            "charts/boxes.html#:root",
            "charts/lanes.svg",
            "charts/waits.html#:root"
        ],
        "{}",
        r["render"]
    );
    let mut captions: Vec<(String, String)> = units(&r, "figure_caption_quality")
        .iter()
        .map(|u| {
            (
                u["detail"]["caption"].as_str().unwrap_or("").to_string(),
                u["detail"]["caption_source"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
            )
        })
        .collect();
    captions.sort();
    assert_eq!(
        captions,
        [
            (
                "Average berth wait (hours)".into(),
                "chart file title".into()
            ),
            (
                "Containers handled per year (millions)".into(),
                "chart file title".into()
            ),
            ("Lanes open per hour".into(), "chart file title".into())
        ],
        "{}",
        r["render"]
    );
    // Each picture is the file's drawing (the 420x280 svg, less its empty corners),
    // not the box we laid the frame out in (the page's width, 320 px high) with the
    // frame's border.
    for c in r["render"]["charts"].as_array().expect("charts") {
        let (w, h) = (c["width"].as_u64().unwrap(), c["height"].as_u64().unwrap());
        assert!((380..=420).contains(&w) && (220..=270).contains(&h), "{c}");
    }
    for metric in [
        "chart_quality",
        "figure_caption_quality",
        "figure_context_integration",
    ] {
        assert_eq!(units(&r, metric).len(), 3, "{metric}: {}", r["units"]);
    }
}

/// A chart file meant to be drawn by a library that is missing (offline, not in the
/// cache), beside a static drawing of its own: the chart fails naming the library,
/// and the static drawing is not taken for the chart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chart_file_whose_library_is_missing_is_not_taken_for_its_static_drawing() {
    if chromium().is_none() {
        common::skip("no Chromium");
        return;
    }
    let run = ChartRun::new("dock1", |dir| {
        static_fixture(dir);
        let report = dir.join("reports/sysA/dock1");
        std::fs::write(
            report.join("report.mdx"),
            "# Dock briefing\n\nContainers handled rose every year [1].\n\n\
             <iframe src=\"charts/mixed.html\"></iframe>\n\n\
             ## References\n\n1. Port office https://example.org/port/boxes\n",
        )
        .unwrap();
        std::fs::write(
            report.join("charts/mixed.html"),
            "<!DOCTYPE html><html><head><title>Boxes by terminal</title>\
             <script src=\"https://cdn.jsdelivr.net/npm/chart.js\"></script></head><body>\
             <svg width=\"500\" height=\"200\"><rect x=\"10\" y=\"10\" width=\"100\" height=\"100\" fill=\"#c33\"/>\
             <circle cx=\"300\" cy=\"100\" r=\"80\" fill=\"#3c3\"/><path d=\"M400 10 L480 190\" stroke=\"#33c\"/></svg>\
             <canvas id=\"c\" width=\"500\" height=\"300\"></canvas><script>new Chart(document.getElementById('c'), \
             {type: 'bar', data: {labels: ['A', 'B'], datasets: [{data: [3, 5]}]}});</script></body></html>\n",
        )
        .unwrap();
    })
    .await;
    let (_, r) = run.eval("out", &[]).await;
    let cq = units(&r, "chart_quality");
    assert_eq!(cq.len(), 1, "{}", r["units"]);
    assert_ne!(cq[0]["status"], "scored", "{}", cq[0]);
    let reason = cq[0]["reason"].as_str().unwrap_or("");
    assert!(
        reason.contains("chart library not available") && reason.contains("chart.js"),
        "{}",
        cq[0]
    );
}
