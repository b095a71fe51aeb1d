//! `tvir summarize` with intervals, paired tests, rank groups and the judge-noise
//! decomposition (issue #25), on eval trees written here with known scores. Every
//! number checked is recomputed in this file by a separate route: the exact
//! sign-flip p by brute force over all sign patterns, Holm by its definition, the
//! interval width against the normal approximation, the noise terms from the runs.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use common::cli::tvir_status as tvir;
use serde_json::Value;

use tvir_engine::record::{
    MetricRecord, MetricStatus, ReportRecord, StructuralErrorCounts, UsageRecord,
};

/// One `report.json` with the given fractions (None: no score at that level).
fn write(
    root: &Path,
    system: &str,
    task: &str,
    folder: &str,
    ta: Option<f64>,
    va: Option<f64>,
    cs: f64,
) {
    let mut metrics = BTreeMap::new();
    metrics.insert(
        "citation_support".to_string(),
        MetricRecord {
            score: Some(cs),
            status: MetricStatus::Evaluated,
            item_count: 1,
            scored_item_count: 1,
            failed_item_count: 0,
            skipped_item_count: 0,
            coverage: 1.0,
            note: None,
        },
    );
    let overall = ta.zip(va).map(|(t, v)| (t + v) / 2.0);
    let record = ReportRecord {
        system: system.into(),
        task_id: task.into(),
        judge_model: folder.into(),
        run: 1,
        language: None,
        complexity: None,
        domain: None,
        metrics,
        ta,
        va,
        overall,
        effective_citations: Some(1.0),
        structural_error_counts: StructuralErrorCounts {
            traceability: 0,
            consistency: 0,
            completeness: 0,
        },
        structural_errors: Default::default(),
        units: Vec::new(),
        usage: UsageRecord::default(),
        n_images: 1,
        n_charts: 0,
        n_figures: 1,
        extraction: None,
        render: None,
        thumbnails: Vec::new(),
        protocol: None,
        sources: Vec::new(),
        error: None,
    };
    let dir = root.join(system).join(task).join(folder);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("report.json"),
        serde_json::to_string(&record).unwrap(),
    )
    .unwrap();
}

/// beta's TA per task; alpha = beta + `ALPHA_MINUS_BETA`, gamma = beta + `GAMMA_MINUS_BETA`
/// (points). VA is TA - 10 points, so Overall carries the same differences.
const BETA: [f64; 8] = [50.0, 62.0, 41.0, 55.0, 70.0, 47.0, 58.0, 66.0];
const ALPHA_MINUS_BETA: [f64; 8] = [3.0, -4.0, 1.0, 5.0, -2.0, 2.0, -3.0, 4.0];
const GAMMA_MINUS_BETA: [f64; 8] = [-25.0, -27.0, -24.0, -26.0, -28.0, -23.0, -25.0, -29.0];

/// Closed case: one run, 8 tasks (exact test), three systems; `delta` has only a
/// citation-support score on three tasks (untestable pairs at that level).
fn closed_tree(root: &Path) {
    for (t, &b) in BETA.iter().enumerate() {
        let task = format!("t{t}");
        for (system, offset) in [
            ("alpha", ALPHA_MINUS_BETA[t]),
            ("beta", 0.0),
            ("gamma", GAMMA_MINUS_BETA[t]),
        ] {
            let ta = (b + offset) / 100.0;
            write(root, system, &task, "jm", Some(ta), Some(ta - 0.1), 0.5);
        }
        if t < 3 {
            write(root, "delta", &task, "jm", None, None, 0.9);
        }
    }
}

/// Two-sided sign-flip p by brute force: every sign pattern, its mean compared with
/// the observed one.
fn brute_force_p(diffs: &[f64]) -> f64 {
    let n = diffs.len();
    let observed = (diffs.iter().sum::<f64>() / n as f64).abs();
    let mut count = 0;
    for pattern in 0u32..1 << n {
        let s: f64 = diffs
            .iter()
            .enumerate()
            .map(|(i, d)| if pattern >> i & 1 == 1 { -d } else { *d })
            .sum();
        if (s / n as f64).abs() >= observed - 1e-9 {
            count += 1;
        }
    }
    count as f64 / f64::from(1u32 << n)
}

/// Holm by its definition: the k-th smallest of m p-values times (m - k + 1), made
/// monotone, capped at 1; returned in input order.
fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p[a].partial_cmp(&p[b]).unwrap());
    let mut out = vec![0.0; m];
    let mut running = 0.0f64;
    for (k, &i) in order.iter().enumerate() {
        running = running.max((p[i] * (m - k) as f64).min(1.0));
        out[i] = running;
    }
    out
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

fn summarize_json(root: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["summarize", root.to_str().unwrap(), "--format", "json"];
    args.extend_from_slice(extra);
    let (code, out, err) = tvir(&args);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

fn system<'a>(level: &'a Value, name: &str) -> &'a Value {
    level["systems"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["system"] == name)
        .unwrap_or_else(|| panic!("no {name} in {level}"))
}

fn pair<'a>(level: &'a Value, a: &str, b: &str) -> &'a Value {
    level["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["a"] == a && p["b"] == b)
        .unwrap_or_else(|| panic!("no pair {a} vs {b}"))
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn json_intervals_exact_p_holm_and_groups() {
    let dir = tempfile::tempdir().unwrap();
    closed_tree(dir.path());
    let v = summarize_json(dir.path(), &["--bootstrap", "4000", "--seed", "17"]);
    let sig = &v["judges"][0]["significance"];
    let levels: Vec<&str> = sig
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(levels, ["overall", "ta", "va", "citation_support"]);

    let ta = &sig["ta"];
    assert_eq!(ta["resamples"], 4000);
    assert_eq!(ta["seed"], 17);
    assert_eq!(ta["permutations"], 10_000);

    // Systems: mean over tasks on 0-100, the interval around it, about as wide as
    // the normal approximation (sd of the bootstrap mean = population sd / sqrt(n));
    // a 90 % interval would be 0.84 times as wide, a 99 % one 1.31 times.
    let alpha: Vec<f64> = BETA
        .iter()
        .zip(ALPHA_MINUS_BETA)
        .map(|(b, d)| b + d)
        .collect();
    let a = system(ta, "alpha");
    assert_eq!(a["tasks"], 8);
    assert!((f(&a["mean"]) - mean(&alpha)).abs() < 1e-9);
    let (lo, hi) = (f(&a["ci"][0]), f(&a["ci"][1]));
    assert!(lo < f(&a["mean"]) && f(&a["mean"]) < hi, "{a}");
    let m = mean(&alpha);
    let sd = (alpha.iter().map(|x| (x - m).powi(2)).sum::<f64>() / 8.0).sqrt() / 8f64.sqrt();
    let ratio = (hi - lo) / (2.0 * 1.96 * sd);
    assert!(
        (0.9..1.08).contains(&ratio),
        "width {} vs normal {}",
        hi - lo,
        2.0 * 1.96 * sd
    );

    // Pairs: paired differences, exact p (8 tasks), Holm over the level's 3 pairs.
    let diffs = |offsets: &[f64; 8], minus: &[f64; 8]| -> Vec<f64> {
        BETA.iter()
            .zip(offsets.iter().zip(minus))
            .map(|(b, (x, y))| (b + x) - (b + y))
            .collect()
    };
    let zero = [0.0; 8];
    let ab = diffs(&ALPHA_MINUS_BETA, &zero);
    let ag = diffs(&ALPHA_MINUS_BETA, &GAMMA_MINUS_BETA);
    let bg = diffs(&zero, &GAMMA_MINUS_BETA);
    let raw = [brute_force_p(&ab), brute_force_p(&ag), brute_force_p(&bg)];
    assert_eq!(raw[1], 2.0 / 256.0);
    let adjusted = holm(&raw);
    for (k, (x, y, d)) in [
        ("alpha", "beta", &ab),
        ("alpha", "gamma", &ag),
        ("beta", "gamma", &bg),
    ]
    .into_iter()
    .enumerate()
    {
        let p = pair(ta, x, y);
        assert_eq!(p["tasks"], 8);
        assert_eq!(p["method"], "exact");
        assert!((f(&p["mean_diff"]) - mean(d)).abs() < 1e-9, "{p}");
        assert!(
            (f(&p["p"]) - raw[k]).abs() < 1e-12,
            "{x}-{y}: {p} vs {}",
            raw[k]
        );
        assert!((f(&p["p_holm"]) - adjusted[k]).abs() < 1e-12, "{p}");
        let (lo, hi) = (f(&p["ci"][0]), f(&p["ci"][1]));
        assert!(lo <= mean(d) && mean(d) <= hi, "{p}");
    }
    assert!(adjusted[0] > 0.05 && adjusted[1] < 0.05 && adjusted[2] < 0.05);
    let groups = |level: &str| sig[level]["groups"].clone();
    let want = serde_json::json!([["alpha", "beta"], ["gamma"]]);
    for level in ["overall", "ta", "va"] {
        assert_eq!(groups(level), want, "{level}");
    }
    // Overall carries the same differences as TA (VA is TA - 10 everywhere).
    assert!((f(&pair(&sig["overall"], "alpha", "beta")["p"]) - raw[0]).abs() < 1e-12);

    // Citation support: delta shares 3 tasks with the others, so its pairs are not
    // testable (and say why); the others tie (equal scores: p = 1), one group.
    let cs = &sig["citation_support"];
    assert_eq!(system(cs, "delta")["tasks"], 3);
    for p in cs["pairs"].as_array().unwrap() {
        if p["a"] == "delta" || p["b"] == "delta" {
            assert_eq!(p["testable"], false, "{p}");
            assert!(p["p"].is_null() && p["p_holm"].is_null() && p["ci"].is_null());
            assert!(
                p["reason"]
                    .as_str()
                    .unwrap()
                    .contains("only 3 shared tasks"),
                "{p}"
            );
            assert_eq!(p["tasks"], 3);
        } else {
            assert_eq!(f(&p["p"]), 1.0, "{p}");
        }
    }
    assert_eq!(cs["groups"].as_array().unwrap().len(), 1);
    // One run: no judge-noise decomposition.
    assert!(ta.get("judge_noise").is_none());

    // The same seed gives the same page; another seed other intervals, same tests.
    assert_eq!(
        v,
        summarize_json(dir.path(), &["--bootstrap", "4000", "--seed", "17"])
    );
    let other = summarize_json(dir.path(), &["--bootstrap", "4000", "--seed", "18"]);
    let other_ta = &other["judges"][0]["significance"]["ta"];
    assert_ne!(system(other_ta, "alpha")["ci"], a["ci"]);
    assert_eq!(
        pair(other_ta, "alpha", "beta")["p"],
        pair(ta, "alpha", "beta")["p"]
    );

    // --bootstrap 0: no significance at all.
    let none = summarize_json(dir.path(), &["--bootstrap", "0"]);
    assert!(none["judges"][0].get("significance").is_none());
}

/// Three systems 15 points apart, 25 tasks (Monte Carlo test), two judge runs.
fn runs_tree(root: &Path) -> BTreeMap<(String, usize), [f64; 2]> {
    let mut ta_points = BTreeMap::new();
    for t in 0..25usize {
        let task_effect = ((t * 37 + 11) % 21) as f64 - 10.0;
        for (s, (system, base)) in [("hi", 60.0), ("mid", 45.0), ("lo", 30.0)]
            .into_iter()
            .enumerate()
        {
            let mut runs = [0.0; 2];
            for (r, run) in runs.iter_mut().enumerate() {
                let noise = ((t * 13 + s * 7 + r * 5) % 9) as f64 / 2.0 - 2.0;
                *run = base + task_effect + noise;
                let folder = format!("jm-run{}", r + 1);
                let ta = *run / 100.0;
                write(
                    root,
                    system,
                    &format!("t{t:02}"),
                    &folder,
                    Some(ta),
                    Some(ta),
                    0.5,
                );
            }
            ta_points.insert((system.to_string(), t), runs);
        }
    }
    ta_points
}

#[test]
fn runs_give_monte_carlo_p_separate_groups_and_the_noise_decomposition() {
    let dir = tempfile::tempdir().unwrap();
    let points = runs_tree(dir.path());
    let v = summarize_json(
        dir.path(),
        &["--bootstrap", "2000", "--permutations", "999"],
    );
    let ta = &v["judges"][0]["significance"]["ta"];
    assert_eq!(ta["groups"], serde_json::json!([["hi"], ["mid"], ["lo"]]));
    for p in ta["pairs"].as_array().unwrap() {
        // Every task favours the higher system by ~15 points: no random sign pattern
        // (but the observed one, counted in) is as extreme, so p = 1 / (999 + 1).
        assert_eq!(p["method"], "monte_carlo");
        assert_eq!(f(&p["p"]), 1.0 / 1000.0, "{p}");
        assert!((f(&p["p_holm"]) - 3.0 / 1000.0).abs() < 1e-15, "{p}");
    }
    // A task's score is the mean over its runs.
    let hi_means: Vec<f64> = (0..25).map(|t| mean(&points[&("hi".into(), t)])).collect();
    assert!((f(&system(ta, "hi")["mean"]) - mean(&hi_means)).abs() < 1e-9);

    // Noise: within-task variance of the runs over K n, and what remains of the
    // squared standard error of the mean.
    let noise = &ta["judge_noise"];
    let hi = noise["systems"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["system"] == "hi")
        .unwrap();
    let within = mean(
        &(0..25)
            .map(|t| {
                let [a, b] = points[&("hi".into(), t)];
                (a - b).powi(2) / 2.0
            })
            .collect::<Vec<_>>(),
    );
    let var_judge = within / (2.0 * 25.0);
    let m = mean(&hi_means);
    let var_mean = hi_means.iter().map(|x| (x - m).powi(2)).sum::<f64>() / 24.0 / 25.0;
    assert!((f(&hi["var_judge"]) - var_judge).abs() < 1e-9, "{hi}");
    assert!(
        (f(&hi["var_task"]) - (var_mean - var_judge)).abs() < 1e-9,
        "{hi}"
    );
    assert_eq!(f(&hi["runs"]), 2.0);
    let sentence = noise["interpretation"].as_str().unwrap();
    assert!(
        sentence.starts_with("Judge sampling accounts for"),
        "{sentence}"
    );

    // The sentence in the text formats, the share in the CSV.
    let out = dir.path().to_str().unwrap();
    let (_, table, _) = tvir(&["summarize", out, "--bootstrap", "500"]);
    assert!(table.contains("Judge noise against task choice"), "{table}");
    assert!(table.contains("TA: Judge sampling accounts for"), "{table}");
    let (_, md, _) = tvir(&["summarize", out, "--format", "md", "--bootstrap", "500"]);
    assert!(
        md.contains("- Overall: Judge sampling accounts for"),
        "{md}"
    );
    let (_, html, _) = tvir(&["summarize", out, "--format", "html", "--bootstrap", "500"]);
    let html = common::cli::summary_pages(&html);
    assert!(html.contains("<p class=\"noise\">Judge sampling"));
}

#[test]
fn text_csv_and_html_carry_intervals_groups_and_the_matrix() {
    let dir = tempfile::tempdir().unwrap();
    closed_tree(dir.path());
    let out = dir.path().to_str().unwrap();
    let json = summarize_json(dir.path(), &["--bootstrap", "3000"]);
    let overall = &json["judges"][0]["significance"]["overall"];

    // Markdown leaderboard: the interval and the group beside Overall.
    let (code, md, _) = tvir(&["summarize", out, "--format", "md", "--bootstrap", "3000"]);
    assert_eq!(code, 0);
    let board = md
        .lines()
        .skip_while(|l| !l.starts_with("### Leaderboard"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            l.trim_matches('|')
                .split(" | ")
                .map(str::trim)
                .collect::<Vec<_>>()
        })
        .collect::<Vec<_>>();
    let header = &board[0];
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let row = |system: &str| board.iter().find(|r| r[1] == system).unwrap();
    for (name, group) in [("alpha", "1"), ("beta", "1"), ("gamma", "2")] {
        assert_eq!(row(name)[col("Group")], group, "{md}");
        let s = system(overall, name);
        let want = format!("[{:.2}, {:.2}]", f(&s["ci"][0]), f(&s["ci"][1]));
        assert_eq!(row(name)[col("Overall 95% CI")], want);
    }
    assert!(md.contains("### Intervals and rank groups"));
    assert!(md.contains("| Level | System | Group | Tasks | Mean | 95% CI |"));
    assert!(md.contains("| TA | alpha vs gamma |"));
    assert!(md.contains("10000 random sign patterns"), "{md}");

    // Terminal: the same tables.
    let (_, table, _) = tvir(&["summarize", out, "--bootstrap", "3000"]);
    assert!(table.contains("Overall 95% CI  Group"), "{table}");
    // Pairs of Overall, TA and VA in the text formats; every level's intervals.
    assert!(table.contains("Overall  alpha vs gamma"), "{table}");
    let delta = table
        .lines()
        .find(|l| l.starts_with("CS") && l.contains("delta"))
        .unwrap_or_else(|| panic!("{table}"));
    let cells: Vec<&str> = delta.split_whitespace().collect();
    assert_eq!(cells[..5], ["CS", "delta", "1", "3", "90.00"], "{delta}");

    // CSV: per level interval and group on the leaderboard rows, equal to the JSON.
    let (_, csv_text, _) = tvir(&["summarize", out, "--format", "csv", "--bootstrap", "3000"]);
    let mut rdr = csv::Reader::from_reader(csv_text.as_bytes());
    let headers = rdr.headers().unwrap().clone();
    let at = |name: &str| {
        headers
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no column {name}: {headers:?}"))
    };
    assert!(
        headers.iter().all(|h| !h.ends_with("_judge_share")),
        "one run"
    );
    let cs = &json["judges"][0]["significance"]["citation_support"];
    for record in rdr.records() {
        let r = record.unwrap();
        let s = &r[3];
        if s == "delta" {
            // No Overall score: empty cells there, its citation-support interval set.
            assert_eq!(&r[at("overall_ci_lo")], "");
            let d = system(cs, "delta");
            assert_eq!(
                r[at("citation_support_ci_hi")].parse::<f64>().unwrap(),
                f(&d["ci"][1])
            );
            continue;
        }
        let sys = system(overall, s);
        assert_eq!(
            r[at("overall_ci_lo")].parse::<f64>().unwrap(),
            f(&sys["ci"][0])
        );
        assert_eq!(
            r[at("overall_ci_hi")].parse::<f64>().unwrap(),
            f(&sys["ci"][1])
        );
        assert_eq!(&r[at("overall_group")], sys["group"].to_string());
        assert_eq!(&r[at("ta_group")], if s == "gamma" { "2" } else { "1" });
    }

    // HTML: one interval plot and one matrix per level, cells coloured by the test,
    // untestable pairs with their reason, no script.
    let (_, html, _) = tvir(&["summarize", out, "--format", "html", "--bootstrap", "3000"]);
    let html = common::cli::summary_pages(&html);
    for level in ["Overall", "TA", "VA", "CS"] {
        assert!(
            html.contains(&format!("aria-label=\"{level} means with intervals\"")),
            "{level}"
        );
    }
    assert_eq!(html.matches("<table class=\"pairs\">").count(), 4);
    // alpha-gamma and beta-gamma differ at Overall, TA and VA, each shown twice.
    assert_eq!(html.matches("<td class=\"significant\"").count(), 12);
    assert_eq!(html.matches("<td class=\"untestable\"").count(), 6);
    assert!(
        html.contains("<li>delta vs alpha: not testable: only 3 shared tasks"),
        "{html}"
    );
    // The mean of each system is a point with its interval bar.
    assert_eq!(html.matches(" r=\"4.5\"").count(), 3 * 3 + 4);
    // No script but the folder's own, which shows report pages' packed evidence.
    assert_eq!(
        html.matches("<script").count(),
        html.matches("<script src=\"../../../evidence.js\"></script>")
            .count()
    );
}

/// The bar charts of a one-system summary: Overall, TA, VA and Citation Support.
const BAR_CHARTS: usize = 4;

/// Every interval `[a, b]` of `text` with `a == b`.
fn zero_width_intervals(text: &str) -> Vec<String> {
    let interval =
        regex::Regex::new(r"\[(-?[0-9]+(?:\.[0-9]+)?), (-?[0-9]+(?:\.[0-9]+)?)\]").unwrap();
    interval
        .captures_iter(text)
        .filter(|c| c[1] == c[2])
        .map(|c| c[0].to_string())
        .collect()
}

/// Small runs: one system's per-metric charts each draw its
/// bar; an interval over a single task reads `n/a (1 task)`, never `[x, x]`; and
/// when no pair can be tested at any level, the page says so once.
#[test]
fn small_runs_show_bars_no_zero_width_intervals_and_untestable_once() {
    let dir = tempfile::tempdir().unwrap();
    let one = dir.path().join("one");
    write(&one, "solo", "t1", "jm", Some(0.75), Some(0.5), 0.6);
    let out = one.to_str().unwrap();
    let (code, index, err) = tvir(&["summarize", out, "--format", "html", "--bootstrap", "200"]);
    assert_eq!(code, 0, "{err}");
    let html = std::fs::read_to_string(index.trim()).unwrap();
    // Charts: every bar chart shows the one system's bar, one chart per level with
    // a mean (Overall, TA, VA and the one metric, CS).
    let bar = "fill=\"#3465A4\"";
    let bar_charts: Vec<&str> = html
        .split("<figure class=\"chart\">")
        .skip(1)
        .filter(|c| c.contains(bar))
        .collect();
    for chart in &bar_charts {
        let chart = &chart[..chart.find("</figure>").unwrap_or(chart.len())];
        assert_eq!(
            chart.matches(bar).count(),
            1,
            "one system, one bar: {chart}"
        );
    }
    assert_eq!(
        bar_charts.len(),
        BAR_CHARTS,
        "{} bar charts",
        bar_charts.len()
    );
    // Intervals: none of zero width at any level, and the one-task `n/a` at each
    // level with a mean, in the page and in the table.
    let (_, table, _) = tvir(&["summarize", out, "--bootstrap", "200"]);
    for (what, text) in [("html", &html), ("table", &table)] {
        let zero_width = zero_width_intervals(text);
        assert!(zero_width.is_empty(), "{what}: {zero_width:?}");
        assert!(
            text.matches("n/a (1 task)").count() >= 3,
            "{what}: Overall, TA and VA each say n/a:\n{text}"
        );
    }

    // Two systems sharing one task: no pair testable anywhere, said once.
    let two = dir.path().join("two");
    write(&two, "a", "t1", "jm", Some(0.75), Some(0.5), 0.6);
    write(&two, "b", "t1", "jm", Some(0.55), Some(0.4), 0.3);
    let (code, index, err) = tvir(&[
        "summarize",
        two.to_str().unwrap(),
        "--format",
        "html",
        "--bootstrap",
        "200",
    ]);
    assert_eq!(code, 0, "{err}");
    let html = std::fs::read_to_string(index.trim()).unwrap();
    assert_eq!(
        html.matches("<p class=\"untestable\">").count(),
        1,
        "{html}"
    );
    assert!(
        html.contains("<p class=\"untestable\">Every level: no pair"),
        "{html}"
    );
    assert_eq!(html.matches("<table class=\"pairs\">").count(), 0);
    assert_eq!(html.matches("<ul class=\"untestable\">").count(), 0);
}
