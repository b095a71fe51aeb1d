//! Kills inside a submission: after the input file is uploaded but before the batch
//! exists, and after the batch is created but before tvir recorded it. The next
//! invocation re-attaches by the input file id: every request reaches the provider
//! exactly once and the run completes.

use crate::common;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use common::judge::{example_jobs as jobs, judge_client, live_judge_calls, mock_config, settings};
use tvir_cli::batch::{drive, BatchArgs};
use tvir_engine::Engine;
use tvir_judge::batch::lines::request_line;
use tvir_judge::batch::{BatchApi, BatchEngine, BatchJudge, BatchOptions, RetryMode};
use tvir_judge::Judge;
use tvir_judge::JudgeConfig;
use tvir_rubric::RubricSet;
use tvir_store::{batch as rows, Store};
use tvir_testing::mock_judge::{MockConfig, MockJudge};

fn batch_engine(mock: &MockJudge, store: &Store) -> Arc<BatchEngine> {
    let config = mock_config(mock, "mock-model", JudgeConfig::default().concurrency);
    let client = judge_client(config, Some(store));
    BatchEngine::new(
        client,
        BatchOptions {
            poll_initial: Duration::ZERO,
            ..BatchOptions::default()
        },
        true,
    )
    .unwrap()
}

fn args() -> BatchArgs {
    BatchArgs {
        batch: true,
        batch_wait: true,
        batch_window: "24h".into(),
        batch_max_requests: 50_000,
        batch_max_bytes: 190_000_000,
        batch_attempts: 3,
        batch_retry: RetryMode::Batch,
        batch_poll_secs: 0.0,
        batch_export: None,
        batch_import: Vec::new(),
    }
}

fn engine_for(batch: &Arc<BatchEngine>) -> impl Fn() -> Engine + '_ {
    let rubrics = Arc::new(RubricSet::builtin().unwrap());
    let judge: Arc<dyn Judge> = Arc::new(BatchJudge::new(batch.clone()).unwrap());
    move || {
        Engine::new(
            rubrics.clone(),
            Some(judge.clone()),
            None,
            settings("mock-model"),
        )
    }
}

/// One pass: the first wave is queued in the store. Returns its request lines.
async fn queue_first_wave(batch: &Arc<BatchEngine>, store: &Store) -> (Vec<String>, Vec<u8>) {
    batch.begin_pass();
    let engine = engine_for(batch)();
    engine.evaluate_all(jobs(), &|_| {}).await;
    assert!(
        engine
            .stats
            .pending
            .load(std::sync::atomic::Ordering::Relaxed)
            > 0
    );
    let queued = store
        .with_conn(|c| rows::by_state(c, "mock-model", "queued"))
        .unwrap();
    assert!(!queued.is_empty());
    let mut bytes = Vec::new();
    for r in &queued {
        bytes.extend_from_slice(request_line(r).as_bytes());
        bytes.push(b'\n');
    }
    (queued.into_iter().map(|r| r.key).collect(), bytes)
}

async fn finish_and_check(mock: &MockJudge, store: &Store) {
    let batch = batch_engine(mock, store);
    let complete = drive(&batch, &args(), engine_for(&batch), jobs())
        .await
        .unwrap();
    assert!(complete);
    let stats = mock.batch_stats();
    let unique: BTreeSet<&String> = stats.submitted.iter().collect();
    assert_eq!(
        unique.len(),
        stats.submitted.len(),
        "a request reached the provider twice"
    );
    assert_eq!(live_judge_calls(mock), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_after_upload_before_creation() {
    let mock = MockJudge::start(MockConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("c.sqlite")).unwrap();
    {
        let batch = batch_engine(&mock, &store);
        let (keys, bytes) = queue_first_wave(&batch, &store).await;
        let api = BatchApi::new(&mock.base_url(), None).unwrap();
        let file = api.upload("wave.jsonl", &bytes).await.unwrap();
        let up = rows::Upload {
            input_file_id: file,
            wave: 1,
            keys,
        };
        store
            .with_conn(|c| rows::record_upload(c, "mock-model", &mock.base_url(), &up))
            .unwrap();
        // Killed here: no batch exists.
    }
    assert_eq!(mock.batch_stats().batches_created, 0);
    finish_and_check(&mock, &store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_after_creation_before_it_was_recorded() {
    let mock = MockJudge::start(MockConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("c.sqlite")).unwrap();
    let first_wave;
    {
        let batch = batch_engine(&mock, &store);
        let (keys, bytes) = queue_first_wave(&batch, &store).await;
        first_wave = keys.len();
        let api = BatchApi::new(&mock.base_url(), None).unwrap();
        let file = api.upload("wave.jsonl", &bytes).await.unwrap();
        let up = rows::Upload {
            input_file_id: file.clone(),
            wave: 1,
            keys,
        };
        store
            .with_conn(|c| rows::record_upload(c, "mock-model", &mock.base_url(), &up))
            .unwrap();
        api.create(&file, "24h", serde_json::json!({}))
            .await
            .unwrap();
        // Killed here: the provider has the batch, the store does not know it.
    }
    assert_eq!(mock.batch_stats().batches_created, 1);
    assert_eq!(mock.batch_stats().submitted.len(), first_wave);
    finish_and_check(&mock, &store).await;
}

fn line(id: &str, text: &str) -> String {
    serde_json::json!({"custom_id": id, "method": "POST", "url": "/v1/chat/completions",
        "body": {"model": "m", "messages": [{"role": "user", "content": text}],
                 "response_format": {"type": "json_schema", "json_schema": {"name": "x", "strict": true,
                    "schema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}}}}})
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mock_batch_status_progression_expiry_and_error_file() {
    use tvir_testing::mock_batch::MockBatchConfig;
    let mock = MockJudge::start(MockConfig {
        batch: MockBatchConfig {
            expire_batches: vec![2],
            ..Default::default()
        },
        ..MockConfig::default()
    })
    .await;
    let api = BatchApi::new(&mock.base_url(), None).unwrap();
    let input = format!("{}\n{}\n", line("a", "one"), line("b", "two"));
    let file = api.upload("in.jsonl", input.as_bytes()).await.unwrap();
    let created = api
        .create(&file, "24h", serde_json::json!({}))
        .await
        .unwrap();
    assert_eq!(created.status, "validating");
    assert_eq!(api.get(&created.id).await.unwrap().status, "in_progress");
    let done = api.get(&created.id).await.unwrap();
    assert_eq!(
        (done.status.as_str(), done.completed, done.failed),
        ("completed", 2, 0)
    );
    assert!(done.error_file_id.is_none());
    let out = api
        .file_content(done.output_file_id.as_deref().unwrap())
        .await
        .unwrap();
    let out = String::from_utf8(out).unwrap();
    assert_eq!(out.lines().count(), 2);
    assert!(out.contains("\"status_code\":200"), "{out}");
    assert_eq!(
        api.find_by_input_file(&file).await.unwrap().unwrap().id,
        created.id
    );

    // The second batch expires half done: one answer, one `batch_expired` error line.
    let file2 = api.upload("in2.jsonl", input.as_bytes()).await.unwrap();
    let b2 = api
        .create(&file2, "24h", serde_json::json!({}))
        .await
        .unwrap();
    api.get(&b2.id).await.unwrap();
    let expired = api.get(&b2.id).await.unwrap();
    assert_eq!(
        (expired.status.as_str(), expired.completed, expired.failed),
        ("expired", 1, 1)
    );
    let errs = api
        .file_content(expired.error_file_id.as_deref().unwrap())
        .await
        .unwrap();
    assert!(String::from_utf8(errs).unwrap().contains("batch_expired"));
    assert!(api.find_by_input_file("file-none").await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mock_reports_cached_prefix_tokens_like_openai() {
    let mock = MockJudge::start(MockConfig {
        prefix_cache: true,
        ..MockConfig::default()
    })
    .await;
    let http = reqwest::Client::new();
    let shared = "word ".repeat(1400); // 7,000 characters: 1,750 tokens at 4 a token
    let ask_with = |text: String, schema: Option<serde_json::Value>| {
        let mut body =
            serde_json::json!({"model": "m", "messages": [{"role": "user", "content": text}]});
        if let Some(s) = schema {
            body["response_format"] = serde_json::json!({"type": "json_schema",
                "json_schema": {"name": "x", "strict": true, "schema": s}});
        }
        let (http, mock) = (&http, &mock);
        async move {
            let v = common::judge::answer_live(http, mock, &body).await;
            v["usage"]["prompt_tokens_details"]["cached_tokens"]
                .as_u64()
                .unwrap()
        }
    };
    let ask = |text: String| ask_with(text, None);
    assert_eq!(ask(format!("{shared} first")).await, 0, "nothing seen yet");
    let second = ask(format!("{shared} second")).await;
    assert!(
        second >= 1024 && second % 128 == 0 && second <= 1750,
        "{second}"
    );
    assert_eq!(ask("short and new".into()).await, 0);
    assert_eq!(
        ask(format!("{} third", "word ".repeat(500))).await,
        0,
        "below 1,024 tokens"
    );
    // The schema precedes the system message: the same messages under two different
    // schemas share no prefix; under the same schema they do.
    let schema = |p: &str| {
        serde_json::json!({"type": "object", "properties": {p: {"type": "string"}},
            "required": [p], "additionalProperties": false})
    };
    let long = "term ".repeat(1400);
    assert_eq!(
        ask_with(format!("{long} a"), Some(schema("alpha"))).await,
        0
    );
    assert_eq!(
        ask_with(format!("{long} b"), Some(schema("beta"))).await,
        0,
        "another schema: no shared prefix"
    );
    let same = ask_with(format!("{long} c"), Some(schema("beta"))).await;
    assert!(same >= 1024 && same % 128 == 0, "{same}");
}
