//! `tvir iq` (placeholder until its issue lands).

use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct IqArgs {}

pub fn run(_args: IqArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`tvir iq` is not implemented yet")
}
