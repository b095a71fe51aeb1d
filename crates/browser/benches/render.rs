//! Browser cost on this machine: start + close, and a cold render (fresh browser
//! context, libraries served from local npm copies) of a 3-chart and a 1-chart page, so
//! the per-page and per-chart costs separate; peak RSS of Chromium's process group and
//! of this process are printed from /proc. Needs Chromium and the npm chart libraries
//! (prints `skipped: …` otherwise).
//!
//! `cargo bench -p tvir-browser --bench render`

// The checkout's one skip rule (`TVIR_REQUIRE_ALL_TESTS=1` turns a skip into a failure).
#[path = "../../../tests/common/skip.rs"]
mod skip_rule;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use tvir_browser::libs::LocalLibraries;
use tvir_browser::{find_browser, Browser, BrowserConfig, PageRequest};

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn group_rss_kib(pgid: u32) -> u64 {
    let mut total = 0;
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        if rest
            .split_whitespace()
            .nth(2)
            .and_then(|p| p.parse::<u32>().ok())
            == Some(pgid)
        {
            total += rss_kib(pid);
        }
    }
    total
}

fn bench(c: &mut Criterion) {
    let exe = match find_browser(
        std::env::var_os("TVIR_BROWSER")
            .map(PathBuf::from)
            .as_deref(),
    ) {
        Ok(e) => e,
        Err(e) => return skip_rule::skip(&format!("no Chromium ({e})")),
    };
    let libs_dir = std::env::var_os("TVIR_CHART_LIBS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/chart-libs")
        });
    let libs = match LocalLibraries::open(&libs_dir) {
        Ok(l) => Arc::new(l),
        Err(e) => {
            return skip_rule::skip(&format!(
                "chart libraries missing (run scripts/fetch_chart_libs.sh): {e}"
            ))
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let pages = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/pages");
    let request = |entry: &str| PageRequest {
        root: pages.clone(),
        entry: entry.into(),
        entry_override: None,
        resources: libs.clone(),
        probes: Vec::new(),
    };

    let mut g = c.benchmark_group("browser");
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    g.bench_function("start_close", |b| {
        b.iter(|| {
            rt.block_on(async {
                Browser::start(BrowserConfig::new(exe.clone()))
                    .await
                    .unwrap()
                    .close()
                    .await
            })
        })
    });
    let browser = rt
        .block_on(Browser::start(BrowserConfig::new(exe.clone())))
        .unwrap();
    let pgid = browser.pid();
    let mut peak = 0;
    for (name, entry) in [
        ("render_3_charts", "chartjs-report.html"),
        ("render_1_chart", "apex-report.html"),
    ] {
        g.bench_function(name, |b| {
            b.iter(|| {
                let r = rt.block_on(browser.render(request(entry)));
                assert!(
                    r.failure.is_none() && !r.charts.is_empty(),
                    "{:?}",
                    r.failure
                );
                peak = peak.max(group_rss_kib(pgid));
            })
        });
    }
    g.finish();
    // One timed pass per page for the per-page / per-chart split printed with the RSS.
    for entry in [
        "chartjs-report.html",
        "echarts-report.html",
        "plotly-report.html",
        "d3-report.html",
        "apex-report.html",
    ] {
        let t = Instant::now();
        let r = rt.block_on(browser.render(request(entry)));
        peak = peak.max(group_rss_kib(pgid));
        println!(
            "cold render {entry}: {} charts in {:.2} s",
            r.charts.len(),
            t.elapsed().as_secs_f64()
        );
    }
    println!(
        "peak RSS: Chromium process group {} MiB, this process {} MiB",
        peak / 1024,
        rss_kib(std::process::id()) / 1024
    );
    rt.block_on(browser.close());
}

criterion_group!(benches, bench);
criterion_main!(benches);
