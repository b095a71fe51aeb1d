//! Issue 13, requirement 7: what batch and prefix caching do to the judge bill, and
//! what the batch machinery costs in CPU.
//!
//! Part 1 (needs `TVIR_CORPUS_DIR`): TVIR's sample report
//! (`reports/tvir/claude-4-5-000001`, task 000001) is evaluated with every cited
//! page replaced by generated text of 8-12 KB (deterministic, written by this
//! bench). Every judge request is recorded and answered from its schema. For each
//! scenario it prints the input tokens sent, the tokens a provider prefix cache can
//! serve and the billable cost at list prices (`prices.toml`):
//!
//! - live, today's prompts: the templates of `TVIR_BASELINE_PROMPTS` (a folder of
//!   `.j2` files; `scripts/batch_cost.sh` extracts them from git), requests in the
//!   order the pipeline sends them;
//! - live, new prompts; batch (no prefix cache); batch + prefix cache: the shipped
//!   templates, batch requests in the order tvir writes batch files.
//!
//! Prefix cache model (OpenAI's published rules): a request's prompt is its
//! structured-output schema (OpenAI puts it before the system message) followed
//! by its messages; requests are processed one after another in the order given,
//! and the longest prefix shared with an earlier request is served from the cache
//! when it is at least 1,024 tokens, in 128-token steps. Tokens use the client's
//! estimator (4 characters a token for alphabetic text, one per CJK character;
//! images by tiles, never counted as cacheable). Completion tokens are those of
//! the answers returned (the mock judge's answers, built from each schema), the
//! same in every scenario since the answers are the same. (Until this was fixed
//! the bench counted the estimator's 400-token cap per answer instead.) Because
//! the mock's answers are terse, the bench also prints the average answer length
//! up to which batch + prefix cache stays within 40 % of today's live bill, and a
//! what-if line with the schema outside the cached prefix (engines that enforce
//! the schema by grammar and do not put it in the prompt); OpenAI's rule is the
//! headline figure.
//!
//! Part 2: the batch overhead for 10,000 requests: queue them through
//! `BatchJudge`, upload and create (the in-process mock), poll, download and
//! validate every result line into the cache, then a second pass that reads every
//! answer back. Reports the process's CPU time (user + system, mock included).
//!
//! Part 3 (needs `TVIR_CORPUS_DIR`; issue 27): the same report with 40,000-44,000
//! character pages, before (pages cut at 12,000 characters, figures at 1,024 px)
//! and after (whole pages, then figures at original size): requests, input
//! tokens, and the bill live, batch and batch + prefix cache.
//!
//! Run: `scripts/batch_cost.sh` (or `cargo bench --bench batch_cost`);
//! `BATCH_COST_PARTS=3` runs part 3 alone.

// The checkout's one skip rule (`TVIR_REQUIRE_ALL_TESTS=1` turns a skip into a failure).
#[path = "../tests/common/skip.rs"]
mod skip_rule;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::json;
use tvir_engine::{discover, load_tasks, Engine, EvalSettings};
use tvir_judge::estimate::{estimate_request, text_tokens};
use tvir_judge::prices::PriceTable;
use tvir_judge::Judge;
use tvir_judge::{JudgeAnswer, JudgeError, JudgeRequest, Message, Part, Role, Usage};
use tvir_rubric::RubricSet;
use tvir_testing::mock_judge::default_answer;
use tvir_testing::prefix_cache::{cacheable_tokens, longest_shared_prefix};
use tvir_testing::stubs;

/// Records every request (in the order asked) with the answer it got: the mock
/// judge's answer built from the request's schema.
#[derive(Default)]
struct Recorder(Mutex<Vec<Asked>>);

/// One recorded request and the text of the answer returned to it.
#[derive(Clone)]
struct Asked {
    request: JudgeRequest,
    answer: String,
}

impl Judge for Recorder {
    fn ask(&self, request: JudgeRequest) -> BoxFuture<'_, Result<JudgeAnswer, JudgeError>> {
        let value = default_answer(&request.schema);
        self.0.lock().unwrap().push(Asked {
            request,
            answer: value.to_string(),
        });
        Box::pin(async move { Ok(stubs::answer(value, "recorder", 0)) })
    }
}

const WORDS: &[&str] = &[
    "market",
    "capacity",
    "growth",
    "annual",
    "report",
    "policy",
    "energy",
    "storage",
    "battery",
    "regional",
    "demand",
    "forecast",
    "industry",
    "analysis",
    "percent",
    "million",
    "billion",
    "quarter",
    "revenue",
    "investment",
    "supply",
    "chain",
    "production",
    "technology",
    "research",
    "survey",
    "respondents",
    "increase",
    "decline",
    "compared",
    "previous",
    "year",
    "according",
    "data",
    "shows",
    "estimated",
    "the",
    "of",
    "and",
    "in",
    "to",
    "a",
    "for",
    "with",
    "by",
    "on",
];

/// 8-12 KB of text for `url`, the same every run.
fn generated_page(url: &str) -> String {
    generated_page_of(url, 8 * 1024, 4 * 1024)
}

/// 40,000-44,000 characters of text for `url` (issue 27's long pages).
fn long_generated_page(url: &str) -> String {
    generated_page_of(url, 40_000, 4_000)
}

/// `base` to `base + spread` bytes of text for `url`, the same every run.
fn generated_page_of(url: &str, base: usize, spread: u64) -> String {
    let mut h: u64 = 1469598103934665603;
    for b in url.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(1099511628211);
    }
    let target = base + (h % spread) as usize;
    let mut s = String::with_capacity(target + 64);
    let mut sentence = 0;
    while s.len() < target {
        h ^= h << 13;
        h ^= h >> 7;
        h ^= h << 17;
        s.push_str(WORDS[(h % WORDS.len() as u64) as usize]);
        sentence += 1;
        if sentence % 17 == 0 {
            s.push_str(&format!(" {}.{} percent. ", h % 100, h % 10));
        } else {
            s.push(' ');
        }
    }
    s
}

/// The cacheable text of a request: schema, then every message's text in order
/// (an image ends the cacheable prefix).
fn prompt_text(r: &JudgeRequest, schema_in_prefix: bool) -> String {
    let mut s = if schema_in_prefix {
        r.schema.to_string()
    } else {
        String::new()
    };
    for m in &r.messages {
        s.push_str(match m.role {
            Role::System => "\n<system>\n",
            Role::User => "\n<user>\n",
        });
        for p in &m.parts {
            match p {
                Part::Text { text } => s.push_str(text),
                Part::Image { .. } => return s,
            }
        }
    }
    s
}

#[derive(Default, Debug, Clone, Copy)]
struct Totals {
    requests: u64,
    input: u64,
    cacheable: u64,
    output: u64,
}

impl Totals {
    fn add(&mut self, o: &Totals) {
        self.requests += o.requests;
        self.input += o.input;
        self.cacheable += o.cacheable;
        self.output += o.output;
    }
}

/// Input, cacheable and output tokens of each request, sent in this order, one
/// after another: a request's prefix is warm only once an earlier request with
/// that prefix has been processed. Output tokens are those of the answer returned.
fn per_request(asked: &[Asked], schema_in_prefix: bool) -> Vec<Totals> {
    let mut seen: Vec<String> = Vec::new();
    let mut out = Vec::with_capacity(asked.len());
    for a in asked {
        let r = &a.request;
        let est = estimate_request(r, None);
        let text = prompt_text(r, schema_in_prefix);
        let longest = longest_shared_prefix(seen.iter().map(String::as_str), &text);
        let cached = cacheable_tokens(text_tokens(&text[..longest]));
        out.push(Totals {
            requests: 1,
            input: est.prompt_tokens,
            cacheable: cached.min(est.prompt_tokens),
            output: text_tokens(&a.answer),
        });
        seen.push(text);
    }
    out
}

fn totals(asked: &[Asked]) -> Totals {
    totals_with(asked, true)
}

fn totals_with(asked: &[Asked], schema_in_prefix: bool) -> Totals {
    let mut t = Totals::default();
    for r in per_request(asked, schema_in_prefix) {
        t.add(&r);
    }
    t
}

fn cost(prices: &PriceTable, model: &str, t: &Totals, batch: bool, cache: bool) -> f64 {
    let usage = Usage {
        prompt_tokens: t.input,
        completion_tokens: t.output,
        cached_tokens: if cache { t.cacheable } else { 0 },
    };
    prices.cost_via(model, &usage, batch).unwrap_or(f64::NAN)
}

fn record(rt: &tokio::runtime::Runtime, prompts: Option<&Path>, corpus: &Path) -> Vec<Asked> {
    record_with(rt, prompts, corpus, generated_page, EvalSettings::default())
}

fn record_with(
    rt: &tokio::runtime::Runtime,
    prompts: Option<&Path>,
    corpus: &Path,
    page: fn(&str) -> String,
    settings: EvalSettings,
) -> Vec<Asked> {
    let rubrics = Arc::new(RubricSet::load(None, prompts).expect("prompt templates"));
    let tasks = load_tasks(&corpus.join("tvir-query.json")).expect("task file");
    let task = tasks.get("000001").cloned();
    let jobs = discover(&corpus.join("reports/tvir/claude-4-5-000001")).expect("sample report");
    let judge = Arc::new(Recorder::default());
    let engine = Engine::new(
        rubrics,
        Some(judge.clone() as Arc<dyn Judge>),
        Some(Arc::new(stubs::TextPages(page))),
        settings,
    );
    let jobs = jobs.into_iter().map(|j| (j, task.clone())).collect();
    rt.block_on(engine.evaluate_all(jobs, &|_| {}));
    let v = judge.0.lock().unwrap().clone();
    v
}

/// The order of a batch file: the request bodies the client builds, sorted the
/// way the batch engine sorts a wave (`batch::lines::prefix_order`, then key).
fn batch_order(asked: Vec<Asked>) -> Vec<Asked> {
    let client = tvir_judge::JudgeClient::new(
        tvir_judge::JudgeConfig {
            base_url: "http://127.0.0.1:9/v1".into(),
            model: "gpt-4.1".into(),
            ..tvir_judge::JudgeConfig::default()
        },
        None,
    )
    .expect("judge client");
    let mut keyed: Vec<(String, String, Asked)> = asked
        .into_iter()
        .map(|a| {
            let body = client
                .request_body(&a.request)
                .expect("request body")
                .to_string();
            let key = client.cache_key(&a.request);
            (body, key, a)
        })
        .collect();
    keyed.sort_by(|a, b| {
        tvir_judge::batch::lines::prefix_order(&a.0)
            .cmp(tvir_judge::batch::lines::prefix_order(&b.0))
            .then(a.1.cmp(&b.1))
    });
    keyed.into_iter().map(|(_, _, a)| a).collect()
}

/// Output tokens per answer at which batch + prefix cache costs `target` of
/// today's live bill (same answers in both), if such a length exists.
fn break_even(
    prices: &PriceTable,
    model: &str,
    base: &Totals,
    batch: &Totals,
    target: f64,
) -> Option<f64> {
    let per_token = |t: &Totals, batch_rate: bool, cache: bool, out: u64| {
        let mut t = *t;
        t.output = out;
        cost(prices, model, &t, batch_rate, cache)
    };
    // Both costs are affine in the output tokens.
    let (b0, b1) = (
        per_token(batch, true, true, 0),
        per_token(batch, true, true, 1_000_000) / 1e6,
    );
    let (l0, l1) = (
        per_token(base, false, true, 0),
        per_token(base, false, true, 1_000_000) / 1e6,
    );
    let (b1, l1) = (b1 - b0 / 1e6, l1 - l0 / 1e6);
    // b0 + b1 x = target (l0 + l1 x)
    let x = (target * l0 - b0) / (b1 - target * l1);
    (x.is_finite() && x >= 0.0).then(|| x / base.requests.max(1) as f64)
}

fn part1(rt: &tokio::runtime::Runtime) {
    let Some(corpus) = std::env::var_os("TVIR_CORPUS_DIR").map(PathBuf::from) else {
        skip_rule::skip("part 1: TVIR_CORPUS_DIR not set");
        return;
    };
    let baseline_dir = std::env::var_os("TVIR_BASELINE_PROMPTS").map(PathBuf::from);
    let baseline = record(rt, baseline_dir.as_deref(), &corpus);
    let current = record(rt, None, &corpus);
    let prices = PriceTable::shipped();
    let base_t = totals(&baseline);
    let live_t = totals(&current);
    let batched = batch_order(current.clone());
    let batch_t = totals(&batched);
    let no_schema_t = totals_with(&batched, false);
    println!(
        "sample report: {} judge requests; baseline prompts: {}",
        current.len(),
        baseline_dir
            .as_ref()
            .map_or("shipped (TVIR_BASELINE_PROMPTS unset)".to_string(), |p| p
                .display()
                .to_string())
    );
    let mut per_metric: BTreeMap<&str, Totals> = BTreeMap::new();
    for (a, t) in batched.iter().zip(per_request(&batched, true)) {
        per_metric
            .entry(a.request.metric.as_str())
            .or_default()
            .add(&t);
    }
    println!("\nbatch file order, per metric: requests | input tokens | prefix-cacheable | output tokens (answers returned)");
    for (m, t) in &per_metric {
        println!(
            "  {m}: {} | {} | {} | {}",
            t.requests, t.input, t.cacheable, t.output
        );
    }
    for model in ["gpt-4.1", "gpt-4.1-mini", "gpt-4o"] {
        let today = cost(&prices, model, &base_t, false, true);
        let rows = [
            ("live, today's prompts", base_t, false, true),
            ("live, new prompts", live_t, false, true),
            ("batch, no prefix cache", batch_t, true, false),
            ("batch + prefix cache", batch_t, true, true),
        ];
        println!("\n{model}: scenario | input tokens | prefix-cacheable | output tokens | cost USD | vs today's live");
        for (name, t, batch, cache) in rows {
            let c = cost(&prices, model, &t, batch, cache);
            println!(
                "{model}: {name} | {} | {} | {} | {:.4} | {:.1} %",
                t.input,
                if cache { t.cacheable } else { 0 },
                t.output,
                c,
                100.0 * c / today
            );
        }
        let c = cost(&prices, model, &no_schema_t, true, true);
        println!(
            "{model}: what-if, schema outside the cached prefix (grammar-constrained engines; not OpenAI's rule) | {} | {} | {} | {:.4} | {:.1} %",
            no_schema_t.input,
            no_schema_t.cacheable,
            no_schema_t.output,
            c,
            100.0 * c / today
        );
        match break_even(&prices, model, &base_t, &batch_t, 0.40) {
            Some(x) => println!(
                "{model}: batch + prefix cache stays <= 40 % of today's live while answers average <= {x:.0} output tokens (these answers: {:.0})",
                batch_t.output as f64 / batch_t.requests.max(1) as f64
            ),
            None => println!("{model}: batch + prefix cache is above 40 % of today's live at any answer length"),
        }
    }
}

/// Issue 27, requirement 2: the bill of TVIR's sample report with 40,000-character
/// pages, before (every page cut at 12,000 characters, figures at 1,024 px) and
/// after (whole pages; then also figures at their original size), live, batch and
/// batch + prefix cache, with the shipped prompts.
fn part3(rt: &tokio::runtime::Runtime) {
    use tvir_engine::ImageSize;
    let Some(corpus) = std::env::var_os("TVIR_CORPUS_DIR").map(PathBuf::from) else {
        skip_rule::skip("part 3: TVIR_CORPUS_DIR not set");
        return;
    };
    let prices = PriceTable::shipped();
    let scenarios = [
        (
            "before: pages cut at 12,000 chars, figures 1,024 px",
            Some(12_000),
            ImageSize::MaxSide(1024),
        ),
        (
            "after: whole pages, figures 1,024 px",
            None,
            ImageSize::MaxSide(1024),
        ),
        (
            "after: whole pages, figures original size",
            None,
            ImageSize::Original,
        ),
    ];
    println!("\nissue 27: TVIR's sample report with 40,000-44,000-character pages");
    let mut rows = Vec::new();
    for (name, source_chars, image_size) in scenarios {
        let settings = EvalSettings {
            source_chars,
            image_size,
            ..EvalSettings::default()
        };
        let asked = record_with(rt, None, &corpus, long_generated_page, settings);
        let cs_asked: Vec<&Asked> = asked
            .iter()
            .filter(|a| a.request.metric == "citation_support")
            .collect();
        let cs = cs_asked.len();
        let cs_tokens: u64 = cs_asked
            .iter()
            .map(|a| estimate_request(&a.request, None).prompt_tokens)
            .sum();
        let cut = cs_asked
            .iter()
            .filter(|a| prompt_text(&a.request, false).contains("characters omitted"))
            .count();
        println!("{name}: citation support prompts {cs_tokens} tokens in all, {cut} of {cs} showing a cut page");
        let live = totals(&asked);
        let batch = totals(&batch_order(asked));
        println!("{name}: {} requests ({cs} citation support), {} input tokens, {} prefix-cacheable in batch order", live.requests, live.input, batch.cacheable);
        rows.push((name, live, batch));
    }
    for model in ["gpt-4.1", "gpt-4.1-mini", "gpt-4o"] {
        println!("\n{model}: scenario | live USD (prompt cache as sent) | batch USD | batch + prefix cache USD");
        for (name, live, batch) in &rows {
            println!(
                "{model}: {name} | {:.4} | {:.4} | {:.4}",
                cost(&prices, model, live, false, true),
                cost(&prices, model, batch, true, false),
                cost(&prices, model, batch, true, true)
            );
        }
    }
}

fn cpu_seconds() -> f64 {
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct we own.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(u.ru_utime) + tv(u.ru_stime)
}

fn part2(rt: &tokio::runtime::Runtime) {
    use tvir_judge::batch::{BatchEngine, BatchJudge, BatchOptions};
    use tvir_judge::{JudgeClient, JudgeConfig};
    use tvir_store::Store;
    use tvir_testing::mock_judge::{MockConfig, MockJudge};
    let n: usize = std::env::var("BATCH_BENCH_REQUESTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000);
    let dir = tempfile::tempdir().unwrap();
    rt.block_on(async {
        let mock = MockJudge::start(MockConfig::default()).await;
        let store = Store::open(&dir.path().join("c.sqlite")).unwrap();
        let config = JudgeConfig {
            base_url: mock.base_url(),
            model: "mock-model".into(),
            ..JudgeConfig::default()
        };
        let client = JudgeClient::new(config, Some(store.clone())).unwrap();
        let engine = BatchEngine::new(
            client,
            BatchOptions { poll_initial: Duration::ZERO, ..BatchOptions::default() },
            true,
        )
        .unwrap();
        let judge = BatchJudge::new(engine.clone()).unwrap();
        let schema = json!({"type": "object", "properties": {"justification": {"type": "string"},
            "verdict": {"type": "string", "enum": ["supported", "partially_supported", "unsupported"]}},
            "required": ["justification", "verdict"], "additionalProperties": false});
        let filler = "The source reports the figure for the region in the stated year. ".repeat(30);
        let requests: Vec<JudgeRequest> = (0..n)
            .map(|i| JudgeRequest {
                metric: "citation_support".into(),
                report: "bench/1".into(),
                unit: format!("fact:{i}"),
                messages: vec![
                    Message { role: Role::System, parts: vec![Part::Text { text: "You check statements.".into() }] },
                    Message { role: Role::User, parts: vec![Part::Text { text: format!("{filler}\nStatement {i}.") }] },
                ],
                schema: schema.clone(),
                sample: 0,
            })
            .collect();
        let cpu0 = cpu_seconds();
        let wall = std::time::Instant::now();
        engine.begin_pass();
        for r in &requests {
            let e = judge.ask(r.clone()).await;
            assert!(matches!(e, Err(JudgeError::Pending)));
        }
        let queued = cpu_seconds();
        let created = engine.submit().await.unwrap();
        let submitted = cpu_seconds();
        let mut collected = engine.collect().await.unwrap();
        while collected.answered < n as u64 {
            engine.wait_for_progress().await.unwrap();
            collected.merge(engine.collect().await.unwrap());
        }
        let answered = cpu_seconds();
        let mut hits = 0;
        for r in &requests {
            if judge.ask(r.clone()).await.is_ok() {
                hits += 1;
            }
        }
        let cpu = cpu_seconds() - cpu0;
        println!(
            "batch overhead stages (CPU s): queue {:.2}, upload + create {:.2}, mock answers + download + validate {:.2}, read back {:.2}",
            queued - cpu0,
            submitted - queued,
            answered - submitted,
            cpu_seconds() - answered
        );
        println!(
            "\nbatch overhead: {n} requests queued, {} batch(es) submitted, {} answers collected and validated, {hits} read back: {:.2} s CPU (user + system, mock included), {:.2} s wall",
            created.len(),
            collected.answered,
            cpu,
            wall.elapsed().as_secs_f64()
        );
        mock.shutdown().await;
    });
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    // BATCH_COST_PARTS selects parts (default "1,2,3").
    let parts = std::env::var("BATCH_COST_PARTS").unwrap_or_else(|_| "1,2,3".into());
    let want = |p: &str| parts.split(',').any(|x| x.trim() == p);
    if want("1") {
        part1(&rt);
    }
    if want("2") {
        part2(&rt);
    }
    if want("3") {
        part3(&rt);
    }
}
