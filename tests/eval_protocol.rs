//! `tvir eval --protocol reference` end to end against the mock judge (issue 36,
//! requirement 2): every setting it implies is recorded in `run.json`, a flag beside
//! it overrides that one setting and is recorded as an override, each implied
//! setting changes what the run does (figure kinds by path prefix, aggregates over
//! the metrics present, 4-decimal rounding, no settling without a call, plain JSON
//! answers), and `tvir summarize` shows the protocol, computes a system's levels
//! the reference's way and refuses to mix protocols unless `--mix-protocols`.
//!
//! One default run and one reference run of the same two reports serve every test
//! (each run is a few seconds; they are made once and shared).

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::Value;
use tvir_testing::mock_judge::{default_answer, request_schema, MockConfig};

use common::cli::{describe, eval_against_mock, tvir_status};
use common::outputs::read_json;

/// t1: a chart in a folder the reference does not type (`figs/`, a chart by its alt
/// text for us), an image under `images/`, a fact backed by a golden page and a
/// fact whose marker names no entry (settled without a call by default).
const T1: &str = "# Rooftop solar\n\n\
Residential rooftop capacity roughly quadrupled between 2018 and 2023, from about 2 GW to almost 8 GW [1].\n\n\
<figure>\n  <img src=\"figs/solar_capacity.png\" alt=\"Line chart of residential and commercial rooftop capacity\">\n  \
<figcaption>Figure 1: Rooftop solar capacity by segment, 2018-2023 (GW).</figcaption>\n</figure>\n\n\
As Figure 1 shows, residential capacity grew fastest.\n\n\
<figure>\n  <img src=\"images/rooftops.png\" alt=\"Landscape with hills under a clear sky\">\n  \
<figcaption>Figure 2: A suburban landscape where rooftop systems are installed.</figcaption>\n</figure>\n\n\
The permit office counted a backlog of 1,200 rooftop applications in 2023 [3].\n\n\
## References\n\n\
[1] Example Energy Agency. Rooftop capacity statistics 2023. https://example.org/solar/capacity\n\
[2] Example Lab. Installed cost tracker. https://example.org/solar/cost\n";

/// t2: text only, one fact whose page is in no sources file (offline: it fails on
/// our side), so Citation Support has no scored unit and is not evaluated.
const T2: &str = "# Heat pumps\n\n\
Heat pump sales in the region rose by a third in 2023 [1].\n\n\
## References\n\n\
[1] Regional heating survey. https://example.org/heat/not-in-the-sources-file\n";

struct Runs {
    _dir: tempfile::TempDir,
    default: PathBuf,
    reference: PathBuf,
    /// Request bodies the mock judge received in each run.
    default_bodies: Vec<Value>,
    reference_bodies: Vec<Value>,
}

fn fixture(dir: &Path) -> (PathBuf, PathBuf) {
    let ex = common::examples().join("system-a/ex001");
    let t1 = dir.join("reports/sys/t1");
    for sub in ["figs", "images"] {
        std::fs::create_dir_all(t1.join(sub)).unwrap();
    }
    std::fs::copy(
        ex.join("charts/solar_capacity.png"),
        t1.join("figs/solar_capacity.png"),
    )
    .unwrap();
    std::fs::copy(
        ex.join("images/rooftops.png"),
        t1.join("images/rooftops.png"),
    )
    .unwrap();
    std::fs::write(t1.join("report.md"), T1).unwrap();
    let t2 = dir.join("reports/sys/t2");
    std::fs::create_dir_all(&t2).unwrap();
    std::fs::write(t2.join("report.md"), T2).unwrap();
    let tasks = dir.join("tasks.json");
    std::fs::write(
        &tasks,
        serde_json::json!([
            {"id": "t1", "query": "Brief a city energy office on rooftop solar growth.",
             "checklist": {"Trends": ["Does the report describe capacity growth?"]}},
            {"id": "t2", "query": "Summarise heat pump sales.",
             "checklist": {"Sales": ["Does the report give the sales change?"]}}
        ])
        .to_string(),
    )
    .unwrap();
    (dir.join("reports"), tasks)
}

/// The schema's default answer with every 1-10 score at 7 (so WQ and ADB are 0.7
/// while the other text metrics are 1 and the means differ by metric).
fn sevens(body: &Value) -> Value {
    let schema = request_schema(body).unwrap_or_default();
    let mut v = default_answer(&schema);
    if let (Some(props), Some(scores)) = (
        schema
            .pointer("/properties/scores/properties")
            .and_then(Value::as_object),
        v.get_mut("scores").and_then(Value::as_object_mut),
    ) {
        for (k, s) in scores.iter_mut() {
            if props[k]["maximum"].as_i64() == Some(10) {
                *s = serde_json::json!(7);
            }
        }
    }
    v
}

async fn eval(reports: &Path, tasks: &Path, out: &Path, extra: &[&str]) -> Vec<Value> {
    let config = MockConfig {
        responder: Some(std::sync::Arc::new(sevens)),
        ..MockConfig::default()
    };
    let (run, bodies) = eval_against_mock(config, reports, tasks, out, extra).await;
    assert!(
        run.status.code().is_some_and(|c| c <= 1),
        "{}",
        describe(&run)
    );
    bodies
}

fn runs() -> &'static Runs {
    static RUNS: OnceLock<Runs> = OnceLock::new();
    RUNS.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let (reports, tasks) = fixture(dir.path());
        let (default, reference) = (dir.path().join("out-default"), dir.path().join("out-ref"));
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let default_bodies = rt.block_on(eval(&reports, &tasks, &default, &[]));
        // `--extraction rules` and `--fetcher direct` beside the protocol: no
        // judge-made extraction of the fixture, no Serper key needed.
        let reference_bodies = rt.block_on(eval(
            &reports,
            &tasks,
            &reference,
            &[
                "--protocol",
                "reference",
                "--extraction",
                "rules",
                "--fetcher",
                "direct",
            ],
        ));
        Runs {
            _dir: dir,
            default,
            reference,
            default_bodies,
            reference_bodies,
        }
    })
}

fn report(out: &Path, task: &str) -> Value {
    read_json(&out.join("sys").join(task).join("mock-model/report.json"))
}

fn units<'a>(r: &'a Value, metric: &str) -> Vec<&'a Value> {
    r["units"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["metric"] == metric)
        .collect()
}

fn four_decimals(x: f64) -> bool {
    ((x * 1e4).round() - x * 1e4).abs() < 1e-6
}

#[test]
fn the_reference_protocol_records_every_setting_and_each_override() {
    let r = runs();
    let run = read_json(&r.reference.join("run.json"));
    let p = &run["protocol"];
    assert_eq!(p["name"], "reference", "{p}");
    // Implied by the protocol.
    for (k, v) in [
        ("dedup", "judge-all"),
        ("figure-kinds", "path"),
        ("aggregates", "present"),
        ("rounding", "reference"),
        ("settle", "none"),
        ("csc-unreadable", "judge"),
        ("answers", "json"),
        ("mc-band", "judge"),
        ("prompt-order", "reference"),
    ] {
        assert_eq!(p["settings"][k], v, "{k}: {p}");
    }
    // Given beside it: they win and are listed as overrides.
    assert_eq!(p["settings"]["extraction"], "rules", "{p}");
    assert_eq!(p["settings"]["fetcher"], "direct", "{p}");
    assert_eq!(p["overrides"], serde_json::json!(["extraction", "fetcher"]));
    // Every report.json carries the same record.
    assert_eq!(&report(&r.reference, "t1")["protocol"], p);
    // The default run records its own values, with no override.
    let d = read_json(&r.default.join("run.json"))["protocol"].clone();
    assert_eq!(d["name"], "default", "{d}");
    for (k, v) in [
        ("dedup", "prefilter"),
        ("figure-kinds", "content"),
        ("aggregates", "complete"),
        ("rounding", "full"),
        ("settle", "certain"),
        ("answers", "schema"),
        ("mc-band", "code"),
        ("prompt-order", "cached"),
    ] {
        assert_eq!(d["settings"][k], v, "{k}: {d}");
    }
    assert!(d.get("overrides").is_none(), "{d}");
}

#[test]
fn figure_kinds_by_path_prefix_leave_a_chart_outside_charts_untyped() {
    let r = runs();
    let (d, x) = (report(&r.default, "t1"), report(&r.reference, "t1"));
    // Ours: typed a chart by its alt text, so it gets a Chart Quality unit.
    assert_eq!(units(&d, "chart_quality").len(), 1, "{}", d["units"]);
    assert_eq!(d["n_charts"], 1);
    // The reference's: `figs/` is neither `images/` nor `charts/`: no CQ, no IQ.
    assert_eq!(units(&x, "chart_quality").len(), 0, "{}", x["units"]);
    assert_eq!(x["n_charts"], 0);
    assert_eq!(
        units(&x, "image_quality").len(),
        1,
        "only images/rooftops.png"
    );
}

#[test]
fn aggregates_present_average_the_metrics_there_are() {
    let r = runs();
    let (d, x) = (report(&r.default, "t2"), report(&r.reference, "t2"));
    for rec in [&d, &x] {
        assert_eq!(
            rec["metrics"]["citation_support"]["status"], "not_evaluated",
            "{}",
            rec["metrics"]["citation_support"]
        );
    }
    // Ours: a missing metric leaves TA (and so Overall) empty.
    assert!(d["ta"].is_null(), "{}", d["ta"]);
    assert!(d["overall"].is_null());
    // The reference's: TA = mean of IA, WQ, ADB, FLC (the four present).
    let m = |k: &str| x["metrics"][k]["score"].as_f64().unwrap();
    let ta = (m("instruction_alignment")
        + m("writing_quality")
        + m("analytical_depth_breadth")
        + m("factual_logical_consistency"))
        / 4.0;
    let got = x["ta"].as_f64().expect("TA over the metrics present");
    assert!((got - ta).abs() <= 5e-5, "TA {got} vs {ta}");
    // A text-only report: every visual metric 0, VA 0; Overall the mean of the
    // nine metrics present (four text metrics and five visual zeros).
    assert_eq!(x["va"].as_f64(), Some(0.0));
    let overall = x["overall"].as_f64().unwrap();
    assert!((overall - ta * 4.0 / 9.0).abs() <= 5e-5, "{overall}");
}

#[test]
fn reference_rounding_keeps_four_decimals() {
    let r = runs();
    let x = report(&r.reference, "t1");
    let mut checked = 0;
    for (name, m) in x["metrics"].as_object().unwrap() {
        // The reference writes image quality unrounded; every other metric with 4.
        let Some(s) = m["score"].as_f64() else {
            continue;
        };
        if name != "image_quality" {
            assert!(four_decimals(s), "{name} = {s}");
            checked += 1;
        }
    }
    for level in ["ta", "va", "overall"] {
        let s = x[level].as_f64().unwrap();
        assert!(four_decimals(s), "{level} = {s}");
    }
    assert!(checked >= 8, "{checked}");
    // Full precision by default: FQ weighs the computed image score unrounded.
    let d = report(&r.default, "t1");
    let fq = d["metrics"]["figure_quality"]["score"].as_f64().unwrap();
    assert!(!four_decimals(fq), "default FQ {fq} is rounded");
}

#[test]
fn settle_none_asks_what_the_default_settles_without_a_call() {
    let r = runs();
    let backlog = |rec: &Value| -> Value {
        units(rec, "citation_support")
            .into_iter()
            .find(|u| {
                u["detail"]["fact"]
                    .as_str()
                    .is_some_and(|f| f.contains("backlog"))
            })
            .cloned()
            .unwrap_or_else(|| panic!("no backlog fact: {}", rec["units"]))
    };
    let d = backlog(&report(&r.default, "t1"));
    assert_eq!(d["detail"]["rule"], "no_usable_source", "{d}");
    let x = backlog(&report(&r.reference, "t1"));
    assert!(x["detail"]["rule"].is_null(), "{x}");
    assert_eq!(x["status"], "scored", "{x}");
    assert!(x["answer"].is_object(), "the judge answered it: {x}");
}

#[test]
fn answers_json_asks_for_plain_json() {
    let r = runs();
    let kind = |b: &Value| {
        b["response_format"]["type"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    assert!(!r.default_bodies.is_empty() && !r.reference_bodies.is_empty());
    assert!(
        r.default_bodies.iter().all(|b| kind(b) == "json_schema"),
        "{:?}",
        r.default_bodies.iter().map(kind).collect::<Vec<_>>()
    );
    assert!(
        r.reference_bodies.iter().all(|b| kind(b) == "json_object"),
        "{:?}",
        r.reference_bodies.iter().map(kind).collect::<Vec<_>>()
    );
}

#[test]
fn the_reference_protocol_lays_requests_out_the_references_way() {
    // Its prompt order (the rubric as the system message) and its plain JSON answers
    // together: the answer format ends the system message, with the instructions,
    // and a figure still ends the user message. The default run asks with the
    // one-line system message and a schema in `response_format`.
    let r = runs();
    let system = |b: &Value| {
        b["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "system")
            .map(common::judge::message_text)
            .unwrap_or_default()
    };
    let last_part = |b: &Value| {
        let user = b["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "user")
            .unwrap();
        match &user["content"] {
            Value::Array(parts) => parts.last().unwrap()["type"].as_str().unwrap().to_string(),
            _ => "text".to_string(),
        }
    };
    let with_image = |bodies: &[Value]| -> Vec<Value> {
        bodies
            .iter()
            .filter(|b| b.to_string().contains("\"image_url\""))
            .cloned()
            .collect()
    };
    let x = with_image(&r.reference_bodies);
    assert!(!x.is_empty());
    for b in &x {
        assert_eq!(last_part(b), "image_url", "{}", system(b));
        // The rubric, then the answer format.
        let s = system(b);
        let (rubric_at, schema_at) = (s.find("Answer in JSON."), s.find("JSON schema"));
        assert!(
            rubric_at.is_some() && rubric_at < schema_at && s.len() > 1500,
            "{s}"
        );
    }
    for b in &r.reference_bodies {
        assert!(system(b).contains("JSON schema"), "{}", system(b));
    }
    for b in &with_image(&r.default_bodies) {
        assert_eq!(last_part(b), "image_url");
        assert!(
            !system(b).contains("JSON schema") && system(b).len() < 200,
            "{}",
            system(b)
        );
    }
}

/// `tvir summarize --format json` of `out`.
fn summary(out: &Path, extra: &[&str]) -> (i32, String, String) {
    let mut args = vec!["summarize".to_string(), out.display().to_string()];
    args.extend(extra.iter().map(|s| s.to_string()));
    tvir_status(&args)
}

#[test]
fn summarize_shows_the_protocol_and_computes_levels_the_references_way() {
    let r = runs();
    let (code, stdout, stderr) = summary(&r.reference, &["--format", "json"]);
    assert_eq!(code, 0, "{stderr}");
    let s: Value = serde_json::from_str(&stdout).unwrap();
    let notes = s["notes"].to_string();
    assert!(notes.contains("protocol: reference ("), "{notes}");
    assert!(notes.contains("per-metric means"), "{notes}");
    let sys = &s["judges"][0]["systems"][0];
    // By hand, the reference's summary: each metric's mean over the two reports
    // (CS over t1 alone: t2 has none), then TA = mean of the five text means and
    // Overall = mean of the ten, each rounded to 4 decimals.
    let (t1, t2) = (report(&r.reference, "t1"), report(&r.reference, "t2"));
    let mean = |k: &str| {
        let v: Vec<f64> = [&t1, &t2]
            .iter()
            .filter_map(|r| r["metrics"][k]["score"].as_f64())
            .collect();
        v.iter().sum::<f64>() / v.len() as f64
    };
    let text = [
        "instruction_alignment",
        "citation_support",
        "writing_quality",
        "analytical_depth_breadth",
        "factual_logical_consistency",
    ];
    let visual = [
        "figure_quality",
        "chart_source_consistency",
        "figure_caption_quality",
        "figure_context_integration",
        "multimodal_composition",
    ];
    let avg = |ks: &[&str]| ks.iter().map(|k| mean(k)).sum::<f64>() / ks.len() as f64;
    let round4 = |x: f64| (x * 1e4).round() / 1e4;
    let ta = round4(avg(&text));
    let all: Vec<&str> = text.iter().chain(visual.iter()).copied().collect();
    let overall = round4(avg(&all));
    assert_eq!(sys["ta"]["mean"].as_f64(), Some(ta), "{sys}");
    assert_eq!(sys["va"]["mean"].as_f64(), Some(round4(avg(&visual))));
    assert_eq!(sys["overall"]["mean"].as_f64(), Some(overall), "{sys}");
    // The former rule (mean of the report-level TAs) gives another number here.
    let report_level = (t1["ta"].as_f64().unwrap() + t2["ta"].as_f64().unwrap()) / 2.0;
    assert!((report_level - ta).abs() > 1e-4, "{report_level} vs {ta}");
    // The default run's system TA is the report-level mean (t2 has none).
    let (code, stdout, _) = summary(&r.default, &["--format", "json"]);
    assert_eq!(code, 0);
    let d: Value = serde_json::from_str(&stdout).unwrap();
    let dsys = &d["judges"][0]["systems"][0];
    let t1d = report(&r.default, "t1")["ta"].as_f64().unwrap();
    assert!(
        (dsys["ta"]["mean"].as_f64().unwrap() - t1d).abs() < 1e-12,
        "{dsys}"
    );
    assert!(dsys.get("levels_from").is_none(), "{dsys}");
    assert!(d["notes"].to_string().contains("protocol: default ("));
}

#[test]
fn summarize_rounds_each_metrics_system_mean_under_reference_rounding() {
    // The reference's summary rounds every cell, a metric's system mean too. Two
    // reports scoring 0.5 and 0.6333 on writing quality average 0.56665: five
    // decimals, so an unrounded mean shows here.
    let r = runs();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let copied = std::process::Command::new("cp")
        .arg("-r")
        .arg(&r.reference)
        .arg(&out)
        .status()
        .unwrap();
    assert!(copied.success());
    for (task, score) in [("t1", 0.5), ("t2", 0.6333)] {
        let path = out.join("sys").join(task).join("mock-model/report.json");
        let mut rec = read_json(&path);
        rec["metrics"]["writing_quality"]["score"] = serde_json::json!(score);
        std::fs::write(&path, serde_json::to_vec_pretty(&rec).unwrap()).unwrap();
    }
    let (code, stdout, stderr) = summary(&out, &["--format", "json"]);
    assert_eq!(code, 0, "{stderr}");
    let s: Value = serde_json::from_str(&stdout).unwrap();
    let sys = &s["judges"][0]["systems"][0];
    let unrounded = (0.5 + 0.6333) / 2.0;
    let got = sys["metrics"]["writing_quality"]["mean"].as_f64().unwrap();
    assert!(four_decimals(got), "{got}");
    assert!((got - unrounded).abs() < 1e-4 && got != unrounded, "{got}");
}

#[test]
fn summarize_refuses_to_mix_protocols_unless_asked() {
    let r = runs();
    let dir = tempfile::tempdir().unwrap();
    let copy = |from: &Path, system: &str| {
        for e in walkdir::WalkDir::new(from.join("sys")) {
            let e = e.unwrap();
            let rel = e.path().strip_prefix(from.join("sys")).unwrap();
            let to = dir.path().join(system).join(rel);
            if e.file_type().is_dir() {
                std::fs::create_dir_all(&to).unwrap();
            } else {
                std::fs::copy(e.path(), &to).unwrap();
            }
        }
    };
    copy(&r.default, "ours");
    copy(&r.reference, "theirs");
    let (code, stdout, stderr) = summary(dir.path(), &[]);
    assert_eq!(code, 2, "refused: {stdout}{stderr}");
    assert!(
        stderr.contains("different protocols cannot share a leaderboard")
            && stderr.contains("--mix-protocols"),
        "{stderr}"
    );
    assert!(
        stderr.contains("default (") && stderr.contains("reference ("),
        "{stderr}"
    );
    let (code, stdout, stderr) = summary(dir.path(), &["--mix-protocols", "--format", "json"]);
    assert_eq!(code, 0, "{stderr}");
    let s: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(s["judges"][0]["systems"].as_array().unwrap().len(), 2);
    let notes = s["notes"].to_string();
    assert!(notes.contains("protocol: default (") && notes.contains("protocol: reference ("));
}
