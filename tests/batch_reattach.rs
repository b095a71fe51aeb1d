//! Kills inside a submission: after the input file is uploaded but before the batch
//! exists, and after the batch is created but before tvir recorded it. The next
//! invocation re-attaches by the input file id: every request reaches the provider
//! exactly once and the run completes.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tvir_eval::batch::cli::{drive, BatchArgs};
use tvir_eval::batch::lines::request_line;
use tvir_eval::batch::{BatchApi, BatchEngine, BatchJudge, BatchOptions, RetryMode};
use tvir_eval::eval::{discover, load_tasks, match_task, Engine, EvalSettings, Judge};
use tvir_eval::judge::{JudgeClient, JudgeConfig};
use tvir_eval::rubric::RubricSet;
use tvir_eval::store::{batch as rows, Store};
use tvir_eval::testing::mock_judge::{MockConfig, MockJudge};

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples")
}

fn batch_engine(mock: &MockJudge, store: &Store) -> Arc<BatchEngine> {
    let config = JudgeConfig {
        base_url: mock.base_url(),
        model: "mock-model".into(),
        timeout: Duration::from_secs(10),
        ..JudgeConfig::default()
    };
    let client = JudgeClient::new(config, Some(store.clone())).unwrap();
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

fn jobs() -> Vec<(tvir_eval::eval::ReportJob, Option<tvir_eval::eval::Task>)> {
    let tasks = load_tasks(&examples().join("tasks.json")).unwrap();
    discover(&examples())
        .unwrap()
        .into_iter()
        .map(|j| {
            let t = match_task(&j.folder, &tasks).cloned();
            (j, t)
        })
        .collect()
}

fn engine_for(batch: &Arc<BatchEngine>) -> impl Fn() -> Engine + '_ {
    let rubrics = Arc::new(RubricSet::builtin().unwrap());
    let judge: Arc<dyn Judge> = Arc::new(BatchJudge::new(batch.clone()).unwrap());
    move || {
        Engine::new(
            rubrics.clone(),
            Some(judge.clone()),
            None,
            EvalSettings {
                judge_model: "mock-model".into(),
                ..EvalSettings::default()
            },
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
    assert_eq!(mock.requests(), 0);
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
