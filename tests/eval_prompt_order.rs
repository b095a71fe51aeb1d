//! `tvir eval --prompt-order reference` end to end against the mock judge (issue 36,
//! requirement 2): the requests the judge receives are laid out the reference
//! evaluator's way for every metric family (fact-level, report-level, figure-level
//! with an image, a chart with its sources): the rubric as the system message, the
//! inputs in the reference's order as the user message, cited pages in citation
//! order, the image last. The default run keeps the cached layout; the same units
//! are asked in both. `--protocol reference` implies the setting (tests/eval_protocol.rs)
//! and a `--prompt-order cached` beside it overrides it, recorded in run.json.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::Value;
use tvir_testing::mock_judge::MockConfig;

use common::cli::{describe, eval_against_mock};
use common::judge::{message_text, schema_name};
use common::outputs::read_json;

/// A fact citing [3] before [1], a chart under `charts/` citing [2] before [1], an
/// image under `images/`: every judged metric has a unit.
const REPORT: &str = "# Rooftop solar\n\n\
Households named lower bills as the main reason for adding panels, and residential capacity grew fastest [3][1].\n\n\
<figure>\n  <img src=\"charts/solar_capacity.png\" alt=\"Line chart of residential and commercial rooftop capacity\">\n  \
<figcaption>Figure 1: Rooftop solar capacity by segment, 2018-2023 (GW). Sources: [2][1]</figcaption>\n</figure>\n\n\
As Figure 1 shows, residential capacity grew fastest while installed costs fell.\n\n\
<figure>\n  <img src=\"images/rooftops.png\" alt=\"Landscape with hills under a clear sky\">\n  \
<figcaption>Figure 2: A suburban landscape where rooftop systems are installed.</figcaption>\n</figure>\n\n\
As Figure 2 suggests, low-density suburbs hold most of the suitable roof area.\n\n\
## References\n\n\
[1] Example Energy Agency. Rooftop capacity statistics 2023. https://example.org/solar/capacity\n\
[2] Example Lab. Installed cost tracker. https://example.org/solar/cost\n\
[3] Example Utility Review. Drivers of distributed solar adoption. https://example.org/solar/drivers\n";

struct Runs {
    _dir: tempfile::TempDir,
    default: Vec<Value>,
    reference: Vec<Value>,
    overridden: Vec<Value>,
    reference_out: PathBuf,
    overridden_out: PathBuf,
}

fn fixture(dir: &Path) -> (PathBuf, PathBuf) {
    let ex = common::examples().join("system-a/ex001");
    let t1 = dir.join("reports/sys/t1");
    for sub in ["charts", "images"] {
        std::fs::create_dir_all(t1.join(sub)).unwrap();
        for e in std::fs::read_dir(ex.join(sub)).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), t1.join(sub).join(e.file_name())).unwrap();
        }
    }
    std::fs::write(t1.join("report.md"), REPORT).unwrap();
    let tasks = dir.join("tasks.json");
    std::fs::write(
        &tasks,
        serde_json::json!([
            {"id": "t1", "query": "Brief a city energy office on rooftop solar growth.",
             "checklist": {"Trends": ["Does the report describe capacity growth?",
                                      "Does the report explain why households add panels?"]}}
        ])
        .to_string(),
    )
    .unwrap();
    (dir.join("reports"), tasks)
}

async fn eval(reports: &Path, tasks: &Path, out: &Path, extra: &[&str]) -> Vec<Value> {
    let (run, bodies) = eval_against_mock(MockConfig::default(), reports, tasks, out, extra).await;
    assert!(run.status.code() == Some(0), "{}", describe(&run));
    bodies
}

fn runs() -> &'static Runs {
    static RUNS: OnceLock<Runs> = OnceLock::new();
    RUNS.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let (reports, tasks) = fixture(dir.path());
        let out = |name: &str| dir.path().join(name);
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let default = rt.block_on(eval(&reports, &tasks, &out("default"), &[]));
        let reference = rt.block_on(eval(
            &reports,
            &tasks,
            &out("reference"),
            &["--prompt-order", "reference"],
        ));
        // The whole protocol with the cached layout given beside it (and no
        // judge-made extraction or Serper key).
        let overridden = rt.block_on(eval(
            &reports,
            &tasks,
            &out("overridden"),
            &[
                "--protocol",
                "reference",
                "--prompt-order",
                "cached",
                "--extraction",
                "rules",
                "--fetcher",
                "direct",
            ],
        ));
        Runs {
            default,
            reference,
            overridden,
            reference_out: out("reference"),
            overridden_out: out("overridden"),
            _dir: dir,
        }
    })
}

/// One request as the judge received it: the system text, the user message's text
/// parts joined, and the kinds of the user message's parts in order.
struct Seen {
    system: String,
    user: String,
    parts: Vec<String>,
}

fn seen(body: &Value) -> Seen {
    let messages = body["messages"].as_array().unwrap();
    let of = |role: &str| messages.iter().find(|m| m["role"] == role).unwrap();
    let user = of("user");
    let parts = match &user["content"] {
        Value::Array(a) => a
            .iter()
            .map(|p| p["type"].as_str().unwrap_or("?").to_string())
            .collect(),
        _ => vec!["text".to_string()],
    };
    Seen {
        system: message_text(of("system")),
        user: message_text(user),
        parts,
    }
}

/// The requests of each metric (by the schema's name).
fn by_metric(bodies: &[Value]) -> BTreeMap<String, Vec<Seen>> {
    let mut out: BTreeMap<String, Vec<Seen>> = BTreeMap::new();
    for b in bodies {
        out.entry(schema_name(b).to_string())
            .or_default()
            .push(seen(b));
    }
    out
}

/// Reference numbers in the order the text shows the sources.
fn source_order(text: &str) -> Vec<String> {
    text.match_indices("--- source [")
        .map(|(i, m)| {
            let rest = &text[i + m.len()..];
            rest[..rest.find(']').unwrap()].to_string()
        })
        .collect()
}

fn one<'a>(m: &'a BTreeMap<String, Vec<Seen>>, metric: &str) -> &'a Seen {
    let v = m
        .get(metric)
        .unwrap_or_else(|| panic!("no {metric} request: {:?}", m.keys()));
    &v[0]
}

#[test]
fn prompt_order_reference_lays_out_every_judge_the_references_way() {
    let r = runs();
    let (d, x) = (by_metric(&r.default), by_metric(&r.reference));
    // The same units are asked either way.
    let counts = |m: &BTreeMap<String, Vec<Seen>>| {
        m.iter()
            .map(|(k, v)| (k.clone(), v.len()))
            .collect::<BTreeMap<_, _>>()
    };
    assert_eq!(counts(&d), counts(&x));
    for metric in [
        "citation_support",
        "instruction_alignment",
        "writing_quality",
        "analytical_depth_breadth",
        "factual_logical_consistency",
        "multimodal_composition",
        "chart_quality",
        "figure_caption_quality",
        "figure_context_integration",
        "chart_source_consistency",
    ] {
        let (c, f) = (one(&d, metric), one(&x, metric));
        // The default's system message is one short line; the reference's holds the
        // rubric, so it is the longer one and the user message the shorter.
        assert!(
            f.system.len() > c.system.len() + 200 && f.user.len() < c.user.len(),
            "{metric}: the layout did not change\n{}\n---\n{}",
            f.system,
            f.user
        );
        // A figure is the last part of the user message in both.
        assert_eq!(c.parts, f.parts, "{metric}");
    }

    // Fact level: the statement, then its pages in citation order ([3] before [1]).
    let (c, f) = (one(&d, "citation_support"), one(&x, "citation_support"));
    assert!(
        c.user.starts_with("Text of the cited sources"),
        "{}",
        c.user
    );
    assert_eq!(source_order(&c.user), ["1", "3"]);
    assert!(!c.system.contains("Choose one verdict"));
    assert!(f.user.starts_with("Statement:"), "{}", f.user);
    assert_eq!(source_order(&f.user), ["3", "1"]);
    assert!(f.system.contains("Choose one verdict") && !f.user.contains("Choose one verdict"));
    assert!(f.user.find("residential capacity grew") < f.user.find("--- source ["));

    // Report level: the query, the checklist, then the report (IA); the query then
    // the report (ADB); the report alone (WQ); the aspect in the system message.
    let f = one(&x, "instruction_alignment");
    let at = |s: &str| {
        f.user
            .find(s)
            .unwrap_or_else(|| panic!("{s:?} not in {}", f.user))
    };
    assert!(f.user.starts_with("Task given to the report's author"));
    assert!(at("Brief a city energy office") < at("1. [Trends]"));
    assert!(at("2. [Trends]") < at("# Rooftop solar"));
    assert!(f.system.contains("Your aspect") && !f.user.contains("Your aspect"));
    let f = one(&x, "analytical_depth_breadth");
    assert!(
        f.user.starts_with("The request the report answers"),
        "{}",
        f.user
    );
    assert!(f.user.find("Brief a city") < f.user.find("# Rooftop solar"));
    for metric in ["writing_quality", "factual_logical_consistency"] {
        let (c, f) = (one(&d, metric), one(&x, metric));
        assert!(c.user.starts_with("The report (") && c.user.contains("Your aspect"));
        assert!(f.user.starts_with("The report (") && !f.user.contains("Your aspect"));
        assert!(f.user.trim_end().ends_with(">>>"), "{metric}: {}", f.user);
    }

    // Figure level, with an image: a short request, the caption or the context,
    // then the image; the bands in the system message.
    assert_eq!(
        one(&x, "chart_quality").user.trim(),
        "Look at the attached chart and check each item."
    );
    let f = one(&x, "figure_caption_quality");
    assert!(f.user.starts_with("Caption as written in the report"));
    assert!(f.system.contains("9-10") && !f.user.contains("9-10"));
    assert_eq!(f.parts, ["text", "image_url"]);
    let f = one(&x, "figure_context_integration");
    assert!(f.user.starts_with("Text around the figure"), "{}", f.user);
    assert!(f.system.contains("9-10") && !f.user.contains("9-10"));

    // A chart with its sources: the caption, then the pages in citation order
    // ([2] before [1]), then the image.
    let (c, f) = (
        one(&d, "chart_source_consistency"),
        one(&x, "chart_source_consistency"),
    );
    assert!(c.user.starts_with("Text of the cited sources"));
    assert_eq!(source_order(&c.user), ["1", "2"]);
    assert!(f.user.starts_with("Caption of the chart"), "{}", f.user);
    assert_eq!(source_order(&f.user), ["2", "1"]);
    assert!(f.system.contains("Not issues") && !f.user.contains("Not issues"));
    assert_eq!(f.parts.last().map(String::as_str), Some("image_url"));

    // Recorded: run.json's protocol (the default protocol, this one setting
    // changed).
    let p = read_json(&r.reference_out.join("run.json"))["protocol"].clone();
    assert_eq!(p["name"], "default", "{p}");
    assert_eq!(p["settings"]["prompt-order"], "reference", "{p}");
}

#[test]
fn prompt_order_cached_beside_the_reference_protocol_keeps_the_cached_layout() {
    let r = runs();
    let p = read_json(&r.overridden_out.join("run.json"))["protocol"].clone();
    assert_eq!(p["name"], "reference", "{p}");
    assert_eq!(p["settings"]["prompt-order"], "cached", "{p}");
    assert!(
        p["overrides"]
            .as_array()
            .unwrap()
            .contains(&Value::from("prompt-order")),
        "{p}"
    );
    // The one-line system message of the default layout, for each CS request (told
    // apart by its system line: plain JSON answers name no schema).
    let role = one(&by_metric(&r.default), "citation_support")
        .system
        .clone();
    let cs: Vec<Seen> = r
        .overridden
        .iter()
        .map(seen)
        .filter(|s| s.system.starts_with("You check whether cited sources"))
        .collect();
    assert!(!cs.is_empty());
    for s in &cs {
        assert_eq!(s.system, role);
        assert!(
            s.user.starts_with("Text of the cited sources"),
            "{}",
            s.user
        );
    }
}
