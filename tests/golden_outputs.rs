//! Golden outputs: `tvir eval` on the shipped example (with no judge, and with the
//! in-process mock judge under several settings) writes exactly the output tree
//! committed under `tests/golden/`, with exactly the judge calls recorded there. On
//! the corpus (`TVIR_CORPUS_DIR`), where the outputs quote real reports and so cannot
//! be committed, the same comparison is made through a SHA-256 per output file.
//!
//! This guards refactors of the evaluation pipeline: any change to any output byte
//! or to the number of judge calls of any metric fails here.
//!
//! **What is masked** (genuinely run-dependent, nothing else):
//! - the temporary output folder's absolute path and the mock judge's port, wherever
//!   they appear in a file (replaced by `<TMP>` and `<MOCK>`);
//! - in `run.json`, `report.json` and the judge journal (its zstd
//!   streams compared by their lines, under their names without `.zst`), the values
//!   of the keys in [`MASKED_KEYS`] (wall and CPU times, latencies, timestamps, peak
//!   memory), replaced by `"<masked>"`; these files are compared as JSON values after
//!   masking (every other value and the key order exactly), the journal with its
//!   lines sorted (calls finish in any order under concurrency);
//! - two races of today's engine, which decide only *how* an answer was obtained,
//!   never what it is: when two identical judge requests are in flight at once, the
//!   second is sometimes a cache hit and sometimes a second call (so a journal line's
//!   `status`, `cache_hit`, `attempts` and `response_format` are normalised when it is
//!   `ok` or a cache hit, and `run.json`'s `cache_hits` is masked); and two reports
//!   sharing an image race to compute its stored figure facts and its encoding for
//!   the judge and its thumbnail (`run.json`'s `facts_reused`, `facts_computed`,
//!   `encoded`, `thumbnails_reused` and `thumbnails_decoded` are masked);
//! - every other file is compared byte for byte.
//!
//! To regenerate after an intended output change: `TVIR_GOLDEN_UPDATE=1 cargo test
//! --test suite golden_outputs::`, then review the diff of `tests/golden/` before committing.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::cli::{describe, eval_with_golden_sources, output_async, tvir_command};
use common::outputs::journal_calls;
use common::repo;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use tvir_testing::mock_judge::{request_schema, schema_type, MockConfig, MockJudge};

/// Keys whose values depend on the clock or the machine.
const MASKED_KEYS: &[&str] = &[
    "timing",
    "wall_ms",
    "wall_s",
    "wall_seconds",
    "cpu_ms",
    "cpu_s",
    "cpu_seconds",
    "latency_ms",
    "elapsed_ms",
    "started_at",
    "finished_at",
    "timestamp",
    "ts",
    "time",
    "peak_rss_bytes",
    "peak_rss_mb",
    "max_rss_kb",
    "stages",
    "cache_hits",
    "facts_reused",
    "facts_computed",
    "encoded",
    "thumbnails_reused",
    "thumbnails_decoded",
];

/// A journal line of a call that succeeded or was served from the cache: which of the
/// two it was depends on timing (see the module docs).
fn normalise_journal_line(v: &mut Value) {
    let ok = v["status"] == "ok" || v["cache_hit"] == true;
    if ok {
        for k in ["status", "cache_hit", "attempts", "response_format"] {
            if v.get(k).is_some() {
                v[k] = json!("<ok or cache hit>");
            }
        }
    }
}

/// Files compared as masked JSON values instead of bytes.
fn is_masked_file(rel: &str) -> bool {
    rel == "run.json" || rel.ends_with("/report.json") || rel.ends_with(".jsonl")
}

fn golden_root() -> PathBuf {
    repo().join("tests/golden")
}

fn updating() -> bool {
    std::env::var_os("TVIR_GOLDEN_UPDATE").is_some()
}

fn fnv(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// An answer for `schema` whose numbers and choices vary with `seed` (so that
/// different units get different scores), deterministically.
fn varied(schema: &Value, seed: u64, path: &str) -> Value {
    let h = fnv(format!("{seed}/{path}").as_bytes());
    if let Some(c) = schema.get("const") {
        return c.clone();
    }
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        if !options.is_empty() {
            return options[(h % options.len() as u64) as usize].clone();
        }
    }
    if let Some(first) = schema
        .get("anyOf")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
    {
        return varied(first, seed, path);
    }
    match schema_type(schema) {
        "object" => Value::Object(
            schema
                .get("properties")
                .and_then(Value::as_object)
                .map(|props| {
                    props
                        .iter()
                        .map(|(k, v)| (k.clone(), varied(v, seed, &format!("{path}/{k}"))))
                        .collect()
                })
                .unwrap_or_default(),
        ),
        "array" => {
            let min = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let max = schema
                .get("maxItems")
                .and_then(Value::as_u64)
                .unwrap_or(u64::MAX);
            let n = min.max(1).min(max);
            let items = schema.get("items").cloned().unwrap_or(json!({}));
            Value::Array(
                (0..n)
                    .map(|i| varied(&items, seed, &format!("{path}/{i}")))
                    .collect(),
            )
        }
        "integer" | "number" => {
            let lo = schema.get("minimum").and_then(Value::as_f64).unwrap_or(0.0) as i64;
            let hi = schema
                .get("maximum")
                .and_then(Value::as_f64)
                .unwrap_or(lo as f64 + 3.0) as i64;
            let span = (hi - lo + 1).max(1) as u64;
            json!(lo + (h % span) as i64)
        }
        "boolean" => json!(h.is_multiple_of(2)),
        "null" => Value::Null,
        _ => json!(format!("answer {}", h % 1000)),
    }
}

/// A mock judge answering from the schema with values varied by the request's text.
fn varied_mock() -> MockConfig {
    MockConfig {
        responder: Some(Arc::new(|request: &Value| {
            let schema = request_schema(request).unwrap_or(json!({}));
            let seed = fnv(request["messages"].to_string().as_bytes());
            varied(&schema, seed, "")
        })),
        ..MockConfig::default()
    }
}

fn mask(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for (k, val) in map.iter_mut() {
                if MASKED_KEYS.contains(&k.as_str()) {
                    *val = json!("<masked>");
                } else {
                    mask(val);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(mask),
        _ => {}
    }
}

/// The bytes of one output file as compared: run-dependent strings replaced, and the
/// masked files re-serialised after masking (see the module docs).
fn canonical(rel: &str, bytes: &[u8], subst: &[(String, &str)]) -> Vec<u8> {
    let mut text = String::from_utf8_lossy(bytes).into_owned();
    for (from, to) in subst {
        text = text.replace(from.as_str(), to);
    }
    if !is_masked_file(rel) {
        return text.into_bytes();
    }
    let masked = |line: &str| -> String {
        match serde_json::from_str::<Value>(line) {
            Ok(mut v) => {
                mask(&mut v);
                normalise_journal_line(&mut v);
                v.to_string()
            }
            Err(_) => line.to_string(),
        }
    };
    if rel.ends_with(".jsonl") {
        let mut lines: Vec<String> = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(masked)
            .collect();
        lines.sort();
        let mut out = lines.join("\n");
        out.push('\n');
        out.into_bytes()
    } else {
        match serde_json::from_str::<Value>(&text) {
            Ok(mut v) => {
                mask(&mut v);
                let mut out = serde_json::to_string_pretty(&v).unwrap();
                out.push('\n');
                out.into_bytes()
            }
            Err(_) => text.into_bytes(),
        }
    }
}

/// Every file under `out`, by relative path, in canonical form.
fn tree(out: &Path, subst: &[(String, &str)]) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    for entry in walkdir::WalkDir::new(out).sort_by_file_name() {
        let entry = entry.unwrap();
        if !entry.file_type().is_file() {
            continue;
        }
        let rel = entry
            .path()
            .strip_prefix(out)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        // The journal's zstd streams are compared by their lines, under the name
        // without `.zst`.
        let (rel, bytes) = match rel.strip_suffix(".zst") {
            Some(plain) => {
                let mut text = Vec::new();
                std::io::Read::read_to_end(
                    &mut tvir_judge::journal::open_lines(entry.path()).unwrap(),
                    &mut text,
                )
                .unwrap();
                (plain.to_string(), text)
            }
            None => (rel, std::fs::read(entry.path()).unwrap()),
        };
        let c = canonical(&rel, &bytes, subst);
        files.insert(rel, c);
    }
    files
}

/// Compares a whole output tree with `tests/golden/{name}/` (or writes it there when
/// updating). Returns the list of problems.
fn compare_tree(name: &str, got: &BTreeMap<String, Vec<u8>>) -> Vec<String> {
    let dir = golden_root().join(name);
    if updating() {
        let _ = std::fs::remove_dir_all(&dir);
        for (rel, bytes) in got {
            let p = dir.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, bytes).unwrap();
        }
        return vec![];
    }
    assert!(
        dir.is_dir(),
        "{} missing: run with TVIR_GOLDEN_UPDATE=1 to create it",
        dir.display()
    );
    let want = tree(&dir, &[]);
    let mut problems = Vec::new();
    for rel in want.keys() {
        if !got.contains_key(rel) {
            problems.push(format!("{name}: {rel} is no longer written"));
        }
    }
    for (rel, bytes) in got {
        match want.get(rel) {
            None => problems.push(format!("{name}: {rel} is new")),
            Some(w) if w != bytes => {
                let (a, b) = (String::from_utf8_lossy(w), String::from_utf8_lossy(bytes));
                let line = a
                    .lines()
                    .zip(b.lines())
                    .position(|(x, y)| x != y)
                    .unwrap_or(a.lines().count().min(b.lines().count()));
                problems.push(format!(
                    "{name}: {rel} differs from line {}:\n  golden: {}\n  now:    {}",
                    line + 1,
                    a.lines().nth(line).unwrap_or("<end>"),
                    b.lines().nth(line).unwrap_or("<end>")
                ));
            }
            Some(_) => {}
        }
    }
    problems
}

/// Compares (or records) a small JSON document under `tests/golden/`.
fn compare_json(file: &str, got: &Value) -> Vec<String> {
    let p = golden_root().join(file);
    let text = serde_json::to_string_pretty(got).unwrap() + "\n";
    if updating() {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        return vec![];
    }
    let want = std::fs::read_to_string(&p)
        .unwrap_or_else(|e| panic!("{}: {e} (TVIR_GOLDEN_UPDATE=1 creates it)", p.display()));
    if want == text {
        vec![]
    } else {
        vec![format!(
            "{file} differs:\n  golden: {want}\n  now:    {text}"
        )]
    }
}

struct Scenario {
    name: &'static str,
    varied: bool,
    extra: &'static [&'static str],
}

const SCENARIOS: &[Scenario] = &[
    // What tests/eval_mock.rs runs: every answer from the schema.
    Scenario {
        name: "mock-default",
        varied: false,
        extra: &[],
    },
    // Answers that differ per unit, so that a unit scored from another unit's answer
    // (or dropped, or duplicated) changes the numbers.
    Scenario {
        name: "mock-varied",
        varied: true,
        extra: &[],
    },
    // The reference's options: two samples, every ambiguous pair judged, revision
    // reaching every text judge, judge extraction for every report.
    Scenario {
        name: "mock-varied-reference",
        varied: true,
        extra: &[
            "--runs",
            "2",
            "--dedup",
            "judge-all",
            "--revision-scope",
            "reference",
            "--extraction",
            "judge",
        ],
    },
    // No caption revision, no de-duplication, failed units counted as zero.
    Scenario {
        name: "mock-varied-plain",
        varied: true,
        extra: &[
            "--no-caption-revision",
            "--dedup",
            "off",
            "--failed-as-zero",
        ],
    },
];

/// Runs `tvir eval` on `reports` against a fresh mock; the output tree (canonical)
/// and the mock's call counts per metric.
async fn eval_with_mock(
    scenario: &Scenario,
    reports: &Path,
    tasks: &Path,
) -> (BTreeMap<String, Vec<u8>>, Value) {
    let mock = MockJudge::start(if scenario.varied {
        varied_mock()
    } else {
        MockConfig::default()
    })
    .await;
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let mut cmd = eval_with_golden_sources(
        tmp.path(),
        reports,
        tasks,
        &out,
        &tmp.path().join("cache.sqlite"),
        &mock.base_url(),
    );
    cmd.args(["--concurrency", "4"]).args(scenario.extra);
    let res = output_async(cmd).await;
    assert!(
        matches!(res.status.code(), Some(0) | Some(1)),
        "{}: {}",
        scenario.name,
        describe(&res)
    );
    let subst = vec![
        (tmp.path().to_string_lossy().into_owned(), "<TMP>"),
        (mock.base_url(), "<MOCK>"),
        (repo().to_string_lossy().into_owned(), "<REPO>"),
    ];
    let files = tree(&out, &subst);
    // The calls the engine asked for, by metric, from the journal (one line per
    // call, served or cached), and the distinct requests among them. The mock must
    // have seen at least every distinct request and at most every call.
    let (per_metric, distinct) = journal_calls(&out);
    let asked: u64 = per_metric.values().sum();
    let served = mock.requests();
    assert!(
        (distinct.len() as u64..=asked).contains(&served),
        "{}: the mock served {served} requests; distinct {}, asked {asked}",
        scenario.name,
        distinct.len()
    );
    let calls = json!({
        "exit": res.status.code(),
        "calls": asked,
        "distinct_requests": distinct.len(),
        "per_metric": per_metric,
    });
    mock.shutdown().await;
    (files, calls)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn example_outputs_and_call_counts_are_the_golden_ones() {
    let mut problems = Vec::new();

    // No judge: `tvir eval --example`.
    let tmp = tempfile::tempdir().unwrap();
    let mut cmd = tvir_command();
    cmd.current_dir(tmp.path())
        .args(["eval", "--example", "out", "--quiet"]);
    let res = output_async(cmd).await;
    assert_eq!(res.status.code(), Some(0), "{}", describe(&res));
    let subst = vec![(tmp.path().to_string_lossy().into_owned(), "<TMP>")];
    problems.extend(compare_tree(
        "no-judge",
        &tree(&tmp.path().join("out"), &subst),
    ));

    let mut calls = serde_json::Map::new();
    for scenario in SCENARIOS {
        let (files, counts) = eval_with_mock(
            scenario,
            &repo().join("examples"),
            &repo().join("examples/tasks.json"),
        )
        .await;
        problems.extend(compare_tree(scenario.name, &files));
        calls.insert(scenario.name.to_string(), counts);
    }
    problems.extend(compare_json("calls.json", &Value::Object(calls)));
    assert!(
        problems.is_empty(),
        "{} difference(s) from tests/golden:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// The corpus with the varied mock: one SHA-256 per canonical output file, and the
/// call counts, against `tests/golden/corpus.json`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corpus_outputs_and_call_counts_are_the_golden_ones() {
    let Some(corpus) = common::corpus_dir() else {
        return;
    };
    let scenario = Scenario {
        name: "corpus",
        varied: true,
        extra: &[],
    };
    let (files, counts) = eval_with_mock(
        &scenario,
        &corpus.join("reports"),
        &corpus.join("tvir-query.json"),
    )
    .await;
    assert!(files.len() > 50, "{} files", files.len());
    let corpus_s = corpus.to_string_lossy().into_owned();
    let hashes: serde_json::Map<String, Value> = files
        .iter()
        .map(|(rel, bytes)| {
            // The corpus folder's absolute path may appear in outputs (report paths).
            let text = String::from_utf8_lossy(bytes).replace(&corpus_s, "<CORPUS>");
            let digest = Sha256::digest(text.as_bytes());
            let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
            (rel.clone(), json!(hex))
        })
        .collect();
    let got = json!({ "calls": counts, "files": hashes });
    let mut problems = Vec::new();
    if !updating() {
        let p = golden_root().join("corpus.json");
        let want: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
        if want["calls"] != got["calls"] {
            problems.push(format!(
                "calls: golden {} now {}",
                want["calls"], got["calls"]
            ));
        }
        let (w, g) = (
            want["files"].as_object().unwrap(),
            got["files"].as_object().unwrap(),
        );
        for (rel, h) in g {
            if w.get(rel) != Some(h) {
                problems.push(format!("{rel}: new or changed"));
            }
        }
        for rel in w.keys().filter(|r| !g.contains_key(*r)) {
            problems.push(format!("{rel}: no longer written"));
        }
    }
    problems.extend(compare_json("corpus.json", &got));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
