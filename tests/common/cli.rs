//! The `tvir` binary as the tests run it.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output};

/// `tvir` with no judge configured, whatever the developer's shell holds (no key, no
/// base URL, no judge model, no log filter).
pub fn tvir_command() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tvir"));
    cmd.env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("TVIR_JUDGE_MODEL")
        .env_remove("EVAL_MODEL_NAME")
        .env_remove("RUST_LOG");
    cmd
}

/// `tvir ARGS` started in `cwd` (see [`tvir_command`]).
pub fn tvir_in<S: AsRef<OsStr>>(cwd: &Path, args: &[S]) -> Output {
    tvir_command()
        .current_dir(cwd)
        .args(args)
        .output()
        .expect("run tvir")
}

/// `tvir ARGS` in this process's folder: exit code (-1 when killed), stdout and
/// stderr.
pub fn tvir_status<S: AsRef<OsStr>>(args: &[S]) -> (i32, String, String) {
    let out = tvir_command().args(args).output().expect("run tvir");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `tvir eval` of the shipped example folder into `out`, offline and quiet; add
/// arguments before running it.
pub fn eval_example(out: &Path) -> Command {
    let examples = super::examples();
    let mut cmd = tvir_command();
    cmd.args(["eval", "--reports"])
        .arg(&examples)
        .arg("--tasks")
        .arg(examples.join("tasks.json"))
        .arg("--out")
        .arg(out)
        .args(["--offline", "--quiet"]);
    cmd
}

/// [`eval_example`] judged by the server at `base_url` as `model`, caching in `cache`,
/// every cited page from `tests/golden/sources.jsonl` (offline, a page missing from
/// both the cache and that file fails its units: not the report's fault).
pub fn eval_example_judged(out: &Path, cache: &Path, base_url: &str, model: &str) -> Command {
    let mut cmd = eval_example(out);
    cmd.arg("--cache")
        .arg(cache)
        .arg("--sources")
        .arg(super::repo().join("tests/golden/sources.jsonl"))
        .args(["--base-url", base_url, "--judge-model", model]);
    cmd
}

/// `tvir eval` of `reports` (tasks in `tasks`) into `out`, started in `cwd`, judged by
/// the mock judge at `base_url` as `mock-model` with its cache in `cache`: offline,
/// every cited page from `tests/golden/sources.jsonl`, vision assumed (no probe
/// call), quiet. Add arguments before running it.
pub fn eval_with_golden_sources(
    cwd: &Path,
    reports: &Path,
    tasks: &Path,
    out: &Path,
    cache: &Path,
    base_url: &str,
) -> Command {
    let mut cmd = tvir_command();
    cmd.current_dir(cwd)
        .args(["eval", "--reports"])
        .arg(reports)
        .arg("--tasks")
        .arg(tasks)
        .arg("--out")
        .arg(out)
        .args([
            "--base-url",
            base_url,
            "--judge-model",
            "mock-model",
            "--cache",
        ])
        .arg(cache)
        .args(["--offline", "--sources"])
        .arg(super::repo().join("tests/golden/sources.jsonl"))
        .args(["--assume-vision", "--quiet"]);
    cmd
}

/// [`eval_with_golden_sources`] against a fresh mock judge made from `config`, its
/// cache beside `out`, without a browser or a Serper key: the run's output and every
/// request body the mock received.
pub async fn eval_against_mock(
    config: tvir_testing::mock_judge::MockConfig,
    reports: &Path,
    tasks: &Path,
    out: &Path,
    extra: &[&str],
) -> (Output, Vec<serde_json::Value>) {
    let mock = tvir_testing::mock_judge::MockJudge::start(config).await;
    let cache = out.with_extension("cache.sqlite");
    let cwd = out.parent().unwrap();
    let mut cmd = eval_with_golden_sources(cwd, reports, tasks, out, &cache, &mock.base_url());
    cmd.env_remove("SERPER_API_KEY")
        .arg("--no-browser")
        .args(extra);
    let run = output_async(cmd).await;
    let bodies = mock.bodies();
    mock.shutdown().await;
    (run, bodies)
}

/// Runs `cmd` on a blocking thread, so the runtime serving an in-process mock judge
/// keeps answering while the child waits for it.
pub async fn output_async(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output().expect("run tvir"))
        .await
        .unwrap()
}

/// Exit code, stdout and stderr of a run, for assertion messages.
pub fn describe(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The pages of the HTML summary whose `index.html` path `tvir summarize --format
/// html` printed (`stdout`): `index.html` first, then every other page of the
/// folder (systems, levels, reports) in path order, as one text (for assertions on
/// what the summary shows anywhere); report pages' packed evidence unpacked, as
/// their script shows it.
pub fn summary_pages(stdout: &str) -> String {
    let index = Path::new(stdout.trim());
    let mut text = std::fs::read_to_string(index)
        .unwrap_or_else(|e| panic!("{}: {e} (stdout: {stdout:?})", index.display()));
    let folder = index.parent().expect("summary folder");
    let mut pages: Vec<_> = walkdir::WalkDir::new(folder)
        .min_depth(2)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "html"))
        .map(|e| e.path().to_path_buf())
        .collect();
    pages.sort();
    for p in pages {
        let page = std::fs::read_to_string(&p).unwrap();
        let shown = tvir_analysis::aggregate::packed::unpack_page(&page)
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        text.push_str(&shown);
    }
    text
}
