//! `tvir eval`: evaluate a folder of reports against the TVIR-Bench tasks.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use serde_json::json;

use crate::config::{judge_config_from_environment, ConfigError, JudgeFlags};
use tvir_engine::output;
use tvir_engine::{
    discover, load_tasks, match_task, DedupMode, Engine, EvalSettings, ExtractionMode, JudgeMode,
    Pages, Progress, RevisionScope, ScoreOptions,
};
use tvir_judge::{ClientJudge, Judge, JudgeClient};
use tvir_rubric::RubricSet;
use tvir_sources::{FetchOptions, Fetcher};
use tvir_store::Store;

/// Boxed so the `Command` enum stays small (clippy's large_enum_variant).
#[derive(Debug, clap::Args)]
pub struct EvalArgs {
    #[command(flatten)]
    pub options: Box<EvalOptions>,
}

#[derive(Debug, clap::Args)]
pub struct EvalOptions {
    /// Reports: ROOT/{system}/{task_id}/report.md (or one report folder or file).
    #[arg(long, required_unless_present = "example")]
    pub reports: Option<PathBuf>,
    /// Task file (TVIR-Bench query.json).
    #[arg(long, required_unless_present = "example")]
    pub tasks: Option<PathBuf>,
    /// Output folder.
    #[arg(long, required_unless_present = "example")]
    pub out: Option<PathBuf>,
    /// Evaluate the example benchmark built into the binary (two systems x three
    /// tasks), writing into OUT; stands for --reports, --tasks and --out.
    #[arg(long, value_name = "OUT", conflicts_with_all = ["reports", "tasks", "out"])]
    pub example: Option<PathBuf>,
    /// Only these systems (repeatable).
    #[arg(long = "system")]
    pub systems: Vec<String>,
    /// Only these task ids (repeatable).
    #[arg(long = "task")]
    pub task_ids: Vec<String>,
    /// Judge model name (also the output folder name).
    #[arg(long, env = "TVIR_JUDGE_MODEL")]
    pub judge_model: Option<String>,
    /// Any OpenAI-compatible server, e.g. http://localhost:8000/v1.
    #[arg(long, env = "OPENAI_BASE_URL")]
    pub base_url: Option<String>,
    /// Judge requests in flight.
    #[arg(long, default_value_t = 16)]
    pub concurrency: usize,
    #[arg(long)]
    pub rpm: Option<u32>,
    #[arg(long)]
    pub tpm: Option<u32>,
    /// Independent judge samples (output folders get a -run{k} suffix).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub runs: u32,
    /// Judge and page cache (SQLite); default in the user's cache directory.
    #[arg(long)]
    pub cache: Option<PathBuf>,
    /// Settings file (default: ./tvir.toml when present).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub fetch: FetchOptions,
    /// Only judge-free metrics; judged metrics are reported as not evaluated.
    #[arg(long)]
    pub no_judge: bool,
    /// Count judge calls and estimated tokens, call nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Stop scheduling new judge calls once this much (USD) is spent.
    #[arg(long)]
    pub max_cost: Option<f64>,
    /// Completion-token limit of every judge call (default: derived from each
    /// rubric's answer schema, or the rubric's `max_tokens`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_tokens: Option<u32>,
    /// Timeout of one judge attempt, in seconds (default 120), for prompts up to 4,096
    /// tokens; longer prompts get it in proportion.
    #[arg(long, value_name = "SECS")]
    pub judge_timeout: Option<f64>,
    /// Retries of a judge call after a transient error (timeout, 429, 5xx); default 9.
    #[arg(long, value_name = "N")]
    pub judge_retries: Option<u32>,
    /// Skip the vision check and treat the judge as able to read images.
    #[arg(long)]
    pub assume_vision: bool,
    /// Ignore what earlier runs learnt about the judge server and model (accepted
    /// parameters, vision, prompts too long for its context) and learn it again,
    /// e.g. after the server was restarted with a longer context.
    #[arg(long)]
    pub relearn_judge: bool,
    /// Folder of rubric TOML files overriding the built-in ones.
    #[arg(long)]
    pub rubrics: Option<PathBuf>,
    /// Folder of prompt templates ({id}.j2) overriding the built-in ones.
    #[arg(long)]
    pub prompts: Option<PathBuf>,
    /// Fact de-duplication: pre-filter (default), judge-all (reference), off.
    #[arg(long, value_enum, default_value_t = DedupMode::Prefilter)]
    pub dedup: DedupMode,
    /// Keep the original captions for the report-level judges.
    #[arg(long)]
    pub no_caption_revision: bool,
    /// Judges that read revised captions: paper (IA, MC) or reference (also WQ, ADB, FLC).
    #[arg(long, value_enum, default_value_t = RevisionScope::Paper)]
    pub revision_scope: RevisionScope,
    /// Count failed units as 0 instead of leaving them out of the mean.
    #[arg(long)]
    pub failed_as_zero: bool,
    /// Longest side (pixels) of figures sent to vision judges.
    #[arg(long, default_value_t = 1024)]
    pub judge_image_max_side: u32,
    /// Who extracts references and facts: rules (the parser), judge (the judge for
    /// every report), auto (the judge only for reports whose parse the self-check
    /// calls suspect). Default: auto when a judge is configured, else rules.
    #[arg(long, value_enum)]
    pub extraction: Option<ExtractionMode>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    #[command(flatten)]
    pub batch: super::batch::BatchArgs,
}

const JUDGE_ADDS: &str = "A judge would add Citation Support, Instruction Alignment, Writing Quality, \
Analytical Depth & Breadth, Factual & Logical Consistency, Multimodal Composition, Chart Quality \
(and so Figure Quality for reports with charts), Figure Caption Quality, Figure-Context Integration, \
Chart-Source Consistency, and with them TA, VA, Overall and effective citations. Point it at any \
OpenAI-compatible server: OPENAI_BASE_URL=http://localhost:8000/v1 TVIR_JUDGE_MODEL=<model> \
(plus OPENAI_API_KEY if the server needs one).";

/// The indicatif bar behind the pipeline's progress seam.
struct Bar {
    bar: indicatif::ProgressBar,
    stats: Arc<tvir_engine::RunStats>,
}

impl Bar {
    fn refresh(&self) {
        use std::sync::atomic::Ordering::Relaxed;
        self.bar.set_message(format!(
            "calls {} | cache hits {} | failed {} | ${:.4}",
            self.stats.answers.load(Relaxed),
            self.stats.cache_hits.load(Relaxed),
            self.stats.failed_calls.load(Relaxed),
            self.stats.spend_usd()
        ));
    }
}

impl Progress for Bar {
    fn planned(&self, units: u64) {
        self.bar.inc_length(units);
    }
    fn finished(&self, units: u64, _failed: u64) {
        // Planned counts are an upper bound; never run past the length.
        let pos = self.bar.position() + units;
        if pos > self.bar.length().unwrap_or(0) {
            self.bar.set_length(pos);
        }
        self.bar.set_position(pos);
        self.refresh();
    }
    fn report_done(&self, _label: &str) {
        self.refresh();
    }
}

pub fn run(args: EvalArgs) -> anyhow::Result<ExitCode> {
    // Wall time of the whole command, as the process CPU time it is printed beside
    // (setup and batch passes included, not only the final evaluation).
    let started = Instant::now();
    let mut args = *args.options;
    // `--example OUT`: the embedded example, unpacked into a temporary folder that
    // lives until the run ends. Otherwise clap has required all three inputs.
    let _example = match args.example.take() {
        Some(out) => {
            let example = crate::example::Unpacked::new()?;
            args.reports = Some(example.reports());
            args.tasks = Some(example.tasks());
            args.out = Some(out);
            Some(example)
        }
        None => None,
    };
    let (Some(reports), Some(tasks_file), Some(out_dir)) =
        (args.reports.take(), args.tasks.take(), args.out.take())
    else {
        anyhow::bail!("--reports, --tasks and --out are required (or --example OUT)");
    };
    if args.no_judge && args.dry_run {
        anyhow::bail!("--no-judge and --dry-run exclude each other");
    }
    if args.concurrency == 0 {
        anyhow::bail!("--concurrency must be at least 1");
    }
    args.batch.check(args.no_judge, args.dry_run)?;
    let rubrics = Arc::new(
        RubricSet::load(args.rubrics.as_deref(), args.prompts.as_deref())
            .context("loading rubrics and prompts")?,
    );
    let tasks = load_tasks(&tasks_file)?;
    let mut jobs = discover(&reports)?;
    if !args.systems.is_empty() {
        jobs.retain(|j| args.systems.contains(&j.system));
    }
    let single = jobs.len() == 1 && args.task_ids.len() == 1;
    let mut planned = Vec::new();
    for job in jobs {
        // One report given on its own with one --task: that is its task.
        let task = if single {
            tasks.get(&args.task_ids[0])
        } else {
            match_task(&job.folder, &tasks)
        };
        let id = task.map_or(job.folder.as_str(), |t| t.id.as_str());
        if !single && !args.task_ids.is_empty() && !args.task_ids.iter().any(|t| t == id) {
            continue;
        }
        planned.push((job, task.cloned()));
    }
    if planned.is_empty() {
        anyhow::bail!(
            "{}: no report left after --system/--task filters",
            reports.display()
        );
    }

    let timeout = match args.judge_timeout {
        Some(s) if s.is_finite() && s > 0.0 => Some(std::time::Duration::from_secs_f64(s)),
        Some(s) => anyhow::bail!("--judge-timeout {s}: must be a positive number of seconds"),
        None => None,
    };
    let flags = JudgeFlags {
        max_tokens: args.max_tokens,
        timeout,
        max_attempts: args.judge_retries.map(|r| r.saturating_add(1)),
        assume_vision: args.assume_vision,
        relearn: args.relearn_judge,
        base_url: args.base_url.clone(),
        model: args.judge_model.clone(),
        concurrency: Some(args.concurrency),
        rpm: args.rpm,
        tpm: args.tpm,
        dry_run: args.dry_run,
        max_cost_usd: args.max_cost,
        journal_path: Some(out_dir.join("judge-journal.jsonl")),
        ..JudgeFlags::default()
    };
    // A judge is configured when a model is named and there is somewhere to send it:
    // a key (OpenAI or any keyed server) or an explicit base URL (local servers).
    let resolved = judge_config_from_environment(&flags, args.config.as_deref());
    let judge_config = match resolved {
        Ok(c) if c.api_key.is_some() || c.base_url != tvir_judge::DEFAULT_BASE_URL => Some(c),
        Ok(_) => None,
        Err(ConfigError::Invalid {
            setting: "judge model",
            ..
        }) => None,
        Err(e) if args.no_judge => {
            tracing::debug!("judge settings ignored under --no-judge: {e}");
            None
        }
        Err(e) => return Err(e).context("judge settings"),
    };
    let mode = if args.dry_run {
        JudgeMode::DryRun
    } else if args.no_judge {
        JudgeMode::NoJudge
    } else if judge_config.is_none() {
        eprintln!("No judge configured: running with --no-judge (judge-free metrics only).");
        JudgeMode::NoJudge
    } else {
        JudgeMode::Judge
    };
    let extraction = match (args.extraction, mode) {
        (Some(ExtractionMode::Rules) | None, JudgeMode::NoJudge) => ExtractionMode::Rules,
        (Some(m), JudgeMode::NoJudge) => {
            anyhow::bail!("--extraction {m:?} needs a judge (none is configured, or --no-judge)")
        }
        (Some(m), _) => m,
        (None, _) => ExtractionMode::Auto,
    };
    let judge_model = judge_config
        .as_ref()
        .map(|c| c.model.clone())
        .or_else(|| args.judge_model.clone())
        .unwrap_or_else(|| "no-judge".into());

    let store = if mode != JudgeMode::NoJudge || args.cache.is_some() {
        let path = match &args.cache {
            Some(p) => p.clone(),
            None => dirs::cache_dir()
                .context("no user cache directory: pass --cache PATH")?
                .join("tvir-eval")
                .join("cache.sqlite"),
        };
        Some(Store::open(&path)?)
    } else {
        None
    };
    let fetcher = Fetcher::new(args.fetch.to_config(), store.clone())?;
    let batch_prices = judge_config
        .as_ref()
        .map(|c| super::batch::price_of(&c.model, c.price_table_path.as_deref()));
    let mut batch_engine = None;
    let judge: Option<Arc<dyn Judge>> = match (mode, judge_config) {
        (JudgeMode::NoJudge, _) => None,
        (JudgeMode::Judge, Some(mut config)) if args.batch.active() => {
            config.metric_max_tokens = rubrics
                .rubrics()
                .filter_map(|r| r.max_tokens.map(|n| (r.id.clone(), n)))
                .collect();
            let client = JudgeClient::new(config, store.clone())?;
            let engine = args.batch.engine(client)?;
            batch_engine = Some(engine.clone());
            Some(Arc::new(
                tvir_judge::batch::BatchJudge::new(engine).map_err(anyhow::Error::msg)?,
            ))
        }
        (_, Some(mut config)) => {
            config.metric_max_tokens = rubrics
                .rubrics()
                .filter_map(|r| r.max_tokens.map(|n| (r.id.clone(), n)))
                .collect();
            let client = JudgeClient::new(config, store.clone())?;
            Some(Arc::new(
                ClientJudge::new(client).map_err(anyhow::Error::msg)?,
            ))
        }
        // A dry run without a configured judge still counts requests.
        (_, None) => None,
    };
    let settings = EvalSettings {
        judge_model: judge_model.clone(),
        runs: args.runs,
        concurrency: args.concurrency,
        report_parallelism: args.concurrency.clamp(4, 32),
        mode,
        dedup: args.dedup,
        caption_revision: !args.no_caption_revision,
        revision_scope: args.revision_scope,
        judge_image_max_side: args.judge_image_max_side,
        extraction,
        score: ScoreOptions {
            failed_as_zero: args.failed_as_zero,
            ..ScoreOptions::for_rubrics(&rubrics)
        },
        ..EvalSettings::default()
    };
    let settings_json = json!({
        "judge_model": judge_model, "runs": args.runs, "mode": mode, "dedup": args.dedup,
        "caption_revision": !args.no_caption_revision, "revision_scope": args.revision_scope,
        "score": settings.score, "extraction": extraction,
    });
    let pages: Arc<dyn Pages> = Arc::new(fetcher);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    if let Some(batch) = &batch_engine {
        // Batch passes until nothing is pending; then the run below writes the
        // outputs from the cache exactly as a live run does.
        let make = || {
            Engine::new(
                rubrics.clone(),
                judge.clone(),
                Some(pages.clone()),
                settings.clone(),
            )
        };
        let complete = runtime.block_on(super::batch::drive(
            batch,
            &args.batch,
            make,
            planned.clone(),
        ))?;
        if !complete {
            return Ok(ExitCode::SUCCESS);
        }
    }
    // Named in the --no-judge summary next to the paper's metrics.
    let added_titles: Vec<String> = rubrics.added_metrics().map(|r| r.title.clone()).collect();
    let mut engine = Engine::new(rubrics, judge, Some(pages), settings);
    if let Some(store) = &store {
        engine = engine.with_figure_store(store.clone());
    }
    let show_bar = !args.quiet && std::io::stderr().is_terminal();
    if show_bar {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} units | {msg}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar.enable_steady_tick(std::time::Duration::from_millis(200));
        let stats = engine.stats.clone();
        engine = engine.with_progress(Arc::new(Bar { bar, stats }));
    }

    std::fs::create_dir_all(&out_dir)
        .with_context(|| format!("{}: cannot create output folder", out_dir.display()))?;
    let write_errors = std::sync::Mutex::new(Vec::<String>::new());
    let out = out_dir.clone();
    // Each report's records are written as soon as they are final and dropped; only
    // compact rows (scores, counts, usage) stay for the summary and the table.
    let failed_units = std::sync::atomic::AtomicUsize::new(0);
    let mut records: Vec<_> = runtime
        .block_on(engine.evaluate_each(planned, &|recs, mut report_timing| {
            let mut rows = Vec::with_capacity(recs.len());
            let started = Instant::now();
            // `write` times the metric files; report.json, which carries the
            // timings, is written after them.
            let (written, cpu) = tvir_engine::timing::with_cpu(|| {
                recs.iter()
                    .map(|r| output::write_metric_files(&out, r))
                    .collect::<Vec<_>>()
            });
            report_timing.write = tvir_engine::timing::StageTime::new(started.elapsed(), cpu);
            engine
                .timing
                .add(tvir_engine::timing::Stage::Write, report_timing.write);
            for (r, w) in recs.iter().zip(written) {
                let w = w
                    .and_then(|()| output::write_report_json(&out, r, Some(&report_timing)))
                    .and_then(|()| output::write_timing(&out, r, &report_timing));
                if let Err(e) = w {
                    write_errors
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(e.to_string());
                }
            }
            for r in recs {
                if r.load_error().is_none() {
                    failed_units
                        .fetch_add(r.failed_unit_count(), std::sync::atomic::Ordering::Relaxed);
                }
                rows.push(r.compact());
            }
            rows
        }))
        .into_iter()
        .flatten()
        .collect();
    records.sort_by(|a, b| (&a.system, &a.task_id, a.run).cmp(&(&b.system, &b.task_id, b.run)));
    let failed_units = failed_units.into_inner();
    let errors = write_errors.into_inner().unwrap_or_else(|p| p.into_inner());
    if let Some(e) = errors.first() {
        anyhow::bail!("writing results: {e}");
    }
    let summary = output::summary(&records, &settings_json);
    output::write_summary(&out_dir, &summary)?;
    let stats = &engine.stats;
    use std::sync::atomic::Ordering::Relaxed;
    let (wall, cpu) = (started.elapsed(), tvir_engine::timing::process_cpu());
    output::write_run_stats(
        &out_dir,
        &json!({
            "wall_seconds": wall.as_secs_f64(),
            "requests_built": stats.requests.load(Relaxed),
            "answers": stats.answers.load(Relaxed),
            "cache_hits": stats.cache_hits.load(Relaxed),
            "failed_calls": stats.failed_calls.load(Relaxed),
            "skipped_calls": stats.skipped_calls.load(Relaxed),
            "spend_usd": stats.spend_usd(),
            "estimated_prompt_tokens": stats.estimated_prompt_tokens(),
            "estimated_cost_usd": stats.estimated_cost_usd(),
            "reports": records.len(),
            "figures": {
                "encoded": engine.images.encoded.load(Relaxed),
                "facts_reused": engine.figure_facts.hits.load(Relaxed),
                "facts_computed": engine.figure_facts.computed.load(Relaxed),
            },
            "timing": engine.timing.to_json(wall, cpu),
        }),
    )?;
    let time_line = engine.timing.line(wall, cpu);

    print!("{}", output::table(&summary));
    let broken_reports = records.iter().filter(|r| r.load_error().is_some()).count();
    match mode {
        JudgeMode::DryRun => println!(
            "dry run: {} judge requests, about {} prompt tokens{}; nothing was called",
            stats.requests.load(Relaxed),
            stats.estimated_prompt_tokens(),
            stats.estimated_cost_usd().map_or_else(String::new, |c| {
                super::batch::dry_run_costs(c, batch_prices.flatten(), args.max_cost)
            })
        ),
        JudgeMode::NoJudge => {
            let added = if added_titles.is_empty() {
                String::new()
            } else {
                format!(
                    " With the rubrics of --rubrics it would also add {}.",
                    added_titles.join(", ")
                )
            };
            println!("judged metrics not evaluated (--no-judge). {JUDGE_ADDS}{added}")
        }
        JudgeMode::Judge => println!(
            "{} judge answers ({} from cache), {} failed units, spend ${:.4}",
            stats.answers.load(Relaxed),
            stats.cache_hits.load(Relaxed),
            failed_units,
            stats.spend_usd()
        ),
    }
    print!("{}", suspect_lines(&records));
    println!("{time_line}");
    println!("results: {}", out_dir.display());
    if failed_units > 0 || broken_reports > 0 {
        if broken_reports > 0 {
            eprintln!(
                "{broken_reports} report(s) could not be read (see the failed `report_load` unit in their report.json)"
            );
        }
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// The reports whose rules parse the self-check called suspect, with why and what
/// was done about it (printed at the end of `tvir eval`).
fn suspect_lines(records: &[tvir_engine::record::ReportRecord]) -> String {
    let mut seen = std::collections::BTreeSet::new();
    let mut out = String::new();
    let suspect: Vec<_> = records
        .iter()
        .filter(|r| r.extraction_suspect())
        .filter(|r| seen.insert((r.system.clone(), r.task_id.clone())))
        .collect();
    if suspect.is_empty() {
        return out;
    }
    out.push_str(&format!(
        "{} report(s) with a suspect parse (extraction self-check):\n",
        suspect.len()
    ));
    for r in suspect {
        let Some(e) = &r.extraction else { continue };
        let used = match (&e.method, &e.judge) {
            (tvir_report::ExtractionMethod::Judge, _) => "judge extraction used".to_string(),
            (_, Some(j)) => format!(
                "judge extraction {}{}; rules parse kept",
                j.status,
                j.reason
                    .as_deref()
                    .map(|x| format!(" ({x})"))
                    .unwrap_or_default()
            ),
            _ => "rules parse kept (--extraction rules)".to_string(),
        };
        out.push_str(&format!(
            "  {}/{}: {} [{used}]\n",
            r.system,
            r.task_id,
            e.reasons.join("; ")
        ));
    }
    out
}
