//! Batch waves and batch files, end to end through the CLI and the mock judge:
//! - `--extraction auto`: a report the self-check calls suspect gets its extraction
//!   requests in the first exported wave and no Citation Support request for the
//!   rules parse's facts; the judge's facts are judged in the next wave; the scores
//!   equal a live run's that received the same answers;
//! - batch files put Citation Support requests that share sources next to each
//!   other, in canonical source order (prefix caches).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;

use common::cli::{describe as text, output_async, tvir_command};
use serde_json::{json, Value};
use tvir_testing::mock_judge::{default_answer, request_schema, MockConfig, MockJudge};

/// The report under test: `DIR/input.md` when the test wrote one, else a report
/// whose table rows are cited by marker lines after the tables (the self-check
/// calls its rules parse suspect).
fn report_text(dir: &Path) -> String {
    let own = dir.join("input.md");
    let p = if own.exists() {
        own
    } else {
        common::report_fixture("check-unattached").join("report.md")
    };
    std::fs::read_to_string(p).unwrap()
}

// Five facts over three sources, cited in varying order.
use common::WIND_AND_WATER as LAYOUT_REPORT;

/// Pages for the report's references (so Citation Support has text to judge).
fn sources_file(dir: &Path) -> PathBuf {
    let path = dir.join("sources.jsonl");
    let lines: Vec<String> = report_text(dir)
        .lines()
        .filter_map(|l| {
            l.split_whitespace()
                .last()
                .filter(|w| w.starts_with("https://"))
        })
        .map(|u| json!({"url": u, "text": format!("Page text of {u}.")}).to_string())
        .collect();
    assert!(!lines.is_empty());
    std::fs::write(&path, lines.join("\n")).unwrap();
    path
}

fn bench_root(dir: &Path) -> (PathBuf, PathBuf) {
    let root = dir.join("reports");
    std::fs::create_dir_all(root.join("sys/t1")).unwrap();
    std::fs::write(root.join("sys/t1/report.md"), report_text(dir)).unwrap();
    let tasks = dir.join("tasks.json");
    std::fs::write(
        &tasks,
        json!([{"id": "t1", "query": "Write about ocean heat.",
                "checklist": {"Content": ["Does it cover ocean heat?"]}}])
        .to_string(),
    )
    .unwrap();
    (root, tasks)
}

/// The scripted extraction judge: each table's last row cited by the marker line
/// after it, and the sentence with its marker; every other rubric answers from its schema.
fn mock_config() -> MockConfig {
    MockConfig {
        responder: Some(Arc::new(|body: &Value| {
            match common::judge::schema_name(body) {
                "extract_facts" => json!({"facts": [
                    {"fact": "| Below 700 m | the rest |", "ref_idxs": ["1", "2"]},
                    {"fact": "| Western Pacific | rising |", "ref_idxs": ["3"]},
                    {"fact": "| Southern reefs | shrinking |", "ref_idxs": ["4", "5"]},
                    {"fact": "Deep-ocean warming is slower but will continue for centuries after emissions stop [6].", "ref_idxs": ["6"]}
                ]}),
                // No two facts are duplicates (each keeps its CS request).
                "fact_dedup" => json!({"justification": "different claims", "duplicate": false}),
                _ => default_answer(&request_schema(body).unwrap()),
            }
        })),
        ..MockConfig::default()
    }
}

/// `tvir eval --extraction auto` of the test's bench against `mock`, with `extra`.
async fn tvir_async(dir: &Path, mock: &MockJudge, extra: &[&str]) -> Output {
    let (root, tasks) = bench_root(dir);
    let mut cmd = tvir_command();
    cmd.args(["eval", "--reports"])
        .arg(&root)
        .arg("--tasks")
        .arg(&tasks)
        .arg("--out")
        .arg(dir.join("out"))
        .arg("--cache")
        .arg(dir.join("cache.sqlite"))
        .arg("--sources")
        .arg(sources_file(dir))
        .args(["--offline", "--quiet", "--extraction", "auto"])
        .args([
            "--base-url",
            &mock.base_url(),
            "--judge-model",
            "mock-model",
        ])
        .args(extra);
    output_async(cmd).await
}

/// Rubric names (`json_schema` names) of every request line in `dir`.
fn wave_metrics(dir: &Path) -> Vec<String> {
    let mut names = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        for line in std::fs::read_to_string(&p).unwrap().lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            names.push(
                v.pointer("/body/response_format/json_schema/name")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
                    .to_string(),
            );
        }
    }
    names
}

/// Each line's body answered by the mock's live endpoint, as a result file.
async fn answer_offline(mock: &MockJudge, dir: &Path, results: &Path) {
    let http = reqwest::Client::new();
    let mut out = String::new();
    for e in std::fs::read_dir(dir).unwrap() {
        for line in std::fs::read_to_string(e.unwrap().path()).unwrap().lines() {
            let req: Value = serde_json::from_str(line).unwrap();
            let body = common::judge::answer_live(&http, mock, &req["body"]).await;
            out.push_str(
                &json!({"custom_id": req["custom_id"], "error": null,
                        "response": {"status_code": 200, "body": body}})
                .to_string(),
            );
            out.push('\n');
        }
    }
    std::fs::write(results, out).unwrap();
}

/// The scores of the report (report.json without usage and cost).
fn scores(out: &Path) -> Value {
    let report = common::outputs::read_json(&out.join("sys/t1/mock-model/report.json"));
    let mut v = common::outputs::without_timing(report);
    v.as_object_mut().unwrap().remove("usage");
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suspect_reports_extract_in_wave_one_and_judge_their_facts_in_wave_two() {
    let live_dir = tempfile::tempdir().unwrap();
    let live_mock = MockJudge::start(mock_config()).await;
    let o = tvir_async(live_dir.path(), &live_mock, &[]).await;
    assert!(
        live_dir.path().join("out/summary.json").exists(),
        "{}",
        text(&o)
    );
    let live = scores(&live_dir.path().join("out"));
    assert_eq!(live["extraction"]["judge"]["status"], "used", "{live}");
    let live_cs = live_mock.metric_count("citation_support");
    assert!(live_cs >= 2, "the judge's facts are judged live: {live_cs}");

    let mock = MockJudge::start(mock_config()).await;
    let dir = tempfile::tempdir().unwrap();
    let wave1 = dir.path().join("wave1");
    let o = tvir_async(
        dir.path(),
        &mock,
        &["--batch-export", wave1.to_str().unwrap()],
    )
    .await;
    assert!(o.status.success(), "{}", text(&o));
    let first = wave_metrics(&wave1);
    assert_eq!(
        first.iter().filter(|m| *m == "extract_facts").count(),
        1,
        "the extraction request goes in wave 1: {first:?}"
    );
    assert!(
        !first
            .iter()
            .any(|m| m == "citation_support" || m == "fact_dedup"),
        "no fact unit before the facts are known: {first:?}"
    );
    assert!(
        first.iter().any(|m| m == "writing_quality"),
        "units independent of the facts go in wave 1: {first:?}"
    );

    let results1 = dir.path().join("results1.jsonl");
    answer_offline(&mock, &wave1, &results1).await;
    let wave2 = dir.path().join("wave2");
    let o = tvir_async(
        dir.path(),
        &mock,
        &[
            "--batch-import",
            results1.to_str().unwrap(),
            "--batch-export",
            wave2.to_str().unwrap(),
        ],
    )
    .await;
    assert!(o.status.success(), "{}", text(&o));
    let second = wave_metrics(&wave2);
    assert_eq!(
        second.iter().filter(|m| *m == "citation_support").count() as u64,
        live_cs,
        "wave 2 judges the judge's facts: {second:?}"
    );
    assert!(!second.iter().any(|m| m == "extract_facts"), "{second:?}");

    // The remaining waves, then the scores: those of the live run.
    let mut imports = vec![dir.path().join("results2.jsonl")];
    answer_offline(&mock, &wave2, &imports[0]).await;
    for n in 3..8 {
        let wave = dir.path().join(format!("wave{n}"));
        let mut args = vec!["--batch-export".to_string(), wave.display().to_string()];
        args.push("--batch-import".into());
        args.extend(imports.iter().map(|p| p.display().to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = tvir_async(dir.path(), &mock, &args).await;
        if dir.path().join("out/summary.json").exists() {
            break;
        }
        assert!(o.status.success(), "{}", text(&o));
        let results = dir.path().join(format!("results{n}.jsonl"));
        answer_offline(&mock, &wave, &results).await;
        imports = vec![results];
    }
    let batch = scores(&dir.path().join("out"));
    assert_eq!(batch, live);
}

/// Reference numbers of the sources a CS request line shows, in prompt order.
fn cs_source_orders(dir: &Path) -> Vec<Vec<u32>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        for line in std::fs::read_to_string(&f).unwrap().lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            if v.pointer("/body/response_format/json_schema/name")
                != Some(&json!("citation_support"))
            {
                continue;
            }
            let user = v["body"]["messages"][1]["content"].as_str().unwrap();
            out.push(
                user.match_indices("--- source [")
                    .map(|(i, m)| {
                        let rest = &user[i + m.len()..];
                        rest[..rest.find(']').unwrap()].parse().unwrap()
                    })
                    .collect(),
            );
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_files_put_requests_sharing_sources_next_to_each_other() {
    let mock = MockJudge::start(mock_config()).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("input.md"), LAYOUT_REPORT).unwrap();
    let mut imports: Vec<PathBuf> = Vec::new();
    for n in 1..6 {
        let wave = dir.path().join(format!("wave{n}"));
        let mut args = vec!["--batch-export".to_string(), wave.display().to_string()];
        if !imports.is_empty() {
            args.push("--batch-import".into());
            args.extend(imports.iter().map(|p| p.display().to_string()));
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = tvir_async(dir.path(), &mock, &args).await;
        assert!(o.status.success(), "{}", text(&o));
        assert!(wave.exists(), "nothing exported: {}", text(&o));
        let orders = cs_source_orders(&wave);
        if !orders.is_empty() {
            // Canonical order inside each prompt ([2][1] -> 1, 2), and requests
            // sharing sources adjacent: [1,2] [1,2] [1,3] [3] [3].
            assert_eq!(
                orders,
                vec![vec![1, 2], vec![1, 2], vec![1, 3], vec![3], vec![3]]
            );
            return;
        }
        let results = dir.path().join(format!("results{n}.jsonl"));
        answer_offline(&mock, &wave, &results).await;
        imports = vec![results];
    }
    panic!("no wave held the CS requests");
}
