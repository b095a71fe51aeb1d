//! Judge client throughput (issue 3, requirement 9), a bench binary that prints its
//! figures: 2000 calls against the in-process mock judge at 50 ms latency with 64 in
//! flight (target <= 1.1 x 2000 x 50 ms / 64 + 1 s = 2.72 s), then the same 2000
//! from a warm cache (target < 1 s). Run: `cargo bench --bench judge`.
//! `JUDGE_BENCH_CALLS`, `JUDGE_BENCH_LATENCY_MS` and `JUDGE_BENCH_CONCURRENCY`
//! override the defaults; `JUDGE_BENCH_ROUNDS` repeats the measurement.

use std::time::{Duration, Instant};

use serde_json::json;
use tvir_judge::{JudgeClient, JudgeConfig, JudgeRequest, Message, Part, Role};
use tvir_store::Store;
use tvir_testing::mock_judge::{MockConfig, MockJudge};

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn request(i: usize) -> JudgeRequest {
    JudgeRequest {
        metric: "writing_quality".into(),
        report: format!("bench/{}", i % 50),
        unit: format!("unit:{i}"),
        messages: vec![
            Message {
                role: Role::System,
                parts: vec![Part::Text {
                    text: "You grade the writing quality of a research report.".into(),
                }],
            },
            Message {
                role: Role::User,
                parts: vec![Part::Text {
                    text: format!("Report excerpt {i}: {}", "lorem ipsum ".repeat(100)),
                }],
            },
        ],
        schema: json!({
            "type": "object",
            "properties": {
                "justification": {"type": "string"},
                "scores": {"type": "object", "properties": {
                    "clarity": {"type": "integer", "minimum": 1, "maximum": 10},
                    "structure": {"type": "integer", "minimum": 1, "maximum": 10},
                    "fluency": {"type": "integer", "minimum": 1, "maximum": 10},
                    "style": {"type": "integer", "minimum": 1, "maximum": 10}
                }, "required": ["clarity", "structure", "fluency", "style"],
                   "additionalProperties": false}
            },
            "required": ["justification", "scores"],
            "additionalProperties": false
        }),
        sample: 0,
    }
}

async fn run_all(client: &JudgeClient, calls: usize) -> Duration {
    let start = Instant::now();
    let tasks: Vec<_> = (0..calls)
        .map(|i| {
            let c = client.clone();
            tokio::spawn(async move { c.ask(request(i)).await })
        })
        .collect();
    for t in tasks {
        t.await
            .expect("task")
            .expect("every bench call is answered");
    }
    start.elapsed()
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing special.
    // Either way we just run.
    let calls: usize = env_or("JUDGE_BENCH_CALLS", 2000);
    let latency_ms: u64 = env_or("JUDGE_BENCH_LATENCY_MS", 50);
    let concurrency: usize = env_or("JUDGE_BENCH_CONCURRENCY", 64);
    let rounds: usize = env_or("JUDGE_BENCH_ROUNDS", 3);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(async move {
        let target = 1.1 * (calls as f64 * latency_ms as f64 / 1000.0 / concurrency as f64) + 1.0;
        println!(
            "judge bench: {calls} calls, {latency_ms} ms mock latency, concurrency {concurrency}, \
             {rounds} round(s); cold target <= {target:.2} s, warm target < 1 s"
        );
        for round in 1..=rounds {
            let mock = MockJudge::start(MockConfig {
                latency: Duration::from_millis(latency_ms),
                ..MockConfig::default()
            })
            .await;
            let dir = tempfile::tempdir().expect("temp dir");
            let store = Store::open(&dir.path().join("bench-cache.sqlite")).expect("cache");
            let config = JudgeConfig {
                base_url: mock.base_url(),
                api_key: Some("bench".into()),
                model: "gpt-4o-mini".into(),
                concurrency,
                journal_path: Some(dir.path().join("journal.jsonl")),
                ..JudgeConfig::default()
            };
            let client = JudgeClient::new(config.clone(), Some(store.clone())).expect("client");
            let cold = run_all(&client, calls).await;
            let sent = mock.requests();
            let max_in_flight = mock.max_in_flight();
            // Warm: a fresh client (a re-run) on the same cache file.
            let warm_client = JudgeClient::new(config, Some(store)).expect("client");
            let warm = run_all(&warm_client, calls).await;
            let warm_sent = mock.requests() - sent;
            println!(
                "round {round}: cold {:.3} s ({} requests, max in flight {}, {}), \
                 warm {:.3} s ({} requests, {})",
                cold.as_secs_f64(),
                sent,
                max_in_flight,
                if cold.as_secs_f64() <= target {
                    "PASS"
                } else {
                    "FAIL"
                },
                warm.as_secs_f64(),
                warm_sent,
                if warm.as_secs_f64() < 1.0 && warm_sent == 0 {
                    "PASS"
                } else {
                    "FAIL"
                },
            );
            mock.shutdown().await;
        }
    });
}
