//! `tvir parse` end to end: JSON shape, readable summary, exit codes.

use std::path::PathBuf;
use std::process::Command;

fn tvir() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tvir"))
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/reports")
        .join(name)
}

#[test]
fn json_output_has_exactly_the_interface_keys() {
    let out = tvir()
        .args(["parse", "--json"])
        .arg(fixture("tvir_html_figures"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let obj = v.as_object().unwrap();
    for key in [
        "report",
        "language",
        "references",
        "facts",
        "figures",
        "structural_errors",
    ] {
        assert!(obj.contains_key(key), "missing {key}");
    }
    let r = &v["references"][0];
    assert_eq!(
        r.as_object().unwrap().keys().collect::<Vec<_>>(),
        vec!["idx", "url", "title"]
    );
    let f = &v["facts"][0];
    assert_eq!(
        f.as_object().unwrap().keys().collect::<Vec<_>>(),
        vec!["fact", "ref_idxs", "line"]
    );
    let g = &v["figures"][0];
    assert_eq!(
        g.as_object().unwrap().keys().collect::<Vec<_>>(),
        vec!["content", "kind", "caption", "context", "ref_idxs", "line"]
    );
    let se = v["structural_errors"].as_object().unwrap();
    assert!(
        se.contains_key("traceability")
            && se.contains_key("consistency")
            && se.contains_key("completeness")
    );
    assert_eq!(v["language"], "zh");
}

#[test]
fn readable_summary_has_counts() {
    let out = tvir()
        .arg("parse")
        .arg(fixture("tvir_html_figures"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("references: 3"), "{s}");
    assert!(s.contains("figures:    2"), "{s}");
}

#[test]
fn unreadable_input_exits_2_naming_the_path() {
    let out = tvir()
        .args(["parse", "/nonexistent/report/folder"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("/nonexistent/report/folder"), "{err}");
}

#[test]
fn folder_without_report_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = tvir().arg("parse").arg(dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no report.md"));
}
