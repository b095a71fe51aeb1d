//! `tvir agree` (placeholder until its issue lands).

use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct AgreeArgs {}

pub fn run(_args: AgreeArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`tvir agree` is not implemented yet")
}
