//! What the judges are shown, against the reference evaluator (issue 27): checked
//! on the requests the pipeline builds for fixed reports.
//!
//! - cited pages whole by default; cut only by `--source-chars`, a rubric's
//!   `max_source_chars` or the judge's known context window, to the passages
//!   closest to the claim, with a visible marker, recorded in the unit and noted
//!   in the metric;
//! - a context window learnt from an overflow reply refits the pages and asks again;
//! - figures sent at their original pixel size by default (`--image-size`);
//! - MC shown the report alone, the task query only when the rubric asks for it;
//! - CSC with every cited page unreadable: 0 by rule, or judged with the empty
//!   evidence (`--csc-unreadable judge`, the default; `zero` settles it at 0);
//! - which member of a duplicate chain fact de-duplication drops (`--dedup-keep`).

use crate::common;

use std::path::Path;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::json;
use tvir_engine::record::{ReportRecord, UnitStatus};
use tvir_engine::{
    DedupKeep, DedupMode, Engine, EvalSettings, ImageSize, Pages, ReportJob, Task,
    UnreadableSources,
};
use tvir_judge::estimate::estimate_request;
use tvir_judge::{Judge, JudgeAnswer, JudgeError, JudgeRequest, Part};
use tvir_rubric::RubricSet;
use tvir_testing::mock_judge::default_answer;
use tvir_testing::stubs;

use common::judge::request_text;

/// The sentence that backs the fact, placed at the end of a long page.
const BACKING: &str = "Battery storage installations reached 118 gigawatt hours in 2023.";

/// A page of about `chars` characters of unrelated paragraphs, then [`BACKING`].
fn long_page(chars: usize) -> String {
    let mut s = String::new();
    let mut i = 0;
    while s.len() < chars {
        s.push_str(&format!(
            "Paragraph {i} describes coastal weather, river levels and mountain trails in some detail.\n\n"
        ));
        i += 1;
    }
    s.push_str(BACKING);
    s.push('\n');
    s
}

/// Records every request; answers from the schema (no pair is a duplicate unless
/// `duplicates` says so), and reports `budget` as the judge's prompt budget.
struct Recorder {
    seen: Mutex<Vec<JudgeRequest>>,
    budget: Option<u64>,
    duplicates: fn(&str) -> bool,
}

impl Recorder {
    fn new(budget: Option<u64>) -> Arc<Self> {
        Arc::new(Self {
            seen: Mutex::new(Vec::new()),
            budget,
            duplicates: |_| false,
        })
    }
    fn requests(&self, metric: &str) -> Vec<JudgeRequest> {
        let seen = self.seen.lock().unwrap();
        seen.iter()
            .filter(|r| r.metric == metric)
            .cloned()
            .collect()
    }
}

impl Judge for Recorder {
    fn ask(&self, request: JudgeRequest) -> BoxFuture<'_, Result<JudgeAnswer, JudgeError>> {
        let mut value = default_answer(&request.schema);
        if value.get("duplicate").is_some() {
            value["duplicate"] = json!((self.duplicates)(&request_text(&request)));
        }
        self.seen.lock().unwrap().push(request);
        Box::pin(async move { Ok(stubs::answer(value, "recorder", 0)) })
    }
    fn prompt_budget(&self, _request: &JudgeRequest) -> Option<u64> {
        self.budget
    }
}

const TASK: &str = "Summarise the battery storage market for an investor audience.";

/// Writes `report` as `sys/t1/report.md` (plus `files`) and the task file.
fn inputs(dir: &Path, report: &str, files: &[(&str, Vec<u8>)]) -> (ReportJob, Task) {
    let folder = dir.join("sys/t1");
    std::fs::create_dir_all(&folder).unwrap();
    for (name, bytes) in files {
        let path = folder.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
    let path = folder.join("report.md");
    std::fs::write(&path, report).unwrap();
    let tasks = dir.join("tasks.json");
    std::fs::write(
        &tasks,
        json!([{"id": "t1", "query": TASK, "checklist": {"Content": ["Market size?"]}}])
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

fn run(
    judge: Arc<dyn Judge>,
    pages: Arc<dyn Pages>,
    rubrics: RubricSet,
    settings: EvalSettings,
    job: ReportJob,
    task: Task,
) -> ReportRecord {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let engine = Engine::new(Arc::new(rubrics), Some(judge), Some(pages), settings);
    let mut records = rt.block_on(engine.evaluate_all(vec![(job, Some(task))], &|_| {}));
    assert_eq!(records.len(), 1);
    records.remove(0)
}

fn settings() -> EvalSettings {
    EvalSettings {
        judge_model: "recorder".into(),
        ..EvalSettings::default()
    }
}

const ONE_FACT: &str = "# Storage\n\n\
Battery storage installations reached 118 GWh in 2023 [1].\n\n\
## References\n\n\
[1] Storage review. https://one.example.org/storage\n";

fn cs_unit(r: &ReportRecord) -> &tvir_engine::record::UnitRecord {
    r.units
        .iter()
        .find(|u| u.metric == "citation_support")
        .unwrap()
}

/// One CS run of [`ONE_FACT`] over a 40,000-character page.
fn cs_run(budget: Option<u64>, source_chars: Option<usize>) -> (Arc<Recorder>, ReportRecord) {
    let dir = tempfile::tempdir().unwrap();
    let (job, task) = inputs(dir.path(), ONE_FACT, &[]);
    let judge = Recorder::new(budget);
    let pages = Arc::new(stubs::TextPages(|_: &str| long_page(40_000)));
    let s = EvalSettings {
        source_chars,
        ..settings()
    };
    let r = run(
        judge.clone(),
        pages,
        RubricSet::builtin().unwrap(),
        s,
        job,
        task,
    );
    (judge, r)
}

#[test]
fn a_long_page_is_shown_whole_by_default() {
    let (judge, r) = cs_run(None, None);
    let cs = judge.requests("citation_support");
    assert_eq!(cs.len(), 1);
    let text = request_text(&cs[0]);
    assert!(text.contains(BACKING), "the page's ending is shown");
    assert!(text.contains("Paragraph 0 describes"), "and its beginning");
    assert!(!text.contains("characters omitted"));
    assert!(!text.contains("truncated"));
    let unit = cs_unit(&r);
    assert_eq!(unit.status, UnitStatus::Scored);
    assert!(unit.detail.get("source_cuts").is_none(), "{}", unit.detail);
    assert_eq!(
        r.unit_sources(unit)[0]["chars"],
        json!(long_page(40_000).len())
    );
    assert!(r.metrics["citation_support"].note.is_none());
}

#[test]
fn source_chars_cuts_to_the_passages_closest_to_the_claim_and_records_it() {
    let (judge, r) = cs_run(None, Some(5_000));
    let text = request_text(&judge.requests("citation_support")[0]);
    assert!(text.contains(BACKING), "the closest passage is kept");
    assert!(text.contains("characters omitted …]"), "the cut is visible");
    let cuts = &cs_unit(&r).detail["source_cuts"];
    assert_eq!(cuts[0]["idx"], "1");
    assert_eq!(cuts[0]["original_chars"], json!(long_page(40_000).len()));
    assert!(cuts[0]["kept_chars"].as_u64().unwrap() <= 5_000, "{cuts}");
    assert_eq!(cuts[0]["rule"], "closest-passages");
    assert_eq!(cuts[0]["cause"], "source_chars");
    let note = r.metrics["citation_support"].note.clone().unwrap();
    assert!(note.contains("1 of 1 units saw cited pages cut"), "{note}");
}

#[test]
fn a_known_small_context_window_cuts_the_page_to_fit() {
    let budget = 3_000;
    let (judge, r) = cs_run(Some(budget), None);
    let req = &judge.requests("citation_support")[0];
    let text = request_text(req);
    assert!(text.contains(BACKING));
    assert!(text.contains("characters omitted …]"));
    let sent = estimate_request(req, None).prompt_tokens;
    assert!(
        sent <= budget,
        "{sent} prompt tokens for a budget of {budget}"
    );
    let cuts = &cs_unit(&r).detail["source_cuts"];
    assert_eq!(cuts[0]["cause"], "context_window", "{cuts}");
    // A window that holds the page: nothing is cut.
    let (judge, r) = cs_run(Some(1_000_000), None);
    assert!(request_text(&judge.requests("citation_support")[0]).contains("Paragraph 0 "));
    assert!(cs_unit(&r).detail.get("source_cuts").is_none());
}

#[test]
fn a_window_learnt_from_an_overflow_reply_refits_the_pages_and_asks_again() {
    use tvir_judge::{ClientJudge, JudgeClient};
    use tvir_testing::mock_judge::{MockConfig, MockJudge};
    let dir = tempfile::tempdir().unwrap();
    let (job, task) = inputs(dir.path(), ONE_FACT, &[]);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mock = rt.block_on(MockJudge::start(MockConfig {
        context_window: Some(8_000),
        ..MockConfig::default()
    }));
    let client = JudgeClient::new(common::judge::mock_config(&mock, "m", 4), None).unwrap();
    let judge: Arc<dyn Judge> = Arc::new(ClientJudge::new(client).unwrap());
    let pages = Arc::new(stubs::TextPages(|_: &str| long_page(40_000)));
    let engine = Engine::new(
        Arc::new(RubricSet::builtin().unwrap()),
        Some(judge),
        Some(pages),
        settings(),
    );
    let r = rt
        .block_on(engine.evaluate_all(vec![(job, Some(task))], &|_| {}))
        .remove(0);
    let unit = cs_unit(&r);
    assert_eq!(unit.status, UnitStatus::Scored, "{:?}", unit.reason);
    assert_eq!(unit.detail["source_cuts"][0]["cause"], "context_window");
    assert!(mock.metric_count("citation_support") >= 2, "asked again");
    rt.block_on(mock.shutdown());
}

/// A PNG of `w` x `h` pixels.
fn png(w: u32, h: u32) -> Vec<u8> {
    let img = image::RgbImage::from_fn(w, h, |x, y| {
        image::Rgb([(x % 256) as u8, (y % 256) as u8, 90])
    });
    let mut out = Vec::new();
    img.write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
        .unwrap();
    out
}

const CHART: &str = "# Storage\n\n\
Storage grew quickly, as the chart shows.\n\n\
<figure>\n  <img src=\"charts/growth.png\" alt=\"Bar chart of storage\">\n  \
<figcaption>Figure 1: Storage installed per year (GWh). Source: [1]</figcaption>\n</figure>\n\n\
Figure 1 shows storage growth by year.\n\n\
## References\n\n\
[1] Storage review. https://one.example.org/storage\n";

/// The pixel size of every image the requests of `metric` carry.
fn image_sizes(judge: &Recorder, metric: &str) -> Vec<(u32, u32)> {
    use base64::Engine as _;
    judge
        .requests(metric)
        .iter()
        .flat_map(|r| r.messages.iter().flat_map(|m| m.parts.clone()))
        .filter_map(|p| match p {
            Part::Image { data_uri } => Some(data_uri),
            Part::Text { .. } => None,
        })
        .map(|uri| {
            let b64 = uri.strip_prefix("data:image/png;base64,").unwrap();
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b64)
                .unwrap();
            let img = image::load_from_memory(&bytes).unwrap();
            (img.width(), img.height())
        })
        .collect()
}

fn chart_run(settings: EvalSettings, page: fn(&str) -> String) -> (Arc<Recorder>, ReportRecord) {
    let dir = tempfile::tempdir().unwrap();
    let (job, task) = inputs(dir.path(), CHART, &[("charts/growth.png", png(3000, 1200))]);
    let judge = Recorder::new(None);
    let r = run(
        judge.clone(),
        Arc::new(stubs::TextPages(page)),
        RubricSet::builtin().unwrap(),
        settings,
        job,
        task,
    );
    (judge, r)
}

#[test]
fn figures_are_sent_at_their_original_size_unless_bounded() {
    let (judge, _) = chart_run(settings(), |_| "Storage per year.".into());
    for metric in [
        "chart_quality",
        "figure_caption_quality",
        "chart_source_consistency",
    ] {
        assert_eq!(image_sizes(&judge, metric), [(3000, 1200)], "{metric}");
    }
    let s = EvalSettings {
        image_size: ImageSize::MaxSide(1024),
        ..settings()
    };
    let (judge, _) = chart_run(s, |_| "Storage per year.".into());
    for metric in [
        "chart_quality",
        "figure_caption_quality",
        "chart_source_consistency",
    ] {
        assert_eq!(image_sizes(&judge, metric), [(1024, 410)], "{metric}");
    }
}

#[test]
fn csc_with_every_cited_page_unreadable_is_judged_by_default_or_zero_as_asked() {
    // The default follows the reference (METRICS.md section 3): the judge is asked,
    // each unreadable page shown as why it could not be read; formerly the default
    // was 0 without a call, which `--csc-unreadable zero` keeps.
    let unreadable = |_: &str| String::new();
    let (judge, r) = chart_run(settings(), unreadable);
    let csc = judge.requests("chart_source_consistency");
    assert_eq!(csc.len(), 1, "asked with the fetch error as the page text");
    let text = request_text(&csc[0]);
    assert!(text.contains("This page could not be read: "), "{text}");
    assert!(!text.contains("no text could be retrieved"), "{text}");
    let u = r
        .units
        .iter()
        .find(|u| u.metric == "chart_source_consistency")
        .unwrap();
    assert!(u.detail.get("rule").is_none());
    // The schema's first answer: no issue, the top of table C.
    assert_eq!(r.metrics["chart_source_consistency"].score, Some(1.0));

    let s = EvalSettings {
        csc_unreadable: UnreadableSources::Zero,
        ..settings()
    };
    let (judge, r) = chart_run(s, unreadable);
    assert!(judge.requests("chart_source_consistency").is_empty());
    let u = r
        .units
        .iter()
        .find(|u| u.metric == "chart_source_consistency")
        .unwrap();
    assert_eq!(u.detail["rule"], "no_usable_source");
    assert_eq!(r.metrics["chart_source_consistency"].score, Some(0.0));
}

#[test]
fn multimodal_composition_is_shown_the_report_without_the_task_query() {
    let (judge, _) = chart_run(settings(), |_| "Storage per year.".into());
    let mc = request_text(&judge.requests("multimodal_composition")[0]);
    assert!(mc.contains("Storage grew quickly"), "the report is shown");
    assert!(!mc.contains(TASK), "no task query by default");
    // A rubric that declares the input shows it.
    let dir = tempfile::tempdir().unwrap();
    let toml = std::fs::read_to_string(common::repo().join("rubrics/multimodal_composition.toml"))
        .unwrap()
        .replace(
            "inputs = [\"report_text\"]",
            "inputs = [\"report_text\", \"task_query\"]",
        );
    std::fs::write(dir.path().join("multimodal_composition.toml"), toml).unwrap();
    let rubrics = RubricSet::load(Some(dir.path()), None).unwrap();
    let root = tempfile::tempdir().unwrap();
    let (job, task) = inputs(root.path(), CHART, &[("charts/growth.png", png(300, 120))]);
    let judge = Recorder::new(None);
    run(
        judge.clone(),
        Arc::new(stubs::TextPages(|_: &str| "x".into())),
        rubrics,
        settings(),
        job,
        task,
    );
    let mc = request_text(&judge.requests("multimodal_composition")[0]);
    assert!(mc.contains(TASK), "{mc}");
}

const CHAIN: &str = "# Storage\n\n\
Alpha storage grew in 2023 [1].\n\n\
Beta storage grew in 2023 [1].\n\n\
Gamma storage grew in 2023 [1].\n\n\
## References\n\n\
[1] Storage review. https://one.example.org/storage\n";

/// CS units left when A~B and B~C are duplicates and A, C are not.
fn chain_run(keep: DedupKeep) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let (job, task) = inputs(dir.path(), CHAIN, &[]);
    let judge = Arc::new(Recorder {
        seen: Mutex::new(Vec::new()),
        budget: None,
        duplicates: |text| text.contains("Beta"),
    });
    let s = EvalSettings {
        dedup: DedupMode::JudgeAll,
        dedup_keep: keep,
        ..settings()
    };
    let r = run(
        judge.clone(),
        Arc::new(stubs::TextPages(|_: &str| "Storage grew.".into())),
        RubricSet::builtin().unwrap(),
        s,
        job,
        task,
    );
    assert_eq!(judge.requests("fact_dedup").len(), 3);
    r.units
        .iter()
        .filter(|u| u.metric == "citation_support")
        .map(|u| u.unit.clone())
        .collect()
}

#[test]
fn dedup_drops_the_later_member_of_every_duplicate_pair_like_the_reference() {
    assert_eq!(chain_run(DedupKeep::Reference), ["fact:1"]);
    assert_eq!(chain_run(DedupKeep::FirstKept), ["fact:1", "fact:3"]);
}
