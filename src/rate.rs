//! `tvir rate`: human-rating studies in Label Studio. `export` writes a study
//! folder (blind tasks, labeling configuration, sampling plan, STUDY.md); `import`
//! turns the project's export into the ratings CSV `tvir agree` reads.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};

use tvir_analysis::rating::{self, export};

#[derive(Debug, Args)]
pub struct RateArgs {
    #[command(subcommand)]
    pub command: RateCommand,
}

#[derive(Debug, Subcommand)]
pub enum RateCommand {
    /// Write a Label Studio study folder from an eval output or a reports root.
    Export(ExportArgs),
    /// Turn a Label Studio export (JSON, JSON-MIN or CSV) into the ratings CSV.
    Import(ImportArgs),
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Tool {
    LabelStudio,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// `[OUT] DIR`: an optional `eval` output folder (its reports, with the chart
    /// pictures its judges saw; the report text still comes from --reports, the
    /// queries from --tasks), then the study folder to write.
    #[arg(num_args = 1..=2, required = true, value_names = ["OUT", "DIR"])]
    pub paths: Vec<PathBuf>,
    /// Reports root (`ROOT/{system}/{task_id}/report.md`).
    #[arg(long)]
    pub reports: Option<PathBuf>,
    /// The task file (`query.json`).
    #[arg(long)]
    pub tasks: Option<PathBuf>,
    /// The annotation tool.
    #[arg(long = "to", value_enum)]
    pub tool: Tool,
    /// Rate N reports, stratified by system, language and complexity (default: all).
    #[arg(long)]
    pub sample: Option<usize>,
    /// Seed of the sample.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Raters per report (Label Studio's overlap).
    #[arg(long, default_value_t = 3)]
    pub raters: usize,
    /// Dimensions to rate: ta, va, overall or metric names.
    #[arg(long, value_delimiter = ',', default_value = "ta,va,overall")]
    pub dimensions: Vec<String>,
    /// Cache holding the remote pictures `tvir eval` downloaded (default: the one eval uses).
    #[arg(long)]
    pub cache: Option<PathBuf>,
    /// Download remote pictures missing from the cache (else they stay web links).
    #[arg(long)]
    pub fetch_pictures: bool,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Label Studio's export of the study project.
    pub export: PathBuf,
    /// Write the CSV here (default: standard output).
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
}

pub fn run(args: RateArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        RateCommand::Export(a) => run_export(a),
        RateCommand::Import(a) => run_import(a),
    }
}

fn run_export(a: ExportArgs) -> anyhow::Result<ExitCode> {
    let Tool::LabelStudio = a.tool;
    let (out, dir) = match a.paths.as_slice() {
        [dir] => (None, dir.clone()),
        [out, dir] => (Some(out.clone()), dir.clone()),
        _ => anyhow::bail!("give the study folder, after the eval output folder if any"),
    };
    let started = Instant::now();
    let need = |v: &Option<PathBuf>, flag: &str| -> anyhow::Result<PathBuf> {
        v.clone().with_context(|| {
            format!("{flag} is needed: an eval output holds scores and chart pictures, not the report text or the queries")
        })
    };
    let (reports, source) = match &out {
        Some(out) => {
            let (root, tasks) = (need(&a.reports, "--reports")?, need(&a.tasks, "--tasks")?);
            (
                export::reports_from_eval(out, &root, &tasks)?,
                format!("eval output {}", out.display()),
            )
        }
        None => {
            let (root, tasks) = (need(&a.reports, "--reports")?, need(&a.tasks, "--tasks")?);
            (
                export::reports_from_root(&root, &tasks)?,
                format!("reports {}", root.display()),
            )
        }
    };
    let dims: Vec<String> = a
        .dimensions
        .iter()
        .map(|d| {
            tvir_analysis::agree::table::canonical_level(d)
                .map(str::to_string)
                .with_context(|| {
                    format!("--dimensions: {d:?} is neither ta, va, overall nor a metric")
                })
        })
        .collect::<anyhow::Result<_>>()?;
    let opts = export::StudyOptions {
        sample: a.sample,
        seed: a.seed,
        raters: a.raters,
        dimensions: dims,
        source,
    };
    let remote = RemoteSource::open(a.cache.as_deref(), a.fetch_pictures)?;
    let lookup = |url: &str| remote.bytes(url);
    let summary = export::write_study(&dir, reports, &opts, &lookup)?;
    eprintln!(
        "wrote {}: {} tasks, {} pictures, {} remote pictures left as web links, {:.1} MB in {:.1} s{}",
        dir.display(),
        summary.tasks,
        summary.pictures,
        summary.remote_links.len(),
        summary.bytes as f64 / 1e6,
        started.elapsed().as_secs_f64(),
        if summary.notes.is_empty() {
            String::new()
        } else {
            format!("; {} notes in plan.json", summary.notes.len())
        }
    );
    if !summary.remote_links.is_empty() {
        let unique: std::collections::BTreeSet<&String> = summary.remote_links.iter().collect();
        eprintln!(
            "warning: {} remote pictures are not in the cache{} and stay web links (the study is not offline; --fetch-pictures downloads them):",
            summary.remote_links.len(),
            remote.cache_name()
        );
        for l in unique.iter().take(20) {
            eprintln!("  {l}");
        }
        if unique.len() > 20 {
            eprintln!("  ... and {} more (STUDY.md, plan.json)", unique.len() - 20);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Where remote pictures come from: the cache `tvir eval` stored the downloaded
/// figures in, then (only with `--fetch-pictures`) the network.
struct RemoteSource {
    cache: Option<(PathBuf, tvir_sources::Fetcher)>,
    fetch: Option<(tokio::runtime::Runtime, tvir_sources::Fetcher)>,
}

impl RemoteSource {
    fn open(cache: Option<&Path>, fetch: bool) -> anyhow::Result<Self> {
        // The default cache is only read when it exists (not created for nothing).
        let path = match cache {
            Some(p) => Some(p.to_path_buf()),
            None => crate::cache::default_cache_path()
                .ok()
                .filter(|p| p.is_file()),
        };
        let store = match &path {
            Some(p) => Some(tvir_store::Store::open(p)?),
            None => None,
        };
        let offline = tvir_sources::FetchConfig {
            offline: true,
            ..tvir_sources::FetchConfig::default()
        };
        let cached = match (&path, &store) {
            (Some(p), Some(s)) => Some((
                p.clone(),
                tvir_sources::Fetcher::new(offline, Some(s.clone()))?,
            )),
            _ => None,
        };
        let fetch = if fetch {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()?;
            let fetcher = tvir_sources::Fetcher::new(tvir_sources::FetchConfig::default(), store)?;
            Some((rt, fetcher))
        } else {
            None
        };
        Ok(Self {
            cache: cached,
            fetch,
        })
    }

    fn cache_name(&self) -> String {
        match &self.cache {
            Some((p, _)) => format!(" {}", p.display()),
            None => " (no cache file: pass --cache)".into(),
        }
    }

    fn bytes(&self, url: &str) -> Result<Vec<u8>, String> {
        if let Some((_, f)) = &self.cache {
            if let Some(b) = f.cached_bytes(url).map_err(|e| e.to_string())? {
                return Ok(b);
            }
        }
        match &self.fetch {
            Some((rt, f)) => rt.block_on(f.image_bytes(url)).map_err(|e| e.to_string()),
            None => Err(format!("not in the cache{}", self.cache_name())),
        }
    }
}

/// An export of a study holds every report's HTML (the pictures are URLs; studies
/// exported before they were files embed them, about 0.55 MB per report, so 800
/// reports make a 450 MB file).
const MAX_EXPORT_BYTES: u64 = 4 << 30;

/// Read and parse a Label Studio export (bounded).
pub fn load_export(path: &Path) -> anyhow::Result<rating::RatingSet> {
    let text = read_bounded(path)?;
    Ok(rating::parse_export(&text, &path.display().to_string())?)
}

/// The ratings of `path` when it is a Label Studio export (by content), None when
/// it is something else (a folder, a score CSV).
pub fn read_export(path: &Path) -> anyhow::Result<Option<rating::RatingSet>> {
    if !path.is_file() {
        return Ok(None);
    }
    let text = read_bounded(path)?;
    if rating::detect(&text).is_none() {
        return Ok(None);
    }
    Ok(Some(rating::parse_export(
        &text,
        &path.display().to_string(),
    )?))
}

fn read_bounded(path: &Path) -> anyhow::Result<String> {
    let meta =
        std::fs::metadata(path).with_context(|| format!("{}: cannot read", path.display()))?;
    if meta.len() > MAX_EXPORT_BYTES {
        anyhow::bail!("{}: larger than 4 GiB", path.display());
    }
    let bytes = std::fs::read(path).with_context(|| format!("{}: cannot read", path.display()))?;
    String::from_utf8(bytes).map_err(|_| anyhow::anyhow!("{}: not UTF-8 text", path.display()))
}

fn run_import(a: ImportArgs) -> anyhow::Result<ExitCode> {
    let set = load_export(&a.export)?;
    let csv = rating::to_ratings_csv(&set);
    match &a.output {
        Some(p) => {
            std::fs::write(p, &csv).with_context(|| format!("{}: cannot write", p.display()))?
        }
        None => {
            use std::io::Write;
            std::io::stdout().lock().write_all(csv.as_bytes())?;
        }
    }
    eprintln!(
        "{}: {} ratings from {} annotations ({} skipped or cancelled, {} values left out)",
        a.export.display(),
        set.ratings.len(),
        set.annotations,
        set.cancelled,
        set.excluded.len().saturating_sub(set.cancelled)
    );
    for e in set.excluded.iter().take(20) {
        eprintln!("  left out: {e}");
    }
    if set.excluded.len() > 20 {
        eprintln!("  ... and {} more", set.excluded.len() - 20);
    }
    Ok(ExitCode::SUCCESS)
}
