//! `tvir fetch --offline` over the real reports of the corpus: every cited URL is
//! selected, deduplicated, and reported unavailable without touching the network.

use crate::common;

use std::process::Command;

#[test]
fn offline_fetch_over_the_corpus() {
    let Some(corpus) = common::corpus_dir() else {
        return;
    };
    let reports = corpus.join("reports");
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tvir"))
        .args(["fetch", "--offline", "--json", "--reports"])
        .arg(&reports)
        .arg("--cache")
        .arg(dir.path().join("cache.sqlite"))
        .output()
        .expect("run tvir");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary: serde_json::Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("{e}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr)));
    let unreadable = summary["unreadable_reports"].as_array().unwrap();
    assert!(unreadable.is_empty(), "{summary}");
    let urls = summary["urls"].as_u64().unwrap();
    // Several corpus reports cite dozens of web pages.
    assert!(urls >= 20, "{summary}");
    // Offline with an empty cache: nothing retrieved; apart from URLs the rules decide
    // on first (refused, or not parseable as URLs), everything is unavailable.
    let count = |status: &str| summary["by_status"][status].as_u64().unwrap_or(0);
    assert_eq!(count("ok"), 0, "{summary}");
    assert_eq!(count("blocked"), 0, "{summary}");
    assert!(count("unavailable") * 10 >= urls * 9, "{summary}");
    assert_eq!(
        count("unavailable") + count("refused") + count("failed"),
        urls,
        "{summary}"
    );
    assert_eq!(
        summary["by_origin"]["network"],
        serde_json::Value::Null,
        "{summary}"
    );
    assert_eq!(summary["success_rate"], 0.0);
    assert_eq!(out.status.code(), Some(1));
    // Selection only: the same run with --task narrows to one report.
    let one = Command::new(env!("CARGO_BIN_EXE_tvir"))
        .args([
            "fetch",
            "--offline",
            "--json",
            "--system",
            "drb-claude37",
            "--reports",
        ])
        .arg(&reports)
        .arg("--cache")
        .arg(dir.path().join("cache.sqlite"))
        .output()
        .expect("run tvir");
    let one: serde_json::Value = serde_json::from_slice(&one.stdout).unwrap();
    assert_eq!(one["reports"], 1);
    assert!(one["urls"].as_u64().unwrap() < urls);
}
