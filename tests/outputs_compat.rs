//! Output folders written by an earlier version are read as they were:
//! `summarize` (every format), `agree` and `ablate` of this version give on the
//! folder in `tests/fixtures/outputs/tvir-0.1.0-6cca80a` (indented `report.json`,
//! every unit repeating its sources whole, `timing.json`; see its README) what they
//! give on a run of this version with the same judge answers, and its HTML pages
//! show every unit and every cited source.

use crate::common;

use std::path::{Path, PathBuf};

use common::cli::{describe, eval_example_judged, output_async, tvir_status};
use serde_json::Value;
use tvir_testing::mock_judge::{MockConfig, MockJudge};

fn fixture() -> PathBuf {
    common::repo().join("tests/fixtures/outputs/tvir-0.1.0-6cca80a")
}

/// A copy of the earlier version's folder (summarize writes into it).
fn earlier(tmp: &Path) -> PathBuf {
    let dest = tmp.join("earlier");
    copy_dir(&fixture(), &dest);
    dest
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

/// This version's run of the example: the same reports, pages and (schema-first)
/// answers as the earlier folder's.
async fn current(tmp: &Path) -> PathBuf {
    let mock = MockJudge::start(MockConfig::default()).await;
    let out = tmp.join("current");
    let mut cmd = eval_example_judged(&out, &tmp.join("cache.sqlite"), &mock.base_url(), "mock");
    cmd.arg("--assume-vision");
    let o = output_async(cmd).await;
    mock.shutdown().await;
    assert!(o.status.success(), "{}", describe(&o));
    out
}

/// `tvir ARGS` that must succeed: its standard output.
fn run(args: &[&str]) -> String {
    let (code, stdout, stderr) = tvir_status(args);
    assert_eq!(code, 0, "tvir {args:?}: {stderr}");
    stdout
}

/// A JSON output with the keys naming where it was read from removed (the folder,
/// and the protocol note, which names settings added since) and the token counts
/// (each mock server reports its own).
fn comparable(text: &str) -> Value {
    let mut v: Value = serde_json::from_str(text).unwrap();
    strip(&mut v);
    v
}

fn strip(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for k in ["root", "a", "b", "out", "notes", "usage"] {
                m.remove(k);
            }
            m.values_mut().for_each(strip);
        }
        Value::Array(a) => a.iter_mut().for_each(strip),
        _ => {}
    }
}

/// The first place two JSON values differ (path, left, right), for a readable failure.
fn first_difference(a: &Value, b: &Value, at: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => x
            .keys()
            .chain(y.keys())
            .find_map(|k| {
                first_difference(
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                    &format!("{at}/{k}"),
                )
            })
            .or_else(|| (x.len() != y.len()).then(|| format!("{at}: keys differ"))),
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (p, q))| first_difference(p, q, &format!("{at}/{i}"))),
        _ => (a != b).then(|| format!("{at}: {a} | {b}")),
    }
}

fn assert_same(a: &Value, b: &Value, what: &str) {
    if let Some(d) = first_difference(a, b, "") {
        panic!("{what} differs at {d}");
    }
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn summarize_agree_and_ablate_read_an_earlier_versions_outputs() {
    let tmp = tempfile::tempdir().unwrap();
    let old = earlier(tmp.path());
    let new = current(tmp.path()).await;
    // The earlier folder really is of the earlier form (else this test proves nothing).
    let sample = std::fs::read_to_string(old.join("system-a/ex001/mock/report.json")).unwrap();
    assert!(
        sample.starts_with("{\n  \""),
        "indented, as that version wrote it"
    );
    let record: Value = serde_json::from_str(&sample).unwrap();
    assert!(record.get("sources").is_none());
    let whole = record["units"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["metric"] == "citation_support")
        .unwrap();
    assert!(whole["detail"]["sources"][0]["url"].is_string(), "{whole}");
    let now: Value = serde_json::from_str(
        &std::fs::read_to_string(new.join("system-a/ex001/mock/report.json")).unwrap(),
    )
    .unwrap();
    assert!(now["sources"].as_array().is_some_and(|s| !s.is_empty()));

    // summarize: every text format the same; JSON the same numbers.
    let summarize = |out: &Path, format: &str| {
        run(&[
            "summarize",
            s(out),
            "--format",
            format,
            "--bootstrap",
            "200",
        ])
    };
    for format in ["table", "md", "csv"] {
        let a = summarize(&old, format);
        let b = summarize(&new, format);
        // The folders' names, and the protocol note: the earlier records do not
        // name `unread`, a setting added since (its default is what they did).
        let cut = |t: &str| {
            t.replace(s(&old), "OUT")
                .replace(s(&new), "OUT")
                .replace(", unread=ours)", ")")
        };
        assert_eq!(cut(&a), cut(&b), "summarize --format {format}");
    }
    let a = summarize(&old, "json");
    let b = summarize(&new, "json");
    assert_same(&comparable(&a), &comparable(&b), "summarize --format json");

    // agree: the earlier and the current run agree on everything, on every level.
    let agree = run(&["agree", s(&old), s(&new), "--json", "--bootstrap", "100"]);
    let agree: Value = serde_json::from_str(&agree).unwrap();
    let levels = agree["levels"].as_object().unwrap();
    assert!(levels.len() >= 12, "{agree}");
    for (name, level) in levels {
        assert_eq!(level["cells"], 6, "{name}: {level}");
        assert_eq!(level["par"], 1.0, "{name}: {level}");
    }

    // ablate: every example variant re-scores both folders alike.
    let variants: Vec<String> = std::fs::read_dir(common::examples().join("variants"))
        .unwrap()
        .flatten()
        .map(|e| e.path().display().to_string())
        .collect();
    assert!(variants.len() >= 5);
    let ablate = |out: &Path| {
        let mut args = vec!["ablate", s(out), "--format", "json", "--variant"];
        args.extend(variants.iter().map(String::as_str));
        comparable(&run(&args))
    };
    assert_same(&ablate(&old), &ablate(&new), "ablate");

    // The HTML summary of the earlier folder: each report page shows all of its
    // units and every source they cite (address included), packed or plain.
    for evidence in ["packed", "plain"] {
        let site = tmp.path().join(format!("site-{evidence}"));
        run(&[
            "summarize",
            s(&old),
            "--format",
            "html",
            "--bootstrap",
            "0",
            "--html-evidence",
            evidence,
            "--html-out",
            s(&site),
        ]);
        for system in ["system-a", "system-b"] {
            for task in ["ex001", "ex002", "ex003"] {
                let rec: Value = serde_json::from_str(
                    &std::fs::read_to_string(old.join(format!("{system}/{task}/mock/report.json")))
                        .unwrap(),
                )
                .unwrap();
                let page = site.join(format!("reports/{system}/{task}/mock-run1.html"));
                let text = std::fs::read_to_string(&page).unwrap();
                assert_eq!(text.contains("x-tvir-evidence"), evidence == "packed");
                let html = tvir_analysis::aggregate::packed::unpack_page(&text).unwrap();
                let units = rec["units"].as_array().unwrap();
                assert_eq!(
                    html.matches("<tr class=\"unit ").count(),
                    units.len(),
                    "{}",
                    page.display()
                );
                for u in units {
                    for src in u["detail"]["sources"].as_array().into_iter().flatten() {
                        let url = src["url"].as_str().unwrap();
                        let anchor = format!("<li id=\"src-{}\"", src["idx"].as_str().unwrap());
                        let listed = html.split(&anchor).nth(1).unwrap_or_else(|| {
                            panic!("{}: no source [{}]", page.display(), src["idx"])
                        });
                        let entry = &listed[..listed.find("</li>").unwrap()];
                        assert!(entry.contains(url), "{entry}");
                    }
                }
            }
        }
    }
}
