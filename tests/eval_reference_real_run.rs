//! `tvir eval --protocol reference` in the conditions of a real run, on fixtures of
//! our own: offline from a sources file with no Serper key, a cited page that comes
//! back empty, one the sources file records as a failed fetch, a remote figure that
//! cannot be downloaded, a text-only system; and a page really to be fetched without
//! the key (its units fail naming the key, the run goes on).

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::Value;
use tvir_testing::mock_judge::{MockConfig, MockJudge};

use common::cli::{describe, output_async, tvir_command, tvir_status};
use common::outputs::read_json;

/// t1: a fact backed by a page with text, a fact whose only page is empty, a local
/// image and a remote figure (offline: never downloaded).
const T1: &str = "# Tram ridership\n\n\
Weekday tram boardings in the city rose by a quarter between 2019 and 2024 [1].\n\n\
Night services carried about one passenger in twenty over the same period [2].\n\n\
![A tram stop on a rainy evening](images/rooftops.png)\n\n\
Figure 1: A tram stop where boardings are counted.\n\n\
![Bar chart of boardings by line](https://example.org/tram/boardings.png)\n\n\
Figure 2: Boardings by line, 2024.\n\n\
## References\n\n\
[1] City transit office. Boardings 2019-2024. https://example.org/tram/boardings\n\
[2] Night network review. https://example.org/tram/night\n";

/// A text-only report of a second system; its second page failed to fetch where the
/// sources file was made.
const T2: &str = "# Tram fares\n\n\
Single fares stayed flat in nominal terms from 2020 to 2024 [1].\n\n\
Day passes sold out twice during the 2023 festival week [2].\n\n\
## References\n\n\
[1] Fare tables. https://example.org/tram/fares\n\
[2] Pass sales. https://example.org/tram/passes\n";

const SOURCES: &str = r#"{"url": "https://example.org/tram/boardings", "text": "Weekday boardings grew from 80,000 in 2019 to 100,000 in 2024."}
{"url": "https://example.org/tram/night", "text": ""}
{"url": "https://example.org/tram/fares", "text": "The single fare was 2.40 in every year from 2020 to 2024."}
{"url": "https://example.org/tram/passes", "error": "HTTP 500 from the site"}
"#;

struct Fixture {
    _dir: tempfile::TempDir,
    dir: PathBuf,
    reports: PathBuf,
    tasks: PathBuf,
    sources: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let t1 = root.join("reports/sys-a/t1");
    std::fs::create_dir_all(t1.join("images")).unwrap();
    std::fs::copy(
        common::examples().join("system-a/ex001/images/rooftops.png"),
        t1.join("images/rooftops.png"),
    )
    .unwrap();
    std::fs::write(t1.join("report.md"), T1).unwrap();
    let t2 = root.join("reports/sys-b/t1");
    std::fs::create_dir_all(&t2).unwrap();
    std::fs::write(t2.join("report.md"), T2).unwrap();
    let tasks = root.join("tasks.json");
    std::fs::write(
        &tasks,
        serde_json::json!([{"id": "t1", "query": "Brief a transit board on tram use.",
            "checklist": {"Use": ["Does the report give the boardings trend?"]}}])
        .to_string(),
    )
    .unwrap();
    let sources = root.join("pages.jsonl");
    std::fs::write(&sources, SOURCES).unwrap();
    Fixture {
        reports: root.join("reports"),
        _dir: dir,
        dir: root,
        tasks,
        sources,
    }
}

/// `tvir eval` of the fixture against a fresh mock judge: no Serper key in the
/// environment, `--sources`, and `extra`. Returns the run's output folder and the
/// request bodies the judge received.
async fn eval(f: &Fixture, name: &str, extra: &[&str]) -> (PathBuf, Vec<Value>, String) {
    let mock = MockJudge::start(MockConfig::default()).await;
    let out = f.dir.join(name);
    let mut cmd = tvir_command();
    cmd.current_dir(&f.dir)
        .env_remove("SERPER_API_KEY")
        .args(["eval", "--reports"])
        .arg(&f.reports)
        .arg("--tasks")
        .arg(&f.tasks)
        .arg("--out")
        .arg(&out)
        .args([
            "--base-url",
            &mock.base_url(),
            "--judge-model",
            "mock-model",
        ])
        .arg("--cache")
        .arg(out.with_extension("sqlite"))
        .arg("--sources")
        .arg(&f.sources)
        .args([
            "--assume-vision",
            "--no-browser",
            "--quiet",
            "--extraction",
            "rules",
        ])
        .args(extra);
    let run = output_async(cmd).await;
    let bodies = mock.bodies();
    mock.shutdown().await;
    assert!(
        run.status.code().is_some_and(|c| c <= 1),
        "{}",
        describe(&run)
    );
    (
        out,
        bodies,
        String::from_utf8_lossy(&run.stderr).into_owned(),
    )
}

struct Runs {
    // Keeps the fixture folder alive for the runs read from it.
    _fixture: Fixture,
    reference: PathBuf,
    reference_bodies: Vec<Value>,
    default: PathBuf,
}

fn runs() -> &'static Runs {
    static RUNS: OnceLock<Runs> = OnceLock::new();
    RUNS.get_or_init(|| {
        let f = fixture();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        // No `--fetcher direct` here: the protocol's Serper fetcher, and no key.
        let (reference, reference_bodies, _) = rt.block_on(eval(
            &f,
            "out-ref",
            &["--offline", "--protocol", "reference"],
        ));
        let (default, _, _) = rt.block_on(eval(&f, "out-default", &["--offline"]));
        Runs {
            _fixture: f,
            reference,
            reference_bodies,
            default,
        }
    })
}

fn report(out: &Path, system: &str) -> Value {
    read_json(&out.join(system).join("t1/mock-model/report.json"))
}

fn units<'a>(r: &'a Value, metric: &str) -> Vec<&'a Value> {
    r["units"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["metric"] == metric)
        .collect()
}

fn unit<'a>(r: &'a Value, metric: &str, name: &str) -> &'a Value {
    units(r, metric)
        .into_iter()
        .find(|u| u["unit"] == name)
        .unwrap_or_else(|| panic!("no {metric} {name} in {}", r["units"]))
}

/// The messages of every request that asks about `needle`.
fn prompts_with(bodies: &[Value], needle: &str) -> Vec<String> {
    bodies
        .iter()
        .map(|b| b["messages"].to_string())
        .filter(|m| m.contains(needle))
        .collect()
}

/// The messages of the Citation Support requests (they ask for a verdict) about
/// `needle`.
fn cs_prompts(bodies: &[Value], needle: &str) -> Vec<String> {
    prompts_with(bodies, needle)
        .into_iter()
        .filter(|m| m.contains("verdict"))
        .collect()
}

/// The Citation Support unit of the fact that contains `needle`.
fn cs_unit<'a>(r: &'a Value, needle: &str) -> &'a Value {
    units(r, "citation_support")
        .into_iter()
        .find(|u| u["detail"]["fact"].as_str().unwrap_or("").contains(needle))
        .unwrap_or_else(|| panic!("no CS unit for {needle:?} in {}", r["units"]))
}

#[test]
fn offline_from_a_sources_file_needs_no_serper_key_under_the_reference_protocol() {
    let r = runs();
    let rec = report(&r.reference, "sys-a");
    assert_eq!(
        rec["protocol"]["settings"]["fetcher"], "serper",
        "{}",
        rec["protocol"]
    );
    // The page with text was judged from the sources file.
    let cs = units(&rec, "citation_support");
    assert_eq!(cs.len(), 2, "{cs:?}");
    assert!(cs.iter().all(|u| u["status"] == "scored"), "{cs:?}");
}

#[test]
fn an_empty_page_is_empty_text_for_citation_support_under_the_reference_protocol() {
    let r = runs();
    let night = cs_prompts(&r.reference_bodies, "Night services carried");
    assert_eq!(night.len(), 1, "one CS request for the fact: {night:?}");
    assert!(!night[0].contains("could not be read"), "{}", night[0]);
    assert!(
        !night[0].contains("empty text in the sources file"),
        "{}",
        night[0]
    );
    // The default protocol never takes an empty page as evidence: settled unknown
    // without a call.
    let rec = report(&r.default, "sys-a");
    let settled = cs_unit(&rec, "Night services");
    assert_eq!(settled["detail"]["rule"], "no_source_text", "{settled}");
}

#[test]
fn a_fetch_the_sources_file_records_as_failed_shows_its_error_under_the_reference_protocol() {
    let r = runs();
    let asked = cs_prompts(&r.reference_bodies, "Day passes sold out");
    assert_eq!(asked.len(), 1, "one CS request for the fact: {asked:?}");
    assert!(
        asked[0].contains("Error extracting web content: HTTP 500 from the site"),
        "{}",
        asked[0]
    );
    let rec = report(&r.reference, "sys-b");
    let failed = rec["sources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["url"] == "https://example.org/tram/passes")
        .unwrap_or_else(|| panic!("{}", rec["sources"]));
    assert_eq!(failed["fetch"], "failed", "{failed}");
    assert_eq!(failed["reason"], "HTTP 500 from the site", "{failed}");
    // The default protocol never takes the failed page as evidence: settled unknown
    // without a call.
    let d = report(&r.default, "sys-b");
    let settled = cs_unit(&d, "Day passes");
    assert_eq!(settled["detail"]["rule"], "no_source_text", "{settled}");
}

#[test]
fn a_remote_figure_that_cannot_be_downloaded_scores_zero_and_counts_under_the_reference_protocol() {
    let r = runs();
    let rec = report(&r.reference, "sys-a");
    for metric in ["figure_caption_quality", "figure_context_integration"] {
        let u = unit(&rec, metric, "figure:2");
        assert_eq!(u["status"], "scored", "{metric}: {u}");
        assert_eq!(u["score"].as_f64(), Some(0.0), "{metric}: {u}");
        let why = u["reason"].as_str().unwrap_or("");
        assert!(why.contains("could not be downloaded"), "{metric}: {u}");
        assert!(why.contains("boardings.png"), "{metric}: {u}");
    }
    // Counted: the metric averages both figures.
    let fcq = &rec["metrics"]["figure_caption_quality"];
    let first = unit(&rec, "figure_caption_quality", "figure:1")["score"]
        .as_f64()
        .unwrap();
    assert_eq!(fcq["score"].as_f64(), Some(first / 2.0), "{fcq}");
    // MC is judged on the report, not left out.
    let mc = units(&rec, "multimodal_composition");
    assert_eq!(mc[0]["status"], "scored", "{mc:?}");
    // The default keeps "not fetched in this run": skipped with the reason.
    let d = report(&r.default, "sys-a");
    let u = unit(&d, "figure_caption_quality", "figure:2");
    assert_eq!(u["status"], "skipped", "{u}");
}

#[test]
fn a_text_only_system_aggregates_as_the_references_summary_under_the_reference_protocol() {
    let r = runs();
    let (code, stdout, stderr) = tvir_status(&[
        "summarize".to_string(),
        r.reference.display().to_string(),
        "--format".into(),
        "json".into(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let s: Value = serde_json::from_str(&stdout).unwrap();
    let systems = s["judges"][0]["systems"].as_array().unwrap();
    let b = systems
        .iter()
        .find(|x| x["system"] == "sys-b")
        .unwrap_or_else(|| panic!("{systems:?}"));
    let ta = b["ta"]["mean"].as_f64().unwrap();
    assert_eq!(b["va"]["mean"].as_f64(), Some(0.0), "{b}");
    let half = (ta / 2.0 * 1e4).round() / 1e4;
    assert_eq!(b["overall"]["mean"].as_f64(), Some(half), "{b}");
    assert!(
        b.get("not_evaluated").is_none_or(|n| n.get("va").is_none()),
        "{b}"
    );
    // The default keeps the paper's rule: not evaluated, with the reason.
    let (code, stdout, _) = tvir_status(&[
        "summarize".to_string(),
        r.default.display().to_string(),
        "--format".into(),
        "json".into(),
    ]);
    assert_eq!(code, 0);
    let d: Value = serde_json::from_str(&stdout).unwrap();
    let db = d["judges"][0]["systems"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["system"] == "sys-b")
        .unwrap()
        .clone();
    assert!(db["va"]["mean"].is_null(), "{db}");
    assert!(db["not_evaluated"]["va"].as_str().is_some(), "{db}");
}

#[tokio::test]
async fn a_page_to_fetch_without_the_serper_key_fails_its_units_naming_the_key() {
    let f = fixture();
    // Not offline: the night page (empty) and fares come from the sources file;
    // a fourth reference is not in it and is really to be fetched.
    let report = f.reports.join("sys-a/t1/report.md");
    let text = std::fs::read_to_string(&report)
        .unwrap()
        .replace(
            "## References",
            "The depot holds forty trams [3].\n\n## References",
        )
        .replace(
            "[2] Night network review. https://example.org/tram/night\n",
            "[2] Night network review. https://example.org/tram/night\n\
             [3] Depot survey. https://example.org/tram/depot\n",
        );
    std::fs::write(&report, text).unwrap();
    let (out, bodies, stderr) = eval(&f, "out-nokey", &["--protocol", "reference"]).await;
    let rec = read_json(&out.join("sys-a/t1/mock-model/report.json"));
    let depot = cs_unit(&rec, "depot").clone();
    // Its unit fails (not a zero: the missing key is this machine's), naming the key.
    assert_eq!(depot["status"], "failed", "{depot}");
    assert!(
        depot["reason"]
            .as_str()
            .unwrap_or("")
            .contains("SERPER_API_KEY"),
        "{depot}"
    );
    let page = serde_json::to_string(&common::outputs::unit_sources(&rec, &depot)).unwrap();
    assert!(page.contains("SERPER_API_KEY"), "{depot}");
    assert!(page.contains("unavailable"), "{depot}");
    // The other facts were judged from the sources file.
    assert_eq!(cs_prompts(&bodies, "Weekday tram boardings").len(), 1);
    // Said once, not once per page.
    assert_eq!(stderr.matches("SERPER_API_KEY").count(), 1, "{stderr}");
    // Not taken for a network outage.
    assert!(!stderr.contains("no network"), "{stderr}");
}

#[tokio::test]
async fn a_fact_citing_a_page_this_run_cannot_have_fails_under_the_reference_protocol() {
    let f = fixture();
    // The boardings fact also cites a page that is neither in the sources file nor
    // fetchable (offline): the reference would have shown its judge that page too.
    let report = f.reports.join("sys-a/t1/report.md");
    let text = std::fs::read_to_string(&report)
        .unwrap()
        .replace("and 2024 [1].", "and 2024 [1][3].")
        .replace(
            "[2] Night network review. https://example.org/tram/night\n",
            "[2] Night network review. https://example.org/tram/night\n\
             [3] Depot survey. https://example.org/tram/depot\n",
        );
    std::fs::write(&report, text).unwrap();
    let boardings = |out: &Path| {
        let rec = read_json(&out.join("sys-a/t1/mock-model/report.json"));
        cs_unit(&rec, "boardings").clone()
    };
    // The reference's protocol: its input cannot be reproduced, so no score.
    let (out, bodies, _) = eval(&f, "out-ref", &["--protocol", "reference", "--offline"]).await;
    let unit = boardings(&out);
    assert_eq!(unit["status"], "failed", "{unit}");
    let reason = unit["reason"].as_str().unwrap_or("");
    assert!(reason.contains("not available in this run"), "{reason}");
    assert!(cs_prompts(&bodies, "Weekday tram boardings").is_empty());
    // Ours: judged on the page it has (the unavailable one is never evidence).
    let (out, bodies, _) = eval(&f, "out-ours", &["--offline"]).await;
    let unit = boardings(&out);
    assert_eq!(unit["status"], "scored", "{unit}");
    assert_eq!(cs_prompts(&bodies, "Weekday tram boardings").len(), 1);
}
