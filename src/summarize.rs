//! `tvir summarize OUT`: leaderboards from an `eval` output folder.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use tvir_analysis::aggregate::{self, html, render, site, summary::NamedAgreement};
use tvir_analysis::agree::AgreeReport;
use tvir_analysis::significance;

/// The HTML summary's default folder inside the output folder (`OUT/summary`).
const SUMMARY_DIR: &str = "summary";

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SummaryFormat {
    /// Aligned text for the terminal.
    Table,
    /// Markdown tables.
    Md,
    /// One row per (judge, scope, group, system); scores 0-100.
    Csv,
    /// The full summary; scores as fractions in [0, 1].
    Json,
    /// A folder of static pages (`OUT/summary/index.html` first, one page per
    /// report, each picture once); prints the path of `index.html`.
    Html,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Sections {
    All,
    FirstRun,
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum HtmlEvidence {
    /// Deflated in the page, inflated by the folder's `evidence.js` when it opens.
    Packed,
    /// Plain markup.
    Plain,
}

#[derive(Debug, clap::Args)]
pub struct SummarizeArgs {
    /// The `eval` output folder (`OUT/{system}/{task_id}/{judge_model}/report.json`).
    pub out: PathBuf,
    /// Task file (TVIR `query.json`) for breakdowns by language, complexity, domain.
    #[arg(long)]
    pub tasks: Option<PathBuf>,
    /// Output format: a terminal table, Markdown, CSV, JSON or a folder of HTML pages.
    #[arg(long, value_enum, default_value_t = SummaryFormat::Table)]
    pub format: SummaryFormat,
    /// `tvir agree --json` outputs to show (HTML, JSON, Markdown, table).
    #[arg(long = "agree", value_name = "AGREE_JSON")]
    pub agree: Vec<PathBuf>,
    /// Report folders (`ROOT/{system}/{task_id}/`) for figure pictures in HTML, only
    /// for outputs written before `tvir eval` put thumbnails in the output folder.
    #[arg(long)]
    pub reports: Option<PathBuf>,
    /// Per-report sections of the HTML page: every run, the first run only, or none.
    #[arg(long, value_enum, default_value_t = Sections::All)]
    pub sections: Sections,
    /// How each report page stores its units and sources: `packed` (deflated,
    /// shown by a small shared script: a fraction of the bytes) or `plain`
    /// (markup readable with scripts off).
    #[arg(long, value_enum, default_value_t = HtmlEvidence::Packed)]
    pub html_evidence: HtmlEvidence,
    /// Only this judge model (folder name without `-run{k}`).
    #[arg(long)]
    pub judge: Option<String>,
    /// Write to this file instead of standard output (not with `--format html`,
    /// which writes a folder: see `--html-out`).
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    /// Folder of the HTML summary (default `OUT/summary`); replaced when it holds an
    /// earlier summary, refused when it holds anything else.
    #[arg(long, value_name = "DIR")]
    pub html_out: Option<PathBuf>,
    /// Bootstrap resamples over tasks for the intervals of every level (0: no
    /// intervals, pairwise tests or rank groups).
    #[arg(long, default_value_t = 10_000)]
    pub bootstrap: usize,
    /// Random sign patterns of the pairwise test when a pair shares more than 20
    /// tasks (fewer are enumerated exactly).
    #[arg(long, default_value_t = 10_000)]
    pub permutations: usize,
    /// Put runs made under different protocols (`tvir eval --protocol`) in one
    /// leaderboard anyway (refused by default: their scores are not comparable).
    #[arg(long)]
    pub mix_protocols: bool,
    /// Seed of the bootstrap and permutations (the default is fixed, so the same
    /// outputs give the same page).
    #[arg(long, default_value_t = significance::DEFAULT_SEED)]
    pub seed: u64,
}

impl SummarizeArgs {
    /// Settings of the significance analysis; `None` with `--bootstrap 0`.
    fn significance(&self) -> Option<significance::Options> {
        (self.bootstrap > 0).then(|| significance::Options {
            resamples: self.bootstrap,
            permutations: self.permutations,
            seed: self.seed,
            ..Default::default()
        })
    }
}

fn load_agreement(path: &PathBuf) -> anyhow::Result<NamedAgreement> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("{}: cannot read agreement file", path.display()))?;
    let report: AgreeReport = serde_json::from_str(&text)
        .with_context(|| format!("{}: not a `tvir agree --json` output", path.display()))?;
    Ok(NamedAgreement {
        label: path.display().to_string(),
        report,
    })
}

fn agreement_text(agreements: &[NamedAgreement], md: bool) -> String {
    let mut out = String::new();
    for a in agreements {
        let t = render::TextTable {
            title: format!(
                "Agreement: {} (A {} vs B {})",
                a.label, a.report.a, a.report.b
            ),
            headers: super::agree::agreement_headers(),
            rows: a
                .report
                .levels
                .iter()
                .map(|(level, l)| super::agree::level_row(level, l))
                .collect(),
        };
        out.push_str(&if md { t.markdown() } else { t.terminal() });
        out.push('\n');
        for t in tvir_analysis::aggregate::agreement_tables::rater_tables(&a.report) {
            out.push_str(&if md { t.markdown() } else { t.terminal() });
            out.push('\n');
        }
    }
    out
}

/// Every distinct protocol the records were made under (`tvir eval --protocol`),
/// described with its settings; records written before it was recorded are
/// `unrecorded`.
fn protocols_of(tree: &aggregate::EvalTree) -> Vec<String> {
    let mut seen = std::collections::BTreeSet::new();
    for r in &tree.records {
        seen.insert(match &r.record.protocol {
            Some(p) => p.describe(),
            None => "unrecorded (written before protocols were recorded)".to_string(),
        });
    }
    seen.into_iter().collect()
}

pub fn run(args: SummarizeArgs) -> anyhow::Result<ExitCode> {
    if args.format == SummaryFormat::Html && args.output.is_some() {
        anyhow::bail!("--format html writes a folder; give it with --html-out DIR, not --output");
    }
    // Compact: each record's units are counted and dropped as it is read (the HTML
    // pages read their report again, one at a time).
    let tree = aggregate::load_eval_tree_compact(&args.out)?;
    let tasks = match &args.tasks {
        Some(p) => aggregate::load_tasks(p)?,
        None => Default::default(),
    };
    let mut tree = tree;
    if let Some(j) = &args.judge {
        tree.retain_judge(j).map_err(anyhow::Error::msg)?;
    }
    if args.format == SummaryFormat::Html
        && args.html_out.is_none()
        && tree.records.iter().any(|r| r.system == SUMMARY_DIR)
    {
        // Checked before the analysis: the default folder would be that system's.
        anyhow::bail!(
            "{}: holds a system named {SUMMARY_DIR:?}, whose folder is where the HTML summary goes by default; give the summary another folder with --html-out DIR",
            args.out.display()
        );
    }
    let protocols = protocols_of(&tree);
    if protocols.len() > 1 && !args.mix_protocols {
        anyhow::bail!(
            "{}: runs made under different protocols cannot share a leaderboard (pass --mix-protocols to put them together anyway):\n  {}",
            args.out.display(),
            protocols.join("\n  ")
        );
    }
    let tasks_label = args.tasks.as_ref().map(|p| p.display().to_string());
    let mut summary = aggregate::summarize_tree(&tree, &tasks, tasks_label.as_deref());
    for p in &protocols {
        summary.notes.push(format!("protocol: {p}"));
    }
    let levels: std::collections::BTreeSet<&String> = summary
        .judges
        .iter()
        .flat_map(|j| j.systems.iter().filter_map(|s| s.levels_from.as_ref()))
        .collect();
    let levels: Vec<String> = levels
        .into_iter()
        .map(|l| format!("TA, VA and Overall of a system: {l}"))
        .collect();
    summary.notes.extend(levels);
    for p in &args.agree {
        summary.agreements.push(load_agreement(p)?);
    }
    if let Some(options) = args.significance() {
        aggregate::add_significance(&mut summary, &tree.records, &options)?;
    }
    let text = match args.format {
        SummaryFormat::Table => {
            render::to_terminal(&summary) + &agreement_text(&summary.agreements, false)
        }
        SummaryFormat::Md => {
            render::to_markdown(&summary) + &agreement_text(&summary.agreements, true)
        }
        SummaryFormat::Csv => render::to_csv(&summary),
        SummaryFormat::Json => serde_json::to_string_pretty(&summary)? + "\n",
        SummaryFormat::Html => {
            let opts = html::HtmlOptions {
                sections: match args.sections {
                    Sections::All => html::ReportSections::All,
                    Sections::FirstRun => html::ReportSections::FirstRun,
                    Sections::None => html::ReportSections::None,
                },
                reports_root: args.reports.clone(),
                evidence: match args.html_evidence {
                    HtmlEvidence::Packed => aggregate::packed::EvidenceEncoding::Packed,
                    HtmlEvidence::Plain => aggregate::packed::EvidenceEncoding::Plain,
                },
                ..Default::default()
            };
            let dir = args
                .html_out
                .clone()
                .unwrap_or_else(|| args.out.join(SUMMARY_DIR));
            let stats = site::write_site(&summary, &tree.records, &opts, &dir)
                .map_err(anyhow::Error::msg)?;
            eprintln!(
                "summary: index.html {} bytes, {} report pages, {} pictures, {} bytes in all",
                stats.index_bytes, stats.report_pages, stats.pictures, stats.total_bytes
            );
            format!("{}\n", stats.index.display())
        }
    };
    match &args.output {
        Some(p) => {
            std::fs::write(p, text).with_context(|| format!("{}: cannot write", p.display()))?
        }
        None => {
            use std::io::Write;
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(text.as_bytes())?;
        }
    }
    for issue in &summary.load_issues {
        eprintln!("warning: {}: {}", issue.path, issue.message);
    }
    Ok(if summary.load_issues.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
