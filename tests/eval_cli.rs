//! `tvir eval` as a user runs it: the shipped example benchmark with no judge
//! configured (offline, no key) and as a dry run.

use crate::common;

use std::path::Path;

use common::cli::{eval_example, tvir_command};
use common::outputs::read_json as read;
use tvir_rubric::BUILTIN_METRICS as JUDGED;

/// `tvir eval` of the example into `out`, offline, with no judge configured whatever
/// the developer's shell holds, and `extra` arguments.
fn tvir(out: &Path, extra: &[&str]) -> std::process::Output {
    eval_example(out).args(extra).output().expect("run tvir")
}

#[test]
fn quick_start_without_a_judge_falls_back_to_no_judge() {
    let out = tempfile::tempdir().unwrap();
    let res = tvir(out.path(), &[]);
    let stderr = String::from_utf8_lossy(&res.stderr);
    let stdout = String::from_utf8_lossy(&res.stdout);
    assert!(stderr.contains("No judge configured"), "{stderr}");
    assert!(stdout.contains("A judge would add"), "{stdout}");
    for system in ["system-a", "system-b"] {
        for task in ["ex001", "ex002", "ex003"] {
            let dir = out.path().join(system).join(task).join("no-judge");
            let report = read(&dir.join("report.json"));
            // Every shipped example loads: a report that failed to load must fail
            // this test, not skip its checks.
            let load_failed = report["units"]
                .as_array()
                .unwrap()
                .iter()
                .any(|u| u["metric"] == "report_load");
            assert!(!load_failed, "{system}/{task}: report failed to load");
            for m in JUDGED {
                let file = read(&dir.join(format!("{m}.json")));
                assert!(
                    file["normalized_score"].is_null(),
                    "{system}/{task}/{m} must be null, never 0"
                );
                assert_eq!(report["metrics"][m]["status"], "not_evaluated", "{m}");
            }
            assert!(report["ta"].is_null() && report["overall"].is_null());
            assert!(report["metrics"]["image_quality"]["score"].is_number());
        }
    }
    assert!(out.path().join("summary.json").is_file());
    // Every report read and scored: exit 0 (1 would mean finished with failures).
    assert_eq!(res.status.code(), Some(0), "{stderr}");
}

#[test]
fn dry_run_calls_nothing_and_says_how_much_it_would() {
    let out = tempfile::tempdir().unwrap();
    let res = tvir(out.path(), &["--dry-run", "--judge-model", "m"]);
    let stdout = String::from_utf8_lossy(&res.stdout);
    assert!(
        stdout.contains("dry run:") && stdout.contains("nothing was called"),
        "{stdout}"
    );
    let stats = read(&out.path().join("run.json"));
    assert_eq!(stats["answers"], 0);
}

#[test]
fn a_dry_run_under_the_reference_protocol_fills_no_level_from_pixels_alone() {
    // `--aggregates present` (implied) averages the metrics present; in a run that
    // judges nothing only the pixel metrics are, so TA, VA and Overall would be
    // image quality alone. They stay empty, and FQ waits for chart quality.
    let out = tempfile::tempdir().unwrap();
    let res = tvir(
        out.path(),
        &[
            "--dry-run",
            "--judge-model",
            "m",
            "--protocol",
            "reference",
            "--extraction",
            "rules",
            "--fetcher",
            "direct",
        ],
    );
    let stdout = String::from_utf8_lossy(&res.stdout);
    assert!(stdout.contains("nothing was called"), "{stdout}");
    let p = read(&out.path().join("run.json"))["protocol"].clone();
    assert_eq!(p["name"], "reference");
    assert_eq!(
        p["settings"]["aggregates"], "complete",
        "as the run used it: {p}"
    );
    // ex001 has an image and a chart: FQ needs the chart's judged quality.
    let r = read(&out.path().join("system-a/ex001/m/report.json"));
    assert!(r["metrics"]["image_quality"]["score"].is_number());
    assert!(
        r["metrics"]["figure_quality"]["score"].is_null(),
        "{}",
        r["metrics"]
    );
    for level in ["ta", "va", "overall"] {
        assert!(r[level].is_null(), "{level}: {}", r[level]);
    }
    let summary = read(&out.path().join("summary.json"));
    let a = &summary["systems"]["system-a"]["scores"];
    assert!(
        a["va"]["mean"].is_null() && a["figure_quality"]["mean"].is_null(),
        "{a}"
    );
    assert!(!stdout.contains("-0.00"), "{stdout}");
}

#[test]
fn bad_inputs_exit_2_naming_the_file() {
    let out = tempfile::tempdir().unwrap();
    let res = tvir_command()
        .args(["eval", "--reports"])
        .arg(common::examples())
        .args(["--tasks", "/nonexistent/query.json", "--out"])
        .arg(out.path())
        .output()
        .unwrap();
    assert_eq!(res.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&res.stderr).contains("/nonexistent/query.json"));
    let res = tvir(out.path(), &["--no-judge", "--dry-run"]);
    assert_eq!(res.status.code(), Some(2));
}
