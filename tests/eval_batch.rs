//! `tvir eval --batch`, `--batch-export` and `--batch-import` end to end against the
//! in-process mock judge's Files and Batch API: a batch run writes the same bytes
//! as a live run that received the same answers; re-running after the process
//! ended between submission and collection re-attaches without resubmitting;
//! failed, expired and invalid lines are retried; an exported wave answered by an
//! independent runner imports cleanly; malformed result lines are reported by line
//! number and skipped.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Output;

use common::cli::{describe as text, eval_example_judged, output_async};
use common::judge::{answer_live, live_judge_calls};
use serde_json::{json, Value};
use tvir_testing::mock_batch::MockBatchConfig;
use tvir_testing::mock_judge::{MockConfig, MockJudge};

/// `tvir eval` of the example against `mock` as `model`, with `extra` arguments.
async fn tvir(out: &Path, cache: &Path, mock: &MockJudge, model: &str, extra: &[&str]) -> Output {
    let mut cmd = eval_example_judged(out, cache, &mock.base_url(), model);
    cmd.args(extra);
    output_async(cmd).await
}

/// A mock judge whose Batch API behaves as `batch` says.
async fn batch_mock(batch: MockBatchConfig) -> MockJudge {
    MockJudge::start(MockConfig {
        batch,
        ..MockConfig::default()
    })
    .await
}

/// `tvir eval --batch --batch-wait --batch-poll-secs 0` of the example against `mock`
/// as `model`, with `extra`, in a fresh folder: the folder, the output folder in it,
/// and the run.
async fn batch_wait_run(
    mock: &MockJudge,
    model: &str,
    extra: &[&str],
) -> (tempfile::TempDir, PathBuf, Output) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mut args = vec!["--batch", "--batch-wait", "--batch-poll-secs", "0"];
    args.extend(extra);
    let o = tvir(&out, &dir.path().join("cache.sqlite"), mock, model, &args).await;
    (dir, out, o)
}

/// `report.json` without its `timing` object (this process's stage times, checked to
/// be there), so two runs compare byte for byte on everything else.
fn mask_timing(bytes: &[u8]) -> Vec<u8> {
    let report = common::outputs::without_timing(serde_json::from_slice(bytes).unwrap());
    serde_json::to_vec_pretty(&report).unwrap()
}

/// Every output file except the journal and `run.json` (this process's counters and
/// timings), with `report.json`'s `timing` masked.
fn outputs(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let name = p.file_name().unwrap().to_string_lossy().to_string();
                if !matches!(
                    name.as_str(),
                    "judge-journal.jsonl.zst" | "judge-journal.texts.jsonl.zst" | "run.json"
                ) {
                    let bytes = std::fs::read(&p).unwrap();
                    let bytes = if name == "report.json" {
                        mask_timing(&bytes)
                    } else {
                        bytes
                    };
                    files.insert(p.strip_prefix(dir).unwrap().to_path_buf(), bytes);
                }
            }
        }
    }
    files
}

fn assert_same_outputs(live: &Path, batch: &Path) {
    let a = outputs(live);
    let b = outputs(batch);
    assert!(a.len() > 10, "live run wrote {} files", a.len());
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        b.keys().collect::<Vec<_>>(),
        "same files"
    );
    for (name, bytes) in &a {
        assert!(
            bytes == &b[name],
            "{} differs between the live and the batch run",
            name.display()
        );
    }
}

/// The same outputs apart from token usage and cost (a re-asked answer's usage
/// is that of the request that carried the re-ask).
fn assert_same_scores(live: &Path, batch: &Path) {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                m.remove("usage");
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let a = outputs(live);
    let b = outputs(batch);
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        b.keys().collect::<Vec<_>>(),
        "same files"
    );
    for (name, bytes) in &a {
        let (Ok(mut x), Ok(mut y)) = (
            serde_json::from_slice::<Value>(bytes),
            serde_json::from_slice::<Value>(&b[name]),
        ) else {
            continue;
        };
        strip(&mut x);
        strip(&mut y);
        assert!(
            x == y,
            "{} differs between the live and the batch run",
            name.display()
        );
    }
}

fn no_duplicates(ids: &[String]) -> bool {
    ids.iter().collect::<BTreeSet<_>>().len() == ids.len()
}

async fn live_run(model: &str) -> (tempfile::TempDir, Output) {
    let mock = MockJudge::start(MockConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = tvir(&out, &dir.path().join("cache.sqlite"), &mock, model, &[]).await;
    assert!(mock.requests() > 20, "{}", text(&o));
    assert_eq!(mock.batch_stats().batches_created, 0);
    (dir, o)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_wait_run_writes_the_same_bytes_as_a_live_run() {
    let (live, live_out) = live_run("mock-model").await;
    let mock = batch_mock(MockBatchConfig {
        polls_per_stage: 2,
        ..Default::default()
    })
    .await;
    let (_dir, out, o) = batch_wait_run(&mock, "mock-model", &[]).await;
    assert_eq!(o.status.code(), live_out.status.code(), "{}", text(&o));
    assert_eq!(
        live_judge_calls(&mock),
        0,
        "no live call in batch mode: {}",
        text(&o)
    );
    let stats = mock.batch_stats();
    // Wave 1 (FCQ, WQ/ADB/FLC, charts, ...), wave 2 (IA and MC after caption revision).
    assert!(stats.batches_created >= 2, "{stats:?}");
    assert!(
        no_duplicates(&stats.submitted),
        "a request was submitted twice"
    );
    assert!(text(&o).contains("batch: submitted"), "{}", text(&o));
    assert_same_outputs(&live.path().join("out"), &out);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rerunning_after_exit_reattaches_and_never_resubmits() {
    let (live, _) = live_run("mock-model").await;
    let mock = batch_mock(MockBatchConfig {
        polls_per_stage: 2,
        ..Default::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let cache = dir.path().join("cache.sqlite");
    let mut invocations = 0;
    let mut submitted_after_first = 0;
    loop {
        invocations += 1;
        assert!(invocations < 20, "the batch run never completed");
        let o = tvir(&out, &cache, &mock, "mock-model", &["--batch"]).await;
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let stdout = String::from_utf8_lossy(&o.stdout).to_string();
        if invocations == 1 {
            // Submitted, nothing written yet, the pending summary printed.
            assert!(stdout.contains("judge units pending"), "{stdout}");
            assert!(stdout.contains("batch: batch_mock0001"), "{stdout}");
            assert!(!out.join("summary.json").exists());
            submitted_after_first = mock.batch_stats().submitted.len();
            assert!(submitted_after_first > 0);
        }
        if invocations == 2 {
            // Still running at the provider: nothing new is submitted.
            assert_eq!(
                mock.batch_stats().submitted.len(),
                submitted_after_first,
                "{stdout}"
            );
        }
        if out.join("summary.json").exists() {
            break;
        }
    }
    let stats = mock.batch_stats();
    assert!(
        no_duplicates(&stats.submitted),
        "a request was submitted twice: {stats:?}"
    );
    assert_eq!(live_judge_calls(&mock), 0);
    assert_same_outputs(&live.path().join("out"), &out);
    // Once complete, another run is served from the cache without any batch.
    let before = mock.batch_stats();
    let o = tvir(&out, &cache, &mock, "mock-model", &["--batch"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(mock.batch_stats().batches_created, before.batches_created);
    assert_same_outputs(&live.path().join("out"), &out);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_expired_and_invalid_lines_are_retried_in_later_waves() {
    let (live, live_out) = live_run("mock-model").await;
    let mock = batch_mock(MockBatchConfig {
        polls_per_stage: 1,
        fail_first_lines: 3,
        invalid_first_answers: 2,
        expire_batches: vec![1],
        ..Default::default()
    })
    .await;
    let (_dir, out, o) = batch_wait_run(&mock, "mock-model", &[]).await;
    assert_eq!(o.status.code(), live_out.status.code(), "{}", text(&o));
    let stats = mock.batch_stats();
    assert_eq!(stats.failed_lines, 3, "{stats:?}");
    assert!(stats.expired_lines > 0, "{stats:?}");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        stderr.matches("answer does not validate").count(),
        2,
        "{stderr}"
    );
    assert_same_scores(&live.path().join("out"), &out);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_lines_give_up_with_the_providers_error_or_go_live() {
    let mock = batch_mock(MockBatchConfig {
        fail_first_lines: 2,
        ..Default::default()
    })
    .await;
    let (_dir, out, o) = batch_wait_run(&mock, "mock-model", &["--batch-attempts", "1"]).await;
    assert_eq!(
        o.status.code(),
        Some(1),
        "failed units exit 1: {}",
        text(&o)
    );
    let mut reasons = Vec::new();
    for e in walk_reports(&out) {
        let r: Value = serde_json::from_slice(&std::fs::read(e).unwrap()).unwrap();
        for u in r["units"].as_array().unwrap() {
            if u["status"] == "failed" && u["metric"] != "image_quality" {
                reasons.push(u["reason"].as_str().unwrap_or("").to_string());
            }
        }
    }
    assert!(!reasons.is_empty());
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("HTTP 500") && r.contains("server had an error")),
        "{reasons:?}"
    );

    // The same failures asked live instead.
    let mock = batch_mock(MockBatchConfig {
        fail_first_lines: 2,
        ..Default::default()
    })
    .await;
    let (_dir, _out, o) = batch_wait_run(&mock, "mock-model", &["--batch-retry", "live"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(
        live_judge_calls(&mock),
        2,
        "the two failed lines were asked live: {}",
        text(&o)
    );
}

fn walk_reports(out: &Path) -> Vec<PathBuf> {
    outputs(out)
        .into_keys()
        .filter(|p| p.file_name().is_some_and(|n| n == "report.json"))
        .map(|p| out.join(p))
        .collect()
}

/// An independent runner: each request line's body POSTed to the mock's live
/// endpoint, results written in vLLM `run-batch`'s output format.
async fn run_offline(mock: &MockJudge, request_files: &[PathBuf], results: &Path) -> usize {
    let http = reqwest::Client::new();
    let mut out = String::new();
    let mut n = 0;
    for f in request_files {
        for line in std::fs::read_to_string(f).unwrap().lines() {
            let req: Value = serde_json::from_str(line).unwrap();
            assert_eq!(req["method"], "POST");
            assert_eq!(req["url"], "/v1/chat/completions");
            let body = answer_live(&http, mock, &req["body"]).await;
            n += 1;
            out.push_str(
                &json!({"id": format!("vllm-{n}"), "custom_id": req["custom_id"],
                        "response": {"status_code": 200, "request_id": format!("vllm-{n}"), "body": body},
                        "error": null})
                .to_string(),
            );
            out.push('\n');
        }
    }
    std::fs::write(results, out).unwrap();
    n
}

fn jsonl_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    v.sort();
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_then_import_round_trip_matches_live() {
    let (live, _) = live_run("mock-model").await;
    let mock = MockJudge::start(MockConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let cache = dir.path().join("cache.sqlite");
    let mut imports: Vec<String> = Vec::new();
    let mut waves = 0;
    loop {
        waves += 1;
        assert!(waves < 10, "never completed");
        let wave_dir = dir.path().join(format!("wave{waves}"));
        let mut args = vec!["--batch-export".to_string(), wave_dir.display().to_string()];
        if !imports.is_empty() {
            args.push("--batch-import".into());
            args.append(&mut imports);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = tvir(&out, &cache, &mock, "mock-model", &args).await;
        assert!(
            o.status.success() || out.join("summary.json").exists(),
            "{}",
            text(&o)
        );
        if out.join("summary.json").exists() {
            break;
        }
        let files = jsonl_files(&wave_dir);
        assert!(!files.is_empty(), "{}", text(&o));
        if waves == 1 {
            // Figures travel as images (not as the references cache keys use).
            let mut images = 0;
            for f in &files {
                for line in std::fs::read_to_string(f).unwrap().lines() {
                    let v: Value = serde_json::from_str(line).unwrap();
                    for m in v["body"]["messages"].as_array().unwrap() {
                        for p in m["content"].as_array().into_iter().flatten() {
                            if let Some(url) = p.pointer("/image_url/url").and_then(Value::as_str) {
                                assert!(
                                    url.starts_with("data:image/"),
                                    "{}",
                                    &url[..url.len().min(80)]
                                );
                                images += 1;
                            }
                        }
                    }
                }
            }
            assert!(images > 0, "the first wave asks vision judges");
            // Exporting again gives the same custom_ids (stable across runs).
            let first_wave_ids = custom_ids(&files);
            let again = dir.path().join("again");
            let o2 = tvir(
                &out,
                &cache,
                &mock,
                "mock-model",
                &["--batch-export", again.to_str().unwrap()],
            )
            .await;
            assert!(o2.status.success(), "{}", text(&o2));
            assert_eq!(custom_ids(&jsonl_files(&again)), first_wave_ids);
        }
        let results = dir.path().join(format!("results{waves}.jsonl"));
        assert!(run_offline(&mock, &files, &results).await > 0);
        imports.push(results.display().to_string());
    }
    assert!(
        waves >= 3,
        "two exported waves then the scores, got {waves}"
    );
    assert_same_outputs(&live.path().join("out"), &out);
}

fn custom_ids(files: &[PathBuf]) -> Vec<String> {
    let mut ids: Vec<String> = files
        .iter()
        .flat_map(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .lines()
                .map(|l| {
                    serde_json::from_str::<Value>(l).unwrap()["custom_id"]
                        .as_str()
                        .unwrap()
                        .to_string()
                })
                .collect::<Vec<_>>()
        })
        .collect();
    ids.sort();
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_result_lines_are_reported_by_line_number_and_skipped() {
    let mock = MockJudge::start(MockConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let cache = dir.path().join("cache.sqlite");
    let wave = dir.path().join("wave1");
    let o = tvir(
        &out,
        &cache,
        &mock,
        "mock-model",
        &["--batch-export", wave.to_str().unwrap()],
    )
    .await;
    assert!(o.status.success(), "{}", text(&o));
    let files = jsonl_files(&wave);
    let good = dir.path().join("good.jsonl");
    assert!(run_offline(&mock, &files, &good).await >= 2);
    let good_lines: Vec<String> = std::fs::read_to_string(&good)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    // line 1: valid; 2: not JSON; 3: unknown custom_id; 4: an answer that breaks
    // the schema; 5: no response body.
    let mut broken: Value = serde_json::from_str(&good_lines[1]).unwrap();
    broken["response"]["body"]["choices"][0]["message"]["content"] = json!("{\"nonsense\": true}");
    let unknown = json!({"custom_id": "f".repeat(64), "response": {"status_code": 200, "body": {}}, "error": null});
    let mut nobody: Value = serde_json::from_str(&good_lines[2 % good_lines.len()]).unwrap();
    nobody["response"] = json!({"status_code": 200});
    let file = dir.path().join("mixed.jsonl");
    std::fs::write(
        &file,
        format!(
            "{}\n{{not json\n{}\n{}\n{}\n",
            good_lines[0], unknown, broken, nobody
        ),
    )
    .unwrap();
    let o = tvir(
        &out,
        &cache,
        &mock,
        "mock-model",
        &["--batch-import", file.to_str().unwrap()],
    )
    .await;
    assert!(o.status.success(), "{}", text(&o));
    let stderr = String::from_utf8_lossy(&o.stderr);
    let name = file.display().to_string();
    for (n, what) in [
        (2, "not JSON"),
        (3, "unknown custom_id"),
        (4, "answer does not validate"),
        (5, "no response body"),
    ] {
        assert!(
            stderr.contains(&format!("{name} line {n}: {what}")),
            "line {n}: {stderr}"
        );
    }
    assert!(!stderr.contains(&format!("{name} line 1:")), "{stderr}");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("imported: 1 answers, 1 re-asks"),
        "{stdout}"
    );
    assert!(!out.join("summary.json").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_answers_cost_the_discounted_price_and_dry_run_shows_both() {
    let model = "gpt-4.1-mini";
    let (live, _) = live_run(model).await;
    let mock = MockJudge::start(MockConfig::default()).await;
    let (dir, out, o) = batch_wait_run(&mock, model, &[]).await;
    assert!(o.status.code().is_some(), "{}", text(&o));
    let reports = walk_reports(&out);
    assert_eq!(reports.len(), 6);
    for r in reports {
        let rel = r.strip_prefix(&out).unwrap();
        let b: Value = serde_json::from_slice(&std::fs::read(&r).unwrap()).unwrap();
        let l: Value =
            serde_json::from_slice(&std::fs::read(live.path().join("out").join(rel)).unwrap())
                .unwrap();
        let (bc, lc) = (
            b["usage"]["cost_usd"].as_f64().unwrap(),
            l["usage"]["cost_usd"].as_f64().unwrap(),
        );
        assert!(lc > 0.0);
        assert!(
            (bc - lc * 0.5).abs() < 1e-9,
            "{}: batch {bc} vs live {lc}",
            rel.display()
        );
        assert_eq!(b["overall"], l["overall"]);
        assert_eq!(b["metrics"], l["metrics"]);
    }
    let o = tvir(
        &dir.path().join("dry"),
        &dir.path().join("c2.sqlite"),
        &mock,
        model,
        &["--dry-run", "--max-cost", "0.001"],
    )
    .await;
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains(" live / $") && stdout.contains("with --batch"),
        "{stdout}"
    );
    assert!(stdout.contains("--max-cost $0.0010: live over"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_cost_caps_what_a_wave_submits() {
    let model = "gpt-4.1-mini";
    let first_wave = |extra: &'static [&'static str]| async move {
        let mock = MockJudge::start(MockConfig::default()).await;
        let dir = tempfile::tempdir().unwrap();
        let mut args = vec!["--batch"];
        args.extend_from_slice(extra);
        let o = tvir(
            &dir.path().join("out"),
            &dir.path().join("c.sqlite"),
            &mock,
            model,
            &args,
        )
        .await;
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        (
            mock.batch_stats().submitted.len(),
            String::from_utf8_lossy(&o.stdout).to_string(),
        )
    };
    let (full, _) = first_wave(&[]).await;
    let (capped, stdout) = first_wave(&["--max-cost", "0.002"]).await;
    assert!(capped > 0 && capped < full, "{capped} of {full}: {stdout}");
}
