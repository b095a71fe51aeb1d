//! Extraction scoring against a hand-made gold file: precision, recall and F1 for
//! references (idx and URL equal) and figures (path equal), and the cited-sentence
//! count against the annotated count.

use std::collections::HashMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::model::Report;
use super::urls::{clean_url, url_key};

#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct Gold {
    #[serde(default)]
    pub references: Vec<GoldReference>,
    #[serde(default)]
    pub figures: Vec<GoldFigure>,
    /// Number of cited sentences (fact units) a human counts in the report.
    pub citation_marker_count: usize,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct GoldReference {
    pub idx: String,
    pub url: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct GoldFigure {
    pub src: String,
    #[serde(default)]
    pub caption: Option<String>,
    #[serde(default)]
    pub ref_idxs: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum GoldError {
    #[error("{path}: {message}")]
    Unreadable { path: String, message: String },
    #[error("{path}: not a gold file: {message}")]
    Invalid { path: String, message: String },
}

impl Gold {
    pub fn load(path: &Path) -> Result<Gold, GoldError> {
        let text = std::fs::read_to_string(path).map_err(|e| GoldError::Unreadable {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        serde_json::from_str(&text).map_err(|e| GoldError::Invalid {
            path: path.display().to_string(),
            message: e.to_string(),
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Prf {
    pub true_positives: usize,
    pub predicted: usize,
    pub gold: usize,
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
}

impl Prf {
    /// Empty prediction against empty gold is perfect; otherwise the usual ratios.
    pub fn new(tp: usize, predicted: usize, gold: usize) -> Prf {
        let precision = if predicted == 0 {
            if gold == 0 {
                1.0
            } else {
                0.0
            }
        } else {
            tp as f64 / predicted as f64
        };
        let recall = if gold == 0 {
            if predicted == 0 {
                1.0
            } else {
                0.0
            }
        } else {
            tp as f64 / gold as f64
        };
        let f1 = if precision + recall == 0.0 {
            0.0
        } else {
            2.0 * precision * recall / (precision + recall)
        };
        Prf {
            true_positives: tp,
            predicted,
            gold,
            precision,
            recall,
            f1,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CountComparison {
    pub predicted: usize,
    pub gold: usize,
    /// |predicted - gold| / gold (0 when both are 0; null when only gold is 0).
    pub relative_error: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GoldScore {
    pub references: Prf,
    pub figures: Prf,
    pub cited_sentences: CountComparison,
}

/// Matched pairs between two multisets of keys.
fn multiset_tp<K: std::hash::Hash + Eq>(predicted: Vec<K>, gold: Vec<K>) -> usize {
    let mut counts: HashMap<K, usize> = HashMap::new();
    for g in gold {
        *counts.entry(g).or_default() += 1;
    }
    let mut tp = 0;
    for p in predicted {
        if let Some(c) = counts.get_mut(&p) {
            if *c > 0 {
                *c -= 1;
                tp += 1;
            }
        }
    }
    tp
}

/// A URL as the page a judge would read (METRICS.md section 1: scheme and host
/// case, `www.`, fragment, tracking parameters and a trailing slash do not matter).
fn page(url: &str) -> String {
    url_key(&clean_url(url))
}

fn norm_src(s: &str) -> String {
    s.trim().trim_start_matches("./").to_string()
}

/// Score a parsed report against gold annotations.
pub fn score(report: &Report, gold: &Gold) -> GoldScore {
    let pred_refs: Vec<(String, Option<String>)> = report
        .references
        .iter()
        .map(|r| (r.idx.clone(), r.url.as_deref().map(page)))
        .collect();
    let gold_refs: Vec<(String, Option<String>)> = gold
        .references
        .iter()
        .map(|r| (r.idx.trim().to_string(), r.url.as_deref().map(page)))
        .collect();
    let (np, ng) = (pred_refs.len(), gold_refs.len());
    let references = Prf::new(multiset_tp(pred_refs, gold_refs), np, ng);

    let pred_figs: Vec<String> = report
        .figures
        .iter()
        .map(|f| norm_src(&f.content))
        .collect();
    let gold_figs: Vec<String> = gold.figures.iter().map(|f| norm_src(&f.src)).collect();
    let (np, ng) = (pred_figs.len(), gold_figs.len());
    let figures = Prf::new(multiset_tp(pred_figs, gold_figs), np, ng);

    let predicted = report.facts.len();
    let g = gold.citation_marker_count;
    let relative_error = if g == 0 {
        (predicted == 0).then_some(0.0)
    } else {
        Some((predicted as f64 - g as f64).abs() / g as f64)
    };
    GoldScore {
        references,
        figures,
        cited_sentences: CountComparison {
            predicted,
            gold: g,
            relative_error,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prf_edge_cases() {
        let p = Prf::new(0, 0, 0);
        assert_eq!((p.precision, p.recall, p.f1), (1.0, 1.0, 1.0));
        let p = Prf::new(0, 0, 3);
        assert_eq!((p.precision, p.recall, p.f1), (0.0, 0.0, 0.0));
        let p = Prf::new(3, 4, 6);
        assert!((p.precision - 0.75).abs() < 1e-12);
        assert!((p.recall - 0.5).abs() < 1e-12);
        assert!((p.f1 - 0.6).abs() < 1e-12);
    }

    #[test]
    fn multiset_counts_duplicates_once_each() {
        assert_eq!(multiset_tp(vec![1, 1, 2], vec![1, 2, 2]), 2);
    }
}
