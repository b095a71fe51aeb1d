//! Scale bench (issue #14): `tvir eval` on a tree of SYSTEMS x TASKS reports made from
//! the corpus (`$TVIR_CORPUS_DIR`, read at run time, never copied into the repo),
//! against the in-process mock judge answering after a fixed latency.
//!
//! Every copy gets its own edit (a copy tag at the start of each paragraph and
//! caption), so no two reports are byte-identical and the cache cannot hide work;
//! images are hard links (unchanged content, as in a real study where reports differ
//! and pictures repeat). Cited pages come from a generated `--sources` file (no
//! network); the run is `--offline`.
//!
//! Reports calls, wall time against the judge bound (calls x latency / concurrency),
//! peak RSS (wait4), the fully cached re-run's time and RSS, and the stage breakdown
//! from `run.json`.
//!
//! Run: `scripts/scale_bench.sh [REPORTS]` or
//! `SCALE_REPORTS=100 SCALE_LATENCY_MS=200 SCALE_CONCURRENCY=64 cargo bench --bench scale`.
//! Also: `SCALE_WARM_RUNS` (cached re-runs, default 3, median reported; 0 for none,
//! and `SCALE_SUMMARIZE=0` skips the summaries: a 10,000-report cold run), `SCALE_KEEP`
//! (keep the temporary folder), `SCALE_WRAP` (a command the cached re-runs are started
//! under, e.g. `perf record -g -o FILE`; their RSS is then the wrapper's), `SCALE_TVIR`
//! (the `tvir` binary to run, default the one cargo built: a wheel's static musl
//! binary, say, to compare builds on the same tree), `SCALE_WRAP_COLD` (the same for
//! the cold run: `heaptrack -o FILE`, say, for where its memory goes).
//!
//! After the runs, `tvir summarize` of the cold output in every format (wall and
//! peak RSS each; for `html` the folder's first page, report pages, pictures and
//! total size); `SCALE_SUMMARY_ONLY=DIR` skips the evaluation and summarizes the
//! output folder DIR instead (a 10,000-report output, say); `SCALE_SUMMARY_COPIES=K`
//! summarizes a tree holding each system of that output K times (hard links): the
//! 1,000-report output with K = 10 is the 10,000-report summary figure.

// The checkout's one skip rule (`TVIR_REQUIRE_ALL_TESTS=1` turns a skip into a failure).
#[path = "../tests/common/skip.rs"]
mod skip_rule;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use tvir_testing::mock_judge::{MockConfig, MockJudge};

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Corpus report folders (those with a `report.md`).
fn corpus_reports(corpus: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(sources) = std::fs::read_dir(corpus.join("reports")) else {
        return out;
    };
    for s in sources.flatten() {
        for r in std::fs::read_dir(s.path()).into_iter().flatten().flatten() {
            if r.path().join("report.md").is_file() {
                out.push(r.path());
            }
        }
    }
    out.sort();
    out
}

/// The per-copy edit: a tag at the start of every paragraph line and caption, so
/// that no two copies send the judge the same text. It leaves what the parser reads
/// as citations alone: no tag in a reference list (a tag on every entry would be a
/// name every entry shares) nor before a line opening with a numeral (a numbered
/// item would read as a citation numeral after text), and the tag holds no digit.
fn edit(text: &str, tag: &str) -> String {
    let mut out = String::with_capacity(text.len() + 4096);
    let mut in_reference_list = false;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if is_heading(trimmed) {
            in_reference_list = names_reference_list(trimmed);
        }
        if in_reference_list {
            out.push_str(line);
        } else if let Some(i) = line.find("<figcaption>") {
            let at = i + "<figcaption>".len();
            out.push_str(&line[..at]);
            out.push_str(tag);
            out.push(' ');
            out.push_str(&line[at..]);
        } else if trimmed.starts_with('*') && !trimmed.starts_with("**") && trimmed.len() > 2 {
            let at = line.len() - trimmed.len() + 1;
            out.push_str(&line[..at]);
            out.push_str(tag);
            out.push(' ');
            out.push_str(&line[at..]);
        } else if trimmed.chars().next().is_some_and(char::is_alphabetic)
            && !trimmed.starts_with("http")
        {
            out.push_str(tag);
            out.push(' ');
            out.push_str(line);
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

/// A Markdown heading, or a line that is one bold phrase (a heading some systems write).
fn is_heading(line: &str) -> bool {
    let hashes = line.len() - line.trim_start_matches('#').len();
    (hashes > 0 && line[hashes..].starts_with(' '))
        || (line.len() > 4
            && line.starts_with("**")
            && line.trim_end().ends_with("**")
            && !line[2..line.trim_end().len() - 2].contains('*'))
}

fn names_reference_list(heading: &str) -> bool {
    let h = heading.to_lowercase();
    [
        "reference",
        "sources",
        "works cited",
        "bibliograph",
        "参考",
        "引用",
        "来源",
    ]
    .iter()
    .any(|w| h.contains(w))
}

/// The copy's tag: system and task with every digit as a letter (a-j).
fn copy_tag(system: usize, task: &str) -> String {
    let letters = |s: &str| -> String {
        s.chars()
            .map(|c| match c.to_digit(10) {
                Some(d) => char::from(b'a' + d as u8),
                None => c,
            })
            .collect()
    };
    format!(
        "[copy {}-{}]",
        letters(&format!("{system:02}")),
        letters(task)
    )
}

fn link_tree(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).expect("create folder");
    for e in std::fs::read_dir(src)
        .expect("read corpus folder")
        .flatten()
    {
        let to = dst.join(e.file_name());
        let ft = e.file_type().expect("file type");
        if ft.is_dir() {
            link_tree(&e.path(), &to);
        } else if e.file_name() != "report.md" && e.file_name() != "meta.json" {
            std::fs::hard_link(e.path(), &to)
                .or_else(|_| std::fs::copy(e.path(), &to).map(|_| ()))
                .expect("link image");
        }
    }
}

/// The pages a report cites, exactly as `tvir eval` reads them (the report parser
/// and the sources stage's selection), for the generated sources file: a scan of
/// the text for `http` missed addresses the parser writes differently (trailing
/// `:::::` dropped, say), whose units then failed offline.
fn cited_urls(report_dir: &Path) -> Vec<String> {
    match tvir_report::load(report_dir) {
        Ok(report) => tvir_sources::cited_urls(&report),
        Err(e) => panic!("parse {}: {e}", report_dir.display()),
    }
}

/// Writes SYSTEMS x TASKS reports; returns (reports root, sources file).
fn make_tree(corpus: &Path, root: &Path, n: usize, task_ids: &[String]) -> (PathBuf, PathBuf) {
    let reports = corpus_reports(corpus);
    assert!(!reports.is_empty(), "no reports under {}", corpus.display());
    let tasks_per_system = task_ids.len().min(100);
    let systems = n.div_ceil(tasks_per_system);
    let tree = root.join("tree");
    let mut all_urls = std::collections::BTreeSet::new();
    let mut made = 0;
    'outer: for s in 0..systems {
        for task in task_ids.iter().take(tasks_per_system) {
            if made == n {
                break 'outer;
            }
            let src = &reports[made % reports.len()];
            let dst = tree.join(format!("system-{s:02}")).join(task);
            link_tree(src, &dst);
            let text = std::fs::read_to_string(src.join("report.md")).expect("read report");
            let tag = copy_tag(s, task);
            std::fs::write(dst.join("report.md"), edit(&text, &tag)).expect("write report");
            // The copies of one corpus report differ only in their tags: its first
            // copy's citations stand for all of them.
            if made < reports.len() {
                all_urls.extend(cited_urls(&dst));
            }
            made += 1;
        }
    }
    let sources = root.join("sources.jsonl");
    let mut lines = String::new();
    for u in all_urls {
        let text = format!(
            "Generated page for {u}. It states the figures and findings that the reports \
             attribute to it, in a few plain sentences, so that the citation judges have \
             something to read. Values, dates and names are given as the report gives them."
        );
        lines.push_str(&serde_json::json!({"url": u, "text": text}).to_string());
        lines.push('\n');
    }
    std::fs::write(&sources, lines).expect("write sources file");
    (tree, sources)
}

/// Total size of the files under `dir` as on disk: a file hard-linked under several
/// names (a thumbnail shared by reports) counted once, by inode, in `seen`.
fn tree_bytes(dir: &Path, seen: &mut std::collections::HashSet<(u64, u64)>) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        match e.file_type() {
            Ok(t) if t.is_dir() => total += tree_bytes(&e.path(), seen),
            _ => {
                if let Ok(m) = e.metadata() {
                    if seen.insert((m.dev(), m.ino())) {
                        total += m.len();
                    }
                }
            }
        }
    }
    total
}

/// The bytes of an output folder by part, as on disk (hard links once): report
/// folders (the thumbnail store included), judge journal (lines and stored texts),
/// `summary.json`, other top-level files, and in all.
fn output_bytes(out: &Path) -> String {
    let (mut reports, mut journal, mut texts, mut summary, mut other) = (0, 0, 0, 0, 0);
    let mut seen = std::collections::HashSet::new();
    for e in std::fs::read_dir(out).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let path = e.path();
        if path.is_dir() {
            reports += tree_bytes(&path, &mut seen);
            continue;
        }
        let len = e.metadata().map_or(0, |m| m.len());
        match name.as_str() {
            "judge-journal.jsonl" | "judge-journal.jsonl.zst" => journal += len,
            "judge-journal.texts.jsonl" | "judge-journal.texts.jsonl.zst" => texts += len,
            "summary.json" => summary += len,
            _ => other += len,
        }
    }
    let mb = |b: u64| b as f64 / 1e6;
    format!(
        "report folders {:.1} MB, journal {:.1} MB + texts {:.1} MB, summary.json {:.2} MB, \
         other {:.2} MB; {:.1} MB in all",
        mb(reports),
        mb(journal),
        mb(texts),
        mb(summary),
        mb(other),
        mb(reports + journal + texts + summary + other)
    )
}

struct RunResult {
    wall: Duration,
    /// User + system CPU of the child (wait4), whatever the machine's load.
    cpu_secs: f64,
    peak_rss_kib: i64,
    exit: i32,
    run_json: Value,
    stdout: String,
}

/// `tvir eval ARGS --out OUT` (see [`run_tvir`]) with its `run.json`.
fn run_eval(args: &[&std::ffi::OsStr], base_url: &str, out: &Path, wrap: &[String]) -> RunResult {
    let mut all = args.to_vec();
    all.push("--out".as_ref());
    all.push(out.as_os_str());
    let mut r = run_tvir(&all, Some(base_url), wrap);
    r.run_json = std::fs::read(out.join("run.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
    r
}

// The child is reaped by `wait4` (which also gives its peak RSS), not `Child::wait`.
#[allow(clippy::zombie_processes)]
fn run_tvir(args: &[&std::ffi::OsStr], base_url: Option<&str>, wrap: &[String]) -> RunResult {
    let tvir = std::env::var_os("SCALE_TVIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_tvir")));
    let started = Instant::now();
    let mut command = match wrap.split_first() {
        Some((program, rest)) => {
            let mut c = Command::new(program);
            c.args(rest).arg(&tvir);
            c
        }
        None => Command::new(&tvir),
    };
    if let Some(url) = base_url {
        command.env("OPENAI_BASE_URL", url);
    }
    let child = command
        .args(args)
        .env("TVIR_JUDGE_MODEL", "mock-model")
        .env_remove("OPENAI_API_KEY")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("start tvir");
    let pid = child.id() as libc::pid_t;
    let mut stdout = child.stdout.expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stdout, &mut s);
        s
    });
    let mut status = 0;
    // SAFETY: zeroed rusage is a valid value; wait4 writes it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(rc, pid, "wait4 failed");
    let wall = started.elapsed();
    let stdout = reader.join().unwrap_or_default();
    let run_json = Value::Null;
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    RunResult {
        wall,
        cpu_secs: secs(usage.ru_utime) + secs(usage.ru_stime),
        peak_rss_kib: usage.ru_maxrss,
        exit: if libc::WIFEXITED(status) {
            libc::WEXITSTATUS(status)
        } else {
            -1
        },
        run_json,
        stdout,
    }
}

/// With `SCALE_SUMMARY_COPIES=K` (K > 1), an output folder holding every system
/// folder of `out` K times (`{system}-c{k}`, files hard-linked, so it costs no
/// space): the 1,000-report output as 100 systems, a 10,000-report tree to
/// summarize without a 20-minute cold run. `out` itself otherwise.
fn copied_systems(out: &Path, copies: usize, scratch: &Path) -> PathBuf {
    if copies <= 1 {
        return out.to_path_buf();
    }
    let dest = scratch.join(format!("summary-tree-x{copies}"));
    let mut systems = 0;
    for e in std::fs::read_dir(out)
        .expect("read output folder")
        .flatten()
    {
        let name = e.file_name().to_string_lossy().into_owned();
        if !e.path().is_dir() || name == "summary" || name.starts_with('.') {
            continue;
        }
        for k in 0..copies {
            link_all(&e.path(), &dest.join(format!("{name}-c{k}")));
        }
        systems += 1;
    }
    eprintln!(
        "summary tree: {} systems ({systems} x {copies}) under {}",
        systems * copies,
        dest.display()
    );
    dest
}

/// Every file of `src` hard-linked under `dst` (copied where links fail).
fn link_all(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).expect("create folder");
    for e in std::fs::read_dir(src).expect("read folder").flatten() {
        let to = dst.join(e.file_name());
        if e.file_type().expect("file type").is_dir() {
            link_all(&e.path(), &to);
        } else {
            std::fs::hard_link(e.path(), &to)
                .or_else(|_| std::fs::copy(e.path(), &to).map(|_| ()))
                .expect("link file");
        }
    }
}

/// The 1-minute load average (`/proc/loadavg`), to print beside a timing: the
/// machine is shared, so a wall time means little without it.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

/// `tvir summarize OUT` in every format: one table row each (wall, CPU, peak RSS,
/// load before and after, size).
fn summarize_all(out: &Path, tasks: &Path, scratch: &Path) {
    println!(
        "\n| `tvir summarize` of {} | wall | CPU | peak RSS | load before, after | output |",
        out.display()
    );
    println!("| --- | --- | --- | --- | --- | --- |");
    for format in ["table", "md", "csv", "json", "html"] {
        let dest = scratch.join(format!("summary.{format}"));
        let mut args: Vec<&std::ffi::OsStr> = vec![
            "summarize".as_ref(),
            out.as_os_str(),
            "--tasks".as_ref(),
            tasks.as_os_str(),
            "--format".as_ref(),
            format.as_ref(),
        ];
        let flag = if format == "html" {
            "--html-out"
        } else {
            "--output"
        };
        args.push(flag.as_ref());
        args.push(dest.as_os_str());
        let load_before = load_average();
        let r = run_tvir(&args, None, &[]);
        let load = format!("{load_before}, {}", load_average());
        let size = if format == "html" {
            let index = std::fs::metadata(dest.join("index.html")).map_or(0, |m| m.len());
            let (mut files, mut bytes, mut pictures) = (0, 0, 0);
            let mut largest = (0, PathBuf::new());
            for e in walkdir::WalkDir::new(&dest).into_iter().flatten() {
                if e.file_type().is_file() {
                    files += 1;
                    let len = e.metadata().map_or(0, |m| m.len());
                    bytes += len;
                    let picture = e.path().parent().is_some_and(|p| p.ends_with("pictures"));
                    pictures += usize::from(picture);
                    if !picture && len > largest.0 {
                        largest = (len, e.path().strip_prefix(&dest).unwrap_or(e.path()).into());
                    }
                }
            }
            format!(
                "index.html {:.2} MB; {files} files, {pictures} pictures, {:.1} MB in all; largest page {} {:.2} MB",
                index as f64 / 1e6,
                bytes as f64 / 1e6,
                largest.1.display(),
                largest.0 as f64 / 1e6
            )
        } else {
            format!(
                "{:.2} MB",
                std::fs::metadata(&dest).map_or(0, |m| m.len()) as f64 / 1e6
            )
        };
        println!(
            "| {format} | {:.2} s | {:.2} s | {} MiB | {load} | {size}{} |",
            r.wall.as_secs_f64(),
            r.cpu_secs,
            r.peak_rss_kib / 1024,
            if r.exit == 0 {
                String::new()
            } else {
                format!(" (exit {})", r.exit)
            }
        );
    }
}

fn main() {
    // `cargo bench` passes --bench; this bench takes its settings from the environment.
    let Some(corpus) = std::env::var_os("TVIR_CORPUS_DIR").map(PathBuf::from) else {
        skip_rule::skip("TVIR_CORPUS_DIR not set");
        return;
    };
    if !corpus.join("tvir-query.json").is_file() {
        skip_rule::skip(&format!("corpus not found at {}", corpus.display()));
        return;
    }
    let n = env_num("SCALE_REPORTS", 100) as usize;
    let latency = Duration::from_millis(env_num("SCALE_LATENCY_MS", 200));
    let concurrency = env_num("SCALE_CONCURRENCY", 64);
    let keep = std::env::var_os("SCALE_KEEP").is_some();
    // A command the cached re-run is started under (`perf record -g -o FILE`, say);
    // its RSS is then the wrapper's peak, not tvir's.
    let wrap: Vec<String> = std::env::var("SCALE_WRAP")
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path();
    let tasks_path = corpus.join("tvir-query.json");
    let copies = env_num("SCALE_SUMMARY_COPIES", 1) as usize;
    if let Some(out) = std::env::var_os("SCALE_SUMMARY_ONLY") {
        let out = copied_systems(Path::new(&out), copies, root);
        summarize_all(&out, &tasks_path, root);
        return;
    }
    let wrap_cold: Vec<String> = std::env::var("SCALE_WRAP_COLD")
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect();

    let tasks: Value = serde_json::from_slice(&std::fs::read(&tasks_path).expect("task file"))
        .expect("task file is JSON");
    let task_ids: Vec<String> = tasks
        .as_array()
        .expect("task list")
        .iter()
        .filter_map(|t| t["id"].as_str().map(str::to_string))
        .collect();
    let (tree, sources) = make_tree(&corpus, root, n, &task_ids);
    eprintln!("tree: {n} reports under {}", tree.display());

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let mock = rt.block_on(MockJudge::start(MockConfig {
        latency,
        keep_bodies: false,
        ..MockConfig::default()
    }));
    let cache = root.join("cache.sqlite");
    let conc = concurrency.to_string();
    let args: Vec<&std::ffi::OsStr> = vec![
        "eval".as_ref(),
        "--reports".as_ref(),
        tree.as_os_str(),
        "--tasks".as_ref(),
        tasks_path.as_os_str(),
        "--cache".as_ref(),
        cache.as_os_str(),
        "--sources".as_ref(),
        sources.as_os_str(),
        "--offline".as_ref(),
        "--quiet".as_ref(),
        "--concurrency".as_ref(),
        conc.as_ref(),
    ];
    let cold = run_eval(&args, &mock.base_url(), &root.join("out-cold"), &wrap_cold);
    let calls = mock.requests();
    // The fully cached re-run, SCALE_WARM_RUNS times (default 3; the median is
    // reported, every one listed).
    let warm_runs = env_num("SCALE_WARM_RUNS", 3) as usize;
    let mut warms: Vec<RunResult> = (0..warm_runs.max(1))
        .take_while(|_| warm_runs > 0)
        .map(|k| {
            run_eval(
                &args,
                &mock.base_url(),
                &root.join(format!("out-warm{k}")),
                &wrap,
            )
        })
        .collect();
    let warm_calls = mock.requests() - calls;
    let walls: Vec<String> = warms
        .iter()
        .map(|w| format!("{:.2} s", w.wall.as_secs_f64()))
        .collect();
    warms.sort_by_key(|w| w.wall);
    let warm = if warms.is_empty() {
        RunResult {
            wall: Duration::ZERO,
            cpu_secs: 0.0,
            peak_rss_kib: 0,
            exit: -1,
            run_json: Value::Null,
            stdout: String::new(),
        }
    } else {
        warms.swap_remove(warm_runs / 2)
    };
    let bound = calls as f64 * latency.as_secs_f64() / concurrency as f64;
    let pool = &cold.run_json["timing"]["judge_pool"];
    println!(
        "## scale bench: {n} reports, mock judge at {} ms, --concurrency {concurrency}",
        latency.as_millis()
    );
    println!("| | cold | fully cached re-run |");
    println!("| --- | --- | --- |");
    println!("| judge calls | {calls} | {warm_calls} (all re-runs) |");
    println!(
        "| wall | {:.1} s (judge bound {:.1} s, ratio {:.2}) | {:.2} s |",
        cold.wall.as_secs_f64(),
        bound,
        if bound > 0.0 {
            cold.wall.as_secs_f64() / bound
        } else {
            0.0
        },
        warm.wall.as_secs_f64()
    );
    println!(
        "| CPU (user + system) | {:.1} s ({:.3} ms a judge call) | {:.2} s |",
        cold.cpu_secs,
        if calls > 0 {
            1e3 * cold.cpu_secs / calls as f64
        } else {
            0.0
        },
        warm.cpu_secs
    );
    println!(
        "| peak RSS | {} MiB | {} MiB |",
        cold.peak_rss_kib / 1024,
        warm.peak_rss_kib / 1024
    );
    println!(
        "| judge pool | mean {:.1} / peak {} in flight of {concurrency} ({:.0} % busy) | |",
        pool["mean_in_flight"].as_f64().unwrap_or(0.0),
        pool["peak_in_flight"],
        100.0 * pool["busy_fraction"].as_f64().unwrap_or(0.0)
    );
    let figures = |r: &RunResult| {
        let f = &r.run_json["figures"];
        format!(
            "{} encoded, {} decoded; thumbnails {} written, {} decoded, {} from the store",
            f["encoded"],
            f["facts_computed"],
            f["thumbnails_written"],
            f["thumbnails_decoded"],
            f["thumbnails_reused"]
        )
    };
    println!("| figures | {} | {} |", figures(&cold), figures(&warm));
    println!("| exit status | {} | {} |", cold.exit, warm.exit);
    println!(
        "| bytes of the output | {} | {} |",
        output_bytes(&root.join("out-cold")),
        if warm_runs > 0 {
            output_bytes(&root.join("out-warm0"))
        } else {
            String::new()
        }
    );
    println!(
        "\ncached re-runs ({warm_runs}, median above): {}",
        walls.join(", ")
    );
    for (name, r) in [("cold", &cold), ("cached", &warm)] {
        if let Some(line) = r.stdout.lines().find(|l| l.contains("judge pool")) {
            println!("\n{name}: {line}");
        }
        println!(
            "{name} stages: {}",
            r.run_json["timing"]["stages_summed_over_reports"]
        );
    }
    // The mock judge is this process's only work while tvir runs: its CPU says
    // whether it could have been the bottleneck.
    // SAFETY: zeroed rusage is a valid value; getrusage writes it for this process.
    let mut own: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut own) } == 0 {
        let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        println!(
            "mock judge (bench process, tree generation included): {:.1} s CPU for {} requests",
            secs(own.ru_utime) + secs(own.ru_stime),
            mock.requests()
        );
    }
    for (name, r) in [("cold", &cold), ("cached", &warm)] {
        println!(
            "{name}: process CPU {} s, wall in run.json {} s",
            r.run_json["timing"]["process_cpu_seconds"], r.run_json["timing"]["wall_seconds"]
        );
    }
    if env_num("SCALE_SUMMARIZE", 1) != 0 {
        let out = copied_systems(&root.join("out-cold"), copies, root);
        summarize_all(&out, &tasks_path, root);
    }
    if keep {
        let kept = dir.keep();
        eprintln!("kept: {}", kept.display());
    }
    rt.block_on(mock.shutdown());
}
