//! No Chromium process outlives the browser: after close, and when the process that
//! started it panics or aborts (checked in /proc by process group).

use crate::common;

use std::process::Command;

use common::*;
use tvir_browser::{find_browser, Browser, BrowserConfig};

#[test]
fn find_browser_honours_an_explicit_path_and_names_the_remedy() {
    let err = find_browser(Some(std::path::Path::new("/nonexistent/chromium"))).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("/nonexistent/chromium") && msg.contains("--browser"),
        "{msg}"
    );
    assert!(msg.contains("install Chromium"), "{msg}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_leaves_no_process() {
    let Some(exe) = chromium() else { return };
    let version = tvir_browser::browser_version(&exe).expect("--version");
    assert!(version.chars().any(|c| c.is_ascii_digit()), "{version}");
    let browser = Browser::start(BrowserConfig::new(exe))
        .await
        .expect("browser starts");
    let pgid = browser.pid();
    assert!(!group_members(pgid).is_empty());
    browser.close().await;
    assert_eq!(
        wait_group_gone(pgid),
        Vec::<u32>::new(),
        "Chromium processes left after close"
    );
}

/// Run in a child process by the tests below (does nothing in a normal run).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_starts_a_browser_then_dies() {
    let Ok(how) = std::env::var("TVIR_BROWSER_CHILD") else {
        return;
    };
    let exe = find_browser(
        std::env::var_os("TVIR_BROWSER")
            .map(std::path::PathBuf::from)
            .as_deref(),
    )
    .unwrap();
    let browser = Browser::start(BrowserConfig::new(exe)).await.unwrap();
    println!("CHROMIUM_PGID={}", browser.pid());
    use std::io::Write;
    std::io::stdout().flush().unwrap();
    match how.as_str() {
        "abort" => std::process::abort(),
        _ => panic!("deliberate panic with a running browser"),
    }
}

fn child_leaves_no_process(how: &str) {
    if chromium().is_none() {
        return;
    }
    // The test's name in this binary: its module path without the crate's name
    // (`process::child_starts_a_browser_then_dies`).
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    let name = format!("{module}::child_starts_a_browser_then_dies");
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", &name, "--nocapture", "--test-threads=1"])
        .env("TVIR_BROWSER_CHILD", how)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        !out.status.success(),
        "the child was meant to die: {stdout}"
    );
    let pgid: u32 = stdout
        .lines()
        .find_map(|l| {
            l.split_once("CHROMIUM_PGID=")
                .map(|(_, p)| p.trim().parse().unwrap())
        })
        .unwrap_or_else(|| {
            panic!(
                "child printed no pgid: {stdout} {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    assert_eq!(
        wait_group_gone(pgid),
        Vec::<u32>::new(),
        "Chromium left behind after a {how}"
    );
}

#[test]
fn a_panic_leaves_no_process() {
    child_leaves_no_process("panic");
}

#[test]
fn an_abort_leaves_no_process() {
    child_leaves_no_process("abort");
}
