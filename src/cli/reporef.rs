//! `tvir reporef` (placeholder until its issue lands).

use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct ReporefArgs {}

pub fn run(_args: ReporefArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`tvir reporef` is not implemented yet")
}
