//! The `tvir` command line: argument parsing, settings resolution (`config`) and
//! one module per command, each a short script over the stage crates. Each `run`
//! returns the process exit status (0 success, 1 finished with failed units, 2 bad
//! usage or unreadable input).
//!
//! Owns no evaluation logic: parsing is `tvir_report`, fetching `tvir_sources`,
//! images `tvir_images`, judging `tvir_judge`, rubrics `tvir_rubric`, the run
//! `tvir_engine`, leaderboards and agreement `tvir_analysis`, RepoRef `tvir_reporef`.
//! Argument types stay here too: the engine's option enums get clap mirrors in
//! [`eval`], so no stage crate needs clap. It must never depend on the test servers
//! (`tvir-testing`); nothing but the binary and the integration tests depends on it.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub mod ablate;
pub mod agree;
pub mod batch;
pub mod cache;
pub mod config;
pub mod eval;
pub mod example;
pub mod fetch;
pub mod help_heading;
pub mod iq;
pub mod journal;
pub mod parse;
pub mod rate;
pub mod reporef;
pub mod schema;
pub mod summarize;

#[derive(Debug, Parser)]
#[command(
    name = "tvir",
    version,
    about = "Evaluate deep-research reports (TVIR-Bench) and score RepoRef runs"
)]
pub struct Cli {
    /// Log filter (also RUST_LOG), e.g. `info` or `tvir_judge=debug`; without either,
    /// only the suite's own warnings (no line from a library it uses).
    #[arg(long, global = true)]
    pub log: Option<String>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Parse a report into references, fact-citation pairs, figures and structural errors.
    Parse(parse::ParseArgs),
    /// Score images (Image Quality) from pixels.
    Iq(iq::IqArgs),
    /// Prefetch cited source pages into the cache and report retrieval success.
    Fetch(fetch::FetchArgs),
    /// Evaluate reports: every metric, per report and per system.
    Eval(eval::EvalArgs),
    /// Leaderboards from an `eval` output folder.
    Summarize(summarize::SummarizeArgs),
    /// Agreement between two evaluators (PAR, Pearson, Spearman).
    Agree(agree::AgreeArgs),
    /// Human-rating studies in Label Studio (export tasks, import ratings).
    Rate(rate::RateArgs),
    /// Re-score stored judgments under metric variants, with no judge call.
    Ablate(ablate::AblateArgs),
    /// Score RepoRef predictions and agent runs.
    Reporef(reporef::ReporefArgs),
    /// The judge calls of an output folder: exact request and answer of any unit.
    Journal(journal::JournalArgs),
    /// Seed the cache (`put URL FILE`: a script, style sheet or font pages load).
    Cache(cache::CacheArgs),
    /// The JSON Schemas of the output files (report.json, summary.json, run.json, ...).
    Schema(schema::SchemaArgs),
}

/// Entry point used by the `tvir` binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing(cli.log.as_deref());
    let result = match cli.command {
        Command::Parse(a) => parse::run(a),
        Command::Iq(a) => iq::run(a),
        Command::Fetch(a) => fetch::run(a),
        Command::Eval(a) => eval::run(a),
        Command::Summarize(a) => summarize::run(a),
        Command::Agree(a) => agree::run(a),
        Command::Rate(a) => rate::run(a),
        Command::Ablate(a) => ablate::run(a),
        Command::Reporef(a) => reporef::run(a),
        Command::Cache(a) => cache::run(a),
        Command::Journal(a) => journal::run(a),
        Command::Schema(a) => schema::run(a),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(2)
        }
    }
}

/// The log filter of a normal run: the suite's own warnings, nothing from the
/// libraries it uses (their lines are for `--log` or `RUST_LOG`). `tvir` matches every
/// `tvir_*` crate and the command line (`tvir_cli`).
pub const QUIET_LOG: &str = "off,tvir=warn";

fn init_tracing(filter: Option<&str>) {
    use tracing_subscriber::EnvFilter;
    let filter = filter
        .map(EnvFilter::new)
        .or_else(|| EnvFilter::try_from_default_env().ok())
        .unwrap_or_else(|| EnvFilter::new(QUIET_LOG));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}
