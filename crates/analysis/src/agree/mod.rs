//! Agreement between two evaluators (METRICS.md section 6): pairwise agreement rate
//! (PAR, ties included), Pearson (OPC) and Spearman (OSC) of per-system means, with
//! seeded bootstrap intervals over tasks, and inter-annotator PAR for human ratings.
//!
//! Only (system, task) cells scored by both sides count; a null score is absent.
//! Undefined values are `None` with the reason in `notes`, never 0 or NaN.

pub mod alpha;
pub mod raters;
pub mod stats;
pub mod table;

use std::collections::{BTreeMap, BTreeSet};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

pub use raters::{ImportCounts, RaterAgreement, RaterLevel};
pub use stats::Undefined;
pub use table::{Cell, ScoreTable, Scores};

/// Fixed default seed so that two runs of `tvir agree` print the same intervals.
pub const DEFAULT_SEED: u64 = 20_260_602;
pub const DEFAULT_BOOTSTRAP: usize = 1000;

#[derive(Debug, Clone)]
pub struct AgreeOptions {
    /// Bootstrap replicates (0 = no intervals).
    pub bootstrap: usize,
    pub seed: u64,
    /// Restrict to these levels (None = every level both sides have).
    pub levels: Option<Vec<String>>,
}

impl Default for AgreeOptions {
    fn default() -> Self {
        Self {
            bootstrap: DEFAULT_BOOTSTRAP,
            seed: DEFAULT_SEED,
            levels: None,
        }
    }
}

/// One level's agreement, shaped as INTERFACE.md's `tvir agree --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LevelAgreement {
    pub par: Option<f64>,
    pub opc: Option<f64>,
    pub osc: Option<f64>,
    pub par_ci: Option<[f64; 2]>,
    pub opc_ci: Option<[f64; 2]>,
    pub osc_ci: Option<[f64; 2]>,
    /// Tasks with at least one common cell.
    pub tasks: usize,
    /// Systems with at least one common cell.
    pub systems: usize,
    /// Unordered system pairs compared within tasks (the PAR denominator).
    pub pairs: usize,
    #[serde(default)]
    pub agreeing_pairs: usize,
    /// Common (system, task) cells.
    #[serde(default)]
    pub cells: usize,
    /// Against human ratings: the raters and ratings behind the common cells
    /// (each cell's score is its raters' mean).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raters: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratings: Option<usize>,
    #[serde(default)]
    pub notes: Vec<String>,
}

/// Inter-annotator agreement of one level of a human-rating CSV.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct InterAnnotatorLevel {
    /// Mean over annotator pairs of each pair's PAR (pairs sharing no comparable
    /// system pair are left out).
    pub par: Option<f64>,
    /// All comparable pairs of all annotator pairs pooled.
    pub par_pooled: Option<f64>,
    pub annotators: usize,
    pub annotator_pairs: usize,
    pub annotator_pairs_used: usize,
    pub pairs: usize,
    #[serde(default)]
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BootstrapInfo {
    pub replicates: usize,
    pub seed: u64,
    pub interval: String,
}

/// The whole answer of `tvir agree`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AgreeReport {
    #[serde(with = "ordered_levels")]
    #[schemars(with = "BTreeMap<String, LevelAgreement>")]
    pub levels: Vec<(String, LevelAgreement)>,
    #[serde(default)]
    pub a: String,
    #[serde(default)]
    pub b: String,
    pub bootstrap: Option<BootstrapInfo>,
    /// Inter-annotator PAR of a side given as a human-rating CSV, per level.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    /// Side (`a`/`b`) -> level -> inter-annotator agreement.
    pub inter_annotator: BTreeMap<String, BTreeMap<String, InterAnnotatorLevel>>,
    /// Side (`a`/`b`) given as human ratings -> agreement among its raters
    /// (Krippendorff's alpha, pairwise PAR) with its counts.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub raters: BTreeMap<String, RaterAgreement>,
    /// The same figures per language and per system (when ratings are involved or
    /// languages are known).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub breakdowns: Vec<GroupAgreement>,
    #[serde(default)]
    pub notes: Vec<String>,
}

/// Agreement within one language or one system.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GroupAgreement {
    /// `language` or `system`.
    pub by: String,
    pub group: String,
    #[serde(with = "ordered_levels")]
    #[schemars(with = "BTreeMap<String, LevelAgreement>")]
    pub levels: Vec<(String, LevelAgreement)>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub raters: BTreeMap<String, RaterAgreement>,
}

/// `levels` as a JSON object in display order (overall, ta, va, metrics).
mod ordered_levels {
    use super::LevelAgreement;
    use serde::ser::SerializeMap;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(
        v: &[(String, LevelAgreement)],
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(v.len()))?;
        for (k, l) in v {
            m.serialize_entry(k, l)?;
        }
        m.end()
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Vec<(String, LevelAgreement)>, D::Error> {
        let map = serde_json::Map::<String, serde_json::Value>::deserialize(d)?;
        let mut out = Vec::with_capacity(map.len());
        for (k, v) in map {
            let l = serde_json::from_value(v).map_err(serde::de::Error::custom)?;
            out.push((k, l));
        }
        Ok(out)
    }
}

/// The common cells of one level, indexed for fast resampling.
struct LevelData {
    n_systems: usize,
    /// Per task: (system index, A score, B score) for its common cells.
    tasks: Vec<Vec<(usize, f64, f64)>>,
    /// Per task: (agreeing pairs, pairs).
    task_pairs: Vec<(usize, usize)>,
}

impl LevelData {
    fn new(a: &Scores, b: &Scores) -> Self {
        let common: Vec<(&Cell, f64, f64)> = a
            .iter()
            .filter_map(|(c, va)| b.get(c).map(|vb| (c, *va, *vb)))
            .filter(|(_, x, y)| x.is_finite() && y.is_finite())
            .collect();
        let systems: BTreeSet<&str> = common.iter().map(|(c, _, _)| c.system.as_str()).collect();
        let sys_index: BTreeMap<&str, usize> =
            systems.iter().enumerate().map(|(i, s)| (*s, i)).collect();
        let mut by_task: BTreeMap<&str, Vec<(usize, f64, f64)>> = BTreeMap::new();
        for (c, x, y) in &common {
            by_task.entry(c.task_id.as_str()).or_default().push((
                sys_index[c.system.as_str()],
                *x,
                *y,
            ));
        }
        let tasks: Vec<Vec<(usize, f64, f64)>> = by_task.into_values().collect();
        let task_pairs = tasks
            .iter()
            .map(|cells| {
                let xa: Vec<f64> = cells.iter().map(|c| c.1).collect();
                let xb: Vec<f64> = cells.iter().map(|c| c.2).collect();
                stats::pair_agreement(&xa, &xb)
            })
            .collect();
        Self {
            n_systems: systems.len(),
            tasks,
            task_pairs,
        }
    }

    /// PAR, OPC, OSC with task `weights` (how often each task was drawn).
    fn compute(&self, weights: &[u32]) -> [Result<f64, Undefined>; 3] {
        let (mut agree, mut pairs) = (0u64, 0u64);
        let mut sums = vec![(0.0f64, 0.0f64, 0u64); self.n_systems];
        for ((cells, (ag, pr)), &w) in self.tasks.iter().zip(&self.task_pairs).zip(weights) {
            if w == 0 {
                continue;
            }
            agree += w as u64 * *ag as u64;
            pairs += w as u64 * *pr as u64;
            for &(s, x, y) in cells {
                sums[s].0 += w as f64 * x;
                sums[s].1 += w as f64 * y;
                sums[s].2 += w as u64;
            }
        }
        let par = if pairs == 0 {
            Err(Undefined::NoPairs)
        } else {
            Ok(agree as f64 / pairs as f64)
        };
        let (ma, mb): (Vec<f64>, Vec<f64>) = sums
            .iter()
            .filter(|s| s.2 > 0)
            .map(|s| (s.0 / s.2 as f64, s.1 / s.2 as f64))
            .unzip();
        [par, stats::pearson(&ma, &mb), stats::spearman(&ma, &mb)]
    }
}

const STAT_NAMES: [&str; 3] = ["par", "opc", "osc"];

/// Agreement of one level. Pure: same inputs and options, same answer.
pub fn agree_level(a: &Scores, b: &Scores, opts: &AgreeOptions) -> LevelAgreement {
    let data = LevelData::new(a, b);
    let ones = vec![1u32; data.tasks.len()];
    let point = data.compute(&ones);
    let mut notes = Vec::new();
    let cells: usize = data.tasks.iter().map(|t| t.len()).sum();
    if cells == 0 {
        notes.push("no (system, task) cell is scored by both A and B".to_string());
    }
    let values: Vec<Option<f64>> = point
        .iter()
        .zip(STAT_NAMES)
        .map(|(r, name)| match r {
            Ok(v) => Some(*v),
            Err(e) => {
                notes.push(format!("{name} undefined: {e}"));
                None
            }
        })
        .collect();

    let mut cis: [Option<[f64; 2]>; 3] = [None, None, None];
    if opts.bootstrap > 0 && !data.tasks.is_empty() {
        let samples = bootstrap(&data, opts.bootstrap, opts.seed);
        for k in 0..3 {
            let Some(est) = values[k] else { continue };
            let mut defined: Vec<f64> = samples.iter().filter_map(|s| s[k]).collect();
            let missing = opts.bootstrap - defined.len();
            if defined.is_empty() {
                notes.push(format!(
                    "{}_ci undefined: no bootstrap replicate had a defined {}",
                    STAT_NAMES[k], STAT_NAMES[k]
                ));
                continue;
            }
            if missing > 0 {
                notes.push(format!(
                    "{}_ci: {missing} of {} replicates undefined (too few systems or constant means); interval over the rest",
                    STAT_NAMES[k], opts.bootstrap
                ));
            }
            defined.sort_by(f64::total_cmp);
            let lo = stats::quantile_sorted(&defined, 0.025).unwrap_or(est);
            let hi = stats::quantile_sorted(&defined, 0.975).unwrap_or(est);
            if est < lo || est > hi {
                // A percentile interval can miss a skewed estimate; widen it to the
                // estimate so the interval always contains what we report.
                notes.push(format!(
                    "{}_ci widened to include the estimate (percentile interval was [{lo}, {hi}])",
                    STAT_NAMES[k]
                ));
            }
            cis[k] = Some([lo.min(est), hi.max(est)]);
        }
    } else if opts.bootstrap == 0 {
        notes.push("no intervals: --bootstrap 0".into());
    }

    let (agreeing_pairs, pairs) = data
        .task_pairs
        .iter()
        .fold((0, 0), |acc, p| (acc.0 + p.0, acc.1 + p.1));
    LevelAgreement {
        par: values[0],
        opc: values[1],
        osc: values[2],
        par_ci: cis[0],
        opc_ci: cis[1],
        osc_ci: cis[2],
        tasks: data.tasks.len(),
        systems: data.n_systems,
        pairs,
        agreeing_pairs,
        cells,
        raters: None,
        ratings: None,
        notes,
    }
}

/// Scores of the cells `keep` accepts.
fn filtered(s: &Scores, keep: &impl Fn(&Cell) -> bool) -> Scores {
    s.iter()
        .filter(|(c, _)| keep(c))
        .map(|(c, v)| (c.clone(), *v))
        .collect()
}

/// Agreement of the pairs that involve `system` (within each task, `system`
/// against every other system both sides scored); OPC and OSC need several
/// systems and are left undefined.
fn system_level(a: &Scores, b: &Scores, system: &str) -> LevelAgreement {
    let common: Vec<(&Cell, f64, f64)> = a
        .iter()
        .filter_map(|(c, x)| b.get(c).map(|y| (c, *x, *y)))
        .filter(|(_, x, y)| x.is_finite() && y.is_finite())
        .collect();
    let mut by_task: BTreeMap<&str, Vec<(&str, f64, f64)>> = BTreeMap::new();
    for (c, x, y) in &common {
        by_task
            .entry(c.task_id.as_str())
            .or_default()
            .push((c.system.as_str(), *x, *y));
    }
    let (mut agreeing, mut pairs, mut tasks, mut cells) = (0, 0, 0, 0);
    let mut others = BTreeSet::new();
    for cells_of_task in by_task.values() {
        let Some(me) = cells_of_task.iter().find(|c| c.0 == system) else {
            continue;
        };
        tasks += 1;
        cells += 1;
        for o in cells_of_task.iter().filter(|c| c.0 != system) {
            let (ag, pr) = stats::pair_agreement(&[me.1, o.1], &[me.2, o.2]);
            agreeing += ag;
            pairs += pr;
            others.insert(o.0);
        }
    }
    let mut notes = vec!["opc and osc are not defined within one system".to_string()];
    if pairs == 0 {
        notes.push("par undefined: no task where both sides scored this system and another".into());
    }
    LevelAgreement {
        par: (pairs > 0).then(|| agreeing as f64 / pairs as f64),
        opc: None,
        osc: None,
        par_ci: None,
        opc_ci: None,
        osc_ci: None,
        tasks,
        systems: others.len() + usize::from(tasks > 0),
        pairs,
        agreeing_pairs: agreeing,
        cells,
        raters: None,
        ratings: None,
        notes,
    }
}

/// The raters and ratings of `t`'s level `level` behind the common cells.
fn rater_counts(
    t: &ScoreTable,
    level: &str,
    common: &impl Fn(&Cell) -> bool,
) -> Option<(usize, usize)> {
    let by = t.annotators.as_ref()?.levels.get(level)?;
    let mut raters = 0;
    let mut ratings = 0;
    for s in by.values() {
        let n = s.keys().filter(|c| common(c)).count();
        raters += usize::from(n > 0);
        ratings += n;
    }
    Some((raters, ratings))
}

/// Resample tasks with replacement `n` times (ChaCha8 seeded with `seed`, so
/// intervals are reproducible and independent of the other levels).
fn bootstrap(data: &LevelData, n: usize, seed: u64) -> Vec<[Option<f64>; 3]> {
    let t = data.tasks.len();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut weights = vec![0u32; t];
    (0..n)
        .map(|_| {
            weights.iter_mut().for_each(|w| *w = 0);
            for _ in 0..t {
                weights[rng.random_range(0..t)] += 1;
            }
            let r = data.compute(&weights);
            [r[0].clone().ok(), r[1].clone().ok(), r[2].clone().ok()]
        })
        .collect()
}

/// Inter-annotator PAR of one level: for every annotator pair, PAR over the system
/// pairs both rated within a task; the mean over annotator pairs that share one.
pub fn inter_annotator_level(by_annotator: &BTreeMap<String, Scores>) -> InterAnnotatorLevel {
    let names: Vec<&String> = by_annotator.keys().collect();
    let mut pars = Vec::new();
    let (mut pooled_agree, mut pooled_pairs) = (0usize, 0usize);
    let mut annotator_pairs = 0;
    for i in 0..names.len() {
        for j in i + 1..names.len() {
            annotator_pairs += 1;
            let data = LevelData::new(&by_annotator[names[i]], &by_annotator[names[j]]);
            let (ag, pr) = data
                .task_pairs
                .iter()
                .fold((0, 0), |acc, p| (acc.0 + p.0, acc.1 + p.1));
            if pr > 0 {
                pars.push(ag as f64 / pr as f64);
                pooled_agree += ag;
                pooled_pairs += pr;
            }
        }
    }
    let mut notes = Vec::new();
    if names.len() < 2 {
        notes.push(format!(
            "par undefined: {} annotator(s), need two",
            names.len()
        ));
    } else if pars.is_empty() {
        notes.push("par undefined: no two annotators rated two systems on one task".into());
    } else if pars.len() < annotator_pairs {
        notes.push(format!(
            "{} of {annotator_pairs} annotator pairs share no comparable system pair and are left out",
            annotator_pairs - pars.len()
        ));
    }
    InterAnnotatorLevel {
        par: (!pars.is_empty()).then(|| pars.iter().sum::<f64>() / pars.len() as f64),
        par_pooled: (pooled_pairs > 0).then(|| pooled_agree as f64 / pooled_pairs as f64),
        annotators: names.len(),
        annotator_pairs,
        annotator_pairs_used: pars.len(),
        pairs: pooled_pairs,
        notes,
    }
}

fn sorted_levels<T>(m: impl IntoIterator<Item = (String, T)>) -> Vec<(String, T)> {
    let mut v: Vec<(String, T)> = m.into_iter().collect();
    v.sort_by_key(|(k, _)| table::level_order(k));
    v
}

/// Agreement of A and B on every level both have (or the requested ones).
pub fn agree(a: &ScoreTable, b: &ScoreTable, opts: &AgreeOptions) -> AgreeReport {
    let mut notes: Vec<String> = a
        .notes
        .iter()
        .map(|n| format!("A: {n}"))
        .chain(b.notes.iter().map(|n| format!("B: {n}")))
        .collect();
    let mut chosen: Vec<String> = a
        .levels
        .keys()
        .filter(|l| b.levels.contains_key(*l))
        .cloned()
        .collect();
    for only in a.levels.keys().filter(|l| !b.levels.contains_key(*l)) {
        notes.push(format!("level {only} only in A: skipped"));
    }
    for only in b.levels.keys().filter(|l| !a.levels.contains_key(*l)) {
        notes.push(format!("level {only} only in B: skipped"));
    }
    if let Some(wanted) = &opts.levels {
        for w in wanted {
            if !chosen.contains(w) {
                notes.push(format!("level {w} requested but not given by both A and B"));
            }
        }
        chosen.retain(|l| wanted.contains(l));
    }
    let all = |_: &Cell| true;
    let levels = sorted_levels(
        chosen
            .iter()
            .map(|l| (l.clone(), level_with_counts(a, b, l, opts, &all)))
            .collect::<Vec<_>>(),
    );
    let mut raters = BTreeMap::new();
    for (side, t) in [("a", a), ("b", b)] {
        if let Some(ann) = &t.annotators {
            raters.insert(
                side.to_string(),
                raters::rater_agreement(ann, all, t.import.as_ref()),
            );
        }
    }
    let breakdowns = breakdowns(a, b, &chosen, opts);
    for (side, t, other) in [("A", a, b), ("B", b, a)] {
        if t.annotators.is_none() {
            continue;
        }
        // Rated reports the other side never scored: named, never silently dropped.
        let unknown: BTreeSet<&Cell> = chosen
            .iter()
            .flat_map(|l| {
                t.levels[l]
                    .keys()
                    .filter(|c| !other.levels[l].contains_key(*c))
            })
            .collect();
        if !unknown.is_empty() {
            let names: Vec<String> = unknown
                .iter()
                .take(10)
                .map(|c| format!("{}/{}", c.system, c.task_id))
                .collect();
            notes.push(format!(
                "{side}: {} rated reports have no score on the other side and are left out ({}{})",
                unknown.len(),
                names.join(", "),
                if unknown.len() > 10 { ", ..." } else { "" }
            ));
        }
    }
    let mut inter_annotator = BTreeMap::new();
    for (side, t) in [("a", a), ("b", b)] {
        if let Some(ann) = &t.annotators {
            let per_level = ann
                .levels
                .iter()
                .map(|(l, by)| (l.clone(), inter_annotator_level(by)))
                .collect();
            inter_annotator.insert(side.to_string(), per_level);
        }
    }
    AgreeReport {
        levels,
        a: a.label.clone(),
        b: b.label.clone(),
        bootstrap: (opts.bootstrap > 0).then(|| BootstrapInfo {
            replicates: opts.bootstrap,
            seed: opts.seed,
            interval: "percentile 95 % over tasks resampled with replacement".into(),
        }),
        inter_annotator,
        raters,
        breakdowns,
        notes,
    }
}

/// One level's agreement over the cells `keep` accepts, with the raters and
/// ratings behind it when a side is human ratings.
fn level_with_counts(
    a: &ScoreTable,
    b: &ScoreTable,
    level: &str,
    opts: &AgreeOptions,
    keep: &impl Fn(&Cell) -> bool,
) -> LevelAgreement {
    let (sa, sb) = (
        filtered(&a.levels[level], keep),
        filtered(&b.levels[level], keep),
    );
    let mut r = agree_level(&sa, &sb, opts);
    with_counts(&mut r, a, b, level, &sa, &sb);
    r
}

fn with_counts(
    r: &mut LevelAgreement,
    a: &ScoreTable,
    b: &ScoreTable,
    level: &str,
    sa: &Scores,
    sb: &Scores,
) {
    let common = |c: &Cell| sa.contains_key(c) && sb.contains_key(c);
    let counts = [a, b]
        .iter()
        .filter_map(|t| rater_counts(t, level, &common))
        .fold(None, |acc: Option<(usize, usize)>, (x, y)| {
            Some(acc.map_or((x, y), |(p, q)| (p + x, q + y)))
        });
    if let Some((raters, ratings)) = counts {
        r.raters = Some(raters);
        r.ratings = Some(ratings);
    }
}

/// Per-language (where the task's language is known) and per-system agreement,
/// when a side holds human ratings or languages are known.
fn breakdowns(
    a: &ScoreTable,
    b: &ScoreTable,
    levels: &[String],
    opts: &AgreeOptions,
) -> Vec<GroupAgreement> {
    let human = a.annotators.is_some() || b.annotators.is_some();
    let mut languages: BTreeMap<&str, &str> = BTreeMap::new();
    for t in [a, b] {
        for (task, lang) in &t.languages {
            languages.entry(task).or_insert(lang);
        }
    }
    let mut out = Vec::new();
    let group_raters = |keep: &dyn Fn(&Cell) -> bool| -> BTreeMap<String, RaterAgreement> {
        [("a", a), ("b", b)]
            .iter()
            .filter_map(|(side, t)| {
                let ann = t.annotators.as_ref()?;
                Some((side.to_string(), raters::rater_agreement(ann, keep, None)))
            })
            .collect()
    };
    let langs: BTreeSet<&str> = languages.values().copied().collect();
    if human || langs.len() > 1 {
        for lang in &langs {
            let keep = |c: &Cell| languages.get(c.task_id.as_str()) == Some(lang);
            out.push(GroupAgreement {
                by: "language".into(),
                group: lang.to_string(),
                levels: levels
                    .iter()
                    .map(|l| (l.clone(), level_with_counts(a, b, l, opts, &keep)))
                    .collect(),
                raters: group_raters(&keep),
            });
        }
    }
    if human {
        let systems: BTreeSet<&str> = levels
            .iter()
            .flat_map(|l| a.levels[l].keys().filter(|c| b.levels[l].contains_key(*c)))
            .map(|c| c.system.as_str())
            .collect();
        for sys in systems {
            let keep = |c: &Cell| c.system == sys;
            out.push(GroupAgreement {
                by: "system".into(),
                group: sys.to_string(),
                levels: levels
                    .iter()
                    .map(|l| {
                        let (sa, sb) = (&a.levels[l], &b.levels[l]);
                        let mut r = system_level(sa, sb, sys);
                        with_counts(&mut r, a, b, l, &filtered(sa, &keep), &filtered(sb, &keep));
                        (l.clone(), r)
                    })
                    .collect(),
                raters: group_raters(&keep),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scores(rows: &[(&str, &str, f64)]) -> Scores {
        rows.iter()
            .map(|(s, t, v)| (Cell::new(*s, *t), *v))
            .collect()
    }

    #[test]
    fn par_opc_osc_hand_computed_with_missing_cells() {
        // task 1: x,y,z ; task 2: x,y (z missing in B), a cell only in A is ignored.
        let a = scores(&[
            ("x", "1", 3.0),
            ("y", "1", 2.0),
            ("z", "1", 2.0),
            ("x", "2", 1.0),
            ("y", "2", 1.0),
            ("z", "2", 9.0),
        ]);
        let b = scores(&[
            ("x", "1", 0.9),
            ("y", "1", 0.5),
            ("z", "1", 0.7),
            ("x", "2", 0.2),
            ("y", "2", 0.2),
        ]);
        let r = agree_level(&a, &b, &AgreeOptions::default());
        // task 1: (x,y) >,> agree; (x,z) >,> agree; (y,z) tie,< disagree
        // task 2: (x,y) tie,tie agree  -> 3 of 4
        assert_eq!((r.agreeing_pairs, r.pairs), (3, 4));
        assert_eq!(r.par, Some(0.75));
        // means over common cells: A x 2, y 1.5, z 2 ; B x .55, y .35, z .7
        let opc = stats::pearson(&[2.0, 1.5, 2.0], &[0.55, 0.35, 0.7]).unwrap();
        assert!((r.opc.unwrap() - opc).abs() < 1e-15);
        // ranks A 2.5,1,2.5 ; B 2,1,3 -> pearson = 1.5 / sqrt(1.5 * 2)
        assert!((r.osc.unwrap() - 1.5 / 3f64.sqrt()).abs() < 1e-12);
        assert_eq!((r.tasks, r.systems, r.cells), (2, 3, 5));
        for (v, ci) in [(r.par, r.par_ci), (r.opc, r.opc_ci), (r.osc, r.osc_ci)] {
            let [lo, hi] = ci.unwrap();
            assert!(lo <= v.unwrap() && v.unwrap() <= hi);
        }
    }

    #[test]
    fn undefined_is_null_with_reason() {
        let a = scores(&[("x", "1", 1.0), ("y", "1", 1.0)]);
        let b = scores(&[("x", "1", 0.3), ("y", "1", 0.5)]);
        let r = agree_level(&a, &b, &AgreeOptions::default());
        assert_eq!(r.par, Some(0.0));
        assert_eq!(r.opc, None);
        assert_eq!(r.osc, None);
        assert!(r
            .notes
            .iter()
            .any(|n| n.contains("opc undefined") && n.contains("of A")));
        let one = agree_level(
            &scores(&[("x", "1", 1.0)]),
            &scores(&[("x", "1", 2.0)]),
            &AgreeOptions::default(),
        );
        assert_eq!((one.par, one.opc, one.osc), (None, None, None));
        assert!(one
            .notes
            .iter()
            .any(|n| n.contains("fewer than two systems")));
        let none = agree_level(&a, &Scores::new(), &AgreeOptions::default());
        assert_eq!(none.cells, 0);
        assert!(none.par.is_none() && none.par_ci.is_none());
    }

    #[test]
    fn bootstrap_is_deterministic_per_seed() {
        let mut rows = Vec::new();
        for t in 0..12 {
            for (i, s) in ["p", "q", "r", "s"].iter().enumerate() {
                let ts = t.to_string();
                rows.push((s.to_string(), ts, ((t * 7 + i * 3) % 5) as f64));
            }
        }
        let a: Scores = rows
            .iter()
            .map(|(s, t, v)| (Cell::new(s.clone(), t.clone()), *v))
            .collect();
        let b: Scores = rows
            .iter()
            .map(|(s, t, v)| (Cell::new(s.clone(), t.clone()), (v * 13.0) % 4.0))
            .collect();
        let o = AgreeOptions {
            bootstrap: 200,
            seed: 7,
            levels: None,
        };
        let r1 = agree_level(&a, &b, &o);
        let r2 = agree_level(&a, &b, &o);
        assert_eq!(r1, r2);
        let r3 = agree_level(
            &a,
            &b,
            &AgreeOptions {
                seed: 8,
                ..o.clone()
            },
        );
        assert_eq!(r1.par, r3.par);
        assert_ne!(r1.par_ci, r3.par_ci);
    }

    #[test]
    fn inter_annotator_mean_over_pairs() {
        let mut by = BTreeMap::new();
        // h1 and h2 share task 1 (x > y for both: agree); h1 and h3 share task 1
        // (h3 says y > x: disagree); h2 and h3 too (disagree). Mean = 1/3.
        by.insert(
            "h1".to_string(),
            scores(&[("x", "1", 5.0), ("y", "1", 3.0)]),
        );
        by.insert(
            "h2".to_string(),
            scores(&[("x", "1", 4.0), ("y", "1", 1.0)]),
        );
        by.insert(
            "h3".to_string(),
            scores(&[("x", "1", 2.0), ("y", "1", 3.0)]),
        );
        let r = inter_annotator_level(&by);
        assert!((r.par.unwrap() - 1.0 / 3.0).abs() < 1e-15);
        assert_eq!(
            (r.annotator_pairs, r.annotator_pairs_used, r.pairs),
            (3, 3, 3)
        );
    }

    #[test]
    fn report_json_shape() {
        let a = ScoreTable {
            label: "a".into(),
            levels: [
                (
                    "ta".to_string(),
                    scores(&[("x", "1", 1.0), ("y", "1", 2.0)]),
                ),
                (
                    "overall".to_string(),
                    scores(&[("x", "1", 1.0), ("y", "1", 2.0)]),
                ),
            ]
            .into_iter()
            .collect(),
            ..Default::default()
        };
        let mut b = a.clone();
        b.levels.insert(
            "overall".into(),
            scores(&[("x", "1", 1.0), ("y", "1", 1.0)]),
        );
        let rep = agree(&a, &b, &AgreeOptions::default());
        let v = serde_json::to_value(&rep).unwrap();
        let keys: Vec<&String> = v["levels"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["overall", "ta"]);
        assert_eq!(v["levels"]["ta"]["par"], 1.0);
        assert_eq!(v["levels"]["ta"]["opc"], 1.0);
        assert!(v["levels"]["overall"]["opc"].is_null());
        assert!(v["levels"]["overall"]["opc_ci"].is_null());
        assert_eq!(v["levels"]["overall"]["par"], 0.0);
        let back: AgreeReport = serde_json::from_value(v).unwrap();
        assert_eq!(back, rep);
    }
}
