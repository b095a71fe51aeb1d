//! `tvir ablate` (placeholder until its issue lands).

use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct AblateArgs {}

pub fn run(_args: AblateArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`tvir ablate` is not implemented yet")
}
