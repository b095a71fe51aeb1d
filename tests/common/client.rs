//! The judge client's test set-up: a CS-shaped request with an image, the schema
//! it answers, a client configuration for the mock (with a secret that must never be
//! written), and asking many units at once.

use std::time::Duration;

use serde_json::{json, Value};
use tvir_judge::{JudgeClient, JudgeConfig, JudgeError, JudgeRequest, Message, Part, Role};
use tvir_testing::mock_judge::{default_answer, MockJudge};

pub const PNG_1X1: &str = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

pub fn cs_schema() -> Value {
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

pub fn request(metric: &str, report: &str, unit: usize) -> JudgeRequest {
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

pub fn config(mock: &MockJudge) -> JudgeConfig {
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
pub async fn ask_concurrently(
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
pub fn expected() -> Value {
    default_answer(&cs_schema())
}
