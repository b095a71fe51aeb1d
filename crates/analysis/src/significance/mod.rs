//! Is system A really ahead of system B?
//!
//! For one level of a leaderboard (Overall, TA, VA or a single metric) this
//! module turns per-task scores of several systems into:
//!
//! 1. each system's mean over tasks with a percentile-bootstrap interval
//!    (tasks resampled with replacement);
//! 2. for every pair, the mean paired difference on the tasks both have, its
//!    paired-bootstrap interval, a two-sided sign-flip permutation p-value and
//!    its Holm-adjusted value across the pairs of the level;
//! 3. rank groups: systems ranked by mean, cut into groups whose members do
//!    not differ significantly (see [`greedy_groups`] for the rule);
//! 4. when tasks were judged more than once, how much of the uncertainty is
//!    judge noise and how much task choice ([`judge_noise`]).
//!
//! A task's score is the mean over its judge runs; all tests then work on
//! task means, because tasks — not runs — are the independent units.
//!
//! Results are deterministic: every map is ordered by name, and every random
//! computation draws from its own ChaCha8 stream derived from
//! [`Options::seed`] and the names involved (see [`stream_rng`]). That is also
//! what lets the system intervals and the pairs of a level be computed in
//! parallel (rayon): the result does not depend on the number of threads.

mod groups;
mod noise;
mod resample;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

pub use groups::{greedy_groups, holm_adjust};
pub use noise::{judge_noise, system_noise, JudgeNoise, NoiseSource, SystemNoise};
pub use resample::{
    bootstrap_mean_ci, bootstrap_means, difference_interval, percentile_interval,
    shared_bootstrap_means, shared_sign_flip_p_values, sign_flip_p_value, stream_rng, TestMethod,
    MAX_EXACT_TASKS, TIE_TOLERANCE,
};

/// Seed used when none is given: results are reproducible out of the box.
pub const DEFAULT_SEED: u64 = 0x7456_4952_2025; // "tVIR" 2025

/// Per-task scores of the systems at one level.
///
/// `system → task → judge runs`. Ordered maps, so that whatever order the
/// scores arrive in (e.g. from a `HashMap`), everything downstream sees
/// systems and tasks sorted by name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LevelScores {
    systems: BTreeMap<String, BTreeMap<String, Vec<f64>>>,
}

impl LevelScores {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one judge run's score of `system` on `task`. Scores are on the
    /// suite's 0–100 scale; they are checked (finite) by [`analyze_level`].
    pub fn push(&mut self, system: impl Into<String>, task: impl Into<String>, score: f64) {
        self.systems
            .entry(system.into())
            .or_default()
            .entry(task.into())
            .or_default()
            .push(score);
    }

    /// Adds several judge runs of `system` on `task` at once.
    pub fn extend_runs(
        &mut self,
        system: impl Into<String>,
        task: impl Into<String>,
        runs: &[f64],
    ) {
        self.systems
            .entry(system.into())
            .or_default()
            .entry(task.into())
            .or_default()
            .extend_from_slice(runs);
    }

    /// Systems by name, each with its tasks by name and their runs.
    pub fn systems(&self) -> impl Iterator<Item = (&str, &BTreeMap<String, Vec<f64>>)> {
        self.systems
            .iter()
            .map(|(name, tasks)| (name.as_str(), tasks))
    }

    /// A task's score: the mean over its judge runs.
    fn task_means(&self, system: &str) -> BTreeMap<&str, f64> {
        self.systems[system]
            .iter()
            .map(|(task, runs)| (task.as_str(), resample::mean(runs)))
            .collect()
    }

    fn validate(&self) -> Result<(), SignificanceError> {
        if self.systems.is_empty() {
            return Err(SignificanceError::NoSystems);
        }
        for (system, tasks) in &self.systems {
            for (task, runs) in tasks {
                if let Some(&score) = runs.iter().find(|s| !s.is_finite()) {
                    return Err(SignificanceError::NonFiniteScore {
                        system: system.clone(),
                        task: task.clone(),
                        score,
                    });
                }
            }
        }
        Ok(())
    }
}

/// `(system, task, score)` triples, one per judge run, in any order.
impl<S: Into<String>, T: Into<String>> FromIterator<(S, T, f64)> for LevelScores {
    fn from_iter<I: IntoIterator<Item = (S, T, f64)>>(iter: I) -> Self {
        let mut scores = Self::new();
        for (system, task, score) in iter {
            scores.push(system, task, score);
        }
        scores
    }
}

/// Settings of the analysis. `Default` gives the documented defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Options {
    /// Bootstrap replicates for every interval (default 10,000).
    pub resamples: usize,
    /// Random sign patterns of the Monte Carlo permutation test (default
    /// 10,000; with `p = (count+1)/(permutations+1)` the smallest reachable p
    /// is about 1e-4, far enough below `alpha / pairs` for 36 pairs).
    pub permutations: usize,
    /// Master seed of all random streams (default [`DEFAULT_SEED`]).
    pub seed: u64,
    /// Coverage of the intervals (default 0.95 → quantiles 2.5 % / 97.5 %).
    pub confidence: f64,
    /// Family-wise error rate for the groups, applied to Holm-adjusted p
    /// (default 0.05; a pair differs when `p_holm < alpha`).
    pub alpha: f64,
    /// Pairs sharing fewer tasks are not tested (default 5: with 4 tasks the
    /// exact test cannot go below p = 2/16 = 0.125).
    pub min_shared_tasks: usize,
    /// Enumerate all sign patterns up to this many shared tasks (default 20,
    /// about a million patterns); Monte Carlo above. At most
    /// [`MAX_EXACT_TASKS`].
    pub exact_max_tasks: usize,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            resamples: 10_000,
            permutations: 10_000,
            seed: DEFAULT_SEED,
            confidence: 0.95,
            alpha: 0.05,
            min_shared_tasks: 5,
            exact_max_tasks: 20,
        }
    }
}

impl Options {
    fn validate(&self) -> Result<(), SignificanceError> {
        let bad = |what: &str| Err(SignificanceError::InvalidOption(what.to_owned()));
        if self.resamples == 0 {
            return bad("resamples must be at least 1");
        }
        if self.permutations == 0 {
            return bad("permutations must be at least 1");
        }
        if !(self.confidence > 0.0 && self.confidence < 1.0) {
            return bad("confidence must be strictly between 0 and 1");
        }
        if !(self.alpha > 0.0 && self.alpha < 1.0) {
            return bad("alpha must be strictly between 0 and 1");
        }
        if self.min_shared_tasks == 0 {
            return bad("min_shared_tasks must be at least 1");
        }
        if self.exact_max_tasks > MAX_EXACT_TASKS {
            return bad("exact_max_tasks must be at most 32");
        }
        Ok(())
    }
}

/// Why an analysis could not run.
#[derive(Debug, Clone, PartialEq)]
pub enum SignificanceError {
    NoSystems,
    NonFiniteScore {
        system: String,
        task: String,
        score: f64,
    },
    InvalidOption(String),
}

impl fmt::Display for SignificanceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoSystems => write!(f, "no systems to compare"),
            Self::NonFiniteScore {
                system,
                task,
                score,
            } => {
                write!(
                    f,
                    "score {score} of system {system:?} on task {task:?} is not finite"
                )
            }
            Self::InvalidOption(what) => write!(f, "invalid option: {what}"),
        }
    }
}

impl std::error::Error for SignificanceError {}

/// One system at one level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SystemSummary {
    pub system: String,
    /// Mean over tasks of the task scores (each the mean of its runs).
    pub mean: f64,
    /// Percentile-bootstrap interval of `mean`, resampling tasks.
    pub ci: [f64; 2],
    /// Number of tasks.
    pub tasks: usize,
    /// Position in the ranking, 1 = best (mean descending, ties by name).
    pub rank: usize,
    /// Rank group, 1 = best; systems sharing a number are not significantly
    /// different from each other.
    pub group: usize,
}

/// One pair of systems; `a` ranks above `b`, so `mean_diff` is usually ≥ 0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairComparison {
    pub a: String,
    pub b: String,
    /// Tasks both systems have.
    pub tasks: usize,
    /// Mean over shared tasks of `score(a) − score(b)`; null without shared tasks.
    pub mean_diff: Option<f64>,
    /// Paired-bootstrap interval of `mean_diff` (shared tasks resampled).
    pub ci: Option<[f64; 2]>,
    /// Two-sided sign-flip permutation p-value.
    pub p: Option<f64>,
    /// `p` after Holm's correction over the testable pairs of the level.
    pub p_holm: Option<f64>,
    pub testable: bool,
    /// Why the pair was not tested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Exact enumeration or Monte Carlo; absent when not tested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<TestMethod>,
}

impl PairComparison {
    /// Significantly different after Holm at `alpha`. Untestable pairs are not.
    pub fn differs(&self, alpha: f64) -> bool {
        self.p_holm.is_some_and(|p| p < alpha)
    }
}

/// The whole analysis of one level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelReport {
    /// Best first.
    pub systems: Vec<SystemSummary>,
    /// Every pair `(i, j)` of the ranking with `i` above `j`, in ranking order.
    pub pairs: Vec<PairComparison>,
    /// Rank groups, best first, each in ranking order.
    pub groups: Vec<Vec<String>>,
    pub resamples: usize,
    /// Monte Carlo permutations (pairs with more than `exact_max_tasks` shared
    /// tasks); smaller pairs are enumerated exactly.
    pub permutations: usize,
    pub seed: u64,
    /// Coverage of every interval (0.95 by default).
    pub confidence: f64,
    /// A pair differs when its Holm-adjusted p is below this (0.05 by default).
    pub alpha: f64,
    /// Judge-noise decomposition; absent without repeated judge runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_noise: Option<JudgeNoise>,
}

/// Analyses one level. See the module documentation for what is computed, and
/// [`Options`] for the knobs.
pub fn analyze_level(
    scores: &LevelScores,
    options: &Options,
) -> Result<LevelReport, SignificanceError> {
    options.validate()?;
    scores.validate()?;
    let scratch = || Vec::with_capacity(options.resamples);

    // 1. Systems, then the ranking.
    let means: Vec<(&str, BTreeMap<&str, f64>)> = scores
        .systems()
        .map(|(name, _)| (name, scores.task_means(name)))
        .collect();
    let mut systems: Vec<(usize, SystemSummary)> = means
        .par_iter()
        .enumerate()
        .map_init(scratch, |scratch, (index, (name, tasks))| {
            let values: Vec<f64> = tasks.values().copied().collect();
            let mut rng = stream_rng(options.seed, &["system", name]);
            let ci = bootstrap_mean_ci(
                &values,
                options.resamples,
                options.confidence,
                &mut rng,
                scratch,
            );
            let summary = SystemSummary {
                system: name.to_string(),
                mean: resample::mean(&values),
                ci,
                tasks: values.len(),
                rank: 0,
                group: 0,
            };
            (index, summary)
        })
        .collect();
    systems.sort_by(|(_, x), (_, y)| {
        y.mean
            .total_cmp(&x.mean)
            .then_with(|| x.system.cmp(&y.system))
    });

    // 2. Pairs in ranking order. A pair's paired bootstrap resamples the tasks both
    // systems have; pairs with the same shared tasks draw the same resamples (one
    // draw per distinct task set, `shared_bootstrap_means`, its stream named by the
    // tasks), and a pair's interval is the difference of its two columns.
    let mut pair_index = BTreeMap::new();
    for i in 0..systems.len() {
        for j in i + 1..systems.len() {
            pair_index.insert((i, j), pair_index.len());
        }
    }
    let order: Vec<(usize, usize)> = pair_index.keys().copied().collect();
    let shared = pair_tests(&means, &systems, &order, options);
    let mut pairs: Vec<PairComparison> = order
        .par_iter()
        .zip(shared)
        .map(|(&(i, j), shared)| {
            compare_pair(&means[systems[i].0], &means[systems[j].0], options, shared)
        })
        .collect();
    let tested: Vec<usize> = (0..pairs.len()).filter(|&k| pairs[k].testable).collect();
    let raw: Vec<f64> = tested.iter().map(|&k| pairs[k].p.unwrap_or(1.0)).collect();
    for (&k, adjusted) in tested.iter().zip(holm_adjust(&raw)) {
        pairs[k].p_holm = Some(adjusted);
    }

    // 3. Groups.
    let ranges = greedy_groups(systems.len(), |i, j| {
        pairs[pair_index[&(i, j)]].differs(options.alpha)
    });
    let mut groups = Vec::with_capacity(ranges.len());
    for (number, range) in ranges.into_iter().enumerate() {
        for position in range.clone() {
            systems[position].1.rank = position + 1;
            systems[position].1.group = number + 1;
        }
        groups.push(
            systems[range]
                .iter()
                .map(|(_, s)| s.system.clone())
                .collect(),
        );
    }

    Ok(LevelReport {
        systems: systems.into_iter().map(|(_, s)| s).collect(),
        pairs,
        groups,
        resamples: options.resamples,
        permutations: options.permutations,
        seed: options.seed,
        confidence: options.confidence,
        alpha: options.alpha,
        judge_noise: judge_noise(scores),
    })
}

/// Analyses several levels (e.g. "Overall", "TA", "VA", metric names) with the
/// same options; keyed and ordered by level name.
pub fn analyze_levels(
    levels: &BTreeMap<String, LevelScores>,
    options: &Options,
) -> Result<BTreeMap<String, LevelReport>, SignificanceError> {
    let reports: Vec<Result<LevelReport, SignificanceError>> = levels
        .par_iter()
        .map(|(_, scores)| analyze_level(scores, options))
        .collect();
    levels
        .keys()
        .zip(reports)
        .map(|(level, report)| Ok((level.clone(), report?)))
        .collect()
}

/// What [`pair_tests`] computes for a pair from the draws it shares with the other
/// pairs on its tasks.
#[derive(Debug, Clone, Copy, Default)]
struct SharedDraws {
    /// The paired-bootstrap interval of the mean difference.
    ci: Option<[f64; 2]>,
    /// The Monte Carlo sign-flip p-value (pairs sharing more than
    /// `exact_max_tasks` tasks; the others are enumerated exactly here).
    p: Option<f64>,
}

/// Paired comparison of `a` (ranked higher) against `b` on their shared tasks;
/// `shared` holds the paired-bootstrap interval of their mean difference and, above
/// `exact_max_tasks` shared tasks, the Monte Carlo p-value ([`pair_tests`]; `None`
/// when they share too few tasks).
fn compare_pair(
    (a, a_tasks): &(&str, BTreeMap<&str, f64>),
    (b, b_tasks): &(&str, BTreeMap<&str, f64>),
    options: &Options,
    shared: SharedDraws,
) -> PairComparison {
    // Zero differences are kept: they are evidence of "no difference" and
    // count towards n, while their sign flip changes nothing.
    let diffs: Vec<f64> = a_tasks
        .iter()
        .filter_map(|(task, score_a)| b_tasks.get(task).map(|score_b| score_a - score_b))
        .collect();
    let n = diffs.len();
    let mut pair = PairComparison {
        a: a.to_string(),
        b: b.to_string(),
        tasks: n,
        mean_diff: (n > 0).then(|| resample::mean(&diffs)),
        ci: None,
        p: None,
        p_holm: None,
        testable: false,
        reason: None,
        method: None,
    };
    if n < options.min_shared_tasks {
        pair.reason = Some(if n == 0 {
            "no shared tasks".to_owned()
        } else {
            format!(
                "only {n} shared task{}; at least {} are needed for a paired test",
                if n == 1 { "" } else { "s" },
                options.min_shared_tasks
            )
        });
        return pair;
    }
    pair.ci = shared.ci;
    let (p, method) = match shared.p {
        Some(p) if n > options.exact_max_tasks.min(MAX_EXACT_TASKS) => (p, TestMethod::MonteCarlo),
        _ => {
            // Exact enumeration draws nothing (the stream is never read).
            let mut rng = stream_rng(options.seed, &["pair-permutation", *a, *b]);
            sign_flip_p_value(
                &diffs,
                options.exact_max_tasks,
                options.permutations,
                &mut rng,
            )
        }
    };
    pair.p = Some(p);
    pair.method = Some(method);
    pair.testable = true;
    pair
}

/// The pairs sharing one set of tasks (indices into the pair order) and their systems.
type PairGroup = (Vec<usize>, Vec<usize>);

/// The paired-bootstrap interval and, above `exact_max_tasks` shared tasks, the
/// Monte Carlo sign-flip p-value of every pair of `order` (positions in the ranking
/// `systems`) that shares at least `min_shared_tasks` tasks, in the order of `order`.
///
/// Pairs are grouped by the set of tasks their two systems share; each group draws
/// `resamples` resamples of its tasks once, from a stream named by those tasks
/// (`["pair-bootstrap", task...]`), and every member system's mean over each resample
/// ([`shared_bootstrap_means`]); a pair's replicates are the differences of its two
/// columns, i.e. its paired bootstrap of the mean difference. A pair's interval
/// depends only on the seed, its shared tasks and the two systems' scores on them —
/// not on the other systems of the level — and 4,950 pairs of 100 systems cost one
/// draw per distinct shared task set rather than one each. The sign-flip test does
/// the same: a group draws `permutations` sign patterns once, from a stream named by
/// its tasks (`["pair-permutation", task...]`), and every Monte Carlo pair of the
/// group is counted on them ([`shared_sign_flip_p_values`]). Groups run on the rayon
/// pool (and a group's pairs too), each group holding only its own replicates.
fn pair_tests(
    means: &[(&str, BTreeMap<&str, f64>)],
    systems: &[(usize, SystemSummary)],
    order: &[(usize, usize)],
    options: &Options,
) -> Vec<SharedDraws> {
    // Every task of the level gets a bit; a system's tasks are a bit set.
    let mut task_bit: BTreeMap<&str, usize> = BTreeMap::new();
    for (_, tasks) in means {
        for &t in tasks.keys() {
            task_bit.insert(t, 0);
        }
    }
    let task_names: Vec<&str> = task_bit.keys().copied().collect();
    for (bit, slot) in task_bit.values_mut().enumerate() {
        *slot = bit;
    }
    let words = task_names.len().div_ceil(64).max(1);
    let sets: Vec<Vec<u64>> = means
        .iter()
        .map(|(_, tasks)| {
            let mut set = vec![0u64; words];
            for t in tasks.keys() {
                let bit = task_bit[t];
                set[bit / 64] |= 1 << (bit % 64);
            }
            set
        })
        .collect();
    // Shared task set -> (its pairs as indices into `order`, its systems).
    let mut groups: BTreeMap<Vec<u64>, PairGroup> = BTreeMap::new();
    for (index, &(i, j)) in order.iter().enumerate() {
        let (ka, kb) = (systems[i].0, systems[j].0);
        let common: Vec<u64> = sets[ka].iter().zip(&sets[kb]).map(|(x, y)| x & y).collect();
        let n: u32 = common.iter().map(|w| w.count_ones()).sum();
        if (n as usize) < options.min_shared_tasks {
            continue;
        }
        let (pairs, members) = groups.entry(common).or_default();
        pairs.push(index);
        members.extend([ka, kb]);
    }
    let groups: Vec<(Vec<u64>, PairGroup)> = groups.into_iter().collect();
    let per_group: Vec<Vec<(usize, SharedDraws)>> = groups
        .par_iter()
        .map(|(common, (pairs, members))| {
            let mut members = members.clone();
            members.sort_unstable();
            members.dedup();
            let tasks: Vec<&str> = (0..task_names.len())
                .filter(|&bit| common[bit / 64] >> (bit % 64) & 1 == 1)
                .map(|bit| task_names[bit])
                .collect();
            let mut table = Vec::with_capacity(tasks.len() * members.len());
            for t in &tasks {
                table.extend(members.iter().map(|&k| means[k].1[t]));
            }
            let mut parts = Vec::with_capacity(tasks.len() + 1);
            parts.push("pair-bootstrap");
            parts.extend(tasks.iter().copied());
            let mut rng = stream_rng(options.seed, &parts);
            let r = options.resamples;
            let replicates = shared_bootstrap_means(&table, members.len(), r, &mut rng);
            let column = |k: usize| {
                let c = members.binary_search(&k).expect("pair member in its group");
                &replicates[c * r..(c + 1) * r]
            };
            // A level whose systems all have the same tasks is one group of every
            // pair: its intervals are spread over the pool too.
            let cis: Vec<[f64; 2]> = pairs
                .par_iter()
                .map_init(
                    || Vec::with_capacity(r),
                    |scratch, &index| {
                        let (i, j) = order[index];
                        let (ra, rb) = (column(systems[i].0), column(systems[j].0));
                        difference_interval(ra, rb, options.confidence, scratch)
                    },
                )
                .collect();
            drop(replicates);
            let ps: Vec<Option<f64>> = if tasks.len() > options.exact_max_tasks.min(MAX_EXACT_TASKS)
            {
                let columns: Vec<(usize, usize)> = pairs
                    .iter()
                    .map(|&index| {
                        let (i, j) = order[index];
                        let at =
                            |k: usize| members.binary_search(&k).expect("pair member in its group");
                        (at(systems[i].0), at(systems[j].0))
                    })
                    .collect();
                parts[0] = "pair-permutation";
                let mut rng = stream_rng(options.seed, &parts);
                shared_sign_flip_p_values(
                    &table,
                    members.len(),
                    &columns,
                    options.permutations,
                    &mut rng,
                )
                .into_iter()
                .map(Some)
                .collect()
            } else {
                vec![None; pairs.len()]
            };
            pairs
                .iter()
                .zip(cis)
                .zip(ps)
                .map(|((&index, ci), p)| (index, SharedDraws { ci: Some(ci), p }))
                .collect::<Vec<_>>()
        })
        .collect();
    let mut out = vec![SharedDraws::default(); order.len()];
    for (index, draws) in per_group.into_iter().flatten() {
        out[index] = draws;
    }
    out
}
