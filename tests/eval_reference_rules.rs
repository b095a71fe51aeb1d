//! The reference evaluator's scoring rules, checked against numbers worked out by
//! hand from its rules (issue 36, requirement 4), each test written so that the
//! former rule fails it:
//!
//! - a system with a text-only report: its VA and Overall means include that
//!   report's zeros (formerly the report had no VA and left the means);
//! - a system with no figure in any report: VA and Overall not evaluated, with the
//!   reason, in json, csv, md, table and html;
//! - a report whose every figure is broken: MC is judged (formerly 0 without a call);
//! - `--mc-band judge`: the variety score stands as the judge gave it;
//! - a remote figure that times out through the real fetcher fails alone, with its
//!   reason; the other figures are scored and the coverage is shown (formerly one
//!   such unit voided the metric).

use crate::common;

use std::path::Path;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::{json, Value};
use tvir_analysis::aggregate::{self, load_eval_tree};
use tvir_engine::record::{ReportRecord, UnitStatus};
use tvir_engine::{output, Engine, EvalSettings, Pages, ReportJob, Task};
use tvir_judge::{Judge, JudgeAnswer, JudgeError, JudgeRequest};
use tvir_rubric::RubricSet;
use tvir_testing::mock_judge::{default_answer, MockConfig, MockJudge};
use tvir_testing::stubs;

use common::cli::{describe, output_async, tvir_command, tvir_status};
use common::outputs::read_json;

/// Fixed answers, so every visual score can be worked out by hand:
/// - CQ: 7 of the 10 items pass -> 0.7 per chart;
/// - FCQ: 8, 8, 8 -> 24/30 = 0.8 per figure (above 6: no caption revision);
/// - FCI: 7, 7, 7 -> 21/30 = 0.7 per figure;
/// - MC: layout 8, variety `variety`, a balanced topic with 0 image and 1 chart
///   sub-types (one kind present, fewer than 3 sub-types: band 3-4);
/// - everything else: the schema's default answer.
struct Fixed {
    variety: i64,
    seen: Mutex<Vec<String>>,
}

impl Fixed {
    fn new(variety: i64) -> Arc<Self> {
        Arc::new(Self {
            variety,
            seen: Mutex::new(Vec::new()),
        })
    }
    /// `report` of every request of `metric`.
    fn asked(&self, metric: &str) -> Vec<String> {
        let seen = self.seen.lock().unwrap();
        seen.iter()
            .filter_map(|s| s.strip_prefix(&format!("{metric} ")))
            .map(str::to_string)
            .collect()
    }
}

impl Judge for Fixed {
    fn ask(&self, request: JudgeRequest) -> BoxFuture<'_, Result<JudgeAnswer, JudgeError>> {
        let mut v = default_answer(&request.schema);
        let set_all = |v: &mut Value, f: &dyn Fn(usize) -> i64| {
            if let Some(scores) = v["scores"].as_object_mut() {
                for (i, (_, s)) in scores.iter_mut().enumerate() {
                    *s = json!(f(i));
                }
            }
        };
        match request.metric.as_str() {
            "chart_quality" => {
                // Keys in schema order are alphabetical here; any 7 of 10 pass.
                set_all(&mut v, &|i| i64::from(i < 7));
            }
            "figure_caption_quality" => set_all(&mut v, &|_| 8),
            "figure_context_integration" => set_all(&mut v, &|_| 7),
            "multimodal_composition" => {
                v["topic_category"] = json!("balanced");
                v["image_subtypes"] = json!(0);
                v["chart_subtypes"] = json!(1);
                v["scores"]["layout_quantity_appropriateness"] = json!(8);
                v["scores"]["variety_richness"] = json!(self.variety);
            }
            _ => {}
        }
        self.seen
            .lock()
            .unwrap()
            .push(format!("{} {}", request.metric, request.report));
        Box::pin(async move { Ok(stubs::answer(v, "fixed", 0)) })
    }
}

/// One chart with a caption and a sentence pointing at it, citing no source.
const ONE_CHART: &str = "# Capacity\n\n\
Rooftop capacity grew every year of the period.\n\n\
<figure>\n  <img src=\"charts/capacity.png\" alt=\"Line chart of rooftop capacity\">\n  \
<figcaption>Figure 1: Rooftop capacity by year.</figcaption>\n</figure>\n\n\
As Figure 1 shows, growth was steady.\n";

const TEXT_ONLY: &str = "# Capacity\n\n\
Rooftop capacity grew every year of the period, and costs fell.\n";

/// Two figures, neither of which exists on disk.
const ALL_BROKEN: &str = "# Capacity\n\n\
Rooftop capacity grew every year of the period.\n\n\
![Photo of a rooftop array](images/missing.png)\n\n\
Figure 1: A rooftop array.\n\n\
![Bar chart of capacity](charts/missing.png)\n\n\
Figure 2: Capacity by year.\n";

/// Writes each `(system, task, text)` report (with `charts/capacity.png` beside
/// it) and their tasks; returns the jobs.
fn jobs(dir: &Path, reports: &[(&str, &str, &str)]) -> Vec<(ReportJob, Option<Task>)> {
    let chart = common::examples().join("system-a/ex001/charts/solar_capacity.png");
    let mut tasks = Vec::new();
    let mut out = Vec::new();
    for (system, task, text) in reports {
        let folder = dir.join("reports").join(system).join(task);
        std::fs::create_dir_all(folder.join("charts")).unwrap();
        std::fs::copy(&chart, folder.join("charts/capacity.png")).unwrap();
        std::fs::write(folder.join("report.md"), text).unwrap();
        let task_json = json!({"id": task, "query": "Brief a city on rooftop capacity.",
                               "checklist": {"Trends": ["Does the report describe growth?"]}});
        if !tasks.contains(&task_json) {
            tasks.push(task_json);
        }
        out.push((
            system.to_string(),
            task.to_string(),
            folder.join("report.md"),
        ));
    }
    let tasks_path = dir.join("tasks.json");
    std::fs::write(&tasks_path, Value::Array(tasks).to_string()).unwrap();
    let tasks = tvir_engine::load_tasks(&tasks_path).unwrap();
    out.into_iter()
        .map(|(system, task, path)| {
            let t = tasks[&task].clone();
            let job = ReportJob {
                system,
                folder: task,
                path,
            };
            (job, Some(t))
        })
        .collect()
}

fn evaluate(
    judge: Arc<dyn Judge>,
    rubrics: RubricSet,
    jobs: Vec<(ReportJob, Option<Task>)>,
) -> Vec<ReportRecord> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let pages: Arc<dyn Pages> = Arc::new(stubs::TextPages(|_: &str| String::new()));
    let settings = EvalSettings {
        judge_model: "fixed".into(),
        ..EvalSettings::default()
    };
    let engine = Engine::new(Arc::new(rubrics), Some(judge), Some(pages), settings);
    rt.block_on(engine.evaluate_all(jobs, &|_| {}))
}

fn find<'a>(records: &'a [ReportRecord], system: &str, task: &str) -> &'a ReportRecord {
    records
        .iter()
        .find(|r| r.system == system && r.task_id == task)
        .unwrap()
}

fn score(r: &ReportRecord, metric: &str) -> f64 {
    r.metrics[metric]
        .score
        .unwrap_or_else(|| panic!("{metric}: {:?}", r.metrics[metric]))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn a_text_only_report_counts_as_zero_in_its_systems_va_and_overall() {
    let dir = tempfile::tempdir().unwrap();
    let jobs = jobs(
        dir.path(),
        &[("sys", "t1", ONE_CHART), ("sys", "t2", TEXT_ONLY)],
    );
    let records = evaluate(Fixed::new(4), RubricSet::builtin().unwrap(), jobs);
    let (a, b) = (find(&records, "sys", "t1"), find(&records, "sys", "t2"));
    // t1 by hand: CQ 7/10 = 0.7; FQ = CQ = 0.7 (no image); FCQ 24/30 = 0.8;
    // FCI 21/30 = 0.7; CSC 0 (the chart cites no source); MC (8 + 4)/20 = 0.6.
    // VA = (0.7 + 0.8 + 0.7 + 0 + 0.6) / 5 = 2.8 / 5 = 0.56.
    for (m, want) in [
        ("chart_quality", 0.7),
        ("figure_quality", 0.7),
        ("figure_caption_quality", 0.8),
        ("figure_context_integration", 0.7),
        ("chart_source_consistency", 0.0),
        ("multimodal_composition", 0.6),
    ] {
        assert!(close(score(a, m), want), "{m} = {}", score(a, m));
    }
    assert!(close(a.va.unwrap(), 0.56), "{:?}", a.va);
    // t2: no figure, every visual metric 0, VA 0, Overall = TA / 2.
    assert_eq!(b.va, Some(0.0));
    assert!(close(b.overall.unwrap(), b.ta.unwrap() / 2.0));
    // No fact: 0 effective citations, +0 (an empty f64 sum is -0, printed "-0.00").
    let aec = b.effective_citations.unwrap();
    assert!(aec == 0.0 && aec.is_sign_positive(), "{aec:?}");
    for r in &records {
        output::write_report(&dir.path().join("out"), r).unwrap();
    }
    let tree = load_eval_tree(&dir.path().join("out")).unwrap();
    let s = aggregate::summarize_tree(&tree, &Default::default(), None);
    let sys = &s.judges[0].systems[0];
    // System VA = (0.56 + 0) / 2 = 0.28 (the former rule: 0.56, t2 left out).
    assert!(close(sys.va.mean.unwrap(), 0.28), "{:?}", sys.va);
    // System Overall = ((TA1 + 0.56) / 2 + TA2 / 2) / 2.
    let overall = ((a.ta.unwrap() + 0.56) / 2.0 + b.ta.unwrap() / 2.0) / 2.0;
    assert!(
        close(sys.overall.mean.unwrap(), overall),
        "{:?}",
        sys.overall
    );
    assert_eq!(sys.text_only_reports, 1);
    assert!(sys.not_evaluated.is_empty());
}

#[test]
fn a_report_whose_every_figure_is_broken_is_still_judged_on_mc() {
    let dir = tempfile::tempdir().unwrap();
    let jobs = jobs(dir.path(), &[("sys", "t1", ALL_BROKEN)]);
    let judge = Fixed::new(4);
    let records = evaluate(judge.clone(), RubricSet::builtin().unwrap(), jobs);
    let r = &records[0];
    assert_eq!(r.figure_count(), 2, "{:?}", r.units);
    // One MC call; its answer scores (8 + 4) / 20 = 0.6 (the former rule: 0, no call).
    assert_eq!(judge.asked("multimodal_composition").len(), 1);
    let mc: Vec<_> = r
        .units
        .iter()
        .filter(|u| u.metric == "multimodal_composition")
        .collect();
    assert_eq!(mc.len(), 1);
    assert_eq!(mc[0].status, UnitStatus::Scored);
    assert!(mc[0].detail["rule"].is_null(), "{}", mc[0].detail);
    assert!(close(score(r, "multimodal_composition"), 0.6));
}

#[test]
fn mc_band_judge_lets_the_variety_score_stand() {
    // Variety 9 where the answer's counts give the band 3-4.
    let run = |judge_applies: bool| {
        let dir = tempfile::tempdir().unwrap();
        let jobs = jobs(dir.path(), &[("sys", "t1", ONE_CHART)]);
        let mut rubrics = RubricSet::builtin().unwrap();
        if judge_applies {
            rubrics.leave_bands_to_the_judge();
        }
        let records = evaluate(Fixed::new(9), rubrics, jobs);
        score(&records[0], "multimodal_composition")
    };
    // Ours: 9 moved to the band's end, 4: (8 + 4) / 20 = 0.6.
    assert!(close(run(false), 0.6));
    // The reference's (`--mc-band judge`): (8 + 9) / 20 = 0.85.
    assert!(close(run(true), 0.85));
}

#[test]
fn a_system_with_no_figure_anywhere_is_not_evaluated_on_va_and_overall_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let jobs = jobs(
        dir.path(),
        &[
            ("visual", "t1", ONE_CHART),
            ("textual", "t1", TEXT_ONLY),
            ("textual", "t2", TEXT_ONLY),
        ],
    );
    let records = evaluate(Fixed::new(4), RubricSet::builtin().unwrap(), jobs);
    let out = dir.path().join("out");
    for r in &records {
        output::write_report(&out, r).unwrap();
    }
    let why = "no figure in any of its 2 reports";
    let formats = |format: &str| {
        let (code, stdout, stderr) = tvir_status(&[
            "summarize",
            out.to_str().unwrap(),
            "--format",
            format,
            "--bootstrap",
            "0",
        ]);
        assert_eq!(code, 0, "{format}: {stderr}");
        stdout
    };
    let json: Value = serde_json::from_str(&formats("json")).unwrap();
    let systems = json["judges"][0]["systems"].as_array().unwrap();
    let textual = systems.iter().find(|s| s["system"] == "textual").unwrap();
    assert!(textual["va"]["mean"].is_null() && textual["overall"]["mean"].is_null());
    assert!(textual["ta"]["mean"].is_number());
    for level in ["va", "overall"] {
        let r = textual["not_evaluated"][level].as_str().unwrap_or_default();
        assert!(r.contains(why), "{level}: {textual}");
    }
    let visual = systems.iter().find(|s| s["system"] == "visual").unwrap();
    assert!(visual["va"]["mean"].is_number(), "{visual}");
    for format in ["table", "md"] {
        let text = formats(format);
        assert!(text.contains("not evaluated"), "{format}:\n{text}");
        assert!(text.contains(why), "{format}:\n{text}");
    }
    // CSV: the text-only system's row carries the reason in its `not_evaluated`
    // column, naming both levels; the visual system's column is empty.
    let csv = formats("csv");
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let header = reader.headers().unwrap().clone();
    let column = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no {name} column: {header:?}"))
    };
    let (system_col, reason_col) = (column("system"), column("not_evaluated"));
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    let cell = |system: &str| -> String {
        let row = rows
            .iter()
            .find(|r| &r[system_col] == system)
            .unwrap_or_else(|| panic!("no {system} row:\n{csv}"));
        row[reason_col].to_string()
    };
    let textual_reason = cell("textual");
    assert!(textual_reason.contains(why), "{textual_reason}\n{csv}");
    let words: Vec<String> = textual_reason
        .split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .collect();
    for level in ["va", "overall"] {
        assert!(
            words.iter().any(|w| w == level),
            "{level} not named: {textual_reason}"
        );
    }
    assert_eq!(cell("visual"), "", "{csv}");
    let html = common::cli::summary_pages(&formats("html"));
    assert!(html.contains(why), "html lacks the reason");

    // The same records made under `--protocol reference`: the system levels come
    // from per-metric means, as the reference's summary computes them, where every
    // visual metric of the text-only system is a mean of zeros: VA 0 and Overall
    // TA / 2 (the paper's rule is the default only).
    let reference = dir.path().join("out-reference");
    for r in &records {
        let mut r = r.clone();
        r.protocol = Some(tvir_engine::ProtocolRecord {
            name: "reference".into(),
            settings: [("aggregates", "present"), ("rounding", "reference")]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            overrides: Vec::new(),
        });
        output::write_report(&reference, &r).unwrap();
    }
    let (code, stdout, stderr) = tvir_status(&[
        "summarize",
        reference.to_str().unwrap(),
        "--format",
        "json",
        "--bootstrap",
        "0",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let json: Value = serde_json::from_str(&stdout).unwrap();
    let systems = json["judges"][0]["systems"].as_array().unwrap();
    let textual = systems.iter().find(|s| s["system"] == "textual").unwrap();
    assert!(textual["levels_from"].is_string(), "{textual}");
    assert_eq!(
        textual["metrics"]["figure_quality"]["mean"].as_f64(),
        Some(0.0),
        "{textual}"
    );
    let ta = textual["ta"]["mean"]
        .as_f64()
        .expect("TA of the text-only system");
    assert_eq!(textual["va"]["mean"].as_f64(), Some(0.0), "{textual}");
    let overall = textual["overall"]["mean"].as_f64().expect("Overall");
    assert!(
        (overall - ta / 2.0).abs() <= 5e-5,
        "Overall {overall} is not TA / 2 = {}",
        ta / 2.0
    );
}

/// A 127.0.0.1 server that accepts connections and never answers: a fetch of
/// anything on it times out, whatever the machine's load.
async fn silent_server() -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    (addr, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_figure_that_times_out_fails_alone() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, server) = silent_server().await;
    let folder = dir.path().join("reports/sys/t1");
    std::fs::create_dir_all(folder.join("images")).unwrap();
    std::fs::create_dir_all(folder.join("charts")).unwrap();
    let ex = common::examples().join("system-a/ex001");
    std::fs::copy(ex.join("images/rooftops.png"), folder.join("images/a.png")).unwrap();
    std::fs::copy(
        ex.join("charts/solar_capacity.png"),
        folder.join("charts/c.png"),
    )
    .unwrap();
    let report = format!(
        "# Capacity\n\nRooftop capacity grew every year.\n\n\
         ![Photo of a suburb](images/a.png)\n\nFigure 1: A suburb.\n\n\
         ![Line chart of capacity](charts/c.png)\n\nFigure 2: Capacity by year.\n\n\
         ![Photo of an array](http://{addr}/array.png)\n\nFigure 3: An array.\n"
    );
    std::fs::write(folder.join("report.md"), report).unwrap();
    let tasks = dir.path().join("tasks.json");
    std::fs::write(
        &tasks,
        json!([{"id": "t1", "query": "Capacity.", "checklist": {"A": ["Growth?"]}}]).to_string(),
    )
    .unwrap();
    let mock = MockJudge::start(MockConfig::default()).await;
    let eval = |out: &Path| {
        let mut cmd = tvir_command();
        cmd.args(["eval", "--reports"])
            .arg(dir.path().join("reports"))
            .arg("--tasks")
            .arg(&tasks)
            .arg("--out")
            .arg(out)
            .arg("--cache")
            .arg(dir.path().join("cache.sqlite"))
            .args([
                "--base-url",
                &mock.base_url(),
                "--judge-model",
                "mock-model",
            ])
            .args([
                "--assume-vision",
                "--quiet",
                "--no-browser",
                "--allow-private",
            ])
            .args(["--fetch-timeout", "1", "--connect-timeout", "1"])
            .args(["--fetch-attempts", "1"]);
        output_async(cmd)
    };
    let out = dir.path().join("out");
    let run = eval(&out).await;
    assert!(
        run.status.code().is_some_and(|c| c <= 1),
        "{}",
        describe(&run)
    );
    let r = read_json(&out.join("sys/t1/mock-model/report.json"));
    let units: Vec<&Value> = r["units"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["metric"] == "figure_caption_quality")
        .collect();
    assert_eq!(units.len(), 3, "{}", r["units"]);
    let remote: Vec<&&Value> = units.iter().filter(|u| u["status"] != "scored").collect();
    assert_eq!(remote.len(), 1, "only the remote figure: {units:?}");
    // Left out (skipped: not fetched in this run) for the time-out, and says so
    // naming the figure's address.
    assert_eq!(remote[0]["status"], "skipped", "{}", remote[0]);
    let reason = remote[0]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("timed out"), "{}", remote[0]);
    assert!(reason.contains(&addr.to_string()), "{}", remote[0]);
    // The mock judge answers every dimension 10: each scored figure 30/30 = 1,
    // FCQ = mean of the two scored = 1 (the former rule: not evaluated).
    let fcq = &r["metrics"]["figure_caption_quality"];
    assert_eq!(fcq["score"].as_f64(), Some(1.0), "{fcq}");
    assert_eq!(fcq["scored_item_count"], 2, "{fcq}");
    assert!(
        (fcq["coverage"].as_f64().unwrap() - 2.0 / 3.0).abs() < 1e-9,
        "{fcq}"
    );
    assert!(fcq["note"].is_string(), "the coverage is said: {fcq}");
    // IQ: the local image scored, the remote one left out with its reason.
    assert!(
        r["metrics"]["image_quality"]["score"].is_number(),
        "{}",
        r["metrics"]
    );
    assert!(r["va"].is_number(), "{}", r["va"]);

    server.abort();
    mock.shutdown().await;
}
