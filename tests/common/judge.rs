//! The evaluation engine and the judge client against the in-process mock judge.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tvir_engine::{discover, load_tasks, match_task, Engine, EvalSettings, ReportJob, Task};
use tvir_judge::{ClientJudge, Judge};
use tvir_judge::{JudgeClient, JudgeConfig, JudgeRequest, Part};
use tvir_rubric::RubricSet;
use tvir_store::Store;
use tvir_testing::mock_judge::MockJudge;

/// A client configuration for `mock` answering as `model`, `concurrency` requests in
/// flight and a 10 s timeout (the rest default).
pub fn mock_config(mock: &MockJudge, model: &str, concurrency: usize) -> JudgeConfig {
    JudgeConfig {
        base_url: mock.base_url(),
        model: model.into(),
        concurrency,
        timeout: Duration::from_secs(10),
        ..JudgeConfig::default()
    }
}

/// A `JudgeClient` for `config`, caching in `store` when given.
pub fn judge_client(config: JudgeConfig, store: Option<&Store>) -> JudgeClient {
    JudgeClient::new(config, store.cloned()).unwrap()
}

/// The engine with the built-in rubrics, judged through `client`, under `settings`
/// (whose `judge_model` names the output folder).
/// Cited pages come from a real fetcher, offline, over `tests/golden/sources.jsonl`
/// (as the command-line tests run): with no fetcher every citation unit would fail,
/// its pages unavailable on our side.
pub fn client_engine(client: JudgeClient, settings: EvalSettings) -> Engine {
    let judge: Arc<dyn Judge> = Arc::new(ClientJudge::new(client).unwrap());
    Engine::new(
        Arc::new(RubricSet::builtin().unwrap()),
        Some(judge),
        Some(golden_pages()),
        settings,
    )
}

/// The pages of `tests/golden/sources.jsonl` through the real fetcher, offline.
pub fn golden_pages() -> Arc<dyn tvir_engine::Pages> {
    let config = tvir_sources::FetchConfig {
        offline: true,
        sources_file: Some(super::repo().join("tests/golden/sources.jsonl")),
        ..tvir_sources::FetchConfig::default()
    };
    Arc::new(tvir_sources::Fetcher::new(config, None).unwrap())
}

/// Default settings with the output folder named `judge_model`.
pub fn settings(judge_model: &str) -> EvalSettings {
    EvalSettings {
        judge_model: judge_model.into(),
        ..EvalSettings::default()
    }
}

/// The reports of the shipped example, each with its task.
pub fn example_jobs() -> Vec<(ReportJob, Option<Task>)> {
    let examples = super::examples();
    let tasks = load_tasks(&examples.join("tasks.json")).unwrap();
    discover(&examples)
        .unwrap()
        .into_iter()
        .map(|j| {
            let t = match_task(&j.folder, &tasks).cloned();
            (j, t)
        })
        .collect()
}

/// Live chat completions other than the client's vision check (a few live calls
/// made before any batch wave, remembered in the store).
pub fn live_judge_calls(mock: &MockJudge) -> u64 {
    mock.metric_counts()
        .iter()
        .filter(|(m, _)| m.as_str() != "vision_check")
        .map(|(_, n)| n)
        .sum()
}

/// Every text part of a judge request, in order, joined by newlines.
pub fn request_text(r: &JudgeRequest) -> String {
    r.messages
        .iter()
        .flat_map(|m| &m.parts)
        .filter_map(|p| match p {
            Part::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The text of the last user message of a chat completions request body.
pub fn last_user_text(body: &Value) -> String {
    let messages = body["messages"].as_array().unwrap();
    message_text(messages.iter().rev().find(|m| m["role"] == "user").unwrap())
}

/// The text of one chat message (its text parts joined by newlines).
pub fn message_text(message: &Value) -> String {
    match &message["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The `json_schema` name of a request body (the rubric it asks), or "".
pub fn schema_name(body: &Value) -> &str {
    body.pointer("/response_format/json_schema/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// `body` POSTed to `mock`'s live chat completions endpoint: its response body (an
/// independent runner answering a batch file line by line).
pub async fn answer_live(http: &reqwest::Client, mock: &MockJudge, body: &Value) -> Value {
    http.post(format!("{}/chat/completions", mock.base_url()))
        .json(body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}
