//! The judge client against the in-process mock judge: every protocol, retry,
//! fallback, cache, accounting, journal and limit path.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tvir_judge::{JudgeClient, JudgeConfig, JudgeError, JudgeRequest, Message, Part, Role};
use tvir_store::Store;
use tvir_testing::mock_judge::{default_answer, Fault, MockConfig, MockJudge, SchemaSupport};

const PNG_1X1: &str = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

fn cs_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "justification": {"type": "string"},
            "verdict": {"type": "string",
                        "enum": ["supported", "partially_supported", "unsupported", "unknown"]},
            "confidence": {"type": "integer", "minimum": 1, "maximum": 5}
        },
        "required": ["justification", "verdict", "confidence"],
        "additionalProperties": false
    })
}

fn request(metric: &str, report: &str, unit: usize) -> JudgeRequest {
    JudgeRequest {
        metric: metric.into(),
        report: report.into(),
        unit: format!("fact:{unit}"),
        messages: vec![
            Message {
                role: Role::System,
                parts: vec![Part::Text {
                    text: "You check whether a source supports a claim.".into(),
                }],
            },
            Message {
                role: Role::User,
                parts: vec![
                    Part::Text {
                        text: format!("Claim number {unit}: the sky is blue."),
                    },
                    Part::Image {
                        data_uri: PNG_1X1.into(),
                    },
                ],
            },
        ],
        schema: cs_schema(),
        sample: 0,
    }
}

fn config(mock: &MockJudge) -> JudgeConfig {
    JudgeConfig {
        base_url: mock.base_url(),
        api_key: Some("sk-test-SECRET-123".into()),
        model: "gpt-4o".into(),
        concurrency: 8,
        timeout: Duration::from_secs(5),
        max_attempts: 6,
        max_reasks: 2,
        ..JudgeConfig::default()
    }
}

/// `ask` for every unit of `units` at once, each in its own task; results in unit
/// order.
async fn ask_concurrently(
    client: &JudgeClient,
    metric: &'static str,
    report: &'static str,
    units: std::ops::Range<usize>,
) -> Vec<Result<tvir_judge::JudgeAnswer, JudgeError>> {
    let tasks: Vec<_> = units
        .map(|i| {
            let c = client.clone();
            tokio::spawn(async move { c.ask(request(metric, report, i)).await })
        })
        .collect();
    let mut results = Vec::with_capacity(tasks.len());
    for t in tasks {
        results.push(t.await.expect("the task ran to its end"));
    }
    results
}

/// Faster backoff is not configurable from outside, so fault tests use
/// `Retry-After: 0` where they can; 5xx retries wait the default backoff (~0.5 s).
fn expected() -> Value {
    default_answer(&cs_schema())
}

#[tokio::test]
async fn answers_are_valid_and_requests_follow_the_protocol() {
    let mock = MockJudge::start(MockConfig::default()).await;
    let client = JudgeClient::new(
        JudgeConfig {
            seed: Some(7),
            max_tokens: Some(500),
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
    assert_eq!(answer.model, "gpt-4o");
    assert_eq!(answer.attempts, 1);
    assert!(!answer.cached);
    assert!(answer.usage.prompt_tokens > 0);
    assert!(answer.cost_usd.unwrap() > 0.0);

    let body = &mock.bodies()[0];
    assert_eq!(body["model"], "gpt-4o");
    assert_eq!(body["temperature"], 0);
    assert_eq!(body["seed"], 7);
    assert_eq!(body["max_tokens"], 500);
    assert_eq!(body["response_format"]["type"], "json_schema");
    assert_eq!(
        body["response_format"]["json_schema"]["name"],
        "citation_support"
    );
    assert_eq!(body["response_format"]["json_schema"]["strict"], true);
    assert_eq!(
        body["response_format"]["json_schema"]["schema"],
        cs_schema()
    );
    assert_eq!(body["messages"][0]["role"], "system");
    let parts = &body["messages"][1]["content"];
    assert_eq!(parts[1]["type"], "image_url");
    assert_eq!(parts[1]["image_url"]["url"], PNG_1X1);
    assert_eq!(
        mock.authorization_headers()[0].as_deref(),
        Some("Bearer sk-test-SECRET-123")
    );
    assert_eq!(mock.metric_count("citation_support"), 1);
    mock.shutdown().await;
}

#[tokio::test]
async fn a_rerun_is_served_from_the_cache_with_zero_calls() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("cache.sqlite");
    let mock = MockJudge::start(MockConfig::default()).await;
    {
        let client = JudgeClient::new(config(&mock), Some(Store::open(&db).unwrap())).unwrap();
        for i in 0..5 {
            client
                .ask(request("citation_support", "a/1", i))
                .await
                .unwrap();
        }
        assert_eq!(client.accounting().total.calls, 5);
    }
    assert_eq!(mock.requests(), 5);
    // A new process: a fresh store handle on the same file.
    let client = JudgeClient::new(config(&mock), Some(Store::open(&db).unwrap())).unwrap();
    for i in 0..5 {
        let a = client
            .ask(request("citation_support", "other/9", i))
            .await
            .unwrap();
        assert!(a.cached);
        assert_eq!(a.value, expected());
        assert_eq!(a.cost_usd, Some(0.0));
    }
    assert_eq!(mock.requests(), 5, "a repeated run makes zero calls");
    let t = client.accounting().total;
    assert_eq!((t.calls, t.cache_hits, t.prompt_tokens), (0, 5, 0));
    // Another sample index is another question.
    let mut r = request("citation_support", "a/1", 0);
    r.sample = 1;
    assert!(!client.ask(r).await.unwrap().cached);
    assert_eq!(mock.requests(), 6);
    // Another model is another question too.
    let other = JudgeClient::new(
        JudgeConfig {
            model: "gpt-4o-mini".into(),
            ..config(&mock)
        },
        Some(Store::open(&db).unwrap()),
    )
    .unwrap();
    assert!(
        !other
            .ask(request("citation_support", "a/1", 0))
            .await
            .unwrap()
            .cached
    );
    mock.shutdown().await;
}

#[tokio::test]
async fn rate_limits_with_retry_after_are_honoured() {
    let mock = MockJudge::start(MockConfig {
        script: vec![Fault::RateLimited {
            retry_after: Some("1".into()),
        }],
        ..MockConfig::default()
    })
    .await;
    let client = JudgeClient::new(config(&mock), None).unwrap();
    let start = Instant::now();
    let a = client
        .ask(request("citation_support", "r", 1))
        .await
        .unwrap();
    assert!(
        start.elapsed() >= Duration::from_secs(1),
        "waited {:?}",
        start.elapsed()
    );
    assert_eq!(a.attempts, 2);
    assert_eq!(a.value, expected());
    assert_eq!(mock.requests(), 2);
    mock.shutdown().await;
}

#[tokio::test]
async fn server_errors_and_malformed_bodies_are_retried() {
    let mock = MockJudge::start(MockConfig {
        script: vec![Fault::ServerError, Fault::MalformedBody, Fault::Unavailable],
        ..MockConfig::default()
    })
    .await;
    let client = JudgeClient::new(config(&mock), None).unwrap();
    let a = client
        .ask(request("citation_support", "r", 1))
        .await
        .unwrap();
    assert_eq!(a.attempts, 4);
    assert_eq!(a.value, expected());
    assert_eq!(client.accounting().total.attempts, 4);
    mock.shutdown().await;
}

#[tokio::test]
async fn attempts_are_bounded_and_the_unit_fails_with_the_reason() {
    let mock = MockJudge::start(MockConfig {
        script: vec![
            Fault::RateLimited {
                retry_after: Some("0".into())
            };
            10
        ],
        ..MockConfig::default()
    })
    .await;
    let client = JudgeClient::new(
        JudgeConfig {
            max_attempts: 3,
            ..config(&mock)
        },
        None,
    )
    .unwrap();
    let err = client
        .ask(request("citation_support", "r", 1))
        .await
        .unwrap_err();
    let JudgeError::Failed(reason) = err else {
        panic!("expected a failure, got {err:?}");
    };
    assert!(
        reason.contains("3 attempts") && reason.contains("429"),
        "{reason}"
    );
    assert_eq!(mock.requests(), 3);
    assert_eq!(client.accounting().total.failed_calls, 1);
    mock.shutdown().await;
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let mock = MockJudge::start(MockConfig {
        api_key: Some("the-right-key".into()),
        ..MockConfig::default()
    })
    .await;
    let client = JudgeClient::new(config(&mock), None).unwrap();
    let err = client
        .ask(request("citation_support", "r", 1))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("HTTP 401"), "{err}");
    assert!(!err.to_string().contains("SECRET"), "{err}");
    assert_eq!(mock.requests(), 1);
    // A wrong key refuses every request: the rest of the run makes no call and
    // says why.
    for unit in 2..6 {
        let err = client
            .ask(request("citation_support", "r", unit))
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("refused an earlier call"), "{err}");
        assert!(err.contains("HTTP 401"), "{err}");
    }
    assert_eq!(mock.requests(), 1);

    // Units queued behind the refused one (slow start sends one at a time) are not
    // sent either.
    let results = ask_concurrently(&client, "citation_support", "q", 10..18).await;
    for result in results {
        assert!(result.is_err());
    }
    assert_eq!(mock.requests(), 1);
    let fresh = JudgeClient::new(config(&mock), None).unwrap();
    let results = ask_concurrently(&fresh, "citation_support", "q", 20..28).await;
    for result in results {
        assert!(result.is_err());
    }
    assert_eq!(
        mock.requests(),
        2,
        "eight concurrent units, one refused call"
    );
    mock.shutdown().await;

    // An unknown model (404) too (a text request: the test's own has an image);
    // a 400 for one request's content does not stop the others.
    let text_only = |unit: usize| {
        let mut r = request("citation_support", "r", unit);
        r.messages[1]
            .parts
            .retain(|p| matches!(p, Part::Text { .. }));
        r
    };
    let mock = MockJudge::start(MockConfig {
        script: vec![Fault::ContentRejected, Fault::ModelNotFound],
        ..MockConfig::default()
    })
    .await;
    let client = JudgeClient::new(config(&mock), None).unwrap();
    let err = client.ask(text_only(1)).await.unwrap_err().to_string();
    assert!(err.contains("HTTP 400"), "{err}");
    let err = client.ask(text_only(2)).await.unwrap_err().to_string();
    assert!(err.contains("HTTP 404"), "one 400 stops nothing: {err}");
    let err = client.ask(text_only(3)).await.unwrap_err().to_string();
    assert!(err.contains("refused an earlier call"), "{err}");
    assert_eq!(mock.requests(), 2);
    // A base URL without /v1 (the mock serves /v1/chat/completions only) gets a
    // 404 for every path: the later units say what to check.
    let bare = mock.base_url().trim_end_matches("/v1").to_string();
    let client = JudgeClient::new(
        JudgeConfig {
            base_url: bare,
            ..config(&mock)
        },
        None,
    )
    .unwrap();
    let err = client.ask(text_only(4)).await.unwrap_err().to_string();
    assert!(err.contains("HTTP 404"), "{err}");
    let err = client.ask(text_only(5)).await.unwrap_err().to_string();
    assert!(err.contains("does the base URL lack /v1?"), "{err}");
    mock.shutdown().await;
}

#[tokio::test]
async fn slow_answers_time_out_and_are_retried() {
    let mock = MockJudge::start(MockConfig {
        script: vec![Fault::Slow(Duration::from_secs(3))],
        ..MockConfig::default()
    })
    .await;
    let client = JudgeClient::new(
        JudgeConfig {
            timeout: Duration::from_millis(400),
            ..config(&mock)
        },
        None,
    )
    .unwrap();
    let a = client
        .ask(request("citation_support", "r", 1))
        .await
        .unwrap();
    assert_eq!(a.attempts, 2);

    let mock2 = MockJudge::start(MockConfig {
        latency: Duration::from_secs(3),
        ..MockConfig::default()
    })
    .await;
    let client = JudgeClient::new(
        JudgeConfig {
            timeout: Duration::from_millis(200),
            max_attempts: 2,
            ..config(&mock2)
        },
        None,
    )
    .unwrap();
    let err = client
        .ask(request("citation_support", "r", 1))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("timed out"), "{err}");
    mock.shutdown().await;
    mock2.shutdown().await;
}

/// A single-slot server that keeps working on requests whose client gave up:
/// with a fixed eight in flight, the queue makes later requests time out, their
/// retries queue behind abandoned work, and units fail. The in-flight limit starts
/// at one and halves on queued answers and on timeouts, so every unit is answered
/// without flooding the server.
#[tokio::test]
async fn a_single_slot_server_is_not_flooded_with_retries() {
    let mock = MockJudge::start(MockConfig {
        latency: Duration::from_millis(150),
        slots: Some(1),
        ..MockConfig::default()
    })
    .await;
    let client = JudgeClient::new(
        JudgeConfig {
            timeout: Duration::from_millis(500),
            concurrency: 8,
            max_attempts: 6,
            ..config(&mock)
        },
        None,
    )
    .unwrap();
    let client = Arc::new(client);
    let results = ask_concurrently(&client, "citation_support", "r", 0..16).await;
    for result in results {
        let a = result.expect("every unit is answered in the end");
        assert_eq!(a.value, expected());
    }
    // With a fixed limit of eight this run takes about 50 requests: the queue times
    // requests out and their retries queue behind the abandoned work. The adaptive
    // limit (slow start, halving on queued answers and on timeouts; how many time
    // out depends on the machine's speed) keeps it near one request a unit.
    assert!(
        mock.requests() <= 16 + 3 * 8,
        "{} requests for 16 units",
        mock.requests()
    );
    mock.shutdown().await;
}

#[tokio::test]
async fn near_json_is_repaired_without_a_reask() {
    let mock = MockJudge::start(MockConfig {
        script: vec![Fault::FencedAnswer],
        ..MockConfig::default()
    })
    .await;
    let client = JudgeClient::new(config(&mock), None).unwrap();
    let a = client
        .ask(request("citation_support", "r", 1))
        .await
        .unwrap();
    assert_eq!(a.value, expected());
    assert_eq!(a.attempts, 1);
    assert!(a.raw.contains("```"));
    mock.shutdown().await;
}

#[tokio::test]
async fn invalid_answers_are_reasked_with_the_validation_error() {
    let mock = MockJudge::start(MockConfig {
        script: vec![Fault::InvalidAnswer],
        ..MockConfig::default()
    })
    .await;
    let client = JudgeClient::new(config(&mock), None).unwrap();
    let a = client
        .ask(request("citation_support", "r", 1))
        .await
        .unwrap();
    assert_eq!(a.value, expected());
    assert_eq!(a.attempts, 2);
    let second = &mock.bodies()[1];
    let msgs = second["messages"].as_array().unwrap();
    assert_eq!(msgs[msgs.len() - 2]["role"], "assistant");
    let fix = msgs[msgs.len() - 1]["content"].as_str().unwrap();
    assert!(
        fix.contains("$.confidence") && fix.contains("maximum"),
        "{fix}"
    );
    // The invalid answer is never cached or returned: the second call's is.
    mock.shutdown().await;
}

#[tokio::test]
async fn reasks_are_bounded() {
    let mock = MockJudge::start(MockConfig {
        script: vec![Fault::NotJson, Fault::InvalidAnswer, Fault::NotJson],
        ..MockConfig::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("c.sqlite")).unwrap();
    let client = JudgeClient::new(
        JudgeConfig {
            max_reasks: 2,
            ..config(&mock)
        },
        Some(store.clone()),
    )
    .unwrap();
    let err = client
        .ask(request("citation_support", "r", 1))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("invalid answer after 2 re-asks"),
        "{err}"
    );
    assert!(err.to_string().contains("no JSON object"), "{err}");
    assert_eq!(mock.requests(), 3);
    // Errors are never cached.
    let rows = store
        .with_conn(|c| {
            c.query_row("SELECT COUNT(*) FROM judge_cache", [], |r| {
                r.get::<_, i64>(0)
            })
        })
        .unwrap();
    assert_eq!(rows, 0);
    mock.shutdown().await;
}

async fn fallback_case(support: SchemaSupport, expected_mode: &str, first_unit_requests: u64) {
    let mock = MockJudge::start(MockConfig {
        schema_support: support,
        ..MockConfig::default()
    })
    .await;
    let client = JudgeClient::new(config(&mock), None).unwrap();
    let a = client
        .ask(request("citation_support", "r", 1))
        .await
        .unwrap();
    assert_eq!(a.value, expected(), "{support:?}");
    assert_eq!(mock.requests(), first_unit_requests, "{support:?}");
    assert_eq!(client.output_mode(), expected_mode);
    // Remembered for the endpoint: the next unit goes straight to the working form.
    client
        .ask(request("citation_support", "r", 2))
        .await
        .unwrap();
    assert_eq!(mock.requests(), first_unit_requests + 1, "{support:?}");
    let last = mock.bodies().pop().unwrap();
    // After the request's own text, so the system block stays a shared prefix.
    let user = match &last["messages"][1]["content"] {
        serde_json::Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        v => v.as_str().unwrap().to_string(),
    };
    assert!(
        user.contains("\"verdict\"") && user.ends_with('}'),
        "schema at the end of the prompt: {user}"
    );
    mock.shutdown().await;
}

#[tokio::test]
async fn schema_rejection_as_400_falls_back_to_json_object() {
    fallback_case(SchemaSupport::Reject400, "json_object+schema", 2).await;
}

#[tokio::test]
async fn llama_cpp_500_schema_rejection_is_not_retried_as_a_server_error() {
    let start = Instant::now();
    fallback_case(SchemaSupport::LlamaCpp500, "json_object+schema", 2).await;
    // No backoff was slept for that 500.
    assert!(
        start.elapsed() < Duration::from_millis(450),
        "{:?}",
        start.elapsed()
    );
}

#[tokio::test]
async fn servers_without_schemas_get_json_object_or_plain_prompts() {
    fallback_case(SchemaSupport::JsonObjectOnly, "json_object", 3).await;
    fallback_case(SchemaSupport::None, "prompt_only", 4).await;
}

#[tokio::test]
async fn one_off_schema_rejections_are_adapted_to() {
    let mock = MockJudge::start(MockConfig {
        script: vec![Fault::RejectSchema500],
        ..MockConfig::default()
    })
    .await;
    let client = JudgeClient::new(config(&mock), None).unwrap();
    let a = client
        .ask(request("citation_support", "r", 1))
        .await
        .unwrap();
    assert_eq!(a.value, expected());
    assert_eq!(mock.requests(), 2);
    mock.shutdown().await;
}

#[tokio::test]
async fn temperature_and_max_tokens_rejections_adapt_once_per_run() {
    let mock = MockJudge::start(MockConfig {
        reject_temperature: true,
        require_max_completion_tokens: true,
        ..MockConfig::default()
    })
    .await;
    let client = JudgeClient::new(
        JudgeConfig {
            max_tokens: Some(300),
            ..config(&mock)
        },
        None,
    )
    .unwrap();
    client
        .ask(request("citation_support", "r", 1))
        .await
        .unwrap();
    assert_eq!(mock.requests(), 3);
    client
        .ask(request("citation_support", "r", 2))
        .await
        .unwrap();
    assert_eq!(mock.requests(), 4);
    let last = mock.bodies().pop().unwrap();
    assert!(last.get("temperature").is_none());
    assert!(last.get("max_tokens").is_none());
    assert_eq!(last["max_completion_tokens"], 300);
    mock.shutdown().await;
}

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
