//! RepoRef: scoring agents that resolve an indirect reference in a developer chat to
//! the exact GitHub issue, pull request or commit.
//!
//! Data flow: [`formats`] loads the released files (gold, predictions, metadata, alias
//! maps; run traces in `formats::traces`) with file:line [`Diagnostic`]s for bad
//! units; [`url`] and [`matching`] decide correctness at three levels (exact,
//! structural, alias); [`metrics`] turns per-run outcomes into rows (accuracy ± SE,
//! breakdowns, cost, excess calls, discovery vs selection, answer composition,
//! trajectories); [`stats`] holds the binomial SE and McNemar's test; [`sweep`] the
//! budget sweep table and SVG chart; [`compare`] the paired test between two
//! conditions. Entry points: [`load_benchmark`], [`load_conditions`], [`score_all`].
//!
//! Self-contained: it must never depend on another crate of the suite, and never
//! calls a judge or the network; it scores files already on disk.

pub mod aliases;
pub mod compare;
pub mod formats;
pub mod matching;
pub mod metrics;
pub mod runs;
pub mod stats;
pub mod sweep;
pub mod url;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

pub use formats::Diagnostic;
pub use matching::{MatchLevel, Matcher};
pub use metrics::{score_all, Benchmark, Row};
pub use runs::{load_conditions, Condition};

/// Whole-input failures (a missing gold file, an unreadable folder). Problems with
/// single lines are [`Diagnostic`]s instead.
#[derive(Debug, thiserror::Error)]
pub enum ReporefError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {size} bytes exceeds the {cap}-byte limit", path.display())]
    TooLarge { path: PathBuf, size: u64, cap: u64 },
    #[error("{}: {message}", path.display())]
    Format { path: PathBuf, message: String },
    #[error("{0}")]
    Usage(String),
    #[error("{}: cannot write the chart: {message}", path.display())]
    Chart { path: PathBuf, message: String },
}

/// Paths of the shared inputs.
#[derive(Debug, Clone, Default)]
pub struct BenchmarkFiles {
    pub gold: PathBuf,
    pub instances: Option<PathBuf>,
    pub metadata: Option<PathBuf>,
    pub aliases: Option<PathBuf>,
    pub artifacts: Option<PathBuf>,
    pub prices: Option<PathBuf>,
}

/// Loads gold, breakdown attributes, alias maps, the artifact index and prices.
pub fn load_benchmark(
    files: &BenchmarkFiles,
    diags: &mut Vec<Diagnostic>,
) -> Result<Benchmark, ReporefError> {
    let gold = formats::load_gold(&files.gold, diags)?;
    let mut meta: HashMap<String, formats::InstanceMeta> = HashMap::new();
    let mut has_buckets = false;
    let mut has_difficulty = false;
    if let Some(p) = &files.instances {
        meta = formats::load_instances(p, diags)?;
        has_buckets = true;
    }
    if let Some(p) = &files.metadata {
        // metadata.csv is the richer source: its non-empty fields win.
        for (id, m) in formats::load_metadata(p, diags)? {
            let e = meta.entry(id).or_default();
            e.entity_type = m.entity_type.or(e.entity_type);
            e.capability_bucket = m.capability_bucket.or(e.capability_bucket.take());
            e.difficulty = m.difficulty.or(e.difficulty.take());
            e.connection_strength = m.connection_strength.or(e.connection_strength.take());
        }
        has_buckets = true;
        has_difficulty = true;
    }
    let source_for_meta = files.metadata.as_ref().or(files.instances.as_ref());
    if let Some(src) = source_for_meta {
        let absent = gold
            .records
            .iter()
            .filter(|g| !meta.contains_key(&g.id))
            .count();
        if absent > 0 {
            diags.push(Diagnostic::note(
                src,
                None,
                format!("{absent} gold ids have no metadata (grouped as \"unknown\")"),
            ));
        }
    }
    let aliases = match &files.aliases {
        Some(dir) => formats::load_aliases(dir, diags)?,
        None => aliases::AliasMaps::default(),
    };
    let matcher = Matcher::new(&gold, aliases);
    // Existing artifacts are, by the paper's definition, those seen in tool results
    // plus an artifact file; gold URLs are not added on their own (list them in the
    // artifact file to count them).
    let mut known = aliases::ArtifactIndex::default();
    if let Some(p) = &files.artifacts {
        formats::load_artifacts(p, &mut known, diags)?;
    }
    let prices = match &files.prices {
        Some(p) => load_prices(p)?,
        None => metrics::PriceTable::default(),
    };
    Ok(Benchmark {
        gold,
        meta,
        has_buckets,
        has_difficulty,
        matcher,
        known_artifacts: known,
        prices,
    })
}

/// Price table: `{"model": {"input_per_million": USD, "output_per_million": USD}}`.
pub fn load_prices(path: &Path) -> Result<metrics::PriceTable, ReporefError> {
    #[derive(serde::Deserialize)]
    struct Entry {
        input_per_million: f64,
        output_per_million: f64,
    }
    let text = formats::read_bounded(path, formats::MAX_TABLE_BYTES)?;
    let map: HashMap<String, Entry> = serde_json::from_str(&text).map_err(|e| ReporefError::Format {
        path: path.to_path_buf(),
        message: format!(
            "line {}: expected {{\"model\": {{\"input_per_million\": USD, \"output_per_million\": USD}}}}: {e}",
            e.line()
        ),
    })?;
    Ok(metrics::PriceTable {
        prices: map
            .into_iter()
            .map(|(k, e)| {
                (
                    k,
                    metrics::ModelPrice {
                        input_per_million: e.input_per_million,
                        output_per_million: e.output_per_million,
                    },
                )
            })
            .collect(),
    })
}

/// What `tvir reporef score --json` prints.
#[derive(Debug, Clone, Serialize)]
pub struct ScoreReport {
    pub rows: Vec<Row>,
    pub diagnostics: Vec<Diagnostic>,
}
