//! `tvir fetch --reports ROOT [--system S]... [--task ID]...`: prefetch every cited
//! source page into the cache and print the retrieval success rate, with failures
//! grouped by reason.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use futures::StreamExt;
use serde::Serialize;

use tvir_sources::{
    cited_urls, normalize_url, reason_group, remote_image_urls, FetchOptions, Fetcher, PageOrigin,
    PageStatus, PageTally,
};
use tvir_store::Store;

#[derive(Debug, clap::Args)]
pub struct FetchArgs {
    /// Reports root laid out as ROOT/{system}/{task_id}/report.md (or report.html), or
    /// a single report folder or file.
    #[arg(long, value_name = "ROOT")]
    pub reports: PathBuf,
    /// Only these systems (repeatable).
    #[arg(long = "system", value_name = "S")]
    pub systems: Vec<String>,
    /// Only these task ids (repeatable).
    #[arg(long = "task", value_name = "ID")]
    pub tasks: Vec<String>,
    /// Page cache, a SQLite file shared with the judge cache (default: the user's
    /// cache directory).
    #[arg(long, value_name = "PATH")]
    pub cache: Option<PathBuf>,
    /// Also download remote figure images (checks reachability and size limits;
    /// images are not cached).
    #[arg(long)]
    pub images: bool,
    /// Print the summary as one JSON object.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub fetch: FetchOptions,
}

/// One report found under the root.
#[derive(Debug, Clone, PartialEq)]
struct ReportEntry {
    system: String,
    task: String,
    path: PathBuf,
}

#[derive(Debug, Serialize)]
struct FailureGroup {
    status: PageStatus,
    reason: String,
    count: usize,
    examples: Vec<String>,
}

#[derive(Debug, Serialize)]
struct ImageSummary {
    urls: usize,
    ok: usize,
    failed: Vec<(String, String)>,
}

#[derive(Debug, Serialize)]
struct Summary {
    reports: usize,
    unreadable_reports: Vec<String>,
    urls: usize,
    by_status: BTreeMap<&'static str, usize>,
    by_origin: BTreeMap<String, usize>,
    /// Share of unique cited URLs whose text was obtained; null with no URLs.
    success_rate: Option<f64>,
    failures: Vec<FailureGroup>,
    images: Option<ImageSummary>,
    /// Pages read / not read by reason, as one line (also printed by `tvir eval`).
    pages_line: String,
    /// "no network: N of N cited pages could not be reached (...)" when no server
    /// answered any fetch of this run.
    no_network: Option<String>,
}

pub fn run(args: FetchArgs) -> anyhow::Result<ExitCode> {
    let entries = match discover(&args.reports, &args.systems, &args.tasks) {
        Ok(entries) => entries,
        Err(err) => {
            eprintln!("error: {err:#}");
            return Ok(ExitCode::from(2));
        }
    };
    if entries.is_empty() {
        eprintln!(
            "error: no report.md or report.html found under {} (with the given --system/--task filters)",
            args.reports.display()
        );
        return Ok(ExitCode::from(2));
    }
    let cache_path = match &args.cache {
        Some(path) => path.clone(),
        None => default_cache_path()?,
    };
    let store = Store::open(&cache_path)
        .with_context(|| format!("opening cache {}", cache_path.display()))?;
    let fetcher = match Fetcher::new(args.fetch.to_config(), Some(store)) {
        Ok(fetcher) => fetcher,
        Err(err) => {
            eprintln!("error: {err}");
            return Ok(ExitCode::from(2));
        }
    };
    let urls = collect_urls(&entries, args.images);
    let (outcomes, image_results) = fetch_all(&fetcher, &urls.pages, &urls.images)?;
    let summary = summarize(
        entries.len(),
        urls.unreadable,
        &outcomes,
        args.images.then_some(image_results.as_slice()),
    );
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        print_summary(&summary, &cache_path);
    }
    Ok(ExitCode::from(if any_failed(&summary) { 1 } else { 0 }))
}

/// The unique cited page URLs (and remote image URLs when asked) of the reports,
/// in first-seen order, and the reports that could not be read.
struct Urls {
    pages: Vec<String>,
    images: Vec<String>,
    unreadable: Vec<String>,
}

/// Parse every report and collect its URLs, each once (by normalised form).
fn collect_urls(entries: &[ReportEntry], with_images: bool) -> Urls {
    let mut urls = Urls {
        pages: Vec::new(),
        images: Vec::new(),
        unreadable: Vec::new(),
    };
    let mut seen_pages = std::collections::HashSet::new();
    let mut seen_images = std::collections::HashSet::new();
    for entry in entries {
        match tvir_report::load(&entry.path) {
            Ok(report) => {
                for url in cited_urls(&report) {
                    if seen_pages.insert(normalize_url(&url)) {
                        urls.pages.push(url);
                    }
                }
                if with_images {
                    for url in remote_image_urls(&report) {
                        if seen_images.insert(normalize_url(&url)) {
                            urls.images.push(url);
                        }
                    }
                }
            }
            Err(err) => urls.unreadable.push(err.to_string()),
        }
    }
    urls
}

type PageResults = Vec<(tvir_sources::PageOutcome, PageOrigin)>;
type ImageResults = Vec<(String, Result<usize, tvir_sources::FetchError>)>;

/// Fetch every page, then every image, under a progress bar.
fn fetch_all(
    fetcher: &Fetcher,
    pages: &[String],
    images: &[String],
) -> anyhow::Result<(PageResults, ImageResults)> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    // The fetcher's own global and per-host limits decide what is on the wire; this
    // only bounds how many queued futures exist at once.
    let in_flight = 1024;
    let progress = indicatif::ProgressBar::new((pages.len() + images.len()) as u64);
    progress.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} pages {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let results = runtime.block_on(async {
        let outcomes: Vec<_> = futures::stream::iter(pages.iter())
            .map(|url| {
                let fetcher = fetcher.clone();
                let progress = progress.clone();
                async move {
                    let result = fetcher.page_with_origin(url).await;
                    progress.inc(1);
                    result
                }
            })
            .buffer_unordered(in_flight)
            .collect()
            .await;
        let image_results: Vec<_> = futures::stream::iter(images.iter())
            .map(|url| {
                let fetcher = fetcher.clone();
                let progress = progress.clone();
                async move {
                    let result = fetcher.image_bytes(url).await.map(|bytes| bytes.len());
                    progress.inc(1);
                    (url.clone(), result)
                }
            })
            .buffer_unordered(in_flight)
            .collect()
            .await;
        (outcomes, image_results)
    });
    progress.finish_and_clear();
    Ok(results)
}

/// Whether the exit status is 1: a page failed or was unavailable, a report was
/// unreadable, or an image failed.
fn any_failed(summary: &Summary) -> bool {
    summary
        .by_status
        .iter()
        .any(|(status, n)| *n > 0 && (*status == "failed" || *status == "unavailable"))
        || !summary.unreadable_reports.is_empty()
        || summary
            .images
            .as_ref()
            .is_some_and(|i| !i.failed.is_empty())
}

fn default_cache_path() -> anyhow::Result<PathBuf> {
    let base = dirs::cache_dir().context("no user cache directory; pass --cache PATH")?;
    Ok(base.join("tvir-eval").join("cache.sqlite"))
}

fn is_report_file(path: &Path) -> bool {
    matches!(
        path.file_name().and_then(|n| n.to_str()),
        Some("report.md") | Some("report.html")
    )
}

fn report_in(dir: &Path) -> Option<PathBuf> {
    ["report.md", "report.html"]
        .iter()
        .map(|name| dir.join(name))
        .find(|p| p.is_file())
}

/// Reports under `root`: the root itself when it is a report file or folder, else
/// `root/{system}/{task}/report.(md|html)`, sorted, filtered by systems and tasks.
fn discover(root: &Path, systems: &[String], tasks: &[String]) -> anyhow::Result<Vec<ReportEntry>> {
    let single = |path: PathBuf| {
        let task = path
            .parent()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        vec![ReportEntry {
            system: String::new(),
            task,
            path,
        }]
    };
    if root.is_file() {
        return Ok(single(root.to_path_buf()));
    }
    if !root.is_dir() {
        anyhow::bail!("{}: no such file or folder", root.display());
    }
    if let Some(path) = report_in(root) {
        return Ok(single(path));
    }
    let mut entries = Vec::new();
    for system_dir in sorted_dirs(root)? {
        let system = dir_name(&system_dir);
        if !systems.is_empty() && !systems.contains(&system) {
            continue;
        }
        for task_dir in sorted_dirs(&system_dir)? {
            let task = dir_name(&task_dir);
            if !tasks.is_empty() && !tasks.contains(&task) {
                continue;
            }
            if let Some(path) = report_in(&task_dir) {
                debug_assert!(is_report_file(&path));
                entries.push(ReportEntry {
                    system: system.clone(),
                    task,
                    path,
                });
            }
        }
    }
    Ok(entries)
}

fn dir_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn sorted_dirs(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    Ok(dirs)
}

/// Failure reasons name hosts and addresses; grouping ignores those details.
fn summarize(
    reports: usize,
    unreadable: Vec<String>,
    outcomes: &[(tvir_sources::PageOutcome, PageOrigin)],
    images: Option<&[(String, Result<usize, tvir_sources::FetchError>)]>,
) -> Summary {
    let mut by_status: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut by_origin: BTreeMap<String, usize> = BTreeMap::new();
    let mut groups: HashMap<(PageStatus, String), (usize, Vec<String>)> = HashMap::new();
    let mut tally = PageTally::default();
    for (outcome, origin) in outcomes {
        tally.add(outcome);
        *by_status.entry(outcome.status.as_str()).or_default() += 1;
        let origin = serde_json::to_value(origin)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        *by_origin.entry(origin).or_default() += 1;
        if outcome.status != PageStatus::Ok {
            let reason = reason_group(outcome.reason.as_deref().unwrap_or("(no reason)"));
            let group = groups.entry((outcome.status, reason)).or_default();
            group.0 += 1;
            if group.1.len() < 3 {
                group.1.push(outcome.url.clone());
            }
        }
    }
    let mut failures: Vec<FailureGroup> = groups
        .into_iter()
        .map(|((status, reason), (count, mut examples))| {
            examples.sort();
            FailureGroup {
                status,
                reason,
                count,
                examples,
            }
        })
        .collect();
    failures.sort_by(|a, b| b.count.cmp(&a.count).then(a.reason.cmp(&b.reason)));
    let ok = by_status.get("ok").copied().unwrap_or(0);
    let images = images.map(|results| ImageSummary {
        urls: results.len(),
        ok: results.iter().filter(|(_, r)| r.is_ok()).count(),
        failed: results
            .iter()
            .filter_map(|(url, r)| r.as_ref().err().map(|e| (url.clone(), e.to_string())))
            .collect(),
    });
    Summary {
        reports,
        unreadable_reports: unreadable,
        urls: outcomes.len(),
        by_status,
        by_origin,
        success_rate: (!outcomes.is_empty()).then(|| ok as f64 / outcomes.len() as f64),
        failures,
        images,
        pages_line: tally.line(),
        no_network: tally.no_network(),
    }
}

fn print_summary(summary: &Summary, cache: &Path) {
    println!(
        "{} reports, {} unique cited URLs (cache: {})",
        summary.reports,
        summary.urls,
        cache.display()
    );
    for status in ["ok", "blocked", "failed", "refused", "unavailable"] {
        let n = summary.by_status.get(status).copied().unwrap_or(0);
        println!("  {status:<12} {n:>6}");
    }
    let origins: Vec<String> = summary
        .by_origin
        .iter()
        .map(|(origin, n)| format!("{origin} {n}"))
        .collect();
    if !origins.is_empty() {
        println!("  from: {}", origins.join(", "));
    }
    match summary.success_rate {
        Some(rate) => println!(
            "Retrieval success rate: {:.2} % ({} / {})",
            rate * 100.0,
            summary.by_status.get("ok").copied().unwrap_or(0),
            summary.urls
        ),
        None => println!("Retrieval success rate: n/a (no cited URLs)"),
    }
    if !summary.failures.is_empty() {
        println!("Not retrieved, by reason:");
        for group in &summary.failures {
            println!(
                "  {:>5}  {:<8} {}",
                group.count,
                group.status.as_str(),
                group.reason
            );
            for example in &group.examples {
                println!("           e.g. {example}");
            }
        }
    }
    if let Some(images) = &summary.images {
        println!("Remote images: {} ok of {}", images.ok, images.urls);
        for (url, err) in &images.failed {
            println!("  failed {url}: {err}");
        }
    }
    for err in &summary.unreadable_reports {
        println!("Unreadable report: {err}");
    }
    println!("{}", summary.pages_line);
    if let Some(why) = &summary.no_network {
        println!("{why}");
        eprintln!("{}", tvir_sources::tally::NO_NETWORK_ADVICE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_reasons_without_hosts() {
        assert_eq!(
            reason_group("host a.example resolves only to forbidden addresses (10.0.0.1: private, ::1: loopback)"),
            "host * resolves only to forbidden addresses (...)"
        );
    }

    #[test]
    fn discovers_layout_with_filters() {
        let dir = tempfile::tempdir().unwrap();
        for (system, task, file) in [
            ("sysA", "000001", "report.md"),
            ("sysA", "000002", "report.html"),
            ("sysB", "000001", "report.md"),
            ("sysB", "000003", "notes.txt"),
        ] {
            let d = dir.path().join(system).join(task);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join(file), "x").unwrap();
        }
        let all = discover(dir.path(), &[], &[]).unwrap();
        let names: Vec<_> = all
            .iter()
            .map(|e| format!("{}/{}", e.system, e.task))
            .collect();
        assert_eq!(names, vec!["sysA/000001", "sysA/000002", "sysB/000001"]);
        let filtered = discover(dir.path(), &["sysB".into()], &["000001".into()]).unwrap();
        assert_eq!(filtered.len(), 1);
        assert_eq!(filtered[0].system, "sysB");
        // A single report folder.
        let one = discover(&dir.path().join("sysA/000002"), &[], &[]).unwrap();
        assert_eq!(one.len(), 1);
        assert!(one[0].path.ends_with("report.html"));
        assert!(discover(&dir.path().join("nope"), &[], &[]).is_err());
    }

    #[test]
    fn summary_counts_and_rate() {
        use tvir_sources::PageOutcome;
        let outcome = |url: &str, status: PageStatus, reason: Option<&str>| PageOutcome {
            url: url.into(),
            final_url: None,
            status,
            text: String::new(),
            content_type: None,
            reason: reason.map(Into::into),
            from_cache: false,
            http_status: None,
            no_response: false,
        };
        let outcomes = vec![
            (
                outcome("https://a/", PageStatus::Ok, None),
                PageOrigin::Network,
            ),
            (
                outcome("https://b/", PageStatus::Ok, None),
                PageOrigin::Cache,
            ),
            (
                outcome("https://c/", PageStatus::Failed, Some("HTTP 404 Not Found")),
                PageOrigin::Network,
            ),
            (
                outcome("https://d/", PageStatus::Failed, Some("HTTP 404 Not Found")),
                PageOrigin::Network,
            ),
        ];
        let summary = summarize(2, vec![], &outcomes, None);
        assert_eq!(summary.urls, 4);
        assert_eq!(summary.success_rate, Some(0.5));
        assert_eq!(summary.by_origin["network"], 3);
        assert_eq!(summary.failures.len(), 1);
        assert_eq!(summary.failures[0].count, 2);
        assert_eq!(
            summary.failures[0].examples,
            vec!["https://c/", "https://d/"]
        );
        assert_eq!(summarize(0, vec![], &[], None).success_rate, None);
    }
}
