//! `tvir eval` (placeholder until its issue lands).

use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct EvalArgs {}

pub fn run(_args: EvalArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`tvir eval` is not implemented yet")
}
