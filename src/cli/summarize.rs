//! `tvir summarize` (placeholder until its issue lands).

use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct SummarizeArgs {}

pub fn run(_args: SummarizeArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`tvir summarize` is not implemented yet")
}
