//! Prompts laid out for providers' prefix caches (issue 13, requirement 5), checked
//! on the requests the pipeline really builds, in the order it asks them:
//! - Citation Support: the cited sources in one canonical order (by reference
//!   number, whatever order the fact cites them in), before the statement, so two
//!   facts citing the same first source share its text as a prompt prefix; facts
//!   citing the same sources are asked one after another;
//! - report-level judges: one system block and the report text, identical byte
//!   for byte, before each metric's own instructions;
//! - live, a fact sharing its first source with an earlier one is sent only after
//!   that one was answered, so the prefix is warm (the mock judge reports cached
//!   tokens like OpenAI's prompt cache, counting only requests already answered).

use crate::common;

use std::path::Path;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::json;
use tvir_engine::{Engine, EvalSettings, Pages, ReportJob};
use tvir_judge::Judge;
use tvir_judge::{JudgeAnswer, JudgeError, JudgeRequest, Part, Role};
use tvir_rubric::RubricSet;
use tvir_testing::mock_judge::default_answer;
use tvir_testing::prefix_cache::common_prefix_len;
use tvir_testing::stubs;

use common::WIND_AND_WATER as REPORT;

/// Records every request in the order asked; answers from the schema, except that
/// no two facts are duplicates.
#[derive(Default)]
struct Recorder(Mutex<Vec<JudgeRequest>>);

impl Judge for Recorder {
    fn ask(&self, request: JudgeRequest) -> BoxFuture<'_, Result<JudgeAnswer, JudgeError>> {
        let mut value = default_answer(&request.schema);
        if value.get("duplicate").is_some() {
            value["duplicate"] = json!(false);
        }
        self.0.lock().unwrap().push(request);
        Box::pin(async move { Ok(stubs::answer(value, "recorder", 0)) })
    }
}

/// About 2,000 tokens of text per address, different for each (above the 1,024
/// tokens a prefix cache starts at).
fn fixed_pages() -> Arc<dyn Pages> {
    Arc::new(stubs::TextPages(|url: &str| {
        format!("Page {url}. ").repeat(200)
    }))
}

/// System text, then user text, of a request.
fn prompt(r: &JudgeRequest) -> String {
    let mut s = String::new();
    for m in &r.messages {
        s.push_str(match m.role {
            Role::System => "<system>",
            Role::User => "<user>",
        });
        for p in &m.parts {
            if let Part::Text { text } = p {
                s.push_str(text);
            }
        }
    }
    s
}

fn common_prefix<'a>(a: &'a str, b: &str) -> &'a str {
    &a[..common_prefix_len(a, b)]
}

/// Reference numbers in the order the prompt shows the sources.
fn source_order(p: &str) -> Vec<u32> {
    p.match_indices("--- source [")
        .map(|(i, m)| {
            let rest = &p[i + m.len()..];
            rest[..rest.find(']').unwrap()].parse().unwrap()
        })
        .collect()
}

fn write_inputs(dir: &Path) -> (ReportJob, tvir_engine::Task) {
    std::fs::create_dir_all(dir.join("sys/t1")).unwrap();
    let path = dir.join("sys/t1/report.md");
    std::fs::write(&path, REPORT).unwrap();
    let tasks = dir.join("tasks.json");
    std::fs::write(
        &tasks,
        json!([{"id": "t1", "query": "Write about renewable power.",
                "checklist": {"Content": ["Does it cover wind?", "Does it cover water?"]}}])
        .to_string(),
    )
    .unwrap();
    let task = tvir_engine::load_tasks(&tasks).unwrap()["t1"].clone();
    let job = ReportJob {
        system: "sys".into(),
        folder: "t1".into(),
        path,
    };
    (job, task)
}

async fn requests(dir: &Path) -> Vec<JudgeRequest> {
    let (job, task) = write_inputs(dir);
    let judge = Arc::new(Recorder::default());
    let engine = Engine::new(
        Arc::new(RubricSet::builtin().unwrap()),
        Some(judge.clone() as Arc<dyn Judge>),
        Some(fixed_pages()),
        EvalSettings::default(),
    );
    let records = engine.evaluate_report(&job, Some(&task)).await;
    assert_eq!(records.len(), 1);
    let v = judge.0.lock().unwrap().clone();
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn citation_support_prompts_share_their_sources_as_a_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let all = requests(dir.path()).await;
    let cs: Vec<String> = all
        .iter()
        .filter(|r| r.metric == "citation_support")
        .map(prompt)
        .collect();
    assert_eq!(cs.len(), 5, "one request per fact");
    // Canonical order whatever the citation order ([2][1] -> 1, 2).
    let orders: Vec<Vec<u32>> = cs.iter().map(|p| source_order(p)).collect();
    for o in &orders {
        let mut sorted = o.clone();
        sorted.sort();
        assert_eq!(o, &sorted, "sources in reference order: {orders:?}");
    }
    // Asked grouped by sources: [1,2] [1,2] [1,3] [3] [3].
    assert_eq!(
        orders,
        vec![vec![1, 2], vec![1, 2], vec![1, 3], vec![3], vec![3]],
        "facts citing the same sources are asked one after another"
    );
    // Everything up to the statement (the verdict scale included) is the same for
    // the same sources; a shared first source is shared text.
    for (a, b) in [(0, 1), (3, 4)] {
        let shared = common_prefix(&cs[a], &cs[b]);
        assert!(
            shared.ends_with("Statement:\n<<<\n") && shared.contains("- unsupported: "),
            "same sources, same prompt up to the statement: {:?}",
            &shared[shared.len().saturating_sub(80)..]
        );
    }
    let shared = common_prefix(&cs[1], &cs[2]);
    assert!(
        shared.contains("https://one.example.org/capacity") && shared.ends_with("--- source ["),
        "[1,2] and [1,3] share the text of [1]: {:?}",
        &shared[shared.len().saturating_sub(80)..]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_level_prompts_share_system_block_and_report_text() {
    let dir = tempfile::tempdir().unwrap();
    let all = requests(dir.path()).await;
    let report_level: Vec<(&str, String)> = all
        .iter()
        .filter(|r| {
            matches!(
                r.metric.as_str(),
                "instruction_alignment"
                    | "writing_quality"
                    | "analytical_depth_breadth"
                    | "factual_logical_consistency"
            )
        })
        .map(|r| (r.metric.as_str(), prompt(r)))
        .collect();
    assert_eq!(
        report_level.len(),
        4,
        "{:?}",
        report_level.iter().map(|r| r.0).collect::<Vec<_>>()
    );
    let mut shared = report_level[0].1.as_str();
    for (_, p) in &report_level[1..] {
        shared = common_prefix(shared, p);
    }
    // The whole report (its last line included) is in the shared prefix, and no
    // metric's instructions are.
    assert!(
        shared.contains("<user>") && shared.contains("[3] Water power outlook."),
        "shared prefix stops early: {shared:?}"
    );
    for (metric, p) in &report_level {
        assert!(
            p.len() > shared.len() + 100,
            "{metric}: its own instructions follow the shared part"
        );
    }
    // What they share ends right after the report (at most a common lead-in to
    // each metric's instructions).
    let after_report = &shared[shared.rfind(">>>").expect("report delimited") + 3..];
    assert!(after_report.len() < 40, "{after_report:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_followers_wait_for_their_leader_and_hit_a_warm_prefix() {
    use tvir_judge::ClientJudge;
    use tvir_judge::{JudgeClient, JudgeConfig};
    use tvir_testing::mock_judge::{request_schema, MockConfig, MockJudge};
    let mock = MockJudge::start(MockConfig {
        latency: std::time::Duration::from_millis(100),
        prefix_cache: true,
        responder: Some(Arc::new(|body: &serde_json::Value| {
            let mut v = default_answer(&request_schema(body).unwrap());
            if v.get("duplicate").is_some() {
                v["duplicate"] = json!(false);
            }
            v
        })),
        ..MockConfig::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let (job, task) = write_inputs(dir.path());
    let client = JudgeClient::new(
        JudgeConfig {
            base_url: mock.base_url(),
            model: "mock-model".into(),
            concurrency: 16,
            ..JudgeConfig::default()
        },
        None,
    )
    .unwrap();
    let judge: Arc<dyn Judge> = Arc::new(ClientJudge::new(client).unwrap());
    let engine = Engine::new(
        Arc::new(RubricSet::builtin().unwrap()),
        Some(judge),
        Some(fixed_pages()),
        EvalSettings::default(),
    );
    let rec = engine.evaluate_report(&job, Some(&task)).await.remove(0);
    assert_eq!(mock.metric_count("citation_support"), 5);
    // Two leaders ([1,2] and [3]) pay in full; the three followers ([1,2], [1,3],
    // [3]) each get at least a source's text (~2,000 tokens) from the cache. Sent
    // all at once, none would (16 may be in flight).
    assert!(
        rec.usage.cached_tokens >= 3 * 1024,
        "cached prompt tokens: {}",
        rec.usage.cached_tokens
    );
    mock.shutdown().await;
}
