//! `--extraction judge|auto` end to end: the real `JudgeClient` talking HTTP to the
//! in-process mock judge, whose answers to the two extraction rubrics are scripted
//! here from the window text it is sent. Covers the answer being used, validation
//! failures (invented facts, unknown labels) keeping the rules parse, window merging
//! on a long report, the cache (a re-run costs no call), `auto` leaving `ok` reports
//! alone, and dry-run counting.

use crate::common;

use std::path::Path;
use std::sync::Arc;

use common::judge::{client_engine, judge_client, message_text, mock_config, schema_name};
use common::report_fixture as fixture;
use serde_json::{json, Value};
use tvir_engine::record::ReportRecord;
use tvir_engine::{EvalSettings, ExtractionMode, JudgeMode, ReportJob};
use tvir_report::ExtractionMethod;
use tvir_store::Store;
use tvir_testing::mock_judge::{MockConfig, MockJudge, Responder};

/// The window between the prompt's `<<<` and `>>>` (in the first user message, after
/// the system message).
fn window(body: &Value) -> String {
    let t = message_text(&body["messages"][1]);
    let start = t.find("<<<\n").map_or(0, |i| i + 4);
    let end = t[start..].find("\n>>>").map_or(t.len(), |i| start + i);
    t[start..end].to_string()
}

/// Scripted extraction: every line of the window holding `[N]` markers is one fact
/// citing them (copied verbatim); reference lines `[N] Title. URL` are entries.
/// `mangle` may then spoil the answer. Other rubrics get the schema default.
fn responder(mangle: fn(&str, Value) -> Value) -> Responder {
    let marker = regex::Regex::new(r"\[(\d+)\]").unwrap();
    let entry = regex::Regex::new(r"^\[(\d+)\] (.*?) (https?://\S+)$").unwrap();
    Arc::new(move |body: &Value| {
        let name = schema_name(body).to_string();
        let win = window(body);
        let answer = match name.as_str() {
            "extract_facts" => {
                // A line of bare markers cites the text line before it.
                let mut facts: Vec<Value> = Vec::new();
                let mut last_text: Option<&str> = None;
                for l in win.lines() {
                    if entry.is_match(l) || l.trim().is_empty() {
                        continue;
                    }
                    let idxs: Vec<String> =
                        marker.captures_iter(l).map(|c| c[1].to_string()).collect();
                    let bare = marker.replace_all(l, "");
                    let bare = bare.trim_matches(|c: char| c == ',' || c.is_whitespace());
                    match (idxs.is_empty(), bare.is_empty(), last_text) {
                        (false, true, Some(prev)) => {
                            facts.push(json!({"fact": prev, "ref_idxs": idxs}))
                        }
                        (false, false, _) => facts.push(json!({"fact": l, "ref_idxs": idxs})),
                        _ => {}
                    }
                    if !bare.is_empty() {
                        last_text = Some(l);
                    }
                }
                json!({"facts": facts})
            }
            "extract_references" => {
                let refs: Vec<Value> = win
                    .lines()
                    .filter_map(|l| entry.captures(l))
                    .map(|c| json!({"idx": &c[1], "title": &c[2], "url": &c[3]}))
                    .collect();
                json!({"references": refs})
            }
            _ => {
                let schema = tvir_testing::mock_judge::request_schema(body).unwrap();
                return tvir_testing::mock_judge::default_answer(&schema);
            }
        };
        mangle(&name, answer)
    })
}

fn keep(_: &str, v: Value) -> Value {
    v
}

async fn run(
    mock: &MockJudge,
    store: &Store,
    report: &Path,
    extraction: ExtractionMode,
    mode: JudgeMode,
) -> ReportRecord {
    let client = judge_client(mock_config(mock, "mock-model", 4), Some(store));
    let engine = client_engine(
        client,
        EvalSettings {
            mode,
            extraction,
            ..common::judge::settings("mock-model")
        },
    );
    let job = ReportJob {
        system: "sys".into(),
        folder: "t1".into(),
        path: report.to_path_buf(),
    };
    let mut records = engine.evaluate_report(&job, None).await;
    assert_eq!(records.len(), 1);
    records.remove(0)
}

async fn mock_with(mangle: fn(&str, Value) -> Value) -> MockJudge {
    MockJudge::start(MockConfig {
        responder: Some(responder(mangle)),
        ..MockConfig::default()
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_uses_the_judge_for_a_suspect_parse_and_a_rerun_is_cached() {
    let mock = mock_with(keep).await;
    let store = Store::in_memory().unwrap();
    let report = fixture("check-unattached");
    let rec = run(
        &mock,
        &store,
        &report,
        ExtractionMode::Auto,
        JudgeMode::Judge,
    )
    .await;
    let e = rec.extraction.as_ref().unwrap();
    assert!(e.is_suspect(), "{e:?}");
    assert_eq!(e.method, ExtractionMethod::Judge, "{e:?}");
    let j = e.judge.as_ref().unwrap();
    assert_eq!(j.status, "used");
    assert_eq!(j.references_from.as_deref(), Some("rules"));
    // The scripted judge attaches each line of bare markers to the line before it
    // (the last row of each table), plus the one sentence the rules found too.
    assert_eq!(j.facts, 4, "{j:?}");
    assert_eq!(mock.metric_count("extract_facts"), 1);
    assert_eq!(mock.metric_count("extract_references"), 0);
    // The judge's facts are what Citation Support judged.
    let cs: Vec<&str> = rec
        .units
        .iter()
        .filter(|u| u.metric == "citation_support")
        .filter_map(|u| u.detail["fact"].as_str())
        .collect();
    assert!(cs.iter().any(|f| f.contains("Western Pacific")), "{cs:?}");
    assert!(rec.usage.calls >= 1);

    // Same report again over the same cache: no new extraction call.
    let before = mock.metric_count("extract_facts");
    let again = run(
        &mock,
        &store,
        &report,
        ExtractionMode::Auto,
        JudgeMode::Judge,
    )
    .await;
    assert_eq!(mock.metric_count("extract_facts"), before);
    assert_eq!(again.extraction, rec.extraction);
    mock.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_leaves_an_ok_parse_alone_and_rules_never_asks() {
    let mock = mock_with(keep).await;
    let store = Store::in_memory().unwrap();
    let rec = run(
        &mock,
        &store,
        &fixture("check-ok"),
        ExtractionMode::Auto,
        JudgeMode::Judge,
    )
    .await;
    let e = rec.extraction.unwrap();
    assert!(!e.is_suspect(), "{e:?}");
    assert_eq!(e.method, ExtractionMethod::Rules);
    assert!(e.judge.is_none());
    let rec = run(
        &mock,
        &store,
        &fixture("check-unattached"),
        ExtractionMode::Rules,
        JudgeMode::Judge,
    )
    .await;
    assert!(rec.extraction.unwrap().judge.is_none());
    assert_eq!(mock.metric_count("extract_facts"), 0);
    assert_eq!(mock.metric_count("extract_references"), 0);
    mock.shutdown().await;
}

fn invent_fact(name: &str, mut v: Value) -> Value {
    if name == "extract_facts" {
        v["facts"]
            .as_array_mut()
            .unwrap()
            .push(json!({"fact": "A sentence the report never wrote.", "ref_idxs": ["1"]}));
    }
    v
}

fn unknown_label(name: &str, mut v: Value) -> Value {
    if name == "extract_facts" {
        v["facts"][0]["ref_idxs"] = json!(["99"]);
    }
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_that_fail_validation_keep_the_rules_parse_and_the_flag() {
    for (mangle, needle) in [
        (invent_fact as fn(&str, Value) -> Value, "not a span"),
        (unknown_label, "[99]"),
    ] {
        let mock = mock_with(mangle).await;
        let store = Store::in_memory().unwrap();
        let report = fixture("check-unattached");
        let rules = tvir_report::load(&report).unwrap();
        let rec = run(
            &mock,
            &store,
            &report,
            ExtractionMode::Judge,
            JudgeMode::Judge,
        )
        .await;
        let e = rec.extraction.unwrap();
        assert!(e.is_suspect());
        assert_eq!(e.method, ExtractionMethod::Rules);
        let j = e.judge.unwrap();
        assert_eq!(j.status, "rejected");
        assert!(j.reason.as_deref().unwrap().contains(needle), "{j:?}");
        // CS judged exactly the rules facts.
        let cs = rec
            .units
            .iter()
            .filter(|u| u.metric == "citation_support")
            .count();
        assert_eq!(cs, rules.facts.len());
        mock.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_reports_are_windowed_and_merged_and_bad_lists_come_from_the_judge() {
    // A long report whose list the rules parse cannot see (it sits in a code block,
    // so every marker points nowhere): the judge gives the list, then the facts,
    // window by window.
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("# A long report\n\n");
    for i in 1..=300 {
        let n = i % 30 + 1;
        text.push_str(&format!(
            "Paragraph {i} states a finding about topic {i} in plain words [{n}].\n\n"
        ));
    }
    text.push_str("## Sources consulted\n\n```\n");
    for n in 1..=30 {
        text.push_str(&format!("[{n}] Source {n}. https://s{n}.example.org/p\n"));
    }
    text.push_str("```\n");
    std::fs::write(dir.path().join("report.md"), &text).unwrap();
    let mock = mock_with(keep).await;
    let store = Store::in_memory().unwrap();
    let rec = run(
        &mock,
        &store,
        dir.path(),
        ExtractionMode::Judge,
        JudgeMode::Judge,
    )
    .await;
    let e = rec.extraction.unwrap();
    let j = e.judge.clone().unwrap();
    assert!(e.is_suspect(), "{e:?}");
    assert_eq!(j.status, "used", "{j:?}");
    assert_eq!(j.references_from.as_deref(), Some("judge"));
    assert_eq!(j.references, 30);
    assert!(j.windows >= 2, "{j:?}");
    assert_eq!(mock.metric_count("extract_references") as usize, j.windows);
    assert_eq!(mock.metric_count("extract_facts") as usize, j.windows);
    // Overlapping windows see some paragraphs twice; merged, each appears once.
    assert_eq!(j.facts, 300, "{j:?}");
    assert_eq!(e.method, ExtractionMethod::Judge);
    mock.shutdown().await;
}

/// A dry run builds the extraction requests without sending them: the outcome counts
/// them (`calls`, one per window: here the rules list is usable, so fact windows
/// only, and this short report is one window) and they are in the run's request
/// count, exactly that many more than a dry run with rules extraction.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_counts_extraction_requests() {
    let mock = mock_with(keep).await;
    let store = Store::in_memory().unwrap();
    let report = fixture("check-unattached");
    let mut built = Vec::new();
    let mut records = Vec::new();
    for extraction in [ExtractionMode::Rules, ExtractionMode::Judge] {
        let client = judge_client(mock_config(&mock, "mock-model", 4), Some(&store));
        let engine = client_engine(
            client,
            EvalSettings {
                mode: JudgeMode::DryRun,
                extraction,
                ..common::judge::settings("mock-model")
            },
        );
        let job = ReportJob {
            system: "sys".into(),
            folder: "t1".into(),
            path: report.clone(),
        };
        let mut recs = engine.evaluate_report(&job, None).await;
        assert_eq!(recs.len(), 1);
        records.push(recs.remove(0));
        built.push(
            engine
                .stats
                .requests
                .load(std::sync::atomic::Ordering::Relaxed),
        );
    }
    assert!(records[0].extraction.as_ref().unwrap().judge.is_none());
    let j = records[1]
        .extraction
        .as_ref()
        .unwrap()
        .judge
        .clone()
        .unwrap();
    assert_eq!(j.status, "skipped");
    assert_eq!(j.references_from.as_deref(), Some("rules"));
    assert_eq!((j.windows, j.calls), (1, 1), "{j:?}");
    assert_eq!(built[1], built[0] + 1, "requests built: {built:?}");
    assert_eq!(mock.requests(), 0);
    mock.shutdown().await;
}
