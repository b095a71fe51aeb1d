//! Issue #14 end to end through `tvir eval` (the binary) against the in-process mock
//! judge over HTTP: the duplicate judge answering both ways with no failed unit and
//! exit status 0; fetch outcomes on every CS source; an offline remote figure left
//! skipped (not IQ 0); compact outputs (timing beside each report, the pool and stage
//! breakdown in `run.json`); and a re-run that is answered from the cache without
//! encoding a single figure, while an edited report re-judges only its own units.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use common::cli::tvir_command;
use common::outputs::read_json as read;
use common::repo;
use serde_json::{json, Value};
use tvir_testing::mock_judge::{default_answer, request_schema, MockConfig, MockJudge};

/// All user text of a request body.
fn user_text(body: &Value) -> String {
    let mut out = String::new();
    for m in body["messages"].as_array().into_iter().flatten() {
        match &m["content"] {
            Value::String(s) => out.push_str(s),
            Value::Array(parts) => {
                for p in parts {
                    if let Some(t) = p["text"].as_str() {
                        out.push_str(t);
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// The duplicate judge says "duplicate" exactly when both facts are about Europe.
fn mock_config() -> MockConfig {
    MockConfig {
        responder: Some(Arc::new(|body: &Value| {
            let schema = request_schema(body).unwrap_or(json!({}));
            let mut answer = default_answer(&schema);
            if schema["properties"].get("duplicate").is_some() {
                let dup = user_text(body).matches("Europe").count() >= 2;
                answer["duplicate"] = json!(dup);
            }
            answer
        })),
        ..MockConfig::default()
    }
}

const REPORT: &str = "# Alpha in 2023

Alpha's revenue grew ten percent in Europe during 2023 [1]. During 2023, revenue \
from Europe rose by about ten percent for Alpha [1]. Alpha opened three new offices \
in Asia last year [1].

![Figure 1: Alpha's offices by region.](https://example.org/alpha/offices.png)

As Figure 1 shows, most offices are in Europe.

## References

[1] Example Source. Alpha annual review 2023. https://example.org/alpha/review
";

/// A reports tree with one system and one task.
fn tree(root: &Path, report: &str) -> (PathBuf, PathBuf) {
    let reports = root.join("reports");
    let dir = reports.join("sys").join("t1");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("report.md"), report).unwrap();
    // The cited page, as the command-line runs read it offline (a page in neither
    // the cache nor this file would fail its units: our side, not the report's).
    let page = json!({"url": "https://example.org/alpha/review",
                      "text": "Alpha's 2023 review: revenue in Europe grew ten percent; three offices opened in Asia."});
    std::fs::write(root.join("sources.jsonl"), format!("{page}\n")).unwrap();
    let tasks = root.join("tasks.json");
    std::fs::write(
        &tasks,
        serde_json::to_vec(&json!([{
            "id": "t1",
            "query": "Summarise Alpha's year.",
            "checklist": {"Content": ["Does the report give Alpha's revenue growth?"]}
        }]))
        .unwrap(),
    )
    .unwrap();
    (reports, tasks)
}

/// `tvir eval` of `reports` against `mock`, offline and quiet, the judge taken from
/// the environment as a user may configure it; add arguments before running it.
/// The pages a tree's run reads offline: the `sources.jsonl` beside its task file
/// ([`tree`] writes one), else the example's (`tests/golden/sources.jsonl`).
fn sources_for(tasks: &Path) -> PathBuf {
    let beside = tasks.with_file_name("sources.jsonl");
    if beside.exists() {
        beside
    } else {
        repo().join("tests/golden/sources.jsonl")
    }
}

fn eval_cmd(mock: &MockJudge, reports: &Path, tasks: &Path, out: &Path, cache: &Path) -> Command {
    let mut cmd = tvir_command();
    cmd.args(["eval", "--reports"])
        .arg(reports)
        .arg("--tasks")
        .arg(tasks)
        .arg("--out")
        .arg(out)
        .arg("--cache")
        .arg(cache)
        .args(["--offline", "--quiet", "--sources"])
        .arg(sources_for(tasks))
        .env("OPENAI_BASE_URL", mock.base_url())
        .env("TVIR_JUDGE_MODEL", "mock-model");
    cmd
}

fn tvir(
    mock: &MockJudge,
    reports: &Path,
    tasks: &Path,
    out: &Path,
    cache: &Path,
) -> std::process::Output {
    eval_cmd(mock, reports, tasks, out, cache)
        .args(["--dedup", "judge-all"])
        .output()
        .expect("run tvir")
}

#[test]
fn duplicate_judge_both_ways_over_http_with_no_failed_unit() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mock = rt.block_on(MockJudge::start(mock_config()));
    let dir = tempfile::tempdir().unwrap();
    let (reports, tasks) = tree(dir.path(), REPORT);
    let out = dir.path().join("out");
    let cache = dir.path().join("cache.sqlite");
    let res = tvir(&mock, &reports, &tasks, &out, &cache);
    let stdout = String::from_utf8_lossy(&res.stdout);
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert_eq!(res.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        mock.metric_count("fact_dedup") >= 3,
        "{:?}",
        mock.metric_counts()
    );

    let report = read(&out.join("sys/t1/mock-model/report.json"));
    let units = report["units"].as_array().unwrap();
    let failed: Vec<&Value> = units.iter().filter(|u| u["status"] == "failed").collect();
    assert!(failed.is_empty(), "failed units: {failed:#?}");
    // Every duplicate check is settled, one each way at least.
    let dedup: Vec<&Value> = units
        .iter()
        .filter(|u| u["metric"] == "fact_dedup")
        .collect();
    assert_eq!(dedup.len(), 3);
    assert!(dedup.iter().all(|u| u["status"] == "scored"), "{dedup:#?}");
    let decisions: Vec<&str> = dedup
        .iter()
        .map(|u| u["detail"]["decision"].as_str().unwrap())
        .collect();
    assert!(
        decisions.contains(&"merged") && decisions.contains(&"kept"),
        "{decisions:?}"
    );

    // The two Europe facts merged into the first; the Asia fact kept its own unit.
    let cs: Vec<&Value> = units
        .iter()
        .filter(|u| u["metric"] == "citation_support")
        .collect();
    let names: Vec<&str> = cs.iter().map(|u| u["unit"].as_str().unwrap()).collect();
    assert_eq!(names, ["fact:1", "fact:3"]);
    assert_eq!(cs[0]["detail"]["merged_duplicates"], json!([2]));
    // Each pair's decision is written once, in its first fact's detail: later
    // fact numbers by decision, then by what decided it.
    let dedup_detail = cs[0]["detail"]["dedup"].as_object().unwrap();
    let mut first: Vec<(u64, &str)> = dedup_detail
        .iter()
        .flat_map(|(decision, by)| {
            by.as_object()
                .unwrap()
                .values()
                .flat_map(|facts| facts.as_array().unwrap())
                .map(move |f| (f.as_u64().unwrap(), decision.as_str()))
        })
        .collect();
    first.sort();
    assert_eq!(first, [(2, "merged"), (3, "kept")]);
    // Each source says how its fetch ended (read from the sources file) and how
    // much of it the judge was given.
    for u in &cs {
        for s in &common::outputs::unit_sources(&report, u) {
            assert_eq!(s["fetch"], "ok", "{s}");
            assert_eq!(s["judge_chars"], s["chars"], "{s}");
            assert!(s["chars"].as_u64().unwrap() > 0, "{s}");
        }
    }

    // The remote figure was not fetched (offline): skipped with its reason, IQ not
    // evaluated rather than 0.
    let iq: Vec<&Value> = units
        .iter()
        .filter(|u| u["metric"] == "image_quality")
        .collect();
    assert_eq!(iq.len(), 1);
    assert_eq!(iq[0]["status"], "skipped");
    assert!(
        iq[0]["reason"].as_str().unwrap().contains("offline"),
        "{}",
        iq[0]
    );
    assert_eq!(
        report["metrics"]["image_quality"]["status"],
        "not_evaluated"
    );
    assert!(report["metrics"]["image_quality"]["score"].is_null());

    // Timing in report.json (no timing.json beside it: it only repeated it), pool
    // and stages in run.json, one line printed.
    assert!(!out.join("sys/t1/mock-model/timing.json").exists());
    let timing = &report["timing"];
    for stage in ["parse", "fetch", "images", "judge_wait", "write"] {
        assert!(
            timing[stage]["wall_seconds"].is_number(),
            "{stage}: {timing}"
        );
    }
    assert!(timing["judge_wait"]["wall_seconds"].as_f64().unwrap() > 0.0);
    let run = read(&out.join("run.json"));
    let pool = &run["timing"]["judge_pool"];
    assert_eq!(pool["calls"], run["answers"]);
    assert!(pool["peak_in_flight"].as_u64().unwrap() >= 1, "{pool}");
    assert!(pool["peak_in_flight"].as_u64().unwrap() <= 16, "{pool}");
    assert!(stdout.contains("judge pool"), "{stdout}");
    rt.block_on(mock.shutdown());
}

/// Writes `n` copies of the shipped example reports (with a per-copy edit) and
/// returns the tree and the task file.
fn copies(root: &Path, n: usize) -> (PathBuf, PathBuf) {
    let examples = repo().join("examples");
    let reports = root.join("reports");
    for system in ["system-a"] {
        for task in ["ex001", "ex002", "ex003"] {
            let src = examples.join(system).join(task);
            if !src.join("report.md").exists() {
                continue;
            }
            for k in 0..n {
                let dst = reports.join(format!("{system}-{k}")).join(task);
                copy_dir(&src, &dst);
                let md = dst.join("report.md");
                let mut text = std::fs::read_to_string(&md).unwrap();
                text.push_str(&format!("\n\nCopy {k} of this report.\n"));
                std::fs::write(&md, text).unwrap();
            }
        }
    }
    (reports, examples.join("tasks.json"))
}

fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let e = e.unwrap();
        let to = dst.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to);
        } else {
            std::fs::copy(e.path(), &to).unwrap();
        }
    }
}

#[test]
fn cached_rerun_encodes_nothing_and_an_edit_rejudges_only_its_report() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mock = rt.block_on(MockJudge::start(MockConfig::default()));
    let dir = tempfile::tempdir().unwrap();
    let (reports, tasks) = copies(dir.path(), 2);
    let cache = dir.path().join("cache.sqlite");
    let run = |out: &str| {
        let out = dir.path().join(out);
        let res = eval_cmd(&mock, &reports, &tasks, &out, &cache)
            .output()
            .expect("run tvir");
        (res, read(&out.join("run.json")))
    };
    let (first, run1) = run("out1");
    assert_eq!(first.status.code(), Some(0), "{first:?}");
    let calls = mock.requests();
    assert!(calls > 0);
    assert!(run1["figures"]["encoded"].as_u64().unwrap() > 0, "{run1}");
    assert!(
        run1["figures"]["thumbnails_written"].as_u64().unwrap() > 0,
        "{run1}"
    );

    // Same tree again into a new output folder: every answer from the cache, no
    // figure decoded or encoded for the judges, and every thumbnail of the new
    // folder there again: each distinct picture taken from the cache by content
    // hash (none decoded) into the folder's own store, every report's copy linked
    // to it.
    let (_, run2) = run("out2");
    assert_eq!(mock.requests(), calls, "the re-run must call nothing");
    assert_eq!(run2["figures"]["encoded"], 0, "{run2}");
    assert_eq!(run2["figures"]["facts_computed"], 0, "{run2}");
    assert_eq!(run2["figures"]["thumbnails_decoded"], 0, "{run2}");
    assert_eq!(
        run2["figures"]["thumbnails_written"], run1["figures"]["thumbnails_written"],
        "{run2}"
    );
    let distinct = |out: &str| {
        std::fs::read_dir(dir.path().join(out).join(".thumbnails"))
            .map(|d| d.count() as u64)
            .unwrap_or(0)
    };
    assert!(distinct("out1") > 0, "no thumbnail store in out1");
    assert_eq!(distinct("out2"), distinct("out1"));
    // Each distinct picture is taken from the cache at least once; two reports
    // written at the same moment may both take it before either has stored it in
    // the folder, so at most once per thumbnail written.
    let reused = run2["figures"]["thumbnails_reused"].as_u64().unwrap();
    let written = run2["figures"]["thumbnails_written"].as_u64().unwrap();
    assert!(
        (distinct("out2")..=written).contains(&reused),
        "{reused} reused for {} distinct and {written} written: {run2}",
        distinct("out2")
    );
    assert_eq!(run2["cache_hits"], run2["answers"]);

    // Again into out1, where an earlier version left a timing.json beside a
    // report.json: the re-run takes it away rather than leave stale times there.
    let old_timing = dir
        .path()
        .join("out1/system-a-1/ex001/mock-model/timing.json");
    std::fs::write(&old_timing, "{\"parse\":{\"wall_seconds\":9.9}}").unwrap();
    let (again, _) = run("out1");
    assert_eq!(again.status.code(), Some(0), "{again:?}");
    assert!(!old_timing.exists(), "a stale timing.json was left");
    assert_eq!(mock.requests(), calls, "the re-run must call nothing");

    // Edit one report: only its units go to the judge.
    let md = reports.join("system-a-1/ex001/report.md");
    let mut text = std::fs::read_to_string(&md).unwrap();
    text.push_str("\nOne more closing sentence for this copy.\n");
    std::fs::write(&md, text).unwrap();
    let (_, run3) = run("out3");
    let new_calls = mock.requests() - calls;
    assert!(new_calls > 0);
    // The journal names the report of every call: each one the cache did not answer
    // is the edited report's, and every other report's calls are cache hits.
    let mut journal = String::new();
    std::io::Read::read_to_string(
        &mut tvir_judge::journal::open_lines(&dir.path().join("out3/judge-journal.jsonl.zst"))
            .unwrap(),
        &mut journal,
    )
    .unwrap();
    let lines: Vec<Value> = journal
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let sent: Vec<&Value> = lines.iter().filter(|l| l["cache_hit"] == false).collect();
    assert_eq!(
        sent.len() as u64,
        new_calls,
        "every request is in the journal"
    );
    for l in &sent {
        let report = l["report"].as_str().unwrap_or_default();
        assert!(
            report.contains("system-a-1") && report.contains("ex001"),
            "a request for another report than the edited one: {report} ({})",
            l["metric"]
        );
    }
    let others = lines
        .iter()
        .filter(|l| {
            !l["report"]
                .as_str()
                .unwrap_or_default()
                .contains("system-a-1")
        })
        .count();
    assert!(
        others > 0,
        "the other reports' calls are journaled as cache hits"
    );
    assert_eq!(run3["figures"]["facts_computed"], 0, "{run3}");
    rt.block_on(mock.shutdown());
}

/// A fully cached run sends nothing, not even the vision check, whatever server it
/// is pointed at: against a new server (whose vision no earlier run remembers) it
/// makes 0 requests, and with the server down it neither waits on it nor fails;
/// every record is the cold run's. A cold run against a blind judge still checks
/// and marks every vision metric not evaluated (the check is put off, not dropped).
#[test]
fn a_fully_cached_run_sends_nothing_not_even_the_vision_check() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let first = rt.block_on(MockJudge::start(MockConfig::default()));
    let dir = tempfile::tempdir().unwrap();
    let (reports, tasks) = copies(dir.path(), 1);
    let cache = dir.path().join("cache.sqlite");
    let out1 = dir.path().join("out1");
    let res = eval_cmd(&first, &reports, &tasks, &out1, &cache)
        .output()
        .expect("run tvir");
    assert!(res.status.code().is_some(), "{res:?}");
    assert!(
        first.metric_count("vision_check") >= 1,
        "the cold run checks"
    );
    let first_url = first.base_url();
    rt.block_on(first.shutdown());

    // Another server: nothing remembered about it, every answer in the cache.
    let second = rt.block_on(MockJudge::start(MockConfig::default()));
    assert_ne!(second.base_url(), first_url);
    let out2 = dir.path().join("out2");
    let res = eval_cmd(&second, &reports, &tasks, &out2, &cache)
        .output()
        .expect("run tvir");
    let code2 = res.status.code();
    assert!(code2.is_some(), "{res:?}");
    assert_eq!(
        second.requests(),
        0,
        "a fully cached run sent requests: {:?}",
        second.metric_counts()
    );
    let records = |out: &Path| -> Vec<Value> {
        let mut found: Vec<(PathBuf, Value)> = walkdir::WalkDir::new(out)
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| e.file_name() == "report.json")
            .map(|e| {
                let mut v = read(e.path());
                v.as_object_mut().unwrap().remove("timing");
                (e.path().strip_prefix(out).unwrap().to_path_buf(), v)
            })
            .collect();
        found.sort_by(|a, b| a.0.cmp(&b.0));
        found
            .into_iter()
            .map(|(_, v)| v["metrics"].clone())
            .collect()
    };
    assert_eq!(records(&out2), records(&out1));

    // No server at all (a port nobody listens on): the same, exit status included.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_url = format!("http://{}/v1", dead.local_addr().unwrap());
    drop(dead);
    let out3 = dir.path().join("out3");
    let res = eval_cmd(&second, &reports, &tasks, &out3, &cache)
        .env("OPENAI_BASE_URL", &dead_url)
        .output()
        .expect("run tvir");
    let run3 = read(&out3.join("run.json"));
    assert_eq!(
        res.status.code(),
        code2,
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    assert_eq!(run3["cache_hits"], run3["answers"], "{run3}");
    assert_eq!(records(&out3), records(&out1));
    rt.block_on(second.shutdown());

    // A blind judge, cold: the deferred check is made and every vision metric of
    // every report is marked not evaluated.
    let blind = rt.block_on(MockJudge::start(MockConfig {
        vision: tvir_testing::mock_config::MockVision::Blind,
        ..MockConfig::default()
    }));
    let out4 = dir.path().join("out4");
    let res = eval_cmd(
        &blind,
        &reports,
        &tasks,
        &out4,
        &dir.path().join("cold.sqlite"),
    )
    .output()
    .expect("run tvir");
    assert_eq!(res.status.code(), Some(0), "{res:?}");
    assert!(blind.metric_count("vision_check") >= 1);
    let vision: Vec<String> = tvir_rubric::RubricSet::builtin()
        .unwrap()
        .rubrics()
        .filter(|r| r.is_vision())
        .map(|r| r.id.clone())
        .collect();
    assert!(vision.len() >= 4, "{vision:?}");
    let cold = records(&out4);
    assert_eq!(
        cold.len(),
        records(&out1).len(),
        "a record for every report"
    );
    assert!(!cold.is_empty());
    for metrics in &cold {
        for metric in &vision {
            assert_eq!(
                metrics[metric]["status"], "not_evaluated",
                "{metric}: {metrics}"
            );
        }
    }
    rt.block_on(blind.shutdown());
}

/// The wall time printed at the end and written to `run.json` covers the whole
/// command, as the process CPU time beside it does: a `--batch` run's waves (and the
/// live vision check before them, answered here after 1.5 s) happen before the final
/// pass that writes the outputs from the cache, and once read as `time 0.0s` next to
/// the CPU they had cost.
#[test]
fn wall_time_covers_the_whole_command_batch_passes_included() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let latency = std::time::Duration::from_millis(1500);
    let mock = rt.block_on(MockJudge::start(MockConfig {
        latency,
        ..MockConfig::default()
    }));
    let dir = tempfile::tempdir().unwrap();
    let (reports, tasks) = tree(dir.path(), REPORT);
    let out = dir.path().join("out");
    let res = eval_cmd(
        &mock,
        &reports,
        &tasks,
        &out,
        &dir.path().join("cache.sqlite"),
    )
    .args(["--batch", "--batch-wait", "--batch-poll-secs", "0"])
    .output()
    .expect("run tvir");
    let stdout = String::from_utf8_lossy(&res.stdout);
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert_eq!(res.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        mock.metric_count("vision_check") >= 1,
        "the live call before the waves: {:?}",
        mock.metric_counts()
    );
    assert!(
        mock.batch_stats().batches_created >= 1,
        "{stdout}\n{stderr}"
    );

    let run = read(&out.join("run.json"));
    let wall = run["timing"]["wall_seconds"].as_f64().unwrap();
    assert!(wall >= latency.as_secs_f64(), "run.json wall {wall} s");
    assert_eq!(run["wall_seconds"], run["timing"]["wall_seconds"], "{run}");
    let line = stdout
        .lines()
        .find(|l| l.contains("judge pool"))
        .unwrap_or_else(|| panic!("no breakdown line: {stdout}"));
    let printed: f64 = line
        .strip_prefix("time ")
        .and_then(|l| l.split('s').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!(printed >= latency.as_secs_f64(), "{line}");
    rt.block_on(mock.shutdown());
}

/// `--dedup judge-all` (the reference's way) asks the judge about every pair of facts
/// citing the same source; the default pre-filter settles the plainly different
/// pairs without a call. A judge that calls every pair a duplicate shows the effect
/// on Citation Support: under judge-all it merges the Asia fact into the Europe one,
/// under the pre-filter that pair is never asked and the Asia fact keeps its unit.
#[test]
fn dedup_judge_all_asks_every_pair_the_prefilter_settles() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let everything_duplicate = || MockConfig {
        responder: Some(Arc::new(|body: &Value| {
            let schema = request_schema(body).unwrap_or(json!({}));
            let mut answer = default_answer(&schema);
            if schema["properties"].get("duplicate").is_some() {
                answer["duplicate"] = json!(true);
            }
            answer
        })),
        ..MockConfig::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let (reports, tasks) = tree(dir.path(), REPORT);
    let run = |mode: &str| {
        let mock = rt.block_on(MockJudge::start(everything_duplicate()));
        let out = dir.path().join(format!("out-{mode}"));
        let res = eval_cmd(
            &mock,
            &reports,
            &tasks,
            &out,
            &dir.path().join(format!("{mode}.sqlite")),
        )
        .args(["--dedup", mode])
        .output()
        .expect("run tvir");
        assert_eq!(res.status.code(), Some(0), "{mode}: {res:?}");
        let asked = mock.metric_count("fact_dedup");
        rt.block_on(mock.shutdown());
        (asked, read(&out.join("sys/t1/mock-model/report.json")))
    };
    let cs_units = |report: &Value| -> Vec<String> {
        report["units"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|u| u["metric"] == "citation_support")
            .map(|u| u["unit"].as_str().unwrap().to_string())
            .collect()
    };
    // Three facts citing [1]: three pairs, every one asked.
    let (all_asked, all) = run("judge-all");
    assert_eq!(all_asked, 3, "judge-all asks every pair");
    assert_eq!(cs_units(&all), ["fact:1"], "{}", all["units"]);
    // The pre-filter asks only the ambiguous Europe pair (which the judge merges).
    let (pre_asked, pre) = run("prefilter");
    assert_eq!(pre_asked, 1, "the pre-filter settles the plain pairs");
    assert_eq!(cs_units(&pre), ["fact:1", "fact:3"], "{}", pre["units"]);
}
