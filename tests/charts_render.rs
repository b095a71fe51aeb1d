//! Charts drawn by script, end to end through the `tvir` binary and the mock judge
//! (issue 23): our own HTML report with a Chart.js, an ECharts and a Plotly chart
//! and a D3 chart file shown in an `<iframe>`. With Chromium and the chart
//! libraries (seeded into the cache with `tvir cache put` from `TVIR_CHART_LIBS`,
//! made by `scripts/fetch_chart_libs.sh`), each chart is a figure judged by CQ, FCQ,
//! FCI and CSC and counted in FQ, its PNG written under `figures/`; a second run
//! with the same cache starts no browser; offline with an empty cache the charts
//! fail with the library's address and the remedy. Without a browser the charts are
//! not evaluated, and a report whose only visuals they are gets no VA.

use crate::common;

use std::path::Path;

use common::charts::{browser_and_libs, chromium, units, ChartRun};
use common::cli::{describe, tvir_command};
use serde_json::Value;

const CHART_JS: &str = "https://cdn.jsdelivr.net/npm/chart.js@4.6.1/dist/chart.umd.min.js";
const ECHARTS: &str = "https://cdn.jsdelivr.net/npm/echarts@5.6.0/dist/echarts.min.js";
const PLOTLY: &str = "https://cdn.plot.ly/plotly-2.35.3.min.js";
const D3: &str = "https://cdn.jsdelivr.net/npm/d3@7";

fn report_html() -> String {
    format!(
        r#"<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Rooftop solar briefing</title>
<script src="{CHART_JS}"></script>
<script src="{ECHARTS}"></script>
<script src="{PLOTLY}"></script>
</head><body>
<h1>Rooftop solar: five years of growth</h1>
<p>Installed rooftop capacity in the city rose from 40 MW in 2019 to 130 MW in 2023 [1].</p>
<figure>
  <div style="width:640px;height:360px"><canvas id="capacity"></canvas></div>
  <figcaption>Figure 1: Installed rooftop capacity by year, MW. Source: [1]</figcaption>
</figure>
<p>The installed cost per watt fell by about a third over the same years [2].</p>
<div id="cost" style="width:640px;height:360px"></div>
<p class="caption">Figure 2: Installed cost per watt, USD [2]</p>
<p>Most new systems are on detached houses, followed by commercial roofs [1].</p>
<div id="share" style="width:640px;height:360px"></div>
<p class="caption">Figure 3: New systems by building type, 2023 [1]</p>
<p>Permits per month follow the seasons, with a summer peak [2].</p>
<iframe src="charts/permits.html" style="width:680px;height:400px;border:0"></iframe>
<p class="caption">Figure 4: Permits issued per month, 2023 [2]</p>
<p>The city energy office should expect growth to continue at a slower pace.</p>
<h2>References</h2>
<ol>
<li id="ref1">City energy office, Rooftop solar dashboard. https://example.org/solar/capacity</li>
<li id="ref2">Regional permits and cost survey. https://example.org/solar/cost</li>
</ol>
<script>
new Chart(document.getElementById('capacity'), {{
  type: 'bar',
  data: {{ labels: ['2019','2020','2021','2022','2023'],
          datasets: [{{ label: 'Capacity (MW)', data: [40, 58, 77, 101, 130] }}] }},
  options: {{ animation: false, responsive: true, maintainAspectRatio: false,
             plugins: {{ title: {{ display: true, text: 'Installed capacity' }} }} }}
}});
echarts.init(document.getElementById('cost')).setOption({{
  title: {{ text: 'Installed cost per watt' }},
  xAxis: {{ type: 'category', data: ['2019','2020','2021','2022','2023'] }},
  yAxis: {{ type: 'value' }},
  series: [{{ name: 'USD/W', type: 'line', data: [3.1, 2.9, 2.6, 2.3, 2.1] }}]
}});
Plotly.newPlot('share', [{{ type: 'bar', x: ['Detached', 'Commercial', 'Apartment'], y: [62, 27, 11], name: 'Share' }}],
  {{ title: {{ text: 'New systems by building type' }} }}, {{ staticPlot: true }});
</script>
</body></html>
"#
    )
}

fn permits_html() -> String {
    format!(
        r#"<!DOCTYPE html>
<html><head><meta charset="utf-8"><script src="{D3}"></script></head><body>
<div id="chart"></div>
<script>
const data = [12, 14, 20, 26, 31, 35, 37, 33, 27, 21, 15, 11];
const w = 640, h = 360, m = 30;
const svg = d3.select('#chart').append('svg').attr('width', w).attr('height', h);
const x = d3.scaleBand().domain(d3.range(12)).range([m, w - m]).padding(0.1);
const y = d3.scaleLinear().domain([0, 40]).range([h - m, m]);
svg.selectAll('rect').data(data).enter().append('rect')
  .attr('x', (d, i) => x(i)).attr('y', d => y(d))
  .attr('width', x.bandwidth()).attr('height', d => h - m - y(d)).attr('fill', '#4a7');
svg.append('g').attr('transform', `translate(0,${{h - m}})`).call(d3.axisBottom(x));
svg.append('g').attr('transform', `translate(${{m}},0)`).call(d3.axisLeft(y));
</script>
</body></html>
"#
    )
}

/// A charts-only report (no `<img>`), its task and the text of its two sources.
fn fixture(dir: &Path) {
    let report = dir.join("reports/sysA/solar1");
    std::fs::create_dir_all(report.join("charts")).unwrap();
    std::fs::write(report.join("report.html"), report_html()).unwrap();
    std::fs::write(report.join("charts/permits.html"), permits_html()).unwrap();
    let tasks = dir.join("tasks.json");
    std::fs::write(
        &tasks,
        r#"[{"id": "solar1", "query": "Brief the city on rooftop solar growth with charts.",
            "checklist": {"Trends": ["Does the report describe capacity growth?"]}}]"#,
    )
    .unwrap();
    let sources = dir.join("sources.jsonl");
    std::fs::write(
        &sources,
        "{\"url\": \"https://example.org/solar/capacity\", \"text\": \"Installed rooftop capacity: 40 MW in 2019, 58 MW in 2020, 77 MW in 2021, 101 MW in 2022 and 130 MW in 2023. Detached houses hold 62 percent of new systems, commercial roofs 27 percent, apartments 11 percent.\"}\n\
         {\"url\": \"https://example.org/solar/cost\", \"text\": \"Installed cost fell from 3.1 USD per watt in 2019 to 2.1 USD per watt in 2023. Permits peak in July at 37 per month and bottom out in December at 11.\"}\n",
    )
    .unwrap();
}

/// The libraries the fixture's pages load.
const LIBS: [&str; 4] = [CHART_JS, ECHARTS, PLOTLY, D3];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_browser_the_charts_are_not_evaluated_and_va_is_null() {
    let run = ChartRun::new("solar1", fixture).await;
    let (stdout, r) = run.eval("out", &["--no-browser"]).await;
    // Said once for the run, not once per chart.
    let notes: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("not evaluated: --no-browser"))
        .collect();
    assert_eq!(notes.len(), 1, "{stdout}");
    assert!(notes[0].contains("4 chart(s)"), "{stdout}");
    assert_eq!(r["render"]["status"], "unavailable");
    assert!(
        r["va"].is_null(),
        "a charts-only report has no VA without a browser"
    );
    for m in [
        "chart_quality",
        "figure_caption_quality",
        "figure_context_integration",
        "chart_source_consistency",
    ] {
        let metric = &r["metrics"][m];
        assert_eq!(metric["status"], "not_evaluated", "{m}: {metric}");
        assert!(metric["score"].is_null(), "{m}");
        let u = units(&r, m);
        assert_eq!(u.len(), 4, "{m}: one unit per chart");
        for unit in u {
            assert_eq!(unit["status"], "skipped");
            assert!(unit["unit"].as_str().unwrap().starts_with("script_chart:"));
            assert!(
                unit["reason"].as_str().unwrap().contains("--browser"),
                "{unit}"
            );
        }
    }
    for m in ["figure_quality", "multimodal_composition"] {
        assert!(
            r["metrics"][m]["score"].is_null(),
            "{m} must not be 0: {}",
            r["metrics"][m]
        );
    }
    assert_eq!(run.mock.metric_count("chart_quality"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rendered_charts_are_judged_written_and_cached() {
    let Some(libs) = browser_and_libs() else {
        return;
    };
    let run = ChartRun::new("solar1", fixture).await;
    run.seed(&libs, &LIBS);
    let (stdout, r) = run.eval("out1", &[]).await;
    assert!(stdout.contains("1 browser start(s)"), "{stdout}");
    assert_eq!(r["render"]["status"], "rendered", "{}", r["render"]);
    let charts = r["render"]["charts"].as_array().unwrap();
    let mut libraries: Vec<&str> = charts
        .iter()
        .map(|c| c["library"].as_str().unwrap())
        .collect();
    libraries.sort();
    assert_eq!(
        libraries,
        ["chartjs", "d3", "echarts", "plotly"],
        "{}",
        r["render"]
    );
    assert_eq!(r["n_charts"], 4);
    for c in charts {
        let unit = c["unit"].as_str().unwrap();
        let png = run.out_dir("out1").join(c["png"].as_str().unwrap());
        let bytes = std::fs::read(&png).unwrap_or_else(|e| panic!("{}: {e}", png.display()));
        assert!(bytes.starts_with(b"\x89PNG"), "{} is no PNG", png.display());
        if c["library"] != "d3" {
            assert!(
                c["chart_data"]["series"]
                    .as_array()
                    .is_some_and(|s| !s.is_empty()),
                "{c}"
            );
        }
        for m in [
            "chart_quality",
            "figure_caption_quality",
            "figure_context_integration",
            "chart_source_consistency",
        ] {
            let judged = units(&r, m).into_iter().find(|u| u["unit"] == unit);
            let judged = judged.unwrap_or_else(|| panic!("{m} has no unit {unit}"));
            assert_eq!(judged["status"], "scored", "{m} {unit}: {judged}");
            assert!(
                judged["answer"].is_object(),
                "{m} {unit} was not judged: {judged}"
            );
        }
    }
    for m in [
        "chart_quality",
        "figure_quality",
        "figure_caption_quality",
        "figure_context_integration",
        "chart_source_consistency",
    ] {
        assert_eq!(
            r["metrics"][m]["status"], "evaluated",
            "{m}: {}",
            r["metrics"][m]
        );
    }
    assert_eq!(r["metrics"]["figure_quality"]["item_count"], 4);
    assert!(r["va"].is_number());
    // Captions come from the page: the figcaption and the caption lines.
    let fcq = units(&r, "figure_caption_quality");
    assert!(fcq.iter().any(|u| u["detail"]["caption"]
        .as_str()
        .is_some_and(|c| c.starts_with("Figure 1:"))));

    // Warm re-run: the render cache answers, no browser starts.
    let (stdout, r2) = run.eval("out2", &[]).await;
    assert!(
        stdout.contains("(0 pages rendered, 1 from the render cache, 0 browser start(s))"),
        "{stdout}"
    );
    assert_eq!(r2["render"]["status"], "cached");
    assert_eq!(r2["render"]["charts"], r["render"]["charts"]);
    assert!(run.out_dir("out2").join("figures/chart-1.png").is_file());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offline_with_an_empty_cache_the_charts_fail_with_the_url_and_the_remedy() {
    let Some(_browser) = chromium() else {
        common::skip("no Chromium");
        return;
    };
    let run = ChartRun::new("solar1", fixture).await;
    let (_, r) = run.eval("out", &[]).await;
    let cq = units(&r, "chart_quality");
    assert_eq!(cq.len(), 4, "{}", r["render"]);
    for u in cq {
        assert_eq!(u["status"], "failed", "{u}");
        let reason = u["reason"].as_str().unwrap();
        assert!(reason.contains("tvir cache put"), "{reason}");
        assert!(
            reason.contains(CHART_JS) || reason.contains(ECHARTS),
            "{reason}"
        );
    }
    assert!(r["metrics"]["chart_quality"]["score"].is_null());
    assert!(r["metrics"]["figure_quality"]["score"].is_null());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chart_whose_script_is_refused_fails_naming_the_address() {
    let Some(libs) = browser_and_libs() else {
        return;
    };
    // A listener on loopback that the page's script tag points at: it must never
    // be contacted (the page is untrusted; loopback is refused before any fetch).
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let local = format!(
        "http://127.0.0.1:{}/chart.umd.min.js",
        listener.local_addr().unwrap().port()
    );
    let run = ChartRun::new("solar1", fixture).await;
    run.write("report.html", &report_html().replace(CHART_JS, &local));
    run.seed(&libs, &LIBS);
    let (_, r) = run.eval("out", &[]).await;
    let cq = units(&r, "chart_quality");
    assert_eq!(cq.len(), 4, "{}", r["render"]);
    // The page draws all three of its charts in one inline script, which stops at
    // the missing `Chart`: as in a reader's browser, none of them is drawn. The
    // chart file in the iframe loads its own library and is judged.
    let failed: Vec<&&Value> = cq.iter().filter(|u| u["status"] == "failed").collect();
    assert_eq!(failed.len(), 3, "{cq:?}");
    for u in &failed {
        let reason = u["reason"].as_str().unwrap();
        assert!(
            reason.contains(&local) && reason.contains("never contacted"),
            "{reason}"
        );
    }
    let scored: Vec<&&Value> = cq.iter().filter(|u| u["status"] == "scored").collect();
    assert_eq!(scored.len(), 1, "{cq:?}");
    assert!(scored[0]["detail"]["content"]
        .as_str()
        .unwrap()
        .starts_with("charts/permits.html"));
    assert!(
        listener.accept().is_err(),
        "the page reached the loopback listener"
    );
}

/// A chart file drawn by an inline script (no library): `n` bars under an `<h2>`.
fn bar_file(title: &str, values: &[u32]) -> String {
    format!(
        r#"<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>
<h2>{title}</h2>
<svg id="bars" width="640" height="320"></svg>
<script>
var s = document.getElementById('bars'), ns = 'http://www.w3.org/2000/svg';
{values:?}.forEach(function (v, i) {{
  var r = document.createElementNS(ns, 'rect');
  r.setAttribute('x', 40 + i * 110); r.setAttribute('y', 290 - v * 2); r.setAttribute('width', 80);
  r.setAttribute('height', v * 2); r.setAttribute('fill', '#2a9d8f'); s.appendChild(r);
  var t = document.createElementNS(ns, 'text');
  t.setAttribute('x', 60 + i * 110); t.setAttribute('y', 310); t.textContent = 'Q' + (i + 1); s.appendChild(t);
}});
</script></body></html>
"#
    )
}

/// An MDX report showing its chart files through a JSX component whose attribute
/// is not `src` (issue 34): each file is a chart figure, judged, and captioned by
/// the title a reader sees over it (`caption_source: heading`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mdx_component_of_any_name_shows_its_chart_files() {
    if chromium().is_none() {
        common::skip("no Chromium");
        return;
    }
    let run = ChartRun::new("solar1", fixture).await;
    let report = run.report_dir();
    std::fs::remove_file(report.join("report.html")).unwrap();
    std::fs::write(
        report.join("report.mdx"),
        "# Rooftop solar briefing\n\nimport ChartEmbed from '../components/ChartEmbed'\n\n\
         Installed capacity grew from 40 MW in 2019 to 130 MW in 2023 [1].\n\n\
         <ChartEmbed file=\"charts/capacity.html\" height={420} />\n\n\
         Installed cost fell from 3.1 to 2.1 USD per watt [2].\n\n\
         <ChartEmbed file=\"charts/cost.html\" />\n\n\
         ## References\n\n1. Capacity https://example.org/solar/capacity\n2. Cost https://example.org/solar/cost\n",
    )
    .unwrap();
    std::fs::write(
        report.join("charts/capacity.html"),
        bar_file("Installed capacity by year", &[40, 58, 77, 101, 130]),
    )
    .unwrap();
    std::fs::write(
        report.join("charts/cost.html"),
        bar_file("Installed cost per watt", &[31, 28, 25, 23, 21]),
    )
    .unwrap();
    let (_, r) = run.eval("out", &[]).await;
    let cq = units(&r, "chart_quality");
    assert_eq!(cq.len(), 2, "{}", r["render"]);
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
            (
                "Installed capacity by year".into(),
                "chart file title".into()
            ),
            ("Installed cost per watt".into(), "chart file title".into())
        ],
        "{}",
        r["render"]
    );
}

/// Figures as a reader counts them (issue 45, requirement 7), end to end: a chart
/// drawn at load under a heading with an emoji, a tab's chart made only when its tab
/// is clicked, and a chart meant for load whose script fails. The first is judged,
/// captioned by its heading without the emoji; the tab's chart gives no unit at all
/// (it was a failed unit); the broken one fails naming the script's error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chart_shown_only_after_a_click_gives_no_unit_and_a_broken_one_fails() {
    let Some(libs) = browser_and_libs() else {
        return;
    };
    let page = format!(
        r#"<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Rooftop solar briefing</title>
<script src="{CHART_JS}"></script>
</head><body>
<h1>Rooftop solar briefing</h1>
<p>Installed cost fell from 3.1 to 2.1 USD per watt [2].</p>
<div class="card"><h3><span>💲</span> Installed cost per watt</h3><canvas id="cost" width="800" height="360"></canvas></div>
<p>Capacity differs by region [1].</p>
<div class="card"><button id="by-region">By region</button>
<div id="region-panel" style="display:none"><canvas id="region" width="800" height="360"></canvas></div></div>
<p>Most roofs carry between ten and twenty panels [1].</p>
<div class="card"><h3>Panels per roof</h3><canvas id="panels" width="800" height="360"></canvas></div>
<h2>References</h2>
<ol><li>Capacity https://example.org/solar/capacity</li><li>Cost https://example.org/solar/cost</li></ol>
<script>
new Chart(document.getElementById('cost'), {{ type: 'line', options: {{ animation: false }},
  data: {{ labels: ['2019','2023'], datasets: [{{ label: 'USD/W', data: [3.1, 2.1] }}] }} }});
document.getElementById('by-region').addEventListener('click', function () {{
  document.getElementById('region-panel').style.display = 'block';
  new Chart(document.getElementById('region'), {{ type: 'bar',
    data: {{ labels: ['North','South'], datasets: [{{ label: 'MW', data: [50, 80] }}] }} }});
}});
</script>
<script>
var perRoof = countPanels();
new Chart(document.getElementById('panels'), {{ type: 'bar', data: perRoof }});
</script>
</body></html>
"#
    );
    let run = ChartRun::new("solar1", fixture).await;
    run.write("report.html", &page);
    run.seed(&libs, &[CHART_JS]);
    let (_, r) = run.eval("out", &[]).await;
    let cq = units(&r, "chart_quality");
    let states: Vec<&str> = cq.iter().map(|u| u["status"].as_str().unwrap()).collect();
    assert_eq!(states, ["scored", "failed"], "{cq:?} {}", r["render"]);
    let reason = cq[1]["reason"].as_str().unwrap();
    assert!(reason.contains("countPanels is not defined"), "{reason}");
    let captions: Vec<(&str, &str)> = units(&r, "figure_caption_quality")
        .iter()
        .filter(|u| u["status"] == "scored")
        .map(|u| {
            (
                u["detail"]["caption"].as_str().unwrap_or(""),
                u["detail"]["caption_source"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        captions,
        [("Installed cost per watt", "heading")],
        "{}",
        r["render"]
    );
}

/// The charts of a page whose font and icon style sheets, analytics script, Tailwind
/// runtime and icon loader are missing (offline, not in the cache), one ECharts chart
/// drawn, one decorative canvas never drawn into and a button the chart script also
/// looks up: one unit, scored; no failed unit naming any of those scripts or the
/// errors their absence causes (`tailwind is not defined`), none for the button. With
/// Chart.js missing too, the Chart.js chart fails naming it and only it; with Chart.js
/// there but the page's script failing, the reason is the script's error, also when
/// it is thrown inside the library from another origin; with the chart's data file
/// missing from the folder, the refused request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undrawn_charts_name_their_true_cause_and_non_charts_give_no_unit() {
    let Some(libs) = browser_and_libs() else {
        return;
    };
    const FONT: &str = "https://fonts.googleapis.com/css2?family=Inter:wght@400;700";
    const ICONS: &str =
        "https://cdn.jsdelivr.net/npm/bootstrap-icons@1.11.3/font/bootstrap-icons.min.css";
    const GTAG: &str = "https://www.googletagmanager.com/gtag/js?id=G-TEST";
    // Tailwind's runtime and an icon loader, missing offline: the page's own use of
    // their globals then throws, and that error is no chart's cause either.
    const TAILWIND: &str = "https://cdn.tailwindcss.com/3.4.1";
    const LUCIDE: &str = "https://unpkg.com/lucide@0.400.0/dist/umd/lucide.min.js";
    let page = |chartjs: &str, draw: &str| {
        format!(
            r#"<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Rooftop solar briefing</title>
<link rel="stylesheet" href="{FONT}">
<link rel="stylesheet" href="{ICONS}">
<script async src="{GTAG}"></script>
<script src="{TAILWIND}"></script>
<script>tailwind.config = {{ theme: {{ extend: {{ colors: {{ brand: '#0a6' }} }} }} }};</script>
<script src="{LUCIDE}"></script>
<script src="{ECHARTS}"></script>
{chartjs}
</head><body>
<h1>Rooftop solar briefing</h1>
<canvas id="particles" width="1200" height="60"></canvas>
<p>Installed capacity grew from 40 MW in 2019 to 130 MW in 2023 [1].</p>
<div class="card"><h3>Installed capacity</h3><div id="cap" style="width:800px;height:360px"></div></div>
<p>Installed cost fell from 3.1 to 2.1 USD per watt [2].</p>
<div class="card"><h3>Installed cost</h3><canvas id="cost" width="800" height="360"></canvas></div>
<h2>References</h2>
<ol><li>Capacity https://example.org/solar/capacity</li><li>Cost https://example.org/solar/cost</li></ol>
<button id="more">Show every reference</button>
<script>
document.getElementById('more').addEventListener('click', function () {{ }});
echarts.init(document.getElementById('cap')).setOption({{ animation: false,
  xAxis: {{ type: 'category', data: ['2019','2020','2021','2022','2023'] }}, yAxis: {{ type: 'value' }},
  series: [{{ type: 'bar', data: [40, 58, 77, 101, 130] }}] }});
</script>
<script>lucide.createIcons();</script>
<script>{draw}</script>
</body></html>
"#
        )
    };
    let chart = "new Chart(document.getElementById('cost'), { type: 'line', data: { labels: ['2019','2023'], datasets: [{ label: 'USD/W', data: [3.1, 2.1] }] } });";
    let cases = [
        // (Chart.js tag, its drawing script, CQ units expected: scored, failed, needle)
        ("", "", 1, 0, None),
        (
            &*format!("<script src=\"{CHART_JS}\"></script>"),
            chart,
            1,
            1,
            Some(CHART_JS),
        ),
        (
            &*format!("<script src=\"{CHART_JS}\"></script>"),
            &*format!("var rows = loadRows(); {chart}"),
            1,
            1,
            Some("loadRows is not defined"),
        ),
        // The error is thrown inside the library, served from its CDN's origin: the
        // page's own error event only says "Script error."; the reason must still be
        // the library's message.
        (
            &*format!("<script src=\"{CHART_JS}\"></script>"),
            &*chart.replace("type: 'line'", "type: 'horizontalBar'"),
            1,
            1,
            Some("is not a registered controller"),
        ),
        // The chart's data comes from a file of the folder that is not there: the
        // chart fails naming the request that was refused.
        (
            &*format!("<script src=\"{CHART_JS}\"></script>"),
            &*format!("fetch('data/cost.json').then(function (r) {{ return r.json(); }}).then(function () {{ {chart} }});"),
            1,
            1,
            Some("data/cost.json"),
        ),
    ];
    for (k, (tag, draw, scored, failed, needle)) in cases.iter().enumerate() {
        let run = ChartRun::new("solar1", fixture).await;
        run.write("report.html", &page(tag, draw));
        // Chart.js is missing from the cache in case 1.
        let seeded: &[&str] = if k == 1 { &[ECHARTS] } else { &LIBS };
        run.seed(&libs, seeded);
        let (_, r) = run.eval("out", &[]).await;
        let cq = units(&r, "chart_quality");
        let n = |s: &str| cq.iter().filter(|u| u["status"] == s).count();
        assert_eq!(
            (n("scored"), n("failed"), cq.len()),
            (*scored, *failed, scored + failed),
            "case {k}: {cq:?} {}",
            r["render"]
        );
        for u in cq.iter().filter(|u| u["status"] == "failed") {
            let reason = u["reason"].as_str().unwrap();
            assert!(reason.contains(needle.unwrap()), "case {k}: {reason}");
            for not in [FONT, ICONS, GTAG, TAILWIND, LUCIDE, "tailwind", "lucide"] {
                assert!(!reason.contains(not), "case {k} names {not}: {reason}");
            }
        }
    }
}

/// Charts drawn only by a script file of the report's folder (issue 34): the page
/// names its box only in a call of a function the file defines (which draws with
/// ECharts through its parameter), and the file draws two canvases whose ids it
/// builds (`` `share${year}` ``). With the file's data in the folder, three charts
/// are judged; with the data file missing, each of the three is a failed unit naming
/// the refused request, not a silent zero.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn charts_drawn_only_by_a_folder_script_say_why_they_were_not_drawn() {
    let Some(libs) = browser_and_libs() else {
        return;
    };
    let page = format!(
        r#"<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Battery supply briefing</title>
<script src="{ECHARTS}"></script>
<script src="{CHART_JS}"></script>
</head><body>
<h1>Battery supply briefing</h1>
<p>Cell suppliers grew from 4 to 9 between 2020 and 2024 [1].</p>
<div class="card"><h3>Supplier links</h3>
<div id="links" style="width:800px;height:360px"></div>
</div>
<p>Market share of the two largest makers fell from 70 to 55 percent [2].</p>
<div class="card"><h3>Share in 2020</h3><canvas id="share2020" width="600" height="300"></canvas></div>
<div class="card"><h3>Share in 2024</h3><canvas id="share2024" width="600" height="300"></canvas></div>
<h2>References</h2>
<ol><li>Suppliers https://example.org/solar/capacity</li><li>Share https://example.org/solar/cost</li></ol>
<script src="js/dashboard.js"></script>
<script>
Dashboard.initLinks('links');
Dashboard.drawShares();
</script>
</body></html>
"#
    );
    let script = r#"const Dashboard = {
  load() {
    return fetch('data/supply.json').then(function (r) {
      if (!r.ok) { throw new Error('supply data: HTTP ' + r.status); }
      return r.json();
    });
  },
  initLinks(containerId) {
    this.load().then(function (d) {
      echarts.init(document.getElementById(containerId)).setOption({ animation: false,
        xAxis: { type: 'category', data: d.years }, yAxis: { type: 'value' },
        series: [{ type: 'line', data: d.suppliers }] });
    });
  },
  drawShares() {
    this.load().then(function (d) {
      d.years.forEach(function (y, i) {
        const el = document.getElementById(`share${y}`);
        if (!el) { return; }
        new Chart(el, { type: 'pie', options: { animation: false },
          data: { labels: ['Top two', 'Others'], datasets: [{ data: [d.top[i], 100 - d.top[i]] }] } });
      });
    });
  },
};
"#;
    for with_data in [true, false] {
        let run = ChartRun::new("solar1", fixture).await;
        run.write("report.html", &page);
        run.write("js/dashboard.js", script);
        if with_data {
            run.write(
                "data/supply.json",
                r#"{"years": [2020, 2024], "suppliers": [4, 9], "top": [70, 55]}"#,
            );
        }
        run.seed(&libs, &[ECHARTS, CHART_JS]);
        let (_, r) = run.eval("out", &[]).await;
        let cq = units(&r, "chart_quality");
        let n = |s: &str| cq.iter().filter(|u| u["status"] == s).count();
        let expected = if with_data { (3, 0) } else { (0, 3) };
        assert_eq!(
            (n("scored"), n("failed"), cq.len()),
            (expected.0, expected.1, 3),
            "data file present: {with_data}: {cq:?} {}",
            r["render"]
        );
        for u in cq.iter().filter(|u| u["status"] == "failed") {
            let reason = u["reason"].as_str().unwrap();
            assert!(reason.contains("data/supply.json"), "{reason}");
        }
    }
}

/// With the render cache filled, a run without a browser uses the cached render
/// (whatever browser made it), scores the same, and the record names the browser
/// version that made the pictures (issue 34). The page also loads a web-font style
/// sheet nobody seeded, as real reports do: the render made without it is kept and
/// answers while the sheet stays out of the cache, and no longer once it is seeded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_render_cache_answers_without_a_browser() {
    const WEB_FONT: &str = "https://fonts.googleapis.com/css2?family=Source+Serif+4";
    let Some(libs) = browser_and_libs() else {
        return;
    };
    let run = ChartRun::new("solar1", fixture).await;
    run.write(
        "report.html",
        &report_html().replacen(
            "</head>",
            &format!("<link rel=\"stylesheet\" href=\"{WEB_FONT}\">\n</head>"),
            1,
        ),
    );
    run.seed(&libs, &LIBS);
    let (_, r1) = run.eval("out1", &[]).await;
    assert_eq!(r1["render"]["status"], "rendered");
    let version = r1["render"]["browser"].as_str().unwrap().to_string();
    let (stdout, r2) = run.eval("out2", &["--no-browser"]).await;
    assert!(stdout.contains("0 browser start(s)"), "{stdout}");
    assert_eq!(r2["render"]["status"], "cached", "{}", r2["render"]);
    assert_eq!(r2["render"]["browser"], version.as_str());
    assert_eq!(r2["render"]["charts"], r1["render"]["charts"]);
    for m in ["chart_quality", "figure_caption_quality", "figure_quality"] {
        assert_eq!(r2["metrics"][m]["score"], r1["metrics"][m]["score"], "{m}");
        assert_eq!(r2["metrics"][m]["status"], "evaluated", "{m}");
    }
    assert!(units(&r2, "chart_quality")
        .iter()
        .all(|u| u["status"] == "scored"));
    // Seeding the sheet changes what the page would be drawn with: the cached render
    // no longer answers, and without a browser the charts are not drawn.
    let sheet = run.dir.path().join("font.css");
    std::fs::write(&sheet, "body { font-family: serif; }").unwrap();
    run.put(WEB_FONT, &sheet);
    let (_, r3) = run.eval("out3", &["--no-browser"]).await;
    assert_ne!(r3["render"]["status"], "cached", "{}", r3["render"]);
}

const VEGA: [&str; 3] = [
    "https://cdn.jsdelivr.net/npm/vega@6",
    "https://cdn.jsdelivr.net/npm/vega-lite@6",
    "https://cdn.jsdelivr.net/npm/vega-embed@7",
];

/// Chart files holding JSON, shown by a component of any name or an `<iframe>`, are
/// drawn by what they hold (issue 34): a Vega-Lite spec with vega-embed, a Plotly figure
/// with Plotly, each a judged figure; a JSON file of table rows is no chart and gives no
/// unit. Without Plotly in the cache the Plotly figure fails naming its address, the
/// rows still give nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_chart_files_are_drawn_by_what_they_hold() {
    let Some(libs) = browser_and_libs() else {
        return;
    };
    let mdx = "# Harbour ferries\n\nimport Plot from '../components/Plot'\n\n\
               Ridership rose every year from 2019 to 2023 [1].\n\n\
               <Plot spec=\"figs/ridership.vl.json\" />\n\n\
               Fares rose less than ridership [2].\n\n\
               <iframe src=\"figs/fares.json\" width=\"700\" height=\"420\"></iframe>\n\n\
               The stops served are listed below.\n\n\
               <StopTable src=\"figs/stops.json\" />\n\n\
               ## References\n\n1. Ridership https://example.org/solar/capacity\n2. Fares https://example.org/solar/cost\n";
    let vega_spec = r#"{"$schema": "https://vega.github.io/schema/vega-lite/v6.json",
  "title": "Ferry riders per year (thousands)", "width": 560, "height": 280,
  "data": {"values": [{"year": "2019", "riders": 410}, {"year": "2020", "riders": 290},
    {"year": "2021", "riders": 350}, {"year": "2022", "riders": 460}, {"year": "2023", "riders": 520}]},
  "mark": "bar", "encoding": {"x": {"field": "year", "type": "ordinal"}, "y": {"field": "riders", "type": "quantitative"}}}"#;
    let plotly_fig = r#"{"data": [{"type": "scatter", "mode": "lines+markers", "name": "Single fare",
  "x": ["2019", "2020", "2021", "2022", "2023"], "y": [3.1, 3.1, 3.3, 3.4, 3.6]}],
  "layout": {"title": {"text": "Single fare, USD"}, "width": 640, "height": 380}}"#;
    let rows = r#"[{"stop": "North Quay", "lines": 3}, {"stop": "Fish Market", "lines": 2}]"#;
    let write = |run: &ChartRun| {
        std::fs::remove_file(run.report_dir().join("report.html")).unwrap();
        run.write("report.mdx", mdx);
        run.write("figs/ridership.vl.json", vega_spec);
        run.write("figs/fares.json", plotly_fig);
        run.write("figs/stops.json", rows);
    };
    let run = ChartRun::new("solar1", fixture).await;
    write(&run);
    run.seed(&libs, &[VEGA[0], VEGA[1], VEGA[2], PLOTLY]);
    let (_, r) = run.eval("out", &[]).await;
    let mut libraries: Vec<&str> = r["render"]["charts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["library"].as_str().unwrap())
        .collect();
    libraries.sort();
    assert_eq!(libraries, ["plotly", "vega"], "{}", r["render"]);
    let cq = units(&r, "chart_quality");
    assert_eq!(cq.len(), 2, "{}", r["render"]);
    assert!(cq.iter().all(|u| u["status"] == "scored"), "{cq:?}");

    let run = ChartRun::new("solar1", fixture).await;
    write(&run);
    run.seed(&libs, &VEGA);
    let (_, r) = run.eval("out", &[]).await;
    let cq = units(&r, "chart_quality");
    let status: Vec<(&str, &str)> = cq
        .iter()
        .map(|u| {
            (
                u["status"].as_str().unwrap(),
                u["reason"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(cq.len(), 2, "{status:?} {}", r["render"]);
    assert_eq!(cq.iter().filter(|u| u["status"] == "scored").count(), 1);
    let failed = cq.iter().find(|u| u["status"] == "failed").unwrap();
    let reason = failed["reason"].as_str().unwrap();
    assert!(reason.contains(PLOTLY), "{reason}");
    assert!(!reason.contains("stops.json"), "{reason}");
}

/// With a chart library missing, which undrawn candidates were charts is told by what
/// the live page shows (issue 34): the chart's blank canvas fails naming the library;
/// a logo the same script drew on a small canvas, a note it filled with text (both
/// looked up by the chart script) and a component's JSON file of rows give no unit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_live_page_shows_decides_which_undrawn_candidates_are_charts() {
    let Some(libs) = browser_and_libs() else {
        return;
    };
    let page = format!(
        r#"<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Rooftop solar briefing</title>
<script src="{CHART_JS}"></script>
</head><body>
<h1>Rooftop solar briefing <canvas id="logo" width="24" height="24"></canvas></h1>
<p>Installed cost fell from 3.1 to 2.1 USD per watt [2].</p>
<div class="card"><h3>Installed cost</h3><canvas id="cost" width="800" height="360"></canvas></div>
<div id="cost-note"></div>
<p>Installed capacity grew from 40 MW in 2019 to 130 MW in 2023 [1].</p>
<stop-table src="figs/stops.json"></stop-table>
<h2>References</h2>
<ol><li>Capacity https://example.org/solar/capacity</li><li>Cost https://example.org/solar/cost</li></ol>
<script>
var logo = document.getElementById('logo').getContext('2d');
logo.fillStyle = '#f4a261'; logo.fillRect(2, 2, 20, 20); logo.fillStyle = '#264653'; logo.fillRect(8, 8, 8, 8);
document.getElementById('cost-note').textContent =
  'Costs are installed costs per watt of capacity, before any subsidy or tax credit.';
new Chart(document.getElementById('cost'), {{ type: 'line',
  data: {{ labels: ['2019', '2023'], datasets: [{{ label: 'USD/W', data: [3.1, 2.1] }}] }} }});
</script>
</body></html>
"#
    );
    let run = ChartRun::new("solar1", fixture).await;
    run.write("report.html", &page);
    run.write(
        "figs/stops.json",
        r#"[{"stop": "North Quay"}, {"stop": "Fish Market"}]"#,
    );
    run.seed(&libs, &[ECHARTS]);
    let (_, r) = run.eval("out", &[]).await;
    let cq = units(&r, "chart_quality");
    assert_eq!(cq.len(), 1, "{cq:?} {}", r["render"]);
    assert_eq!(cq[0]["status"], "failed");
    let reason = cq[0]["reason"].as_str().unwrap();
    assert!(reason.contains(CHART_JS), "{reason}");
}

/// A plain `tvir parse` of a page with a chart prints no dependency's log line
/// (the browser's protocol library included); `--log` shows them (issue 34).
#[test]
fn a_normal_run_prints_no_dependency_log_line() {
    if chromium().is_none() {
        common::skip("no Chromium");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("report.html"),
        "<!DOCTYPE html><html><body><h1>Briefing</h1><p>Capacity grew [1].</p>\
         <iframe src=\"bars.html\" width=\"700\" height=\"380\"></iframe>\
         <h2>References</h2><ol><li>https://example.org/a</li></ol></body></html>",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("bars.html"),
        bar_file("Capacity", &[40, 58, 77, 101, 130]),
    )
    .unwrap();
    let run = |extra: &[&str]| {
        let out = tvir_command()
            .env_remove("RUST_LOG")
            .arg("parse")
            .arg(dir.path().join("report.html"))
            .arg("--cache")
            .arg(dir.path().join(format!("cache-{}.sqlite", extra.len())))
            .arg("--offline")
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", describe(&out));
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (stdout, stderr) = run(&[]);
    assert!(stdout.contains("figures:    1"), "{stdout}\n{stderr}");
    assert!(
        !stderr.contains("chromiumoxide") && !stderr.contains("ERROR"),
        "{stderr}"
    );
    let (_, stderr) = run(&["--log", "chromiumoxide=trace"]);
    assert!(stderr.contains("chromiumoxide"), "{stderr}");
    assert!(!stderr.contains("WS Connection error"), "{stderr}");
}
