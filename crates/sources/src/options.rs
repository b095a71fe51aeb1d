//! Command-line options for everything remote, shared by `tvir fetch` and
//! `tvir eval` (which flattens [`FetchOptions`] into its own arguments).

use std::path::PathBuf;
use std::time::Duration;

use super::backends::ApiKey;
use super::{Backend, FetchConfig};

/// `--help` shows these under the heading "Pages" (the command line's headings are
/// named in `tvir_cli::help_heading`; this crate does not depend on it).
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Pages")]
pub struct FetchOptions {
    /// How source pages are read: direct, serper or jina. [default: direct]
    ///
    /// serper: Serper's scraper (SERPER_API_KEY, optional SERPER_BASE_URL; the
    /// reference evaluator's page text, set by `tvir eval --protocol reference`);
    /// jina: Jina Reader (optional JINA_API_KEY).
    #[arg(long = "fetcher", value_enum)]
    pub fetcher: Option<Backend>,
    /// Permit fetching loopback, private, link-local and other non-public addresses.
    ///
    /// Off by default: reports are untrusted input.
    #[arg(long)]
    pub allow_private: bool,
    /// No network at all: pages come only from the cache and --sources.
    #[arg(long)]
    pub offline: bool,
    /// JSONL of pre-fetched pages, one {"url", "text"} per line, used instead of the
    /// network for those URLs; {"url", "error"} records a fetch that failed.
    #[arg(long, value_name = "FILE")]
    pub sources: Option<PathBuf>,
    /// Ignore cached pages and fetch each URL again (once per run).
    #[arg(long)]
    pub refresh_sources: bool,
    /// Largest page body accepted, in bytes (after decompression).
    #[arg(long, value_name = "BYTES", default_value_t = 10 * 1024 * 1024)]
    pub max_page_bytes: u64,
    /// Largest remote image accepted, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 20 * 1024 * 1024)]
    pub max_image_bytes: u64,
    /// Seconds allowed to open a connection.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    pub connect_timeout: f64,
    /// Seconds allowed for a whole request, body included.
    #[arg(long, value_name = "SECS", default_value_t = 30.0)]
    pub fetch_timeout: f64,
    /// Page and image requests in flight at once.
    #[arg(long, value_name = "N", default_value_t = 32)]
    pub fetch_concurrency: usize,
    /// Requests in flight to one host at once.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub per_host_concurrency: usize,
    /// Attempts per URL for transient failures (timeouts, resets, 429, 5xx).
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub fetch_attempts: u32,
    /// Seconds a cached failure or blocked page is trusted before it is fetched again.
    #[arg(long, value_name = "SECS", default_value_t = 6 * 3600)]
    pub failure_ttl: u64,
}

impl Default for FetchOptions {
    fn default() -> Self {
        let config = FetchConfig::default();
        Self {
            fetcher: None,
            allow_private: config.allow_private,
            offline: config.offline,
            sources: None,
            refresh_sources: false,
            max_page_bytes: config.page_cap_bytes,
            max_image_bytes: config.image_cap_bytes,
            connect_timeout: config.connect_timeout.as_secs_f64(),
            fetch_timeout: config.total_timeout.as_secs_f64(),
            fetch_concurrency: config.concurrency,
            per_host_concurrency: config.per_host_concurrency,
            fetch_attempts: config.max_attempts,
            failure_ttl: config.failure_ttl.as_secs(),
        }
    }
}

impl FetchOptions {
    /// The fetcher configuration, with service keys and addresses read from the
    /// environment (`SERPER_API_KEY`, `SERPER_BASE_URL`, `JINA_API_KEY`,
    /// `JINA_BASE_URL`). Keys are never taken from flags, so they stay out of shell
    /// history and process lists.
    pub fn to_config(&self) -> FetchConfig {
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let secs =
            |s: f64| Duration::from_secs_f64(if s.is_finite() && s > 0.0 { s } else { 0.001 });
        FetchConfig {
            backend: self.fetcher.unwrap_or_default(),
            allow_private: self.allow_private,
            offline: self.offline,
            refresh: self.refresh_sources,
            sources_file: self.sources.clone(),
            page_cap_bytes: self.max_page_bytes,
            image_cap_bytes: self.max_image_bytes,
            connect_timeout: secs(self.connect_timeout),
            total_timeout: secs(self.fetch_timeout),
            concurrency: self.fetch_concurrency.max(1),
            per_host_concurrency: self.per_host_concurrency.max(1),
            max_attempts: self.fetch_attempts.max(1),
            failure_ttl: Duration::from_secs(self.failure_ttl),
            serper_api_key: env("SERPER_API_KEY").and_then(ApiKey::new),
            serper_base_url: env("SERPER_BASE_URL"),
            jina_api_key: env("JINA_API_KEY").and_then(ApiKey::new),
            jina_base_url: env("JINA_BASE_URL"),
            ..FetchConfig::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        fetch: FetchOptions,
    }

    #[test]
    fn defaults_match_fetch_config_defaults() {
        let cli = Cli::try_parse_from(["t"]).unwrap();
        let config = cli.fetch.to_config();
        let default = FetchConfig::default();
        assert_eq!(config.backend, Backend::Direct);
        assert!(!config.allow_private && !config.offline && !config.refresh);
        assert_eq!(config.page_cap_bytes, default.page_cap_bytes);
        assert_eq!(config.image_cap_bytes, default.image_cap_bytes);
        assert_eq!(config.total_timeout, default.total_timeout);
        assert_eq!(config.connect_timeout, default.connect_timeout);
        assert_eq!(config.concurrency, default.concurrency);
        assert_eq!(config.failure_ttl, default.failure_ttl);
        assert_eq!(config.max_redirects, 5);
    }

    #[test]
    fn flags_reach_the_config() {
        let cli = Cli::try_parse_from([
            "t",
            "--fetcher",
            "jina",
            "--allow-private",
            "--offline",
            "--sources",
            "s.jsonl",
            "--refresh-sources",
            "--max-page-bytes",
            "1000",
            "--fetch-timeout",
            "2.5",
            "--fetch-concurrency",
            "8",
        ])
        .unwrap();
        let config = cli.fetch.to_config();
        assert_eq!(config.backend, Backend::Jina);
        assert!(config.allow_private && config.offline && config.refresh);
        assert_eq!(config.sources_file, Some(PathBuf::from("s.jsonl")));
        assert_eq!(config.page_cap_bytes, 1000);
        assert_eq!(config.total_timeout, Duration::from_millis(2500));
        assert_eq!(config.concurrency, 8);
        assert!(Cli::try_parse_from(["t", "--fetcher", "curl"]).is_err());
    }
}
