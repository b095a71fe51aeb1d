//! Metrics added with `--rubrics DIR` (one TOML file and one template each, no code):
//! the fixture metrics in `tests/fixtures/rubrics/` (a chart-level one reading the
//! chart and its cited sources, counted in VA; a report-level one counted in TA; a
//! fact-level one and a checklist one reading the revised text, counted in neither) are
//! planned, judged by the in-process mock, validated, scored, written in the
//! reference layout, shown by `summarize` in every format, and usable in `agree` and
//! `ablate`; the built-in metric files do not move. Every start-up error of a rubric
//! folder names the file, the line and the problem.

use crate::common;

use std::path::{Path, PathBuf};

use common::cli::{describe, eval_with_golden_sources, output_async, tvir_in as tvir};
use common::outputs::read_json as read;
use common::{examples, repo};
use serde_json::Value;
use tvir_testing::mock_judge::{MockConfig, MockJudge};

const ADDED: [&str; 4] = [
    "chart_data_match",
    "checklist_coverage",
    "fact_quote_check",
    "report_hedging",
];

fn fixtures() -> PathBuf {
    repo().join("tests/fixtures/rubrics")
}

/// `tvir eval` of the example against `mock`, with `extra` arguments; the output folder.
async fn eval(mock: &MockJudge, root: &Path, name: &str, extra: &[&str]) -> PathBuf {
    let out = root.join(name);
    let mut cmd = eval_with_golden_sources(
        root,
        &examples(),
        &examples().join("tasks.json"),
        &out,
        &root.join(format!("{name}.sqlite")),
        &mock.base_url(),
    );
    cmd.args(extra);
    let res = output_async(cmd).await;
    assert_eq!(res.status.code(), Some(0), "{name}: {}", describe(&res));
    out
}

fn report_dirs(out: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for system in ["system-a", "system-b"] {
        for task in ["ex001", "ex002", "ex003"] {
            dirs.push(out.join(system).join(task).join("mock-model"));
        }
    }
    dirs
}

/// Judge calls by metric, from the run's journal (one line per call, whether the
/// server or the cache answered it: two identical requests in flight at once are
/// answered either way).
fn journal_counts(out: &Path) -> std::collections::BTreeMap<String, u64> {
    assert!(
        out.join("judge-journal.jsonl.zst").is_file(),
        "{}",
        out.display()
    );
    common::outputs::journal_calls(out).0
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn added_metrics_run_end_to_end_and_built_in_outputs_do_not_move() {
    let mock = MockJudge::start(MockConfig::default()).await;
    let tmp = tempfile::tempdir().unwrap();
    let plain = eval(&mock, tmp.path(), "plain", &[]).await;
    let added = eval(
        &mock,
        tmp.path(),
        "added",
        &["--rubrics", fixtures().to_str().unwrap()],
    )
    .await;

    let mut charts_judged = 0;
    let mut facts_judged = 0;
    // Reports whose VA was checked against its parts (every example report with a
    // figure: all but system-a/ex002), and reports checked at all.
    let (mut va_checked, mut reports) = (0, 0);
    for (dir_plain, dir) in report_dirs(&plain).iter().zip(report_dirs(&added)) {
        let report = read(&dir.join("report.json"));
        reports += 1;
        // The built-in metric files are byte for byte those of a run without them.
        for m in tvir_engine::record::METRIC_NAMES {
            let f = format!("{m}.json");
            assert!(
                std::fs::read(dir_plain.join(&f)).unwrap() == std::fs::read(dir.join(&f)).unwrap(),
                "{}: {f} moved",
                dir.display()
            );
        }
        // Each added metric: its file in the reference layout, its units in report.json.
        for m in ADDED {
            let file = read(&dir.join(format!("{m}.json")));
            for key in [
                "normalized_score",
                "item_count",
                "scored_item_count",
                "evaluation_results",
            ] {
                assert!(file.get(key).is_some(), "{} {m}: no {key}", dir.display());
            }
            let metric = &report["metrics"][m];
            assert_eq!(metric["status"], "evaluated", "{} {m}", dir.display());
            assert_eq!(file["normalized_score"], metric["score"]);
        }
        // The report-level metric: one unit; the mock gives every dimension its
        // maximum, so 1.0.
        let units: Vec<&Value> = report["units"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|u| u["metric"] == "report_hedging")
            .collect();
        assert_eq!(units.len(), 1, "{}", dir.display());
        assert_eq!(report["metrics"]["report_hedging"]["score"], 1.0);
        // The chart-level metric: one unit per chart, named by the chart's figure.
        let charts: Vec<&Value> = report["units"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|u| u["metric"] == "chart_quality")
            .collect();
        let cdm: Vec<&Value> = report["units"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|u| u["metric"] == "chart_data_match")
            .collect();
        assert_eq!(
            cdm.iter().map(|u| &u["unit"]).collect::<Vec<_>>(),
            charts.iter().map(|u| &u["unit"]).collect::<Vec<_>>(),
            "{}",
            dir.display()
        );
        for u in &cdm {
            match u["detail"]["rule"].as_str() {
                // Settled by a declared rule: no answer, the rule's score (0).
                Some(rule) => {
                    assert!(
                        ["invalid_visual", "no_usable_source"].contains(&rule),
                        "{u}"
                    );
                    assert_eq!(u["score"], 0.0);
                    assert!(u["answer"].is_null());
                }
                // Judged: the cited sources reached the unit (their audit is kept), the
                // mock's first verdict ("matches") scores 1.
                None => {
                    charts_judged += 1;
                    assert_eq!(u["answer"]["verdict"], "matches", "{u}");
                    assert_eq!(u["score"], 1.0);
                    assert!(!u["detail"]["sources"].as_array().unwrap().is_empty());
                }
            }
        }
        // The fact-level metric: one unit per fact left after de-duplication, as CS;
        // the checklist one: one unit per item, as IA.
        let names = |m: &str| -> Vec<Value> {
            report["units"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|u| u["metric"] == m)
                .map(|u| u["unit"].clone())
                .collect()
        };
        assert_eq!(names("fact_quote_check"), names("citation_support"));
        assert!(!names("fact_quote_check").is_empty(), "{}", dir.display());
        assert_eq!(names("checklist_coverage"), names("instruction_alignment"));
        for u in report["units"].as_array().unwrap() {
            if u["metric"] == "fact_quote_check" && u["detail"]["rule"].is_null() {
                facts_judged += 1;
                assert_eq!(u["answer"]["verdict"], "close", "{u}");
            }
        }
        if cdm.is_empty() {
            // No chart: the declared empty score.
            assert_eq!(report["metrics"]["chart_data_match"]["score"], 0.0);
        }
        // TA is the mean of the five text metrics and report_hedging; VA also averages
        // chart_data_match.
        let score = |m: &str| report["metrics"][m]["score"].as_f64().unwrap();
        let ta: Vec<f64> = [
            "citation_support",
            "instruction_alignment",
            "writing_quality",
            "analytical_depth_breadth",
            "factual_logical_consistency",
            "report_hedging",
        ]
        .iter()
        .map(|m| score(m))
        .collect();
        assert!((report["ta"].as_f64().unwrap() - mean(&ta)).abs() < 1e-12);
        if !report["va"].is_null() {
            let va: Vec<f64> = [
                "multimodal_composition",
                "figure_quality",
                "figure_caption_quality",
                "figure_context_integration",
                "chart_source_consistency",
                "chart_data_match",
            ]
            .iter()
            .map(|m| score(m))
            .collect();
            assert!((report["va"].as_f64().unwrap() - mean(&va)).abs() < 1e-12);
            va_checked += 1;
        }
    }
    // Every report has a VA (a text-only one 0; formerly null, so 5 of 6).
    assert_eq!((reports, va_checked), (6, 6));
    assert!(charts_judged > 0, "no chart unit reached the judge");
    // Calls (each run has its own cache): the built-in metrics' counts are the same
    // in both runs; the added metrics make one call per judged chart and one per
    // report.
    let (calls_plain, calls) = (journal_counts(&plain), journal_counts(&added));
    for (m, n) in &calls_plain {
        assert_eq!(calls[m], *n, "{m}: calls moved");
    }
    assert_eq!(calls["chart_data_match"], charts_judged);
    assert_eq!(calls["report_hedging"], 6);
    assert_eq!(calls["fact_quote_check"], facts_judged);
    assert_eq!(calls["checklist_coverage"], 6);
    assert_eq!(calls.len(), calls_plain.len() + ADDED.len());
    mock.shutdown().await;

    // summarize, every format, shows both.
    for format in ["table", "md", "csv", "json", "html"] {
        let res = tvir(
            tmp.path(),
            &["summarize", added.to_str().unwrap(), "--format", format],
        );
        assert_eq!(res.status.code(), Some(0), "{format}");
        let mut text = String::from_utf8_lossy(&res.stdout).into_owned();
        if format == "html" {
            text = common::cli::summary_pages(&text);
        }
        for m in ADDED {
            assert!(text.contains(m), "summarize --format {format} lacks {m}");
        }
    }

    // agree: the added metrics are levels like any other.
    let res = tvir(
        tmp.path(),
        &[
            "agree",
            added.to_str().unwrap(),
            added.to_str().unwrap(),
            "--json",
            "--bootstrap",
            "0",
            "--level",
            "report_hedging",
            "--level",
            "chart_data_match",
        ],
    );
    let stdout = String::from_utf8_lossy(&res.stdout);
    assert_eq!(
        res.status.code(),
        Some(0),
        "{}{stdout}",
        String::from_utf8_lossy(&res.stderr)
    );
    for m in ["report_hedging", "chart_data_match"] {
        assert!(stdout.contains(m), "agree lacks {m}: {stdout}");
    }

    // ablate: with the same --rubrics, a variant that drops report_hedging from TA.
    let variant = tmp.path().join("no-hedging.toml");
    std::fs::write(
        &variant,
        "name = \"no-hedging\"\nta_metrics = [\"citation_support\", \"instruction_alignment\", \
         \"writing_quality\", \"analytical_depth_breadth\", \"factual_logical_consistency\"]\n",
    )
    .unwrap();
    let res = tvir(
        tmp.path(),
        &[
            "ablate",
            added.to_str().unwrap(),
            "--variant",
            variant.to_str().unwrap(),
            "--rubrics",
            fixtures().to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    let stdout = String::from_utf8_lossy(&res.stdout);
    assert_eq!(
        res.status.code(),
        Some(0),
        "{}{stdout}",
        String::from_utf8_lossy(&res.stderr)
    );
    // The base re-scores to what eval stored (no note that the settings differ).
    assert!(
        !stdout.contains("differs from what eval stored"),
        "{stdout}"
    );
    assert!(stdout.contains("no-hedging"), "{stdout}");
    // A variant naming an added metric is refused without the rubric folder.
    let bad = tmp.path().join("with-hedging.toml");
    std::fs::write(
        &bad,
        "name = \"with-hedging\"\nta_metrics = [\"report_hedging\"]\n",
    )
    .unwrap();
    let res = tvir(
        tmp.path(),
        &[
            "ablate",
            added.to_str().unwrap(),
            "--variant",
            bad.to_str().unwrap(),
        ],
    );
    assert_eq!(res.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert!(
        stderr.contains("unknown metric \"report_hedging\""),
        "{stderr}"
    );
}

/// A rubric folder holding the fixture metrics plus `name.toml` with `text`.
fn folder_with(name: &str, text: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("prompts")).unwrap();
    for m in ADDED {
        std::fs::copy(
            fixtures().join(format!("{m}.toml")),
            dir.path().join(format!("{m}.toml")),
        )
        .unwrap();
        std::fs::copy(
            fixtures().join(format!("prompts/{m}.j2")),
            dir.path().join(format!("prompts/{m}.j2")),
        )
        .unwrap();
    }
    std::fs::write(dir.path().join(format!("{name}.toml")), text).unwrap();
    dir
}

/// A report-level rubric `id` whose line 6 on is `extra` (to put an error on a
/// known line).
fn rubric_text(id: &str, extra: &str) -> String {
    format!(
        "id = \"{id}\"\ntitle = \"T\"\nunit = \"report\"\ninputs = [\"report_text\"]\nlevel = \"text\"\n{extra}\n[answer]\nkind = \"dimensions\"\nmin = 1\nmax = 5\ndimensions = [{{ key = \"a\", name = \"A\" }}]\n"
    )
}

/// Loading the rubric folder `dir` fails with a message holding every one of `needles`.
fn assert_refused(dir: &Path, needles: &[&str]) {
    let err = tvir_rubric::RubricSet::load(Some(dir), None)
        .map(|_| ())
        .expect_err("the folder must be refused")
        .to_string();
    for needle in needles {
        assert!(err.contains(needle), "{needle:?} not in: {err}");
    }
}

#[test]
fn start_up_errors_name_the_file_the_line_and_the_problem() {
    let template =
        "{% block system %}s{% endblock %}{% block user %}{{ report_text }}{% endblock %}";
    let with_template = |name: &str, text: &str| {
        let dir = folder_with(name, text);
        std::fs::write(dir.path().join(format!("prompts/{name}.j2")), template).unwrap();
        dir
    };

    // Unknown input: line 4 (toml's own span).
    let dir = with_template(
        "m1",
        &rubric_text("m1", "").replace("[\"report_text\"]", "[\"report_txt\"]"),
    );
    assert_refused(dir.path(), &["m1.toml", "line 4", "report_txt"]);

    // Unknown rule: line 8, and the known ones listed.
    let dir = with_template("m2", &rubric_text("m2", "\n[rules]\nno_sources = 0.0"));
    assert_refused(
        dir.path(),
        &["m2.toml:8", "unknown rule `no_sources`", "invalid_visual"],
    );

    // A known rule that does not apply to the unit kind.
    let dir = with_template("m3", &rubric_text("m3", "\n[rules]\nmissing_caption = 0.0"));
    assert_refused(
        dir.path(),
        &["m3.toml:8", "does not apply to `report` units"],
    );

    // An input the unit kind cannot be given.
    let dir = with_template(
        "m4",
        &rubric_text("m4", "").replace("[\"report_text\"]", "[\"figure_image\"]"),
    );
    assert_refused(
        dir.path(),
        &["m4.toml:4", "not available to `report` units"],
    );

    // A dependency cycle across two files.
    let dir = with_template("m5", &rubric_text("m5", "after = [\"m6\"]"));
    std::fs::write(
        dir.path().join("m6.toml"),
        rubric_text("m6", "after = [\"m5\"]"),
    )
    .unwrap();
    std::fs::write(dir.path().join("prompts/m6.j2"), template).unwrap();
    assert_refused(
        dir.path(),
        &["m5.toml:6", "dependency cycle: m5 -> m6 -> m5"],
    );

    // A rubric waiting for itself.
    let dir = with_template("m7", &rubric_text("m7", "after = [\"m7\"]"));
    assert_refused(dir.path(), &["m7.toml:6", "dependency cycle"]);

    // A dependency on no rubric.
    let dir = with_template("m8", &rubric_text("m8", "after = [\"fact_dedupe\"]"));
    assert_refused(
        dir.path(),
        &["m8.toml:6", "`fact_dedupe`, which is no rubric"],
    );

    // A missing template: the rubric's file and its `id` line.
    let dir = folder_with("m9", &rubric_text("m9", ""));
    assert_refused(dir.path(), &["m9.toml:1", "no prompt template `m9.j2`"]);

    // A broken template: the template's file.
    let dir = folder_with("m10", &rubric_text("m10", ""));
    std::fs::write(
        dir.path().join("prompts/m10.j2"),
        "{% block user %}{{ report_text ",
    )
    .unwrap();
    assert_refused(dir.path(), &["prompts/m10.j2"]);

    // No level: an added metric must say where its score goes.
    let dir = with_template(
        "m11",
        &rubric_text("m11", "").replace("level = \"text\"\n", ""),
    );
    assert_refused(dir.path(), &["m11.toml", "level"]);

    // A checklist unit needs the `items` answer.
    let dir = with_template(
        "m12",
        &rubric_text("m12", "").replace("unit = \"report\"", "unit = \"checklist\""),
    );
    assert_refused(dir.path(), &["m12.toml:3", "`items` answer"]);

    // The CLI refuses the folder at start-up (exit 2) with the same message, before
    // any report is read.
    let dir = with_template("m2", &rubric_text("m2", "\n[rules]\nno_sources = 0.0"));
    let cwd = tempfile::tempdir().unwrap();
    let res = tvir(
        cwd.path(),
        &[
            "eval",
            "--example",
            "out",
            "--rubrics",
            dir.path().to_str().unwrap(),
            "--quiet",
        ],
    );
    assert_eq!(res.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert!(stderr.contains("m2.toml:8"), "{stderr}");
    assert!(stderr.contains("unknown rule `no_sources`"), "{stderr}");
    assert!(!cwd.path().join("out").exists());

    // Without a judge, the summary names the added metrics beside the paper's.
    let cwd = tempfile::tempdir().unwrap();
    let res = tvir(
        cwd.path(),
        &[
            "eval",
            "--example",
            "out",
            "--rubrics",
            fixtures().to_str().unwrap(),
            "--no-judge",
            "--quiet",
        ],
    );
    let stdout = String::from_utf8_lossy(&res.stdout);
    assert!(res.status.success(), "{stdout}");
    let set = tvir_rubric::RubricSet::load(Some(&fixtures()), None).unwrap();
    let line = stdout
        .lines()
        .find(|l| l.contains("--no-judge"))
        .unwrap_or_else(|| panic!("no --no-judge line: {stdout}"));
    for added in set.added_metrics() {
        assert!(
            line.contains(&added.title),
            "{} missing: {line}",
            added.title
        );
    }

    // The fixture folder itself loads, and its metrics are added to the built-in ones.
    let set = tvir_rubric::RubricSet::load(Some(&fixtures()), None).unwrap();
    let ids = set.metric_ids();
    assert_eq!(&ids[10..], ADDED);
    assert_eq!(
        set.dependencies("fact_quote_check"),
        ["fact_dedup"],
        "fact units wait for de-duplication"
    );
    assert_eq!(
        set.dependencies("checklist_coverage"),
        ["figure_caption_quality"],
        "revised text waits for caption revision"
    );
    assert_eq!(
        set.metrics_at(tvir_rubric::Level::Text).last().unwrap(),
        "report_hedging"
    );
}
