//! The judge client against the in-process mock judge: in-flight, request and
//! token limits, faults at scale, the journal, accounting and prices, dry runs and
//! cost caps, shared cache files, configuration errors, progress and Azure URLs.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::client::{ask_concurrently, config, expected, request};
use serde_json::{json, Value};
use tvir_judge::{JudgeClient, JudgeConfig, JudgeError, Part};
use tvir_store::Store;
use tvir_testing::mock_judge::{Fault, MockConfig, MockJudge, SchemaSupport};

#[tokio::test]
async fn in_flight_requests_reach_and_never_exceed_the_limit() {
    let mock = MockJudge::start(MockConfig {
        latency: Duration::from_millis(100),
        ..MockConfig::default()
    })
    .await;
    let client = JudgeClient::new(
        JudgeConfig {
            concurrency: 6,
            ..config(&mock)
        },
        None,
    )
    .unwrap();
    let results = ask_concurrently(&client, "writing_quality", "r", 0..30).await;
    for result in results {
        result.unwrap();
    }
    assert_eq!(mock.max_in_flight(), 6);
    assert_eq!(client.max_in_flight(), 6);
    assert_eq!(mock.requests(), 30);
    mock.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_percent_faults_give_the_same_answers_as_a_clean_run() {
    // Scores depend on the unit: the responder reads the claim number.
    let responder: tvir_testing::mock_judge::Responder = Arc::new(|body: &Value| {
        let text = body["messages"][1]["content"][0]["text"]
            .as_str()
            .unwrap_or("");
        let n: u64 = text
            .split_whitespace()
            .nth(2)
            .and_then(|w| w.trim_end_matches(':').parse().ok())
            .unwrap_or(0);
        let verdicts = ["supported", "partially_supported", "unsupported", "unknown"];
        json!({"justification": format!("unit {n}"),
               "verdict": verdicts[(n % 4) as usize], "confidence": 1 + n % 5})
    });
    let run = |faults: bool| {
        let responder = responder.clone();
        async move {
            let mut cfg = MockConfig {
                responder: Some(responder),
                latency: Duration::from_millis(5),
                seed: 42,
                ..MockConfig::default()
            };
            if faults {
                cfg.fault_rates = vec![
                    (
                        Fault::RateLimited {
                            retry_after: Some("0".into()),
                        },
                        0.12,
                    ),
                    (Fault::RateLimited { retry_after: None }, 0.03),
                    (Fault::ServerError, 0.05),
                    (Fault::MalformedBody, 0.04),
                    (Fault::FencedAnswer, 0.03),
                    (Fault::InvalidAnswer, 0.03),
                ];
            }
            let mock = MockJudge::start(cfg).await;
            let client = JudgeClient::new(
                JudgeConfig {
                    concurrency: 16,
                    max_attempts: 12,
                    max_reasks: 4,
                    ..config(&mock)
                },
                None,
            )
            .unwrap();
            let values: Vec<_> = ask_concurrently(&client, "citation_support", "r", 0..120)
                .await
                .into_iter()
                .map(|result| result.map(|a| a.value).map_err(|e| e.to_string()))
                .collect();
            let injected = mock.faults_injected();
            mock.shutdown().await;
            (values, injected)
        }
    };
    let (clean, none) = run(false).await;
    let (faulty, injected) = run(true).await;
    assert_eq!(none, 0);
    assert!(injected > 20, "faults were injected: {injected}");
    assert!(clean.iter().all(Result::is_ok));
    assert_eq!(clean, faulty);
}

#[tokio::test]
async fn journal_records_every_unit_and_no_secret_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("out/judge-journal.jsonl");
    let db = dir.path().join("cache.sqlite");
    let mock = MockJudge::start(MockConfig {
        script: vec![Fault::ServerError],
        ..MockConfig::default()
    })
    .await;
    let cfg = JudgeConfig {
        journal_path: Some(journal.clone()),
        ..config(&mock)
    };
    // A second server whose first answer does not validate: one re-ask.
    let reasking = MockJudge::start(MockConfig {
        script: vec![Fault::InvalidAnswer],
        ..MockConfig::default()
    })
    .await;
    let client = JudgeClient::new(cfg.clone(), Some(Store::open(&db).unwrap())).unwrap();
    client
        .ask(request("citation_support", "sys/1", 1))
        .await
        .unwrap();
    client
        .ask(request("citation_support", "sys/1", 1))
        .await
        .unwrap();
    drop(client);
    let reask_journal = dir.path().join("out/reask-journal.jsonl");
    let client = JudgeClient::new(
        JudgeConfig {
            journal_path: Some(reask_journal.clone()),
            ..config(&reasking)
        },
        None,
    )
    .unwrap();
    client
        .ask(request("citation_support", "sys/1", 2))
        .await
        .unwrap();
    drop(client);
    let line: Value = serde_json::from_str(
        std::fs::read_to_string(&reask_journal)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        (line["attempts"].clone(), line["reasks"].clone()),
        (json!(2), json!(1))
    );
    reasking.shutdown().await;
    let text = std::fs::read_to_string(&journal).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["status"], "ok");
    // A retry after a 5xx is an attempt, not a re-ask.
    assert_eq!(lines[0]["attempts"], 2);
    assert_eq!(lines[0]["reasks"], 0);
    assert_eq!(lines[0]["report"], "sys/1");
    assert_eq!(lines[0]["answer"], expected());
    assert_eq!(lines[0]["response_format"], "json_schema");
    assert_eq!(lines[1]["status"], "cache_hit");
    assert_eq!(lines[1]["cache_hit"], true);
    assert_eq!(lines[0]["request"][1]["parts"][1]["type"], "image");
    for path in [journal.clone(), db.clone()] {
        let bytes = std::fs::read(&path).unwrap();
        let hay = String::from_utf8_lossy(&bytes);
        assert!(!hay.contains("SECRET"), "{} holds the key", path.display());
        assert!(
            !hay.contains("Bearer"),
            "{} holds an auth header",
            path.display()
        );
    }
    // The WAL file too, if SQLite left one.
    let wal = dir.path().join("cache.sqlite-wal");
    if wal.exists() {
        assert!(!String::from_utf8_lossy(&std::fs::read(&wal).unwrap()).contains("SECRET"));
    }
    mock.shutdown().await;
}

#[tokio::test]
async fn accounting_per_metric_and_report_with_prices() {
    let mock = MockJudge::start(MockConfig {
        cached_tokens: 10,
        ..MockConfig::default()
    })
    .await;
    let client = JudgeClient::new(config(&mock), None).unwrap();
    client
        .ask(request("citation_support", "a/1", 1))
        .await
        .unwrap();
    client
        .ask(request("writing_quality", "a/1", 2))
        .await
        .unwrap();
    client
        .ask(request("writing_quality", "b/2", 3))
        .await
        .unwrap();
    let s = client.accounting();
    assert_eq!(s.total.calls, 3);
    assert_eq!(s.metric("writing_quality").calls, 2);
    assert_eq!(s.report("a/1").calls, 2);
    assert_eq!(s.by_report_metric["b/2"]["writing_quality"].calls, 1);
    assert_eq!(s.total.cached_tokens, 30);
    let cost = s.total.cost_usd.unwrap();
    let parts: f64 = ["a/1", "b/2"]
        .iter()
        .map(|r| s.report(r).cost_usd.unwrap())
        .sum();
    assert!((cost - parts).abs() < 1e-12 && cost > 0.0);

    // A model without a price: tokens counted, cost null.
    let unknown = JudgeClient::new(
        JudgeConfig {
            model: "local-llava".into(),
            ..config(&mock)
        },
        None,
    )
    .unwrap();
    let a = unknown
        .ask(request("citation_support", "a/1", 1))
        .await
        .unwrap();
    assert_eq!(a.cost_usd, None);
    let t = unknown.accounting().total;
    assert!(t.prompt_tokens > 0);
    assert_eq!(t.cost_usd, None);
    mock.shutdown().await;
}

#[tokio::test]
async fn dry_run_estimates_and_calls_nothing() {
    let mock = MockJudge::start(MockConfig::default()).await;
    let client = JudgeClient::new(
        JudgeConfig {
            dry_run: true,
            ..config(&mock)
        },
        None,
    )
    .unwrap();
    for i in 0..4 {
        let err = client
            .ask(request("citation_support", "a/1", i))
            .await
            .unwrap_err();
        assert!(matches!(err, JudgeError::DryRun));
    }
    assert_eq!(mock.requests(), 0);
    let t = client.accounting().total;
    assert_eq!(t.estimated_calls, 4);
    let one = client.estimate_tokens(&request("citation_support", "a/1", 0));
    assert!(t.estimated_prompt_tokens >= 4 * (one.prompt_tokens - 2));
    assert!(t.estimated_cost_usd.unwrap() > 0.0);
    assert_eq!(t.calls, 0);
    mock.shutdown().await;
}

#[tokio::test]
async fn max_cost_stops_scheduling_new_calls() {
    let mock = MockJudge::start(MockConfig::default()).await;
    let client = JudgeClient::new(
        JudgeConfig {
            max_cost_usd: Some(0.000_001),
            concurrency: 1,
            ..config(&mock)
        },
        None,
    )
    .unwrap();
    assert!(client
        .ask(request("citation_support", "a", 1))
        .await
        .is_ok());
    assert!(client.budget_exhausted());
    for i in 2..5 {
        let err = client
            .ask(request("citation_support", "a", i))
            .await
            .unwrap_err();
        assert!(matches!(err, JudgeError::BudgetExhausted), "{err}");
        assert!(err.to_string().contains("--max-cost"));
    }
    assert_eq!(mock.requests(), 1);
    assert_eq!(client.accounting().total.budget_skipped, 3);

    // A budget for a model without a price cannot be enforced: refused up front.
    let err = JudgeClient::new(
        JudgeConfig {
            model: "local-llava".into(),
            max_cost_usd: Some(1.0),
            ..config(&mock)
        },
        None,
    )
    .unwrap_err();
    assert!(err.to_string().contains("price"), "{err}");
    mock.shutdown().await;
}

#[tokio::test]
async fn rpm_limit_spaces_requests() {
    let mock = MockJudge::start(MockConfig::default()).await;
    // 120/min: a burst of 20, then one every 0.5 s.
    let client = JudgeClient::new(
        JudgeConfig {
            rpm: Some(120),
            concurrency: 32,
            ..config(&mock)
        },
        None,
    )
    .unwrap();
    let start = Instant::now();
    let results = ask_concurrently(&client, "citation_support", "r", 0..22).await;
    for result in results {
        result.unwrap();
    }
    assert!(
        start.elapsed() >= Duration::from_millis(900),
        "{:?}",
        start.elapsed()
    );
    mock.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_on_one_cache_file_are_safe() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("shared.sqlite");
    let mock = MockJudge::start(MockConfig::default()).await;
    // Two independent connections (as two processes would have) writing at once.
    let a = JudgeClient::new(config(&mock), Some(Store::open(&db).unwrap())).unwrap();
    let b = JudgeClient::new(config(&mock), Some(Store::open(&db).unwrap())).unwrap();
    let mut tasks = Vec::new();
    for i in 0..40 {
        let c = if i % 2 == 0 { a.clone() } else { b.clone() };
        tasks.push(tokio::spawn(async move {
            c.ask(request("citation_support", "r", i % 30)).await
        }));
    }
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    a.flush().await;
    b.flush().await;
    let store = Store::open(&db).unwrap();
    let rows = store
        .with_conn(|c| {
            c.query_row("SELECT COUNT(*) FROM judge_cache", [], |r| {
                r.get::<_, i64>(0)
            })
        })
        .unwrap();
    assert_eq!(rows, 30);
    mock.shutdown().await;
}

#[tokio::test]
async fn bad_configuration_is_refused_with_a_reason() {
    let base = JudgeConfig {
        model: "m".into(),
        ..JudgeConfig::default()
    };
    for (cfg, needle) in [
        (
            JudgeConfig {
                base_url: "not a url".into(),
                ..base.clone()
            },
            "base URL",
        ),
        (
            JudgeConfig {
                model: " ".into(),
                ..base.clone()
            },
            "model",
        ),
        (
            JudgeConfig {
                concurrency: 0,
                ..base.clone()
            },
            "concurrency",
        ),
        (
            JudgeConfig {
                price_table_path: Some("/nonexistent/p.toml".into()),
                ..base.clone()
            },
            "/nonexistent/p.toml",
        ),
    ] {
        let err = JudgeClient::new(cfg, None).unwrap_err();
        assert!(err.to_string().contains(needle), "{err}");
    }
    // A broken schema from the caller is reported, not sent.
    let mock = MockJudge::start(MockConfig::default()).await;
    let client = JudgeClient::new(config(&mock), None).unwrap();
    let mut r = request("citation_support", "r", 1);
    r.schema = json!({"type": "object", "properties": {"x": {"type": "float"}}});
    let err = client.ask(r).await.unwrap_err();
    assert!(err.to_string().contains("schema"), "{err}");
    assert_eq!(mock.requests(), 0);
    mock.shutdown().await;
}

#[tokio::test]
async fn progress_hook_sees_every_unit() {
    use std::sync::Mutex;
    use tvir_judge::{EntryStatus, JudgeProgress};
    let mock = MockJudge::start(MockConfig {
        script: vec![Fault::NotJson; 3],
        ..MockConfig::default()
    })
    .await;
    type Seen = Vec<(String, EntryStatus, Option<String>)>;
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let sink = seen.clone();
    let client = JudgeClient::new(
        JudgeConfig {
            max_reasks: 2,
            ..config(&mock)
        },
        Some(Store::in_memory().unwrap()),
    )
    .unwrap()
    .with_progress(Arc::new(move |p: &JudgeProgress| {
        sink.lock()
            .unwrap()
            .push((p.unit.clone(), p.status, p.error.clone()));
    }));
    assert!(client
        .ask(request("citation_support", "r", 1))
        .await
        .is_err());
    client
        .ask(request("citation_support", "r", 2))
        .await
        .unwrap();
    client
        .ask(request("citation_support", "r", 2))
        .await
        .unwrap();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3);
    assert_eq!(seen[0].1, EntryStatus::Failed);
    assert!(seen[0].2.as_deref().unwrap().contains("re-asks"));
    assert_eq!(seen[1], ("fact:2".to_string(), EntryStatus::Ok, None));
    assert_eq!(seen[2].1, EntryStatus::CacheHit);
    mock.shutdown().await;
}

#[tokio::test]
async fn tpm_limit_holds_back_requests_beyond_the_token_budget() {
    let mock = MockJudge::start(MockConfig::default()).await;
    // 60000 tokens/min: a burst of 10000, then 1000 per second.
    let client = JudgeClient::new(
        JudgeConfig {
            tpm: Some(60_000),
            max_tokens: Some(50),
            ..config(&mock)
        },
        None,
    )
    .unwrap();
    let big = |i: usize| {
        let mut r = request("citation_support", "r", i);
        r.messages[1].parts.push(Part::Text {
            text: "evidence ".repeat(2000),
        });
        r
    };
    let est = client.estimate_tokens(&big(0));
    let est = est.prompt_tokens + est.completion_tokens;
    let start = Instant::now();
    let mut used = Vec::new();
    for i in 0..3 {
        let a = client.ask(big(i)).await.unwrap();
        used.push(a.usage.prompt_tokens + a.usage.completion_tokens);
    }
    let elapsed = start.elapsed().as_secs_f64();
    // The bucket (corrected to real usage after each answer) must have refilled
    // enough for the third request: (used1 + used2 + est3 - burst) / rate.
    let must_wait = (used[0] + used[1] + est.min(10_000)) as f64 - 10_000.0;
    let must_wait = must_wait / 1000.0;
    assert!(
        must_wait > 0.3,
        "test calibration: est {est}, used {used:?}"
    );
    assert!(elapsed >= must_wait - 0.05, "{elapsed} < {must_wait}");
    mock.shutdown().await;
}

#[tokio::test]
async fn azure_deployment_urls_keep_their_query_and_send_the_key_as_api_key() {
    let mock = MockJudge::start(MockConfig {
        api_key: Some("az-key".into()),
        ..MockConfig::default()
    })
    .await;
    let base = mock
        .base_url()
        .replace("/v1", "/openai/deployments/judge-4o?api-version=2024-10-21");
    let client = JudgeClient::new(
        JudgeConfig {
            base_url: base,
            api_key: Some("az-key".into()),
            ..config(&mock)
        },
        None,
    )
    .unwrap();
    let answer = client
        .ask(request("citation_support", "sysA/1", 1))
        .await
        .unwrap();
    assert_eq!(answer.value, expected());
    assert_eq!(
        mock.request_paths(),
        vec!["/openai/deployments/judge-4o/chat/completions?api-version=2024-10-21"]
    );
    assert_eq!(
        mock.authorization_headers(),
        vec![Some("api-key az-key".to_string())],
        "the key travels as api-key, not as a bearer token"
    );
    mock.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_first_units_pay_for_a_refused_schema_once() {
    // Slow start sends the first request alone, and requests read the learnt
    // parameters after their wait for a slot: eight units starting together pay
    // one refused `json_schema` between them, not one each.
    let mock = MockJudge::start(MockConfig {
        schema_support: SchemaSupport::LlamaCpp500,
        latency: Duration::from_millis(20),
        ..MockConfig::default()
    })
    .await;
    let client = JudgeClient::new(config(&mock), None).unwrap();
    let results = ask_concurrently(&client, "writing_quality", "r", 0..8).await;
    for result in results {
        result.unwrap();
    }
    assert_eq!(mock.requests(), 9, "one refusal, eight answers");
    mock.shutdown().await;
}
