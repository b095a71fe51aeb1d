//! Fact de-duplication without a quadratic judge bill: facts are only compared with
//! facts citing exactly the same index set; normalised-text equality and token-set
//! similarity settle the clear pairs, and only the ambiguous ones go to the judge.

use std::collections::{BTreeMap, BTreeSet};

use tvir_rubric::PrefilterSpec;

/// How pairs are decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DedupMode {
    /// Deterministic pre-filter; only ambiguous pairs reach the judge.
    Prefilter,
    /// Ask the judge about every pair whose cited lists are equal as written (reference behaviour).
    JudgeAll,
    /// Pre-filter only; ambiguous pairs are kept as distinct (no judge).
    Off,
}

/// Which facts a set of duplicate pairs drops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DedupKeep {
    /// The reference evaluator: every fact that is the later member of a
    /// duplicate pair is dropped, even when the earlier member was itself dropped
    /// (A~B and B~C with A and C distinct keep A only).
    Reference,
    /// A fact is dropped only when it duplicates an earlier fact that is kept
    /// (the same chain keeps A and C).
    FirstKept,
}

/// What the pre-filter concluded about a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairCall {
    Duplicate,
    Distinct,
    AskJudge,
}

/// Lower-case, drop punctuation and whitespace differences (NFKC first so full-width
/// and half-width forms compare equal).
pub fn normalize_text(text: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    let mut out = String::new();
    let mut space = false;
    for c in text.nfkc().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            if space && !out.is_empty() {
                out.push(' ');
            }
            space = false;
            out.push(c);
        } else {
            space = true;
        }
    }
    out
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF)
}

/// Token set: words for alphabetic scripts, character bigrams for CJK runs.
pub fn tokens(text: &str) -> BTreeSet<String> {
    tokens_of_normalized(&normalize_text(text))
}

/// [`tokens`] of a text already through [`normalize_text`].
fn tokens_of_normalized(norm: &str) -> BTreeSet<String> {
    let mut set = BTreeSet::new();
    for word in norm.split(' ') {
        let mut latin = String::new();
        let mut cjk: Vec<char> = Vec::new();
        let flush_cjk = |cjk: &mut Vec<char>, set: &mut BTreeSet<String>| {
            if cjk.len() == 1 {
                set.insert(cjk[0].to_string());
            }
            for w in cjk.windows(2) {
                set.insert(w.iter().collect());
            }
            cjk.clear();
        };
        for c in word.chars() {
            if is_cjk(c) {
                if !latin.is_empty() {
                    set.insert(std::mem::take(&mut latin));
                }
                cjk.push(c);
            } else {
                flush_cjk(&mut cjk, &mut set);
                latin.push(c);
            }
        }
        flush_cjk(&mut cjk, &mut set);
        if !latin.is_empty() {
            set.insert(latin);
        }
    }
    set
}

/// Jaccard similarity of two token sets (1 for two empty sets).
pub fn jaccard(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
    let union = a.union(b).count();
    if union == 0 {
        return 1.0;
    }
    a.intersection(b).count() as f64 / union as f64
}

/// The pre-filter's decision for one pair.
pub fn prefilter(a: &str, b: &str, spec: &PrefilterSpec) -> PairCall {
    if normalize_text(a) == normalize_text(b) {
        return PairCall::Duplicate;
    }
    by_similarity(jaccard(&tokens(a), &tokens(b)), spec)
}

/// The call for two texts that differ once normalised, from their Jaccard similarity.
fn by_similarity(sim: f64, spec: &PrefilterSpec) -> PairCall {
    if sim >= spec.duplicate_at {
        PairCall::Duplicate
    } else if sim < spec.distinct_below {
        PairCall::Distinct
    } else {
        PairCall::AskJudge
    }
}

/// The pre-filter over a report's facts, each fact normalised and tokenised once
/// (a group of n facts citing the same sources has n(n-1)/2 pairs); calls equal
/// [`prefilter`]'s.
pub struct Prefilter {
    normalized: Vec<String>,
    tokens: Vec<std::sync::OnceLock<BTreeSet<String>>>,
}

impl Prefilter {
    pub fn new<'a>(texts: impl IntoIterator<Item = &'a str>) -> Self {
        let normalized: Vec<String> = texts.into_iter().map(normalize_text).collect();
        let tokens = normalized.iter().map(|_| Default::default()).collect();
        Self { normalized, tokens }
    }

    fn tokens(&self, i: usize) -> &BTreeSet<String> {
        self.tokens[i].get_or_init(|| tokens_of_normalized(&self.normalized[i]))
    }

    /// The decision for facts `i` and `j`.
    pub fn call(&self, i: usize, j: usize, spec: &PrefilterSpec) -> PairCall {
        if self.normalized[i] == self.normalized[j] {
            return PairCall::Duplicate;
        }
        by_similarity(jaccard(self.tokens(i), self.tokens(j)), spec)
    }
}

/// The candidate pairs `(i, j)`, i < j, of facts with identical cited index sets, in
/// a deterministic order.
pub fn candidate_pairs(cited: &[Vec<String>]) -> Vec<(usize, usize)> {
    let mut groups: BTreeMap<BTreeSet<&str>, Vec<usize>> = BTreeMap::new();
    for (i, refs) in cited.iter().enumerate() {
        let key: BTreeSet<&str> = refs.iter().map(String::as_str).collect();
        groups.entry(key).or_default().push(i);
    }
    pairs_within(groups.values())
}

/// The candidate pairs of the reference evaluator: facts whose cited lists are equal
/// as written, order and repeats included (`[1, 2]` and `[2, 1]` are never compared).
pub fn candidate_pairs_as_listed(cited: &[Vec<String>]) -> Vec<(usize, usize)> {
    let mut groups: BTreeMap<&[String], Vec<usize>> = BTreeMap::new();
    for (i, refs) in cited.iter().enumerate() {
        groups.entry(refs.as_slice()).or_default().push(i);
    }
    pairs_within(groups.values())
}

fn pairs_within<'a>(groups: impl Iterator<Item = &'a Vec<usize>>) -> Vec<(usize, usize)> {
    let mut pairs = Vec::new();
    for members in groups {
        for (a, &i) in members.iter().enumerate() {
            for &j in &members[a + 1..] {
                pairs.push((i, j));
            }
        }
    }
    pairs.sort_unstable();
    pairs
}

/// Keep-first resolution, walking facts in order. Under [`DedupKeep::FirstKept`] a
/// fact is dropped when it duplicates an earlier fact that is itself kept; under
/// [`DedupKeep::Reference`] when it duplicates any earlier fact. Returns, per fact,
/// the kept fact it is merged into (through the earlier member's own merge when
/// that one was dropped), None for kept facts.
pub fn resolve(
    n: usize,
    duplicates: &BTreeSet<(usize, usize)>,
    keep: DedupKeep,
) -> Vec<Option<usize>> {
    let mut dup_of: Vec<Option<usize>> = vec![None; n];
    for j in 0..n {
        for i in 0..j {
            let anchor_ok = keep == DedupKeep::Reference || dup_of[i].is_none();
            if anchor_ok && duplicates.contains(&(i, j)) {
                dup_of[j] = Some(dup_of[i].unwrap_or(i));
                break;
            }
        }
    }
    dup_of
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> PrefilterSpec {
        PrefilterSpec {
            duplicate_at: 0.9,
            distinct_below: 0.35,
        }
    }

    #[test]
    fn equal_after_normalisation_is_duplicate() {
        assert_eq!(
            prefilter("Revenue grew 5%.", "revenue  grew 5 %", &spec()),
            PairCall::Duplicate
        );
        assert_eq!(
            prefilter("收入增长５％。", "收入增长5%", &spec()),
            PairCall::Duplicate
        );
    }

    #[test]
    fn unrelated_is_distinct_and_overlap_is_ambiguous() {
        assert_eq!(
            prefilter(
                "Revenue grew 5% in 2023.",
                "The CEO resigned in March.",
                &spec()
            ),
            PairCall::Distinct
        );
        assert_eq!(
            prefilter(
                "Revenue grew 5% in 2023 driven by cloud.",
                "In 2023 revenue grew 5%, driven by strong cloud sales.",
                &spec()
            ),
            PairCall::AskJudge
        );
    }

    #[test]
    fn prepared_prefilter_calls_as_the_pairwise_one() {
        let texts = [
            "Revenue grew 5%.",
            "revenue  grew 5 %",
            "Revenue grew 5% in 2023 driven by cloud.",
            "In 2023 revenue grew 5%, driven by strong cloud sales.",
            "The CEO resigned in March.",
            "收入增长５％。",
            "收入增长5%",
        ];
        let prepared = Prefilter::new(texts.iter().copied());
        let mut seen = BTreeSet::new();
        for i in 0..texts.len() {
            for j in i + 1..texts.len() {
                let call = prepared.call(i, j, &spec());
                assert_eq!(call, prefilter(texts[i], texts[j], &spec()), "{i} {j}");
                seen.insert(format!("{call:?}"));
            }
        }
        assert_eq!(seen.len(), 3, "all three calls covered: {seen:?}");
    }

    #[test]
    fn cjk_uses_bigrams() {
        let t = tokens("记忆机制");
        assert!(t.contains("记忆") && t.contains("忆机") && t.contains("机制"));
        let mixed = tokens("MemGPT的记忆");
        assert!(mixed.contains("memgpt") && mixed.contains("的记"));
    }

    #[test]
    fn pairs_only_within_identical_cited_sets() {
        let cited = vec![
            vec!["1".to_string(), "2".into()],
            vec!["2".into(), "1".into()],
            vec!["1".into()],
            vec!["1".into(), "2".into()],
        ];
        assert_eq!(candidate_pairs(&cited), vec![(0, 1), (0, 3), (1, 3)]);
        // The reference evaluator compares the cited lists as written.
        assert_eq!(candidate_pairs_as_listed(&cited), vec![(0, 3)]);
    }

    #[test]
    fn first_kept_resolution_ignores_dropped_anchors() {
        // 1 dup of 0; 2 dup of 1 only (1 is dropped, so 2 is kept).
        let d: BTreeSet<_> = [(0, 1), (1, 2)].into_iter().collect();
        assert_eq!(
            resolve(3, &d, DedupKeep::FirstKept),
            vec![None, Some(0), None]
        );
    }

    #[test]
    fn reference_resolution_drops_every_later_member() {
        // The same chain: the reference drops 2 as well, merged into 0 through 1.
        let d: BTreeSet<_> = [(0, 1), (1, 2)].into_iter().collect();
        assert_eq!(
            resolve(3, &d, DedupKeep::Reference),
            vec![None, Some(0), Some(0)]
        );
        // Without a chain both rules agree: the earlier member is kept.
        let d: BTreeSet<_> = [(0, 2), (1, 3)].into_iter().collect();
        for keep in [DedupKeep::Reference, DedupKeep::FirstKept] {
            assert_eq!(resolve(4, &d, keep), vec![None, None, Some(0), Some(1)]);
        }
    }
}
