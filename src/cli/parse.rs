//! `tvir parse` (placeholder until its issue lands).

use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct ParseArgs {}

pub fn run(_args: ParseArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`tvir parse` is not implemented yet")
}
