//! The figures: per-run outcomes, then per-condition rows. Everything here is pure:
//! loading happens in `formats` / `runs`, printing in the CLI.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::aliases::ArtifactIndex;
use super::formats::{GoldSet, InstanceMeta, RunRecord};
use super::matching::{MatchLevel, Matcher};
use super::runs::Condition;
use super::stats::{mean, Proportion};
use super::url::{first_github_url, parse_artifact};

/// What a run's answer was (the paper's answer composition).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    Correct,
    /// A well-formed URL of an artifact known to exist, but not the gold.
    WrongReal,
    /// A well-formed artifact URL that points at nothing known to exist.
    Hallucinated,
    /// Not a parsable GitHub issue, pull request or commit URL.
    Malformed,
    NoPrediction,
}

/// The outcome of one gold instance under one condition.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub level: Option<MatchLevel>,
    pub answer: Answer,
    /// Whether a gold-matching URL appeared in a tool result before the answer;
    /// `None` without a trace.
    pub surfaced: Option<bool>,
    /// True when the condition had a run for this instance.
    pub present: bool,
}

impl Outcome {
    pub fn correct(&self) -> bool {
        self.level.is_some()
    }
}

/// Per-model token prices (USD per million tokens), used when a trace has no cost.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PriceTable {
    pub prices: HashMap<String, ModelPrice>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelPrice {
    pub input_per_million: f64,
    pub output_per_million: f64,
}

impl PriceTable {
    /// Price of one run: the trace's own cost, else tokens times the model's price.
    pub fn run_price(&self, model: Option<&str>, run: &RunRecord) -> Option<f64> {
        let trace = run.trace.as_ref()?;
        trace.cost.or_else(|| {
            let p = self.prices.get(model?)?;
            Some(
                (trace.prompt_tokens? as f64 * p.input_per_million
                    + trace.completion_tokens? as f64 * p.output_per_million)
                    / 1e6,
            )
        })
    }
}

/// Everything that is fixed across conditions.
#[derive(Debug, Clone)]
pub struct Benchmark {
    pub gold: GoldSet,
    /// Breakdown attributes by id (metadata.csv over instances.jsonl over gold).
    pub meta: HashMap<String, InstanceMeta>,
    pub has_buckets: bool,
    pub has_difficulty: bool,
    pub matcher: Matcher,
    /// Artifacts known to exist before looking at traces (from the artifact file).
    pub known_artifacts: ArtifactIndex,
    pub prices: PriceTable,
}

impl Benchmark {
    /// Known artifacts plus every artifact URL seen in any tool result of any
    /// condition: an artifact one agent saw exists for all of them. The
    /// `submit_answer` step and anything after it are left out: its result only
    /// echoes the agent's own answer.
    pub fn existing_artifacts(&self, conditions: &[Condition]) -> ArtifactIndex {
        let mut index = self.known_artifacts.clone();
        for cond in conditions {
            for run in cond.runs.values() {
                for step in run
                    .trace
                    .iter()
                    .flat_map(|t| t.steps_before_answer().iter())
                {
                    for url in &step.result_urls {
                        index.insert_url(url);
                    }
                }
            }
        }
        index
    }
}

/// Classifies one answer (pure).
pub fn classify(
    matcher: &Matcher,
    existing: &ArtifactIndex,
    id: &str,
    predicted: Option<&str>,
) -> (Option<MatchLevel>, Answer) {
    let Some(pred) = predicted.map(str::trim).filter(|p| !p.is_empty()) else {
        return (None, Answer::NoPrediction);
    };
    if let Some(level) = matcher.match_prediction(id, pred) {
        return (Some(level), Answer::Correct);
    }
    let Some(url) = first_github_url(pred) else {
        return (None, Answer::Malformed);
    };
    if parse_artifact(url).is_none() {
        return (None, Answer::Malformed);
    }
    // A redirect or duplicate of a known artifact is real too.
    let real = matcher
        .aliases()
        .closure(url)
        .iter()
        .any(|n| existing.contains_node(n));
    (
        None,
        if real {
            Answer::WrongReal
        } else {
            Answer::Hallucinated
        },
    )
}

/// Whether a gold-matching URL appears in a tool result before the answer.
pub fn surfaced(matcher: &Matcher, id: &str, run: &RunRecord) -> Option<bool> {
    let trace = run.trace.as_ref()?;
    Some(trace.steps_before_answer().iter().any(|s| {
        s.result_urls
            .iter()
            .any(|u| matcher.match_url(id, u).is_some())
    }))
}

/// Outcomes of one condition, in gold order (missing runs are wrong).
pub fn evaluate(bench: &Benchmark, existing: &ArtifactIndex, cond: &Condition) -> Vec<Outcome> {
    bench
        .gold
        .records
        .iter()
        .map(|g| match cond.runs.get(&g.id) {
            Some(run) => {
                let (level, answer) =
                    classify(&bench.matcher, existing, &g.id, run.predicted.as_deref());
                Outcome {
                    level,
                    answer,
                    surfaced: surfaced(&bench.matcher, &g.id, run),
                    present: true,
                }
            }
            None => Outcome {
                level: None,
                answer: Answer::NoPrediction,
                surfaced: None,
                present: false,
            },
        })
        .collect()
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ByLevel {
    pub exact: usize,
    pub structural: usize,
    pub alias: usize,
}

/// Counts of each answer kind, with fractions of n.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Composition {
    pub correct: usize,
    pub wrong_real: usize,
    pub hallucinated: usize,
    pub malformed: usize,
    pub no_prediction: usize,
    /// Each count divided by n (the number of gold records).
    pub fractions: BTreeMap<&'static str, f64>,
}

/// Average excessive tool calls (see [`excess_tool_calls`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Excess {
    /// Mean over this model's qualifying correct runs; `None` when n is 0.
    pub mean: Option<f64>,
    /// Number of qualifying correct runs.
    pub n: usize,
    /// Models compared at this budget.
    pub models_compared: usize,
}

/// Discovery vs selection failures.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Discovery {
    /// Wrong runs that have a trace.
    pub failures_with_trace: usize,
    /// Failures where the gold never appeared in a tool result.
    pub discovery_failures: usize,
    /// Failures where the gold appeared but another answer was chosen.
    pub selection_failures: usize,
    /// Wrong instances with no trace (missing run): cause unknown.
    pub failures_without_trace: usize,
    pub discovery_share: Option<f64>,
    pub selection_share: Option<f64>,
    /// Runs (with a trace) that surfaced the gold, and how many of those were correct.
    pub surfaced: usize,
    pub correct_given_surfaced: usize,
    pub p_correct_given_surfaced: Option<f64>,
    /// Correct runs that never surfaced the gold (answered from the chat alone).
    pub correct_not_surfaced: usize,
}

/// Trajectory diagnostics over runs with a trace.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Trajectory {
    pub runs: usize,
    pub zero_tool_call_runs: usize,
    /// Steps with an error response or an error tool result.
    pub invalid_tool_calls: usize,
    pub runs_with_invalid_tool_calls: usize,
    pub mean_invalid_tool_calls: Option<f64>,
    /// Tool calls whose result shows an artifact URL not seen earlier in the run.
    pub information_gain_calls: usize,
    pub mean_information_gain_calls: Option<f64>,
    /// information_gain_calls / tool-call steps (excluding `submit_answer`).
    pub information_gain_rate: Option<f64>,
    /// Calls refused for exceeding the budget (`cost_limit_exceeded` steps).
    pub refused_calls: usize,
    pub runs_with_refused_calls: usize,
    /// Runs whose trace records an error.
    pub errored_runs: usize,
}

/// One row: one condition scored against the whole gold set.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub name: String,
    pub budget: Option<u32>,
    /// Gold records (the denominator).
    pub n: usize,
    pub correct: usize,
    pub accuracy: Option<f64>,
    pub se: Option<f64>,
    pub by_level: ByLevel,
    pub model: Option<String>,
    pub source: String,
    /// Gold instances with no run/prediction in this condition (counted wrong).
    pub missing: usize,
    pub by_entity_type: BTreeMap<String, Proportion>,
    pub by_bucket: Option<BTreeMap<String, Proportion>>,
    pub by_difficulty: Option<BTreeMap<String, Proportion>>,
    pub composition: Composition,
    pub runs_with_trace: usize,
    pub mean_tool_calls: Option<f64>,
    pub mean_tokens: Option<f64>,
    pub mean_price_usd: Option<f64>,
    pub mean_time_seconds: Option<f64>,
    pub excess_tool_calls: Option<Excess>,
    pub discovery: Option<Discovery>,
    pub trajectory: Option<Trajectory>,
    /// Runs whose recorded `evaluation.correct` disagrees with our matching.
    pub recorded_correct_disagreements: usize,
}

fn group_by(
    bench: &Benchmark,
    outcomes: &[Outcome],
    key: impl Fn(&str) -> Option<String>,
) -> BTreeMap<String, Proportion> {
    let mut counts: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for (g, o) in bench.gold.records.iter().zip(outcomes) {
        let k = key(&g.id).unwrap_or_else(|| "unknown".to_string());
        let e = counts.entry(k).or_default();
        e.0 += usize::from(o.correct());
        e.1 += 1;
    }
    counts
        .into_iter()
        .map(|(k, (c, n))| (k, Proportion::new(c, n)))
        .collect()
}

fn share(part: usize, whole: usize) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

/// Scores one condition from its outcomes (`excess` comes from
/// [`excess_tool_calls`], which needs all conditions).
pub fn score_row(
    bench: &Benchmark,
    cond: &Condition,
    outcomes: &[Outcome],
    excess: Option<Excess>,
) -> Row {
    let n = bench.gold.len();
    let correct = outcomes.iter().filter(|o| o.correct()).count();
    let acc = Proportion::new(correct, n);
    let mut by_level = ByLevel::default();
    let mut comp = Composition::default();
    for o in outcomes {
        match o.level {
            Some(MatchLevel::Exact) => by_level.exact += 1,
            Some(MatchLevel::Structural) => by_level.structural += 1,
            Some(MatchLevel::Alias) => by_level.alias += 1,
            None => {}
        }
        match o.answer {
            Answer::Correct => comp.correct += 1,
            Answer::WrongReal => comp.wrong_real += 1,
            Answer::Hallucinated => comp.hallucinated += 1,
            Answer::Malformed => comp.malformed += 1,
            Answer::NoPrediction => comp.no_prediction += 1,
        }
    }
    if n > 0 {
        for (k, v) in [
            ("correct", comp.correct),
            ("wrong_real", comp.wrong_real),
            ("hallucinated", comp.hallucinated),
            ("malformed", comp.malformed),
            ("no_prediction", comp.no_prediction),
        ] {
            comp.fractions.insert(k, v as f64 / n as f64);
        }
    }

    let meta = |id: &str| bench.meta.get(id);
    let by_entity_type = group_by(bench, outcomes, |id| {
        meta(id)
            .and_then(|m| m.entity_type)
            .or_else(|| bench.gold.get(id).and_then(|g| g.entity_type))
            .map(|t| t.as_str().to_string())
    });
    let by_bucket = bench.has_buckets.then(|| {
        group_by(bench, outcomes, |id| {
            meta(id).and_then(|m| m.capability_bucket.clone())
        })
    });
    let by_difficulty = bench.has_difficulty.then(|| {
        group_by(bench, outcomes, |id| {
            meta(id).and_then(|m| m.difficulty.clone())
        })
    });

    // Runs in gold order paired with outcomes.
    let runs: Vec<(&RunRecord, &Outcome)> = bench
        .gold
        .records
        .iter()
        .zip(outcomes)
        .filter_map(|(g, o)| cond.runs.get(&g.id).map(|r| (r, o)))
        .collect();
    let traced: Vec<(&RunRecord, &Outcome)> = runs
        .iter()
        .copied()
        .filter(|(r, _)| r.trace.is_some())
        .collect();
    let trace_of = |r: &RunRecord| r.trace.clone().unwrap_or_default();
    let mean_tool_calls = mean(
        traced
            .iter()
            .filter_map(|(r, _)| r.trace.as_ref()?.tool_calls.map(|v| v as f64)),
    );
    let mean_tokens = mean(
        traced
            .iter()
            .filter_map(|(r, _)| r.trace.as_ref()?.total_tokens.map(|v| v as f64)),
    );
    let mean_price_usd = mean(
        traced
            .iter()
            .filter_map(|(r, _)| bench.prices.run_price(cond.model.as_deref(), r)),
    );
    let mean_time_seconds = mean(
        traced
            .iter()
            .filter_map(|(r, _)| r.trace.as_ref()?.time_seconds),
    );

    let (discovery, trajectory) = if cond.has_traces {
        let mut d = Discovery::default();
        for o in outcomes {
            match (o.correct(), o.surfaced) {
                (false, Some(true)) => d.selection_failures += 1,
                (false, Some(false)) => d.discovery_failures += 1,
                (false, None) => d.failures_without_trace += 1,
                (true, Some(false)) => d.correct_not_surfaced += 1,
                _ => {}
            }
            if o.surfaced == Some(true) {
                d.surfaced += 1;
                d.correct_given_surfaced += usize::from(o.correct());
            }
        }
        d.failures_with_trace = d.discovery_failures + d.selection_failures;
        d.discovery_share = share(d.discovery_failures, d.failures_with_trace);
        d.selection_share = share(d.selection_failures, d.failures_with_trace);
        d.p_correct_given_surfaced = share(d.correct_given_surfaced, d.surfaced);

        let mut t = Trajectory {
            runs: traced.len(),
            ..Default::default()
        };
        let mut call_steps = 0usize;
        for (r, _) in &traced {
            let tr = trace_of(r);
            if tr.tool_calls == Some(0) {
                t.zero_tool_call_runs += 1;
            }
            let invalid = tr.steps.iter().filter(|s| s.is_error).count();
            t.invalid_tool_calls += invalid;
            t.runs_with_invalid_tool_calls += usize::from(invalid > 0);
            let refused = tr.refused_calls as usize;
            t.refused_calls += refused;
            t.runs_with_refused_calls += usize::from(refused > 0);
            t.errored_runs += usize::from(tr.error.is_some());
            let mut seen = ArtifactIndex::default();
            for step in tr
                .steps
                .iter()
                .filter(|s| s.is_tool_call() && !s.is_submit())
            {
                call_steps += 1;
                let mut gained = false;
                for a in step.result_urls.iter().filter_map(|u| parse_artifact(u)) {
                    if !seen.contains(&a) {
                        seen.insert(&a);
                        gained = true;
                    }
                }
                t.information_gain_calls += usize::from(gained);
            }
        }
        t.mean_invalid_tool_calls = share(t.invalid_tool_calls, t.runs);
        t.mean_information_gain_calls = share(t.information_gain_calls, t.runs);
        t.information_gain_rate = share(t.information_gain_calls, call_steps);
        (Some(d), Some(t))
    } else {
        (None, None)
    };

    let recorded_correct_disagreements = runs
        .iter()
        .filter(|(r, o)| r.recorded_correct.is_some_and(|rc| rc != o.correct()))
        .count();

    Row {
        name: cond.name.clone(),
        budget: cond.budget,
        n,
        correct,
        accuracy: acc.accuracy,
        se: acc.se,
        by_level,
        model: cond.model.clone(),
        source: cond.source.display().to_string(),
        missing: outcomes.iter().filter(|o| !o.present).count(),
        by_entity_type,
        by_bucket,
        by_difficulty,
        composition: comp,
        runs_with_trace: traced.len(),
        mean_tool_calls,
        mean_tokens,
        mean_price_usd,
        mean_time_seconds,
        excess_tool_calls: excess,
        discovery,
        trajectory,
        recorded_correct_disagreements,
    }
}

/// Average excessive tool calls, per condition. Conditions are compared within
/// one budget (traces only). An example qualifies when at least two models solved
/// it (with a known tool-call count); each of those correct runs contributes its
/// tool calls minus the fewest of any correct run on that example. `None` for
/// conditions without traces or alone at their budget.
pub fn excess_tool_calls(
    bench: &Benchmark,
    conds: &[Condition],
    outcomes: &[Vec<Outcome>],
) -> Vec<Option<Excess>> {
    let mut result: Vec<Option<Excess>> = vec![None; conds.len()];
    let mut by_budget: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (i, c) in conds.iter().enumerate() {
        if let (true, Some(b)) = (c.has_traces, c.budget) {
            by_budget.entry(b).or_default().push(i);
        }
    }
    for members in by_budget.values() {
        if members.len() < 2 {
            continue;
        }
        let mut diffs: HashMap<usize, Vec<f64>> = HashMap::new();
        for (gi, g) in bench.gold.records.iter().enumerate() {
            let solved: Vec<(usize, u64)> = members
                .iter()
                .filter(|&&ci| outcomes[ci][gi].correct())
                .filter_map(|&ci| {
                    Some((ci, conds[ci].runs.get(&g.id)?.trace.as_ref()?.tool_calls?))
                })
                .collect();
            if solved.len() < 2 {
                continue;
            }
            let fewest = solved.iter().map(|&(_, k)| k).min().unwrap_or(0);
            for (ci, k) in solved {
                diffs.entry(ci).or_default().push((k - fewest) as f64);
            }
        }
        for &ci in members {
            let d = diffs.remove(&ci).unwrap_or_default();
            result[ci] = Some(Excess {
                mean: mean(d.iter().copied()),
                n: d.len(),
                models_compared: members.len(),
            });
        }
    }
    result
}

/// One labelled outcome, for per-instance output and auditing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InstanceOutcome<'a> {
    pub name: &'a str,
    pub budget: Option<u32>,
    pub id: &'a str,
    pub correct: bool,
    /// The level the match was made at; `null` when wrong.
    pub level: Option<MatchLevel>,
    pub answer: Answer,
    /// The URL the prediction was judged by (its first GitHub URL), if any.
    pub predicted_url: Option<&'a str>,
    pub surfaced: Option<bool>,
    pub tool_calls: Option<u64>,
}

/// Labelled outcomes of one condition, in gold order.
pub fn instance_outcomes<'a>(
    bench: &'a Benchmark,
    cond: &'a Condition,
    outcomes: &[Outcome],
) -> Vec<InstanceOutcome<'a>> {
    bench
        .gold
        .records
        .iter()
        .zip(outcomes)
        .map(|(g, o)| {
            let run = cond.runs.get(&g.id);
            InstanceOutcome {
                name: &cond.name,
                budget: cond.budget,
                id: &g.id,
                correct: o.correct(),
                level: o.level,
                answer: o.answer,
                predicted_url: run
                    .and_then(|r| r.predicted.as_deref())
                    .map(super::matching::prediction_url),
                surfaced: o.surfaced,
                tool_calls: run.and_then(|r| r.trace.as_ref()?.tool_calls),
            }
        })
        .collect()
}

/// Scores every condition: outcomes, then rows (excess calls compare conditions).
pub fn score_all(bench: &Benchmark, conds: &[Condition]) -> (Vec<Row>, Vec<Vec<Outcome>>) {
    let existing = bench.existing_artifacts(conds);
    let outcomes: Vec<Vec<Outcome>> = conds
        .iter()
        .map(|c| evaluate(bench, &existing, c))
        .collect();
    let excess = excess_tool_calls(bench, conds, &outcomes);
    let rows = conds
        .iter()
        .zip(&outcomes)
        .zip(excess)
        .map(|((c, o), e)| score_row(bench, c, o, e))
        .collect();
    (rows, outcomes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::TraceFacts;

    fn run(trace: TraceFacts) -> RunRecord {
        RunRecord {
            id: "x".into(),
            file: "x.json".into(),
            line: None,
            predicted: None,
            recorded_correct: None,
            trace: Some(trace),
        }
    }

    #[test]
    fn price_from_cost_or_table() {
        let mut table = PriceTable::default();
        table.prices.insert(
            "m".into(),
            ModelPrice {
                input_per_million: 2.0,
                output_per_million: 8.0,
            },
        );
        // The trace's own cost wins.
        let with_cost = run(TraceFacts {
            cost: Some(0.5),
            prompt_tokens: Some(10),
            completion_tokens: Some(10),
            ..Default::default()
        });
        assert_eq!(table.run_price(Some("m"), &with_cost), Some(0.5));
        // Otherwise 1,000,000 prompt tokens at $2 + 250,000 completion at $8 = 2 + 2 = $4.
        let tokens = run(TraceFacts {
            prompt_tokens: Some(1_000_000),
            completion_tokens: Some(250_000),
            ..Default::default()
        });
        assert_eq!(table.run_price(Some("m"), &tokens), Some(4.0));
        // Unknown model, missing token split or no trace: no price (never a zero).
        assert_eq!(table.run_price(Some("other"), &tokens), None);
        let no_split = run(TraceFacts {
            total_tokens: Some(10),
            ..Default::default()
        });
        assert_eq!(table.run_price(Some("m"), &no_split), None);
    }
}
