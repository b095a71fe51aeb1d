//! How much of the uncertainty of a system's mean comes from the judge (its
//! sampling between runs) and how much from which tasks happen to be in the
//! benchmark.

use serde::{Deserialize, Serialize};

use super::resample::{mean, sample_variance};
use super::LevelScores;

/// The decomposition for one system.
///
/// Model: the score of run `r` on task `i` is `μ + tᵢ + e_ir`, with task
/// effects of variance `σ²_task` and judge noise of variance `σ²_judge`. The
/// system's mean over `n` tasks with `Kᵢ` runs each then has variance
/// `σ²_task / n + σ²_judge · mean(1/Kᵢ) / n` (`= σ²_task/n + σ²_judge/(K·n)`
/// for a common `K`). The fields estimate these terms:
///
/// * `var_judge = σ̂²_judge · mean_i(1/Kᵢ) / n`, where `σ̂²_judge` is the mean,
///   over tasks with at least two runs, of the sample variance (divisor
///   `Kᵢ − 1`) of that task's runs. With a common `K` this is
///   *mean within-task variance / (K · n)*.
/// * `var_mean = S² / n`, `S²` the sample variance (divisor `n − 1`) of the
///   task means: the usual squared standard error of the system mean. It
///   already contains the judge term, because each task mean carries judge
///   noise of variance `σ²_judge / Kᵢ`.
/// * `var_task = max(0, var_mean − var_judge)`: the part due to task choice,
///   i.e. the judge term is taken out instead of counted twice. Clamped at 0
///   because in a small sample the judge estimate can exceed the total.
/// * `judge_share = var_judge / (var_task + var_judge)` (0 when both are 0).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SystemNoise {
    pub system: String,
    /// Number of tasks `n`.
    pub tasks: usize,
    /// Mean number of judge runs per task.
    pub runs: f64,
    pub var_mean: f64,
    pub var_task: f64,
    pub var_judge: f64,
    pub judge_share: f64,
}

/// Which source of variance is the larger one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoiseSource {
    Task,
    Judge,
}

/// The judge-noise decomposition of one level.
///
/// `var_task` and `var_judge` are the plain averages of the systems' terms and
/// `judge_share = var_judge / (var_task + var_judge)` of those averages (so
/// systems with larger variance weigh more, as they do for the intervals).
///
/// The two "what if" numbers follow from the model above: doubling the runs
/// per task halves only the judge term, so the standard error shrinks by
/// `1 − sqrt((var_task + var_judge/2) / (var_task + var_judge))`; doubling the
/// tasks halves both, so it shrinks by `1 − sqrt(1/2) ≈ 29 %`. For the same
/// number of extra judge calls more tasks therefore always help at least as
/// much; more runs are the lever that needs no new system outputs, and it is
/// worth pulling only when the judge share is large.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeNoise {
    /// Systems with at least two tasks and at least one task with two or more
    /// runs, by name.
    pub systems: Vec<SystemNoise>,
    /// Mean runs per task over those systems.
    pub runs: f64,
    pub var_task: f64,
    pub var_judge: f64,
    pub judge_share: f64,
    pub dominant: NoiseSource,
    /// Relative reduction of the standard error if every task had twice the runs.
    pub se_cut_double_runs: f64,
    /// Relative reduction of the standard error with twice the tasks.
    pub se_cut_double_tasks: f64,
    /// One sentence for a report.
    pub interpretation: String,
}

/// The decomposition for one system from its tasks' runs, or `None` when it
/// cannot be estimated (fewer than two tasks, or no task with two runs).
pub fn system_noise(system: &str, tasks: &[&[f64]]) -> Option<SystemNoise> {
    let n = tasks.len();
    let with_repeats: Vec<f64> = tasks
        .iter()
        .filter(|runs| runs.len() >= 2)
        .map(|runs| sample_variance(runs))
        .collect();
    if n < 2 || with_repeats.is_empty() {
        return None;
    }
    let task_means: Vec<f64> = tasks.iter().map(|runs| mean(runs)).collect();
    let judge_variance = mean(&with_repeats);
    let mean_inverse_runs = tasks
        .iter()
        .map(|runs| 1.0 / runs.len() as f64)
        .sum::<f64>()
        / n as f64;
    let var_mean = sample_variance(&task_means) / n as f64;
    let var_judge = judge_variance * mean_inverse_runs / n as f64;
    let var_task = (var_mean - var_judge).max(0.0);
    Some(SystemNoise {
        system: system.to_owned(),
        tasks: n,
        runs: tasks.iter().map(|runs| runs.len()).sum::<usize>() as f64 / n as f64,
        var_mean,
        var_task,
        var_judge,
        judge_share: share(var_judge, var_task),
    })
}

fn share(part: f64, rest: f64) -> f64 {
    if part + rest > 0.0 {
        part / (part + rest)
    } else {
        0.0
    }
}

/// The judge-noise decomposition of a level, or `None` when no system has
/// repeated judge runs (K ≥ 2 on at least one task) and two tasks.
pub fn judge_noise(scores: &LevelScores) -> Option<JudgeNoise> {
    let systems: Vec<SystemNoise> = scores
        .systems()
        .filter_map(|(system, tasks)| {
            let runs: Vec<&[f64]> = tasks.values().map(Vec::as_slice).collect();
            system_noise(system, &runs)
        })
        .collect();
    if systems.is_empty() {
        return None;
    }
    let count = systems.len() as f64;
    let var_task = systems.iter().map(|s| s.var_task).sum::<f64>() / count;
    let var_judge = systems.iter().map(|s| s.var_judge).sum::<f64>() / count;
    let runs = systems.iter().map(|s| s.runs).sum::<f64>() / count;
    let judge_share = share(var_judge, var_task);
    let se_cut_double_runs = if var_task + var_judge > 0.0 {
        1.0 - ((var_task + var_judge / 2.0) / (var_task + var_judge)).sqrt()
    } else {
        0.0
    };
    let se_cut_double_tasks = 1.0 - 0.5f64.sqrt();
    let dominant = if judge_share > 0.5 {
        NoiseSource::Judge
    } else {
        NoiseSource::Task
    };
    let interpretation = interpret(
        systems.len(),
        runs,
        judge_share,
        dominant,
        se_cut_double_runs,
        se_cut_double_tasks,
        var_task + var_judge,
    );
    Some(JudgeNoise {
        systems,
        runs,
        var_task,
        var_judge,
        judge_share,
        dominant,
        se_cut_double_runs,
        se_cut_double_tasks,
        interpretation,
    })
}

fn interpret(
    systems: usize,
    runs: f64,
    judge_share: f64,
    dominant: NoiseSource,
    cut_runs: f64,
    cut_tasks: f64,
    total: f64,
) -> String {
    let pct = |x: f64| format!("{:.0}%", 100.0 * x);
    let plural = if systems == 1 { "" } else { "s" };
    if total <= 0.0 {
        return format!(
            "The scores of the {systems} system{plural} do not vary between tasks or judge runs, so neither more tasks nor more runs would change the intervals."
        );
    }
    let head = format!(
        "Judge sampling accounts for {} of the variance of a system's mean and task choice for {} (average over {systems} system{plural}, {runs:.1} runs per task)",
        pct(judge_share),
        pct(1.0 - judge_share),
    );
    match dominant {
        NoiseSource::Task => format!(
            "{head}: more tasks would tighten the intervals more than more runs (doubling the runs per task shrinks the standard error by only {}, doubling the tasks by {}).",
            pct(cut_runs),
            pct(cut_tasks),
        ),
        NoiseSource::Judge => format!(
            "{head}: more runs per task would tighten the intervals without new system outputs (doubling the runs shrinks the standard error by {}; doubling the tasks would shrink it by {}).",
            pct(cut_runs),
            pct(cut_tasks),
        ),
    }
}
