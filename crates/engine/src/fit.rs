//! Cited pages as the judge reads them. The reference evaluator shows the judge
//! every cited page whole, and so does this suite by default. A page is cut only
//! when something forces it, by one rule, and the cut is recorded in the unit:
//!
//! - `--source-chars N` (or a rubric's `max_source_chars`): at most N characters
//!   per page;
//! - the judge model's context window, once known (an overflow reply of this run,
//!   or one an earlier run stored; see [`tvir_judge::Judge::prompt_budget`]): the
//!   pages of one unit share what the rest of the prompt and the answer leave.
//!   Pages shorter than an equal share stay whole and hand the rest of their share
//!   to the longer ones.
//!
//! **The rule** ([`CUT_RULE`]): the page is split into passages (paragraphs, long
//! ones split further near [`PASSAGE_CHARS`]); passages are ranked by how many
//! distinct words of the claim (the fact, or the chart's caption) they contain,
//! earlier passages first on ties; the best are kept while they fit, and shown in
//! page order, each gap replaced by a visible `[… N characters omitted …]` marker.

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;

use serde::Serialize;

use crate::dedup::tokens;
use crate::engine::Engine;
use crate::outcome::Outcome;
use crate::settings::JudgeMode;
use tvir_judge::estimate::{estimate_request, text_tokens};
use tvir_rubric::{build_request, RequestLabel, Rubric, UnitInputs};

/// The name of the one cutting rule, as unit details record it.
pub const CUT_RULE: &str = "closest-passages";
/// Passages longer than this (characters) are split at a space near it.
pub const PASSAGE_CHARS: usize = 1200;
/// The share of the judge's prompt budget the suite plans to fill: our token
/// estimate (4 characters a token) runs below real tokenizers on some text.
pub const BUDGET_SAFETY: f64 = 0.85;

/// What forced a cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CutCause {
    /// `--source-chars N`.
    SourceChars,
    /// The rubric's `max_source_chars`.
    RubricMax,
    /// The judge model's context window.
    ContextWindow,
}

/// One cut page, as the unit's `detail.source_cuts` records it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SourceCut {
    /// The reference index of the page.
    pub idx: String,
    pub original_chars: usize,
    /// Characters of the page text kept (markers not counted).
    pub kept_chars: usize,
    pub rule: &'static str,
    pub cause: CutCause,
}

/// The passages of `text` as byte ranges, in page order, covering the whole text:
/// paragraphs (split after blank lines), long ones split at the last space before
/// [`PASSAGE_CHARS`] characters (or at that length when there is none).
pub fn passages(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\n' {
            // A blank line ends a paragraph (it stays with the paragraph before).
            let mut j = i + 1;
            while j < bytes.len() && (bytes[j] == b' ' || bytes[j] == b'\t' || bytes[j] == b'\r') {
                j += 1;
            }
            if j < bytes.len() && bytes[j] == b'\n' {
                while j < bytes.len() && bytes[j].is_ascii_whitespace() {
                    j += 1;
                }
                split_long(text, start, j, &mut out);
                start = j;
                i = j;
                continue;
            }
        }
        i += 1;
    }
    if start < text.len() {
        split_long(text, start, text.len(), &mut out);
    }
    out
}

fn split_long(text: &str, mut start: usize, end: usize, out: &mut Vec<(usize, usize)>) {
    while text[start..end].chars().count() > PASSAGE_CHARS {
        let limit = text[start..end]
            .char_indices()
            .nth(PASSAGE_CHARS)
            .map_or(end, |(b, _)| start + b);
        // After the last space (its own width: a no-break or ideographic space
        // is more than one byte).
        let cut = text[start..limit]
            .char_indices()
            .rfind(|(_, c)| c.is_whitespace())
            .map(|(b, c)| start + b + c.len_utf8())
            .filter(|&c| c > start)
            .unwrap_or(limit);
        out.push((start, cut));
        start = cut;
    }
    if start < end {
        out.push((start, end));
    }
}

fn marker(omitted: usize) -> String {
    format!("[… {omitted} characters omitted …]")
}

/// `text` cut to about `budget` characters by [`CUT_RULE`], keeping the passages
/// closest to `claim`; None when it already fits. The result holds at most
/// `budget` characters of the page plus the omission markers.
pub fn cut_page(text: &str, claim: &BTreeSet<String>, budget: usize) -> Option<(String, usize)> {
    let total = text.chars().count();
    if total <= budget {
        return None;
    }
    let ps = passages(text);
    let lens: Vec<usize> = ps
        .iter()
        .map(|&(a, b)| text[a..b].chars().count())
        .collect();
    let overlap: Vec<usize> = ps
        .iter()
        .map(|&(a, b)| tokens(&text[a..b]).intersection(claim).count())
        .collect();
    let mut order: Vec<usize> = (0..ps.len()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(overlap[i]), i));
    let mut keep = vec![false; ps.len()];
    let mut used = 0;
    for &i in &order {
        if used + lens[i] <= budget {
            keep[i] = true;
            used += lens[i];
        }
    }
    let mut out = String::new();
    let mut omitted = 0;
    let mut kept = 0;
    let flush = |out: &mut String, omitted: &mut usize| {
        if *omitted > 0 {
            if !out.is_empty() && !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&marker(*omitted));
            out.push('\n');
            *omitted = 0;
        }
    };
    if used == 0 {
        // No whole passage fits: the best one's beginning.
        let best = order[0];
        let (a, b) = ps[best];
        let head: String = text[a..b].chars().take(budget).collect();
        let before = text[..a].chars().count();
        if before > 0 {
            flush(&mut out, &mut { before });
        }
        kept = head.chars().count();
        out.push_str(&head);
        let after = total - before - kept;
        if after > 0 {
            flush(&mut out, &mut { after });
        }
        return Some((out, kept));
    }
    for (i, &(a, b)) in ps.iter().enumerate() {
        if keep[i] {
            flush(&mut out, &mut omitted);
            out.push_str(&text[a..b]);
            kept += lens[i];
        } else {
            omitted += lens[i];
        }
    }
    flush(&mut out, &mut omitted);
    Some((out, kept))
}

/// Shares of `budget` for pages of sizes `sizes`: equal shares, a page below its
/// share keeps its size and the rest is shared among the larger ones. Returns
/// None for pages that fit whole.
pub fn shares(sizes: &[u64], budget: u64) -> Vec<Option<u64>> {
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by_key(|&i| (sizes[i], i));
    let mut out = vec![None; sizes.len()];
    let mut left = budget;
    let mut pages_left = sizes.len() as u64;
    for i in order {
        let share = left / pages_left.max(1);
        if sizes[i] > share {
            out[i] = Some(share);
            left -= share;
        } else {
            left -= sizes[i];
        }
        pages_left -= 1;
    }
    out
}

/// Which unit a fitting is for (the request label of its judge call).
#[derive(Clone, Copy)]
pub(crate) struct UnitLabel<'a> {
    pub report: &'a str,
    pub unit: &'a str,
    pub sample: u32,
}

impl Engine {
    /// Cut the unit's pages where a cap or the judge's known context window
    /// forces it (each page at most once, by [`CUT_RULE`], from its full text).
    /// Returns whether the window was known, and the cuts.
    fn fit_sources(
        &self,
        rubric: &Rubric,
        inputs: &mut UnitInputs,
        claim: &std::cell::OnceCell<BTreeSet<String>>,
        claim_text: &str,
        at: UnitLabel<'_>,
    ) -> (bool, Vec<SourceCut>) {
        let chars: Vec<usize> = inputs
            .sources
            .iter()
            .map(|s| s.text.chars().count())
            .collect();
        // Per page: (character budget, what set it); the smaller cap wins.
        let cap = [
            (self.settings.source_chars, CutCause::SourceChars),
            (rubric.max_source_chars, CutCause::RubricMax),
        ]
        .into_iter()
        .filter_map(|(c, why)| c.map(|c| (c, why)))
        .min_by_key(|(c, _)| *c);
        let mut budget: Vec<Option<(usize, CutCause)>> =
            chars.iter().map(|&n| cap.filter(|(c, _)| n > *c)).collect();
        let room = self.source_room(rubric, inputs, at);
        if let Some(room) = room {
            // Token sizes of the pages as the caps leave them.
            let sizes: Vec<u64> = inputs
                .sources
                .iter()
                .zip(&budget)
                .zip(&chars)
                .map(|((s, b), &n)| {
                    let t = text_tokens(&s.text);
                    match b {
                        Some((c, _)) if n > 0 => t * *c as u64 / n as u64,
                        _ => t,
                    }
                })
                .collect();
            if sizes.iter().sum::<u64>() > room {
                for (i, share) in shares(&sizes, room).into_iter().enumerate() {
                    let Some(share) = share else { continue };
                    let t = text_tokens(&inputs.sources[i].text).max(1);
                    // Tokens to characters at this page's own ratio, less room for
                    // the omission markers.
                    let c = (share as f64 * chars[i] as f64 / t as f64) as usize;
                    let c = c.saturating_sub(64);
                    if budget[i].is_none_or(|(b, _)| c < b) {
                        budget[i] = Some((c, CutCause::ContextWindow));
                    }
                }
            }
        }
        let mut cuts = Vec::new();
        for ((s, b), &n) in inputs.sources.iter_mut().zip(&budget).zip(&chars) {
            let Some((b, cause)) = *b else { continue };
            // The claim's words, made only when a page is cut.
            let claim = claim.get_or_init(|| tokens(claim_text));
            if let Some((text, kept)) = cut_page(&s.text, claim, b) {
                cuts.push(SourceCut {
                    idx: s.idx.clone(),
                    original_chars: n,
                    kept_chars: kept,
                    rule: CUT_RULE,
                    cause,
                });
                s.text = text;
            }
        }
        (room.is_some(), cuts)
    }

    /// Tokens the unit's page texts may take within the judge's context window
    /// (with [`BUDGET_SAFETY`]), when the judge knows its window.
    fn source_room(&self, rubric: &Rubric, inputs: &UnitInputs, at: UnitLabel<'_>) -> Option<u64> {
        let judge = self.judge.as_ref()?;
        if self.settings.mode == JudgeMode::NoJudge
            || inputs.sources.is_empty()
            || !judge.knows_context_window()
        {
            return None;
        }
        let mut bare = inputs.clone();
        for s in &mut bare.sources {
            s.text.clear();
        }
        let label = RequestLabel {
            report: at.report,
            unit: at.unit,
            sample: at.sample,
        };
        let request = build_request(&self.rubrics, rubric, &bare, label).ok()?;
        let budget = judge.prompt_budget(&request)?;
        let base = estimate_request(&request, None).prompt_tokens;
        Some(((budget as f64 * BUDGET_SAFETY) as u64).saturating_sub(base))
    }

    /// Ask about a unit that shows cited pages: the pages fitted first; when the
    /// call fails and the judge learnt its context window from that failure, the
    /// pages are fitted to it and the unit is asked once more. Returns the outcome
    /// and the cuts of the request that gave it.
    pub(crate) async fn ask_with_sources(
        &self,
        rubric: &Rubric,
        inputs: UnitInputs,
        claim: &str,
        at: UnitLabel<'_>,
    ) -> (Outcome, Vec<SourceCut>) {
        let claim_words = std::cell::OnceCell::new();
        let mut fitted = inputs.clone();
        let (knew_window, cuts) = self.fit_sources(rubric, &mut fitted, &claim_words, claim, at);
        let outcome = self
            .ask(rubric, &fitted, at.report, at.unit, at.sample)
            .await;
        if matches!(outcome, Outcome::Failed(_)) && !knew_window {
            let mut again = inputs;
            let (knows_now, cuts) = self.fit_sources(rubric, &mut again, &claim_words, claim, at);
            if knows_now && cuts.iter().any(|c| c.cause == CutCause::ContextWindow) {
                self.stats
                    .source_cuts
                    .fetch_add(cuts.len() as u64, Ordering::Relaxed);
                let outcome = self
                    .ask(rubric, &again, at.report, at.unit, at.sample)
                    .await;
                return (outcome, cuts);
            }
        }
        self.stats
            .source_cuts
            .fetch_add(cuts.len() as u64, Ordering::Relaxed);
        (outcome, cuts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page() -> String {
        let mut s = String::new();
        for i in 0..40 {
            s.push_str(&format!(
                "Paragraph {i} talks about weather and rivers and mountains.\n\n"
            ));
        }
        s.push_str("The battery market reached 120 GWh in 2023 according to the survey.\n\n");
        for i in 40..60 {
            s.push_str(&format!("Paragraph {i} is about cooking and gardens.\n\n"));
        }
        s
    }

    #[test]
    fn passages_cover_the_text_in_order() {
        let text = page();
        let ps = passages(&text);
        assert_eq!(ps.first().unwrap().0, 0);
        assert_eq!(ps.last().unwrap().1, text.len());
        for w in ps.windows(2) {
            assert_eq!(w[0].1, w[1].0);
        }
        let long = "word ".repeat(1000);
        let ps = passages(&long);
        assert!(ps.len() >= 4, "{}", ps.len());
        assert!(ps
            .iter()
            .all(|&(a, b)| long[a..b].chars().count() <= PASSAGE_CHARS));
    }

    /// A long paragraph whose only spaces are multi-byte (no-break, ideographic):
    /// the split lands after the space character, never inside it.
    #[test]
    fn long_passages_split_after_multi_byte_spaces() {
        for space in ['\u{a0}', '\u{3000}', '\u{2003}'] {
            let long = format!("词语{space}").repeat(1000);
            let ps = passages(&long);
            assert!(ps.len() >= 3, "{space:?}: {}", ps.len());
            assert_eq!(ps.last().unwrap().1, long.len());
            for w in ps.windows(2) {
                assert_eq!(w[0].1, w[1].0);
            }
            for &(a, b) in &ps {
                let p = long.get(a..b).expect("passage on char boundaries");
                assert!(p.chars().count() <= PASSAGE_CHARS);
                assert!(b == long.len() || p.ends_with(space), "{space:?}");
            }
        }
    }

    #[test]
    fn the_passage_closest_to_the_claim_is_kept_late_in_the_page() {
        let text = page();
        let claim = tokens("The battery market reached 120 GWh in 2023.");
        let (cut, kept) = cut_page(&text, &claim, 300).unwrap();
        assert!(cut.contains("120 GWh in 2023"), "{cut}");
        assert!(kept <= 300);
        assert!(cut.contains("characters omitted …]"), "{cut}");
        // The omitted counts and the kept text add up to the page.
        let omitted: usize = cut
            .split("[… ")
            .skip(1)
            .map(|s| s.split(' ').next().unwrap().parse::<usize>().unwrap())
            .sum();
        assert_eq!(omitted + kept, text.chars().count());
        // A page within the budget is not cut.
        assert!(cut_page(&text, &claim, text.chars().count()).is_none());
    }

    #[test]
    fn kept_passages_stay_in_page_order() {
        let text = "alpha one\n\nbeta two\n\ngamma alpha\n\ndelta\n\n";
        let claim = tokens("alpha");
        let (cut, _) = cut_page(text, &claim, 25).unwrap();
        let a = cut.find("alpha one").unwrap();
        let g = cut.find("gamma alpha").unwrap();
        assert!(a < g, "{cut}");
        assert!(!cut.contains("beta"));
    }

    #[test]
    fn a_budget_below_every_passage_keeps_the_best_ones_beginning() {
        let text = format!("{}\n\nneedle here {}", "x ".repeat(800), "y ".repeat(800));
        let (cut, kept) = cut_page(&text, &tokens("needle"), 50).unwrap();
        assert_eq!(kept, 50);
        assert!(cut.contains("needle here"), "{cut}");
    }

    #[test]
    fn shares_give_short_pages_their_size() {
        assert_eq!(
            shares(&[100, 5000, 8000], 3000),
            vec![None, Some(1450), Some(1450)]
        );
        assert_eq!(shares(&[100, 200], 3000), vec![None, None]);
        assert_eq!(shares(&[4000], 3000), vec![Some(3000)]);
    }
}
