//! The judge client against the in-process mock judge: protocol, cache, retries,
//! time-outs, answer repair and re-asks, structured-output fallbacks and server
//! adaptations. Limits, accounting, the journal and configuration are in
//! `judge_client_limits.rs`.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::client::{ask_concurrently, config, cs_schema, expected, request, PNG_1X1};
use tvir_judge::{JudgeClient, JudgeConfig, JudgeError, Part};
use tvir_store::Store;
use tvir_testing::mock_judge::{Fault, MockConfig, MockJudge, SchemaSupport};

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
