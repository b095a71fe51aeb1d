//! Shared set-up of the browser tests: the Chromium to drive, the chart libraries from
//! npm (`scripts/fetch_chart_libs.sh`), a provider over them, PNG checks and /proc.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tvir_browser::libs::LocalLibraries;
use tvir_browser::{
    Browser, BrowserConfig, PageRender, PageRequest, Resource, ResourceKind, ResourceProvider,
};

// The checkout's one skip rule (`TVIR_REQUIRE_ALL_TESTS=1` turns a skip into a failure).
#[path = "../../../../tests/common/skip.rs"]
mod skip_rule;
pub use skip_rule::skip;

pub fn pages_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/pages")
}

/// The browser to drive, or None after printing why the test is skipped.
pub fn chromium() -> Option<PathBuf> {
    let explicit = std::env::var_os("TVIR_BROWSER").map(PathBuf::from);
    match tvir_browser::find_browser(explicit.as_deref()) {
        Ok(p) => Some(p),
        Err(e) => {
            skip(&format!("no Chromium ({e})"));
            None
        }
    }
}

/// The npm chart libraries, or None after printing why the test is skipped.
pub fn libraries() -> Option<LocalLibraries> {
    let dir = std::env::var_os("TVIR_CHART_LIBS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/chart-libs")
        });
    match LocalLibraries::open(&dir) {
        Ok(l) => Some(l),
        Err(e) => {
            skip(&format!(
                "chart libraries missing (run scripts/fetch_chart_libs.sh {}): {e}",
                dir.display()
            ));
            None
        }
    }
}

/// Local libraries, except URLs containing `never-answers`, which never answer.
pub struct TestProvider {
    pub libs: LocalLibraries,
}

impl ResourceProvider for TestProvider {
    fn fetch<'a>(
        &'a self,
        url: &'a str,
        kind: ResourceKind,
    ) -> BoxFuture<'a, Result<Resource, String>> {
        if url.contains("never-answers") {
            return Box::pin(futures::future::pending());
        }
        self.libs.fetch(url, kind)
    }
}

pub fn config(exe: PathBuf) -> BrowserConfig {
    let mut cfg = BrowserConfig::new(exe);
    cfg.max_pages = 2;
    cfg.page_budget = Duration::from_secs(20);
    cfg
}

pub fn request(libs: &LocalLibraries, entry: &str) -> PageRequest {
    PageRequest {
        root: pages_dir(),
        entry: entry.to_string(),
        entry_override: None,
        resources: Arc::new(TestProvider { libs: libs.clone() }),
        probes: Vec::new(),
    }
}

pub async fn render(browser: &Browser, libs: &LocalLibraries, entry: &str) -> PageRender {
    browser.render(request(libs, entry)).await
}

/// A fixture page rendered in a browser of its own, with the live page asked what it
/// shows at each of `probes`; `text` replaces the page's own bytes when given. The
/// render must not fail.
pub async fn render_probed(
    exe: PathBuf,
    libs: &LocalLibraries,
    entry: &str,
    text: Option<String>,
    probes: Vec<usize>,
) -> PageRender {
    let browser = Browser::start(config(exe)).await.expect("browser starts");
    let mut req = request(libs, entry);
    req.entry_override = text.map(String::into_bytes);
    req.probes = probes;
    let r = browser.render(req).await;
    browser.close().await;
    assert!(r.failure.is_none(), "{:?} {:?}", r.failure, r.notes);
    r
}

/// Each probe's anchor and what the live page showed there.
pub fn slot_states(r: &PageRender) -> Vec<(usize, &str)> {
    r.slots
        .iter()
        .map(|s| (s.anchor, s.state.as_str()))
        .collect()
}

/// Decoded RGBA pixels.
pub fn pixels(png: &[u8]) -> image::RgbaImage {
    image::load_from_memory_with_format(png, image::ImageFormat::Png)
        .expect("a PNG")
        .to_rgba8()
}

/// Mean absolute difference per channel (0..255) of two PNGs of the same size.
pub fn mean_difference(a: &[u8], b: &[u8]) -> f64 {
    let (a, b) = (pixels(a), pixels(b));
    assert_eq!(a.dimensions(), b.dimensions());
    let total: u64 = a
        .as_raw()
        .iter()
        .zip(b.as_raw())
        .map(|(x, y)| (*x as i64 - *y as i64).unsigned_abs())
        .sum();
    total as f64 / a.as_raw().len() as f64
}

/// A PNG is blank when almost all its pixels have one colour.
pub fn is_blank(png: &[u8]) -> bool {
    let img = pixels(png);
    let first = *img.get_pixel(0, 0);
    let differing = img.pixels().filter(|p| **p != first).count();
    differing * 200 < (img.width() * img.height()) as usize
}

/// Processes whose process group is `pgid` (from /proc/*/stat).
pub fn group_members(pgid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in rd.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid pgrp ...; comm may contain spaces: split after ')'.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.len() > 2 && f[0] != "Z" && f[2].parse::<u32>().ok() == Some(pgid) {
            out.push(pid);
        }
    }
    out
}

/// Wait up to 10 s for the group to be empty; the survivors if not.
pub fn wait_group_gone(pgid: u32) -> Vec<u32> {
    for _ in 0..100 {
        let left = group_members(pgid);
        if left.is_empty() {
            return left;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    group_members(pgid)
}

pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
