//! `tvir agree` against a naive independent computation on tables with ties,
//! missing systems and constant columns; CSV, eval-folder and human inputs;
//! bootstrap determinism through the command line.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};

use common::cli::tvir_status as tvir;

pub(crate) type Table = BTreeMap<(String, String), f64>;

/// PAR, OPC, OSC computed the slow, obvious way.
pub(crate) fn naive(a: &Table, b: &Table) -> (Option<f64>, Option<f64>, Option<f64>) {
    let common: Vec<(&(String, String), f64, f64)> = a
        .iter()
        .filter_map(|(k, x)| b.get(k).map(|y| (k, *x, *y)))
        .collect();
    let tasks: BTreeSet<&String> = common.iter().map(|(k, _, _)| &k.1).collect();
    let (mut agree, mut pairs) = (0usize, 0usize);
    for t in &tasks {
        let cells: Vec<_> = common.iter().filter(|(k, _, _)| &k.1 == *t).collect();
        for i in 0..cells.len() {
            for j in i + 1..cells.len() {
                let sa = (cells[i].1 - cells[j].1).signum() * f64::from(cells[i].1 != cells[j].1);
                let sb = (cells[i].2 - cells[j].2).signum() * f64::from(cells[i].2 != cells[j].2);
                pairs += 1;
                if sa == sb {
                    agree += 1;
                }
            }
        }
    }
    let systems: BTreeSet<&String> = common.iter().map(|(k, _, _)| &k.0).collect();
    let mean = |sys: &String, side: usize| {
        let v: Vec<f64> = common
            .iter()
            .filter(|(k, _, _)| &k.0 == sys)
            .map(|c| if side == 0 { c.1 } else { c.2 })
            .collect();
        v.iter().sum::<f64>() / v.len() as f64
    };
    let ma: Vec<f64> = systems.iter().map(|s| mean(s, 0)).collect();
    let mb: Vec<f64> = systems.iter().map(|s| mean(s, 1)).collect();
    let pearson = |x: &[f64], y: &[f64]| -> Option<f64> {
        let n = x.len() as f64;
        if x.len() < 2 {
            return None;
        }
        let mx = x.iter().sum::<f64>() / n;
        let my = y.iter().sum::<f64>() / n;
        let sxy: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
        let sxx: f64 = x.iter().map(|a| (a - mx).powi(2)).sum();
        let syy: f64 = y.iter().map(|b| (b - my).powi(2)).sum();
        if sxx == 0.0 || syy == 0.0 {
            None
        } else {
            Some(sxy / (sxx * syy).sqrt())
        }
    };
    let rank = |v: &[f64]| -> Vec<f64> {
        v.iter()
            .map(|x| {
                let less = v.iter().filter(|y| *y < x).count() as f64;
                let eq = v.iter().filter(|y| *y == x).count() as f64;
                less + (eq + 1.0) / 2.0
            })
            .collect()
    };
    (
        (pairs > 0).then(|| agree as f64 / pairs as f64),
        pearson(&ma, &mb),
        pearson(&rank(&ma), &rank(&mb)),
    )
}

fn to_csv(rows: &[(String, String, Option<f64>, Option<f64>)]) -> String {
    let mut s = String::from("system,task_id,overall,ta\n");
    for (sys, t, o, ta) in rows {
        let f = |v: &Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
        s.push_str(&format!("{sys},{t},{},{}\n", f(o), f(ta)));
    }
    s
}

/// A deterministic pseudo-random table generator (no dependency on the crate's rng).
fn lcg(seed: &mut u64) -> u64 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *seed >> 33
}

#[test]
fn matches_naive_on_generated_tables() {
    let dir = tempfile::tempdir().unwrap();
    let mut seed = 42u64;
    for case in 0..6 {
        let mut rows_a = Vec::new();
        let mut rows_b = Vec::new();
        for s in 0..5 {
            for t in 0..8 {
                let sys = format!("s{s}");
                let task = format!("t{t}");
                // coarse values (multiples of 0.25) make many ties
                let va = (lcg(&mut seed) % 5) as f64 * 0.25;
                let mut vb = (lcg(&mut seed) % 5) as f64 * 25.0;
                if case == 2 {
                    vb = 50.0; // constant column in B for overall
                }
                // missing cells and a missing system on one side
                let miss_a = lcg(&mut seed).is_multiple_of(7) || (case == 3 && s == 4);
                let miss_b = lcg(&mut seed).is_multiple_of(6);
                let ta_a = (lcg(&mut seed) % 3) as f64;
                let ta_b = (lcg(&mut seed) % 3) as f64;
                rows_a.push((
                    sys.clone(),
                    task.clone(),
                    (!miss_a).then_some(va),
                    Some(ta_a),
                ));
                rows_b.push((sys, task, (!miss_b).then_some(vb), Some(ta_b)));
            }
        }
        let pa = dir.path().join(format!("a{case}.csv"));
        let pb = dir.path().join(format!("b{case}.csv"));
        std::fs::write(&pa, to_csv(&rows_a)).unwrap();
        std::fs::write(&pb, to_csv(&rows_b)).unwrap();
        let (code, out, err) = tvir(&[
            "agree",
            pa.to_str().unwrap(),
            pb.to_str().unwrap(),
            "--json",
            "--bootstrap",
            "300",
        ]);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        for (level, pick) in [("overall", 2usize), ("ta", 3usize)] {
            let table = |rows: &[(String, String, Option<f64>, Option<f64>)]| -> Table {
                rows.iter()
                    .filter_map(|r| {
                        let v = if pick == 2 { r.2 } else { r.3 };
                        v.map(|v| ((r.0.clone(), r.1.clone()), v))
                    })
                    .collect()
            };
            let (par, opc, osc) = naive(&table(&rows_a), &table(&rows_b));
            let l = &v["levels"][level];
            for (name, expected) in [("par", par), ("opc", opc), ("osc", osc)] {
                match expected {
                    Some(e) => {
                        let got = l[name]
                            .as_f64()
                            .unwrap_or_else(|| panic!("case {case} {level} {name}: {l}"));
                        assert!(
                            (got - e).abs() < 1e-9,
                            "case {case} {level} {name}: {got} vs {e}"
                        );
                        let ci = l[format!("{name}_ci")].as_array().unwrap();
                        let (lo, hi) = (ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap());
                        assert!(lo <= got && got <= hi, "case {case} {level} {name} ci");
                    }
                    None => {
                        assert!(
                            l[name].is_null(),
                            "case {case} {level} {name} should be null: {l}"
                        );
                        let notes = l["notes"].as_array().unwrap();
                        assert!(notes.iter().any(|n| n.as_str().unwrap().starts_with(name)));
                    }
                }
            }
        }
        if case == 2 {
            assert!(v["levels"]["overall"]["opc"].is_null());
        }
    }
}

#[test]
fn bootstrap_is_reproducible_through_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let mut seed = 7u64;
    let mut a = Vec::new();
    let mut b = Vec::new();
    for s in 0..4 {
        for t in 0..10 {
            a.push((
                format!("s{s}"),
                format!("t{t}"),
                Some((lcg(&mut seed) % 10) as f64),
                None,
            ));
            b.push((
                format!("s{s}"),
                format!("t{t}"),
                Some((lcg(&mut seed) % 10) as f64),
                None,
            ));
        }
    }
    let pa = dir.path().join("a.csv");
    let pb = dir.path().join("b.csv");
    std::fs::write(&pa, to_csv(&a)).unwrap();
    std::fs::write(&pb, to_csv(&b)).unwrap();
    let run = |seed: &str| {
        let (code, out, err) = tvir(&[
            "agree",
            pa.to_str().unwrap(),
            pb.to_str().unwrap(),
            "--json",
            "--seed",
            seed,
        ]);
        assert_eq!(code, 0, "{err}");
        out
    };
    assert_eq!(run("1"), run("1"));
    assert_ne!(run("1"), run("2"));
    let (code, text, _) = tvir(&["agree", pa.to_str().unwrap(), pb.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(text.contains("overall") && text.contains("PAR"));
}

#[test]
fn human_ratings_and_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite.csv");
    std::fs::write(
        &suite,
        "system,task_id,overall\nx,1,80\ny,1,60\nz,1,70\nx,2,50\ny,2,55\n",
    )
    .unwrap();
    let human = dir.path().join("human.csv");
    // per-report means: x1 8.5 y1 6 z1 7 ; x2 5 y2 6
    std::fs::write(
        &human,
        "system,task_id,annotator,overall\nx,1,h1,9\nx,1,h2,8\ny,1,h1,6\ny,1,h2,6\nz,1,h1,7\nz,1,h2,7\nx,2,h3,5\ny,2,h3,6\n",
    )
    .unwrap();
    let (code, out, err) = tvir(&[
        "agree",
        suite.to_str().unwrap(),
        human.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    // suite vs per-report human mean: all 4 pairs agree
    assert_eq!(v["levels"]["overall"]["par"], 1.0);
    assert_eq!(v["levels"]["overall"]["pairs"], 4);
    // h1 vs h2 on task 1: (x,y) >,> ; (x,z) >,> ; (y,z) <,< -> 1.0; h3 shares nothing
    let ia = &v["inter_annotator"]["b"]["overall"];
    assert_eq!(ia["par"], 1.0);
    assert_eq!(ia["annotator_pairs"], 3);
    assert_eq!(ia["annotator_pairs_used"], 1);

    let bad = dir.path().join("bad.csv");
    std::fs::write(&bad, "system,task_id,overall\nx,1,high\n").unwrap();
    let (code, _, err) = tvir(&["agree", suite.to_str().unwrap(), bad.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("bad.csv, line 2"), "{err}");
    let other = dir.path().join("other.csv");
    std::fs::write(&other, "system,task_id,overall\nq,9,1\n").unwrap();
    let (code, _, err) = tvir(&["agree", suite.to_str().unwrap(), other.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("share no (system, task) cell"), "{err}");
}

fn write_record(root: &std::path::Path, system: &str, task: &str, judge: &str, ta: f64) {
    let dir = root.join(system).join(task).join(judge);
    std::fs::create_dir_all(&dir).unwrap();
    let rec = serde_json::json!({
        "system": system, "task_id": task, "judge_model": judge, "run": 1,
        "language": null, "complexity": null, "domain": null,
        "metrics": {"writing_quality": {"score": ta, "status": "evaluated", "item_count": 1,
            "scored_item_count": 1, "failed_item_count": 0, "skipped_item_count": 0,
            "coverage": 1.0, "note": null}},
        "ta": ta, "va": null, "overall": null, "effective_citations": null,
        "structural_error_counts": {"traceability": 0, "consistency": 0, "completeness": 0},
        "structural_errors": {"traceability": [], "consistency": [], "completeness": []},
        "units": [], "usage": {"calls": 0, "cache_hits": 0, "failed_calls": 0,
            "prompt_tokens": 0, "completion_tokens": 0, "cached_tokens": 0, "cost_usd": null},
        "n_images": 0, "n_charts": 0
    });
    std::fs::write(dir.join("report.json"), rec.to_string()).unwrap();
}

#[test]
fn eval_folders_two_judges_and_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    // judge g: two runs averaged per cell; judge h: one run.
    for (sys, task, g1, g2, h) in [
        ("p", "1", 0.2, 0.4, 0.5),
        ("q", "1", 0.6, 0.6, 0.9),
        ("r", "1", 0.3, 0.3, 0.1),
        ("p", "2", 0.5, 0.5, 0.5),
        ("q", "2", 0.5, 0.5, 0.5),
    ] {
        write_record(out, sys, task, "g-run1", g1);
        write_record(out, sys, task, "g-run2", g2);
        write_record(out, sys, task, "h", h);
    }
    let o = out.to_str().unwrap();
    let (code, _, err) = tvir(&["agree", o, o]);
    assert_eq!(code, 2);
    assert!(
        err.contains("several judge models") && err.contains("g, h"),
        "{err}"
    );
    let (code, json, err) = tvir(&["agree", o, o, "--judge-a", "g", "--judge-b", "h", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let levels: Vec<&String> = v["levels"].as_object().unwrap().keys().collect();
    // va and overall are null everywhere, so absent; ta and the metric remain
    assert_eq!(levels, ["ta", "writing_quality"]);
    // g cells: p1 .3 q1 .6 r1 .3 p2 .5 q2 .5 ; h: .5 .9 .1 .5 .5
    // task 1: (p,q) <,< agree ; (p,r) tie,> disagree ; (q,r) >,> agree ; task 2 tie,tie agree
    let ta = &v["levels"]["ta"];
    assert_eq!(
        (ta["agreeing_pairs"].as_u64(), ta["pairs"].as_u64()),
        (Some(3), Some(4))
    );
    assert!(v["notes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n.as_str().unwrap().contains("2 runs")));
    let (code, _, err) = tvir(&["agree", o, o, "--judge-a", "zz", "--judge-b", "h"]);
    assert_eq!(code, 2);
    assert!(err.contains("\"zz\""), "{err}");
}

/// A record of judge `j` with a TA score and the task's language.
fn write_lang_record(root: &std::path::Path, system: &str, task: &str, lang: &str, ta: f64) {
    write_record(root, system, task, "j", ta);
    let path = root.join(system).join(task).join("j/report.json");
    let mut rec: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    rec["language"] = lang.into();
    std::fs::write(&path, rec.to_string()).unwrap();
}

/// The per-language and per-system breakdown of judge vs two raters, on numbers
/// chosen so that every figure is worked out by hand in the comments: the raters
/// follow the judge's order on the English tasks and reverse it on the Chinese
/// ones, so the whole-study PAR hides what each language shows.
#[test]
fn per_language_and_per_system_breakdowns_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    // (system, task, language, judge TA, rater h1, rater h2)
    let rows = [
        ("p", "t1", "en", 80.0, 90.0, 70.0),
        ("q", "t1", "en", 60.0, 60.0, 60.0),
        ("r", "t1", "en", 40.0, 40.0, 40.0),
        ("p", "t2", "en", 70.0, 70.0, 70.0),
        ("q", "t2", "en", 50.0, 55.0, 45.0),
        ("r", "t2", "en", 30.0, 30.0, 30.0),
        ("p", "t3", "zh", 30.0, 70.0, 70.0),
        ("q", "t3", "zh", 50.0, 50.0, 50.0),
        ("r", "t3", "zh", 70.0, 30.0, 30.0),
        ("p", "t4", "zh", 20.0, 50.0, 70.0),
        ("q", "t4", "zh", 40.0, 30.0, 10.0),
        ("r", "t4", "zh", 60.0, 30.0, 50.0),
    ];
    let mut csv = String::from("system,task_id,annotator,ta\n");
    for (s, t, lang, j, h1, h2) in rows {
        write_lang_record(&out, s, t, lang, j);
        csv.push_str(&format!("{s},{t},h1,{h1}\n{s},{t},h2,{h2}\n"));
    }
    let ratings = dir.path().join("ratings.csv");
    std::fs::write(&ratings, csv).unwrap();
    let (code, json, err) = tvir(&[
        "agree",
        out.to_str().unwrap(),
        ratings.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let group = |by: &str, name: &str| -> serde_json::Value {
        v["breakdowns"]
            .as_array()
            .unwrap_or_else(|| panic!("no breakdowns: {v}"))
            .iter()
            .find(|g| g["by"] == by && g["group"] == name)
            .unwrap_or_else(|| panic!("no {by} {name}: {}", v["breakdowns"]))
            .clone()
    };
    let num = |x: &serde_json::Value, what: &str| -> f64 {
        x.as_f64().unwrap_or_else(|| panic!("{what}: {x}"))
    };
    let near = |x: &serde_json::Value, want: f64, what: &str| {
        let got = num(x, what);
        assert!((got - want).abs() < 1e-9, "{what}: {got}, by hand {want}");
    };
    let groups: Vec<(String, String)> = v["breakdowns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["by"].as_str().unwrap().to_string(),
                g["group"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want: Vec<(String, String)> = [
        ("language", "en"),
        ("language", "zh"),
        ("system", "p"),
        ("system", "q"),
        ("system", "r"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(groups, want);

    // Whole study: the raters' means are t1 p80 q60 r40, t2 p70 q50 r30 (the
    // judge's order), t3 p70 q50 r30 (reversed), t4 p60 q20 r40 (q<r as the judge,
    // p first against it): 3 + 3 + 0 + 1 agreeing pairs of 12.
    let ta = &v["levels"]["ta"];
    near(&ta["par"], 7.0 / 12.0, "study par");
    assert_eq!(ta["pairs"], 12);

    // English: every pair agrees; system means judge p75 q55 r35, raters the same.
    let en = group("language", "en");
    let l = &en["levels"]["ta"];
    near(&l["par"], 1.0, "en par");
    assert_eq!(
        (l["pairs"].as_u64(), l["agreeing_pairs"].as_u64()),
        (Some(6), Some(6))
    );
    near(&l["opc"], 1.0, "en opc");
    near(&l["osc"], 1.0, "en osc");
    assert_eq!(
        (l["tasks"].as_u64(), l["cells"].as_u64()),
        (Some(2), Some(6))
    );
    assert_eq!(
        (l["raters"].as_u64(), l["ratings"].as_u64()),
        (Some(2), Some(12))
    );
    // h1 and h2 order every English pair alike.
    let r = &en["raters"]["b"]["levels"]["ta"];
    near(&r["par"]["par"], 1.0, "en rater par");
    assert_eq!(
        (r["reports"].as_u64(), r["ratings"].as_u64()),
        (Some(6), Some(12))
    );

    // Chinese: t3 0 of 3, t4 1 of 3 (q<r). System means judge p25 q45 r65, raters
    // p65 q35 r35: centred (-20, 0, 20) and (20, -10, -10), so OPC = -600 /
    // sqrt(800 * 600) = -sqrt(3)/2; ranks (1, 2, 3) and (3, 1.5, 1.5) give the same.
    let zh = group("language", "zh");
    let l = &zh["levels"]["ta"];
    near(&l["par"], 1.0 / 6.0, "zh par");
    assert_eq!(
        (l["pairs"].as_u64(), l["agreeing_pairs"].as_u64()),
        (Some(6), Some(1))
    );
    near(&l["opc"], -(3f64.sqrt()) / 2.0, "zh opc");
    near(&l["osc"], -(3f64.sqrt()) / 2.0, "zh osc");
    assert_eq!(
        (l["raters"].as_u64(), l["ratings"].as_u64()),
        (Some(2), Some(12))
    );
    // h1 and h2: t3 identical (3 of 3); t4 p>q, p>r alike, q=r for h1 but q<r for
    // h2 (2 of 3).
    let r = &zh["raters"]["b"]["levels"]["ta"];
    near(&r["par"]["par"], 5.0 / 6.0, "zh rater par");
    // Krippendorff's alpha of the Chinese reports alone, from its definition.
    let units: Vec<Vec<f64>> = rows
        .iter()
        .filter(|r| r.2 == "zh")
        .map(|r| vec![r.4, r.5])
        .collect();
    near(
        &r["alpha"],
        crate::label_studio::alpha_ordinal(&units),
        "zh alpha",
    );

    // Per system: the pairs of that system with the two others in each task. p:
    // 4 of 4 in English, 0 of 4 in Chinese; q and r also win their t4 pair (q<r).
    for (sys, agreeing) in [("p", 4), ("q", 5), ("r", 5)] {
        let g = group("system", sys);
        let l = &g["levels"]["ta"];
        assert_eq!(
            (l["pairs"].as_u64(), l["agreeing_pairs"].as_u64()),
            (Some(8), Some(agreeing)),
            "{sys}"
        );
        near(&l["par"], agreeing as f64 / 8.0, sys);
        assert!(l["opc"].is_null() && l["osc"].is_null(), "{sys}: {l}");
        assert_eq!(
            (l["tasks"].as_u64(), l["cells"].as_u64()),
            (Some(4), Some(4))
        );
        assert_eq!(
            (l["raters"].as_u64(), l["ratings"].as_u64()),
            (Some(2), Some(8))
        );
    }
}
