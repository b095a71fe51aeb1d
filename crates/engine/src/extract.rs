//! The judge as fallback extractor (`--extraction rules|judge|auto`).
//!
//! The report text is cut into windows of bounded size that overlap (sizes from the
//! `extract_*` rubrics); the judge names the reference list (only when the rules list
//! is not usable) and the fact-citation pairs of each window under strict JSON
//! schemas; the answers are merged (entries by label, facts de-duplicated by
//! normalised text) and validated: every fact must be a span of the report text after
//! whitespace normalisation (its `line` and `span` come from where it was found),
//! every label must name an entry, every entry URL must occur in the text. Any
//! failure keeps the rules parse, and the report stays flagged. Figures always stay
//! deterministic. Calls go through the run's ordinary `ask` (cache, accounting,
//! journal, dry-run estimates), handed in as an [`AskUnit`] so this module needs
//! neither the engine nor the flow that calls it.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Range;
use std::sync::LazyLock;

use futures::future::join_all;
use regex::Regex;
use serde_json::Value;

use crate::outcome::{AskUnit, Outcome, PENDING_REASON};
use crate::record::UsageRecord;
use crate::settings::{ExtractionMode, JudgeMode};
use tvir_report::{ExtractionMethod, Fact, JudgeExtraction, Reference, Report};
use tvir_rubric::{
    AnswerSpec, Rubric, RubricSet, SourceText, UnitInputs, EXTRACTION_MAX_FACT_CHARS,
    EXTRACTION_MAX_ITEMS, EXTRACTION_MAX_TITLE_CHARS, EXTRACTION_MAX_URL_CHARS,
};

pub const REFERENCES_RUBRIC: &str = "extract_references";
pub const FACTS_RUBRIC: &str = "extract_facts";

/// A citation marker as writers put it next to text: bracketed or braced numbers,
/// `【…】`, `<sup>…</sup>`, `⁽³⁾`, `<3>`, `(Source 3)`. A judge quoting a sentence may
/// leave any of them out; the fact text drops them.
const MARK: &str = r"(?:\\?\[\^?[0-9][0-9_,\s\-–]*\\?\]|\{[0-9][0-9,\s\-–]*\}|【[^】\n]{1,30}】|<sup>[^<]{1,12}</sup>|⁽[⁰¹²³⁴⁵⁶⁷⁸⁹]{1,4}⁾|<[0-9]{1,3}>|\((?i:sources?|refs?)\s*[0-9][0-9,\s]*\))";

static MARKER: LazyLock<Regex> = LazyLock::new(|| Regex::new(&format!(r"\s*{MARK}")).unwrap());

/// Where each candidate unit of `text` ends, in characters (the index after its last
/// character): a sentence end (`.`, `!`, `?` before whitespace or the end; `。`, `！`,
/// `？` anywhere) or the end of a line that holds text since the previous end. An
/// extraction answer lists at most one item per unit (a fact is a sentence, list item,
/// table row or heading; an entry takes a line), so this bounds its length.
pub fn unit_ends(text: &str) -> Vec<usize> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut open = false;
    for (i, &c) in chars.iter().enumerate() {
        let ends = match c {
            '\n' => open,
            '.' | '!' | '?' | '。' | '！' | '？' => {
                open && closes_sentence(c, chars.get(i + 1).copied())
            }
            _ => {
                open |= !c.is_whitespace();
                false
            }
        };
        if ends {
            out.push(i + 1);
            open = false;
        }
    }
    if open {
        out.push(chars.len());
    }
    out
}

/// Windows of at most `size` characters and at most `max_units` candidate units
/// ([`unit_ends`]) over `text`, each starting up to `overlap` characters (at most a
/// quarter of the window before it) before the previous one ended. A window cut by
/// its size ends on a line break when one is near (in its last fifth); one cut by
/// its units ends with its last whole line (when one ends in its second half), else
/// where its last unit does.
pub fn windows(text: &str, size: usize, overlap: usize, max_units: usize) -> Vec<Range<usize>> {
    let size = size.max(1);
    let max_units = max_units.max(1);
    let bounds: Vec<usize> = text
        .char_indices()
        .map(|(i, _)| i)
        .chain([text.len()])
        .collect();
    let chars = bounds.len() - 1;
    let ends = unit_ends(text);
    let mut out = Vec::new();
    let mut start = 0usize; // in characters
    loop {
        let mut end = (start + size).min(chars);
        let first = ends.partition_point(|&e| e <= start);
        let by_units = ends
            .get(first + max_units - 1)
            .copied()
            .filter(|&e| e < end);
        if let Some(e) = by_units {
            // End with the last whole line when one ends in the window's second half.
            let half = start + (e - start) / 2;
            end = (half..e)
                .rev()
                .find(|&c| text.as_bytes()[bounds[c]] == b'\n')
                .map_or(e, |nl| nl + 1);
        } else if end < chars {
            // Prefer a line break in the last fifth of the window.
            let floor = end - size / 5;
            if let Some(nl) = (floor..end)
                .rev()
                .find(|&c| text.as_bytes()[bounds[c]] == b'\n')
            {
                end = nl + 1;
            }
        }
        out.push(bounds[start]..bounds[end]);
        if end >= chars {
            break;
        }
        let shared = overlap.min((end - start) / 4);
        let next = end.saturating_sub(shared).max(start + 1);
        // Start the next window at a line start when one is in the overlap.
        start = (next..end)
            .find(|&c| c > 0 && text.as_bytes()[bounds[c] - 1] == b'\n')
            .unwrap_or(next);
    }
    out
}

/// Where a quoted fact sits in `text[window]`: its words in order, separated by any
/// whitespace (and by citation markers the judge left out). Searches from `from`
/// first, then the whole window.
pub fn locate(text: &str, window: &Range<usize>, from: usize, fact: &str) -> Option<Range<usize>> {
    let words: Vec<String> = fact.split_whitespace().map(word_pattern).collect();
    if words.is_empty() {
        return None;
    }
    let pattern = words.join(&format!(r"(?:(?:\s*{MARK})+\s*|\s+)"));
    let re = regex::RegexBuilder::new(&pattern)
        .size_limit(1 << 26)
        .build()
        .ok()?;
    let hay = text.get(window.clone())?;
    let from = from.clamp(window.start, window.end) - window.start;
    let found = hay
        .get(from..)
        .and_then(|h| re.find(h).map(|m| (m.start() + from)..(m.end() + from)))
        .or_else(|| re.find(hay).map(|m| m.range()));
    found.map(|r| (r.start + window.start)..(r.end + window.start))
}

/// One quoted word; markers the judge left out may sit before its trailing
/// punctuation (`2024.` matches `2024 [3].`).
fn word_pattern(word: &str) -> String {
    let stem = word
        .trim_end_matches(|c: char| c.is_ascii_punctuation() || "。，；：！？、）」』".contains(c));
    if stem.is_empty() || stem.len() == word.len() {
        return regex::escape(word);
    }
    format!(
        r"{}(?:\s*{MARK})*\s*{}",
        regex::escape(stem),
        regex::escape(&word[stem.len()..])
    )
}

/// The fact text as the rules parser gives it: markers removed, whitespace collapsed.
fn clean_fact(span_text: &str) -> String {
    let stripped = MARKER.replace_all(span_text, "");
    stripped.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn dedup_key(fact: &str) -> String {
    fact.to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric())
        .collect()
}

fn line_of(text: &str, pos: usize) -> usize {
    1 + text.as_bytes()[..pos.min(text.len())]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
}

/// The end (byte offset) of the sentence running through `pos`: after the first
/// sentence end at or past `pos`, or before the line break that comes first. `pos`
/// itself when the text before it already ends a sentence.
fn sentence_end(text: &str, pos: usize) -> usize {
    let before = text[..pos].trim_end_matches([' ', '\t']);
    if before.ends_with(['.', '!', '?', '。', '！', '？']) {
        return pos;
    }
    let rest = &text[pos..];
    let mut it = rest.char_indices().peekable();
    while let Some((i, c)) = it.next() {
        if c == '\n' {
            return pos + i;
        }
        if closes_sentence(c, it.peek().map(|&(_, n)| n)) {
            return pos + i + c.len_utf8();
        }
    }
    text.len()
}

/// Whether `c`, followed by `next`, ends a sentence: `.`, `!` or `?` before
/// whitespace or the end of the text; `。`, `！` or `？` anywhere.
fn closes_sentence(c: char, next: Option<char>) -> bool {
    match c {
        '.' | '!' | '?' => next.is_none_or(char::is_whitespace),
        '。' | '！' | '？' => true,
        _ => false,
    }
}

/// The one URL in `text` that starts with `prefix` (a URL an answer gave cut at its
/// bound), up to the whitespace or bracket that ends it.
fn restore_url(text: &str, prefix: &str) -> Option<String> {
    let mut found: Vec<&str> = text
        .match_indices(prefix)
        .map(|(i, _)| {
            let rest = &text[i..];
            let end = rest
                .find(|c: char| c.is_whitespace() || matches!(c, ')' | '>' | ']' | '"' | '<'))
                .unwrap_or(rest.len());
            &rest[..end]
        })
        .collect();
    found.sort_unstable();
    found.dedup();
    (found.len() == 1).then(|| found[0].to_string())
}

/// A list that filled its schema bound (the server may have stopped it there).
fn note_full_list(cuts: &mut Vec<String>, w: usize, part: &str, len: usize) {
    if len as u64 >= EXTRACTION_MAX_ITEMS {
        cuts.push(format!(
            "window {}: the {part} list filled its bound of {EXTRACTION_MAX_ITEMS} items \
             (the window holds at most that many sentences and lines)",
            w + 1
        ));
    }
}

/// Merge the reference answers of all windows: one entry per label, first URL and
/// title kept; entries whose URL is not in the text are rejected. A URL cut at its
/// schema bound is restored from the text (the one URL there that starts with it),
/// and each cut is noted in `cuts`.
pub fn merge_references(
    text: &str,
    answers: &[Value],
    cuts: &mut Vec<String>,
) -> Result<Vec<Reference>, String> {
    let mut out: Vec<Reference> = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let squeezed: String = text.split_whitespace().collect();
    for (w, answer) in answers.iter().enumerate() {
        let list = answer["references"].as_array();
        note_full_list(cuts, w, "reference", list.map_or(0, Vec::len));
        for (i, e) in list.into_iter().flatten().enumerate() {
            let idx = e["idx"]
                .as_str()
                .unwrap_or("")
                .trim()
                .trim_matches(['[', ']', '^'])
                .to_string();
            if idx.is_empty() {
                return Err(format!(
                    "window {}: entry {} has an empty label",
                    w + 1,
                    i + 1
                ));
            }
            let mut url = e["url"].as_str().unwrap_or("").trim().to_string();
            if url.chars().count() as u64 >= EXTRACTION_MAX_URL_CHARS {
                let Some(full) = restore_url(text, &url) else {
                    return Err(format!(
                        "window {}: entry [{idx}] has a URL cut at {EXTRACTION_MAX_URL_CHARS} \
                         characters that starts no single URL of the report",
                        w + 1
                    ));
                };
                cuts.push(format!(
                    "window {}: entry [{idx}]: URL cut at {EXTRACTION_MAX_URL_CHARS} characters, \
                     restored from the report ({} characters)",
                    w + 1,
                    full.chars().count()
                ));
                url = full;
            }
            if !url.is_empty() && !squeezed.contains(&url.split_whitespace().collect::<String>()) {
                return Err(format!(
                    "window {}: entry [{idx}] has a URL that is not in the report: {url}",
                    w + 1
                ));
            }
            let title = e["title"].as_str().unwrap_or("").trim().to_string();
            if title.chars().count() as u64 >= EXTRACTION_MAX_TITLE_CHARS {
                cuts.push(format!(
                    "window {}: entry [{idx}]: title kept as cut at {EXTRACTION_MAX_TITLE_CHARS} characters",
                    w + 1
                ));
            }
            let line = if url.is_empty() {
                1
            } else {
                text.find(&url).map_or(1, |p| line_of(text, p))
            };
            match seen.get(&idx) {
                Some(&k) => {
                    let r = &mut out[k];
                    if r.url.is_none() && !url.is_empty() {
                        r.url = Some(url);
                        r.line = line;
                    }
                    if r.title.is_none() && !title.is_empty() {
                        r.title = Some(title);
                    }
                }
                None => {
                    seen.insert(idx.clone(), out.len());
                    out.push(Reference {
                        idx,
                        url: (!url.is_empty()).then_some(url),
                        title: (!title.is_empty()).then_some(title),
                        line,
                    });
                }
            }
        }
    }
    if out.is_empty() {
        return Err("the judge found no reference list".into());
    }
    Ok(out)
}

/// Merge and validate the fact answers of all windows. A fact cut at its schema
/// bound is completed to the end of its sentence in the text, and each cut is noted
/// in `cuts`.
pub fn merge_facts(
    text: &str,
    windows: &[Range<usize>],
    answers: &[Value],
    references: &[Reference],
    cuts: &mut Vec<String>,
) -> Result<Vec<Fact>, String> {
    let idxs: HashSet<&str> = references.iter().map(|r| r.idx.as_str()).collect();
    let mut by_key: BTreeMap<String, usize> = BTreeMap::new();
    let mut out: Vec<Fact> = Vec::new();
    for (w, (window, answer)) in windows.iter().zip(answers).enumerate() {
        let mut from = window.start;
        let list = answer["facts"].as_array();
        note_full_list(cuts, w, "fact", list.map_or(0, Vec::len));
        for (i, item) in list.into_iter().flatten().enumerate() {
            let quoted = item["fact"].as_str().unwrap_or("");
            let Some(mut span) = locate(text, window, from, quoted) else {
                let shown: String = quoted.chars().take(80).collect();
                return Err(format!(
                    "window {}: fact {} is not a span of the report text: \"{shown}\"",
                    w + 1,
                    i + 1
                ));
            };
            if quoted.chars().count() as u64 >= EXTRACTION_MAX_FACT_CHARS {
                let end = sentence_end(text, span.end);
                cuts.push(format!(
                    "window {}: fact {} cut at {EXTRACTION_MAX_FACT_CHARS} characters, \
                     completed to the end of its sentence ({} characters)",
                    w + 1,
                    i + 1,
                    text[span.start..end].chars().count()
                ));
                span.end = end;
            }
            from = span.end;
            let mut ref_idxs = Vec::new();
            for x in item["ref_idxs"].as_array().into_iter().flatten() {
                let idx = x
                    .as_str()
                    .unwrap_or("")
                    .trim()
                    .trim_matches(['[', ']', '^']);
                if !idxs.contains(idx) {
                    return Err(format!(
                        "window {}: fact {} cites [{idx}], which names no entry of the reference list",
                        w + 1,
                        i + 1
                    ));
                }
                if !ref_idxs.iter().any(|r: &String| r == idx) {
                    ref_idxs.push(idx.to_string());
                }
            }
            if ref_idxs.is_empty() {
                return Err(format!("window {}: fact {} cites nothing", w + 1, i + 1));
            }
            let fact = clean_fact(&text[span.clone()]);
            let key = dedup_key(&fact);
            if key.is_empty() {
                continue;
            }
            match by_key.get(&key) {
                Some(&k) => {
                    for r in ref_idxs {
                        if !out[k].ref_idxs.contains(&r) {
                            out[k].ref_idxs.push(r);
                        }
                    }
                }
                None => {
                    by_key.insert(key, out.len());
                    out.push(Fact {
                        fact,
                        ref_idxs,
                        line: line_of(text, span.start),
                        span,
                    });
                }
            }
        }
    }
    out.sort_by_key(|f| f.span.start);
    Ok(out)
}

/// The windows an extraction rubric asks about: its size and overlap, and at most
/// [`EXTRACTION_MAX_ITEMS`] candidate units each (the answer's list bound).
fn rubric_windows(rubric: &Rubric, text: &str) -> Vec<Range<usize>> {
    let overlap = match &rubric.answer {
        AnswerSpec::Extraction { overlap_chars, .. } => *overlap_chars,
        _ => 0,
    };
    let size = rubric.max_report_chars.unwrap_or(12_000);
    windows(text, size, overlap, EXTRACTION_MAX_ITEMS as usize)
}

/// Whether the rules parse's reference list can be trusted for judge extraction.
fn rules_list_usable(report: &Report) -> bool {
    let c = &report.extraction.counts;
    !report.references.is_empty() && c.markers_unresolved * 2 <= c.markers_seen.max(1)
}

/// What judge extraction needs from the run, handed in by the per-report flow.
pub(crate) struct Extractor<'a> {
    pub rubrics: &'a RubricSet,
    pub mode: JudgeMode,
    pub extraction: ExtractionMode,
    /// The run's judge path (the engine).
    pub judge: &'a dyn AskUnit,
}

impl Extractor<'_> {
    /// Run judge extraction on `report` when the mode asks for it. Returns the report
    /// (with judge references and facts when they validated) and the usage of the
    /// extraction calls.
    pub(crate) async fn extract_with_judge(
        &self,
        mut report: Report,
        label: &str,
    ) -> (Report, UsageRecord) {
        let wanted = match self.extraction {
            ExtractionMode::Rules => false,
            ExtractionMode::Judge => true,
            ExtractionMode::Auto => report.extraction.is_suspect(),
        };
        if !wanted {
            return (report, UsageRecord::default());
        }
        let mut usage = UsageRecord::default();
        let mut outcome = JudgeExtraction::default();
        let result = self
            .run_extraction(&report, label, &mut usage, &mut outcome)
            .await;
        match result {
            Ok((refs, facts)) => {
                outcome.status = "used".into();
                outcome.references = refs.as_ref().map_or(report.references.len(), Vec::len);
                outcome.facts = facts.len();
                if let Some(refs) = refs {
                    report.references = refs;
                }
                report.facts = facts;
                report.extraction.method = ExtractionMethod::Judge;
            }
            Err((status, reason)) => {
                outcome.status = status.into();
                outcome.reason = Some(reason);
            }
        }
        report.extraction.judge = Some(outcome);
        (report, usage)
    }

    #[allow(clippy::type_complexity)]
    async fn run_extraction(
        &self,
        report: &Report,
        label: &str,
        usage: &mut UsageRecord,
        outcome: &mut JudgeExtraction,
    ) -> Result<(Option<Vec<Reference>>, Vec<Fact>), (&'static str, String)> {
        let refs_rubric = self
            .rubrics
            .get(REFERENCES_RUBRIC)
            .map_err(|e| ("failed", e.to_string()))?;
        let facts_rubric = self
            .rubrics
            .get(FACTS_RUBRIC)
            .map_err(|e| ("failed", e.to_string()))?;
        let text = &report.text;

        // 1. The reference list: the rules one when usable, else the judge's.
        let judge_refs = if rules_list_usable(report) {
            outcome.references_from = Some("rules".into());
            None
        } else {
            outcome.references_from = Some("judge".into());
            let wins = rubric_windows(refs_rubric, text);
            outcome.windows = outcome.windows.max(wins.len());
            let answers = self
                .ask_windows(
                    refs_rubric,
                    report,
                    &wins,
                    &[],
                    label,
                    "references",
                    usage,
                    outcome,
                )
                .await;
            match answers {
                Ok(answers) => Some(
                    merge_references(text, &answers, &mut outcome.cuts)
                        .map_err(|e| ("rejected", e))?,
                ),
                // A dry run still builds (and so counts) the fact requests.
                Err(e) if self.mode == JudgeMode::DryRun => {
                    let _ = self
                        .fact_answers(
                            facts_rubric,
                            report,
                            &report.references,
                            label,
                            usage,
                            outcome,
                        )
                        .await;
                    return Err(e);
                }
                Err(e) => return Err(e),
            }
        };
        let refs: &[Reference] = judge_refs.as_deref().unwrap_or(&report.references);

        // 2. Fact-citation pairs, window by window, against that list.
        let (wins, answers) = self
            .fact_answers(facts_rubric, report, refs, label, usage, outcome)
            .await?;
        let facts = merge_facts(text, &wins, &answers, refs, &mut outcome.cuts)
            .map_err(|e| ("rejected", e))?;
        Ok((judge_refs, facts))
    }

    #[allow(clippy::type_complexity)]
    async fn fact_answers(
        &self,
        facts_rubric: &Rubric,
        report: &Report,
        refs: &[Reference],
        label: &str,
        usage: &mut UsageRecord,
        outcome: &mut JudgeExtraction,
    ) -> Result<(Vec<Range<usize>>, Vec<Value>), (&'static str, String)> {
        let text = &report.text;
        let sources: Vec<SourceText> = refs
            .iter()
            .map(|r| SourceText {
                idx: r.idx.clone(),
                url: r.url.clone(),
                title: r.title.clone(),
                text: String::new(),
            })
            .collect();
        let wins = rubric_windows(facts_rubric, text);
        outcome.windows = outcome.windows.max(wins.len());
        let answers = self
            .ask_windows(
                facts_rubric,
                report,
                &wins,
                &sources,
                label,
                "facts",
                usage,
                outcome,
            )
            .await?;
        Ok((wins, answers))
    }

    #[allow(clippy::too_many_arguments)]
    async fn ask_windows(
        &self,
        rubric: &Rubric,
        report: &Report,
        wins: &[Range<usize>],
        sources: &[SourceText],
        label: &str,
        part: &str,
        usage: &mut UsageRecord,
        outcome: &mut JudgeExtraction,
    ) -> Result<Vec<Value>, (&'static str, String)> {
        let asks = wins.iter().enumerate().map(|(i, w)| {
            let inputs = UnitInputs {
                report_text: Some(report.text[w.clone()].to_string()),
                sources: sources.to_vec(),
                ..Default::default()
            };
            let unit = format!("extraction:{part}:{}", i + 1);
            async move { self.judge.ask_unit(rubric, &inputs, label, &unit, 0).await }
        });
        let outcomes = join_all(asks).await;
        let mut answers = Vec::new();
        let mut problem: Option<(&'static str, String)> = None;
        let mut pending = false;
        for (i, o) in outcomes.into_iter().enumerate() {
            if self.mode != JudgeMode::NoJudge {
                outcome.calls += 1;
            }
            match o {
                Outcome::Answer { value, usage: u } => {
                    usage.calls += u.calls;
                    usage.prompt_tokens += u.prompt_tokens;
                    usage.completion_tokens += u.completion_tokens;
                    usage.cached_tokens += u.cached_tokens;
                    if let Some(c) = u.cost_usd {
                        usage.cost_usd = Some(usage.cost_usd.unwrap_or(0.0) + c);
                    }
                    answers.push(value);
                }
                Outcome::Failed(e) => {
                    usage.failed_calls += 1;
                    problem.get_or_insert(("failed", format!("{part} window {}: {e}", i + 1)));
                }
                Outcome::Skipped(e) if e == PENDING_REASON => pending = true,
                Outcome::Skipped(e) => {
                    problem.get_or_insert(("skipped", e));
                }
            }
        }
        // Batch mode: a window still in a wave decides (the next pass has its answer).
        if pending {
            return Err(("pending", PENDING_REASON.into()));
        }
        match problem {
            Some(p) => Err(p),
            None => Ok(answers),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn windows_cover_the_text_and_overlap() {
        let text: String = (0..400).map(|i| format!("line {i}\n")).collect();
        let wins = windows(&text, 1000, 200, 1000);
        assert!(wins.len() > 2);
        assert_eq!(wins[0].start, 0);
        assert_eq!(wins.last().unwrap().end, text.len());
        for pair in wins.windows(2) {
            assert!(pair[1].start < pair[0].end, "{pair:?} overlap");
            assert!(pair[1].start > pair[0].start);
        }
        assert_eq!(windows("short", 1000, 200, 1000), vec![0..5]);
        // Multi-byte text never splits a character.
        let cjk = "增长很快。".repeat(500);
        for w in windows(&cjk, 300, 50, 1000) {
            assert!(cjk.get(w).is_some());
        }
    }

    #[test]
    fn facts_are_found_across_whitespace_and_dropped_markers() {
        let text = "Intro line.\nSales rose  by 5 %\nin 2024 [3]. Costs fell [4].\n";
        let w = 0..text.len();
        let span = locate(text, &w, 0, "Sales rose by 5 % in 2024.").unwrap();
        assert_eq!(&text[span.clone()], "Sales rose  by 5 %\nin 2024 [3].");
        assert!(locate(text, &w, 0, "Sales fell").is_none());
    }

    #[test]
    fn merged_facts_are_deduplicated_and_validated() {
        let text = "A first claim holds [1]. A second claim holds [2].\n";
        let refs = vec![
            Reference {
                idx: "1".into(),
                url: Some("https://a.example".into()),
                title: None,
                line: 3,
            },
            Reference {
                idx: "2".into(),
                url: Some("https://b.example".into()),
                title: None,
                line: 4,
            },
        ];
        let wins = vec![0..30, 20..text.len()];
        let a = json!({"facts": [{"fact": "A first claim holds [1].", "ref_idxs": ["1"]}]});
        let b = json!({"facts": [
            {"fact": "A first claim holds", "ref_idxs": ["[1]"]},
            {"fact": "A second claim holds [2].", "ref_idxs": ["2"]}]});
        let mut cuts = Vec::new();
        let facts = merge_facts(
            text,
            &wins,
            &[a.clone(), json!({"facts": []})],
            &refs,
            &mut cuts,
        )
        .unwrap();
        assert_eq!(facts.len(), 1);
        let wins2 = vec![0..text.len(), 0..text.len()];
        let facts = merge_facts(text, &wins2, &[a, b], &refs, &mut cuts).unwrap();
        assert_eq!(facts.len(), 2, "{facts:?}");
        assert_eq!(facts[1].fact, "A second claim holds.");
        let bad = json!({"facts": [{"fact": "A first claim holds", "ref_idxs": ["9"]}]});
        let err = merge_facts(text, &wins2[..1], &[bad], &refs, &mut cuts).unwrap_err();
        assert!(err.contains("[9]"), "{err}");
        let invented = json!({"facts": [{"fact": "Something never said", "ref_idxs": ["1"]}]});
        let err = merge_facts(text, &wins2[..1], &[invented], &refs, &mut cuts).unwrap_err();
        assert!(cuts.is_empty(), "{cuts:?}");
        assert!(err.contains("not a span"), "{err}");
    }

    #[test]
    fn references_merge_by_label_and_urls_must_exist() {
        let text = "Body.\nSources\n1. Alpha https://a.example/x\n2. Beta https://b.example/y\n";
        let a =
            json!({"references": [{"idx": "1", "url": "https://a.example/x", "title": "Alpha"}]});
        let b = json!({"references": [
            {"idx": "[1]", "url": "", "title": ""},
            {"idx": "2", "url": "https://b.example/y", "title": "Beta"}]});
        let mut cuts = Vec::new();
        let refs = merge_references(text, &[a, b], &mut cuts).unwrap();
        assert_eq!(refs.len(), 2);
        assert_eq!(refs[0].line, 3);
        assert_eq!(refs[1].title.as_deref(), Some("Beta"));
        let fake = json!({"references": [{"idx": "1", "url": "https://made.up/", "title": ""}]});
        assert!(merge_references(text, &[fake], &mut cuts).is_err());
        assert!(merge_references(text, &[json!({"references": []})], &mut cuts).is_err());
        assert!(cuts.is_empty(), "{cuts:?}");
    }

    /// One window over all of `text`.
    fn whole_text(text: &str) -> Range<usize> {
        0..text.len()
    }

    #[test]
    fn windows_hold_at_most_the_list_bound_of_units() {
        // 250 one-sentence lines of about 30 characters: far under the size limit,
        // over the unit bound.
        let text: String = (0..250)
            .map(|i| format!("Claim number {i} holds [1].\n"))
            .collect();
        let wins = windows(&text, 12_000, 1500, 100);
        assert!(wins.len() >= 3, "{wins:?}");
        assert_eq!(wins[0].start, 0);
        assert_eq!(wins.last().unwrap().end, text.len());
        for w in &wins {
            let n = unit_ends(&text[w.clone()]).len();
            assert!(n <= 100, "{w:?} holds {n} units");
        }
        for pair in wins.windows(2) {
            assert!(pair[1].start < pair[0].end, "{pair:?} overlap");
        }
        // Sentences and lines are units; a decimal point and blank lines are not.
        assert_eq!(
            unit_ends("Rose 3.5 % in 2024. Fell again!\n\n| a | b |\nEnd"),
            vec![19, 31, 43, 46]
        );
        assert_eq!(unit_ends("増えた。減った。"), vec![4, 8]);
    }

    #[test]
    fn answers_cut_at_their_bounds_are_completed_from_the_text() {
        let bound = EXTRACTION_MAX_FACT_CHARS as usize;
        let long = format!(
            "The long sentence {} ends here [1].",
            "goes on and on ".repeat(80)
        );
        let text = format!("Intro.\n{long} Next sentence [1].\n\n[1] A. https://a.example/x\n");
        let refs = vec![Reference {
            idx: "1".into(),
            url: Some("https://a.example/x".into()),
            title: None,
            line: 4,
        }];
        // What a grammar-constrained server gives: the copy stopped at the bound.
        let cut: String = long.chars().take(bound).collect();
        let answer = json!({"facts": [{"fact": cut, "ref_idxs": ["1"]}]});
        let mut cuts = Vec::new();
        let facts = merge_facts(&text, &[whole_text(&text)], &[answer], &refs, &mut cuts).unwrap();
        assert_eq!(facts.len(), 1);
        assert!(facts[0].fact.ends_with("ends here."), "{}", facts[0].fact);
        assert!(!facts[0].fact.contains("Next sentence"));
        assert_eq!(cuts.len(), 1, "{cuts:?}");
        assert!(
            cuts[0].contains("completed to the end of its sentence"),
            "{cuts:?}"
        );

        // A URL cut at its bound is restored; one that starts no URL is rejected.
        let url = format!("https://long.example/{}", "segment/".repeat(150));
        let text = format!("Body [1].\n\n[1] Long page. {url}\n[2] Other. https://b.example/\n");
        let cut_url: String = url
            .chars()
            .take(EXTRACTION_MAX_URL_CHARS as usize)
            .collect();
        let answer = json!({"references": [{"idx": "1", "url": cut_url, "title": "Long page"}]});
        let mut cuts = Vec::new();
        let refs = merge_references(&text, &[answer], &mut cuts).unwrap();
        assert_eq!(refs[0].url.as_deref(), Some(url.as_str()));
        assert_eq!(cuts.len(), 1, "{cuts:?}");
        let made_up: String = format!("https://made.up/{}", "x".repeat(900))
            .chars()
            .take(EXTRACTION_MAX_URL_CHARS as usize)
            .collect();
        let answer = json!({"references": [{"idx": "1", "url": made_up, "title": ""}]});
        assert!(merge_references(&text, &[answer], &mut cuts).is_err());

        // A list that filled its bound is noted.
        let text: String = (0..150)
            .map(|i| format!("Claim {i} holds [1].\n"))
            .collect();
        let items: Vec<Value> = (0..EXTRACTION_MAX_ITEMS)
            .map(|i| json!({"fact": format!("Claim {i} holds [1]."), "ref_idxs": ["1"]}))
            .collect();
        let refs = vec![Reference {
            idx: "1".into(),
            url: None,
            title: None,
            line: 1,
        }];
        let mut cuts = Vec::new();
        let facts = merge_facts(
            &text,
            &[whole_text(&text)],
            &[json!({"facts": items})],
            &refs,
            &mut cuts,
        )
        .unwrap();
        assert_eq!(facts.len() as u64, EXTRACTION_MAX_ITEMS);
        assert!(
            cuts.iter().any(|c| c.contains("filled its bound")),
            "{cuts:?}"
        );
    }
}
