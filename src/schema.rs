//! `tvir schema [NAME] [--out DIR]`: the JSON Schemas of the files other programs
//! read (`report.json`, `summary.json`, `run.json`, a per-metric file, a journal
//! line, `tvir agree --json`). They are generated from the types that write those
//! files into `schemas/` (the test `output_schemas` fails when they drift) and
//! carried inside the binary, so an installed wheel has them too.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

/// Every schema: its name, the file it describes, and its text.
pub const SCHEMAS: &[(&str, &str, &str)] = &[
    (
        "report",
        "OUT/{system}/{task_id}/{judge}/report.json",
        include_str!("../schemas/report.schema.json"),
    ),
    (
        "metric",
        "OUT/{system}/{task_id}/{judge}/{metric}.json",
        include_str!("../schemas/metric.schema.json"),
    ),
    (
        "summary",
        "OUT/summary.json",
        include_str!("../schemas/summary.schema.json"),
    ),
    (
        "run",
        "OUT/run.json",
        include_str!("../schemas/run.schema.json"),
    ),
    (
        "journal-line",
        "one line of OUT/judge-journal.jsonl.zst (zstd; `tvir journal` prints them)",
        include_str!("../schemas/journal-line.schema.json"),
    ),
    (
        "agree",
        "the output of `tvir agree --json`",
        include_str!("../schemas/agree.schema.json"),
    ),
];

#[derive(Debug, clap::Args)]
pub struct SchemaArgs {
    /// The schema to print (report, metric, summary, run, journal-line, agree);
    /// without it, the list of schemas and the files they describe.
    pub name: Option<String>,
    /// Write every schema into this folder as NAME.schema.json instead.
    #[arg(long, value_name = "DIR", conflicts_with = "name")]
    pub out: Option<PathBuf>,
}

pub fn run(args: SchemaArgs) -> anyhow::Result<ExitCode> {
    let mut stdout = std::io::stdout().lock();
    if let Some(dir) = args.out {
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("{}: cannot create", dir.display()))?;
        for (name, _, text) in SCHEMAS {
            let path = dir.join(format!("{name}.schema.json"));
            std::fs::write(&path, text)
                .with_context(|| format!("{}: cannot write", path.display()))?;
        }
        writeln!(
            stdout,
            "{} schemas written to {}",
            SCHEMAS.len(),
            dir.display()
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    match args.name {
        None => {
            for (name, file, _) in SCHEMAS {
                writeln!(stdout, "{name:<13} {file}")?;
            }
        }
        Some(want) => {
            let Some((_, _, text)) = SCHEMAS.iter().find(|(name, _, _)| *name == want) else {
                let names: Vec<&str> = SCHEMAS.iter().map(|(n, _, _)| *n).collect();
                anyhow::bail!(
                    "no schema named {want:?}; the schemas: {}",
                    names.join(", ")
                );
            };
            stdout.write_all(text.as_bytes())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
