//! The human-rating study against a real Label Studio server: `tvir rate export`
//! of the example reports, a project created with our configuration through the
//! REST API, the tasks imported, three raters' annotations posted (one cancelled,
//! one with a dimension left blank, "not applicable" for VA where a report has no
//! figure), the project exported as JSON, JSON-MIN and CSV, and `tvir agree` on
//! each export checked against a computation of our own here. The server runs with
//! local file serving on the study folder, as STUDY.md says, and every picture a
//! task shows is fetched through it. Needs Label Studio
//! (`TVIR_LABEL_STUDIO`, set by `.ci/run`, or `target/ci/label-studio`); skips
//! through the shared rule otherwise.

use crate::agree_independent::{naive, Table};
use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

fn label_studio() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TVIR_LABEL_STUDIO") {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    let p = common::repo().join("target/ci/label-studio/bin/label-studio");
    p.is_file().then_some(p)
}

/// The server, in a process group of its own, killed and reaped however the test
/// ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let pgid = self.0.id() as i32;
        // SAFETY: signals the process group this test started, nothing else.
        unsafe {
            libc::kill(-pgid, libc::SIGTERM);
        }
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(_)) = self.0.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        // SAFETY: as above.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
        let _ = self.0.wait();
    }
}

fn ls_command(bin: &Path, data: &Path) -> Command {
    let mut c = Command::new(bin);
    c.env("LABEL_STUDIO_BASE_DATA_DIR", data)
        .env("LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN", "true")
        .env("COLLECT_ANALYTICS", "false")
        .env_remove("DJANGO_DB");
    c
}

const RATERS: [(&str, &str); 3] = [
    ("rater1@study.test", "tok1rater1study"),
    ("rater2@study.test", "tok2rater2study"),
    ("rater3@study.test", "tok3rater3study"),
];

/// A rater's score of a report on a dimension: spread out, with ties, and raters
/// that partly disagree.
fn score(rater: usize, task: u64, dim: usize) -> f64 {
    let base = (task * 37 + dim as u64 * 11) % 60 + 20;
    let shift = [0i64, 7, -9][rater]
        * if (task + dim as u64).is_multiple_of(2) {
            1
        } else {
            -1
        };
    (base as i64 + shift).clamp(0, 100) as f64
}

async fn call(
    http: &reqwest::Client,
    method: reqwest::Method,
    url: String,
    token: &str,
    body: Option<Value>,
) -> Value {
    let mut req = http
        .request(method, &url)
        .header("Authorization", format!("Token {token}"));
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = req.send().await.unwrap_or_else(|e| panic!("{url}: {e}"));
    let status = resp.status();
    let text = resp.text().await.unwrap();
    assert!(status.is_success(), "{url}: {status}: {text}");
    serde_json::from_str(&text).unwrap_or(Value::String(text))
}

/// Krippendorff's alpha (ordinal) written from its pairwise definition: the mean
/// squared rank distance within reports over the one between all pairable values.
pub(crate) fn alpha_ordinal(units: &[Vec<f64>]) -> f64 {
    let units: Vec<&Vec<f64>> = units.iter().filter(|u| u.len() >= 2).collect();
    let all: Vec<f64> = units.iter().flat_map(|u| u.iter().copied()).collect();
    let n = all.len() as f64;
    let count = |v: f64| all.iter().filter(|x| **x == v).count() as f64;
    let dist = |a: f64, b: f64| {
        let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
        let between: f64 = all.iter().filter(|x| **x >= lo && **x <= hi).count() as f64;
        (between - (count(a) + count(b)) / 2.0).powi(2)
    };
    let mut d_o = 0.0;
    for u in &units {
        let m = u.len() as f64;
        for i in 0..u.len() {
            for j in 0..u.len() {
                if i != j {
                    d_o += dist(u[i], u[j]) / (m - 1.0);
                }
            }
        }
    }
    let mut d_e = 0.0;
    for i in 0..all.len() {
        for j in 0..all.len() {
            if i != j {
                d_e += dist(all[i], all[j]);
            }
        }
    }
    1.0 - (n - 1.0) * d_o / d_e
}

/// The paper's PAR between two raters: system pairs within a task both rated,
/// same preference (ties included); the mean over rater pairs that share one.
fn rater_par(by_rater: &BTreeMap<String, Table>) -> Option<f64> {
    let names: Vec<&String> = by_rater.keys().collect();
    let mut pars = Vec::new();
    for i in 0..names.len() {
        for j in i + 1..names.len() {
            let (a, b) = (&by_rater[names[i]], &by_rater[names[j]]);
            let common: Vec<&(String, String)> = a.keys().filter(|k| b.contains_key(*k)).collect();
            let (mut ag, mut n) = (0, 0);
            for x in &common {
                for y in &common {
                    if x.1 == y.1 && x.0 < y.0 {
                        n += 1;
                        let sa = (a[*x] - a[*y]).signum() * f64::from(a[*x] != a[*y]);
                        let sb = (b[*x] - b[*y]).signum() * f64::from(b[*x] != b[*y]);
                        ag += usize::from(sa == sb);
                    }
                }
            }
            if n > 0 {
                pars.push(ag as f64 / n as f64);
            }
        }
    }
    (!pars.is_empty()).then(|| pars.iter().sum::<f64>() / pars.len() as f64)
}

fn close(a: &Value, b: Option<f64>, what: &str) {
    match (a.as_f64(), b) {
        (Some(x), Some(y)) => assert!((x - y).abs() < 1e-9, "{what}: tvir {x}, here {y}"),
        (None, None) => {}
        other => panic!("{what}: {other:?}"),
    }
}

/// Every picture of every imported task, fetched through the server as the
/// rater's browser fetches it: 200, an image, the bytes of the study's file; and
/// every file of `pictures/` shown by some task.
async fn check_pictures(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    ls_tasks: &[Value],
    study: &Path,
) {
    let img = scraper::Selector::parse("img").unwrap();
    let mut shown = BTreeSet::new();
    let mut decoded = 0;
    for t in ls_tasks {
        let html = scraper::Html::parse_fragment(t["data"]["report"].as_str().unwrap());
        for e in html.select(&img) {
            let src = e.value().attr("src").unwrap_or_default();
            let rel = src
                .strip_prefix("/data/local-files/?d=")
                .unwrap_or_else(|| {
                    panic!(
                        "task {}: picture {src:?} not served by Label Studio",
                        t["id"]
                    )
                });
            let resp = http
                .get(format!("{base}{src}"))
                .header("Authorization", format!("Token {token}"))
                .send()
                .await
                .unwrap();
            let status = resp.status();
            let kind = resp
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string();
            let body = resp.bytes().await.unwrap();
            assert_eq!(status, 200, "{src}");
            assert!(kind.starts_with("image/"), "{src}: {kind}");
            let file = std::fs::read(study.join(rel)).unwrap();
            assert!(
                body.as_ref() == file.as_slice(),
                "{src}: {} bytes served, {} in the study",
                body.len(),
                file.len()
            );
            // The example holds a truncated picture on purpose (a reader sees it
            // broken too): it is passed on as it is; every other one decodes.
            if image::load_from_memory(&file).is_ok() {
                decoded += 1;
            } else {
                assert!(
                    !file.starts_with(b"\x89PNG"),
                    "{src}: a PNG that does not decode"
                );
            }
            shown.insert(rel.to_string());
        }
    }
    let files: BTreeSet<String> = std::fs::read_dir(study.join("pictures"))
        .unwrap()
        .map(|e| format!("pictures/{}", e.unwrap().file_name().to_string_lossy()))
        .collect();
    assert_eq!(shown, files);
    assert!(
        decoded >= 4 && decoded + 1 >= files.len(),
        "{decoded} of {files:?} decode"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn study_round_trip_through_a_real_label_studio() {
    let Some(bin) = label_studio() else {
        common::skip("Label Studio is not installed (set TVIR_LABEL_STUDIO or run .ci/run)");
        return;
    };
    let started = Instant::now();
    let tmp = tempfile::tempdir().unwrap();
    let (data, study) = (tmp.path().join("ls-data"), tmp.path().join("study"));
    let examples = common::examples();
    let (code, _, err) = common::cli::tvir_status(&[
        "rate".as_ref(),
        "export".as_ref(),
        "--reports".as_ref(),
        examples.as_os_str(),
        "--tasks".as_ref(),
        examples.join("tasks.json").as_os_str(),
        "--to".as_ref(),
        "label-studio".as_ref(),
        study.as_os_str(),
        "--seed".as_ref(),
        "3".as_ref(),
    ]);
    assert_eq!(code, 0, "{err}");
    let tasks: Vec<Value> =
        serde_json::from_slice(&std::fs::read(study.join("tasks.json")).unwrap()).unwrap();
    let n_tasks = tasks.len();
    assert!(n_tasks >= 4, "{n_tasks} tasks");
    for t in &tasks {
        // Blind: what the rater sees holds neither the system name nor a score.
        let shown = format!("{}{}", t["data"]["report"], t["data"]["query"]);
        let system = t["meta"]["system"].as_str().unwrap();
        assert!(!shown.contains(system), "{system} shown to the rater");
        assert!(t["meta"]["task_id"].is_string());
    }

    // Three raters (the first one owns the organisation), each with an API token.
    for (user, token) in RATERS {
        let out = ls_command(&bin, &data)
            .args(["init", "--no-browser", "--enable-legacy-api-token"])
            .args([
                "--username",
                user,
                "--password",
                "study-pass-123",
                "--user-token",
                token,
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "init {user}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // Local file serving on the study folder, as STUDY.md tells the coordinator.
    let root = std::fs::canonicalize(&study).unwrap();
    let study_md = std::fs::read_to_string(study.join("STUDY.md")).unwrap();
    for needle in [
        "LOCAL_FILES_SERVING_ENABLED=true".to_string(),
        format!("LOCAL_FILES_DOCUMENT_ROOT='{}'", root.display()),
        format!("\"path\":\"{}\"", root.join("pictures").display()),
        "/api/storages/localfiles".to_string(),
    ] {
        assert!(
            study_md.contains(&needle),
            "STUDY.md lacks {needle}: {study_md}"
        );
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let log = std::fs::File::create(tmp.path().join("server.log")).unwrap();
    let _server = Server(
        ls_command(&bin, &data)
            .env("LOCAL_FILES_SERVING_ENABLED", "true")
            .env("LOCAL_FILES_DOCUMENT_ROOT", &root)
            .args(["start", "--no-browser", "--host", "127.0.0.1", "--port"])
            .arg(port.to_string())
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .process_group(0)
            .spawn()
            .unwrap(),
    );
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::new();
    let t0 = Instant::now();
    loop {
        if let Ok(r) = http.get(format!("{base}/health")).send().await {
            if r.status().is_success() {
                break;
            }
        }
        assert!(
            t0.elapsed() < Duration::from_secs(180),
            "Label Studio did not answer: {}",
            std::fs::read_to_string(tmp.path().join("server.log")).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let owner = RATERS[0].1;
    let project: Value =
        serde_json::from_slice(&std::fs::read(study.join("project.json")).unwrap()).unwrap();
    let p = call(
        &http,
        reqwest::Method::POST,
        format!("{base}/api/projects"),
        owner,
        Some(project),
    )
    .await;
    let pid = p["id"].as_u64().unwrap();
    assert_eq!(p["maximum_annotations"], 3);
    call(
        &http,
        reqwest::Method::POST,
        format!("{base}/api/storages/localfiles"),
        owner,
        Some(json!({"project": pid, "path": root.join("pictures"), "title": "study pictures"})),
    )
    .await;
    let imported = call(
        &http,
        reqwest::Method::POST,
        format!("{base}/api/projects/{pid}/import"),
        owner,
        Some(Value::Array(tasks.clone())),
    )
    .await;
    assert_eq!(imported["task_count"].as_u64(), Some(n_tasks as u64));
    let listed = call(
        &http,
        reqwest::Method::GET,
        format!("{base}/api/tasks?project={pid}&page_size=1000"),
        owner,
        None,
    )
    .await;
    let ls_tasks = listed["tasks"].as_array().unwrap();
    assert_eq!(ls_tasks.len(), n_tasks);
    check_pictures(&http, &base, owner, ls_tasks, &study).await;

    // Expected values, kept as we post them: (system, task) per rater and dimension.
    let mut expected: BTreeMap<&str, BTreeMap<String, Table>> = BTreeMap::new();
    let mut ids = BTreeMap::new();
    for (r, (_, token)) in RATERS.iter().enumerate() {
        let who = call(
            &http,
            reqwest::Method::GET,
            format!("{base}/api/current-user/whoami"),
            token,
            None,
        )
        .await;
        ids.insert(r, who["id"].to_string());
    }
    let (mut cancelled, mut na, mut blank) = (0, 0, 0);
    for t in ls_tasks {
        let id = t["id"].as_u64().unwrap();
        let key = (
            t["meta"]["system"].as_str().unwrap().to_string(),
            t["meta"]["task_id"].as_str().unwrap().to_string(),
        );
        let figures = t["meta"]["figures"].as_u64().unwrap();
        for (r, (_, token)) in RATERS.iter().enumerate() {
            // Rater 3 cancels the first task; rater 2 leaves overall blank on the second.
            if r == 2 && id == ls_tasks[0]["id"].as_u64().unwrap() {
                call(
                    &http,
                    reqwest::Method::POST,
                    format!("{base}/api/tasks/{id}/annotations"),
                    token,
                    Some(json!({"result": [], "was_cancelled": true})),
                )
                .await;
                cancelled += 1;
                continue;
            }
            let mut result = Vec::new();
            for (d, dim) in ["ta", "va", "overall"].iter().enumerate() {
                if *dim == "va" && figures == 0 {
                    na += 1;
                    result.push(json!({"from_name": "va_na", "to_name": "report", "type": "choices",
                                       "value": {"choices": ["Not applicable: the report has no figure"]}}));
                    continue;
                }
                if *dim == "overall" && r == 1 && id == ls_tasks[1]["id"].as_u64().unwrap() {
                    blank += 1;
                    continue;
                }
                let v = score(r, id, d);
                result.push(
                    json!({"from_name": dim, "to_name": "report", "type": "number",
                                   "value": {"number": v}}),
                );
                expected
                    .entry(dim)
                    .or_default()
                    .entry(ids[&r].clone())
                    .or_default()
                    .insert(key.clone(), v);
            }
            call(
                &http,
                reqwest::Method::POST,
                format!("{base}/api/tasks/{id}/annotations"),
                token,
                Some(json!({"result": result})),
            )
            .await;
        }
    }
    // The judge: scores of our own per report.
    let mut judge_csv = String::from("system,task_id,ta,va,overall\n");
    let mut judge: BTreeMap<&str, Table> = BTreeMap::new();
    for t in ls_tasks {
        let key = (
            t["meta"]["system"].as_str().unwrap().to_string(),
            t["meta"]["task_id"].as_str().unwrap().to_string(),
        );
        let id = t["id"].as_u64().unwrap();
        let vals: Vec<f64> = (0..3)
            .map(|d| ((id * 53 + d * 29) % 70 + 15) as f64)
            .collect();
        judge_csv.push_str(&format!(
            "{},{},{},{},{}\n",
            key.0, key.1, vals[0], vals[1], vals[2]
        ));
        for (d, dim) in ["ta", "va", "overall"].iter().enumerate() {
            judge.entry(dim).or_default().insert(key.clone(), vals[d]);
        }
    }
    let judge_path = tmp.path().join("judge.csv");
    std::fs::write(&judge_path, judge_csv).unwrap();

    for (format, file) in [
        ("JSON", "export.json"),
        ("JSON_MIN", "export-min.json"),
        ("CSV", "export.csv"),
    ] {
        let resp = http
            .get(format!(
                "{base}/api/projects/{pid}/export?exportType={format}"
            ))
            .header("Authorization", format!("Token {owner}"))
            .send()
            .await
            .unwrap();
        assert!(resp.status().is_success(), "{format}: {}", resp.status());
        let path = tmp.path().join(file);
        std::fs::write(&path, resp.bytes().await.unwrap()).unwrap();

        let (code, out, err) = common::cli::tvir_status(&[
            "agree".as_ref(),
            judge_path.as_os_str(),
            path.as_os_str(),
            "--json".as_ref(),
            "--bootstrap".as_ref(),
            "200".as_ref(),
        ]);
        assert_eq!(code, 0, "{format}: {err}");
        let rep: Value = serde_json::from_str(&out).unwrap();
        let raters = &rep["raters"]["b"];
        assert_eq!(raters["raters"], 3, "{format}");
        if format == "JSON" {
            assert_eq!(raters["import"]["cancelled"], cancelled, "{format}");
        }
        assert_eq!(raters["import"]["missing"]["overall"], blank, "{format}");
        assert_eq!(
            raters["import"]["not_applicable"]["va"]
                .as_u64()
                .unwrap_or(0),
            na,
            "{format}"
        );
        for dim in ["ta", "va", "overall"] {
            let by = &expected[dim];
            // The raters' mean per report against the judge.
            let mut sums: BTreeMap<(String, String), (f64, f64)> = BTreeMap::new();
            for t in by.values() {
                for (k, v) in t {
                    let e = sums.entry(k.clone()).or_default();
                    e.0 += v;
                    e.1 += 1.0;
                }
            }
            let mean: Table = sums.into_iter().map(|(k, (s, n))| (k, s / n)).collect();
            let (par, opc, osc) = naive(&judge[dim], &mean);
            let l = &rep["levels"][dim];
            close(&l["par"], par, &format!("{format} {dim} par"));
            close(&l["opc"], opc, &format!("{format} {dim} opc"));
            close(&l["osc"], osc, &format!("{format} {dim} osc"));
            assert_eq!(l["cells"].as_u64().unwrap() as usize, mean.len());
            let ratings: usize = by.values().map(|t| t.len()).sum();
            assert_eq!(
                l["ratings"].as_u64().unwrap() as usize,
                ratings,
                "{format} {dim}"
            );
            // Among the raters.
            let mut units: BTreeMap<&(String, String), Vec<f64>> = BTreeMap::new();
            for t in by.values() {
                for (k, v) in t {
                    units.entry(k).or_default().push(*v);
                }
            }
            let units: Vec<Vec<f64>> = units.into_values().collect();
            let r = &raters["levels"][dim];
            close(
                &r["alpha"],
                Some(alpha_ordinal(&units)),
                &format!("{format} {dim} alpha"),
            );
            close(
                &r["par"]["par"],
                rater_par(by),
                &format!("{format} {dim} rater par"),
            );
            assert_eq!(r["ratings"].as_u64().unwrap() as usize, ratings);
            assert_eq!(r["reports"].as_u64().unwrap() as usize, units.len());
        }
        // The ratings CSV of the same export holds every rating.
        let (code, csv, err) =
            common::cli::tvir_status(&["rate".as_ref(), "import".as_ref(), path.as_os_str()]);
        assert_eq!(code, 0, "{err}");
        let rows = csv.lines().count() - 1;
        let rated: BTreeSet<(String, (String, String))> = expected
            .values()
            .flat_map(|by| {
                by.iter()
                    .flat_map(|(r, t)| t.keys().map(move |k| (r.clone(), k.clone())))
            })
            .collect();
        assert_eq!(rows, rated.len(), "{format}: {csv}");
    }
    println!(
        "Label Studio round trip: {n_tasks} tasks, 3 raters, 3 export formats in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
