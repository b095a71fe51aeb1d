//! `tvir reporef score | compare | sweep`: RepoRef accuracy and diagnostics.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::Subcommand;

use tvir_reporef::compare::{compare, Comparison};
use tvir_reporef::metrics::{evaluate, instance_outcomes, Row};
use tvir_reporef::runs::{discover, load_condition, InputSpec};
use tvir_reporef::stats::McNemarMethod;
use tvir_reporef::sweep::{render_svg, sweep_series, sweep_table};
use tvir_reporef::{
    load_benchmark, load_conditions, score_all, BenchmarkFiles, Diagnostic, ScoreReport,
};

#[derive(Debug, clap::Args)]
pub struct ReporefArgs {
    #[command(subcommand)]
    pub command: ReporefCommand,
}

// Boxed so the top-level `Command` enum stays small (clippy::large_enum_variant).
#[derive(Debug, Subcommand)]
pub enum ReporefCommand {
    /// Accuracy and diagnostics, one row per predictions file and per (model, budget).
    Score(Box<ScoreArgs>),
    /// McNemar's test between two conditions on the same instances.
    Compare(Box<CompareArgs>),
    /// Accuracy against the tool-call budget, as a table and an SVG line chart.
    Sweep(Box<SweepArgs>),
}

/// Shared inputs.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchmarkArgs {
    /// gold.jsonl: {"id", "gold_url", "repo", "entity_type", "entity_id", "original_url"?}.
    #[arg(long)]
    pub gold: PathBuf,
    /// instances.jsonl (entity type and capability bucket for breakdowns).
    #[arg(long)]
    pub instances: Option<PathBuf>,
    /// metadata.csv (entity type, capability bucket, difficulty for breakdowns).
    #[arg(long)]
    pub metadata: Option<PathBuf>,
    /// Folder with redirect_map.json and/or duplicates.json (alias matching).
    #[arg(long)]
    pub aliases: Option<PathBuf>,
    /// Extra existing artifacts (one URL per line, or JSONL with "url"), used to tell
    /// wrong-but-real answers from hallucinated ones.
    #[arg(long)]
    pub artifacts: Option<PathBuf>,
    /// Price table for traces without a cost:
    /// {"model": {"input_per_million": USD, "output_per_million": USD}}.
    #[arg(long)]
    pub prices: Option<PathBuf>,
}

impl BenchmarkArgs {
    fn files(&self) -> BenchmarkFiles {
        BenchmarkFiles {
            gold: self.gold.clone(),
            instances: self.instances.clone(),
            metadata: self.metadata.clone(),
            aliases: self.aliases.clone(),
            artifacts: self.artifacts.clone(),
            prices: self.prices.clone(),
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct ScoreArgs {
    #[command(flatten)]
    pub bench: BenchmarkArgs,
    /// predictions.jsonl files and/or run folders (runs/, runs/{model}/ or
    /// runs/{model}/budget_{B}/).
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// Print JSON: {"rows": [...], "diagnostics": [...]}.
    #[arg(long)]
    pub json: bool,
    /// Also write one JSON line per (condition, instance): match level, answer kind,
    /// the URL judged, surfaced, tool calls.
    #[arg(long, value_name = "FILE")]
    pub per_instance: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    #[command(flatten)]
    pub bench: BenchmarkArgs,
    /// First condition: a predictions file or a runs folder resolving to one budget.
    pub a: PathBuf,
    /// Second condition.
    pub b: PathBuf,
    /// Pick this budget when a folder holds several.
    #[arg(long)]
    pub budget: Option<u32>,
    /// Print the comparison as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct SweepArgs {
    #[command(flatten)]
    pub bench: BenchmarkArgs,
    /// runs/ folder with {model}/budget_{B}/ subfolders.
    pub runs_dir: PathBuf,
    /// Where to write the SVG line chart.
    #[arg(long, default_value = "reporef_sweep.svg")]
    pub svg: PathBuf,
    /// Title of the chart.
    #[arg(long, default_value = "RepoRef: accuracy by tool-call budget")]
    pub title: String,
    /// Print the sweep as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: ReporefArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        ReporefCommand::Score(a) => score(*a),
        ReporefCommand::Compare(a) => compare_cmd(*a),
        ReporefCommand::Sweep(a) => sweep(*a),
    }
}

/// Prints diagnostics to stderr; exit 1 when a unit was skipped.
fn report_diagnostics(diags: &[Diagnostic]) -> ExitCode {
    for d in diags {
        eprintln!("{}: {d}", if d.skipped { "warning" } else { "note" });
    }
    let skipped = diags.iter().filter(|d| d.skipped).count();
    if skipped > 0 {
        eprintln!("{skipped} input unit(s) skipped; the figures cover what was valid");
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |x| format!("{:.2}", x * 100.0))
}

fn num(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".into(), |x| format!("{x:.digits$}"))
}

fn render_rows(rows: &[Row]) -> String {
    let mut out = String::new();
    let w = rows.iter().map(|r| r.name.len()).max().unwrap_or(4).max(4);
    let _ = writeln!(
        out,
        "{:<w$}  {:>6}  {:>5}  {:>5}  {:>15}  {:>5} {:>5} {:>5}  {:>7}  {:>9}  {:>9}  {:>12}",
        "name",
        "budget",
        "n",
        "ok",
        "accuracy % ± SE",
        "exact",
        "struc",
        "alias",
        "calls",
        "tokens",
        "price $",
        "excess (n)"
    );
    for r in rows {
        let excess = r
            .excess_tool_calls
            .as_ref()
            .map_or_else(|| "-".into(), |e| format!("{} ({})", num(e.mean, 2), e.n));
        let _ = writeln!(
            out,
            "{:<w$}  {:>6}  {:>5}  {:>5}  {:>15}  {:>5} {:>5} {:>5}  {:>7}  {:>9}  {:>9}  {:>12}",
            r.name,
            r.budget.map_or_else(|| "-".into(), |b| b.to_string()),
            r.n,
            r.correct,
            format!("{} ± {}", pct(r.accuracy), pct(r.se)),
            r.by_level.exact,
            r.by_level.structural,
            r.by_level.alias,
            num(r.mean_tool_calls, 2),
            num(r.mean_tokens, 0),
            num(r.mean_price_usd, 4),
            excess,
        );
    }
    for r in rows {
        let _ = writeln!(
            out,
            "\n== {}{} ({})",
            r.name,
            r.budget.map(|b| format!(" @ B={b}")).unwrap_or_default(),
            r.source
        );
        let c = &r.composition;
        let _ = writeln!(
            out,
            "answers: correct {}, wrong real {}, hallucinated {}, malformed {}, no prediction {} (missing runs {})",
            c.correct, c.wrong_real, c.hallucinated, c.malformed, c.no_prediction, r.missing
        );
        let groups = [
            ("entity type", Some(&r.by_entity_type)),
            ("bucket", r.by_bucket.as_ref()),
            ("difficulty", r.by_difficulty.as_ref()),
        ];
        for (label, map) in groups {
            let Some(map) = map else { continue };
            let cells: Vec<String> = map
                .iter()
                .map(|(k, p)| {
                    format!(
                        "{k} {}/{} = {} ± {}",
                        p.correct,
                        p.n,
                        pct(p.accuracy),
                        pct(p.se)
                    )
                })
                .collect();
            let _ = writeln!(out, "by {label}: {}", cells.join("; "));
        }
        if let Some(d) = &r.discovery {
            let _ = writeln!(
                out,
                "failures: discovery {} ({}%), selection {} ({}%), without trace {}; P(correct | surfaced) = {}/{} = {}%",
                d.discovery_failures,
                pct(d.discovery_share),
                d.selection_failures,
                pct(d.selection_share),
                d.failures_without_trace,
                d.correct_given_surfaced,
                d.surfaced,
                pct(d.p_correct_given_surfaced)
            );
        }
        if let Some(t) = &r.trajectory {
            let _ = writeln!(
                out,
                "trajectories ({} runs): zero-call runs {}, invalid calls {} (mean {}), information-gain calls {} (mean {}, rate {}%), refused calls {} in {} runs, errored runs {}",
                t.runs,
                t.zero_tool_call_runs,
                t.invalid_tool_calls,
                num(t.mean_invalid_tool_calls, 2),
                t.information_gain_calls,
                num(t.mean_information_gain_calls, 2),
                pct(t.information_gain_rate),
                t.refused_calls,
                t.runs_with_refused_calls,
                t.errored_runs
            );
        }
        if let Some(e) = &r.excess_tool_calls {
            let _ = writeln!(
                out,
                "excess tool calls: mean {} over n = {} correct runs ({} models at this budget)",
                num(e.mean, 3),
                e.n,
                e.models_compared
            );
        }
        if r.recorded_correct_disagreements > 0 {
            let _ = writeln!(
                out,
                "note: {} runs' recorded evaluation.correct disagrees with this scorer",
                r.recorded_correct_disagreements
            );
        }
    }
    out
}

fn score(args: ScoreArgs) -> anyhow::Result<ExitCode> {
    let mut diags = Vec::new();
    let bench = load_benchmark(&args.bench.files(), &mut diags)?;
    let conds = load_conditions(&args.inputs, &bench.gold, &mut diags)?;
    let (rows, outcomes) = score_all(&bench, &conds);
    if let Some(path) = &args.per_instance {
        write_per_instance(path, &bench, &conds, &outcomes)?;
    }
    let code = report_diagnostics(&diags);
    if args.json {
        let report = ScoreReport {
            rows,
            diagnostics: diags,
        };
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render_rows(&rows));
    }
    Ok(code)
}

fn write_per_instance(
    path: &std::path::Path,
    bench: &tvir_reporef::Benchmark,
    conds: &[tvir_reporef::Condition],
    outcomes: &[Vec<tvir_reporef::metrics::Outcome>],
) -> anyhow::Result<()> {
    use std::io::Write as _;
    let file = std::fs::File::create(path)
        .with_context(|| format!("{}: cannot create", path.display()))?;
    let mut out = std::io::BufWriter::new(file);
    for (cond, outs) in conds.iter().zip(outcomes) {
        for rec in instance_outcomes(bench, cond, outs) {
            serde_json::to_writer(&mut out, &rec)?;
            out.write_all(b"\n")?;
        }
    }
    out.flush()
        .with_context(|| format!("{}: cannot write", path.display()))?;
    Ok(())
}

fn render_comparison(c: &Comparison) -> String {
    let m = &c.mcnemar;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "A: {}  {}/{} = {}%",
        c.a,
        c.a_accuracy.correct,
        c.n,
        pct(c.a_accuracy.accuracy)
    );
    let _ = writeln!(
        out,
        "B: {}  {}/{} = {}%",
        c.b,
        c.b_accuracy.correct,
        c.n,
        pct(c.b_accuracy.accuracy)
    );
    let _ = writeln!(
        out,
        "both correct {}, A only (b) {}, B only (c) {}, both wrong {}",
        c.both_correct, c.a_only, c.b_only, c.both_wrong
    );
    let _ = writeln!(
        out,
        "McNemar exact (binomial, two-sided): p = {:.6}",
        m.exact_p
    );
    match (m.chi_square, m.chi_square_p) {
        (Some(s), Some(p)) => {
            let _ = writeln!(
                out,
                "McNemar chi-square (continuity-corrected): X2 = {s:.6}, p = {p:.6}"
            );
        }
        _ => {
            let _ = writeln!(out, "McNemar chi-square: undefined (no discordant pairs)");
        }
    }
    let method = match m.recommended {
        McNemarMethod::Exact => "exact (b + c < 25)",
        McNemarMethod::ChiSquare => "chi-square (b + c >= 25)",
    };
    let _ = writeln!(out, "recommended: {method}, p = {:.6}", m.p_value);
    out
}

fn compare_cmd(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let mut diags = Vec::new();
    let bench = load_benchmark(&args.bench.files(), &mut diags)?;
    // Filter by budget before loading, so other budgets' problems do not count.
    let pick =
        |path: &PathBuf, diags: &mut Vec<Diagnostic>| -> anyhow::Result<tvir_reporef::Condition> {
            let mut specs = discover(path)?;
            if let Some(b) = args.budget {
                if specs.iter().any(|s| matches!(s, InputSpec::Traces { .. })) {
                    specs.retain(|s| matches!(s, InputSpec::Traces { budget, .. } if *budget == b));
                }
            }
            match specs.as_slice() {
                [one] => Ok(load_condition(one, &bench.gold, diags)?),
                [] => bail!(
                    "{}: no condition at budget {:?}",
                    path.display(),
                    args.budget
                ),
                many => {
                    let list: Vec<String> = many
                        .iter()
                        .map(|s| match s {
                            InputSpec::Traces { model, budget, .. } => format!("{model}@{budget}"),
                            InputSpec::Predictions(p) => p.display().to_string(),
                        })
                        .collect();
                    bail!(
                    "{} holds {} conditions ({}); name one budget_{{B}} folder or pass --budget",
                    path.display(),
                    many.len(),
                    list.join(", ")
                )
                }
            }
        };
    let a = pick(&args.a, &mut diags).with_context(|| "condition A")?;
    let b = pick(&args.b, &mut diags).with_context(|| "condition B")?;
    let both = [a, b];
    let existing = bench.existing_artifacts(&both);
    let label = |c: &tvir_reporef::Condition| match c.budget {
        Some(b) => format!("{}@{b}", c.name),
        None => c.name.clone(),
    };
    let oa = evaluate(&bench, &existing, &both[0]);
    let ob = evaluate(&bench, &existing, &both[1]);
    let (mut la, mut lb) = (label(&both[0]), label(&both[1]));
    if la == lb {
        // Same model and budget from two run roots: the paths tell them apart.
        la = both[0].source.display().to_string();
        lb = both[1].source.display().to_string();
    }
    let cmp = compare(&la, &oa, &lb, &ob);
    let code = report_diagnostics(&diags);
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(
                &serde_json::json!({"comparison": cmp, "diagnostics": diags})
            )?
        );
    } else {
        print!("{}", render_comparison(&cmp));
    }
    Ok(code)
}

fn sweep(args: SweepArgs) -> anyhow::Result<ExitCode> {
    let mut diags = Vec::new();
    let bench = load_benchmark(&args.bench.files(), &mut diags)?;
    let conds = load_conditions(
        std::slice::from_ref(&args.runs_dir),
        &bench.gold,
        &mut diags,
    )?;
    if !conds.iter().any(|c| c.budget.is_some()) {
        bail!(
            "{}: no budget_{{B}} folders to sweep",
            args.runs_dir.display()
        );
    }
    let (rows, _) = score_all(&bench, &conds);
    let series = sweep_series(&rows);
    render_svg(&series, &args.svg, &args.title)?;
    let code = report_diagnostics(&diags);
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(
                &serde_json::json!({"series": series, "svg": args.svg.display().to_string(), "diagnostics": diags})
            )?
        );
    } else {
        print!("{}", sweep_table(&series));
        println!("chart: {}", args.svg.display());
    }
    Ok(code)
}
