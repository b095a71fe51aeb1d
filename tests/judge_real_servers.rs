//! What real OpenAI-compatible servers need, against the in-process mock judge playing
//! them: a token limit on every request, answers cut off by it re-asked once then
//! failed, timed-out requests keeping their concurrency slot until their retry,
//! schemas a constrained decoder can enforce (enums, not bounds), adaptations
//! remembered in the store across runs, and the vision check (a blind judge scores
//! no vision metric).

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::judge::{client_engine, example_jobs, last_user_text, mock_config, settings};
use serde_json::{json, Value};
use tvir_engine::record::{MetricStatus, ReportRecord, METRIC_NAMES};
use tvir_judge::vision::{Vision, BLIND_REASON, PROBE_METRIC};
use tvir_judge::{JudgeClient, JudgeConfig, JudgeRequest, Message, Part, Role};
use tvir_store::adaptations;
use tvir_store::Store;
use tvir_testing::mock_judge::{
    request_schema, ContextStyle, Fault, MockConfig, MockJudge, MockVision, ReasoningStyle,
    SchemaSupport,
};

const VISION_METRICS: [&str; 4] = [
    "figure_caption_quality",
    "figure_context_integration",
    "chart_quality",
    "chart_source_consistency",
];

fn schema() -> Value {
    json!({"type": "object",
           "properties": {"justification": {"type": "string", "maxLength": 200},
                          "verdict": {"type": "string", "enum": ["yes", "no"]}},
           "required": ["justification", "verdict"], "additionalProperties": false})
}

fn request(metric: &str, text: &str) -> JudgeRequest {
    JudgeRequest {
        metric: metric.into(),
        report: "sys/1".into(),
        unit: text.into(),
        messages: vec![
            Message {
                role: Role::System,
                parts: vec![Part::Text {
                    text: "You answer yes or no.".into(),
                }],
            },
            Message {
                role: Role::User,
                parts: vec![Part::Text { text: text.into() }],
            },
        ],
        schema: schema(),
        sample: 0,
    }
}

fn config(mock: &MockJudge) -> JudgeConfig {
    JudgeConfig {
        max_attempts: 3,
        max_reasks: 2,
        ..mock_config(mock, "small-model", 4)
    }
}

/// Schema nodes whose only range is `minimum`/`maximum` (no `enum`), by path.
fn bound_only_nodes(schema: &Value, path: &str, out: &mut Vec<String>) {
    let Some(obj) = schema.as_object() else {
        return;
    };
    let bounded = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]
        .iter()
        .any(|k| obj.contains_key(*k));
    if bounded && !obj.contains_key("enum") {
        out.push(path.to_string());
    }
    if let Some(props) = obj.get("properties").and_then(Value::as_object) {
        for (k, v) in props {
            bound_only_nodes(v, &format!("{path}.{k}"), out);
        }
    }
    if let Some(items) = obj.get("items") {
        bound_only_nodes(items, &format!("{path}[]"), out);
    }
}

/// Every string node without a `maxLength`.
fn unbounded_strings(schema: &Value, path: &str, out: &mut Vec<String>) {
    let Some(obj) = schema.as_object() else {
        return;
    };
    if obj.get("type") == Some(&json!("string"))
        && !obj.contains_key("maxLength")
        && !obj.contains_key("enum")
    {
        out.push(path.to_string());
    }
    if let Some(props) = obj.get("properties").and_then(Value::as_object) {
        for (k, v) in props {
            unbounded_strings(v, &format!("{path}.{k}"), out);
        }
    }
    if let Some(items) = obj.get("items") {
        unbounded_strings(items, &format!("{path}[]"), out);
    }
}

async fn eval_examples(client: JudgeClient) -> Vec<ReportRecord> {
    client_engine(client, settings("small-model"))
        .evaluate_all(example_jobs(), &|_| {})
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_of_a_run_carries_a_token_limit_and_enforceable_schema() {
    let mock = MockJudge::start(MockConfig::default()).await;
    let client = JudgeClient::new(config(&mock), Some(Store::in_memory().unwrap())).unwrap();
    let records = eval_examples(client).await;
    assert_eq!(records.len(), 6);
    let bodies = mock.bodies();
    assert!(bodies.len() > 20, "{} requests", bodies.len());
    let limits = mock.token_limits();
    let missing = limits.iter().filter(|l| l.is_none()).count();
    assert_eq!(
        missing,
        0,
        "{missing} of {} requests had no limit",
        limits.len()
    );
    let mut bound_only = Vec::new();
    let mut unbounded = Vec::new();
    for body in &bodies {
        let schema = request_schema(body).expect("every request carries its schema");
        let name = body["response_format"]["json_schema"]["name"]
            .as_str()
            .unwrap_or("?")
            .to_string();
        bound_only_nodes(&schema, &name, &mut bound_only);
        unbounded_strings(&schema, &name, &mut unbounded);
        // The limit fits the schema's longest answer (derived, so it differs by shape).
        let limit = body["max_tokens"].as_u64().unwrap();
        assert!(limit >= 64, "{name}: {limit}");
    }
    assert!(
        bound_only.is_empty(),
        "ranges resting on bounds: {bound_only:?}"
    );
    assert!(
        unbounded.is_empty(),
        "strings without maxLength: {unbounded:?}"
    );
    // The vision check ran once (two probes) and the mock, a vision model, passed it.
    assert_eq!(mock.metric_count(PROBE_METRIC), 2);
    for r in &records {
        for m in METRIC_NAMES {
            assert_eq!(
                r.metrics[m].status,
                MetricStatus::Evaluated,
                "{}/{} {m}: {:?}",
                r.system,
                r.task_id,
                r.metrics[m].note
            );
        }
    }
    mock.shutdown().await;
}

#[tokio::test]
async fn limits_come_from_the_flag_then_the_rubric_then_the_schema() {
    let mock = MockJudge::start(MockConfig::default()).await;
    let mut cfg = config(&mock);
    cfg.metric_max_tokens = [("writing_quality".to_string(), 777)].into();
    let client = JudgeClient::new(cfg.clone(), None).unwrap();
    let derived = tvir_judge::tokens::answer_token_limit(&schema());
    assert_eq!(client.token_limit(&request("writing_quality", "a")), 777);
    assert_eq!(
        client.token_limit(&request("citation_support", "a")),
        derived
    );
    client.ask(request("writing_quality", "a")).await.unwrap();
    client.ask(request("citation_support", "b")).await.unwrap();
    cfg.max_tokens = Some(55);
    let global = JudgeClient::new(cfg, None).unwrap();
    global.ask(request("writing_quality", "c")).await.unwrap();
    assert_eq!(
        mock.token_limits(),
        [Some(777), Some(u64::from(derived)), Some(55)]
    );
    mock.shutdown().await;
}

#[tokio::test]
async fn an_answer_cut_off_by_the_limit_is_reasked_once_then_fails() {
    let mock = MockJudge::start(MockConfig {
        script: vec![Fault::CutOff],
        ..MockConfig::default()
    })
    .await;
    let client = JudgeClient::new(config(&mock), None).unwrap();
    let answer = client.ask(request("m", "first")).await.unwrap();
    assert_eq!(answer.value["verdict"], "yes");
    let bodies = mock.bodies();
    assert_eq!(bodies.len(), 2);
    assert!(!last_user_text(&bodies[0]).contains("cut off"));
    assert!(
        last_user_text(&bodies[1]).contains("cut off"),
        "{}",
        last_user_text(&bodies[1])
    );
    // The roles still alternate (chat templates such as Gemma's insist on it).
    assert_eq!(bodies[1]["messages"].as_array().unwrap().len(), 2);
    mock.shutdown().await;

    let mock = MockJudge::start(MockConfig {
        script: vec![Fault::CutOff, Fault::CutOff],
        ..MockConfig::default()
    })
    .await;
    let client = JudgeClient::new(config(&mock), None).unwrap();
    let err = client.ask(request("m", "second")).await.unwrap_err();
    let text = err.to_string();
    assert!(text.contains("finish_reason: length"), "{text}");
    assert!(text.contains("max_tokens"), "{text}");
    assert_eq!(mock.requests(), 2, "one re-ask, no more");
    mock.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_request_keeps_its_slot_until_its_retry() {
    // One slot. Whichever unit arrives first hangs past the timeout; its retry must
    // go out before the other unit is sent, because the server is still busy with
    // the abandoned request.
    let mock = MockJudge::start(MockConfig {
        script: vec![Fault::Slow(Duration::from_secs(2))],
        ..MockConfig::default()
    })
    .await;
    let cfg = JudgeConfig {
        concurrency: 1,
        timeout: Duration::from_millis(300),
        ..config(&mock)
    };
    let client = JudgeClient::new(cfg, None).unwrap();
    let (a, b) = tokio::join!(
        client.ask(request("m", "unit A")),
        client.ask(request("m", "unit B"))
    );
    a.unwrap();
    b.unwrap();
    let order: Vec<String> = mock.bodies().iter().map(last_user_text).collect();
    assert_eq!(order.len(), 3, "{order:?}");
    assert_eq!(
        order[0], order[1],
        "the retry comes before the other unit: {order:?}"
    );
    assert_ne!(order[1], order[2], "{order:?}");
    assert!(client.max_in_flight() <= 1);
    mock.shutdown().await;
}

#[tokio::test]
async fn adaptations_are_remembered_per_server_and_model_and_updated() {
    let store = Store::in_memory().unwrap();
    let mock = MockJudge::start(MockConfig {
        schema_support: SchemaSupport::LlamaCpp500,
        require_max_completion_tokens: true,
        ..MockConfig::default()
    })
    .await;
    let first = JudgeClient::new(config(&mock), Some(store.clone())).unwrap();
    first.ask(request("m", "one")).await.unwrap();
    let learnt_calls = mock.requests();
    assert_eq!(
        learnt_calls, 3,
        "json_schema 500, max_tokens 400, then the answer"
    );
    first.flush().await;
    drop(first);
    let row = store
        .with_conn(|c| adaptations::get(c, mock.base_url().as_str(), "small-model"))
        .unwrap()
        .expect("row stored");
    assert_eq!(row.output_mode, "json_object+schema");
    assert_eq!(row.token_param, "max_completion_tokens");

    // The next run (a new client) starts from the row: no failed call.
    let second = JudgeClient::new(config(&mock), Some(store.clone())).unwrap();
    assert_eq!(second.output_mode(), "json_object+schema");
    second.ask(request("m", "two")).await.unwrap();
    assert_eq!(mock.requests(), learnt_calls + 1);
    let last = mock.bodies().pop().unwrap();
    assert_eq!(last["response_format"]["type"], "json_object");
    assert!(last.get("max_completion_tokens").is_some() && last.get("max_tokens").is_none());
    // Another model on the same server learns for itself.
    let other = JudgeClient::new(
        JudgeConfig {
            model: "other-model".into(),
            ..config(&mock)
        },
        Some(store.clone()),
    )
    .unwrap();
    assert_eq!(other.output_mode(), "json_schema");
    mock.shutdown().await;

    // A server that changed: the stored form is refused now; the row follows.
    let mock = MockJudge::start(MockConfig {
        schema_support: SchemaSupport::JsonObjectOnly,
        ..MockConfig::default()
    })
    .await;
    store
        .with_conn(|c| {
            adaptations::put(
                c,
                &adaptations::StoredAdaptations {
                    base_url: mock.base_url(),
                    model: "small-model".into(),
                    output_mode: "json_object+schema".into(),
                    token_param: "max_tokens".into(),
                    send_temperature: true,
                    send_seed: true,
                    vision: None,
                    vision_detail: None,
                    updated_at: "2026-01-01T00:00:00Z".into(),
                    reasoning: false,
                },
            )
        })
        .unwrap();
    let client = JudgeClient::new(config(&mock), Some(store.clone())).unwrap();
    client.ask(request("m", "three")).await.unwrap();
    assert_eq!(mock.requests(), 2, "one refusal, then the answer");
    let row = store
        .with_conn(|c| adaptations::get(c, mock.base_url().as_str(), "small-model"))
        .unwrap()
        .unwrap();
    assert_eq!(row.output_mode, "json_object");
    let again = JudgeClient::new(config(&mock), Some(store.clone())).unwrap();
    again.ask(request("m", "four")).await.unwrap();
    assert_eq!(mock.requests(), 3);
    mock.shutdown().await;
}

/// The prompt tokens the mock counts for a body (a quarter of its bytes).
fn mock_prompt_tokens(body: &Value) -> u64 {
    (serde_json::to_vec(body).unwrap().len() as u64 / 4).max(1)
}

#[tokio::test]
async fn a_prompt_too_long_for_the_context_fails_once_and_is_remembered() {
    let store = Store::in_memory().unwrap();
    let mock = MockJudge::start(MockConfig {
        context_window: Some(400),
        ..MockConfig::default()
    })
    .await;
    let long = "a long report sentence. ".repeat(200);
    let first = JudgeClient::new(config(&mock), Some(store.clone())).unwrap();
    let err = first
        .ask(request("m", &long))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("context window of 400 tokens"), "{err}");
    assert!(err.contains("longer context"), "{err}");
    assert_eq!(
        mock.requests(),
        1,
        "an overflow is neither retried nor adapted to"
    );
    // Nothing was learnt wrongly: the next short request goes out as before.
    first.ask(request("m", "short")).await.unwrap();
    assert_eq!(mock.requests(), 2);
    let last = mock.bodies().pop().unwrap();
    assert_eq!(last["response_format"]["type"], "json_schema");
    assert!(last.get("max_tokens").is_some());
    first.flush().await;
    drop(first);

    // The next run fails it from memory, without a call.
    let second = JudgeClient::new(config(&mock), Some(store.clone())).unwrap();
    let err = second
        .ask(request("m", &long))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("context window of 400 tokens"), "{err}");
    assert!(err.contains("--relearn-judge"), "{err}");
    assert_eq!(mock.requests(), 2);
    drop(second);

    // --relearn-judge asks again (the server may have been given a longer context).
    let relearn = JudgeClient::new(
        JudgeConfig {
            relearn: true,
            ..config(&mock)
        },
        Some(store.clone()),
    )
    .unwrap();
    assert!(relearn.ask(request("m", &long)).await.is_err());
    assert_eq!(mock.requests(), 3);
    mock.shutdown().await;
}

#[tokio::test]
async fn an_answer_limit_that_does_not_fit_beside_the_prompt_is_lowered_once() {
    // vLLM's wording names 'max_tokens': it must not be read as a refused parameter.
    let store = Store::in_memory().unwrap();
    let mock = MockJudge::start(MockConfig {
        context_window: Some(700),
        context_style: ContextStyle::Vllm,
        ..MockConfig::default()
    })
    .await;
    let client = JudgeClient::new(
        JudgeConfig {
            max_tokens: Some(600),
            ..config(&mock)
        },
        Some(store.clone()),
    )
    .unwrap();
    let answer = client.ask(request("m", "a short claim")).await.unwrap();
    assert_eq!(answer.value["verdict"], "yes");
    let bodies = mock.bodies();
    assert_eq!(bodies.len(), 2, "one overflow, one fitted retry");
    let prompt = mock_prompt_tokens(&bodies[0]);
    assert_eq!(bodies[0]["max_tokens"], 600);
    assert_eq!(
        bodies[1]["max_tokens"].as_u64(),
        Some(700 - prompt - 16),
        "lowered to the room the server named, less a margin"
    );
    assert!(bodies[1].get("max_completion_tokens").is_none());
    client.flush().await;
    let row = store
        .with_conn(|c| adaptations::get(c, mock.base_url().as_str(), "small-model"))
        .unwrap();
    assert!(
        row.is_none_or(|r| r.token_param == "max_tokens"),
        "the token parameter was not switched"
    );

    // A prompt that leaves less than a quarter of the limit fails without a retry.
    let before = mock.requests();
    let long = "x".repeat(2000);
    let err = client
        .ask(request("m", &long))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("context window of 700 tokens"), "{err}");
    assert_eq!(mock.requests(), before + 1);
    mock.shutdown().await;
}

#[tokio::test]
async fn a_reasoning_model_gets_headroom_learnt_once_and_remembered() {
    use tvir_judge::tokens::{answer_token_limit, REASONING_HEADROOM};
    let derived = u64::from(answer_token_limit(&schema()));
    for style in [
        ReasoningStyle::UsageCount,
        ReasoningStyle::ReasoningContent,
        ReasoningStyle::ThinkTags,
    ] {
        let store = Store::in_memory().unwrap();
        let mock = MockJudge::start(MockConfig {
            reasoning_tokens: Some(1500),
            reasoning_style: style,
            ..MockConfig::default()
        })
        .await;
        let client = JudgeClient::new(config(&mock), Some(store.clone())).unwrap();
        let answer = client.ask(request("m", "first")).await.unwrap();
        assert_eq!(answer.value["verdict"], "yes", "{style:?}");
        let wide = derived + u64::from(REASONING_HEADROOM);
        assert_eq!(
            mock.token_limits(),
            vec![Some(derived), Some(wide)],
            "{style:?}: thought through the derived limit, asked again with headroom"
        );
        assert!(
            !last_user_text(&mock.bodies()[1]).contains("cut off"),
            "{style:?}: not a re-ask for a shorter answer"
        );
        // The rest of the run starts with headroom...
        client.ask(request("m", "second")).await.unwrap();
        assert_eq!(mock.token_limits().last(), Some(&Some(wide)), "{style:?}");
        client.flush().await;
        drop(client);
        // ...and so does the next run.
        let next = JudgeClient::new(config(&mock), Some(store.clone())).unwrap();
        next.ask(request("m", "third")).await.unwrap();
        assert_eq!(mock.requests(), 4, "{style:?}");
        assert_eq!(mock.token_limits().last(), Some(&Some(wide)), "{style:?}");
        // An explicit limit is kept, and the failure says why.
        let fixed = JudgeClient::new(
            JudgeConfig {
                max_tokens: Some(500),
                ..config(&mock)
            },
            None,
        )
        .unwrap();
        let err = fixed
            .ask(request("m", "fourth"))
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("reasoned"), "{style:?}: {err}");
        assert!(err.contains("--max-tokens"), "{style:?}: {err}");
        assert_eq!(mock.requests(), 6, "{style:?}: one re-ask");
        mock.shutdown().await;
    }
}

#[tokio::test]
async fn long_prompts_get_a_longer_timeout() {
    // Every answer takes 1.2 s; the timeout is 0.4 s for prompts up to 4,096
    // tokens and grows in proportion above: a prompt of about 8 x 4,096 tokens gets
    // about 3.2 s and is answered, a short one times out.
    let mock = MockJudge::start(MockConfig {
        latency: Duration::from_millis(1200),
        ..MockConfig::default()
    })
    .await;
    let client = JudgeClient::new(
        JudgeConfig {
            timeout: Duration::from_millis(400),
            max_attempts: 1,
            ..config(&mock)
        },
        None,
    )
    .unwrap();
    let err = client
        .ask(request("m", "short"))
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("timed out after 400ms"), "{err}");
    let long = "abcd".repeat(8 * 4096);
    client.ask(request("m", &long)).await.unwrap();
    mock.shutdown().await;
}

#[tokio::test]
async fn the_vision_check_passes_a_seeing_model_and_fails_a_blind_one() {
    let store = Store::in_memory().unwrap();
    let seeing = MockJudge::start(MockConfig::default()).await;
    let client = JudgeClient::new(config(&seeing), Some(store.clone())).unwrap();
    assert_eq!(client.check_vision().await, Vision::Sees);
    assert_eq!(client.check_vision().await, Vision::Sees);
    assert_eq!(seeing.requests(), 2, "two probes, once per client");
    let bodies = seeing.bodies();
    assert_ne!(
        bodies[0]["messages"][1]["content"][1], bodies[1]["messages"][1]["content"][1],
        "the two probe images differ"
    );
    assert!(bodies.iter().all(|b| b["max_tokens"].as_u64().is_some()));
    seeing.shutdown().await;

    for vision in [MockVision::Blind, MockVision::RefuseImages] {
        let blind = MockJudge::start(MockConfig {
            vision,
            ..MockConfig::default()
        })
        .await;
        let client = JudgeClient::new(config(&blind), Some(store.clone())).unwrap();
        let verdict = client.check_vision().await;
        assert!(
            matches!(verdict, Vision::Blind(_)),
            "{vision:?}: {verdict:?}"
        );
        let probes = blind.requests();
        assert!((1..=2).contains(&probes), "{vision:?}: {probes}");
        client.flush().await;
        drop(client);
        // Remembered for (server, model): the next run asks nothing.
        let next = JudgeClient::new(config(&blind), Some(store.clone())).unwrap();
        assert!(matches!(next.check_vision().await, Vision::Blind(_)));
        assert_eq!(blind.requests(), probes);
        // --assume-vision skips the check.
        let assumed = JudgeClient::new(
            JudgeConfig {
                assume_vision: true,
                ..config(&blind)
            },
            Some(store.clone()),
        )
        .unwrap();
        assert_eq!(assumed.check_vision().await, Vision::Sees);
        assert_eq!(blind.requests(), probes);
        blind.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blind_judge_scores_no_vision_metric() {
    for vision in [MockVision::Blind, MockVision::RefuseImages] {
        let mock = MockJudge::start(MockConfig {
            vision,
            ..MockConfig::default()
        })
        .await;
        let client = JudgeClient::new(config(&mock), Some(Store::in_memory().unwrap())).unwrap();
        let records = eval_examples(client).await;
        for r in &records {
            let name = format!("{}/{}", r.system, r.task_id);
            for m in VISION_METRICS {
                let rec = &r.metrics[m];
                assert_eq!(rec.status, MetricStatus::NotEvaluated, "{name} {m}");
                assert_eq!(rec.score, None, "{name} {m}");
                assert_eq!(rec.note.as_deref(), Some(BLIND_REASON), "{name} {m}");
            }
            for m in [
                "writing_quality",
                "instruction_alignment",
                "citation_support",
            ] {
                assert_eq!(r.metrics[m].status, MetricStatus::Evaluated, "{name} {m}");
            }
        }
        // Only the probes carried images: no vision unit was sent.
        let images = mock.image_requests();
        assert!((1..=2).contains(&images), "{vision:?}: {images}");
        assert_eq!(mock.metric_count("figure_caption_quality"), 0);
        assert_eq!(mock.metric_count("chart_quality"), 0);
        mock.shutdown().await;
    }
}

/// `tvir eval` of the example against `mock` as the judge `text-only`, with `args`.
fn tvir(args: &[&str], out: &Path, mock: &MockJudge, cache: &Path) -> std::process::Output {
    common::cli::eval_example_judged(out, cache, &mock.base_url(), "text-only")
        .args(args)
        .output()
        .expect("run tvir")
}

fn report_json(out: &Path, system: &str, task: &str) -> Value {
    common::outputs::read_json(&out.join(system).join(task).join("text-only/report.json"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_eval_command_with_a_text_only_judge_and_the_new_flags() {
    let mock = MockJudge::start(MockConfig {
        vision: MockVision::Blind,
        ..MockConfig::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache.sqlite");
    let out = dir.path().join("out1");
    let run = {
        let (out, cache) = (out.clone(), cache.clone());
        let mock_ref = &mock;
        let args = [
            "--max-tokens",
            "321",
            "--judge-timeout",
            "30",
            "--judge-retries",
            "1",
        ];
        tokio::task::block_in_place(|| tvir(&args, &out, mock_ref, &cache))
    };
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.success(),
        "exit {:?}: {stderr}",
        run.status.code()
    );
    assert_eq!(
        stderr.matches(BLIND_REASON).count(),
        1,
        "said once at start-up: {stderr}"
    );
    assert!(mock.token_limits().iter().all(|l| *l == Some(321)));
    let report = report_json(&out, "system-a", "ex001");
    for m in VISION_METRICS {
        assert_eq!(report["metrics"][m]["status"], "not_evaluated", "{m}");
        assert_eq!(report["metrics"][m]["note"], BLIND_REASON, "{m}");
        assert!(report["metrics"][m]["score"].is_null(), "{m}");
    }
    assert_eq!(report["metrics"]["writing_quality"]["status"], "evaluated");

    // --assume-vision: no check, the vision metrics are judged.
    let before = mock.metric_count(PROBE_METRIC);
    let out2 = dir.path().join("out2");
    let run = tokio::task::block_in_place(|| tvir(&["--assume-vision"], &out2, &mock, &cache));
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert_eq!(mock.metric_count(PROBE_METRIC), before);
    let report = report_json(&out2, "system-a", "ex001");
    for m in VISION_METRICS {
        assert_eq!(report["metrics"][m]["status"], "evaluated", "{m}");
    }

    // The blind verdict is remembered: a third run does not probe...
    let out3 = dir.path().join("out3");
    let run = tokio::task::block_in_place(|| tvir(&[], &out3, &mock, &cache));
    assert!(run.status.success());
    assert_eq!(mock.metric_count(PROBE_METRIC), before);
    // ...unless told to relearn what it knows about the server.
    let out4 = dir.path().join("out4");
    let run = tokio::task::block_in_place(|| tvir(&["--relearn-judge"], &out4, &mock, &cache));
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(mock.metric_count(PROBE_METRIC) > before);
    mock.shutdown().await;
}
