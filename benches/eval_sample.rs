//! Wall time and judge-call count of evaluating TVIR's sample report
//! (`$TVIR_CORPUS_DIR/reports/tvir/claude-4-5-000001`, task 000001) against a
//! schema-driven judge that answers every request after 100 ms.
//! Target (issue 5): <= 6 s wall, <= 144 judge calls. Run: `scripts/perf_sample.sh`.

// The checkout's one skip rule (`TVIR_REQUIRE_ALL_TESTS=1` turns a skip into a failure).
#[path = "../tests/common/skip.rs"]
mod skip_rule;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use futures::future::BoxFuture;
use serde_json::{json, Value};
use tvir_engine::{discover, load_tasks, Engine, EvalSettings};
use tvir_judge::Judge;
use tvir_judge::{JudgeAnswer, JudgeError, JudgeRequest};
use tvir_rubric::RubricSet;
use tvir_testing::stubs;

/// The first allowed value of every field, built from the request's schema.
fn answer_from_schema(schema: &Value) -> Value {
    if let Some(options) = schema["enum"].as_array() {
        return options.last().cloned().unwrap_or(Value::Null);
    }
    match schema["type"].as_str() {
        Some("object") => {
            let mut out = serde_json::Map::new();
            if let Some(props) = schema["properties"].as_object() {
                for (k, v) in props {
                    out.insert(k.clone(), answer_from_schema(v));
                }
            }
            Value::Object(out)
        }
        Some("integer") | Some("number") => schema["maximum"]
            .clone()
            .as_i64()
            .map_or(json!(0), |m| json!(m)),
        Some("boolean") => json!(false),
        Some("array") => json!([]),
        _ => json!("ok"),
    }
}

struct SlowJudge {
    delay: Duration,
    calls: AtomicU64,
}

impl Judge for SlowJudge {
    fn ask(&self, request: JudgeRequest) -> BoxFuture<'_, Result<JudgeAnswer, JudgeError>> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            let value = answer_from_schema(&request.schema);
            Ok(stubs::answer(value, "mock", self.delay.as_millis() as u64))
        })
    }
}

fn bench(c: &mut Criterion) {
    let Some(corpus) = std::env::var_os("TVIR_CORPUS_DIR").map(PathBuf::from) else {
        skip_rule::skip("TVIR_CORPUS_DIR not set");
        return;
    };
    let report_dir = corpus.join("reports/tvir/claude-4-5-000001");
    let tasks = load_tasks(&corpus.join("tvir-query.json")).expect("task file");
    let task = tasks.get("000001").cloned();
    let jobs = discover(&report_dir).expect("sample report");
    let rubrics = Arc::new(RubricSet::builtin().unwrap());
    let rt = tokio::runtime::Runtime::new().unwrap();
    let run_once = || {
        let judge = Arc::new(SlowJudge {
            delay: Duration::from_millis(100),
            calls: AtomicU64::new(0),
        });
        let engine = Engine::new(
            rubrics.clone(),
            Some(judge.clone() as Arc<dyn Judge>),
            // Every cited page "fetched" with a short text (no network in a bench).
            Some(Arc::new(stubs::TextPages(|url: &str| {
                format!("Text of {url}.")
            }))),
            EvalSettings::default(),
        );
        let jobs = jobs.iter().cloned().map(|j| (j, task.clone())).collect();
        let recs = rt.block_on(engine.evaluate_all(jobs, &|_| {}));
        (judge.calls.load(Ordering::Relaxed), recs)
    };
    let started = std::time::Instant::now();
    let (calls, recs) = run_once();
    let r = &recs[0];
    let count = |m: &str| r.units.iter().filter(|u| u.metric == m).count();
    eprintln!(
        "sample report: {calls} judge calls, {:.2} s wall (first run); CS units {}, fact_dedup calls {}, figures {}; error {:?}",
        started.elapsed().as_secs_f64(),
        count("citation_support"),
        count("fact_dedup"),
        r.figure_count(),
        r.load_error()
    );
    let mut group = c.benchmark_group("eval_sample");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    group.bench_function("claude-4-5-000001 @ 100 ms judge", |b| b.iter(run_once));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
