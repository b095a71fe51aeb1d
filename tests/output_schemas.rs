//! The JSON Schemas of the output files (`schemas/`, printed by `tvir schema`): each
//! is generated from the type that writes its file, the committed file is the
//! generated one (`TVIR_UPDATE_DOCS=1 cargo test --release --test suite
//! output_schemas::` writes them), the binary carries the committed files, and every
//! output of a judged run of the shipped example validates against its schema while
//! a file of the wrong shape does not.

use std::path::{Path, PathBuf};

use serde_json::Value;
use tvir_testing::mock_judge::{MockConfig, MockJudge};

use crate::common;
use common::cli::{describe, eval_example_judged, output_async, tvir_status};

/// Every schema: its name and the schema generated from the type that writes it.
fn generated() -> Vec<(&'static str, Value)> {
    let to_value = |s: schemars::Schema| serde_json::to_value(s).unwrap();
    vec![
        (
            "report",
            to_value(schemars::schema_for!(
                tvir_engine::output::ReportFile<'static>
            )),
        ),
        (
            "metric",
            to_value(schemars::schema_for!(tvir_engine::record::MetricFile)),
        ),
        (
            "summary",
            to_value(schemars::schema_for!(tvir_engine::output::SummaryFile)),
        ),
        (
            "run",
            to_value(schemars::schema_for!(tvir_engine::output::RunStatsFile)),
        ),
        (
            "journal-line",
            to_value(schemars::schema_for!(
                tvir_judge::journal::JournalEntry<'static>
            )),
        ),
        (
            "agree",
            to_value(schemars::schema_for!(tvir_analysis::agree::AgreeReport)),
        ),
    ]
}

fn schema_path(name: &str) -> PathBuf {
    common::repo().join(format!("schemas/{name}.schema.json"))
}

fn committed(name: &str) -> Value {
    let path = schema_path(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn validator(name: &str) -> jsonschema::Validator {
    jsonschema::validator_for(&committed(name))
        .unwrap_or_else(|e| panic!("schemas/{name}.schema.json is not a valid schema: {e}"))
}

/// The validation errors of `doc` against schema `name`, one line each.
fn errors(v: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    v.iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

#[test]
fn committed_schemas_are_generated_from_the_types_that_write_the_files() {
    let names: Vec<&str> = tvir_cli::schema::SCHEMAS
        .iter()
        .map(|(n, _, _)| *n)
        .collect();
    let gen = generated();
    assert_eq!(
        names,
        gen.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        "tvir schema and this test list different schemas"
    );
    let updating = std::env::var_os("TVIR_UPDATE_DOCS").is_some_and(|v| v == "1");
    let mut stale = Vec::new();
    for (name, schema) in gen {
        let text = serde_json::to_string_pretty(&schema).unwrap() + "\n";
        let path = schema_path(name);
        if updating {
            std::fs::write(&path, &text).unwrap();
        } else if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            stale.push(path.display().to_string());
        }
        // Each names real properties: a schema of `{}` would accept anything.
        assert!(
            schema["properties"]
                .as_object()
                .is_some_and(|p| p.len() >= 3),
            "{name}: no properties in {schema}"
        );
    }
    assert!(
        stale.is_empty(),
        "out of date (TVIR_UPDATE_DOCS=1 cargo test --release --test suite output_schemas:: \
         rewrites them; rebuild so the binary carries them): {stale:?}"
    );
    // The binary carries the committed files, byte for byte.
    for (name, _, _) in tvir_cli::schema::SCHEMAS {
        let (code, stdout, stderr) = tvir_status(&["schema", name]);
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(
            stdout,
            std::fs::read_to_string(schema_path(name)).unwrap(),
            "tvir schema {name}"
        );
    }
    let (code, _, stderr) = tvir_status(&["schema", "no-such-schema"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("report, metric, summary"), "{stderr}");
}

/// `report.json` and the per-metric files of every report folder under `out`.
fn report_folders(out: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(out)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_name() == "report.json")
        .map(|e| e.path().parent().unwrap().to_path_buf())
        .collect()
}

fn read(path: &Path) -> Value {
    common::outputs::read_json(path)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_judged_runs_outputs_validate_against_the_schemas_and_broken_ones_do_not() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let mock = MockJudge::start(MockConfig::default()).await;
    let cmd = eval_example_judged(
        &out,
        &dir.path().join("cache.sqlite"),
        &mock.base_url(),
        "mock-model",
    );
    let o = output_async(cmd).await;
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", describe(&o));

    let report_v = validator("report");
    let metric_v = validator("metric");
    let folders = report_folders(&out);
    assert_eq!(folders.len(), 6, "two systems x three tasks");
    let mut metric_files = 0;
    for folder in &folders {
        let report = read(&folder.join("report.json"));
        let errs = errors(&report_v, &report);
        assert!(errs.is_empty(), "{}: {errs:#?}", folder.display());
        for metric in report["metrics"].as_object().unwrap().keys() {
            let path = folder.join(format!("{metric}.json"));
            let errs = errors(&metric_v, &read(&path));
            assert!(errs.is_empty(), "{}: {errs:#?}", path.display());
            metric_files += 1;
        }
    }
    assert!(metric_files >= 6 * 10, "{metric_files} metric files");

    let summary = read(&out.join("summary.json"));
    let errs = errors(&validator("summary"), &summary);
    assert!(errs.is_empty(), "summary.json: {errs:#?}");
    let run = read(&out.join("run.json"));
    let errs = errors(&validator("run"), &run);
    assert!(errs.is_empty(), "run.json: {errs:#?}");

    let mut journal = String::new();
    std::io::Read::read_to_string(
        &mut tvir_judge::journal::open_lines(&out.join("judge-journal.jsonl.zst")).unwrap(),
        &mut journal,
    )
    .unwrap();
    let journal_v = validator("journal-line");
    let lines: Vec<Value> = journal
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!lines.is_empty(), "a judged run journals its calls");
    for (k, line) in lines.iter().enumerate() {
        let errs = errors(&journal_v, line);
        assert!(errs.is_empty(), "journal line {}: {errs:#?}", k + 1);
    }

    let o_str = out.to_str().unwrap();
    let (code, stdout, stderr) =
        tvir_status(&["agree", o_str, o_str, "--json", "--bootstrap", "20"]);
    assert_eq!(code, 0, "{stderr}");
    let agree: Value = serde_json::from_str(&stdout).unwrap();
    let errs = errors(&validator("agree"), &agree);
    assert!(errs.is_empty(), "tvir agree --json: {errs:#?}");

    // The schemas are not permissive: the same files with one value of the wrong
    // type or an unknown status are rejected, each at the field that broke.
    let mut broken = read(&folders[0].join("report.json"));
    broken["units"][0]["status"] = Value::from("maybe");
    assert!(
        errors(&report_v, &broken)
            .iter()
            .any(|e| e.contains("/units/0/status")),
        "{:?}",
        errors(&report_v, &broken)
    );
    let mut broken = read(&folders[0].join("report.json"));
    broken["n_figures"] = Value::from("three");
    assert!(!errors(&report_v, &broken).is_empty());
    let mut broken = summary.clone();
    let system = broken["systems"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    broken["systems"][&system]["tasks"] = Value::from(-1);
    assert!(!errors(&validator("summary"), &broken).is_empty());
    let mut broken = lines[0].clone();
    broken["status"] = Value::from("lost");
    assert!(!errors(&journal_v, &broken).is_empty());
    let mut broken = run.clone();
    broken.as_object_mut().unwrap().remove("reports");
    assert!(
        !errors(&validator("run"), &broken).is_empty(),
        "a required field"
    );
}
