//! Cost of `tvir agree` on a benchmark-sized table: 10 systems x 100 tasks, one
//! level, 1000 bootstrap replicates (the default), and of the pure `summarize`
//! step on 900 reports x 3 runs.

use std::collections::BTreeMap;

use criterion::{criterion_group, criterion_main, Criterion};
use tvir_analysis::aggregate::{summarize, LoadedRecord};
use tvir_analysis::agree::{agree_level, AgreeOptions, Cell, Scores};
use tvir_engine::record::{
    MetricRecord, MetricStatus, ReportRecord, StructuralErrorCounts, UsageRecord, METRIC_NAMES,
};

/// 10 systems x 90 tasks x 3 runs of records with all 12 metrics.
fn records() -> Vec<LoadedRecord> {
    let mut out = Vec::new();
    for sys in 0..10 {
        for task in 0..90 {
            for run in 1..=3u32 {
                let v = ((sys * 7 + task * 3 + run as usize) % 20) as f64 / 20.0;
                let metrics = METRIC_NAMES
                    .iter()
                    .map(|m| {
                        (
                            m.to_string(),
                            MetricRecord {
                                score: Some(v),
                                status: MetricStatus::Evaluated,
                                item_count: 1,
                                scored_item_count: 1,
                                failed_item_count: 0,
                                skipped_item_count: 0,
                                coverage: 1.0,
                                note: None,
                            },
                        )
                    })
                    .collect();
                let record = ReportRecord {
                    system: format!("system{sys}"),
                    task_id: format!("{task:06}"),
                    judge_model: format!("judge-run{run}"),
                    run,
                    language: Some(if task % 2 == 0 { "zh" } else { "en" }.into()),
                    complexity: Some(["low", "medium", "high"][task % 3].into()),
                    domain: Some(format!("domain{}", task % 9)),
                    metrics,
                    ta: Some(v),
                    va: Some(1.0 - v),
                    overall: Some(0.5),
                    effective_citations: Some(v * 10.0),
                    structural_error_counts: StructuralErrorCounts::default(),
                    structural_errors: Default::default(),
                    units: Vec::new(),
                    usage: UsageRecord::default(),
                    n_images: 1,
                    n_charts: 1,
                    n_figures: 2,
                    extraction: None,
                    error: None,
                };
                out.push(LoadedRecord {
                    path: Default::default(),
                    system: record.system.clone(),
                    task_id: record.task_id.clone(),
                    judge_model: "judge".into(),
                    run,
                    record,
                });
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
