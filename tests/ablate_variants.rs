//! `tvir ablate` on eval trees written programmatically: a variant that changes
//! nothing reproduces the base exactly; each override kind against hand-computed
//! numbers; rank movement, PAR and OSC against the base on a small tree; the CLI.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};
use tvir_analysis::ablate::{self, AblateOptions, Configuration, Variant};
use tvir_analysis::aggregate::load::{load_eval_tree, LoadedRecord};
use tvir_engine::record::{ReportRecord, UnitRecord, UnitStatus};
use tvir_engine::{rescore, ScoreOptions};
use tvir_rubric::{AnswerSpec, RubricSet};

const EPS: f64 = 1e-12;

/// One report's judge answers, as few as a case needs; the rest is held constant.
#[derive(Clone)]
struct Spec {
    /// CS verdict per fact.
    cs: Vec<&'static str>,
    /// IA item scores; None = the item's unit failed.
    ia: Vec<Option<f64>>,
    /// Every WQ dimension (1-10).
    wq: i64,
    /// Every ADB dimension (1-10).
    adb: i64,
    flc_issues: i64,
    /// Images: (R, A, S, C, phash, stored duplicate_of).
    images: Vec<([f64; 4], &'static str, Option<usize>)>,
    /// Charts: (every CQ item 0/1, CSC issue count).
    charts: Vec<(i64, i64)>,
    /// Every MC, FCQ, FCI dimension (1-10).
    visual: i64,
}

impl Default for Spec {
    fn default() -> Self {
        Spec {
            cs: vec!["supported"],
            ia: vec![Some(1.0)],
            wq: 8,
            adb: 7,
            flc_issues: 0,
            images: vec![([1.0, 1.0, 0.5, 0.5], "0000000000000000", None)],
            charts: Vec::new(),
            visual: 6,
        }
    }
}

fn unit(metric: &str, id: String, answer: Option<Value>, detail: Value) -> UnitRecord {
    UnitRecord {
        metric: metric.into(),
        unit: id,
        status: UnitStatus::Scored,
        reason: None,
        score: None,
        answer,
        justification: Some("because".into()),
        detail,
    }
}

fn dims(rubrics: &RubricSet, metric: &str, v: i64) -> Value {
    let AnswerSpec::Dimensions { dimensions, .. } = &rubrics.get(metric).unwrap().answer else {
        panic!("{metric} is not a dimensions rubric")
    };
    let scores: serde_json::Map<String, Value> = dimensions
        .iter()
        .map(|d| (d.key.clone(), json!(v)))
        .collect();
    json!({ "scores": scores })
}

/// A record as `eval` writes it: units with their answers, scores from `rescore`
/// with the default options.
fn record(system: &str, task: &str, s: &Spec) -> ReportRecord {
    let rubrics = RubricSet::builtin().unwrap();
    let mut units = Vec::new();
    for (i, v) in s.cs.iter().enumerate() {
        units.push(unit(
            "citation_support",
            format!("fact:{}", i + 1),
            Some(json!({ "verdict": v })),
            json!({ "fact": format!("fact {i}") }),
        ));
    }
    for (i, v) in s.ia.iter().enumerate() {
        let mut u = unit(
            "instruction_alignment",
            format!("item:{}", i + 1),
            v.map(|v| json!({ "score": v })),
            json!({ "section": "S", "item": format!("item {i}") }),
        );
        if v.is_none() {
            u.status = UnitStatus::Failed;
            u.reason = Some("judge answer invalid after retries".into());
        }
        units.push(u);
    }
    for (metric, v) in [
        ("writing_quality", s.wq),
        ("analytical_depth_breadth", s.adb),
        ("multimodal_composition", s.visual),
    ] {
        units.push(unit(
            metric,
            "report".into(),
            Some(dims(&rubrics, metric, v)),
            json!({}),
        ));
    }
    units.push(unit(
        "factual_logical_consistency",
        "report".into(),
        Some(json!({ "total_issues": s.flc_issues, "issues": [] })),
        json!({}),
    ));
    for (i, (c, hash, dup)) in s.images.iter().enumerate() {
        units.push(unit(
            "image_quality",
            format!("image:{}", i + 1),
            None,
            json!({
                "path": format!("images/{i}.png"), "width": 800, "height": 600,
                "resolution": c[0], "aspect": c[1], "sharpness": c[2], "contrast": c[3],
                "quality": 0.0, "phash": hash, "duplicate_of": dup, "error": null
            }),
        ));
        for metric in ["figure_caption_quality", "figure_context_integration"] {
            units.push(unit(
                metric,
                format!("figure:{}", i + 1),
                Some(dims(&rubrics, metric, s.visual)),
                json!({ "content": format!("images/{i}.png") }),
            ));
        }
    }
    for (i, (cq, csc)) in s.charts.iter().enumerate() {
        let id = format!("figure:{}", s.images.len() + i + 1);
        let detail = json!({ "content": format!("charts/{i}.png") });
        units.push(unit(
            "chart_quality",
            id.clone(),
            Some(dims(&rubrics, "chart_quality", *cq)),
            detail.clone(),
        ));
        units.push(unit(
            "chart_source_consistency",
            id.clone(),
            Some(json!({ "total_issues": csc, "issues": [] })),
            detail.clone(),
        ));
        for metric in ["figure_caption_quality", "figure_context_integration"] {
            units.push(unit(
                metric,
                id.clone(),
                Some(dims(&rubrics, metric, s.visual)),
                detail.clone(),
            ));
        }
    }
    let n = s.images.len();
    let rec = ReportRecord {
        system: system.into(),
        task_id: task.into(),
        judge_model: "judge".into(),
        run: 1,
        language: None,
        complexity: None,
        domain: None,
        metrics: Default::default(),
        ta: None,
        va: None,
        overall: None,
        effective_citations: None,
        structural_error_counts: Default::default(),
        structural_errors: Default::default(),
        units,
        usage: Default::default(),
        n_images: n,
        n_charts: s.charts.len(),
        n_figures: n + s.charts.len(),
        extraction: None,
        render: None,
        thumbnails: Vec::new(),
        protocol: None,
        sources: Vec::new(),
        error: None,
    };
    rescore(&rec, &rubrics, &ScoreOptions::default())
}

fn write_tree(root: &Path, records: &[ReportRecord]) {
    for r in records {
        let dir = root.join(&r.system).join(&r.task_id).join(&r.judge_model);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("report.json"),
            serde_json::to_string_pretty(r).unwrap(),
        )
        .unwrap();
    }
}

fn base() -> Configuration {
    Configuration::base(RubricSet::builtin().unwrap(), ScoreOptions::default())
}

fn variant(text: &str) -> Configuration {
    Variant::from_toml(text, "test.toml")
        .unwrap()
        .apply(&base(), "test.toml")
        .unwrap()
}

fn rescored(rec: &ReportRecord, cfg: &Configuration) -> ReportRecord {
    ablate::rescore_record(rec, cfg, "test").unwrap()
}

fn score(rec: &ReportRecord, metric: &str) -> f64 {
    rec.metrics[metric].score.unwrap()
}

fn assert_close(got: f64, want: f64, what: &str) {
    assert!((got - want).abs() < EPS, "{what}: got {got}, want {want}");
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A varied tree: 3 systems x 3 tasks with partial credit, failed units, images,
/// duplicates.
fn varied_records() -> Vec<ReportRecord> {
    let mut out = Vec::new();
    for (si, system) in ["sys-a", "sys-b", "sys-c"].iter().enumerate() {
        for (ti, task) in ["t1", "t2", "t3"].iter().enumerate() {
            let k = (si * 3 + ti) as i64;
            let spec = Spec {
                cs: ["supported", "partially_supported", "unsupported", "unknown"]
                    .iter()
                    .cycle()
                    .skip(si + ti)
                    .take(2 + ti)
                    .copied()
                    .collect(),
                ia: vec![
                    Some(1.0),
                    Some(0.5),
                    if k % 2 == 0 { None } else { Some(0.0) },
                ],
                wq: 3 + k % 7,
                adb: 2 + (k * 3) % 8,
                flc_issues: k * 2,
                images: vec![
                    (
                        [1.0, 1.0, 0.3 + 0.05 * k as f64, 0.4],
                        "0000000000000000",
                        None,
                    ),
                    ([0.5, 0.75, 0.9, 0.2], "000000000000003f", Some(0)),
                ],
                charts: vec![(k % 2, k % 4)],
                visual: 2 + k % 8,
            };
            out.push(record(system, task, &spec));
        }
    }
    out
}

#[test]
fn a_variant_that_changes_nothing_reproduces_the_base_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let records = varied_records();
    write_tree(dir.path(), &records);
    let tree = load_eval_tree(dir.path()).unwrap();
    let file = repo().join("examples/variants/no-change.toml");
    let same = Variant::load(&file)
        .unwrap()
        .apply(&base(), &file.display().to_string())
        .unwrap();
    // Per report: every metric, TA, VA, Overall, AEC equal to what eval stored.
    for r in &tree.records {
        let again = ablate::rescore_record(&r.record, &same, "x").unwrap();
        assert_eq!(again.metrics, r.record.metrics, "{}", r.path.display());
        assert_eq!(again.ta, r.record.ta);
        assert_eq!(again.va, r.record.va);
        assert_eq!(again.overall, r.record.overall);
        assert_eq!(again.effective_citations, r.record.effective_citations);
        assert_eq!(again.units, r.record.units);
    }
    let rep = ablate::ablate(
        "t",
        &tree.records,
        &[],
        &base(),
        &[same],
        &AblateOptions::default(),
    )
    .unwrap();
    assert!(rep.notes.is_empty(), "{:?}", rep.notes);
    let j = &rep.judges[0];
    let v = &j.variants[0];
    // Per system: the variant's leaderboard equals the base's, and the base equals
    // the leaderboard of the stored records.
    let stored: Vec<&LoadedRecord> = tree.records.iter().collect();
    assert_eq!(j.base, ablate::leaderboard(&stored));
    assert_eq!(v.leaderboard, j.base);
    assert_eq!(v.reports_changed, 0);
    assert_eq!(v.units_failed, 0);
    assert!(v.movement.iter().all(|m| m.shift == 0));
    assert!(v
        .movement
        .iter()
        .all(|m| m.delta_overall == Some(0.0) && m.delta_ta == Some(0.0)));
    let overall = &v.agreement.iter().find(|l| l.level == "overall").unwrap();
    assert_eq!(overall.agreement.par, Some(1.0));
    assert_eq!(overall.agreement.osc, Some(1.0));
    assert_eq!(overall.agreement.cells, 9);
}

#[test]
fn cs_partial_credit_zero() {
    let rec = record(
        "s",
        "t",
        &Spec {
            cs: vec![
                "supported",
                "partially_supported",
                "partially_supported",
                "unsupported",
            ],
            ..Spec::default()
        },
    );
    assert_close(score(&rec, "citation_support"), 0.5, "base CS");
    assert_eq!(rec.effective_citations, Some(2.0));
    let v = rescored(
        &rec,
        &variant("name = \"v\"\n[verdicts.citation_support]\npartially_supported = 0.0"),
    );
    assert_close(score(&v, "citation_support"), 0.25, "CS");
    assert_eq!(v.effective_citations, Some(1.0));
    // TA = mean(CS, IA 1, WQ 0.8, ADB 0.7, FLC 1).
    assert_close(v.ta.unwrap(), (0.25 + 1.0 + 0.8 + 0.7 + 1.0) / 5.0, "TA");
    assert_close(rec.ta.unwrap() - v.ta.unwrap(), 0.25 / 5.0, "TA drop");
    assert_eq!(v.va, rec.va);
}

#[test]
fn flc_table_change() {
    let rec = record(
        "s",
        "t",
        &Spec {
            flc_issues: 3,
            ..Spec::default()
        },
    );
    // Table F: 3-4 issues -> 8.
    assert_close(score(&rec, "factual_logical_consistency"), 0.8, "base FLC");
    let linear = repo().join("examples/variants/flc-linear-table.toml");
    let cfg = Variant::load(&linear).unwrap().apply(&base(), "f").unwrap();
    let v = rescored(&rec, &cfg);
    assert_close(score(&v, "factual_logical_consistency"), 0.7, "FLC");
    let many = record(
        "s",
        "t",
        &Spec {
            flc_issues: 40,
            ..Spec::default()
        },
    );
    assert_close(score(&many, "factual_logical_consistency"), 0.1, "base 18+");
    assert_close(
        score(&rescored(&many, &cfg), "factual_logical_consistency"),
        0.0,
        "10+",
    );
    // A scale override divides by the new scale.
    let halved = variant(
        "name = \"v\"\n[tables.factual_logical_consistency]\nscale = 20.0\nbands = [{ min = 0, max = 3, score = 10.0 }, { min = 4, score = 0.0 }]",
    );
    assert_close(
        score(&rescored(&rec, &halved), "factual_logical_consistency"),
        0.5,
        "scale 20",
    );
}

#[test]
fn iq_weights() {
    let rec = record(
        "s",
        "t",
        &Spec {
            images: vec![([1.0, 1.0, 0.5, 0.2], "0000000000000000", None)],
            ..Spec::default()
        },
    );
    // Q = 0.25 + 0.15 + 0.35 x 0.5 + 0.25 x 0.2
    assert_close(score(&rec, "image_quality"), 0.625, "base IQ");
    let equal = Variant::load(&repo().join("examples/variants/iq-equal-weights.toml"))
        .unwrap()
        .apply(&base(), "e")
        .unwrap();
    let v = rescored(&rec, &equal);
    assert_close(score(&v, "image_quality"), 0.675, "IQ");
    // One image, no chart: FQ = IQ.
    assert_close(score(&v, "figure_quality"), 0.675, "FQ");
    let partial = variant("name = \"v\"\n[iq_weights]\nsharpness = 0.1");
    assert_close(
        score(&rescored(&rec, &partial), "image_quality"),
        0.25 + 0.15 + 0.05 + 0.05,
        "partial weights",
    );
}

fn duplicate_pair() -> ReportRecord {
    // Second image 6 bits from the first: a duplicate at the paper's threshold 10.
    record(
        "s",
        "t",
        &Spec {
            images: vec![
                ([1.0, 1.0, 1.0, 1.0], "0000000000000000", None),
                ([1.0, 1.0, 0.0, 0.0], "000000000000003f", Some(0)),
            ],
            ..Spec::default()
        },
    )
}

#[test]
fn duplicate_penalty_off_and_reparameterised() {
    let rec = duplicate_pair();
    // mean Q = (1 + 0.4) / 2 = 0.7; p_dup = min(0.5, 0.8 x 1/2) = 0.4.
    assert_close(score(&rec, "image_quality"), 0.7 * 0.6, "base IQ");
    let off = Variant::load(&repo().join("examples/variants/no-duplicate-penalty.toml"))
        .unwrap()
        .apply(&base(), "o")
        .unwrap();
    assert_close(score(&rescored(&rec, &off), "image_quality"), 0.7, "off");
    let capped = variant("name = \"v\"\n[duplicates]\nfactor = 2.0\ncap = 0.3");
    assert_close(
        score(&rescored(&rec, &capped), "image_quality"),
        0.7 * 0.7,
        "cap",
    );
    let mild = variant("name = \"v\"\n[duplicates]\nfactor = 0.5");
    assert_close(
        score(&rescored(&rec, &mild), "image_quality"),
        0.7 * 0.75,
        "factor",
    );
}

#[test]
fn duplicate_threshold_regroups_from_stored_hashes() {
    let rec = duplicate_pair();
    let strict = variant("name = \"v\"\n[duplicates]\nthreshold = 5");
    let v = rescored(&rec, &strict);
    assert_close(
        score(&v, "image_quality"),
        0.7,
        "6 bits apart: no duplicate",
    );
    let img2 = v.units.iter().find(|u| u.unit == "image:2").unwrap();
    assert!(img2.detail["duplicate_of"].is_null());
    let at6 = variant("name = \"v\"\n[duplicates]\nthreshold = 6");
    assert_close(
        score(&rescored(&rec, &at6), "image_quality"),
        0.42,
        "6 bits: duplicate",
    );
    // A stored record whose images were grouped at 5 regroups at the paper's 10.
    let mut ungrouped = rec.clone();
    for u in &mut ungrouped.units {
        u.detail["duplicate_of"] = Value::Null;
    }
    let paper = variant("name = \"v\"\n[duplicates]\nthreshold = 10");
    assert_close(
        score(&rescored(&ungrouped, &paper), "image_quality"),
        0.42,
        "regrouped",
    );
    // Without stored hashes regrouping is refused, naming the report and unit.
    let mut no_hash = rec.clone();
    for u in &mut no_hash.units {
        if let Value::Object(m) = &mut u.detail {
            m.remove("phash");
        }
    }
    let err = ablate::rescore_record(&no_hash, &strict, "OUT/s/t/judge/report.json")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("OUT/s/t/judge/report.json") && err.contains("image:1"),
        "{err}"
    );
}

#[test]
fn ta_without_flc_and_va_with_iq_cq() {
    let rec = record(
        "s",
        "t",
        &Spec {
            flc_issues: 20,
            ..Spec::default()
        },
    );
    let cfg = Variant::load(&repo().join("examples/variants/ta-without-flc.toml"))
        .unwrap()
        .apply(&base(), "t")
        .unwrap();
    let v = rescored(&rec, &cfg);
    assert_close(
        rec.ta.unwrap(),
        (1.0 + 1.0 + 0.8 + 0.7 + 0.1) / 5.0,
        "base TA",
    );
    assert_close(v.ta.unwrap(), (1.0 + 1.0 + 0.8 + 0.7) / 4.0, "TA");
    assert_close(
        v.overall.unwrap(),
        (v.ta.unwrap() + v.va.unwrap()) / 2.0,
        "Overall",
    );
    // VA with IQ and CQ apart: MC 0.6, IQ 0.7, CQ 0 (no chart), FCQ 0.6, FCI 0.6,
    // CSC 0 (no chart).
    let cfg = Variant::load(&repo().join("examples/variants/va-iq-cq-separate.toml"))
        .unwrap()
        .apply(&base(), "v")
        .unwrap();
    let v = rescored(&rec, &cfg);
    assert_close(score(&rec, "image_quality"), 0.7, "IQ");
    assert_close(
        v.va.unwrap(),
        (0.6 + 0.7 + 0.0 + 0.6 + 0.6 + 0.0) / 6.0,
        "VA",
    );
    assert_close(
        rec.va.unwrap(),
        (0.6 + 0.7 + 0.6 + 0.6 + 0.0) / 5.0,
        "base VA",
    );
}

#[test]
fn failed_units_as_zero() {
    let rec = record(
        "s",
        "t",
        &Spec {
            ia: vec![Some(1.0), Some(0.5), None],
            ..Spec::default()
        },
    );
    assert_close(score(&rec, "instruction_alignment"), 0.75, "base IA");
    let cfg = Variant::load(&repo().join("examples/variants/failed-as-zero.toml"))
        .unwrap()
        .apply(&base(), "f")
        .unwrap();
    let v = rescored(&rec, &cfg);
    assert_close(score(&v, "instruction_alignment"), 0.5, "IA");
    assert_eq!(v.metrics["instruction_alignment"].failed_item_count, 1);
    // Base run with --failed-as-zero, variant switching it off.
    let zero_base = Configuration::base(
        RubricSet::builtin().unwrap(),
        ScoreOptions {
            failed_as_zero: true,
            ..ScoreOptions::default()
        },
    );
    let back = Variant::from_toml("name = \"v\"\nfailed_as_zero = false", "v")
        .unwrap()
        .apply(&zero_base, "v")
        .unwrap();
    assert_close(
        score(&rescored(&rec, &back), "instruction_alignment"),
        0.75,
        "excluded",
    );
}

/// 3 systems x 2 tasks differing only in CS verdicts (see the hand computation in
/// `ranking_moves_with_hand_computed_par_and_osc`).
fn ranking_records() -> Vec<ReportRecord> {
    let cells: [(&str, &str, Vec<&'static str>); 6] = [
        (
            "A",
            "t1",
            vec!["partially_supported", "partially_supported"],
        ),
        ("A", "t2", vec!["supported", "partially_supported"]),
        ("B", "t1", vec!["supported", "unsupported"]),
        ("B", "t2", vec!["supported", "supported", "unsupported"]),
        (
            "C",
            "t1",
            vec![
                "supported",
                "partially_supported",
                "unsupported",
                "unsupported",
            ],
        ),
        ("C", "t2", vec!["supported", "supported"]),
    ];
    cells
        .into_iter()
        .map(|(s, t, cs)| {
            record(
                s,
                t,
                &Spec {
                    cs,
                    ..Spec::default()
                },
            )
        })
        .collect()
}

fn pearson(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let cov: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let vx: f64 = x.iter().map(|a| (a - mx).powi(2)).sum();
    let vy: f64 = y.iter().map(|b| (b - my).powi(2)).sum();
    cov / (vx * vy).sqrt()
}

#[test]
fn ranking_moves_with_hand_computed_par_and_osc() {
    // CS per cell, base -> no partial credit:
    //   t1: A 0.5 -> 0, B 0.5 -> 0.5, C 0.375 -> 0.25
    //   t2: A 0.75 -> 0.5, B 2/3 -> 2/3, C 1 -> 1
    // Pairs: t1 AB tie vs B>A (no), AC A>C vs C>A (no), BC agree;
    //        t2 AB A>B vs B>A (no), AC agree, BC agree. PAR = 3/6.
    // System means: base A 0.625, B 7/12, C 0.6875; variant A 0.25, B 7/12, C 0.625.
    // Ranks base (B 1, A 2, C 3), variant (A 1, B 2, C 3): Spearman 0.5.
    // Every other metric is equal across systems, so TA and Overall order the same.
    let dir = tempfile::tempdir().unwrap();
    write_tree(dir.path(), &ranking_records());
    let tree = load_eval_tree(dir.path()).unwrap();
    let cfg = Variant::load(&repo().join("examples/variants/cs-no-partial-credit.toml"))
        .unwrap()
        .apply(&base(), "c")
        .unwrap();
    let rep = ablate::ablate(
        "t",
        &tree.records,
        &[],
        &base(),
        &[cfg],
        &AblateOptions {
            bootstrap: 200,
            seed: 7,
        },
    )
    .unwrap();
    let j = &rep.judges[0];
    let names = |b: &[tvir_analysis::aggregate::SystemStats]| -> Vec<String> {
        b.iter().map(|s| s.system.clone()).collect()
    };
    assert_eq!(names(&j.base), ["C", "A", "B"]);
    let v = &j.variants[0];
    assert_eq!(names(&v.leaderboard), ["C", "B", "A"]);
    let shifts: Vec<(&str, usize, usize, i64)> = v
        .movement
        .iter()
        .map(|m| (m.system.as_str(), m.base_rank, m.rank, m.shift))
        .collect();
    assert_eq!(shifts, [("C", 1, 1, 0), ("B", 3, 2, 1), ("A", 2, 3, -1)]);
    let a = v.movement.iter().find(|m| m.system == "A").unwrap();
    // A's CS mean drops by 0.375, its TA by a fifth of that, Overall by half of TA's.
    assert_close(a.delta_ta.unwrap(), -0.075, "A dTA");
    assert_close(a.delta_overall.unwrap(), -0.0375, "A dOverall");
    assert_eq!(v.reports_changed, 3);
    let level = |name: &str| {
        &v.agreement
            .iter()
            .find(|l| l.level == name)
            .unwrap_or_else(|| panic!("level {name}"))
            .agreement
    };
    for name in ["citation_support", "ta", "overall"] {
        let l = level(name);
        assert_eq!((l.agreeing_pairs, l.pairs), (3, 6), "{name}");
        assert_close(l.par.unwrap(), 0.5, name);
        assert_close(l.osc.unwrap(), 0.5, name);
        let ci = l.osc_ci.unwrap();
        assert!(ci[0] <= 0.5 && 0.5 <= ci[1], "{name}: {ci:?}");
    }
    let cs = level("citation_support");
    let want = pearson(&[0.625, 7.0 / 12.0, 0.6875], &[0.25, 7.0 / 12.0, 0.625]);
    assert_close(cs.opc.unwrap(), want, "OPC");
    // VA does not move: every pair ties on both sides (PAR 1); the means are
    // constant, so OSC is undefined with a reason, never 0.
    let va = level("va");
    assert_eq!(va.par, Some(1.0));
    assert_eq!(va.osc, None);
    assert!(va.notes.iter().any(|n| n.contains("osc")), "{:?}", va.notes);
    // The writing metrics did not move at all.
    assert_eq!(level("writing_quality").par, Some(1.0));
}

#[test]
fn duplicate_variant_names_are_refused() {
    let a = variant("name = \"same\"");
    let err =
        ablate::ablate("t", &[], &[], &base(), &[a.clone(), a], &Default::default()).unwrap_err();
    assert!(err.to_string().contains("same"), "{err}");
}

fn tvir(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tvir"))
        .args(args)
        .output()
        .expect("run tvir")
}

#[test]
fn cli_prints_every_variant_and_fails_cleanly_on_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    write_tree(dir.path(), &varied_records());
    let out = dir.path().to_str().unwrap();
    let mut variants: Vec<PathBuf> = std::fs::read_dir(repo().join("examples/variants"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    variants.sort();
    assert!(variants.len() >= 8);
    let mut args = vec!["ablate", out, "--format", "json", "--variant"];
    let paths: Vec<String> = variants.iter().map(|p| p.display().to_string()).collect();
    args.extend(paths.iter().map(String::as_str));
    let res = tvir(&args);
    assert!(
        res.status.success(),
        "{}",
        String::from_utf8_lossy(&res.stderr)
    );
    let v: Value = serde_json::from_slice(&res.stdout).unwrap();
    let judge = &v["judges"][0];
    assert_eq!(judge["reports"], 9);
    let results = judge["variants"].as_array().unwrap();
    assert_eq!(results.len(), variants.len());
    for r in results {
        let changed = r["reports_changed"].as_u64().unwrap();
        if r["name"] == "no-change" {
            assert_eq!(changed, 0);
        } else {
            // Every shipped variant changes some score of this varied tree.
            assert!(changed > 0, "{} changed nothing", r["name"]);
        }
    }

    // Table and Markdown name every variant.
    let mut args = vec!["ablate", out, "--variant"];
    args.extend(paths.iter().map(String::as_str));
    let table = tvir(&args);
    assert!(table.status.success());
    let text = String::from_utf8_lossy(&table.stdout);
    for r in results {
        assert!(text.contains(r["name"].as_str().unwrap()), "{text}");
    }
    args.extend(["--format", "md"]);
    let md = String::from_utf8_lossy(&tvir(&args).stdout).into_owned();
    assert!(md.contains("### Base leaderboard"), "{md}");

    // A broken variant file: exit 2 and its name in the message.
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "name = \"x\"\n[verdicts.citation_support]\nmaybe = 1.0\n",
    )
    .unwrap();
    let res = tvir(&["ablate", out, "--variant", bad.to_str().unwrap()]);
    assert_eq!(res.status.code(), Some(2));
    let err = String::from_utf8_lossy(&res.stderr);
    assert!(err.contains("bad.toml") && err.contains("maybe"), "{err}");
    // Not an eval folder: exit 2.
    let empty = tempfile::tempdir().unwrap();
    let res = tvir(&[
        "ablate",
        empty.path().to_str().unwrap(),
        "--variant",
        &paths[0],
    ]);
    assert_eq!(res.status.code(), Some(2));
    // An unreadable report.json: still compared, listed, exit 1.
    let broken = dir.path().join("sys-a/t9/judge");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("report.json"), "{").unwrap();
    let res = tvir(&["ablate", out, "--variant", &paths[0]]);
    assert_eq!(res.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&res.stdout).contains("t9"));
}

#[test]
fn runs_are_averaged_and_judges_kept_apart() {
    // Two runs of judge "j1" (CS 1 then partial 0.5) and one of judge "j2".
    let mut records = Vec::new();
    for (folder, verdict) in [
        ("j1-run1", "supported"),
        ("j1-run2", "partially_supported"),
        ("j2", "partially_supported"),
    ] {
        for system in ["A", "B"] {
            let mut r = record(
                system,
                "t1",
                &Spec {
                    cs: vec![verdict],
                    ..Spec::default()
                },
            );
            r.judge_model = folder.into();
            records.push(r);
        }
    }
    let dir = tempfile::tempdir().unwrap();
    write_tree(dir.path(), &records);
    let tree = load_eval_tree(dir.path()).unwrap();
    let cfg = variant("name = \"v\"\n[verdicts.citation_support]\npartially_supported = 0.0");
    let rep = ablate::ablate(
        "t",
        &tree.records,
        &[],
        &base(),
        &[cfg],
        &Default::default(),
    )
    .unwrap();
    let models: Vec<&str> = rep.judges.iter().map(|j| j.judge_model.as_str()).collect();
    assert_eq!(models, ["j1", "j2"]);
    let j1 = &rep.judges[0];
    assert_eq!(j1.runs, [1, 2]);
    assert_eq!(j1.reports, 4);
    let a = &j1.variants[0].leaderboard[0];
    // CS per run: base (1, 0.5) -> variant (1, 0): the mean over runs and its spread.
    let cs = &a.metrics["citation_support"];
    assert_close(cs.mean.unwrap(), 0.5, "CS mean over runs");
    assert_close(cs.std.unwrap(), std::f64::consts::FRAC_1_SQRT_2, "CS std");
    let base_cs = &j1.base[0].metrics["citation_support"];
    assert_close(base_cs.mean.unwrap(), 0.75, "base CS");
    assert_eq!(rep.judges[1].reports, 2);
    assert_eq!(rep.judges[1].variants[0].reports_changed, 2);
}
