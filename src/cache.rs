//! `tvir cache put URL FILE [--cache PATH]`: store a local file in the cache under
//! a URL, byte for byte, so an offline run (or a rendered page's scripts, styles and
//! fonts) finds it there, e.g. a chart library taken from an npm package.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use tvir_sources::{FetchConfig, Fetcher};
use tvir_store::Store;

#[derive(Debug, clap::Args)]
pub struct CacheArgs {
    #[command(subcommand)]
    pub command: CacheCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum CacheCommand {
    /// Store FILE in the cache under URL (a script, style sheet or font a page loads).
    Put(PutArgs),
}

#[derive(Debug, clap::Args)]
pub struct PutArgs {
    /// The address pages request (http or https).
    pub url: String,
    /// The local file whose bytes are served for it.
    pub file: PathBuf,
    /// The cache file (default: the one `tvir eval` uses).
    #[arg(long)]
    pub cache: Option<PathBuf>,
}

pub fn run(args: CacheArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        CacheCommand::Put(p) => put(&p),
    }
}

/// The cache file `tvir eval` and `tvir parse` use by default.
pub fn default_cache_path() -> anyhow::Result<PathBuf> {
    Ok(dirs::cache_dir()
        .context("no user cache directory: pass --cache PATH")?
        .join("tvir-eval")
        .join("cache.sqlite"))
}

fn put(args: &PutArgs) -> anyhow::Result<ExitCode> {
    let url =
        url::Url::parse(args.url.trim()).with_context(|| format!("{}: not a URL", args.url))?;
    if !matches!(url.scheme(), "http" | "https") {
        anyhow::bail!("{}: only http and https addresses can be seeded", args.url);
    }
    let body = std::fs::read(&args.file)
        .with_context(|| format!("{}: cannot read", args.file.display()))?;
    let path = match &args.cache {
        Some(p) => p.clone(),
        None => default_cache_path()?,
    };
    let store = Store::open(&path)?;
    let fetcher = Fetcher::new(FetchConfig::default(), Some(store))?;
    let n = body.len();
    fetcher.put_resource(args.url.trim(), body, content_type_of(&args.file))?;
    println!(
        "stored {} ({n} bytes) as {} in {}",
        args.file.display(),
        args.url.trim(),
        path.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// The content type a file is served with, by its extension.
pub fn content_type_of(file: &Path) -> Option<String> {
    let ext = file.extension()?.to_str()?.to_ascii_lowercase();
    let t = match ext.as_str() {
        "js" | "mjs" | "cjs" => "text/javascript",
        "css" => "text/css",
        "json" => "application/json",
        "woff2" => "font/woff2",
        "woff" => "font/woff",
        "ttf" => "font/ttf",
        "otf" => "font/otf",
        "svg" => "image/svg+xml",
        "wasm" => "application/wasm",
        _ => return None,
    };
    Some(t.to_string())
}
