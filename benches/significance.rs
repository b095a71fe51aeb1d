//! Cost of the significance analysis of `tvir summarize` at the benchmark's size:
//! 9 systems x 100 tasks x 3 judge runs, default options (10,000 bootstrap
//! resamples; 10,000 Monte Carlo sign patterns, since 100 shared tasks is above the
//! exact limit).
//!
//! - one level: 9 system intervals, 36 paired intervals and 36 permutation tests,
//!   Holm, groups and the judge-noise decomposition (target: under a second);
//! - a whole leaderboard from records, as `summarize` runs it: Overall, TA, VA and
//!   the 12 metrics, 15 levels spread over the available cores.

use criterion::{criterion_group, criterion_main, Criterion};
use tvir_analysis::aggregate::{summarize, LoadedRecord};
use tvir_analysis::significance::{analyze_level, LevelScores, Options};

#[path = "common/records.rs"]
mod records;
use records::{loaded_record, RecordScores};

/// Cheap deterministic spread on 0-100: system offset, task effect, judge noise.
fn score(system: u64, task: u64, run: u64, salt: u64) -> f64 {
    let task_effect = ((task * 37 + 11 + salt) % 41) as f64 - 20.0;
    let noise = ((system * 131 + task * 17 + run * 53 + salt * 7) % 13) as f64 - 6.0;
    (40.0 + 2.0 * system as f64 + task_effect + noise).clamp(0.0, 100.0)
}

fn level() -> LevelScores {
    let mut scores = LevelScores::new();
    for system in 0..9u64 {
        for task in 0..100u64 {
            for run in 0..3u64 {
                scores.push(
                    format!("system{system}"),
                    format!("task{task:03}"),
                    score(system, task, run, 0),
                );
            }
        }
    }
    scores
}

/// The same systems as `eval` records (fractions), with TA, VA, Overall and all 12
/// metrics.
fn records() -> Vec<LoadedRecord> {
    let mut out = Vec::new();
    for system in 0..9u64 {
        for task in 0..100u64 {
            for run in 1..=3u64 {
                let ta = score(system, task, run, 1) / 100.0;
                let va = score(system, task, run, 2) / 100.0;
                let scores = RecordScores {
                    metric: Box::new(move |k| score(system, task, run, k as u64 + 3) / 100.0),
                    ta,
                    va,
                    overall: (ta + va) / 2.0,
                    effective_citations: 1.0,
                };
                out.push(loaded_record(
                    format!("system{system}"),
                    format!("{task:06}"),
                    run as u32,
                    scores,
                ));
            }
        }
    }
    out
}

fn bench(c: &mut Criterion) {
    let scores = level();
    let options = Options::default();
    let report = analyze_level(&scores, &options).expect("valid input");
    assert_eq!(report.pairs.len(), 36);
    assert!(report.judge_noise.is_some());
    c.bench_function("analyze_level 9 systems x 100 tasks x 3 runs", |b| {
        b.iter(|| analyze_level(std::hint::black_box(&scores), &options).unwrap())
    });

    let records = records();
    let base = summarize("out", &records, &[], &Default::default(), None);
    c.bench_function(
        "add_significance 2700 records, 15 levels (Overall, TA, VA, 12 metrics)",
        |b| {
            b.iter(|| {
                let mut summary = base.clone();
                tvir_analysis::aggregate::add_significance(&mut summary, &records, &options)
                    .unwrap();
                assert_eq!(summary.judges[0].significance.as_ref().unwrap().len(), 15);
                summary
            })
        },
    );
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = bench
}
criterion_main!(benches);
