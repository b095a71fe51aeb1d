//! Parsing speed on the largest corpus report (and the TVIR sample). The corpus is
//! read through `TVIR_CORPUS_DIR`; without it the bench says so and measures nothing.

// The checkout's one skip rule (`TVIR_REQUIRE_ALL_TESTS=1` turns a skip into a failure).
#[path = "../tests/common/skip.rs"]
mod skip_rule;

use std::path::{Path, PathBuf};

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use tvir_report::{load::read_source, parse_str};

fn corpus_reports(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(systems) = std::fs::read_dir(dir.join("reports")) else {
        return out;
    };
    for system in systems.flatten() {
        let Ok(tasks) = std::fs::read_dir(system.path()) else {
            continue;
        };
        for task in tasks.flatten() {
            for name in ["report.md", "report.html"] {
                let p = task.path().join(name);
                if p.is_file() {
                    out.push(p);
                }
            }
        }
    }
    out
}

fn bench_parse(c: &mut Criterion) {
    let Some(dir) = std::env::var_os("TVIR_CORPUS_DIR").map(PathBuf::from) else {
        skip_rule::skip("TVIR_CORPUS_DIR not set");
        return;
    };
    let mut reports = corpus_reports(&dir);
    reports.sort_by_key(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0));
    let mut chosen: Vec<PathBuf> = reports.last().cloned().into_iter().collect();
    let tvir = dir.join("reports/tvir/claude-4-5-000001/report.md");
    if tvir.is_file() && !chosen.contains(&tvir) {
        chosen.push(tvir);
    }
    let mut group = c.benchmark_group("parse");
    for path in chosen {
        let src = read_source(&path).expect("corpus report readable");
        let label = format!(
            "{} ({} KB)",
            path.parent()
                .and_then(|p| p.strip_prefix(dir.join("reports")).ok())
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            src.text.len() / 1024
        );
        group.throughput(Throughput::Bytes(src.text.len() as u64));
        group.bench_function(label, |b| {
            b.iter(|| parse_str(black_box(&src.text), src.format, &src.path, &src.root))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_parse);
criterion_main!(benches);
