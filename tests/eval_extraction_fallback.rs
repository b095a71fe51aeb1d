//! The judge extraction fallback, end to end through the `tvir` binary (issue 26,
//! requirement 4): a report whose citations are written in a dialect the grammar
//! does not know (`{N}` after the sentence, a plain numbered source list; two of its
//! nine cited sentences use `[N]`, which the grammar reads) is called `suspect` by
//! `tvir parse`; `tvir eval --extraction auto` hands it to the judge extractor (the
//! in-process mock judge, scripted here), and Citation Support then judges the
//! judge's facts, not the grammar's, with `extraction.method = "judge"` in
//! `report.json`. `--extraction rules` on the same report never asks the extractor.
//! A fact the judge quotes cut at its schema bound (as a grammar-constrained server
//! stops it) is completed to the end of its sentence, the cut recorded; one quoted
//! over the bound (a server that does not enforce the schema) is re-asked.

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use common::judge::{message_text, schema_name};
use serde_json::{json, Value};
use tvir_testing::mock_judge::{MockConfig, MockJudge, Responder};

const FIXTURE: &str = "fallback-brace-markers";

/// The window between the prompt's `<<<` and `>>>`.
fn window(body: &Value) -> String {
    let t = message_text(&body["messages"][1]);
    let start = t.find("<<<\n").map_or(0, |i| i + 4);
    let end = t[start..].find("\n>>>").map_or(t.len(), |i| start + i);
    t[start..end].to_string()
}

/// How the scripted judge quotes the facts of one window.
#[derive(Clone, Copy)]
enum Quote {
    /// `{N}` sentences whole without their mark; `[N]` sentences from after their
    /// first comma, mark kept (so their text differs from the grammar's facts).
    Clauses,
    /// The first `{N}` sentence cut at the schema's fact bound, the way a
    /// grammar-constrained server stops a string at its `maxLength`.
    CutAtBound,
    /// The first `{N}` sentence whole, over the bound (a server that does not
    /// enforce the schema), then cut at the bound when re-asked.
    OverBoundThenCut,
}

/// The scripted extraction judge: every answer to `extract_facts` is pushed onto
/// `sent`. Other rubrics get the schema's default answer.
fn responder(sent: Arc<Mutex<Vec<Value>>>, quote: Quote) -> Responder {
    let brace = regex::Regex::new(r"^(.*?)\s*\{([0-9, ]+)\}\.$").unwrap();
    let bracket = regex::Regex::new(r"^[^,]*, (.*\[([0-9]+)\]\.)$").unwrap();
    Arc::new(move |body: &Value| {
        if schema_name(body) != "extract_facts" {
            let schema = tvir_testing::mock_judge::request_schema(body).unwrap();
            return tvir_testing::mock_judge::default_answer(&schema);
        }
        let mut facts = Vec::new();
        for line in window(body).lines() {
            if let Some(c) = brace.captures(line) {
                let labels: Vec<&str> = c[2].split(',').map(str::trim).collect();
                let mut fact = format!("{}.", &c[1]);
                let bound = tvir_rubric::EXTRACTION_MAX_FACT_CHARS as usize;
                let reask = body["messages"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|m| m["role"] == "assistant");
                match quote {
                    _ if !facts.is_empty() => {}
                    Quote::CutAtBound => fact = line.chars().take(bound).collect(),
                    Quote::OverBoundThenCut if reask => fact = line.chars().take(bound).collect(),
                    Quote::OverBoundThenCut => fact = line.to_string(),
                    Quote::Clauses => {}
                }
                facts.push(json!({"fact": fact, "ref_idxs": labels}));
            } else if let Some(c) = bracket.captures(line) {
                facts.push(json!({"fact": &c[1], "ref_idxs": [&c[2]]}));
            }
        }
        let answer = json!({ "facts": facts });
        sent.lock().unwrap().push(answer.clone());
        answer
    })
}

/// A fact as the extractor keeps it: citation marks dropped, whitespace collapsed.
fn cleaned(quoted: &str) -> String {
    let marks = regex::Regex::new(r"\s*(?:\[[0-9, ]+\]|\{[0-9, ]+\})").unwrap();
    let text = marks.replace_all(quoted, "");
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// ROOT/reports/sys/ex001/report.md holding `report`, and a sources file with a page
/// for every entry URL (so Citation Support asks the judge about each fact).
fn setup(root: &Path, report: &str) -> (PathBuf, PathBuf) {
    let dir = root.join("reports/sys/ex001");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("report.md"), report).unwrap();
    let url = regex::Regex::new(r"https://\S+").unwrap();
    let pages: String = url
        .find_iter(report)
        .map(|m| {
            let page = json!({"url": m.as_str(), "text": format!("The page at {} says what its title says, in many words.", m.as_str())});
            format!("{page}\n")
        })
        .collect();
    let sources = root.join("sources.jsonl");
    std::fs::write(&sources, pages).unwrap();
    (root.join("reports"), sources)
}

/// `tvir eval --extraction MODE` of `reports` judged by `mock`; the `report.json`.
async fn eval(root: &Path, reports: &Path, sources: &Path, mock: &MockJudge, mode: &str) -> Value {
    let out = root.join(format!("out-{mode}"));
    let mut cmd = common::cli::tvir_command();
    cmd.args(["eval", "--reports"])
        .arg(reports)
        .arg("--tasks")
        .arg(common::examples().join("tasks.json"))
        .arg("--out")
        .arg(&out)
        .arg("--cache")
        .arg(root.join(format!("cache-{mode}.sqlite")))
        .args([
            "--base-url",
            &mock.base_url(),
            "--judge-model",
            "mock-model",
        ])
        .args(["--offline", "--sources"])
        .arg(sources)
        .args(["--assume-vision", "--quiet", "--extraction", mode]);
    let output = common::cli::output_async(cmd).await;
    let path = out.join("sys/ex001/mock-model/report.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}\n{}",
            path.display(),
            common::cli::describe(&output)
        )
    });
    serde_json::from_str(&text).unwrap()
}

/// The facts Citation Support judged, in unit order.
fn cs_facts(report: &Value) -> Vec<String> {
    report["units"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["metric"] == "citation_support")
        .map(|u| {
            u["detail"]["fact"]
                .as_str()
                .unwrap_or_else(|| panic!("CS unit without a fact: {u}"))
                .to_string()
        })
        .collect()
}

/// The facts the CS requests showed the judge (one request per fact).
fn cs_request_facts(mock: &MockJudge, facts: &[String]) -> usize {
    let bodies: Vec<Value> = mock
        .bodies()
        .into_iter()
        .filter(|b| schema_name(b) == "citation_support")
        .collect();
    facts
        .iter()
        .filter(|f| {
            bodies
                .iter()
                .any(|b| message_text(&b["messages"][1]).contains(f.as_str()))
        })
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dialect_the_grammar_does_not_know_is_extracted_by_the_judge() {
    let fixture = common::report_fixture(FIXTURE).join("report.md");
    let report = std::fs::read_to_string(&fixture).unwrap();

    // 1. The self-check flags it: the grammar reads only the two `[N]` sentences.
    let (code, stdout, stderr) =
        common::cli::tvir_status(&["parse", fixture.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let parsed: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        parsed["extraction"]["verdict"], "suspect",
        "{}",
        parsed["extraction"]
    );
    assert_eq!(parsed["extraction"]["method"], "rules");
    let grammar_facts: Vec<String> = parsed["facts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["fact"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(grammar_facts.len(), 2, "{grammar_facts:?}");

    // 2. `--extraction auto` asks the judge, and CS judges the judge's facts.
    let sent = Arc::new(Mutex::new(Vec::new()));
    let mock = MockJudge::start(MockConfig {
        responder: Some(responder(sent.clone(), Quote::Clauses)),
        ..MockConfig::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let (reports, sources) = setup(dir.path(), &report);
    let rec = eval(dir.path(), &reports, &sources, &mock, "auto").await;
    let e = &rec["extraction"];
    assert_eq!(e["verdict"], "suspect", "{e}");
    assert_eq!(e["method"], "judge", "{e}");
    assert_eq!(e["judge"]["status"], "used", "{e}");
    assert_eq!(e["judge"]["references_from"], "rules", "{e}");
    let asked = mock.metric_count("extract_facts");
    assert!(asked >= 1);
    assert_eq!(mock.metric_count("extract_references"), 0);

    let answers = sent.lock().unwrap().clone();
    assert_eq!(answers.len() as u64, asked);
    let judge_facts: BTreeSet<String> = answers
        .iter()
        .flat_map(|a| a["facts"].as_array().unwrap().clone())
        .map(|f| cleaned(f["fact"].as_str().unwrap()))
        .collect();
    assert_eq!(judge_facts.len(), 9, "{judge_facts:?}");
    let judged = cs_facts(&rec);
    let judged_set: BTreeSet<String> = judged.iter().cloned().collect();
    assert_eq!(judged.len(), judged_set.len(), "{judged:?}");
    assert_eq!(judged_set, judge_facts);
    assert_eq!(e["judge"]["facts"], 9);
    // None of the grammar's facts: the judge quoted those two from their comma on.
    for f in &grammar_facts {
        assert!(!judged_set.contains(f), "grammar fact {f:?} was judged");
    }
    assert!(judged_set.contains("most homes are heated with heat pumps today."));
    assert!(judged_set.contains("Noise limits shape where outdoor units may be placed."));
    // The CS requests carried those facts to the judge.
    assert_eq!(cs_request_facts(&mock, &judged), judged.len());
    mock.shutdown().await;

    // 3. `--extraction rules` on the same report never asks the extractor, and CS
    //    judges the grammar's two facts.
    let sent = Arc::new(Mutex::new(Vec::new()));
    let mock = MockJudge::start(MockConfig {
        responder: Some(responder(sent.clone(), Quote::Clauses)),
        ..MockConfig::default()
    })
    .await;
    let rec = eval(dir.path(), &reports, &sources, &mock, "rules").await;
    assert_eq!(mock.metric_count("extract_facts"), 0);
    assert!(sent.lock().unwrap().is_empty());
    let e = &rec["extraction"];
    assert_eq!(e["verdict"], "suspect", "{e}");
    assert_eq!(e["method"], "rules", "{e}");
    assert!(e.get("judge").is_none(), "{e}");
    let judged: BTreeSet<String> = cs_facts(&rec).into_iter().collect();
    assert_eq!(judged, grammar_facts.iter().cloned().collect());
    mock.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fact_cut_at_its_schema_bound_is_completed_and_the_cut_recorded() {
    for quote in [Quote::CutAtBound, Quote::OverBoundThenCut] {
        cut_fact_is_completed(quote).await;
    }
}

async fn cut_fact_is_completed(quote: Quote) {
    // The first sentence made longer than the fact bound.
    let fixture = common::report_fixture(FIXTURE).join("report.md");
    let long_clause =
        "and the same figure was reported again by every national trade body, ".repeat(14);
    let report = std::fs::read_to_string(&fixture).unwrap().replacen(
        "in 2022 {1}.",
        &format!("in 2022, {long_clause}as the market grew {{1}}."),
        1,
    );
    let long_sentence = report
        .lines()
        .find(|l| l.starts_with("Heat pump sales"))
        .unwrap()
        .to_string();
    assert!(long_sentence.chars().count() > tvir_rubric::EXTRACTION_MAX_FACT_CHARS as usize);

    let sent = Arc::new(Mutex::new(Vec::new()));
    let mock = MockJudge::start(MockConfig {
        responder: Some(responder(sent.clone(), quote)),
        ..MockConfig::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let (reports, sources) = setup(dir.path(), &report);
    let rec = eval(dir.path(), &reports, &sources, &mock, "auto").await;
    let e = &rec["extraction"];
    assert_eq!(e["method"], "judge", "{e}");
    // The answer used is the last one sent: cut at the bound. An answer over the
    // bound was re-asked (one more request), never used.
    let answers = sent.lock().unwrap().clone();
    let used = answers.last().unwrap()["facts"][0]["fact"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        used.chars().count() as u64,
        tvir_rubric::EXTRACTION_MAX_FACT_CHARS
    );
    let first = answers[0]["facts"][0]["fact"].as_str().unwrap();
    match quote {
        Quote::OverBoundThenCut => {
            assert!(first.chars().count() as u64 > tvir_rubric::EXTRACTION_MAX_FACT_CHARS);
            assert_eq!(mock.metric_count("extract_facts"), 2, "re-asked once");
        }
        _ => assert_eq!(mock.metric_count("extract_facts"), 1),
    }
    // Judged whole, to the end of its sentence, and the cut is on record.
    let judged = cs_facts(&rec);
    assert!(
        judged.contains(&cleaned(&long_sentence)),
        "{judged:?} lacks the completed sentence"
    );
    let cuts = e["judge"]["cuts"]
        .as_array()
        .unwrap_or_else(|| panic!("{e}"));
    assert_eq!(cuts.len(), 1, "{cuts:?}");
    assert!(
        cuts[0]
            .as_str()
            .unwrap()
            .contains("completed to the end of its sentence"),
        "{cuts:?}"
    );
    mock.shutdown().await;
}

/// A report the grammar reads cleanly (one `[N]` sentence a paragraph, a numbered
/// list with addresses): its self-check says `ok`.
const CLEAN: &str = "# Heat pumps in cold climates

In colder regions, heat pumps now heat most new homes [1].

Across the survey, owners rated their comfort above that of gas boilers [2].

For installers, training remains the main bottleneck [3].

## References

[1] Cold Climate Heating Review. https://heating.example.org/review
[2] Owner Survey. https://survey.example.com/owners
[3] Installer Notes. https://install.example.net/notes
";

/// `--extraction judge` (the reference's way) hands every report to the judge
/// extractor, even one the grammar reads cleanly, and Citation Support judges the
/// judge's facts; `--extraction auto` (ours, with a judge) keeps the grammar's facts
/// for that report and never asks the extractor.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extraction_judge_extracts_a_clean_report_with_the_judge_and_auto_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let (reports, sources) = setup(dir.path(), CLEAN);
    let grammar: BTreeSet<String> = [
        "In colder regions, heat pumps now heat most new homes.",
        "Across the survey, owners rated their comfort above that of gas boilers.",
        "For installers, training remains the main bottleneck.",
    ]
    .map(String::from)
    .into();

    let sent = Arc::new(Mutex::new(Vec::new()));
    let mock = MockJudge::start(MockConfig {
        responder: Some(responder(sent.clone(), Quote::Clauses)),
        ..MockConfig::default()
    })
    .await;
    let rec = eval(dir.path(), &reports, &sources, &mock, "judge").await;
    let e = &rec["extraction"];
    assert_eq!(e["verdict"], "ok", "{e}");
    assert_eq!(e["method"], "judge", "{e}");
    assert!(mock.metric_count("extract_facts") >= 1);
    let judge_facts: BTreeSet<String> = sent
        .lock()
        .unwrap()
        .iter()
        .flat_map(|a| a["facts"].as_array().unwrap().clone())
        .map(|f| cleaned(f["fact"].as_str().unwrap()))
        .collect();
    assert_eq!(judge_facts.len(), 3, "{judge_facts:?}");
    let judged: BTreeSet<String> = cs_facts(&rec).into_iter().collect();
    assert_eq!(judged, judge_facts);
    assert!(judged.is_disjoint(&grammar), "{judged:?}");
    mock.shutdown().await;

    let sent = Arc::new(Mutex::new(Vec::new()));
    let mock = MockJudge::start(MockConfig {
        responder: Some(responder(sent.clone(), Quote::Clauses)),
        ..MockConfig::default()
    })
    .await;
    let rec = eval(dir.path(), &reports, &sources, &mock, "auto").await;
    let e = &rec["extraction"];
    assert_eq!(e["verdict"], "ok", "{e}");
    assert_eq!(e["method"], "rules", "{e}");
    assert_eq!(mock.metric_count("extract_facts"), 0);
    assert!(sent.lock().unwrap().is_empty());
    let judged: BTreeSet<String> = cs_facts(&rec).into_iter().collect();
    assert_eq!(judged, grammar);
    mock.shutdown().await;
}
