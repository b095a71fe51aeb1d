//! The real stack end to end: parser, image loader, `JudgeClient` talking HTTP to the
//! in-process mock judge (schema-driven answers), outputs. A second run over the same
//! cache calls nothing and writes byte-identical results.

use crate::common;

use std::path::Path;

use common::judge::{client_engine, example_jobs, judge_client, mock_config, settings};
use tvir_engine::output;
use tvir_engine::record::{MetricStatus, ReportRecord, METRIC_NAMES};
use tvir_store::Store;
use tvir_testing::mock_judge::{MockConfig, MockJudge};

/// The example evaluated against `mock` through `JudgeClient` (cache: `store`), its
/// outputs written to `out`.
async fn run_once(mock: &MockJudge, store: &Store, out: &Path) -> Vec<ReportRecord> {
    let client = judge_client(mock_config(mock, "mock-model", 8), Some(store));
    let engine = client_engine(client, settings("mock-model"));
    let records = engine.evaluate_all(example_jobs(), &|_| {}).await;
    for r in &records {
        output::write_report(out, r).unwrap();
    }
    output::write_summary(out, &output::summary(&records, &serde_json::json!({}))).unwrap();
    records
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mock_judge_end_to_end_then_resume_from_cache_byte_identical() {
    let mock = MockJudge::start(MockConfig::default()).await;
    let store = Store::in_memory().unwrap();
    let out1 = tempfile::tempdir().unwrap();
    let records = run_once(&mock, &store, out1.path()).await;
    assert_eq!(records.len(), 6);
    let calls = mock.requests();
    assert!(calls > 0);
    for r in &records {
        let name = format!("{}/{}", r.system, r.task_id);
        assert!(r.load_error().is_none(), "{name}: {:?}", r.load_error());
        for m in METRIC_NAMES {
            let rec = &r.metrics[m];
            assert_eq!(
                rec.status,
                MetricStatus::Evaluated,
                "{name} {m}: {:?}",
                rec.note
            );
            let s = rec.score.unwrap();
            assert!((0.0..=1.0).contains(&s), "{name} {m} = {s}");
        }
        assert!(r.ta.is_some(), "{name}");
        // Every report has a VA now: a text-only one scores 0 on every visual
        // metric (METRICS.md section 5; formerly its VA was null).
        assert!(r.va.is_some(), "{name}");
        if r.figure_count() == 0 {
            assert_eq!(r.va, Some(0.0), "{name}");
        }
    }
    // IA: one call per report (all items at once); never two calls for one input.
    assert_eq!(mock.metric_count("instruction_alignment"), 6);
    assert_eq!(
        mock.answered(),
        calls,
        "no retries or repeats against a healthy mock"
    );
    // The broken image is blanked and scored 0 where a per-figure score is due.
    let b1 = records
        .iter()
        .find(|r| r.system == "system-b" && r.task_id == "ex001")
        .unwrap();
    let broken: Vec<_> = b1
        .units
        .iter()
        .filter(|u| u.detail["rule"] == "invalid_visual")
        .map(|u| u.metric.as_str())
        .collect();
    assert_eq!(
        broken,
        ["figure_caption_quality", "figure_context_integration"]
    );

    // Same arguments again over the same cache: nothing is called, same bytes.
    let out2 = tempfile::tempdir().unwrap();
    run_once(&mock, &store, out2.path()).await;
    assert_eq!(
        mock.requests(),
        calls,
        "second run must be served from the cache"
    );
    for r in &records {
        let dir = output::report_dir(Path::new(""), r);
        for f in [
            "report.json",
            "citation_support.json",
            "figure_caption_quality.json",
        ] {
            let a = std::fs::read(out1.path().join(&dir).join(f)).unwrap();
            let b = std::fs::read(out2.path().join(&dir).join(f)).unwrap();
            assert!(
                a == b,
                "{} differs after resuming from the cache",
                dir.join(f).display()
            );
        }
    }
    assert_eq!(
        std::fs::read(out1.path().join("summary.json")).unwrap(),
        std::fs::read(out2.path().join("summary.json")).unwrap()
    );
    mock.shutdown().await;
}

/// The mock's schema-derived answer is a valid answer for every built-in rubric (the
/// MC band fields included), so the end-to-end tests keep scoring every metric.
#[test]
fn the_mock_answer_validates_against_every_builtin_schema() {
    use tvir_rubric::{band_note, schema, unit_score, validate_answer, RubricSet};
    use tvir_testing::mock_judge::default_answer;
    let set = RubricSet::builtin().unwrap();
    for rubric in set.rubrics() {
        let answer = default_answer(&schema(rubric, 3));
        validate_answer(rubric, &answer, 3)
            .unwrap_or_else(|e| panic!("{}: {e}: {answer}", rubric.id));
        if rubric.is_metric() && rubric.id != "instruction_alignment" {
            let score = unit_score(rubric, &answer)
                .unwrap_or_else(|e| panic!("{}: {e}: {answer}", rubric.id));
            assert!((0.0..=1.0).contains(&score), "{}: {score}", rubric.id);
        }
    }
    // MC: the first class and zero counts give the band 1-2; the mock's variety 10
    // is scored as 2, and the unit says so.
    let mc = set.get("multimodal_composition").unwrap();
    let answer = default_answer(&schema(mc, 0));
    assert_eq!(answer["image_subtypes"], 0);
    assert_eq!(unit_score(mc, &answer).unwrap(), 12.0 / 20.0);
    assert!(band_note(mc, &answer).unwrap().contains("scored as 2"));
}
