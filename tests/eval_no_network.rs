//! A machine without network is named as the cause (issue 24, requirement 2): when
//! no cited page reached any server, the citation units fail with "no network: N of
//! N cited pages could not be reached (...)" (the judge is not asked about them),
//! the coverage note says so, `tvir eval` exits 1 and says how to proceed. When one
//! server answered (here a real HTTP server on 127.0.0.1, the page server of
//! tvir-testing), unreachable hosts stay the report's problem.
//!
//! "No server answered" is set up with ports on 127.0.0.1 that nothing listens on
//! (connection refused, before any HTTP status); loopback addresses need
//! `--allow-private`, as in the fetch tests.

use crate::common;

use std::path::{Path, PathBuf};

use serde_json::Value;
use tvir_testing::mock_judge::{MockConfig, MockJudge};
use tvir_testing::page_server::PageServer;

/// A port on 127.0.0.1 nothing listens on (bound, then released).
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// ROOT/sys/ex001/report.md with two facts, citing `[1]` and `[2]`.
fn write_report(root: &Path, url1: &str, url2: &str) {
    let dir = root.join("sys").join("ex001");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("report.md"),
        format!(
            "# Rooftop solar\n\nRooftop capacity reached 835 MW in 2024 [1].\n\n\
             Installed cost fell by a third over five years [2].\n\n## References\n\n\
             [1] Solar capacity review. {url1}\n\
             [2] Cost survey. {url2}\n"
        ),
    )
    .unwrap();
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
    report: Value,
}

/// `tvir eval` of the reports under `dir/reports` judged by `mock`, fetching with
/// loopback allowed and one attempt per page.
async fn eval(dir: &Path, mock: &MockJudge) -> Run {
    let (dir, url) = (dir.to_path_buf(), mock.base_url());
    let out = dir.join("out");
    let output = tokio::task::spawn_blocking({
        let out = out.clone();
        move || {
            let examples = common::examples();
            common::cli::tvir_command()
                .args(["eval", "--reports"])
                .arg(dir.join("reports"))
                .arg("--tasks")
                .arg(examples.join("tasks.json"))
                .arg("--out")
                .arg(&out)
                .arg("--cache")
                .arg(dir.join("cache.sqlite"))
                .args(["--base-url", &url, "--judge-model", "mock-model"])
                .args([
                    "--assume-vision",
                    "--allow-private",
                    "--fetch-attempts",
                    "1",
                ])
                .output()
                .expect("run tvir")
        }
    })
    .await
    .unwrap();
    let report_path: PathBuf = out.join("sys/ex001/mock-model/report.json");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let report = std::fs::read_to_string(&report_path)
        .map(|t| serde_json::from_str(&t).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}\n{stdout}\n{stderr}", report_path.display()));
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout,
        stderr,
        report,
    }
}

fn cs_units(report: &Value) -> Vec<&Value> {
    report["units"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["metric"] == "citation_support")
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_server_answered_fails_citations_as_no_network() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (closed_port(), closed_port());
    write_report(
        &dir.path().join("reports"),
        &format!("http://127.0.0.1:{a}/capacity"),
        &format!("http://127.0.0.1:{b}/cost"),
    );
    let mock = MockJudge::start(MockConfig::default()).await;
    let run = eval(dir.path(), &mock).await;
    let all = format!("{}\n{}", run.stdout, run.stderr);
    assert_eq!(run.code, 1, "{all}");

    let units = cs_units(&run.report);
    assert_eq!(units.len(), 2, "{all}");
    for unit in &units {
        assert_eq!(unit["status"], "failed", "{unit}");
        let reason = unit["reason"].as_str().unwrap();
        assert!(
            reason.starts_with("no network: 2 of 2 cited pages could not be reached ("),
            "{reason}"
        );
        // The audit still shows how each source's fetch ended.
        let sources = common::outputs::unit_sources(&run.report, unit);
        assert_eq!(sources[0]["fetch"], "failed", "{unit}");
    }
    assert_eq!(
        mock.metric_count("citation_support"),
        0,
        "the judge is not asked about facts whose pages could not be reached"
    );
    let cs = &run.report["metrics"]["citation_support"];
    assert_eq!(cs["status"], "not_evaluated", "{cs}");
    assert_eq!(cs["coverage"], 0.0, "{cs}");
    assert!(
        cs["note"].as_str().unwrap().contains("no network: 2 of 2"),
        "{cs}"
    );
    // The end of the run: pages read / not read by reason, and what to do.
    assert!(
        run.stdout.contains("pages: 0 read, 2 not read (2 failed: "),
        "{all}"
    );
    for hint in ["--sources FILE", "tvir fetch", "--offline"] {
        assert!(run.stderr.contains(hint), "no {hint} in:\n{}", run.stderr);
    }
    mock.shutdown().await;

    // `tvir fetch` says the same, with the counts by reason.
    let fetch = common::cli::tvir_command()
        .args(["fetch", "--reports"])
        .arg(dir.path().join("reports"))
        .arg("--cache")
        .arg(dir.path().join("cache.sqlite"))
        .args(["--allow-private", "--fetch-attempts", "1"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&fetch.stdout);
    let stderr = String::from_utf8_lossy(&fetch.stderr);
    assert_eq!(fetch.status.code(), Some(1));
    assert!(stdout.contains("pages: 0 read, 2 not read"), "{stdout}");
    assert!(
        stdout.contains("no network: 2 of 2 cited pages could not be reached"),
        "{stdout}"
    );
    assert!(stderr.contains("--sources FILE"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_server_answered_leaves_dead_hosts_to_the_report() {
    let server = PageServer::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let dead = closed_port();
    write_report(
        &dir.path().join("reports"),
        &server.url("/article.html"),
        &format!("http://127.0.0.1:{dead}/cost"),
    );
    let mock = MockJudge::start(MockConfig::default()).await;
    let run = eval(dir.path(), &mock).await;
    let all = format!("{}\n{}", run.stdout, run.stderr);
    assert_eq!(server.hits_for("/article.html"), 1, "{all}");

    let units = cs_units(&run.report);
    assert_eq!(units.len(), 2, "{all}");
    for unit in &units {
        let reason = unit["reason"].as_str().unwrap_or_default();
        assert!(!reason.contains("no network"), "{unit}");
        assert_eq!(unit["status"], "scored", "{unit}");
    }
    // The fact citing the dead host is settled by the rubric's rule (the report's
    // fault), the other is judged.
    let dead_unit = units
        .iter()
        .find(|u| u["detail"]["ref_idxs"][0] == "2")
        .unwrap();
    assert_eq!(dead_unit["detail"]["rule"], "no_source_text", "{dead_unit}");
    assert_eq!(mock.metric_count("citation_support"), 1, "{all}");
    assert!(
        run.stdout.contains("pages: 1 read, 1 not read (1 failed: "),
        "{all}"
    );
    assert!(!run.stderr.contains("no network"), "{all}");
    mock.shutdown().await;
}

/// Offline (`--offline`), a cited page in neither the cache nor the sources file was
/// never fetched: that is this run's doing, not the report's, so its fact fails with
/// the reason and the remedy (CS is not pulled to 0 by it), while a page the sources
/// file records as empty stays the report's problem (settled by the rubric's rule)
/// and a page with text is judged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offline_pages_missing_from_cache_and_sources_fail_their_facts() {
    let dir = tempfile::tempdir().unwrap();
    let report_dir = dir.path().join("reports").join("sys").join("ex001");
    std::fs::create_dir_all(&report_dir).unwrap();
    std::fs::write(
        report_dir.join("report.md"),
        "# Rooftop solar\n\nRooftop capacity reached 835 MW in 2024 [1].\n\n\
         Installed cost fell by a third over five years [2].\n\n\
         Most new systems include a battery [3].\n\n## References\n\n\
         [1] Solar capacity review. https://example.org/solar/review\n\
         [2] Cost survey. https://example.org/solar/cost\n\
         [3] Storage note. https://example.org/solar/storage\n",
    )
    .unwrap();
    let sources = dir.path().join("sources.jsonl");
    std::fs::write(
        &sources,
        "{\"url\": \"https://example.org/solar/review\", \"text\": \"Rooftop capacity reached 835 MW in 2024.\"}\n\
         {\"url\": \"https://example.org/solar/cost\", \"text\": \"\"}\n",
    )
    .unwrap();
    let mock = MockJudge::start(MockConfig::default()).await;
    let out = dir.path().join("out");
    let output = common::cli::tvir_command()
        .args(["eval", "--reports"])
        .arg(dir.path().join("reports"))
        .arg("--tasks")
        .arg(common::examples().join("tasks.json"))
        .arg("--out")
        .arg(&out)
        .arg("--cache")
        .arg(dir.path().join("cache.sqlite"))
        .args([
            "--base-url",
            &mock.base_url(),
            "--judge-model",
            "mock-model",
        ])
        .args(["--assume-vision", "--offline", "--sources"])
        .arg(&sources)
        .output()
        .unwrap();
    let all = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        output.status.code(),
        Some(1),
        "a failed unit: exit 1\n{all}"
    );
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("sys/ex001/mock-model/report.json")).unwrap(),
    )
    .unwrap();
    let units = cs_units(&report);
    let by_ref = |r: &str| {
        *units
            .iter()
            .find(|u| u["detail"]["ref_idxs"][0] == r)
            .unwrap_or_else(|| panic!("no unit citing [{r}]: {units:?}"))
    };
    let read = by_ref("1");
    assert_eq!(read["status"], "scored", "{read}");
    assert!(read["detail"].get("rule").is_none(), "judged: {read}");
    let empty = by_ref("2");
    assert_eq!(empty["status"], "scored", "{empty}");
    assert_eq!(empty["detail"]["rule"], "no_source_text", "{empty}");
    assert_eq!(empty["score"], 0.0, "{empty}");
    let missing = by_ref("3");
    assert_eq!(missing["status"], "failed", "{missing}");
    let reason = missing["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("cited page not available in this run (offline: not in the cache")
            && reason.contains("tvir fetch")
            && reason.contains("--sources FILE"),
        "{reason}"
    );
    assert_eq!(
        common::outputs::unit_sources(&report, missing)[0]["fetch"],
        "unavailable"
    );
    assert_eq!(
        mock.metric_count("citation_support"),
        1,
        "only the fact with a readable page is judged"
    );
    let cs = &report["metrics"]["citation_support"];
    assert_eq!(cs["status"], "evaluated", "{cs}");
    assert_eq!(cs["failed_item_count"], 1, "{cs}");
    assert!(
        cs["note"]
            .as_str()
            .unwrap_or_default()
            .contains("cited page not available"),
        "the coverage note names the cause: {cs}"
    );
    mock.shutdown().await;
}
