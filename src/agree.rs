//! `tvir agree A B`: agreement between two evaluators (PAR, OPC, OSC per level).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use tvir_analysis::agree::table::ScoreTable;
use tvir_analysis::agree::{self, table, AgreeOptions, AgreeReport, LevelAgreement};

#[derive(Debug, clap::Args)]
pub struct AgreeArgs {
    /// Evaluator A: an `eval` output folder or a CSV (`system,task_id` + score columns,
    /// optional `annotator`).
    pub a: PathBuf,
    /// Evaluator B, same forms, or a Label Studio export of a rating study (JSON,
    /// JSON-MIN or CSV, recognised by content).
    pub b: PathBuf,
    /// Bootstrap replicates over tasks for the 95 % intervals (0: none).
    #[arg(long, default_value_t = agree::DEFAULT_BOOTSTRAP)]
    pub bootstrap: usize,
    /// Seed of the bootstrap (the default is fixed, so reruns print the same).
    #[arg(long, default_value_t = agree::DEFAULT_SEED)]
    pub seed: u64,
    /// Print INTERFACE.md's JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Judge model of A when its folder holds several.
    #[arg(long)]
    pub judge_a: Option<String>,
    /// Judge model of B when its folder holds several.
    #[arg(long)]
    pub judge_b: Option<String>,
    /// Only these levels (ta, va, overall, metric names); repeatable.
    #[arg(long = "level")]
    pub levels: Vec<String>,
    /// Write to this file instead of standard output.
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
}

fn num(v: Option<f64>, percent: bool) -> String {
    match v {
        None => "null".into(),
        Some(x) if percent => format!("{:.2}", x * 100.0),
        Some(x) => format!("{x:.4}"),
    }
}

fn ci(v: Option<[f64; 2]>, percent: bool) -> String {
    match v {
        None => "-".into(),
        Some([lo, hi]) => format!("[{}, {}]", num(Some(lo), percent), num(Some(hi), percent)),
    }
}

/// Column headers of an agreement table (terminal and Markdown).
pub fn agreement_headers() -> Vec<String> {
    [
        "Level",
        "Cells",
        "PAR",
        "PAR 95% CI",
        "OPC",
        "OPC 95% CI",
        "OSC",
        "OSC 95% CI",
        "Raters",
        "Ratings",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// One row of the agreement table (PAR in percent as the paper prints it).
pub fn level_row(level: &str, l: &LevelAgreement) -> Vec<String> {
    vec![
        level.to_string(),
        l.cells.to_string(),
        num(l.par, true),
        ci(l.par_ci, true),
        num(l.opc, false),
        ci(l.opc_ci, false),
        num(l.osc, false),
        ci(l.osc_ci, false),
        l.raters.map_or_else(|| "-".into(), |n| n.to_string()),
        l.ratings.map_or_else(|| "-".into(), |n| n.to_string()),
    ]
}

pub fn run(args: AgreeArgs) -> anyhow::Result<ExitCode> {
    let a = load_side(&args.a, args.judge_a.as_deref())
        .with_context(|| format!("evaluator A ({})", args.a.display()))?;
    let b = load_side(&args.b, args.judge_b.as_deref())
        .with_context(|| format!("evaluator B ({})", args.b.display()))?;
    let opts = AgreeOptions {
        bootstrap: args.bootstrap,
        seed: args.seed,
        levels: (!args.levels.is_empty()).then(|| args.levels.clone()),
    };
    let report = agree::agree(&a, &b, &opts);
    check_comparable(&args, &a, &b, &report)?;
    let text = if args.json {
        serde_json::to_string_pretty(&report)? + "\n"
    } else {
        render_text(&args, &report)
    };
    match &args.output {
        Some(p) => {
            std::fs::write(p, text).with_context(|| format!("{}: cannot write", p.display()))?
        }
        None => {
            use std::io::Write;
            std::io::stdout().lock().write_all(text.as_bytes())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// An eval output folder, a Label Studio export (recognised by content) or a
/// score CSV.
fn load_side(path: &std::path::Path, judge: Option<&str>) -> anyhow::Result<ScoreTable> {
    if let Some(set) = crate::rate::read_export(path)? {
        if set.ratings.is_empty() {
            anyhow::bail!(
                "{}: no usable rating in this Label Studio export ({} annotations, {} skipped or cancelled; first reasons: {})",
                path.display(),
                set.annotations,
                set.cancelled,
                set.excluded.iter().take(3).cloned().collect::<Vec<_>>().join("; ")
            );
        }
        return Ok(tvir_analysis::rating::ratings_table(
            &set,
            &path.display().to_string(),
        ));
    }
    Ok(table::load_table(path, judge)?)
}

/// Refuse a comparison with no shared score level or no shared scored cell.
fn check_comparable(
    args: &AgreeArgs,
    a: &ScoreTable,
    b: &ScoreTable,
    report: &AgreeReport,
) -> anyhow::Result<()> {
    if report.levels.is_empty() {
        anyhow::bail!(
            "{} and {} share no score level (A has: {}; B has: {})",
            args.a.display(),
            args.b.display(),
            a.levels.keys().cloned().collect::<Vec<_>>().join(", "),
            b.levels.keys().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    if report.levels.iter().all(|(_, l)| l.cells == 0) {
        anyhow::bail!(
            "{} and {} share no (system, task) cell with a score",
            args.a.display(),
            args.b.display()
        );
    }
    Ok(())
}

/// The terminal text: one row per level, agreement among raters and the
/// breakdowns, then the notes and what an import left out.
fn render_text(args: &AgreeArgs, report: &AgreeReport) -> String {
    let mut t = tvir_analysis::aggregate::render::TextTable {
        title: format!(
            "Agreement of A ({}) and B ({}); PAR in %, bootstrap {} replicates, seed {}",
            report.a, report.b, args.bootstrap, args.seed
        ),
        headers: agreement_headers(),
        rows: Vec::new(),
    };
    let mut notes = Vec::new();
    for (level, l) in &report.levels {
        t.rows.push(level_row(level, l));
        notes.extend(l.notes.iter().map(|n| format!("{level}: {n}")));
    }
    let mut out = t.terminal();
    for t in tvir_analysis::aggregate::agreement_tables::rater_tables(report) {
        out.push('\n');
        out.push_str(&t.terminal());
    }
    notes.extend(report.notes.iter().cloned());
    notes.extend(tvir_analysis::aggregate::agreement_tables::exclusions(
        report,
    ));
    if !notes.is_empty() {
        out.push_str("\nNotes:\n");
        for n in notes {
            out.push_str(&format!("  {n}\n"));
        }
    }
    out
}
