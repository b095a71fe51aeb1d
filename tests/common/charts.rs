//! One report through `tvir eval --offline` against the mock judge, for the chart tests
//! (`tests/charts_render.rs`): a temporary benchmark folder (`reports/sysA/<task>`,
//! `tasks.json`, `sources.jsonl`, written by the test), a render cache seeded from the
//! npm chart libraries with `tvir cache put` (as an offline user does), the mock judge,
//! and each run's `report.json`.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use tvir_testing::mock_judge::{MockConfig, MockJudge};

use super::cli::{describe, output_async, tvir_command};

pub struct ChartRun {
    pub dir: tempfile::TempDir,
    /// The render and fetch cache every run of this benchmark shares.
    pub cache: PathBuf,
    pub mock: MockJudge,
    task: String,
}

impl ChartRun {
    /// A benchmark folder written by `write` (given the folder; the report goes under
    /// `reports/sysA/<task>`), an empty cache and a started mock judge.
    pub async fn new(task: &str, write: impl FnOnce(&Path)) -> ChartRun {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path());
        ChartRun {
            cache: dir.path().join("cache.sqlite"),
            mock: MockJudge::start(MockConfig::default()).await,
            task: task.to_string(),
            dir,
        }
    }

    /// The report's folder.
    pub fn report_dir(&self) -> PathBuf {
        self.dir.path().join("reports/sysA").join(&self.task)
    }

    /// Write `text` to `rel` in the report's folder (folders made).
    pub fn write(&self, rel: &str, text: &str) {
        let path = self.report_dir().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// Put each of `urls` that the manifest of `libs` lists into the cache.
    pub fn seed(&self, libs: &Path, urls: &[&str]) {
        let manifest = std::fs::read_to_string(libs.join("manifest.tsv")).unwrap();
        for (url, file) in manifest.lines().filter_map(|l| l.split_once('\t')) {
            if urls.contains(&url) {
                self.put(url, &libs.join(file));
            }
        }
    }

    /// `tvir cache put URL FILE` into the cache.
    pub fn put(&self, url: &str, file: &Path) {
        let out = tvir_command()
            .args(["cache", "put", url])
            .arg(file)
            .arg("--cache")
            .arg(&self.cache)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", describe(&out));
    }

    /// `tvir eval` of the benchmark into `<dir>/<out>`, offline, judged by the mock.
    pub fn command(&self, out: &str, extra: &[&str]) -> Command {
        let dir = self.dir.path();
        let mut cmd = tvir_command();
        cmd.env_remove("TVIR_BROWSER")
            .args(["eval", "--reports"])
            .arg(dir.join("reports"))
            .arg("--tasks")
            .arg(dir.join("tasks.json"))
            .arg("--out")
            .arg(dir.join(out))
            .args([
                "--base-url",
                &self.mock.base_url(),
                "--judge-model",
                "mock-model",
                "--cache",
            ])
            .arg(&self.cache)
            .args(["--offline", "--sources"])
            .arg(dir.join("sources.jsonl"))
            .args(["--assume-vision", "--quiet"])
            .args(extra);
        cmd
    }

    /// Run [`Self::command`]; the run must end (exit 0, or 1 for failed units). Its
    /// stdout and the report's `report.json`.
    pub async fn eval(&self, out: &str, extra: &[&str]) -> (String, Value) {
        let run = output_async(self.command(out, extra)).await;
        assert!(
            run.status.code().is_some_and(|c| c <= 1),
            "{}",
            describe(&run)
        );
        let path = self
            .dir
            .path()
            .join(out)
            .join("sysA")
            .join(&self.task)
            .join("mock-model/report.json");
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        (
            String::from_utf8_lossy(&run.stdout).into_owned(),
            serde_json::from_str(&text).unwrap(),
        )
    }

    /// The folder of a run's outputs for the report.
    pub fn out_dir(&self, out: &str) -> PathBuf {
        self.dir
            .path()
            .join(out)
            .join("sysA")
            .join(&self.task)
            .join("mock-model")
    }
}

/// The units of `metric` in a `report.json`.
pub fn units<'a>(record: &'a Value, metric: &str) -> Vec<&'a Value> {
    record["units"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["metric"] == metric)
        .collect()
}

/// The chart libraries: `TVIR_CHART_LIBS`, else `chart-libs` in the target folder.
pub fn chart_libs() -> Option<PathBuf> {
    let dir = std::env::var_os("TVIR_CHART_LIBS")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("CARGO_TARGET_DIR").map(|t| PathBuf::from(t).join("chart-libs"))
        })
        .unwrap_or_else(|| super::repo().join("target/chart-libs"));
    dir.join("manifest.tsv").is_file().then_some(dir)
}

pub fn chromium() -> Option<PathBuf> {
    tvir_browser::find_browser(
        std::env::var_os("TVIR_BROWSER")
            .map(PathBuf::from)
            .as_deref(),
    )
    .ok()
}

/// The chart libraries when Chromium and the libraries are both here; else says
/// which is missing (`skipped: …`) and gives nothing.
pub fn browser_and_libs() -> Option<PathBuf> {
    if chromium().is_none() {
        super::skip("no Chromium");
        return None;
    }
    let libs = chart_libs();
    if libs.is_none() {
        super::skip(
            "chart libraries missing (run scripts/fetch_chart_libs.sh and set TVIR_CHART_LIBS)",
        );
    }
    libs
}
