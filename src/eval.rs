//! `tvir eval`: evaluate a folder of reports against the TVIR-Bench tasks.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::Context;
use serde_json::json;

use crate::config::{judge_config_from_environment, ConfigError, JudgeFlags};
use tvir_engine::record::ReportRecord;
use tvir_engine::timing::{self, ReportTiming};
use tvir_engine::{
    discover, load_tasks, match_task, Engine, EvalSettings, ExtractionMode, JudgeMode, Pages,
    Progress, ReportJob, ScoreOptions, Task,
};
use tvir_engine::{output, RunStats};
use tvir_judge::batch::BatchEngine;
use tvir_judge::prices::ModelPrice;
use tvir_judge::{ClientJudge, Judge, JudgeClient, JudgeConfig};
use tvir_rubric::RubricSet;
use tvir_sources::Fetcher;
use tvir_store::Store;

/// Boxed so the `Command` enum stays small (clippy's large_enum_variant).
#[derive(Debug, clap::Args)]
pub struct EvalArgs {
    #[command(flatten)]
    pub options: Box<EvalOptions>,
}

mod options;
pub use options::EvalOptions;

mod choices;
mod protocol;
pub use choices::*;

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
    let (_example, inputs) = resolve_inputs(&mut args)?;
    check_flags(&args)?;
    let (protocol, rubrics) = protocol::protocol_and_rubrics(&mut args)?;
    let rubrics = Arc::new(rubrics);
    let planned = plan_jobs(&args, &inputs.reports, &inputs.tasks)?;
    let choice = choose_judge(&args, &inputs.out)?;
    let store = open_store(&args, choice.mode)?;
    let fetcher = Fetcher::new(args.fetch.to_config(), store.clone())?;
    let (mode, judge_model) = (choice.mode, choice.judge_model.clone());
    let wiring = wire_judge(&args, choice, &rubrics, &store)?;
    let mut settings = eval_settings(&args, mode, wiring.extraction, &judge_model, &rubrics);
    settings.protocol = Some(protocol.record(
        &settings,
        args.fetch.fetcher,
        args.answers,
        args.mc_band,
        &rubrics,
    ));
    let settings_json = settings_json(&settings, args.runs);
    let pages: Arc<dyn Pages> = Arc::new(fetcher);
    let renderer = renderer_of(&args, &store, &pages)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let make = || {
        let judge = wiring.judge.clone();
        Engine::new(
            rubrics.clone(),
            judge,
            Some(pages.clone()),
            settings.clone(),
        )
        .with_renderer(renderer.clone())
    };
    let passes = batch_passes(&runtime, &wiring, &args, make, &planned);
    if !passes.as_ref().is_ok_and(|go_on| *go_on) {
        runtime.block_on(renderer.close());
        return passes.map(|_| ExitCode::SUCCESS);
    }
    // Named in the --no-judge summary next to the paper's metrics.
    let added_titles: Vec<String> = rubrics.added_metrics().map(|r| r.title.clone()).collect();
    let engine = build_engine(&args, rubrics, wiring.judge, pages, settings, &store)
        .with_renderer(renderer.clone());
    let evaluated = evaluate_and_write(&runtime, &engine, planned, &inputs.out);
    // The browser ends with the run, whatever became of it.
    runtime.block_on(renderer.close());
    let evaluated = evaluated?;
    let summary = output::summary(&evaluated.records, &settings_json);
    output::write_summary(&inputs.out, &summary)?;
    let time_line = write_run_stats(
        &inputs.out,
        &engine,
        evaluated.records.len(),
        evaluated.thumbnails_written,
        started,
    )?;
    print!("{}", output::table(&summary));
    let costs = Costs {
        batch_price: wiring.batch_prices.flatten(),
        max_cost: args.max_cost,
    };
    print_judge_line(
        mode,
        &engine.stats,
        evaluated.failed_units,
        &added_titles,
        costs,
    );
    if mode == JudgeMode::Judge {
        print_pages_line(&engine.page_watch.tally());
    }
    print!("{}", suspect_lines(&evaluated.records));
    print!("{}", render_line(&renderer));
    println!("{time_line}");
    println!("results: {}", inputs.out.display());
    Ok(exit_status(&evaluated))
}

/// The render stage of the run: the browser (flags, environment, tvir.toml, PATH),
/// the render cache in the run's store, resources through the fetcher.
fn renderer_of(
    args: &EvalOptions,
    store: &Option<Store>,
    pages: &Arc<dyn Pages>,
) -> anyhow::Result<Arc<tvir_engine::Renderer>> {
    let (choice, max_pages) =
        crate::config::browser_from_environment(&args.browser, args.config.as_deref())?;
    let mut settings = tvir_engine::RenderSettings::new(choice);
    if let Some(n) = max_pages {
        settings.max_pages = n.max(1);
    }
    Ok(Arc::new(tvir_engine::Renderer::new(
        settings,
        store.clone(),
        Some(pages.clone()),
    )))
}

/// One line on the charts drawn by script: how many were rendered, from the cache
/// or by a browser, and how many could not be (said once for the whole run).
pub(crate) fn render_line(renderer: &tvir_engine::Renderer) -> String {
    use std::sync::atomic::Ordering::Relaxed;
    let c = &renderer.counters;
    let mut out = String::new();
    let (charts, pages, hits, starts) = (
        c.charts.load(Relaxed),
        c.pages_rendered.load(Relaxed),
        c.cache_hits.load(Relaxed),
        c.browser_starts.load(Relaxed),
    );
    if pages + hits > 0 {
        out.push_str(&format!(
            "charts drawn by script: {charts} rendered ({pages} pages rendered, {hits} from the render cache, {starts} browser start(s))\n"
        ));
    }
    out.push_str(&renderer.incomplete_lines());
    let skipped = c.skipped_charts.load(Relaxed);
    if skipped > 0 {
        let reason = renderer
            .unavailable_reason()
            .unwrap_or("the browser could not be started");
        out.push_str(&format!(
            "note: {skipped} chart(s) drawn by script in {} report(s) not evaluated: {reason}\n",
            c.skipped_reports.load(Relaxed)
        ));
    }
    out
}

/// The run settings as summary.json records them.
fn settings_json(settings: &EvalSettings, runs: u32) -> serde_json::Value {
    json!({
        "judge_model": settings.judge_model, "runs": runs, "mode": settings.mode,
        "dedup": settings.dedup, "dedup_keep": settings.dedup_keep,
        "caption_revision": settings.caption_revision,
        "revision_scope": settings.revision_scope, "score": settings.score,
        "extraction": settings.extraction, "image_size": settings.image_size,
        "source_chars": settings.source_chars.unwrap_or(0),
        "csc_unreadable": settings.csc_unreadable,
        "unread": settings.unread,
        "figure_kinds": settings.figure_kinds, "settle": settings.settle,
        "protocol": settings.protocol,
    })
}

/// Under `--batch`: passes until nothing is pending (true: the final run writes the
/// outputs from the cache exactly as a live run does) or the current wave has been
/// handed over (false: exit 0, re-run later). Without it: true.
fn batch_passes(
    runtime: &tokio::runtime::Runtime,
    wiring: &Wiring,
    args: &EvalOptions,
    make_engine: impl Fn() -> Engine,
    planned: &[(ReportJob, Option<Task>)],
) -> anyhow::Result<bool> {
    match &wiring.batch {
        Some(batch) => runtime.block_on(super::batch::drive(
            batch,
            &args.batch,
            make_engine,
            planned.to_vec(),
        )),
        None => Ok(true),
    }
}

/// Reports, tasks file and output folder of the run.
struct Inputs {
    reports: PathBuf,
    tasks: PathBuf,
    out: PathBuf,
}

/// The three inputs: `--example OUT` unpacks the embedded example into a temporary
/// folder (which lives as long as the returned guard) and stands for them;
/// otherwise clap has required all three.
fn resolve_inputs(
    args: &mut EvalOptions,
) -> anyhow::Result<(Option<crate::example::Unpacked>, Inputs)> {
    let example = match args.example.take() {
        Some(out) => {
            let example = crate::example::Unpacked::new()?;
            args.reports = Some(example.reports());
            args.tasks = Some(example.tasks());
            args.out = Some(out);
            Some(example)
        }
        None => None,
    };
    let (Some(reports), Some(tasks), Some(out)) =
        (args.reports.take(), args.tasks.take(), args.out.take())
    else {
        anyhow::bail!("--reports, --tasks and --out are required (or --example OUT)");
    };
    Ok((
        example,
        Inputs {
            reports,
            tasks,
            out,
        },
    ))
}

/// Flag combinations refused before any work.
fn check_flags(args: &EvalOptions) -> anyhow::Result<()> {
    if args.no_judge && args.dry_run {
        anyhow::bail!("--no-judge and --dry-run exclude each other");
    }
    if args.concurrency == 0 {
        anyhow::bail!("--concurrency must be at least 1");
    }
    args.batch.check(args.no_judge, args.dry_run)
}

/// Every report to evaluate with its task, after the --system/--task filters.
fn plan_jobs(
    args: &EvalOptions,
    reports: &Path,
    tasks_file: &Path,
) -> anyhow::Result<Vec<(ReportJob, Option<Task>)>> {
    let tasks = load_tasks(tasks_file)?;
    let mut jobs = discover(reports)?;
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
    Ok(planned)
}

/// The judge as settings, environment and flags configure it, and what the run
/// does with it.
struct JudgeChoice {
    config: Option<JudgeConfig>,
    mode: JudgeMode,
    extraction: ExtractionMode,
    /// Output folder name: the configured model, else `--judge-model`, else `no-judge`.
    judge_model: String,
}

/// Resolve the judge settings, then the judge mode and the extractor. Tells the
/// user when no judge is configured.
fn choose_judge(args: &EvalOptions, out_dir: &Path) -> anyhow::Result<JudgeChoice> {
    let flags = judge_flags(args, out_dir)?;
    // A judge is configured when a model is named and there is somewhere to send it:
    // a key (OpenAI or any keyed server) or an explicit base URL (local servers).
    let config = match judge_config_from_environment(&flags, args.config.as_deref()) {
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
    } else if config.is_none() {
        eprintln!("No judge configured: running with --no-judge (judge-free metrics only).");
        JudgeMode::NoJudge
    } else {
        JudgeMode::Judge
    };
    let extraction = match (args.extraction.map(ExtractionMode::from), mode) {
        (Some(ExtractionMode::Rules) | None, JudgeMode::NoJudge) => ExtractionMode::Rules,
        (Some(m), JudgeMode::NoJudge) => {
            anyhow::bail!("--extraction {m:?} needs a judge (none is configured, or --no-judge)")
        }
        (Some(m), _) => m,
        (None, _) => ExtractionMode::Auto,
    };
    let judge_model = config
        .as_ref()
        .map(|c| c.model.clone())
        .or_else(|| args.judge_model.clone())
        .unwrap_or_else(|| "no-judge".into());
    Ok(JudgeChoice {
        config,
        mode,
        extraction,
        judge_model,
    })
}

/// The judge flags of the command line (the journal goes into the output folder).
fn judge_flags(args: &EvalOptions, out_dir: &Path) -> anyhow::Result<JudgeFlags> {
    let timeout = match args.judge_timeout {
        Some(s) if s.is_finite() && s > 0.0 => Some(std::time::Duration::from_secs_f64(s)),
        Some(s) => anyhow::bail!("--judge-timeout {s}: must be a positive number of seconds"),
        None => None,
    };
    Ok(JudgeFlags {
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
        journal_path: Some(out_dir.join("judge-journal.jsonl.zst")),
        ..JudgeFlags::default()
    })
}

/// The judge and page cache: opened when judges may be asked or `--cache` names
/// one (default path in the user's cache directory).
fn open_store(args: &EvalOptions, mode: JudgeMode) -> anyhow::Result<Option<Store>> {
    if mode == JudgeMode::NoJudge && args.cache.is_none() {
        return Ok(None);
    }
    let path = match &args.cache {
        Some(p) => p.clone(),
        None => dirs::cache_dir()
            .context("no user cache directory: pass --cache PATH")?
            .join("tvir-eval")
            .join("cache.sqlite"),
    };
    Ok(Some(Store::open(&path)?))
}

/// The judge of the run, wired from the chosen configuration.
struct Wiring {
    /// None without a judge (a dry run without one still counts requests).
    judge: Option<Arc<dyn Judge>>,
    /// The Batch API engine under `--batch`.
    batch: Option<Arc<BatchEngine>>,
    /// Batch prices of the configured model, for the dry-run cost line.
    batch_prices: Option<Option<ModelPrice>>,
    extraction: ExtractionMode,
}

/// Build the judge client (live, or behind the Batch API under `--batch`), with each
/// rubric's completion-token limit.
fn wire_judge(
    args: &EvalOptions,
    choice: JudgeChoice,
    rubrics: &RubricSet,
    store: &Option<Store>,
) -> anyhow::Result<Wiring> {
    let batch_prices = choice
        .config
        .as_ref()
        .map(|c| super::batch::price_of(&c.model, c.price_table_path.as_deref()));
    let mut batch = None;
    let judge: Option<Arc<dyn Judge>> = match (choice.mode, choice.config) {
        (JudgeMode::NoJudge, _) | (_, None) => None,
        (mode, Some(mut config)) => {
            config.plain_json = args.answers == Some(AnswersArg::Json);
            // Under the reference's layout a schema in the prompt ends the system
            // message, with the instructions, and a figure ends the user message.
            if rubrics.prompt_order() == tvir_rubric::PromptOrder::Reference {
                config.schema_place = tvir_judge::protocol::SchemaPlace::EndOfSystem;
            }
            config.metric_max_tokens = rubrics
                .rubrics()
                .filter_map(|r| r.max_tokens.map(|n| (r.id.clone(), n)))
                .collect();
            let client = JudgeClient::new(config, store.clone())?;
            if mode == JudgeMode::Judge && args.batch.active() {
                let engine = args.batch.engine(client)?;
                batch = Some(engine.clone());
                Some(Arc::new(
                    tvir_judge::batch::BatchJudge::new(engine).map_err(anyhow::Error::msg)?,
                ))
            } else {
                Some(Arc::new(
                    ClientJudge::new(client).map_err(anyhow::Error::msg)?,
                ))
            }
        }
    };
    Ok(Wiring {
        judge,
        batch,
        batch_prices,
        extraction: choice.extraction,
    })
}

/// The engine settings from the flags and the chosen judge.
fn eval_settings(
    args: &EvalOptions,
    mode: JudgeMode,
    extraction: ExtractionMode,
    judge_model: &str,
    rubrics: &RubricSet,
) -> EvalSettings {
    EvalSettings {
        judge_model: judge_model.to_string(),
        runs: args.runs,
        concurrency: args.concurrency,
        report_parallelism: args.concurrency.clamp(4, 32),
        mode,
        dedup: args.dedup.unwrap_or(DedupArg::Prefilter).into(),
        dedup_keep: args.dedup_keep.into(),
        caption_revision: !args.no_caption_revision,
        revision_scope: args.revision_scope.into(),
        image_size: args.image_size,
        source_chars: (args.source_chars > 0).then_some(args.source_chars),
        csc_unreadable: args
            .csc_unreadable
            .unwrap_or(CscUnreadableArg::Judge)
            .into(),
        unread: args.unread.unwrap_or(UnreadArg::Ours).into(),
        extraction,
        figure_kinds: args.figure_kinds.unwrap_or(FigureKindsArg::Content).into(),
        settle: args.settle.unwrap_or(SettleArg::Certain).into(),
        score: ScoreOptions {
            failed_as_zero: args.failed_as_zero,
            aggregates: aggregates_for(mode, args.aggregates),
            rounding: args.rounding.unwrap_or(RoundingArg::Full).into(),
            ..ScoreOptions::for_rubrics(rubrics)
        },
        ..EvalSettings::default()
    }
}

/// The engine of the final pass: figure facts kept in the store, and the progress
/// bar when stderr is a terminal and `--quiet` is not given.
fn build_engine(
    args: &EvalOptions,
    rubrics: Arc<RubricSet>,
    judge: Option<Arc<dyn Judge>>,
    pages: Arc<dyn Pages>,
    settings: EvalSettings,
    store: &Option<Store>,
) -> Engine {
    let mut engine = Engine::new(rubrics, judge, Some(pages), settings);
    if let Some(store) = store {
        engine = engine.with_figure_store(store.clone());
    }
    if !args.quiet && std::io::stderr().is_terminal() {
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
    engine
}

/// What stays of the evaluation once every report is written.
struct Evaluated {
    /// Compact records (scores, counts, usage), sorted by system, task and run.
    records: Vec<ReportRecord>,
    /// Failed units of the reports that could be read.
    failed_units: usize,
    /// Figure thumbnails made for the summary (absent ones; `run.json`).
    thumbnails_written: usize,
}

/// Run the engine, writing each report's files as soon as its records are final
/// and keeping only compact rows, so memory stays flat in the number of reports.
fn evaluate_and_write(
    runtime: &tokio::runtime::Runtime,
    engine: &Engine,
    planned: Vec<(ReportJob, Option<Task>)>,
    out_dir: &Path,
) -> anyhow::Result<Evaluated> {
    std::fs::create_dir_all(out_dir)
        .with_context(|| format!("{}: cannot create output folder", out_dir.display()))?;
    let (write_errors, written) = (Mutex::new(Vec::<String>::new()), Mutex::new(Vec::new()));
    let [failed_units, thumbnails_written, in_flight] = [(); 3].map(|()| AtomicUsize::new(0));
    // Reports are written on the rayon pool, at most 4 queued (else here, as before).
    let write = |recs, timing| {
        let (errors, thumbs) = (&write_errors, &thumbnails_written);
        let rows = write_report(engine, out_dir, recs, timing, errors, &failed_units, thumbs);
        let mut kept = written.lock().unwrap_or_else(|p| p.into_inner());
        kept.extend(rows);
        in_flight.fetch_sub(1, Relaxed);
    };
    rayon::in_place_scope(|scope| {
        runtime.block_on(engine.evaluate_each(planned, &|recs, timing| {
            if in_flight.fetch_add(1, Relaxed) < 4 {
                scope.spawn(|_| write(recs, timing));
            } else {
                write(recs, timing);
            }
        }))
    });
    let mut records = written.into_inner().unwrap_or_else(|p| p.into_inner());
    records.sort_by(|a, b| (&a.system, &a.task_id, a.run).cmp(&(&b.system, &b.task_id, b.run)));
    let errors = write_errors.into_inner().unwrap_or_else(|p| p.into_inner());
    if let Some(e) = errors.first() {
        anyhow::bail!("writing results: {e}");
    }
    Ok(Evaluated {
        records,
        failed_units: failed_units.into_inner(),
        thumbnails_written: thumbnails_written.into_inner(),
    })
}

/// Write one report's files (metric files, timed as the `write` stage, then
/// report.json and its timing) and return its compact rows; write errors are
/// collected, failed units counted.
fn write_report(
    engine: &Engine,
    out: &Path,
    recs: Vec<ReportRecord>,
    mut report_timing: ReportTiming,
    write_errors: &Mutex<Vec<String>>,
    failed_units: &AtomicUsize,
    thumbnails_written: &AtomicUsize,
) -> Vec<ReportRecord> {
    let mut rows = Vec::with_capacity(recs.len());
    let started = Instant::now();
    // `write` times the metric files; report.json, which carries the
    // timings, is written after them.
    let (written, cpu) = timing::with_cpu(|| {
        recs.iter()
            .map(|r| output::write_metric_files(out, r))
            .collect::<Vec<_>>()
    });
    report_timing.write = timing::StageTime::new(started.elapsed(), cpu);
    engine.timing.add(timing::Stage::Write, report_timing.write);
    for (r, w) in recs.iter().zip(written) {
        let w = w
            .and_then(|()| {
                output::write_report_json(out, r, Some(&report_timing), &engine.thumbnails)
            })
            .map(|n| {
                thumbnails_written.fetch_add(n, Relaxed);
                output::remove_old_timing(out, r);
            });
        if let Err(e) = w {
            write_errors
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(e.to_string());
        }
    }
    for r in recs {
        if r.load_error().is_none() {
            failed_units.fetch_add(r.failed_unit_count(), Relaxed);
        }
        rows.push(r.compact());
    }
    rows
}

/// Write run-stats.json (counters, figure work, timing of the whole command) and
/// return the timing line printed at the end.
fn write_run_stats(
    out_dir: &Path,
    engine: &Engine,
    reports: usize,
    thumbnails_written: usize,
    started: Instant,
) -> anyhow::Result<String> {
    let stats = &engine.stats;
    let (wall, cpu) = (started.elapsed(), timing::process_cpu());
    output::write_run_stats(
        out_dir,
        &output::RunStatsFile {
            wall_seconds: wall.as_secs_f64(),
            requests_built: stats.requests.load(Relaxed),
            answers: stats.answers.load(Relaxed),
            cache_hits: stats.cache_hits.load(Relaxed),
            failed_calls: stats.failed_calls.load(Relaxed),
            skipped_calls: stats.skipped_calls.load(Relaxed),
            spend_usd: stats.spend_usd(),
            estimated_prompt_tokens: stats.estimated_prompt_tokens(),
            estimated_cost_usd: stats.estimated_cost_usd(),
            reports,
            figures: output::FigureWork {
                encoded: engine.images.encoded.load(Relaxed),
                facts_reused: engine.figure_facts.hits.load(Relaxed),
                facts_computed: engine.figure_facts.computed.load(Relaxed),
                thumbnails_written,
                thumbnails_reused: engine.thumbnails.reused.load(Relaxed),
                thumbnails_decoded: engine.thumbnails.decoded.load(Relaxed),
            },
            timing: engine.timing.to_json(wall, cpu),
            protocol: engine.settings.protocol.clone(),
        },
    )?;
    Ok(engine.timing.line(wall, cpu))
}

/// What the dry-run line compares its estimate with.
struct Costs {
    batch_price: Option<ModelPrice>,
    max_cost: Option<f64>,
}

/// The line on judging: the dry-run estimate, what a judge would add, or the
/// answers, failures and spend.
fn print_judge_line(
    mode: JudgeMode,
    stats: &RunStats,
    failed_units: usize,
    added_titles: &[String],
    costs: Costs,
) {
    match mode {
        JudgeMode::DryRun => println!(
            "dry run: {} judge requests, about {} prompt tokens{}; nothing was called",
            stats.requests.load(Relaxed),
            stats.estimated_prompt_tokens(),
            stats.estimated_cost_usd().map_or_else(String::new, |c| {
                super::batch::dry_run_costs(c, costs.batch_price, costs.max_cost)
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
    let cuts = stats.source_cuts.load(Relaxed);
    if cuts > 0 {
        println!(
            "{cuts} cited pages were shown cut (--source-chars, a rubric's max_source_chars or \
             the judge's context window), to the passages closest to the claim; each cut is \
             listed in its unit's detail.source_cuts and counted in the metric's note"
        );
    }
}

/// Cited pages read and not read, by reason; when no server answered any fetch,
/// why the citation units failed and how to proceed (on stderr).
fn print_pages_line(tally: &tvir_sources::PageTally) {
    println!("{}", tally.line());
    if let Some(why) = tally.no_network() {
        eprintln!(
            "{why}: the citation units that depend on them failed instead of scoring 0.\n{}",
            tvir_sources::tally::NO_NETWORK_ADVICE
        );
    }
}

/// 1 when some unit failed or some report could not be read (said on stderr),
/// else 0.
fn exit_status(evaluated: &Evaluated) -> ExitCode {
    let broken_reports = evaluated
        .records
        .iter()
        .filter(|r| r.load_error().is_some())
        .count();
    if evaluated.failed_units == 0 && broken_reports == 0 {
        return ExitCode::SUCCESS;
    }
    if broken_reports > 0 {
        eprintln!(
            "{broken_reports} report(s) could not be read (see the failed `report_load` unit in their report.json)"
        );
    }
    ExitCode::from(1)
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
