//! The guard at the end of `.ci/run` (`.ci/budget_report`): quiet under 3,000 s, loud
//! over it, naming the stage that grew most first; and `.ci/usual-times.tsv` names
//! every stage `.ci/run` times, so the comparison is never against nothing.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::common::repo;

fn report(usual: &str, stages: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let usual_file = dir.path().join("usual.tsv");
    std::fs::write(&usual_file, usual).unwrap();
    let mut child = Command::new("bash")
        .arg(repo().join(".ci/budget_report"))
        .arg(&usual_file)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("bash runs .ci/budget_report");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stages.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "the guard never fails the run");
    String::from_utf8(out.stdout).unwrap()
}

const USUAL: &str = "# seconds\tstage\n400\tfmt + clippy\n700\ttests\n";

#[test]
fn under_the_guard_it_lists_the_stages_and_stays_quiet() {
    let out = report(USUAL, "410\tfmt + clippy\n690\ttests\n");
    assert!(out.contains("total 1100 s of the 5400 s limit"), "{out}");
    assert!(out.contains("usual 400 s  (+10 s)"), "{out}");
    assert!(out.contains("usual 700 s  (-10 s)"), "{out}");
    assert!(!out.contains("WARNING"), "{out}");
}

#[test]
fn over_the_guard_it_warns_and_names_what_grew_most_first() {
    let out = report(
        USUAL,
        "450\tfmt + clippy\n2400\ttests\n300\tsomething new\n",
    );
    assert!(
        out.contains("WARNING: CI TOOK 3150 s, OVER THE 3000 s GUARD"),
        "{out}"
    );
    let grew: Vec<&str> = out.lines().filter(|l| l.starts_with("ci: grew:")).collect();
    assert_eq!(grew.len(), 3, "{out}");
    assert!(grew[0].contains("tests, +1700 s (700 s usual)"), "{out}");
    assert!(
        grew[1].contains("something new, +300 s (a new stage)"),
        "{out}"
    );
    assert!(grew[2].contains("fmt + clippy, +50 s"), "{out}");
}

#[test]
fn over_the_guard_with_no_stage_grown_it_says_the_usual_times_are_off() {
    let out = report(
        "1600\tfmt + clippy\n1600\ttests\n",
        "1550\tfmt + clippy\n1550\ttests\n",
    );
    assert!(out.contains("OVER THE 3000 s GUARD"), "{out}");
    assert!(out.contains("no stage is over its usual time"), "{out}");
}

/// Every stage `.ci/run` closes with `stage "NAME"` has a usual time.
#[test]
fn every_stage_of_ci_run_has_a_usual_time() {
    let run = std::fs::read_to_string(repo().join(".ci/run")).unwrap();
    let usual = std::fs::read_to_string(repo().join(".ci/usual-times.tsv")).unwrap();
    let known: Vec<&str> = usual
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('\t').map(|(_, name)| name))
        .collect();
    let stages: Vec<&str> = run
        .lines()
        .filter_map(|l| l.trim().strip_prefix("stage \""))
        .filter_map(|l| l.split_once('"').map(|(name, _)| name))
        .collect();
    assert!(stages.len() >= 4, "stages of .ci/run: {stages:?}");
    for s in &stages {
        assert!(
            known.contains(s),
            "{s}: no usual time in .ci/usual-times.tsv"
        );
    }
}
