//! `tvir summarize` over eval trees written programmatically: means and standard
//! deviations over runs, breakdowns, domain difficulty, formats and exit codes.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use common::cli::tvir_status as tvir;

use tvir_analysis::aggregate::{self, load::parse_tasks, load_eval_tree};
use tvir_engine::record::{
    MetricRecord, MetricStatus, ReportRecord, StructuralErrorCounts, UnitRecord, UnitStatus,
    UsageRecord,
};

struct Rec<'a> {
    system: &'a str,
    task: &'a str,
    judge_folder: &'a str,
    ta: f64,
    va: Option<f64>,
    cs: f64,
    ec: f64,
    trace: usize,
}

fn record(r: &Rec) -> ReportRecord {
    let metric = |score: f64| MetricRecord {
        score: Some(score),
        status: MetricStatus::Evaluated,
        item_count: 1,
        scored_item_count: 1,
        failed_item_count: 0,
        skipped_item_count: 0,
        coverage: 1.0,
        note: None,
    };
    let mut metrics = BTreeMap::new();
    metrics.insert("citation_support".to_string(), metric(r.cs));
    ReportRecord {
        system: r.system.into(),
        task_id: r.task.into(),
        judge_model: r.judge_folder.into(),
        run: 1,
        language: None,
        complexity: None,
        domain: None,
        metrics,
        ta: Some(r.ta),
        va: r.va,
        overall: r.va.map(|v| (r.ta + v) / 2.0),
        effective_citations: Some(r.ec),
        structural_error_counts: StructuralErrorCounts {
            traceability: r.trace,
            consistency: 1,
            completeness: 0,
        },
        structural_errors: Default::default(),
        units: vec![UnitRecord {
            metric: "citation_support".into(),
            unit: "fact:1".into(),
            status: UnitStatus::Scored,
            reason: None,
            score: Some(r.cs),
            answer: Some(serde_json::json!({"verdict": "supported"})),
            justification: Some("the <source> says so".into()),
            detail: serde_json::json!({"fact": "x"}),
        }],
        usage: UsageRecord::default(),
        n_images: usize::from(r.va.is_some()),
        n_charts: 0,
        n_figures: usize::from(r.va.is_some()),
        extraction: None,
        render: None,
        thumbnails: Vec::new(),
        protocol: None,
        sources: Vec::new(),
        error: None,
    }
}

fn write(root: &Path, r: &Rec) {
    let dir = root.join(r.system).join(r.task).join(r.judge_folder);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("report.json"),
        serde_json::to_string_pretty(&record(r)).unwrap(),
    )
    .unwrap();
}

/// Two systems, two tasks, two runs; system b has no VA on task 2 (text-only).
fn fixture(root: &Path) {
    let rows = [
        // system, task, run folder, ta, va, cs, ec, trace
        ("a", "t1", "jm-run1", 0.60, Some(0.40), 0.5, 3.0, 2),
        ("a", "t2", "jm-run1", 0.80, Some(0.60), 1.0, 5.0, 0),
        ("a", "t1", "jm-run2", 0.70, Some(0.50), 0.5, 4.0, 2),
        ("a", "t2", "jm-run2", 0.90, Some(0.70), 1.0, 6.0, 0),
        ("b", "t1", "jm-run1", 0.50, Some(0.30), 0.0, 1.0, 4),
        ("b", "t2", "jm-run1", 0.40, None, 0.5, 2.0, 4),
        ("b", "t1", "jm-run2", 0.50, Some(0.30), 0.0, 1.0, 4),
        ("b", "t2", "jm-run2", 0.40, None, 0.5, 2.0, 4),
    ];
    for (system, task, judge_folder, ta, va, cs, ec, trace) in rows {
        write(
            root,
            &Rec {
                system,
                task,
                judge_folder,
                ta,
                va,
                cs,
                ec,
                trace,
            },
        );
    }
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-12)
}

#[test]
fn means_and_std_over_runs() {
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path());
    let tree = load_eval_tree(dir.path()).unwrap();
    assert_eq!(tree.records.len(), 8);
    let s = aggregate::summarize_tree(&tree, &BTreeMap::new(), None);
    assert_eq!(s.judges.len(), 1);
    let j = &s.judges[0];
    assert_eq!(j.judge_model, "jm");
    assert_eq!(j.runs, vec![1, 2]);
    // a: TA run means 0.70, 0.80 -> mean 0.75, sample std sqrt(0.005) ; b: 0.45, 0.45
    let a = &j.systems[0];
    assert_eq!(a.system, "a");
    assert!(close(a.ta.mean, 0.75));
    assert!(close(a.ta.std, 0.005f64.sqrt()));
    // a overall per report: .5,.7 | .6,.8 -> run means .6,.7 -> .65
    assert!(close(a.overall.mean, 0.65));
    assert!(close(a.aec.mean, 4.5));
    assert!(close(a.structural_errors.traceability.mean, 1.0));
    assert!(close(a.structural_errors.total.mean, 2.0));
    assert!(close(a.metrics["citation_support"].mean, 0.75));
    let b = &j.systems[1];
    assert!(close(b.ta.mean, 0.45));
    assert!(close(b.ta.std, 0.0));
    // text-only report has no VA / Overall: b's VA is the mean over t1 only
    assert!(close(b.va.mean, 0.30));
    assert!(close(b.overall.mean, 0.40));
    assert_eq!(b.text_only_reports, 2);
    assert_eq!((a.tasks, a.reports, a.runs), (2, 4, 2));
}

#[test]
fn breakdowns_and_domain_difficulty() {
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path());
    // t1 has fields, t2 only a Chinese query (language detected).
    let tasks = parse_tasks(
        r#"[{"id":"t1","query":"Analyse the market","language":"en","complexity":"high","domain":"Finance"},
            {"id":"t2","query":"请分析新能源汽车市场的发展趋势","domain":"Energy"}]"#,
        "query.json",
    )
    .unwrap();
    let tree = load_eval_tree(dir.path()).unwrap();
    let s = aggregate::summarize_tree(&tree, &tasks, Some("query.json"));
    let j = &s.judges[0];
    let lang = j
        .breakdowns
        .iter()
        .find(|b| b.dimension == "language")
        .unwrap();
    let groups: Vec<&str> = lang.groups.iter().map(|g| g.group.as_str()).collect();
    assert_eq!(groups, ["zh", "en"]);
    let cx = j
        .breakdowns
        .iter()
        .find(|b| b.dimension == "complexity")
        .unwrap();
    let groups: Vec<&str> = cx.groups.iter().map(|g| g.group.as_str()).collect();
    assert_eq!(groups, ["high", "unknown"]);
    // Overall per domain: a Finance .55 Energy .75 ; b Finance .40 Energy none.
    // a ranks Finance 1, Energy 2 ; b ranks Finance 1 (only domain it has).
    let dd = j
        .domain_difficulty
        .iter()
        .find(|d| d.level == "overall")
        .unwrap();
    assert_eq!(dd.domains[0].domain, "Finance");
    assert!((dd.domains[0].average_rank - 1.0).abs() < 1e-12);
    assert_eq!(dd.domains[0].systems, 2);
    assert_eq!(dd.domains[1].domain, "Energy");
    assert!((dd.domains[1].average_rank - 2.0).abs() < 1e-12);
    assert!(dd.notes.iter().any(|n| n.starts_with('b')));
    // TA: a Finance .65 Energy .85 ; b Finance .5 Energy .4 -> Finance 1.5, Energy 1.5
    let ta = j
        .domain_difficulty
        .iter()
        .find(|d| d.level == "ta")
        .unwrap();
    assert!(ta
        .domains
        .iter()
        .all(|d| (d.average_rank - 1.5).abs() < 1e-12));
}

#[test]
fn cli_formats_and_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path());
    let out = dir.path().to_str().unwrap();

    let (code, table, _) = tvir(&["summarize", out]);
    assert_eq!(code, 0);
    assert!(table.contains("Leaderboard (judge jm, 2 runs"), "{table}");
    assert!(table.contains("75.00 ±7.07"), "{table}");

    let (code, md, _) = tvir(&["summarize", out, "--format", "md"]);
    assert_eq!(code, 0);
    assert!(md.contains("| # | System |"));

    let (code, csv, _) = tvir(&["summarize", out, "--format", "csv"]);
    assert_eq!(code, 0);
    let mut rdr = csv::Reader::from_reader(csv.as_bytes());
    let headers = rdr.headers().unwrap().clone();
    let ta_col = headers.iter().position(|h| h == "ta_mean").unwrap();
    let first = rdr.records().next().unwrap().unwrap();
    assert_eq!(&first[3], "a");
    assert!((first[ta_col].parse::<f64>().unwrap() - 75.0).abs() < 1e-9);

    let (code, json, _) = tvir(&["summarize", out, "--format", "json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["judges"][0]["systems"][0]["system"], "a");

    let (code, html, _) = tvir(&["summarize", out, "--format", "html"]);
    assert_eq!(code, 0);
    let html = common::cli::summary_pages(&html);
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("<svg"));
    assert!(html.contains("the &lt;source&gt; says so"));
    assert!(!html.contains("the <source> says so"));

    assert!(html.contains("Reports (8 of 8 records)"));
    let (_, html, _) = tvir(&[
        "summarize",
        out,
        "--format",
        "html",
        "--sections",
        "first-run",
    ]);
    let html = common::cli::summary_pages(&html);
    assert!(html.contains("Reports (4 of 8 records)"));
    assert_eq!(html.matches("<details class=\"report\"").count(), 4);
    let (_, html, _) = tvir(&["summarize", out, "--format", "html", "--sections", "none"]);
    let html = common::cli::summary_pages(&html);
    assert!(html.contains("Reports (0 of 8 records)"));
    assert!(html.contains("<svg"));

    // a corrupt record is listed, the rest summarised, exit 1
    let bad = dir.path().join("c").join("t1").join("jm-run1");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(bad.join("report.json"), "{not json").unwrap();
    let (code, table, err) = tvir(&["summarize", out]);
    assert_eq!(code, 1);
    assert!(table.contains("Unreadable records (1)"));
    assert!(err.contains("report.json"));

    // unreadable input: exit 2 naming the path
    let (code, _, err) = tvir(&["summarize", "/nonexistent/out"]);
    assert_eq!(code, 2);
    assert!(err.contains("/nonexistent/out"));
    let empty = tempfile::tempdir().unwrap();
    let (code, _, err) = tvir(&["summarize", empty.path().to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("not an eval output folder"), "{err}");
}

/// A system named `summary` sits where the HTML summary goes by default
/// (`OUT/summary`): refused before any analysis, with the way out named; with
/// `--html-out` it is summarized like any other system.
#[test]
fn a_system_named_summary_needs_another_html_folder() {
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path());
    let rec = |system| Rec {
        system,
        task: "t1",
        judge_folder: "jm-run1",
        ta: 0.5,
        va: Some(0.5),
        cs: 0.5,
        ec: 1.0,
        trace: 0,
    };
    write(dir.path(), &rec("summary"));
    let out = dir.path().to_str().unwrap();
    let (code, _, err) = tvir(&["summarize", out, "--format", "html"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("system named \"summary\"") && err.contains("--html-out"),
        "{err}"
    );
    // Nothing was written into the system's folder.
    assert!(!dir.path().join("summary").join("index.html").exists());
    let site = dir.path().join("site");
    let (code, index, err) = tvir(&[
        "summarize",
        out,
        "--format",
        "html",
        "--html-out",
        site.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let html = common::cli::summary_pages(&index);
    assert!(
        html.contains("systems/summary.html"),
        "no row for the system"
    );
}

/// A leaderboard of more systems than fit a first page (30 systems x 8 tasks): the
/// first page holds one row per system and a table of levels, no pairwise matrix
/// and no report row; each level's chart, intervals and matrix (30 x 30) are on
/// the level's page, the breakdowns on theirs, each system's reports on its page,
/// each linking its reports' pages; every link of the first page resolves. Rendered
/// in headless Chromium over `file://` when it is installed.
#[test]
fn many_systems_get_a_page_per_level_and_per_system() {
    let dir = tempfile::tempdir().unwrap();
    let systems: Vec<String> = (0..30).map(|k| format!("sys-{k:02}")).collect();
    let tasks: Vec<String> = (0..8).map(|t| format!("t{t}")).collect();
    for (k, system) in systems.iter().enumerate() {
        for (t, task) in tasks.iter().enumerate() {
            let wiggle = ((k * 7 + t * 13) % 11) as f64 / 100.0;
            write(
                dir.path(),
                &Rec {
                    system,
                    task,
                    judge_folder: "jm",
                    ta: 0.2 + 0.02 * k as f64 + wiggle,
                    va: Some(0.1 + 0.025 * k as f64 + wiggle),
                    cs: if t == 0 { 0.0 } else { 0.5 },
                    ec: 1.0,
                    trace: 0,
                },
            );
        }
    }
    let out = dir.path().to_str().unwrap();
    let (code, stdout, err) = tvir(&["summarize", out, "--format", "html", "--bootstrap", "300"]);
    assert_eq!(code, 0, "{err}");
    let index_path = std::path::PathBuf::from(stdout.trim());
    let site = index_path.parent().unwrap().to_path_buf();
    let index = std::fs::read_to_string(&index_path).unwrap();
    assert_eq!(index.matches("<tr class=\"system-row").count(), 30);
    assert_eq!(
        index.matches("report-row").count(),
        0,
        "report rows on the first page"
    );
    assert_eq!(index.matches("<table class=\"pairs\">").count(), 0);
    assert!(index.contains("<table class=\"sig-levels\">"));
    // Every relative link of the first page names a file of the folder.
    let mut links = 0;
    for href in index
        .split("href=\"")
        .skip(1)
        .map(|s| &s[..s.find('"').unwrap()])
    {
        if href.starts_with('#') || href.starts_with("http") {
            continue;
        }
        let file = href.split('#').next().unwrap();
        assert!(site.join(file).is_file(), "{href} does not resolve");
        links += 1;
    }
    assert!(links >= 30 + 3, "{links} links");
    let overall = std::fs::read_to_string(site.join("levels/jm/overall.html")).unwrap();
    assert_eq!(overall.matches("<table class=\"pairs\">").count(), 1);
    assert_eq!(
        overall.matches("<small>(g").count(),
        30,
        "one matrix row per system"
    );
    assert!(overall.contains("<svg"), "no chart on the level page");
    assert!(overall.contains("href=\"../../index.html\""));
    // Names other than letters, digits, `.` and `-` are escaped: the page as linked.
    let cs_href = index
        .split("href=\"")
        .map(|s| &s[..s.find('"').unwrap_or(0)])
        .find(|h| h.starts_with("levels/jm/citation"))
        .expect("a link to the citation support page");
    let cs = std::fs::read_to_string(site.join(cs_href)).unwrap();
    assert!(cs.contains("<table class=\"pairs\">"));
    let system_page = std::fs::read_to_string(site.join("systems/sys-07.html")).unwrap();
    assert_eq!(system_page.matches("<tr class=\"report-row").count(), 8);
    assert_eq!(
        system_page
            .matches("<tr class=\"report-row zero\">")
            .count(),
        1
    );
    for href in system_page
        .split("href=\"")
        .skip(1)
        .map(|s| &s[..s.find('"').unwrap()])
    {
        let file = href.split('#').next().unwrap();
        assert!(
            site.join("systems").join(file).is_file(),
            "{href} does not resolve"
        );
    }
    if let Some(dom) = chromium_dom(&index_path) {
        assert_eq!(dom.matches("class=\"system-row").count(), 30, "{dom}");
        let level = chromium_dom(&site.join("levels/jm/overall.html")).unwrap();
        assert_eq!(level.matches("class=\"pairs\"").count(), 1);
    }
}

/// The DOM headless Chromium builds from `page` over `file://`; None (the test
/// says it skipped) without Chromium.
fn chromium_dom(page: &Path) -> Option<String> {
    let chromium = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|c| {
            std::process::Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        });
    let Some(chromium) = chromium else {
        common::skip("chromium not found (the pages were checked as files, not rendered)");
        return None;
    };
    let profile = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}
