//! The judge client: any OpenAI-compatible chat-completions server, structured
//! answers validated against a JSON schema, retries, rate limits, cache, accounting
//! and a JSONL journal. Every metric talks to a model through [`JudgeClient::ask`].

use serde::{Deserialize, Serialize};

use crate::store::Store;

#[derive(Clone)]
pub struct JudgeConfig {
    pub base_url: String,
    /// Never logged, cached or written anywhere.
    pub api_key: Option<String>,
    pub model: String,
    pub concurrency: usize,
    pub rpm: Option<u32>,
    pub tpm: Option<u32>,
    pub timeout: std::time::Duration,
    pub max_attempts: u32,
    /// How many times an invalid answer is re-asked with the validation error.
    pub max_reasks: u32,
    pub seed: Option<u64>,
    pub max_tokens: Option<u32>,
    /// Count and estimate, call nothing.
    pub dry_run: bool,
    /// Stop scheduling new calls once this much has been spent.
    pub max_cost_usd: Option<f64>,
    /// JSONL journal of every call (no credentials).
    pub journal_path: Option<std::path::PathBuf>,
    /// Price table override (TOML); the shipped one is used otherwise.
    pub price_table_path: Option<std::path::PathBuf>,
}

impl std::fmt::Debug for JudgeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JudgeConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("concurrency", &self.concurrency)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part {
    Text {
        text: String,
    },
    /// A `data:image/png;base64,...` URI.
    Image {
        data_uri: String,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub parts: Vec<Part>,
}

/// One judge question. `metric` names the schema (`citation_support`, ...,
/// `fact_dedup`); `schema` is the JSON schema the answer must satisfy.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JudgeRequest {
    pub metric: String,
    /// For accounting and the journal: which report and which unit.
    pub report: String,
    pub unit: String,
    pub messages: Vec<Message>,
    pub schema: serde_json::Value,
    /// Independent sample index for `--runs` (part of the cache key).
    pub sample: u32,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cached_tokens: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JudgeAnswer {
    /// The parsed answer, valid against the request's schema.
    pub value: serde_json::Value,
    pub raw: String,
    pub usage: Usage,
    /// Model name the server reported.
    pub model: String,
    pub cached: bool,
    pub latency_ms: u64,
    pub cost_usd: Option<f64>,
    pub attempts: u32,
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum JudgeError {
    #[error("judge call failed: {0}")]
    Failed(String),
    #[error("dry run: not called")]
    DryRun,
    #[error("budget exhausted: --max-cost reached, call not scheduled")]
    BudgetExhausted,
}

#[derive(Clone)]
pub struct JudgeClient {
    _config: JudgeConfig,
    _store: Option<Store>,
}

impl JudgeClient {
    pub fn new(config: JudgeConfig, store: Option<Store>) -> Result<Self, JudgeError> {
        Ok(Self {
            _config: config,
            _store: store,
        })
    }

    pub async fn ask(&self, _request: JudgeRequest) -> Result<JudgeAnswer, JudgeError> {
        Err(JudgeError::Failed(
            "judge client not implemented yet".into(),
        ))
    }
}
