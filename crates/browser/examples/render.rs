//! Render pages in headless Chromium and write each chart found: `<page>-<n>.png` and
//! `<page>-<n>.json` (library, selector, frame, size, chart data), plus `<page>.json`
//! with the requests, notes and failure.
//!
//! ```text
//! cargo run -p tvir-browser --example render -- --out DIR [--libs DIR] [--browser PATH] PAGE.html...
//! ```
//! Scripts, styles and fonts are served from local npm copies (`--libs`, default
//! TVIR_CHART_LIBS or target/chart-libs, from scripts/fetch_chart_libs.sh); every other
//! network request is refused. Each page's folder is its report folder.

use std::path::PathBuf;
use std::sync::Arc;

use tvir_browser::libs::LocalLibraries;
use tvir_browser::{find_browser, Browser, BrowserConfig, PageRequest};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut args = std::env::args().skip(1);
    let mut out: Option<PathBuf> = None;
    let mut libs_dir: Option<PathBuf> = std::env::var_os("TVIR_CHART_LIBS").map(PathBuf::from);
    let mut browser_path: Option<PathBuf> = std::env::var_os("TVIR_BROWSER").map(PathBuf::from);
    let mut pages = Vec::new();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--out" => out = args.next().map(PathBuf::from),
            "--libs" => libs_dir = args.next().map(PathBuf::from),
            "--browser" => browser_path = args.next().map(PathBuf::from),
            _ => pages.push(PathBuf::from(a)),
        }
    }
    let (Some(out), false) = (out, pages.is_empty()) else {
        eprintln!("usage: render --out DIR [--libs DIR] [--browser PATH] PAGE.html...");
        std::process::exit(2);
    };
    let libs_dir = libs_dir.unwrap_or_else(|| PathBuf::from("target/chart-libs"));
    let libs = match LocalLibraries::open(&libs_dir) {
        Ok(l) => l,
        Err(e) => {
            eprintln!(
                "{e}\nrun scripts/fetch_chart_libs.sh {}",
                libs_dir.display()
            );
            std::process::exit(1);
        }
    };
    let exe = find_browser(browser_path.as_deref()).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1)
    });
    std::fs::create_dir_all(&out).expect("output folder");
    let browser = Browser::start(BrowserConfig::new(exe))
        .await
        .unwrap_or_else(|e| {
            eprintln!("{e}");
            std::process::exit(1)
        });
    let provider = Arc::new(libs);
    let jobs = pages.iter().map(|page| {
        let provider = provider.clone();
        let browser = &browser;
        let out = out.clone();
        async move {
            let abs = std::fs::canonicalize(page).unwrap_or_else(|_| page.clone());
            let root = abs.parent().map(|p| p.to_path_buf()).unwrap_or_default();
            let entry = abs.file_name().map(|f| f.to_string_lossy().to_string()).unwrap_or_default();
            let stem = entry.trim_end_matches(".html").trim_end_matches(".htm").to_string();
            let t = std::time::Instant::now();
            let r = browser
                .render(PageRequest { root, entry: entry.clone(), entry_override: None, resources: provider, probes: Vec::new() })
                .await;
            let ms = t.elapsed().as_millis();
            for (i, c) in r.charts.iter().enumerate() {
                std::fs::write(out.join(format!("{stem}-{i}.png")), &c.png).expect("write png");
                let meta = serde_json::json!({
                    "library": c.library, "selector": c.selector, "frame": c.frame, "anchor": c.anchor,
                    "width": c.width, "height": c.height, "data": c.data,
                });
                std::fs::write(out.join(format!("{stem}-{i}.json")), serde_json::to_string_pretty(&meta).unwrap())
                    .expect("write json");
            }
            let summary = serde_json::json!({
                "page": page.display().to_string(), "ms": ms, "charts": r.charts.len(),
                "failure": r.failure, "notes": r.notes, "requests": r.requests,
            });
            std::fs::write(out.join(format!("{stem}.json")), serde_json::to_string_pretty(&summary).unwrap())
                .expect("write summary");
            println!(
                "{}\t{} charts\t{} ms{}",
                page.display(),
                r.charts.len(),
                ms,
                r.failure.map(|f| format!("\tFAILED: {f}")).unwrap_or_default()
            );
        }
    });
    futures::future::join_all(jobs).await;
    browser.close().await;
}
