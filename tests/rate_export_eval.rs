//! `tvir rate export OUT DIR` from an eval output: an HTML report whose page draws a
//! chart by script and shows a local picture and one embedded as a `data:` URI,
//! judged by the mock judge, then exported as a study. The chart PNG the eval wrote
//! is a picture of the task, the embedded picture became a file, and the pictures
//! the judge received are the task's pictures, as the judge gets them (on white,
//! long side bounded), no more and no fewer. With Chromium (no chart library
//! needed: the chart is an SVG drawn by an inline script).

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;

use base64::Engine as _;
use serde_json::Value;

use common::charts::{chromium, ChartRun};

/// A picture the report carries inside itself, as a `data:` URI.
fn embedded() -> String {
    let img = image::RgbImage::from_fn(60, 40, |x, y| {
        image::Rgb([200, (x * 4) as u8, (y * 6) as u8])
    });
    let mut png = Vec::new();
    img.write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .unwrap();
    format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(png)
    )
}

fn fixture(dir: &Path) {
    let report = dir.join("reports/sysA/ferry1");
    std::fs::create_dir_all(report.join("images")).unwrap();
    std::fs::write(
        report.join("report.html"),
        r#"<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Ferry briefing</title></head><body>
<h1>Ferry briefing</h1>
<p>Weekday crossings doubled between 2020 and 2024 [1].</p>
<figure>
  <svg id="crossings" width="320" height="220"></svg>
  <figcaption>Figure 1: Weekday crossings per quarter, thousands. Source: [1]</figcaption>
</figure>
<p>The new pier opened in 2023 [1].</p>
<figure>
  <img src="images/pier.png" alt="The new pier">
  <figcaption>Figure 2: The new pier at dusk. Source: [1]</figcaption>
</figure>
<figure>
  <img src="EMBEDDED" alt="Ferry route map">
  <figcaption>Figure 3: The two routes. Source: [1]</figcaption>
</figure>
<h2>References</h2>
<ol><li>Ferry office, crossings. https://example.org/ferry/use</li></ol>
<script>
(function () {
  var s = document.getElementById('crossings'), ns = 'http://www.w3.org/2000/svg';
  [30, 45, 60, 75, 90].forEach(function (v, i) {
    var r = document.createElementNS(ns, 'rect');
    r.setAttribute('x', 20 + i * 58); r.setAttribute('y', 200 - v * 2);
    r.setAttribute('width', 40); r.setAttribute('height', v * 2);
    r.setAttribute('fill', i % 2 ? '#e76f51' : '#264653'); s.appendChild(r);
    var t = document.createElementNS(ns, 'text');
    t.setAttribute('x', 30 + i * 58); t.setAttribute('y', 215); t.textContent = 'Q' + (i + 1);
    s.appendChild(t);
  });
})();
</script>
</body></html>
"#
        .replace("EMBEDDED", &embedded()),
    )
    .unwrap();
    // A picture with some structure and a half-transparent band (the judge gets it
    // on white).
    let img = image::RgbaImage::from_fn(160, 100, |x, y| {
        let a = if y < 20 { 128 } else { 255 };
        image::Rgba([(x * 255 / 159) as u8, (y * 255 / 99) as u8, 120, a])
    });
    img.save(report.join("images/pier.png")).unwrap();
    std::fs::write(
        dir.join("tasks.json"),
        serde_json::json!([{"id": "ferry1", "query": "Brief the ferry board on crossings and the new pier.",
            "language": "en",
            "checklist": {"Use": ["Does the report give the crossings trend?"]}}])
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.join("sources.jsonl"),
        "{\"url\": \"https://example.org/ferry/use\", \"text\": \"Weekday crossings doubled from 2020 to 2024; the new pier opened in 2023.\"}\n",
    )
    .unwrap();
}

/// A picture as a judge receives it: its pixels on white, long side bounded, as
/// (width, height, RGB bytes).
fn as_judged(bytes: &[u8]) -> (u32, u32, Vec<u8>) {
    let rgba = image::load_from_memory(bytes).unwrap().to_rgba8();
    let rgb = tvir_images::encode::prepare_for_judge(&rgba, tvir_images::encode::DEFAULT_MAX_SIDE);
    (rgb.width(), rgb.height(), rgb.into_raw())
}

/// Every image of every request the judge received, decoded.
fn judge_images(bodies: &[Value]) -> BTreeSet<(u32, u32, Vec<u8>)> {
    let mut out = BTreeSet::new();
    for b in bodies {
        for m in b["messages"].as_array().into_iter().flatten() {
            for part in m["content"].as_array().into_iter().flatten() {
                let Some(url) = part.pointer("/image_url/url").and_then(Value::as_str) else {
                    continue;
                };
                let (_, payload) = url.split_once(";base64,").expect("a base64 data: URI");
                let png = base64::engine::general_purpose::STANDARD
                    .decode(payload)
                    .unwrap();
                let rgb = image::load_from_memory(&png).unwrap().to_rgb8();
                out.insert((rgb.width(), rgb.height(), rgb.into_raw()));
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pictures_of_an_exported_task_are_the_ones_the_judge_saw() {
    if chromium().is_none() {
        common::skip("no Chromium");
        return;
    }
    let run = ChartRun::new("ferry1", fixture).await;
    let (_, record) = run.eval("out", &[]).await;
    let charts = record["render"]["charts"]
        .as_array()
        .unwrap_or_else(|| panic!("no charts drawn: {}", record["render"]));
    assert_eq!(charts.len(), 1, "{}", record["render"]);
    let chart_png =
        std::fs::read(run.out_dir("out").join(charts[0]["png"].as_str().unwrap())).unwrap();

    let dir = run.dir.path();
    let study = dir.join("study");
    let (code, _, err) = common::cli::tvir_status(&[
        "rate".as_ref(),
        "export".as_ref(),
        dir.join("out").as_os_str(),
        study.as_os_str(),
        "--reports".as_ref(),
        dir.join("reports").as_os_str(),
        "--tasks".as_ref(),
        dir.join("tasks.json").as_os_str(),
        "--to".as_ref(),
        "label-studio".as_ref(),
    ]);
    assert_eq!(code, 0, "{err}");
    let tasks: Vec<Value> =
        serde_json::from_slice(&std::fs::read(study.join("tasks.json")).unwrap()).unwrap();
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0]["meta"]["system"], "sysA");
    let html = tasks[0]["data"]["report"].as_str().unwrap();
    assert!(!html.contains("<script"), "{html}");
    // The chart's picture stands where the script drew it, in place of the empty
    // <svg> that would otherwise leave a blank box.
    assert!(!html.contains("id=\"crossings\""), "{html}");
    let (chart_at, caption_at) = (
        html.find("alt=\"chart\"").unwrap(),
        html.find("Figure 1:").unwrap(),
    );
    assert!(chart_at < caption_at, "{html}");
    // The pictures the task shows, by the files Label Studio serves.
    let doc = scraper::Html::parse_fragment(html);
    let img = scraper::Selector::parse("img").unwrap();
    let shown: Vec<Vec<u8>> = doc
        .select(&img)
        .map(|e| {
            let src = e.value().attr("src").unwrap_or_default();
            let rel = src
                .strip_prefix("/data/local-files/?d=")
                .unwrap_or_else(|| panic!("{src:?} is not a study picture"));
            std::fs::read(study.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
        })
        .collect();
    assert!(!html.contains("data:"), "a data: picture left in the task");
    assert_eq!(shown.len(), 3, "the chart, the pier and the map: {html}");
    assert!(
        shown.contains(&chart_png),
        "the chart PNG the eval wrote is not among the task's pictures"
    );
    let pier = std::fs::read(run.report_dir().join("images/pier.png")).unwrap();
    assert!(
        shown.contains(&pier),
        "the report's picture is not in the task"
    );
    let map = base64::engine::general_purpose::STANDARD
        .decode(embedded().split_once(',').unwrap().1)
        .unwrap();
    assert!(
        shown.contains(&map),
        "the embedded picture is not in the task"
    );

    // What the judge received: exactly the task's pictures, as a judge gets them.
    let seen = judge_images(&run.mock.bodies());
    let in_task: BTreeSet<(u32, u32, Vec<u8>)> = shown.iter().map(|b| as_judged(b)).collect();
    let dims = |s: &BTreeSet<(u32, u32, Vec<u8>)>| -> Vec<(u32, u32)> {
        s.iter().map(|(w, h, _)| (*w, *h)).collect()
    };
    assert_eq!(
        seen,
        in_task,
        "judge saw {:?}, the task shows {:?}",
        dims(&seen),
        dims(&in_task)
    );
}

/// A Markdown report whose figure is a picture on the web (a real HTTP server on
/// 127.0.0.1, `--allow-private`), with its question and cited page.
fn remote_fixture(dir: &Path, picture_url: &str) {
    let report = dir.join("reports/sysA/ferry2");
    std::fs::create_dir_all(&report).unwrap();
    std::fs::write(
        report.join("report.md"),
        format!(
            "# Ferry briefing\n\nWeekday crossings doubled between 2020 and 2024 [1].\n\n\
             ![Figure 1: Weekday crossings per quarter. Source: [1]]({picture_url})\n\n\
             Figure 1: Weekday crossings per quarter, thousands. Source: [1]\n\n\
             ## References\n\n[1] Ferry office, crossings. https://example.org/ferry/use\n"
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("tasks.json"),
        serde_json::json!([{"id": "ferry2", "query": "Brief the ferry board on crossings.",
            "language": "en",
            "checklist": {"Use": ["Does the report give the crossings trend?"]}}])
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.join("sources.jsonl"),
        "{\"url\": \"https://example.org/ferry/use\", \"text\": \"Weekday crossings doubled from 2020 to 2024.\"}\n",
    )
    .unwrap();
}

/// `tvir rate export OUT DIR` of the remote-picture fixture, with `extra` flags and
/// the user's cache directory moved to `home` (no default cache of this machine).
fn export(dir: &Path, study: &Path, home: &Path, extra: &[&std::ffi::OsStr]) -> (i32, String) {
    let out = common::cli::tvir_command()
        .env("XDG_CACHE_HOME", home)
        .env("HOME", home)
        .args(["rate", "export"])
        .arg(dir.join("out"))
        .arg(study)
        .arg("--reports")
        .arg(dir.join("reports"))
        .arg("--tasks")
        .arg(dir.join("tasks.json"))
        .args(["--to", "label-studio"])
        .args(extra)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_picture_the_eval_downloaded_is_a_study_file_with_the_server_gone() {
    let img = image::RgbImage::from_fn(90, 60, |x, y| {
        image::Rgb([(x * 2) as u8, 90, (y * 4) as u8])
    });
    let mut png = Vec::new();
    img.write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .unwrap();
    let server = tvir_testing::page_server::PageServer::start()
        .await
        .unwrap();
    server.add_page("/fig/crossings.png", "image/png", png.clone());
    let picture_url = server.url("/fig/crossings.png");
    let mock =
        tvir_testing::mock_judge::MockJudge::start(tvir_testing::mock_judge::MockConfig::default())
            .await;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    remote_fixture(&dir, &picture_url);
    let cache = dir.join("cache.sqlite");
    let mut cmd = common::cli::tvir_command();
    cmd.env_remove("TVIR_BROWSER")
        .args(["eval", "--reports"])
        .arg(dir.join("reports"))
        .arg("--tasks")
        .arg(dir.join("tasks.json"))
        .arg("--out")
        .arg(dir.join("out"))
        .args([
            "--base-url",
            &mock.base_url(),
            "--judge-model",
            "mock-model",
        ])
        .arg("--cache")
        .arg(&cache)
        .arg("--sources")
        .arg(dir.join("sources.jsonl"))
        .args(["--assume-vision", "--allow-private", "--quiet"]);
    let run = common::cli::output_async(cmd).await;
    assert!(
        run.status.code().is_some_and(|c| c <= 1),
        "{}",
        common::cli::describe(&run)
    );
    assert!(
        server.hits_for("/fig/crossings.png") >= 1,
        "the eval did not download the figure: {}",
        common::cli::describe(&run)
    );
    // The judge saw the picture (so the eval had its bytes).
    let seen = judge_images(&mock.bodies());
    assert!(
        seen.contains(&as_judged(&png)),
        "the judge did not see the figure"
    );
    drop(server);

    // The server is gone: the picture comes from the eval's cache.
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let study = dir.join("study");
    let (code, err) = tokio::task::spawn_blocking({
        let (dir, study, home, cache) = (dir.clone(), study.clone(), home.clone(), cache.clone());
        move || {
            export(
                &dir,
                &study,
                &home,
                &["--cache".as_ref(), cache.as_os_str()],
            )
        }
    })
    .await
    .unwrap();
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("0 remote pictures left as web links"), "{err}");
    let tasks: Vec<Value> =
        serde_json::from_slice(&std::fs::read(study.join("tasks.json")).unwrap()).unwrap();
    let html = tasks[0]["data"]["report"].as_str().unwrap();
    assert!(!html.contains(&picture_url), "the web link stayed: {html}");
    let doc = scraper::Html::parse_fragment(html);
    let sel = scraper::Selector::parse("img").unwrap();
    let srcs: Vec<String> = doc
        .select(&sel)
        .map(|e| e.value().attr("src").unwrap_or_default().to_string())
        .collect();
    assert_eq!(srcs.len(), 1, "{html}");
    let rel = srcs[0]
        .strip_prefix("/data/local-files/?d=")
        .unwrap_or_else(|| panic!("{:?} is not a study picture", srcs[0]));
    assert!(rel.starts_with("pictures/"), "{rel}");
    assert_eq!(
        std::fs::read(study.join(rel)).unwrap(),
        png,
        "the study's picture is not the downloaded one"
    );

    // Without the cache (and no default one), it stays a web link, named.
    let study2 = dir.join("study-nocache");
    let (code, err) = tokio::task::spawn_blocking({
        let (dir, study2, home) = (dir.clone(), study2.clone(), home.clone());
        move || export(&dir, &study2, &home, &[])
    })
    .await
    .unwrap();
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("1 remote pictures left as web links"), "{err}");
    assert!(
        err.contains(&picture_url),
        "the warning does not list it: {err}"
    );
    let study_md = std::fs::read_to_string(study2.join("STUDY.md")).unwrap();
    assert!(study_md.contains(&picture_url), "{study_md}");
    let plan: Value =
        serde_json::from_slice(&std::fs::read(study2.join("plan.json")).unwrap()).unwrap();
    assert_eq!(plan["remote_links"], serde_json::json!([picture_url]));
    let tasks: Vec<Value> =
        serde_json::from_slice(&std::fs::read(study2.join("tasks.json")).unwrap()).unwrap();
    assert!(tasks[0]["data"]["report"]
        .as_str()
        .unwrap()
        .contains(&picture_url));
}
