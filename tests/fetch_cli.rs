//! `tvir fetch` end to end: the binary against reports citing a local server.

use std::path::Path;
use std::process::Command;

use tvir_testing::page_server::PageServer;

fn write_report(root: &Path, system: &str, task: &str, body: &str) {
    let dir = root.join(system).join(task);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("report.md"), body).unwrap();
}

fn run_fetch(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tvir"))
        .arg("fetch")
        .args(args)
        .output()
        .expect("run tvir");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn refuses_private_citations_and_fetches_with_allow_private() {
    let server = PageServer::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("reports");
    let cache = dir.path().join("cache.sqlite");
    let port = server.addr().port();
    // sysA cites only addresses the rules must refuse; sysB cites the local server.
    write_report(
        &root,
        "sysA",
        "000001",
        &format!(
            "# Solar report\n\nCapacity reached 835 MW in 2024 [1]. The grid needs upgrades [2]. \
             Older data exists [3].\n\n## References\n\n\
             [1] http://127.0.0.1:{port}/article.html\n\
             [2] http://169.254.169.254/latest/meta-data/\n\
             [3] http://10.0.0.7/internal\n"
        ),
    );
    write_report(
        &root,
        "sysB",
        "000001",
        &format!(
            "# Solar report\n\nCapacity reached 835 MW in 2024 [1]. Older data exists [2].\n\n\
             ## References\n\n\
             [1] http://127.0.0.1:{port}/article.html\n\
             [2] http://127.0.0.1:{port}/missing\n\
             [3] http://127.0.0.1:{port}/plain.txt\n"
        ),
    );
    let root_s = root.to_str().unwrap().to_string();
    let cache_s = cache.to_str().unwrap().to_string();
    let (code, stdout, stderr) = tokio::task::spawn_blocking({
        let (root_s, cache_s) = (root_s.clone(), cache_s.clone());
        move || {
            run_fetch(&[
                "--reports",
                &root_s,
                "--system",
                "sysA",
                "--cache",
                &cache_s,
                "--json",
            ])
        }
    })
    .await
    .unwrap();
    let summary: serde_json::Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"));
    assert_eq!(summary["urls"], 3, "{summary}");
    assert_eq!(summary["by_status"]["refused"], 3, "{summary}");
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(server.hits(), 0, "a refused citation reached the server");

    let (code, stdout, stderr) = tokio::task::spawn_blocking(move || {
        run_fetch(&[
            "--reports",
            &root_s,
            "--system",
            "sysB",
            "--cache",
            &cache_s,
            "--allow-private",
            "--fetch-attempts",
            "1",
        ])
    })
    .await
    .unwrap();
    assert!(
        stdout.contains("Retrieval success rate: 50.00 % (1 / 2)"),
        "{stdout}\n{stderr}"
    );
    assert!(stdout.contains("HTTP 404 Not Found"), "{stdout}");
    assert!(stdout.contains("Not retrieved, by reason:"), "{stdout}");
    assert_eq!(code, 1, "{stdout}");
    assert_eq!(server.hits_for("/article.html"), 1);
    // Uncited reference [3] is not fetched.
    assert_eq!(server.hits_for("/plain.txt"), 0);
}

#[test]
fn bad_usage_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    let (code, _, stderr) = run_fetch(&["--reports", missing.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(stderr.contains("no such file or folder"), "{stderr}");
    let (code, _, stderr) = run_fetch(&["--reports", dir.path().to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(stderr.contains("no report.md or report.html"), "{stderr}");
    write_report(dir.path(), "s", "1", "# r\n");
    let (code, _, stderr) = run_fetch(&[
        "--reports",
        dir.path().to_str().unwrap(),
        "--cache",
        dir.path().join("c.sqlite").to_str().unwrap(),
        "--sources",
        dir.path().join("missing.jsonl").to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(stderr.contains("missing.jsonl"), "{stderr}");
}
