//! The example benchmark built into the binary: `tvir eval --example OUT` runs it
//! with no source tree, and it is the same as the folder `examples/`.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;

use common::cli::tvir_in as tvir;
use common::outputs::{read_json as read, without_timing};
use common::repo;
use serde_json::Value;

/// Every file of the shipped example benchmark on disk: the task file and the report
/// folders (not the picture generator or the ablation variants, which are not part of it).
fn example_files_on_disk() -> BTreeSet<String> {
    let root = repo().join("examples");
    let mut files = BTreeSet::from(["tasks.json".to_string()]);
    for entry in walkdir::WalkDir::new(&root) {
        let entry = entry.unwrap();
        let rel = entry.path().strip_prefix(&root).unwrap();
        let in_a_system = rel.starts_with("system-a") || rel.starts_with("system-b");
        if entry.file_type().is_file() && in_a_system {
            files.insert(rel.to_string_lossy().replace('\\', "/"));
        }
    }
    files
}

#[test]
fn the_embedded_example_is_the_examples_folder() {
    let on_disk = example_files_on_disk();
    let embedded: BTreeSet<String> = tvir_cli::example::FILES
        .iter()
        .map(|(p, _)| p.to_string())
        .collect();
    assert_eq!(
        embedded, on_disk,
        "src/example.rs must list every example file"
    );
    for (rel, bytes) in tvir_cli::example::FILES {
        let disk = std::fs::read(repo().join("examples").join(rel)).unwrap();
        assert!(disk == *bytes, "{rel} differs from the embedded copy");
    }
    // Only the two systems: a third one would be missed by the list above.
    let systems: Vec<String> = std::fs::read_dir(repo().join("examples"))
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "variants")
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(systems, ["system-a", "system-b"]);
}

/// Every metric file and report.json of one eval output, keyed by relative path,
/// plus summary.json; `run.json` (timings) and the journal are left out, and so is
/// report.json's `timing` object (checked to be there).
fn results(out: &Path) -> Vec<(String, Value)> {
    let mut files = Vec::new();
    for entry in walkdir::WalkDir::new(out).sort_by_file_name() {
        let entry = entry.unwrap();
        let rel = entry
            .path()
            .strip_prefix(out)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if entry.file_type().is_file()
            && rel.ends_with(".json")
            && rel != "run.json"
            && !rel.ends_with("judge-journal.jsonl")
        {
            let value = read(entry.path());
            if rel.ends_with("report.json") {
                files.push((rel, without_timing(value)));
            } else {
                files.push((rel, value));
            }
        }
    }
    files
}

#[test]
fn eval_example_runs_from_anywhere_and_matches_the_quick_start() {
    let cwd = tempfile::tempdir().unwrap();
    let res = tvir(cwd.path(), &["eval", "--example", "out", "--quiet"]);
    let stderr = String::from_utf8_lossy(&res.stderr);
    let stdout = String::from_utf8_lossy(&res.stdout);
    assert_eq!(res.status.code(), Some(0), "{stderr}\n{stdout}");
    assert!(stderr.contains("No judge configured"), "{stderr}");
    assert!(stdout.contains("results: out"), "{stdout}");
    let out = cwd.path().join("out");

    // The INTERFACE.md layout, and nothing else at the top (the unpacked example
    // lives in a temporary folder, removed after the run).
    let top: BTreeSet<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let allowed = [
        "system-a",
        "system-b",
        "summary.json",
        "run.json",
        "judge-journal.jsonl.zst",
        "judge-journal.texts.jsonl.zst",
        ".thumbnails",
    ];
    for name in &top {
        assert!(allowed.contains(&name.as_str()), "unexpected {name} in OUT");
    }
    assert!(top.contains("summary.json"), "{top:?}");
    for system in ["system-a", "system-b"] {
        for task in ["ex001", "ex002", "ex003"] {
            let dir = out.join(system).join(task).join("no-judge");
            let iq = read(&dir.join("image_quality.json"));
            assert!(iq.get("normalized_score").is_some(), "{}", dir.display());
            assert!(iq["evaluation_results"].is_array());
            assert!(dir.join("report.json").is_file());
        }
    }

    // The same numbers as the Quick start's command on the folder.
    let root = repo();
    let res = tvir(
        cwd.path(),
        &[
            "eval",
            "--reports",
            root.join("examples").to_str().unwrap(),
            "--tasks",
            root.join("examples/tasks.json").to_str().unwrap(),
            "--out",
            "folder",
            "--quiet",
        ],
    );
    assert_eq!(
        res.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    let embedded = results(&out);
    let folder = results(&cwd.path().join("folder"));
    assert_eq!(
        embedded.iter().map(|(p, _)| p).collect::<Vec<_>>(),
        folder.iter().map(|(p, _)| p).collect::<Vec<_>>()
    );
    assert!(embedded.len() > 6 * 13, "{} files", embedded.len());
    for ((path, a), (_, b)) in embedded.iter().zip(&folder) {
        assert_eq!(
            a, b,
            "{path} differs between --example and the examples folder"
        );
    }
}

#[test]
fn example_excludes_the_explicit_inputs() {
    let cwd = tempfile::tempdir().unwrap();
    for extra in [["--reports", "x"], ["--tasks", "x.json"], ["--out", "y"]] {
        let mut args = vec!["eval", "--example", "out"];
        args.extend(extra);
        let res = tvir(cwd.path(), &args);
        assert_eq!(res.status.code(), Some(2), "{extra:?}");
        let stderr = String::from_utf8_lossy(&res.stderr);
        assert!(stderr.contains("cannot be used with"), "{stderr}");
    }
    // Without --example, the three inputs are still required.
    let res = tvir(cwd.path(), &["eval", "--out", "y"]);
    assert_eq!(res.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert!(
        stderr.contains("--reports") && stderr.contains("--tasks"),
        "{stderr}"
    );
    assert!(!cwd.path().join("out").exists() && !cwd.path().join("y").exists());
}
