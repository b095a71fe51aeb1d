//! Tests. Each one would fail if the property it names were false; where a
//! number is checked, it is checked against an independent computation or a
//! value worked out by hand.

use std::collections::{BTreeMap, HashMap};

use rand::Rng;

use super::*;
use crate::agree::stats::quantile_sorted;

// ---------------------------------------------------------------- helpers

/// Brute force: enumerate every sign pattern as an integer, compute the mean
/// of the signed differences from scratch and count those at least as far
/// from zero as the observed mean (with a plain absolute tolerance).
fn brute_force_p(diffs: &[f64]) -> f64 {
    let n = diffs.len();
    let observed = diffs.iter().sum::<f64>() / n as f64;
    let mut count = 0u64;
    for pattern in 0u64..(1u64 << n) {
        let mut signed = 0.0;
        for (i, d) in diffs.iter().enumerate() {
            signed += if pattern & (1 << i) != 0 { -d } else { *d };
        }
        if (signed / n as f64).abs() >= observed.abs() - 1e-9 {
            count += 1;
        }
    }
    count as f64 / 2f64.powi(n as i32)
}

fn exact_p(diffs: &[f64]) -> f64 {
    let mut rng = stream_rng(1, &["unused"]);
    let (p, method) = sign_flip_p_value(diffs, 20, 1, &mut rng);
    assert_eq!(method, TestMethod::Exact);
    p
}

/// Deterministic pseudo-noise in [-1, 1) that does not touch the module's RNG
/// streams.
fn wiggle(i: usize, salt: usize) -> f64 {
    let x = ((i * 7919 + salt * 104_729) % 1000) as f64 / 1000.0;
    2.0 * x - 1.0
}

/// A level with `systems` given as (name, true mean), `tasks` tasks, each
/// task's score = system mean + a task effect shared by all systems + noise
/// of size `noise` per system and run.
fn level(systems: &[(&str, f64)], tasks: usize, runs: usize, noise: f64) -> LevelScores {
    let mut scores = LevelScores::new();
    for (s, &(name, mu)) in systems.iter().enumerate() {
        for t in 0..tasks {
            for r in 0..runs {
                let task_effect = 10.0 * wiggle(t, 3);
                let score = mu + task_effect + noise * wiggle(t * 31 + r * 17 + s * 101, s + 11);
                scores.push(name, format!("task{t:03}"), score);
            }
        }
    }
    scores
}

fn small_options() -> Options {
    Options {
        resamples: 2_000,
        permutations: 4_000,
        ..Options::default()
    }
}

// ------------------------------------------------------ permutation test

#[test]
fn exact_p_matches_brute_force_on_hand_data() {
    let cases: &[&[f64]] = &[
        &[1.0, 2.0, 3.0, -1.0, 0.5],
        &[5.0, -3.0, 2.0, 2.0, -2.0, 4.0, 1.0],
        // Zero-difference tasks are kept and only add sign patterns that tie.
        &[3.0, 0.0, 0.0, 1.5, -0.5, 2.0],
        // Integer ties between many patterns.
        &[1.0, 1.0, 2.0, 2.0, 3.0, -1.0, 4.0, -2.0, 1.0, 1.0, 5.0],
        &[
            0.1, 0.2, 0.3, 0.4, 0.5, -0.6, 0.7, 0.8, -0.9, 1.0, 1.1, 1.2, -1.3,
        ],
        &[
            12.5, -7.25, 3.0, 0.0, 8.5, 2.25, -1.0, 4.75, 6.0, -3.5, 9.0, 1.0, 0.5, -2.0, 5.5, 7.0,
        ],
    ];
    for diffs in cases {
        let (got, want) = (exact_p(diffs), brute_force_p(diffs));
        assert!(
            (got - want).abs() < 1e-12,
            "{diffs:?}: exact {got} vs brute force {want}"
        );
    }
}

#[test]
fn exact_p_for_equal_positive_differences_is_two_over_two_to_the_n() {
    for n in 5..=20 {
        let diffs = vec![2.7; n];
        assert_eq!(exact_p(&diffs), 2.0 / 2f64.powi(n as i32), "n = {n}");
    }
}

#[test]
fn exact_p_is_one_when_all_differences_are_zero_or_cancel() {
    assert_eq!(exact_p(&[0.0; 8]), 1.0);
    assert_eq!(exact_p(&[1.0, -1.0, 2.0, -2.0, 0.0]), 1.0);
}

#[test]
fn monte_carlo_p_is_close_to_exact_p_for_twenty_tasks() {
    let diffs: Vec<f64> = (0..20).map(|i| 0.8 + 3.0 * wiggle(i, 5)).collect();
    let exact = exact_p(&diffs);
    assert!(
        (0.01..0.5).contains(&exact),
        "want a p in the middle, got {exact}"
    );
    let perms = 40_000;
    let mut rng = stream_rng(9, &["mc"]);
    let (mc, method) = sign_flip_p_value(&diffs, 19, perms, &mut rng);
    assert_eq!(method, TestMethod::MonteCarlo);
    let se = (exact * (1.0 - exact) / perms as f64).sqrt();
    assert!(
        (mc - exact).abs() < 4.0 * se + 1.0 / perms as f64,
        "MC {mc} vs exact {exact} (se {se})"
    );
}

#[test]
fn monte_carlo_p_matches_simple_reimplementation_on_the_same_stream() {
    // 70 tasks: one full 64-bit word and a partial one per pattern.
    let diffs: Vec<f64> = (0..70).map(|i| 0.3 + 2.0 * wiggle(i, 7)).collect();
    let perms = 3_000;
    let (got, method) = sign_flip_p_value(&diffs, 20, perms, &mut stream_rng(5, &["mc"]));
    assert_eq!(method, TestMethod::MonteCarlo);

    // Independent version: for each pattern draw ⌈n/64⌉ u64s, task i takes
    // the sign − when bit i % 64 of word i / 64 is set; sum the signed
    // differences directly and compare means.
    let mut rng = stream_rng(5, &["mc"]);
    let n = diffs.len();
    let observed = diffs.iter().sum::<f64>() / n as f64;
    let mut count = 0;
    for _ in 0..perms {
        let words: Vec<u64> = (0..n.div_ceil(64)).map(|_| rng.random()).collect();
        let signed: f64 = (0..n)
            .map(|i| {
                if words[i / 64] >> (i % 64) & 1 == 1 {
                    -diffs[i]
                } else {
                    diffs[i]
                }
            })
            .sum();
        if (signed / n as f64).abs() >= observed.abs() - 1e-9 {
            count += 1;
        }
    }
    let want = (count + 1) as f64 / (perms + 1) as f64;
    assert!(
        (0.01..0.9).contains(&want),
        "want a p in the middle, got {want}"
    );
    assert_eq!(got, want);
}

#[test]
fn monte_carlo_p_never_reaches_zero() {
    let diffs = vec![10.0; 40];
    let mut rng = stream_rng(3, &["mc"]);
    let (p, method) = sign_flip_p_value(&diffs, 20, 999, &mut rng);
    assert_eq!(method, TestMethod::MonteCarlo);
    assert_eq!(p, 1.0 / 1000.0);
}

// -------------------------------------------------------------------- Holm

#[test]
fn holm_matches_hand_computation() {
    // Sorted: 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, 0.04·1 = 0.04 → 0.06 (monotone).
    let adjusted = holm_adjust(&[0.01, 0.04, 0.03, 0.005]);
    let want = [0.03, 0.06, 0.06, 0.02];
    for (got, want) in adjusted.iter().zip(want) {
        assert!((got - want).abs() < 1e-12, "{adjusted:?}");
    }
    // Capped at 1 and kept monotone after the cap: 0.4·3 → 1, 0.5·2 → 1, 0.6 → 1.
    assert_eq!(holm_adjust(&[0.6, 0.4, 0.5]), vec![1.0, 1.0, 1.0]);
    // Ties get the same adjusted value.
    assert_eq!(holm_adjust(&[0.02, 0.02, 0.5]), vec![0.06, 0.06, 0.5]);
    assert!(holm_adjust(&[]).is_empty());
}

// --------------------------------------------------------------- bootstrap

#[test]
fn type7_quantiles_match_hand_values() {
    let quantile_type7 = |x: &[f64], p: f64| quantile_sorted(x, p).unwrap();
    let x = [1.0, 2.0, 3.0, 4.0];
    assert_eq!(quantile_type7(&x, 0.25), 1.75);
    assert_eq!(quantile_type7(&x, 0.5), 2.5);
    assert_eq!(quantile_type7(&x, 0.0), 1.0);
    assert_eq!(quantile_type7(&x, 1.0), 4.0);
    let y: Vec<f64> = (0..=100).map(f64::from).collect();
    assert!((quantile_type7(&y, 0.025) - 2.5).abs() < 1e-12);
    assert!((quantile_type7(&y, 0.975) - 97.5).abs() < 1e-12);
}

#[test]
fn bootstrap_ci_matches_simple_reimplementation_on_the_same_stream() {
    let values: Vec<f64> = (0..37).map(|i| 50.0 + 20.0 * wiggle(i, 1)).collect();
    let mut scratch = Vec::new();
    let got = bootstrap_mean_ci(
        &values,
        3_001,
        0.95,
        &mut stream_rng(42, &["x"]),
        &mut scratch,
    );

    // Independent version: xoshiro256++ as published (reference C code,
    // state = the first four u64 of the stream), a list of 32-bit words (each
    // output split low half first), every index taken as ⌊word·n / 2^32⌋
    // unless word·n mod 2^32 < 2^32 mod n (then the word is skipped); collect
    // resampled vectors, average, full sort, R's 1-based type-7 formula.
    let mut rng = stream_rng(42, &["x"]);
    let mut state: [u64; 4] = std::array::from_fn(|_| rng.random::<u64>());
    let rotl = u64::rotate_left;
    let mut xoshiro = move || {
        let result = rotl(state[0].wrapping_add(state[3]), 23).wrapping_add(state[0]);
        let t = state[1] << 17;
        state[2] ^= state[0];
        state[3] ^= state[1];
        state[1] ^= state[2];
        state[0] ^= state[3];
        state[2] ^= t;
        state[3] = rotl(state[3], 45);
        result
    };
    let n = values.len() as u64;
    let mut words: Vec<u64> = Vec::new();
    let mut next_index = || loop {
        if words.is_empty() {
            let x = xoshiro();
            words.push(x >> 32);
            words.push(x & 0xffff_ffff);
        }
        let word = words.pop().unwrap();
        if (word * n) % (1u64 << 32) >= (1u64 << 32) % n {
            return ((word * n) >> 32) as usize;
        }
    };
    let mut reps: Vec<f64> = (0..3_001)
        .map(|_| {
            let sample: Vec<f64> = (0..values.len()).map(|_| values[next_index()]).collect();
            sample.iter().sum::<f64>() / sample.len() as f64
        })
        .collect();
    reps.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let q = |p: f64| {
        let h = (reps.len() as f64 - 1.0) * p + 1.0; // 1-based position
        let j = h.floor() as usize;
        reps[j - 1] + (h - j as f64) * (reps[j.min(reps.len() - 1)] - reps[j - 1])
    };
    assert!((got[0] - q(0.025)).abs() < 1e-9, "{got:?}");
    assert!((got[1] - q(0.975)).abs() < 1e-9, "{got:?}");
}

#[test]
fn system_ci_contains_mean_shrinks_with_tasks_and_follows_the_seed() {
    let width = |tasks: usize, seed: u64| {
        let scores = level(&[("only", 60.0)], tasks, 1, 5.0);
        let report = analyze_level(
            &scores,
            &Options {
                seed,
                ..small_options()
            },
        )
        .unwrap();
        let s = &report.systems[0];
        assert!(s.ci[0] < s.mean && s.mean < s.ci[1], "{s:?}");
        (s.ci, s.ci[1] - s.ci[0])
    };
    let (ci_a, small) = width(20, 1);
    let (ci_b, _) = width(20, 1);
    let (ci_c, _) = width(20, 2);
    let (_, large) = width(320, 1);
    assert_eq!(ci_a, ci_b, "same seed, same interval");
    assert_ne!(ci_a, ci_c, "another seed, another interval");
    // 16x the tasks: about a quarter of the width.
    assert!(
        large < 0.5 * small,
        "width {small} at 20 tasks vs {large} at 320"
    );
}

// ---------------------------------------------------------- whole analysis

#[test]
fn report_is_deterministic_and_independent_of_input_order() {
    let scores = level(&[("a", 70.0), ("b", 69.0), ("c", 50.0)], 30, 2, 4.0);
    // Same runs, fed through a HashMap in its own iteration order.
    let mut hashed: HashMap<(String, String), Vec<f64>> = HashMap::new();
    for (system, tasks) in scores.systems() {
        for (task, runs) in tasks {
            hashed.insert((system.to_owned(), task.clone()), runs.clone());
        }
    }
    let mut shuffled = LevelScores::new();
    for ((system, task), runs) in &hashed {
        shuffled.extend_runs(system.as_str(), task.as_str(), runs);
    }
    let options = small_options();
    let one = analyze_level(&scores, &options).unwrap();
    assert_eq!(one, analyze_level(&scores, &options).unwrap());
    assert_eq!(one, analyze_level(&shuffled, &options).unwrap());
    // A system's interval does not depend on which other systems are present.
    let alone = level(&[("a", 70.0)], 30, 2, 4.0);
    let alone = analyze_level(&alone, &options).unwrap();
    let a = one.systems.iter().find(|s| s.system == "a").unwrap();
    assert_eq!(a.ci, alone.systems[0].ci);
}

#[test]
fn pairs_are_ranked_paired_and_holm_adjusted() {
    let scores = level(&[("low", 40.0), ("high", 60.0), ("mid", 59.5)], 25, 1, 3.0);
    let report = analyze_level(&scores, &small_options()).unwrap();
    let names: Vec<&str> = report.systems.iter().map(|s| s.system.as_str()).collect();
    assert_eq!(names, ["high", "mid", "low"]);
    assert_eq!(report.pairs.len(), 3);
    let raw: Vec<f64> = report.pairs.iter().map(|p| p.p.unwrap()).collect();
    let holm = holm_adjust(&raw);
    for (pair, want) in report.pairs.iter().zip(holm) {
        assert_eq!(pair.p_holm, Some(want));
        assert!(pair.testable && pair.tasks == 25 && pair.method == Some(TestMethod::MonteCarlo));
        let ci = pair.ci.unwrap();
        let d = pair.mean_diff.unwrap();
        assert!(ci[0] <= d && d <= ci[1]);
        // The paired difference is the difference of the means (same tasks).
        let mean = |name: &str| {
            report
                .systems
                .iter()
                .find(|s| s.system == name)
                .unwrap()
                .mean
        };
        assert!((d - (mean(&pair.a) - mean(&pair.b))).abs() < 1e-9);
    }
    assert_eq!(
        (report.pairs[0].a.as_str(), report.pairs[0].b.as_str()),
        ("high", "mid")
    );
}

#[test]
fn pairs_with_few_shared_tasks_are_untestable_and_left_out_of_holm() {
    let mut scores = level(&[("a", 80.0), ("b", 20.0)], 12, 1, 1.0);
    for t in 0..4 {
        scores.push("c", format!("task{t:03}"), 50.0);
    }
    scores.push("d", "elsewhere", 10.0);
    let report = analyze_level(&scores, &small_options()).unwrap();
    let pair = |x: &str, y: &str| {
        report
            .pairs
            .iter()
            .find(|p| (p.a == x && p.b == y) || (p.a == y && p.b == x))
            .unwrap()
    };
    let ac = pair("a", "c");
    assert!(!ac.testable && ac.p.is_none() && ac.p_holm.is_none() && ac.ci.is_none());
    assert_eq!(ac.tasks, 4);
    assert!(ac
        .reason
        .as_deref()
        .unwrap()
        .contains("only 4 shared tasks"));
    assert!(ac.mean_diff.is_some());
    let ad = pair("a", "d");
    assert_eq!(ad.reason.as_deref(), Some("no shared tasks"));
    assert_eq!(ad.mean_diff, None);
    // The only testable pair: Holm over a family of one leaves p unchanged.
    let ab = pair("a", "b");
    assert!(ab.testable);
    assert_eq!(ab.p, ab.p_holm);
    // 12 shared tasks, all a > b: exact test, p = 2/2^12.
    assert_eq!(ab.method, Some(TestMethod::Exact));
    assert_eq!(ab.p, Some(2.0 / 4096.0));
    // Untestable pairs never split a group: a, c and d are not different,
    // but b differs from a.
    assert_eq!(report.groups, vec![vec!["a", "c"], vec!["b", "d"]]);
}

// ------------------------------------------------------------------ groups

#[test]
fn clearly_separated_systems_get_one_group_each() {
    let scores = level(&[("s1", 80.0), ("s2", 50.0), ("s3", 20.0)], 30, 1, 2.0);
    let report = analyze_level(&scores, &small_options()).unwrap();
    assert_eq!(report.groups, vec![vec!["s1"], vec!["s2"], vec!["s3"]]);
    let groups: Vec<usize> = report.systems.iter().map(|s| s.group).collect();
    assert_eq!(groups, [1, 2, 3]);
}

#[test]
fn indistinguishable_systems_share_a_group_under_separated_ones() {
    // x, y, z within noise of each other; w far below.
    let scores = level(
        &[("x", 60.3), ("y", 60.0), ("z", 59.8), ("w", 30.0)],
        30,
        1,
        6.0,
    );
    let report = analyze_level(&scores, &small_options()).unwrap();
    assert_eq!(report.groups.len(), 2, "{:#?}", report.pairs);
    assert_eq!(report.groups[1], vec!["w"]);
    let mut top = report.groups[0].clone();
    top.sort();
    assert_eq!(top, ["x", "y", "z"]);
    let ranks: Vec<usize> = report.systems.iter().map(|s| s.rank).collect();
    assert_eq!(ranks, [1, 2, 3, 4]);
}

#[test]
fn overlapping_chain_puts_the_middle_system_in_the_higher_group() {
    // Rank positions 0..5. 0~1, 1~2 but 0≠2; 2~3, 3~4, 2~4; 0,1 ≠ 3,4.
    let differs = |i: usize, j: usize| matches!((i, j), (0, 2) | (0, 3) | (0, 4) | (1, 3) | (1, 4));
    let groups = greedy_groups(5, differs);
    assert_eq!(groups, vec![0..2, 2..5]);
    // A candidate must fit with every member, not only with the group's head.
    let differs = |i: usize, j: usize| (i, j) == (1, 2);
    assert_eq!(greedy_groups(3, differs), vec![0..2, 2..3]);
    assert_eq!(greedy_groups(3, |_, _| false), vec![0..3]);
    assert!(greedy_groups(0, |_, _| true).is_empty());
}

#[test]
fn overlapping_chain_end_to_end() {
    // a − b and b − c are 1.5 points with noise, a − c is 3 points: on 12 tasks the
    // neighbours do not separate, the ends do.
    let noise = [
        2.9, -3.1, 3.3, -2.7, 2.6, -3.2, 3.0, -2.8, 3.4, -2.9, 2.7, -3.2,
    ];
    let mut scores = LevelScores::new();
    for (t, e) in noise.iter().enumerate() {
        let base = 50.0 + 5.0 * wiggle(t, 2);
        scores.push("a", format!("t{t}"), base + 3.0);
        scores.push("b", format!("t{t}"), base + 1.5 + e);
        scores.push("c", format!("t{t}"), base);
    }
    let report = analyze_level(&scores, &small_options()).unwrap();
    let p = |x: &str, y: &str| {
        report
            .pairs
            .iter()
            .find(|p| p.a == x && p.b == y)
            .unwrap()
            .p_holm
            .unwrap()
    };
    assert!(
        p("a", "b") >= 0.05 && p("b", "c") >= 0.05 && p("a", "c") < 0.05,
        "{:#?}",
        report.pairs
    );
    assert_eq!(report.groups, vec![vec!["a", "b"], vec!["c"]]);
    let groups: Vec<(String, usize)> = report
        .systems
        .iter()
        .map(|s| (s.system.clone(), s.group))
        .collect();
    assert_eq!(groups, [("a".into(), 1), ("b".into(), 1), ("c".into(), 2)]);
}

#[test]
fn ties_in_the_mean_rank_by_name() {
    let mut scores = LevelScores::new();
    for t in 0..6 {
        scores.push("zeta", format!("t{t}"), 50.0 + t as f64);
        scores.push("alpha", format!("t{t}"), 50.0 + t as f64);
    }
    let report = analyze_level(&scores, &small_options()).unwrap();
    assert_eq!(report.groups, vec![vec!["alpha", "zeta"]]);
    assert_eq!(report.pairs[0].p, Some(1.0));
}

// ------------------------------------------------------------- judge noise

#[test]
fn noise_without_judge_variance_is_all_task_choice() {
    let mut scores = LevelScores::new();
    for t in 0..10 {
        let s = 40.0 + 3.0 * t as f64;
        scores.extend_runs("sys", format!("t{t}"), &[s, s, s]);
    }
    let noise = judge_noise(&scores).unwrap();
    let sys = &noise.systems[0];
    // Task means 40, 43, …, 67: variance 9 · var(0..9) = 9 · 55/6 = 82.5, over n = 10.
    assert_eq!(sys.var_judge, 0.0);
    assert!((sys.var_task - 8.25).abs() < 1e-9, "{sys:?}");
    assert_eq!(sys.judge_share, 0.0);
    assert_eq!(noise.dominant, NoiseSource::Task);
    assert_eq!(noise.se_cut_double_runs, 0.0);
    assert!(
        noise.interpretation.contains("more tasks would tighten"),
        "{}",
        noise.interpretation
    );
}

#[test]
fn noise_without_task_variance_is_all_judge() {
    let mut scores = LevelScores::new();
    for t in 0..8 {
        // Every task's mean is 50; runs spread ±2 (sample variance 4 for K = 2).
        scores.extend_runs("sys", format!("t{t}"), &[48.0, 52.0]);
    }
    let noise = judge_noise(&scores).unwrap();
    let sys = &noise.systems[0];
    // var_judge = 8 / (2 · 8) = 0.5; the observed task-mean variance is 0.
    assert!((sys.var_judge - 0.5).abs() < 1e-12, "{sys:?}");
    assert_eq!(sys.var_task, 0.0);
    assert_eq!(sys.judge_share, 1.0);
    assert_eq!(noise.dominant, NoiseSource::Judge);
    assert!((noise.se_cut_double_runs - (1.0 - 0.5f64.sqrt())).abs() < 1e-12);
    assert!(
        noise.interpretation.contains("more runs per task"),
        "{}",
        noise.interpretation
    );
}

#[test]
fn noise_matches_hand_computation_on_mixed_data() {
    // Two tasks, K = 2: runs (10, 14) and (20, 22). Task means 12 and 21.
    // Within variances 8 and 2 → σ̂²_judge = 5; var_judge = 5 / (2 · 2) = 1.25.
    // S² of (12, 21) = 40.5; var_mean = 40.5 / 2 = 20.25; var_task = 19.
    let mut scores = LevelScores::new();
    scores.extend_runs("s", "t1", &[10.0, 14.0]);
    scores.extend_runs("s", "t2", &[20.0, 22.0]);
    // A system with single runs only cannot be decomposed and is left out.
    scores.push("single", "t1", 3.0);
    scores.push("single", "t2", 4.0);
    let noise = judge_noise(&scores).unwrap();
    assert_eq!(noise.systems.len(), 1);
    let s = &noise.systems[0];
    assert!((s.var_judge - 1.25).abs() < 1e-12);
    assert!((s.var_mean - 20.25).abs() < 1e-12);
    assert!((s.var_task - 19.0).abs() < 1e-12);
    assert!((s.judge_share - 1.25 / 20.25).abs() < 1e-12);
    assert_eq!(s.runs, 2.0);
    assert!(judge_noise(&level(&[("x", 1.0)], 5, 1, 1.0)).is_none());
}

#[test]
fn noise_average_across_systems() {
    let mut scores = LevelScores::new();
    for t in 0..4 {
        let s = 10.0 * t as f64;
        scores.extend_runs("flat", format!("t{t}"), &[s, s]);
        scores.extend_runs("noisy", format!("t{t}"), &[50.0 - 3.0, 50.0 + 3.0]);
    }
    let noise = judge_noise(&scores).unwrap();
    let by_name: BTreeMap<&str, &SystemNoise> = noise
        .systems
        .iter()
        .map(|s| (s.system.as_str(), s))
        .collect();
    let flat = by_name["flat"];
    let noisy = by_name["noisy"];
    assert!((noise.var_task - (flat.var_task + noisy.var_task) / 2.0).abs() < 1e-12);
    assert!((noise.var_judge - (flat.var_judge + noisy.var_judge) / 2.0).abs() < 1e-12);
    assert!(
        (noise.judge_share - noise.var_judge / (noise.var_task + noise.var_judge)).abs() < 1e-12
    );
}

// -------------------------------------------------------------- JSON shape

#[test]
fn json_has_the_documented_shape() {
    let mut scores = level(&[("a", 70.0), ("b", 40.0)], 6, 2, 1.0);
    scores.push("c", "task000", 50.0);
    let report = analyze_level(&scores, &small_options()).unwrap();
    let json = serde_json::to_value(&report).unwrap();
    let keys = |v: &serde_json::Value| {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(
        keys(&json),
        [
            "alpha",
            "confidence",
            "groups",
            "judge_noise",
            "pairs",
            "permutations",
            "resamples",
            "seed",
            "systems"
        ]
    );
    assert_eq!(
        keys(&json["systems"][0]),
        ["ci", "group", "mean", "rank", "system", "tasks"]
    );
    assert_eq!(json["systems"][0]["ci"].as_array().unwrap().len(), 2);
    let tested = json["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["testable"] == true)
        .unwrap();
    assert_eq!(
        keys(tested),
        [
            "a",
            "b",
            "ci",
            "mean_diff",
            "method",
            "p",
            "p_holm",
            "tasks",
            "testable"
        ]
    );
    assert_eq!(tested["method"], "exact");
    let untested = json["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["testable"] == false)
        .unwrap();
    assert!(untested["p"].is_null() && untested["p_holm"].is_null() && untested["ci"].is_null());
    assert!(untested["reason"].is_string());
    assert_eq!(json["groups"][0][0], "a");
    assert_eq!(json["resamples"], 2_000);
    // And it reads back.
    let back: LevelReport = serde_json::from_value(json).unwrap();
    assert_eq!(back, report);
}

// ------------------------------------------------------------- validation

#[test]
fn invalid_input_is_rejected() {
    let options = Options::default();
    assert_eq!(
        analyze_level(&LevelScores::new(), &options),
        Err(SignificanceError::NoSystems)
    );
    let bad: LevelScores = [("s", "t", 1.0), ("s", "t", f64::NAN)]
        .into_iter()
        .collect();
    assert!(matches!(
        analyze_level(&bad, &options),
        Err(SignificanceError::NonFiniteScore { .. })
    ));
    let ok = level(&[("s", 1.0)], 3, 1, 1.0);
    for broken in [
        Options {
            resamples: 0,
            ..Options::default()
        },
        Options {
            alpha: 1.0,
            ..Options::default()
        },
        Options {
            exact_max_tasks: 40,
            ..Options::default()
        },
    ] {
        assert!(matches!(
            analyze_level(&ok, &broken),
            Err(SignificanceError::InvalidOption(_))
        ));
    }
}

#[test]
fn random_streams_differ_by_name_and_seed() {
    let draw = |seed: u64, parts: &[&str]| stream_rng(seed, parts).random::<u64>();
    assert_eq!(draw(1, &["a", "b"]), draw(1, &["a", "b"]));
    assert_ne!(draw(1, &["a", "b"]), draw(2, &["a", "b"]));
    assert_ne!(draw(1, &["ab", "c"]), draw(1, &["a", "bc"]));
}

#[test]
fn report_does_not_depend_on_the_number_of_threads() {
    let scores = level(
        &[("a", 70.0), ("b", 69.0), ("c", 50.0), ("d", 68.0)],
        30,
        2,
        4.0,
    );
    let options = small_options();
    let on = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| analyze_level(&scores, &options).unwrap())
    };
    let one = on(1);
    assert_eq!(one, on(3));
    assert_eq!(one, on(8));
}

/// The shared draw gives every column the replicates its own bootstrap would have
/// from the same stream (one index sequence), and a pair's difference of replicates
/// is the bootstrap of its paired mean difference.
#[test]
fn shared_bootstrap_matches_the_single_column_bootstrap() {
    let a = [3.0, 9.0, 4.0, 7.5, 1.0, 6.0, 8.0];
    let b = [2.0, 7.0, 4.5, 5.0, 1.5, 4.0, 7.0];
    let mut table = Vec::new();
    for (x, y) in a.iter().zip(&b) {
        table.extend([*x, *y]);
    }
    let shared = shared_bootstrap_means(&table, 2, 500, &mut stream_rng(7, &["t"]));
    let mut alone = Vec::new();
    bootstrap_means(&a, 500, &mut stream_rng(7, &["t"]), &mut alone);
    for (s, o) in shared[..500].iter().zip(&alone) {
        assert!((s - o).abs() < 1e-12, "{s} vs {o}");
    }
    let mut diffs: Vec<f64> = shared[..500]
        .iter()
        .zip(&shared[500..])
        .map(|(x, y)| x - y)
        .collect();
    let d = a.iter().zip(&b).map(|(x, y)| x - y).sum::<f64>() / a.len() as f64;
    let ci = percentile_interval(&mut diffs, 0.95);
    assert!(ci[0] <= d && d <= ci[1] && ci[0] < ci[1], "{ci:?} vs {d}");
}

/// Pairs draw their paired resamples per set of shared tasks: a pair's interval is
/// the same whatever other systems (with other task sets) are in the level, and two
/// pairs sharing the same tasks and the same differences get the same interval.
#[test]
fn pair_interval_depends_only_on_its_shared_tasks_and_scores() {
    let options = small_options();
    let two = level(&[("a", 70.0), ("b", 66.0)], 30, 1, 4.0);
    let mut more = two.clone();
    // c: only the first 20 tasks; d: a copy of b under another name.
    for (task, runs) in level(&[("c", 60.0)], 20, 1, 4.0)
        .systems()
        .next()
        .unwrap()
        .1
    {
        more.extend_runs("c", task.as_str(), runs);
    }
    for (task, runs) in two.systems().find(|(s, _)| *s == "b").unwrap().1 {
        more.extend_runs("d", task.as_str(), runs);
    }
    let pair = |r: &LevelReport, a: &str, b: &str| {
        r.pairs
            .iter()
            .find(|p| p.a == a && p.b == b)
            .unwrap_or_else(|| panic!("no pair {a} {b}"))
            .clone()
    };
    let alone = analyze_level(&two, &options).unwrap();
    let with_others = analyze_level(&more, &options).unwrap();
    let ab = pair(&alone, "a", "b");
    assert!(ab.ci.is_some());
    assert_eq!(ab.ci, pair(&with_others, "a", "b").ci);
    // a-d has a-b's shared tasks and differences: the same resamples, the same interval.
    assert_eq!(ab.ci, pair(&with_others, "a", "d").ci);
    // a-c shares 20 tasks: tested, its own interval.
    let ac = pair(&with_others, "a", "c");
    assert_eq!(ac.tasks, 20);
    assert!(ac.ci.is_some() && ac.ci != ab.ci);
}

/// The percentile interval of many replicates, found from a sample's thresholds and
/// the two thin tails only, is bit for bit the type-7 quantiles of the sorted
/// replicates: on bootstrap-like values, on sorted and reversed input (where a
/// strided sample is least like the whole), on heavy ties, and with a NaN (which
/// sends it back to the full selection); and the same for replicates given as the
/// difference of two columns (a pair's paired bootstrap).
#[test]
fn percentile_interval_of_many_replicates_equals_the_sorted_quantiles() {
    let mut rng = stream_rng(11, &["tails"]);
    let noisy: Vec<f64> = (0..10_000)
        .map(|_| rng.random::<f64>() * 40.0 - 20.0)
        .collect();
    let mut sorted_input = noisy.clone();
    sorted_input.sort_by(f64::total_cmp);
    let reversed: Vec<f64> = sorted_input.iter().rev().copied().collect();
    let ties: Vec<f64> = (0..10_000).map(|i| ((i * 7919) % 13) as f64).collect();
    let zeros: Vec<f64> = (0..5_000)
        .map(|i| if i % 2 == 0 { 0.0 } else { -0.0 })
        .chain((0..5_000).map(|i| i as f64 / 100.0))
        .collect();
    for (name, values) in [
        ("noisy", noisy),
        ("sorted", sorted_input),
        ("reversed", reversed),
        ("ties", ties),
        ("signed zeros", zeros),
    ] {
        for confidence in [0.95, 0.9, 0.99] {
            let mut sorted = values.clone();
            sorted.sort_by(f64::total_cmp);
            let tail = (1.0 - confidence) / 2.0;
            let want = [
                quantile_sorted(&sorted, tail).unwrap(),
                quantile_sorted(&sorted, 1.0 - tail).unwrap(),
            ];
            let got = percentile_interval(&mut values.clone(), confidence);
            assert_eq!(
                got.map(f64::to_bits),
                want.map(f64::to_bits),
                "{name} at {confidence}: {got:?} vs {want:?}"
            );
            // The same replicates as the difference of two columns, never written
            // out in full.
            let other: Vec<f64> = (0..values.len()).map(|i| wiggle(i, 9)).collect();
            let column: Vec<f64> = values.iter().zip(&other).map(|(v, o)| v + o).collect();
            let mut diffs: Vec<f64> = column.iter().zip(&other).map(|(c, o)| c - o).collect();
            let want = percentile_interval(&mut diffs, confidence);
            let got = difference_interval(&column, &other, confidence, &mut Vec::new());
            assert_eq!(
                got.map(f64::to_bits),
                want.map(f64::to_bits),
                "{name} as differences at {confidence}: {got:?} vs {want:?}"
            );
        }
    }
    // Columns whose differences are all one value (equal systems, both 0, a
    // constant gap, -0): the interval without a selection, bit for bit, at every
    // size (the thin-tails path needs 2,048 replicates; this one does not).
    for (a, b) in [
        (vec![0.25; 10_000], vec![0.25; 10_000]),
        (vec![0.0; 10_000], vec![0.0; 10_000]),
        (vec![0.75; 10_000], vec![0.5; 10_000]),
        (vec![-0.0; 3_000], vec![0.0; 3_000]),
        (vec![0.5; 7], vec![0.125; 7]),
    ] {
        for confidence in [0.95, 0.9, 0.99] {
            let mut diffs: Vec<f64> = a.iter().zip(&b).map(|(x, y)| x - y).collect();
            let want = percentile_interval(&mut diffs, confidence);
            let got = difference_interval(&a, &b, confidence, &mut Vec::new());
            assert_eq!(
                got.map(f64::to_bits),
                want.map(f64::to_bits),
                "constant {} at {confidence}: {got:?} vs {want:?}",
                a[0] - b[0]
            );
        }
    }
    let mut with_nan: Vec<f64> = (0..4096).map(f64::from).collect();
    with_nan[17] = f64::NAN;
    let got = percentile_interval(&mut with_nan, 0.95);
    assert!(got.iter().all(|v| v.is_finite()), "{got:?}");
}

/// Pairs on the same tasks share one draw of sign patterns: each pair's Monte Carlo
/// p-value is exactly what its own test gives on that stream (the patterns are the
/// same, and a pair's flipped sum is the difference of its two columns' flipped
/// sums), for pairs with clear, unclear and no differences, and for near-equal columns
/// whose differences are summed on their own.
#[test]
fn shared_sign_flip_matches_each_pairs_own_test_on_the_same_stream() {
    let n = 70;
    let columns: Vec<Vec<f64>> = vec![
        (0..n).map(|t| 60.0 + 10.0 * wiggle(t, 1)).collect(),
        (0..n).map(|t| 58.0 + 10.0 * wiggle(t, 2)).collect(),
        (0..n).map(|t| 60.0 + 10.0 * wiggle(t, 1)).collect(), // a copy of 0
        (0..n)
            .map(|t| 60.0 + 10.0 * wiggle(t, 1) + 1e-9 * wiggle(t, 3))
            .collect(),
        (0..n).map(|t| 40.0 + 10.0 * wiggle(t, 4)).collect(),
    ];
    let mut table = Vec::new();
    for t in 0..n {
        table.extend(columns.iter().map(|c| c[t]));
    }
    let pairs = [(0, 1), (0, 2), (0, 3), (0, 4), (1, 4), (3, 1)];
    let perms = 2_000;
    let got = shared_sign_flip_p_values(
        &table,
        columns.len(),
        &pairs,
        perms,
        &mut stream_rng(4, &["g"]),
    );
    for (&(a, b), p) in pairs.iter().zip(&got) {
        let diffs: Vec<f64> = columns[a]
            .iter()
            .zip(&columns[b])
            .map(|(x, y)| x - y)
            .collect();
        let (want, _) = sign_flip_p_value(&diffs, 20, perms, &mut stream_rng(4, &["g"]));
        assert_eq!(*p, want, "pair {a}-{b}");
    }
    assert_eq!(got[1], 1.0, "identical columns");
    assert!(got[3] < 0.01, "a clear difference: {}", got[3]);
}

/// In a level, a Monte Carlo pair's p-value is its shared task set's draw: the same
/// whatever other systems (on other tasks) are in the level.
#[test]
fn pair_p_value_depends_only_on_its_shared_tasks_and_scores() {
    let options = small_options();
    let two = level(&[("a", 70.0), ("b", 68.0)], 30, 1, 4.0);
    let mut more = two.clone();
    for (task, runs) in level(&[("c", 60.0)], 25, 1, 4.0)
        .systems()
        .next()
        .unwrap()
        .1
    {
        more.extend_runs("c", task.as_str(), runs);
    }
    let p_of = |r: &LevelReport, a: &str, b: &str| {
        let pair = r.pairs.iter().find(|p| p.a == a && p.b == b).unwrap();
        assert_eq!(pair.method, Some(TestMethod::MonteCarlo));
        pair.p
    };
    let alone = analyze_level(&two, &options).unwrap();
    let with_c = analyze_level(&more, &options).unwrap();
    assert_eq!(p_of(&alone, "a", "b"), p_of(&with_c, "a", "b"));
    let diffs: Vec<f64> = {
        let (a, b) = (two.task_means("a"), two.task_means("b"));
        a.iter().map(|(t, x)| x - b[t]).collect()
    };
    let tasks: Vec<&str> = two.task_means("a").keys().copied().collect();
    let mut parts = vec!["pair-permutation"];
    parts.extend(tasks);
    let (want, _) = sign_flip_p_value(
        &diffs,
        options.exact_max_tasks,
        options.permutations,
        &mut stream_rng(options.seed, &parts),
    );
    assert_eq!(p_of(&alone, "a", "b"), Some(want));
}
