//! `tvir eval` batch flags and the pass loop (see the module docs of
//! `tvir_judge::batch`).

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tvir_engine::input::{ReportJob, Task};
use tvir_engine::Engine;
use tvir_judge::batch::{BatchEngine, BatchOptions, IngestReport, PendingSummary, RetryMode};
use tvir_judge::prices::{ModelPrice, PriceTable};
use tvir_judge::JudgeClient;

#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = crate::help_heading::JUDGE)]
pub struct BatchArgs {
    /// Send judge requests through the server's Batch API (Files + Batches) in
    /// waves; re-run the same command to collect and continue.
    #[arg(long)]
    pub batch: bool,
    /// With --batch: poll until the run is complete instead of exiting once the
    /// current wave is submitted.
    #[arg(long)]
    pub batch_wait: bool,
    /// Batch completion window.
    #[arg(long, default_value = "24h", value_name = "WINDOW")]
    pub batch_window: String,
    /// Most requests per batch input file.
    #[arg(long, default_value_t = 50_000, value_name = "N")]
    pub batch_max_requests: usize,
    /// Most bytes per batch input file.
    #[arg(long, default_value_t = 190_000_000, value_name = "BYTES")]
    pub batch_max_bytes: usize,
    /// Batch attempts per request before its unit fails with the provider's error.
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub batch_attempts: u32,
    /// Failed or expired lines: next wave (batch) or asked live (live).
    #[arg(long, value_enum, default_value_t = RetryMode::Batch)]
    pub batch_retry: RetryMode,
    /// First wait between status polls with --batch-wait (doubles up to 300 s).
    #[arg(long, default_value_t = 5.0, value_name = "SECS")]
    pub batch_poll_secs: f64,
    /// Write the current wave as Batch API JSONL request files into DIR and stop
    /// (for offline engines such as vLLM's run-batch).
    #[arg(long, value_name = "DIR")]
    pub batch_export: Option<PathBuf>,
    /// Read Batch API result files (provider output/error files or vLLM run-batch
    /// output) into the cache, then continue: export the next wave (with
    /// --batch-export) or write the scores.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub batch_import: Vec<PathBuf>,
}

impl BatchArgs {
    /// Any batch flag that changes how judges are asked.
    pub fn active(&self) -> bool {
        self.batch || self.batch_export.is_some() || !self.batch_import.is_empty()
    }

    fn online(&self) -> bool {
        self.batch
    }

    pub fn check(&self, no_judge: bool, dry_run: bool) -> anyhow::Result<()> {
        if self.active() && no_judge {
            anyhow::bail!(
                "--batch, --batch-export and --batch-import need a judge (not --no-judge)"
            );
        }
        if self.batch && (self.batch_export.is_some() || !self.batch_import.is_empty()) {
            anyhow::bail!("--batch (the server's Batch API) and --batch-export/--batch-import (offline engines) exclude each other");
        }
        if self.batch_wait && !self.batch {
            anyhow::bail!("--batch-wait needs --batch");
        }
        if self.active() && dry_run {
            anyhow::bail!("--dry-run already shows the batch estimate; drop the batch flags");
        }
        if self.batch_max_requests == 0 || self.batch_max_bytes < 1024 {
            anyhow::bail!(
                "--batch-max-requests must be at least 1 and --batch-max-bytes at least 1024"
            );
        }
        if self.batch_attempts == 0 {
            anyhow::bail!("--batch-attempts must be at least 1");
        }
        if !(self.batch_poll_secs.is_finite() && self.batch_poll_secs >= 0.0) {
            anyhow::bail!("--batch-poll-secs must be a non-negative number");
        }
        for f in &self.batch_import {
            if !f.is_file() {
                anyhow::bail!("--batch-import {}: no such file", f.display());
            }
        }
        Ok(())
    }

    pub fn engine(&self, client: JudgeClient) -> anyhow::Result<Arc<BatchEngine>> {
        let config = client.config().clone();
        let options = BatchOptions {
            completion_window: self.batch_window.clone(),
            max_requests_per_file: self.batch_max_requests,
            max_bytes_per_file: self.batch_max_bytes,
            max_attempts: self.batch_attempts,
            retry: self.batch_retry,
            max_reasks: config.max_reasks,
            max_cost_usd: config.max_cost_usd,
            poll_initial: Duration::from_secs_f64(self.batch_poll_secs),
            poll_max: Duration::from_secs(300),
        };
        Ok(BatchEngine::new(client, options, self.online())?)
    }
}

/// The price entry of `model` (None when unpriced or the table is unreadable).
pub fn price_of(model: &str, table: Option<&Path>) -> Option<ModelPrice> {
    PriceTable::shipped_with_override(table)
        .ok()
        .and_then(|t| t.lookup(model).copied())
}

/// The dry run's cost line: live and batch estimates side by side, and what
/// `--max-cost` allows under each.
pub fn dry_run_costs(live: f64, price: Option<ModelPrice>, max_cost: Option<f64>) -> String {
    let discount = price.and_then(|p| p.batch_discount).unwrap_or(0.0);
    let batch = live * (1.0 - discount);
    let mut s = format!(", about ${live:.4} live / ${batch:.4} with --batch");
    if let Some(max) = max_cost {
        let verdict = |c: f64| if c <= max { "within" } else { "over" };
        s.push_str(&format!(
            " (--max-cost ${max:.4}: live {}, batch {})",
            verdict(live),
            verdict(batch)
        ));
    }
    s
}

fn print_ingest(what: &str, r: &IngestReport) {
    for line in &r.bad_lines {
        eprintln!("warning: {line} (skipped)");
    }
    if r.answered + r.requeued + r.failed + r.reasked + r.stale > 0 || !r.bad_lines.is_empty() {
        println!(
            "batch: {what}: {} answers, {} re-asks and {} failed lines queued for the next wave, {} given up, {} stale, {} bad lines",
            r.answered,
            r.reasked,
            r.requeued,
            r.failed,
            r.stale,
            r.bad_lines.len()
        );
    }
}

fn print_summary(s: &PendingSummary) {
    let counts: Vec<String> = s.requests.iter().map(|(k, v)| format!("{v} {k}")).collect();
    println!("batch: requests {}", counts.join(", "));
    for b in &s.open_batches {
        println!(
            "batch: {} {} ({} of {} done, {} failed)",
            b.id, b.status, b.completed, b.total, b.failed
        );
    }
    if !s.open_batches.is_empty() {
        match s.eta_secs {
            Some(eta) => println!("batch: ETA about {eta} s (from the provider's counts)"),
            None => println!("batch: ETA unknown until the provider reports progress"),
        }
    }
}

/// Run passes until nothing is pending (returns true: write the outputs) or the
/// current wave has been handed over (returns false: exit 0, re-run later).
pub async fn drive(
    batch: &Arc<BatchEngine>,
    args: &BatchArgs,
    make_engine: impl Fn() -> Engine,
    jobs: Vec<(ReportJob, Option<Task>)>,
) -> anyhow::Result<bool> {
    if !args.batch_import.is_empty() {
        let r = batch.import(&args.batch_import)?;
        print_ingest("imported", &r);
    }
    loop {
        if args.online() {
            let r = batch.collect().await?;
            print_ingest("collected", &r);
        }
        batch.begin_pass();
        let engine = make_engine();
        engine.evaluate_all(jobs.clone(), &|_| {}).await;
        batch.client.flush().await;
        let pending = engine.stats.pending.load(Ordering::Relaxed);
        if pending == 0 {
            return Ok(true);
        }
        println!("batch: {pending} judge units pending");
        if let Some(dir) = &args.batch_export {
            let (paths, n) = batch.export(dir)?;
            println!(
                "batch: exported {n} requests to {} file(s) in {}; run them, then re-run with --batch-import RESULTS.jsonl",
                paths.len(),
                dir.display()
            );
            return Ok(false);
        }
        if !args.online() {
            println!("batch: nothing exported (add --batch-export DIR for the next wave)");
            return Ok(false);
        }
        let created = batch.submit().await?;
        for b in &created {
            println!("batch: submitted {} ({} requests)", b.id, b.total);
        }
        let summary = batch.pending_summary().await?;
        print_summary(&summary);
        if summary.open_batches.is_empty() {
            anyhow::bail!(
                "{pending} judge units pending but no batch is open and nothing could be submitted"
            );
        }
        if !args.batch_wait {
            println!("batch: re-run the same command to collect the answers (or add --batch-wait)");
            return Ok(false);
        }
        batch.wait_for_progress().await?;
    }
}
