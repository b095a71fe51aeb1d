//! Variant files: a TOML document naming one ablation and the scoring settings it
//! overrides. Everything a variant may change is re-computable from the stored judge
//! answers and image components; anything needing a new judge answer is refused by
//! the format itself (unknown keys are errors).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use tvir_engine::score::metric_names;
use tvir_engine::score::ScoreOptions;
use tvir_rubric::{AnswerSpec, Band, Rubric, RubricSet};

/// A variant file larger than this is refused.
pub const MAX_VARIANT_BYTES: u64 = 1024 * 1024;

/// Name reserved for the unmodified configuration.
pub const BASE_NAME: &str = "base";

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum VariantError {
    #[error("{path}: cannot read: {message}")]
    Unreadable { path: String, message: String },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}

/// Partial IQ weights: a missing weight keeps the base value.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IqWeightsOverride {
    pub resolution: Option<f64>,
    pub aspect: Option<f64>,
    pub sharpness: Option<f64>,
    pub contrast: Option<f64>,
}

/// Duplicate-penalty settings: `penalty = false` switches it off; `factor` and
/// `cap` re-parameterise p_dup = min(cap, factor x duplicates / valid); `threshold`
/// regroups the images from their stored perceptual hashes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DuplicatesOverride {
    pub penalty: Option<bool>,
    pub factor: Option<f64>,
    pub cap: Option<f64>,
    pub threshold: Option<u32>,
}

/// A replacement mapping table for an issue-count rubric (FLC, CSC).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableOverride {
    pub bands: Vec<Band>,
    /// Divisor of the mapped value (the base keeps its own when absent).
    pub scale: Option<f64>,
}

/// One variant file as written.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    pub name: String,
    #[serde(default)]
    pub description: Option<String>,
    pub failed_as_zero: Option<bool>,
    pub ta_metrics: Option<Vec<String>>,
    pub va_metrics: Option<Vec<String>>,
    pub iq_weights: Option<IqWeightsOverride>,
    pub duplicates: Option<DuplicatesOverride>,
    /// Metric -> verdict label -> per-unit value (e.g. CS `partially_supported`).
    #[serde(default)]
    pub verdicts: BTreeMap<String, BTreeMap<String, f64>>,
    /// Metric -> mapping table (issue-count rubrics).
    #[serde(default)]
    pub tables: BTreeMap<String, TableOverride>,
    /// Metric -> rule name -> per-unit score of units settled without a judge.
    #[serde(default)]
    pub rules: BTreeMap<String, BTreeMap<String, f64>>,
    /// Metric -> report score when the report has no unit for it.
    #[serde(default)]
    pub empty_scores: BTreeMap<String, f64>,
}

/// A ready-to-use scoring configuration: what [`tvir_engine::rescore`] needs plus
/// the duplicate regrouping threshold (None: keep the stored groups).
#[derive(Debug, Clone)]
pub struct Configuration {
    pub name: String,
    pub description: Option<String>,
    pub rubrics: RubricSet,
    pub options: ScoreOptions,
    pub dup_threshold: Option<u32>,
    /// Human-readable list of what differs from the base, in file order.
    pub changes: Vec<String>,
}

impl Configuration {
    /// The base configuration (no change).
    pub fn base(rubrics: RubricSet, options: ScoreOptions) -> Self {
        Self {
            name: BASE_NAME.into(),
            description: None,
            rubrics,
            options,
            dup_threshold: None,
            changes: Vec::new(),
        }
    }
}

fn unit_interval(x: f64) -> bool {
    x.is_finite() && (0.0..=1.0).contains(&x)
}

fn metric_list(list: &[String], what: &str, known: &[String]) -> Result<(), String> {
    if list.is_empty() {
        return Err(format!(
            "{what} is empty: at least one metric must enter it"
        ));
    }
    for (i, m) in list.iter().enumerate() {
        if !known.contains(m) {
            return Err(format!(
                "{what}: unknown metric {m:?} (known: {})",
                known.join(", ")
            ));
        }
        if list[..i].contains(m) {
            return Err(format!("{what}: metric {m:?} listed twice"));
        }
    }
    Ok(())
}

impl Variant {
    /// Parse and check a variant document; `path` names it in errors.
    pub fn from_toml(text: &str, path: &str) -> Result<Self, VariantError> {
        let invalid = |message: String| VariantError::Invalid {
            path: path.into(),
            message,
        };
        let v: Variant = toml::from_str(text).map_err(|e| invalid(e.to_string()))?;
        let name = v.name.trim();
        if name.is_empty() {
            return Err(invalid("`name` must not be empty".into()));
        }
        if name.eq_ignore_ascii_case(BASE_NAME) {
            return Err(invalid(format!(
                "`name` {BASE_NAME:?} is reserved for the unmodified scores"
            )));
        }
        if name.chars().any(char::is_control) {
            return Err(invalid("`name` must not hold control characters".into()));
        }
        Ok(v)
    }

    /// Read a variant file (size-capped).
    pub fn load(path: &Path) -> Result<Self, VariantError> {
        let label = path.display().to_string();
        let unreadable = |message: String| VariantError::Unreadable {
            path: label.clone(),
            message,
        };
        let meta = std::fs::metadata(path).map_err(|e| unreadable(e.to_string()))?;
        if meta.len() > MAX_VARIANT_BYTES {
            return Err(unreadable(format!(
                "{} bytes, larger than the {MAX_VARIANT_BYTES}-byte limit",
                meta.len()
            )));
        }
        let text = std::fs::read_to_string(path).map_err(|e| unreadable(e.to_string()))?;
        Self::from_toml(&text, &label)
    }

    /// This variant applied on top of `base`. `path` names the file in errors.
    pub fn apply(&self, base: &Configuration, path: &str) -> Result<Configuration, VariantError> {
        let invalid = |message: String| VariantError::Invalid {
            path: path.into(),
            message,
        };
        let mut opts = base.options.clone();
        let mut rubrics = base.rubrics.clone();
        let mut changes = Vec::new();
        let mut dup_threshold = base.dup_threshold;

        if let Some(z) = self.failed_as_zero {
            opts.failed_as_zero = z;
            changes.push(format!(
                "failed units {}",
                if z {
                    "count as 0"
                } else {
                    "left out of the mean"
                }
            ));
        }
        if let Some(ta) = &self.ta_metrics {
            metric_list(ta, "ta_metrics", &metric_names(&base.rubrics)).map_err(invalid)?;
            opts.ta_metrics = ta.clone();
            changes.push(format!("TA = mean({})", ta.join(", ")));
        }
        if let Some(va) = &self.va_metrics {
            metric_list(va, "va_metrics", &metric_names(&base.rubrics)).map_err(invalid)?;
            opts.va_metrics = va.clone();
            changes.push(format!("VA = mean({})", va.join(", ")));
        }
        if let Some(w) = &self.iq_weights {
            let mut weights = opts.iq_weights.clone();
            for (name, new, slot) in [
                ("resolution", w.resolution, &mut weights.resolution),
                ("aspect", w.aspect, &mut weights.aspect),
                ("sharpness", w.sharpness, &mut weights.sharpness),
                ("contrast", w.contrast, &mut weights.contrast),
            ] {
                if let Some(x) = new {
                    if !unit_interval(x) {
                        return Err(invalid(format!(
                            "iq_weights.{name} = {x} must lie in [0, 1]"
                        )));
                    }
                    *slot = x;
                }
            }
            let sum = weights.resolution + weights.aspect + weights.sharpness + weights.contrast;
            // Q must stay in [0, 1] like every per-unit score.
            if sum <= 0.0 || sum > 1.0 + 1e-9 {
                return Err(invalid(format!(
                    "iq_weights sum to {sum}; they must sum to more than 0 and at most 1 so that Q stays in [0, 1]"
                )));
            }
            changes.push(format!(
                "IQ weights R {} A {} S {} C {}",
                weights.resolution, weights.aspect, weights.sharpness, weights.contrast
            ));
            opts.iq_weights = weights;
        }
        if let Some(d) = &self.duplicates {
            if let Some(f) = d.factor {
                if !(f.is_finite() && f >= 0.0) {
                    return Err(invalid(format!(
                        "duplicates.factor = {f} must be a number >= 0"
                    )));
                }
                opts.dup_factor = f;
                changes.push(format!("duplicate factor {f}"));
            }
            if let Some(c) = d.cap {
                if !unit_interval(c) {
                    return Err(invalid(format!("duplicates.cap = {c} must lie in [0, 1]")));
                }
                opts.dup_cap = c;
                changes.push(format!("duplicate cap {c}"));
            }
            if let Some(t) = d.threshold {
                if t > 64 {
                    return Err(invalid(format!(
                        "duplicates.threshold = {t}: a 64-bit hash has at most 64 differing bits"
                    )));
                }
                dup_threshold = Some(t);
                changes.push(format!("duplicates regrouped at Hamming distance <= {t}"));
            }
            if d.penalty == Some(false) {
                if d.factor.is_some() || d.cap.is_some() || d.threshold.is_some() {
                    return Err(invalid(
                        "duplicates.penalty = false switches the penalty off; factor, cap and threshold would have no effect"
                            .into(),
                    ));
                }
                opts.dup_factor = 0.0;
                changes.push("no duplicate penalty".into());
            }
        }

        // Rubric overrides, each re-validated as a rubric file would be.
        let mut touched: BTreeMap<String, Rubric> = BTreeMap::new();
        let rubric_for =
            |metric: &str, touched: &mut BTreeMap<String, Rubric>| -> Result<(), VariantError> {
                if touched.contains_key(metric) {
                    return Ok(());
                }
                let r = rubrics.get(metric).map_err(|_| {
                    invalid(format!(
                        "no judged metric {metric:?} (known: {})",
                        base.rubrics
                            .rubrics()
                            .filter(|r| r.is_metric())
                            .map(|r| r.id.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })?;
                if !r.is_metric() {
                    return Err(invalid(format!("{metric:?} is not a scored metric")));
                }
                touched.insert(metric.to_string(), r.clone());
                Ok(())
            };
        for (metric, values) in &self.verdicts {
            rubric_for(metric, &mut touched)?;
            let r = touched.get_mut(metric).expect("inserted above");
            let AnswerSpec::Verdict { labels, .. } = &mut r.answer else {
                return Err(invalid(format!(
                    "verdicts.{metric}: {metric} is not judged by verdict labels"
                )));
            };
            for (label, value) in values {
                let known: Vec<String> = labels.iter().map(|l| l.label.clone()).collect();
                let slot = labels
                    .iter_mut()
                    .find(|l| &l.label == label)
                    .ok_or_else(|| {
                        invalid(format!(
                            "verdicts.{metric}: unknown label {label:?} (known: {})",
                            known.join(", ")
                        ))
                    })?;
                slot.value = *value;
                changes.push(format!("{metric}: {label} = {value}"));
            }
        }
        for (metric, t) in &self.tables {
            rubric_for(metric, &mut touched)?;
            let r = touched.get_mut(metric).expect("inserted above");
            let AnswerSpec::IssueCount { table, scale, .. } = &mut r.answer else {
                return Err(invalid(format!(
                    "tables.{metric}: {metric} has no issue-count mapping table"
                )));
            };
            *table = t.bands.clone();
            if let Some(s) = t.scale {
                *scale = s;
            }
            changes.push(format!(
                "{metric}: mapping table {}",
                describe_bands(&t.bands)
            ));
        }
        for (metric, rules) in &self.rules {
            rubric_for(metric, &mut touched)?;
            let r = touched.get_mut(metric).expect("inserted above");
            for (rule, value) in rules {
                r.rules.insert(rule.clone(), *value);
                changes.push(format!("{metric}: rule {rule} = {value}"));
            }
        }
        for (metric, value) in &self.empty_scores {
            rubric_for(metric, &mut touched)?;
            let r = touched.get_mut(metric).expect("inserted above");
            r.empty_score = Some(*value);
            changes.push(format!("{metric}: score without units = {value}"));
        }
        for (metric, rubric) in touched {
            let label = format!("{path} (overrides of {metric})");
            let text = toml::to_string(&rubric).map_err(|e| invalid(e.to_string()))?;
            let checked = Rubric::from_toml(&text, &label).map_err(|e| VariantError::Invalid {
                path: path.into(),
                message: format!("{metric}: {e}"),
            })?;
            rubrics.replace_rubric(checked);
        }

        Ok(Configuration {
            name: self.name.trim().to_string(),
            description: self.description.clone(),
            rubrics,
            options: opts,
            dup_threshold,
            changes,
        })
    }
}

/// `0:10 1-2:9 ... 18+:1`.
fn describe_bands(bands: &[Band]) -> String {
    bands
        .iter()
        .map(|b| match b.max {
            Some(max) if max == b.min => format!("{}:{}", b.min, b.score),
            Some(max) => format!("{}-{max}:{}", b.min, b.score),
            None => format!("{}+:{}", b.min, b.score),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Configuration {
        Configuration::base(RubricSet::builtin().unwrap(), ScoreOptions::default())
    }

    fn apply(text: &str) -> Result<Configuration, VariantError> {
        Variant::from_toml(text, "v.toml")?.apply(&base(), "v.toml")
    }

    #[test]
    fn empty_variant_changes_nothing() {
        let c = apply("name = \"same\"").unwrap();
        assert_eq!(c.options, ScoreOptions::default());
        assert!(c.changes.is_empty());
        assert_eq!(c.dup_threshold, None);
        let b = base();
        for r in b.rubrics.rubrics() {
            assert_eq!(c.rubrics.get(&r.id).unwrap(), r);
        }
    }

    #[test]
    fn overrides_land_where_they_belong() {
        let c = apply(
            r#"
name = "all"
failed_as_zero = true
ta_metrics = ["citation_support", "writing_quality"]
[iq_weights]
sharpness = 0.2
[duplicates]
factor = 1.0
cap = 0.3
threshold = 4
[verdicts.citation_support]
partially_supported = 0.0
[tables.factual_logical_consistency]
bands = [{ min = 0, max = 0, score = 10.0 }, { min = 1, score = 0.0 }]
[rules.chart_source_consistency]
no_usable_source = 0.5
[empty_scores]
citation_support = 1.0
"#,
        )
        .unwrap();
        assert!(c.options.failed_as_zero);
        assert_eq!(c.options.ta_metrics.len(), 2);
        assert_eq!(c.options.iq_weights.sharpness, 0.2);
        assert_eq!(c.options.iq_weights.contrast, 0.25);
        assert_eq!((c.options.dup_factor, c.options.dup_cap), (1.0, 0.3));
        assert_eq!(c.dup_threshold, Some(4));
        let cs = c.rubrics.get("citation_support").unwrap();
        let AnswerSpec::Verdict { labels, .. } = &cs.answer else {
            panic!()
        };
        let partial = labels.iter().find(|l| l.label == "partially_supported");
        assert_eq!(partial.unwrap().value, 0.0);
        assert_eq!(cs.empty_score, Some(1.0));
        let flc = c.rubrics.get("factual_logical_consistency").unwrap();
        let AnswerSpec::IssueCount { table, .. } = &flc.answer else {
            panic!()
        };
        assert_eq!(table.len(), 2);
        let csc = c.rubrics.get("chart_source_consistency").unwrap();
        assert_eq!(csc.rule_score("no_usable_source"), 0.5);
        assert_eq!(c.changes.len(), 10, "{:?}", c.changes);
    }

    #[test]
    fn penalty_off_zeroes_the_factor() {
        let c = apply("name = \"x\"\n[duplicates]\npenalty = false").unwrap();
        assert_eq!(c.options.dup_factor, 0.0);
    }

    #[test]
    fn bad_variants_are_refused_with_the_file_and_reason() {
        let cases = [
            ("name = \"\"", "must not be empty"),
            ("name = \"Base\"", "reserved"),
            ("name = \"x\"\ncaption_revision = false", "unknown field"),
            ("name = \"x\"\nta_metrics = []", "is empty"),
            ("name = \"x\"\nva_metrics = [\"nope\"]", "unknown metric"),
            (
                "name = \"x\"\nta_metrics = [\"writing_quality\", \"writing_quality\"]",
                "twice",
            ),
            ("name = \"x\"\n[iq_weights]\nsharpness = 0.9", "sum to"),
            ("name = \"x\"\n[iq_weights]\naspect = -0.1", "[0, 1]"),
            ("name = \"x\"\n[duplicates]\ncap = 2.0", "cap"),
            ("name = \"x\"\n[duplicates]\nthreshold = 65", "64"),
            (
                "name = \"x\"\n[duplicates]\npenalty = false\nfactor = 1.0",
                "no effect",
            ),
            (
                "name = \"x\"\n[verdicts.citation_support]\nmaybe = 0.2",
                "unknown label",
            ),
            (
                "name = \"x\"\n[verdicts.writing_quality]\nsupported = 0.2",
                "not judged by verdict",
            ),
            (
                "name = \"x\"\n[verdicts.citation_support]\nsupported = 1.5",
                "[0, 1]",
            ),
            (
                "name = \"x\"\n[tables.factual_logical_consistency]\nbands = [{ min = 1, score = 3.0 }]",
                "must start at 0",
            ),
            (
                "name = \"x\"\n[tables.writing_quality]\nbands = [{ min = 0, score = 3.0 }]",
                "no issue-count",
            ),
            ("name = \"x\"\n[empty_scores]\nfact_dedup = 0.0", "not a scored"),
            ("name = \"x\"\n[empty_scores]\nnope = 0.0", "no judged metric"),
        ];
        for (text, want) in cases {
            let err = apply(text).unwrap_err().to_string();
            assert!(err.starts_with("v.toml"), "{text}: {err}");
            assert!(err.contains(want), "{text}: {err}");
        }
    }
}
