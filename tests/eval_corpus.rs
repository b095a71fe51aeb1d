//! The pipeline on the real reports of the corpus (`TVIR_CORPUS_DIR`), with a judge
//! that answers every request from its schema. Checks the invariants that must hold
//! for any report: no panic, every unit scored/failed/skipped with a reason, scores in
//! [0, 1], the stored answers re-score to the same numbers, VA null iff text-only.

use crate::common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{json, Value};
use tvir_engine::record::{MetricStatus, UnitStatus};
use tvir_engine::{discover, load_tasks, match_task, rescore, Engine, EvalSettings};
use tvir_judge::Judge;
use tvir_judge::{JudgeAnswer, JudgeError, JudgeRequest};
use tvir_rubric::RubricSet;
use tvir_testing::stubs;

/// A value for every field of a schema: the middle of each range, the first enum.
fn answer_from_schema(schema: &Value) -> Value {
    if let Some(options) = schema["enum"].as_array() {
        return options.first().cloned().unwrap_or(Value::Null);
    }
    match schema["type"].as_str() {
        Some("object") => Value::Object(
            schema["properties"]
                .as_object()
                .map(|p| {
                    p.iter()
                        .map(|(k, v)| (k.clone(), answer_from_schema(v)))
                        .collect()
                })
                .unwrap_or_default(),
        ),
        Some("integer") | Some("number") => {
            let lo = schema["minimum"].as_i64().unwrap_or(0);
            let hi = schema["maximum"].as_i64().unwrap_or(lo + 4);
            json!((lo + hi) / 2)
        }
        Some("boolean") => json!(false),
        Some("array") => json!([]),
        _ => json!("text"),
    }
}

struct SchemaJudge(AtomicU64);

impl Judge for SchemaJudge {
    fn ask(&self, request: JudgeRequest) -> BoxFuture<'_, Result<JudgeAnswer, JudgeError>> {
        self.0.fetch_add(1, Ordering::Relaxed);
        let value = answer_from_schema(&request.schema);
        Box::pin(async move { Ok(stubs::answer(value, "schema", 0)) })
    }
}

#[test]
fn corpus_reports_evaluate_with_consistent_scores() {
    let Some(corpus) = common::corpus_dir() else {
        return;
    };
    let tasks = load_tasks(&corpus.join("tvir-query.json")).unwrap();
    let jobs = discover(&corpus.join("reports")).unwrap();
    assert!(jobs.len() >= 9, "corpus reports found: {}", jobs.len());
    let rubrics = Arc::new(RubricSet::builtin().unwrap());
    let judge = Arc::new(SchemaJudge(AtomicU64::new(0)));
    let engine = Engine::new(
        rubrics.clone(),
        Some(judge.clone() as Arc<dyn Judge>),
        None,
        EvalSettings::default(),
    );
    let planned: Vec<_> = jobs
        .into_iter()
        .map(|j| {
            let t = match_task(&j.folder, &tasks).cloned();
            (j, t)
        })
        .collect();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let expected = planned.len();
    let records = rt.block_on(engine.evaluate_all(planned, &|_| {}));
    assert_eq!(records.len(), expected);
    for r in &records {
        let name = format!("{}/{}", r.system, r.task_id);
        // Every corpus report parses (tests/parse_corpus.rs); one that failed to load
        // here must fail the test, not skip its checks.
        assert!(r.load_error().is_none(), "{name}: {:?}", r.load_error());
        for u in &r.units {
            assert!(
                u.status == UnitStatus::Scored || u.reason.is_some(),
                "{name} {}: {:?} without reason",
                u.unit,
                u.status
            );
            if let Some(s) = u.score {
                assert!((0.0..=1.0).contains(&s), "{name} {} score {s}", u.unit);
            }
        }
        for (m, rec) in &r.metrics {
            if let Some(s) = rec.score {
                assert!((0.0..=1.0).contains(&s), "{name} {m} = {s}");
            }
        }
        // With no pages the CS units are settled by rule; the judged text metrics are
        // evaluated for every parsed report.
        for m in ["writing_quality", "factual_logical_consistency"] {
            assert_eq!(r.metrics[m].status, MetricStatus::Evaluated, "{name} {m}");
        }
        if r.figure_count() == 0 {
            // A text-only report: every visual metric 0, so VA 0 and Overall TA / 2
            // (METRICS.md section 5; formerly both null).
            assert_eq!(r.va, Some(0.0), "{name}: text-only");
            assert_eq!(r.overall, r.ta.map(|t| t / 2.0), "{name}: text-only");
        }
        assert_eq!(
            &rescore(r, &rubrics, &EvalSettings::default().score),
            r,
            "{name}"
        );
    }
}
