//! `tvir journal OUT [--report R] [--unit U] [--metric M]`: the judge calls of an
//! `eval` output folder, one JSON line each, with every request text put back from
//! the journal's texts file: the exact messages the judge was sent (images as their
//! digest and size) and the exact answer it gave.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

#[derive(Debug, clap::Args)]
pub struct JournalArgs {
    /// The `tvir eval` output folder (or its journal: `judge-journal.jsonl.zst`, or
    /// the plain `judge-journal.jsonl` of earlier versions).
    pub out: PathBuf,
    /// Only this report (`{system}/{task}`).
    #[arg(long)]
    pub report: Option<String>,
    /// Only this unit (as in `report.json`'s units and the journal's `unit` field).
    #[arg(long)]
    pub unit: Option<String>,
    /// Only this metric.
    #[arg(long)]
    pub metric: Option<String>,
}

pub fn run(args: JournalArgs) -> anyhow::Result<ExitCode> {
    let path = if args.out.is_dir() {
        // Earlier versions wrote the journal uncompressed, each line with its texts.
        ["judge-journal.jsonl.zst", "judge-journal.jsonl"]
            .iter()
            .map(|name| args.out.join(name))
            .find(|p| p.is_file())
            .unwrap_or_else(|| args.out.join("judge-journal.jsonl.zst"))
    } else {
        args.out.clone()
    };
    if !path.is_file() {
        anyhow::bail!(
            "{}: no judge journal (made by `tvir eval` in its output folder)",
            path.display()
        );
    }
    let wanted = |field: &str, want: &Option<String>, e: &serde_json::Value| {
        want.as_deref().is_none_or(|w| e[field].as_str() == Some(w))
    };
    let entries = tvir_judge::journal::read_entries_where(&path, |e| {
        wanted("report", &args.report, e)
            && wanted("unit", &args.unit, e)
            && wanted("metric", &args.metric, e)
    })?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut shown = 0usize;
    for e in &entries {
        serde_json::to_writer(&mut out, e).context("write to stdout")?;
        out.write_all(b"\n").context("write to stdout")?;
        shown += 1;
    }
    out.flush().context("write to stdout")?;
    if shown == 0 {
        eprintln!("no journal line matches in {}", path.display());
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
