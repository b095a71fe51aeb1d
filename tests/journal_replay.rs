//! `tvir journal`: the exact request and answer of every judge call, put back from a
//! journal that stores each request text once (lines refer to texts by SHA-256).
//! Checked against the request bodies the mock judge received, on a first run and on
//! a fully cached re-run into a second folder; and an output folder as earlier
//! versions wrote it (every text inline in the journal, indented `report.json`) is
//! still read by `tvir journal` and `tvir summarize`, with the same results.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;
use tvir_testing::mock_judge::MockConfig;

use common::cli::{describe, eval_against_mock, tvir_status};
use common::judge::message_text;

/// (role, text) of every message, as the judge server received it.
fn body_messages(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["role"].as_str().unwrap().to_string(), message_text(m)))
        .collect()
}

/// (role, text) of every message of a line printed by `tvir journal`.
fn journal_messages(entry: &Value) -> Vec<(String, String)> {
    entry["request"]
        .as_array()
        .unwrap_or_else(|| panic!("no request: {entry}"))
        .iter()
        .map(|m| {
            let texts: Vec<&str> = m["parts"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|p| p["type"] == "text")
                .map(|p| p["text"].as_str().unwrap())
                .collect();
            (m["role"].as_str().unwrap().to_string(), texts.join("\n"))
        })
        .collect()
}

fn journal_lines(args: &[&str]) -> Vec<Value> {
    let (code, stdout, stderr) = tvir_status(args);
    assert_eq!(code, 0, "tvir {args:?}: {stderr}");
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn count<T: Ord + Clone>(items: impl IntoIterator<Item = T>) -> BTreeMap<T, usize> {
    let mut m = BTreeMap::new();
    for i in items {
        *m.entry(i).or_insert(0) += 1;
    }
    m
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn journal_prints_the_exact_requests_the_judge_received() {
    let dir = tempfile::tempdir().unwrap();
    let examples = common::examples();
    let tasks = examples.join("tasks.json");
    let out = dir.path().join("out");
    let (run, bodies) =
        eval_against_mock(MockConfig::default(), &examples, &tasks, &out, &[]).await;
    assert_eq!(run.status.code(), Some(0), "{}", describe(&run));
    assert!(!bodies.is_empty());

    // Journal lines carry digests, not texts; each text is stored once. Both files
    // are zstd streams.
    let read = |name: &str| -> String {
        let mut text = String::new();
        std::io::Read::read_to_string(
            &mut tvir_judge::journal::open_lines(&out.join(name)).unwrap(),
            &mut text,
        )
        .unwrap();
        text
    };
    let raw = read("judge-journal.jsonl.zst");
    assert!(
        !raw.contains("\"type\":\"text\""),
        "a text inline in the journal"
    );
    let texts = read("judge-journal.texts.jsonl.zst");
    let digests: Vec<Value> = texts
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["sha256"].clone())
        .collect();
    assert_eq!(
        count(digests.iter().map(Value::to_string)).len(),
        digests.len()
    );

    let out_arg = out.to_str().unwrap();
    let entries = journal_lines(&["journal", out_arg]);
    let answered: Vec<&Value> = entries.iter().filter(|e| e["status"] == "ok").collect();
    assert!(!answered.is_empty());
    // Every call the server answered is there with the messages it received, and
    // every request the server received is one the journal shows.
    let sent = count(bodies.iter().map(body_messages));
    let shown = count(answered.iter().map(|e| journal_messages(e)));
    // Compared as sets: when two units that share a request run at once, the server
    // may receive it once or twice (the second answered from the cache or asked
    // again), which moves the counts on both sides alike but not the requests.
    let keys = |m: &Requests| -> Requests { m.keys().map(|k| (k.clone(), 1)).collect() };
    assert_same_requests(&keys(&sent), &keys(&shown), "sent", "journal");
    for e in &answered {
        assert!(e["answer"].is_object() && e["raw"].is_string(), "{e}");
        assert_eq!(
            serde_json::from_str::<Value>(e["raw"].as_str().unwrap()).unwrap(),
            e["answer"]
        );
    }

    // One unit's call, selected by report, metric and unit.
    let one = answered[0];
    let picked = journal_lines(&[
        "journal",
        out_arg,
        "--report",
        one["report"].as_str().unwrap(),
        "--metric",
        one["metric"].as_str().unwrap(),
        "--unit",
        one["unit"].as_str().unwrap(),
    ]);
    assert!(picked.contains(one), "{one}");
    assert!(picked.iter().all(|e| e["unit"] == one["unit"]));
    let (code, _, stderr) = tvir_status(&["journal", out_arg, "--unit", "no-such-unit"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("no journal line matches"), "{stderr}");

    // A fully cached re-run (same cache, new folder): no call, the same requests.
    let cached_out = dir.path().join("cached");
    std::fs::copy(
        out.with_extension("cache.sqlite"),
        cached_out.with_extension("cache.sqlite"),
    )
    .unwrap();
    let (rerun, rebodies) =
        eval_against_mock(MockConfig::default(), &examples, &tasks, &cached_out, &[]).await;
    assert_eq!(rerun.status.code(), Some(0), "{}", describe(&rerun));
    assert!(
        rebodies.is_empty(),
        "{} calls on a cached re-run",
        rebodies.len()
    );
    let hits = journal_lines(&["journal", cached_out.to_str().unwrap()]);
    assert!(hits.iter().all(|e| e["status"] == "cache_hit"));
    // The first run's journal holds every unit's request once, answered by the
    // server or (a request two units share, such as one chart in two reports) by
    // the cache; the re-run's holds the same, all from the cache.
    let first_run = count(
        entries
            .iter()
            .filter(|e| e["status"] == "ok" || e["status"] == "cache_hit")
            .map(journal_messages),
    );
    assert_same_requests(
        &first_run,
        &count(hits.iter().map(journal_messages)),
        "first run",
        "cached re-run",
    );

    // The same folder as earlier versions wrote it: an uncompressed journal with the
    // texts inline, report.json indented.
    let old = dir.path().join("old");
    copy_tree(&out, &old);
    std::fs::remove_file(old.join("judge-journal.texts.jsonl.zst")).unwrap();
    std::fs::remove_file(old.join("judge-journal.jsonl.zst")).unwrap();
    let inline: String = entries.iter().map(|e| format!("{e}\n")).collect();
    std::fs::write(old.join("judge-journal.jsonl"), inline).unwrap();
    for e in walkdir::WalkDir::new(&old)
        .into_iter()
        .filter_map(Result::ok)
    {
        if e.file_name() == "report.json" {
            let v: Value = serde_json::from_slice(&std::fs::read(e.path()).unwrap()).unwrap();
            std::fs::write(e.path(), serde_json::to_vec_pretty(&v).unwrap()).unwrap();
        }
    }
    assert_eq!(journal_lines(&["journal", old.to_str().unwrap()]), entries);
    let summary = |dir: &Path| {
        let (code, stdout, stderr) =
            tvir_status(&["summarize", dir.to_str().unwrap(), "--format", "json"]);
        assert_eq!(code, 0, "{stderr}");
        // The folder's own path, where the summary names it, is not what is compared.
        let text = stdout.replace(dir.to_str().unwrap(), "OUT");
        serde_json::from_str::<Value>(&text).unwrap()
    };
    assert_eq!(summary(&old), summary(&out));
}

type Requests = BTreeMap<Vec<(String, String)>, usize>;

/// `a` and `b` hold the same requests the same number of times; else each differing
/// request, cut short, with its two counts.
fn assert_same_requests(a: &Requests, b: &Requests, a_name: &str, b_name: &str) {
    let brief = |m: &(String, String)| format!("{}: {:.300}", m.0, m.1);
    let differing: Vec<String> = a
        .keys()
        .chain(b.keys().filter(|k| !a.contains_key(*k)))
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| {
            format!(
                "{a_name} {:?}, {b_name} {:?}: {}",
                a.get(k),
                b.get(k),
                k.iter().map(brief).collect::<Vec<_>>().join(" | ")
            )
        })
        .collect();
    assert!(
        differing.is_empty(),
        "{} requests differ:\n{}",
        differing.len(),
        differing.join("\n")
    );
}

fn copy_tree(from: &Path, to: &Path) {
    for e in walkdir::WalkDir::new(from)
        .into_iter()
        .filter_map(Result::ok)
    {
        let dest = to.join(e.path().strip_prefix(from).unwrap());
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}
