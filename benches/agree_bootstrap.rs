//! Cost of `tvir agree` on a benchmark-sized table: 10 systems x 100 tasks, one
//! level, 1000 bootstrap replicates (the default), and of the pure `summarize`
//! step on 900 reports x 3 runs.

use std::collections::BTreeMap;

use criterion::{criterion_group, criterion_main, Criterion};
use tvir_analysis::aggregate::{summarize, LoadedRecord};
use tvir_analysis::agree::{agree_level, AgreeOptions, Cell, Scores};

#[path = "common/records.rs"]
mod records;
use records::{loaded_record, RecordScores};

/// 10 systems x 90 tasks x 3 runs of records with all 12 metrics.
fn records() -> Vec<LoadedRecord> {
    let mut out = Vec::new();
    for sys in 0..10 {
        for task in 0..90 {
            for run in 1..=3u32 {
                let v = ((sys * 7 + task * 3 + run as usize) % 20) as f64 / 20.0;
                let scores = RecordScores {
                    metric: Box::new(move |_| v),
                    ta: v,
                    va: 1.0 - v,
                    overall: 0.5,
                    effective_citations: v * 10.0,
                };
                let mut loaded =
                    loaded_record(format!("system{sys}"), format!("{task:06}"), run, scores);
                let record = &mut loaded.record;
                record.language = Some(if task % 2 == 0 { "zh" } else { "en" }.into());
                record.complexity = Some(["low", "medium", "high"][task % 3].into());
                record.domain = Some(format!("domain{}", task % 9));
                out.push(loaded);
            }
        }
    }
    out
}

fn table(seed: u64) -> Scores {
    let mut s = seed;
    let mut next = || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (s >> 33) as f64 / (1u64 << 31) as f64
    };
    let mut out = BTreeMap::new();
    for sys in 0..10 {
        for task in 0..100 {
            out.insert(
                Cell::new(format!("system{sys}"), format!("{task:06}")),
                (next() * 20.0).round() / 20.0,
            );
        }
    }
    out
}

fn bench(c: &mut Criterion) {
    let a = table(1);
    let b = table(2);
    let opts = AgreeOptions::default();
    c.bench_function("agree_level 10x100, 1000 bootstrap", |bch| {
        bch.iter(|| agree_level(&a, &b, &opts))
    });
    let no_boot = AgreeOptions {
        bootstrap: 0,
        ..Default::default()
    };
    c.bench_function("agree_level 10x100, point estimates only", |bch| {
        bch.iter(|| agree_level(&a, &b, &no_boot))
    });
    let recs = records();
    let tasks = BTreeMap::new();
    c.bench_function("summarize 2700 records (900 reports x 3 runs)", |bch| {
        bch.iter(|| summarize("out", &recs, &[], &tasks, None))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
