//! `tvir ablate OUT --variant FILE...`: re-score stored judge answers under metric
//! variants (no judge call) and show how the leaderboard moves against the base.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use tvir_analysis::ablate::{self, render, AblateOptions, Configuration, Variant};
use tvir_analysis::aggregate;
use tvir_engine::ScoreOptions;
use tvir_rubric::RubricSet;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AblateFormat {
    /// Aligned text for the terminal.
    Table,
    /// Markdown tables.
    Md,
    /// The full comparison; scores as fractions in [0, 1].
    Json,
}

#[derive(Debug, clap::Args)]
pub struct AblateArgs {
    /// The `eval` output folder (`OUT/{system}/{task_id}/{judge_model}/report.json`).
    pub out: PathBuf,
    /// Variant file (TOML, see docs/ablate.md); repeatable, one leaderboard each.
    #[arg(long = "variant", value_name = "FILE", required = true, num_args = 1..)]
    pub variants: Vec<PathBuf>,
    /// Task file (TVIR `query.json`): only its tasks are compared.
    #[arg(long)]
    pub tasks: Option<PathBuf>,
    /// Output format: a terminal table, Markdown or JSON.
    #[arg(long, value_enum, default_value_t = AblateFormat::Table)]
    pub format: AblateFormat,
    /// The rubric folder the `eval` run used (`eval --rubrics`), for the base.
    #[arg(long)]
    pub rubrics: Option<PathBuf>,
    /// The `eval` run counted failed units as 0 (`eval --failed-as-zero`).
    #[arg(long)]
    pub failed_as_zero: bool,
    /// Only this judge model (folder name without `-run{k}`).
    #[arg(long)]
    pub judge: Option<String>,
    /// Bootstrap replicates over tasks for intervals of PAR/OPC/OSC (0: none).
    #[arg(long, default_value_t = 0)]
    pub bootstrap: usize,
    /// Seed of the bootstrap.
    #[arg(long, default_value_t = tvir_analysis::agree::DEFAULT_SEED)]
    pub seed: u64,
    /// Write to this file instead of standard output.
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
}

pub fn run(args: AblateArgs) -> anyhow::Result<ExitCode> {
    let (base, variants) = configurations(&args)?;
    let (tree, notes) = load_records(&args)?;
    let opts = AblateOptions {
        bootstrap: args.bootstrap,
        seed: args.seed,
    };
    let mut report = ablate::ablate(
        &args.out.display().to_string(),
        &tree.records,
        &tree.issues,
        &base,
        &variants,
        &opts,
    )?;
    report.notes.extend(notes);
    emit(&args, &report)?;
    Ok(if report.load_issues.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The base configuration (the rubrics and score options of the flags) and each
/// `--variant` applied to it.
fn configurations(args: &AblateArgs) -> anyhow::Result<(Configuration, Vec<Configuration>)> {
    let rubrics = RubricSet::load(args.rubrics.as_deref(), None).context("loading rubrics")?;
    let score = ScoreOptions {
        failed_as_zero: args.failed_as_zero,
        ..ScoreOptions::for_rubrics(&rubrics)
    };
    let base = Configuration::base(rubrics, score);
    let mut variants = Vec::new();
    for path in &args.variants {
        let label = path.display().to_string();
        let v = Variant::load(path)?;
        variants.push(v.apply(&base, &label)?);
    }
    Ok((base, variants))
}

/// The stored records to re-score (one judge, the `--tasks` tasks), with notes on
/// what was left out; an error when none is left.
fn load_records(args: &AblateArgs) -> anyhow::Result<(aggregate::EvalTree, Vec<String>)> {
    let mut tree = aggregate::load_eval_tree(&args.out)?;
    let mut notes = Vec::new();
    if let Some(j) = &args.judge {
        tree.retain_judge(j).map_err(anyhow::Error::msg)?;
    }
    if let Some(p) = &args.tasks {
        notes = keep_tasks(&mut tree, p, &args.out)?;
    }
    if tree.records.is_empty() {
        anyhow::bail!(
            "{}: no readable report record to re-score{}",
            args.out.display(),
            tree.issues
                .first()
                .map(|i| format!(" (first problem: {}: {})", i.path, i.message))
                .unwrap_or_default()
        );
    }
    Ok((tree, notes))
}

/// Keep the records of the tasks in `tasks_file`; notes say how many reports were
/// dropped and how many tasks have no report.
fn keep_tasks(
    tree: &mut aggregate::EvalTree,
    tasks_file: &Path,
    out: &Path,
) -> anyhow::Result<Vec<String>> {
    let mut notes = Vec::new();
    let tasks = aggregate::load_tasks(tasks_file)?;
    let before = tree.records.len();
    tree.records.retain(|r| tasks.contains_key(&r.task_id));
    let dropped = before - tree.records.len();
    if dropped > 0 {
        notes.push(format!(
            "{dropped} reports of tasks not in {} left out",
            tasks_file.display()
        ));
    }
    let seen: std::collections::BTreeSet<&str> =
        tree.records.iter().map(|r| r.task_id.as_str()).collect();
    let missing = tasks.keys().filter(|t| !seen.contains(t.as_str())).count();
    if missing > 0 {
        notes.push(format!(
            "{missing} of {} tasks in {} have no report in {}",
            tasks.len(),
            tasks_file.display(),
            out.display()
        ));
    }
    Ok(notes)
}

/// Render the comparison in the chosen format, to `--output` or stdout.
fn emit(args: &AblateArgs, report: &ablate::AblationReport) -> anyhow::Result<()> {
    let text = match args.format {
        AblateFormat::Table => render::to_terminal(report),
        AblateFormat::Md => render::to_markdown(report),
        AblateFormat::Json => serde_json::to_string_pretty(report)? + "\n",
    };
    match &args.output {
        Some(p) => {
            std::fs::write(p, text).with_context(|| format!("{}: cannot write", p.display()))?
        }
        None => print!("{text}"),
    }
    Ok(())
}
