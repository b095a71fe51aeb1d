//! `tvir fetch` (placeholder until its issue lands).

use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct FetchArgs {}

pub fn run(_args: FetchArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`tvir fetch` is not implemented yet")
}
