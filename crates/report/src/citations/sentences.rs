//! Sentence splitting of a flattened unit (markers after terminal punctuation stay
//! with their sentence) and the cleaning of a sentence into fact text.

use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

use super::markers::{Flat, RawCite, ABBREVIATIONS, SENTINEL};

/// A sentence (or whole unit) cut from a flat unit.
#[derive(Debug, Clone)]
pub(crate) struct Sentence {
    /// Flat byte range, markers included.
    pub range: Range<usize>,
    pub text: String,
    pub cites: Vec<RawCite>,
}

pub(super) fn is_closing(c: char) -> bool {
    matches!(
        c,
        '”' | '’' | '"' | '\'' | '」' | '』' | '）' | ')' | '*' | '_' | '】' | '》'
    )
}

/// Split a flat unit into sentences at `。！？.!?` (not inside decimals,
/// abbreviations or URLs) and at hard breaks; markers right after a sentence's
/// terminal punctuation belong to that sentence.
pub(crate) fn split_sentences(flat: &Flat) -> Vec<Sentence> {
    let text = &flat.text;
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut ends: Vec<usize> = Vec::new();
    let mut k = 0;
    while k < chars.len() {
        let (pos, c) = chars[k];
        let mut boundary = false;
        if matches!(c, '。' | '！' | '？' | '；') && c != '；' {
            boundary = true;
        } else if matches!(c, '.' | '!' | '?') {
            // Next non-closing char must be whitespace, a marker or the end.
            let mut n = k + 1;
            while n < chars.len() && is_closing(chars[n].1) {
                n += 1;
            }
            let next = chars.get(n).map(|x| x.1);
            let spaced =
                matches!(next, None | Some(SENTINEL)) || next.is_some_and(char::is_whitespace);
            if spaced {
                boundary = true;
                if c == '.' {
                    let before = &text[..pos];
                    let word_start = before
                        .char_indices()
                        .rev()
                        .find(|&(_, ch)| ch.is_whitespace() || ch == '(' || ch == SENTINEL)
                        .map(|(i, ch)| i + ch.len_utf8())
                        .unwrap_or(0);
                    let word = before[word_start..].to_lowercase();
                    let word = word.trim_start_matches(['"', '“', '(', '*']);
                    let single_initial = word.chars().count() == 1
                        && word
                            .chars()
                            .all(|ch| ch.is_alphabetic() && !crate::language::is_cjk(ch));
                    if ABBREVIATIONS.contains(&word)
                        || single_initial && before[word_start..].chars().all(char::is_uppercase)
                    {
                        boundary = false;
                    }
                    // A lowercase continuation means the period was not an end.
                    let mut m = n;
                    while m < chars.len() && (chars[m].1.is_whitespace() || chars[m].1 == SENTINEL)
                    {
                        m += 1;
                    }
                    if let Some(&(_, nc)) = chars.get(m) {
                        if nc.is_lowercase() && ABBREVIATIONS.contains(&word) {
                            boundary = false;
                        }
                    }
                }
            }
        }
        if boundary {
            // Include closing quotes/brackets, then any markers (and spaces between).
            let mut n = k + 1;
            while n < chars.len() && is_closing(chars[n].1) {
                n += 1;
            }
            let mut m = n;
            let mut end = chars.get(n).map(|x| x.0).unwrap_or(text.len());
            while m < chars.len() && (chars[m].1.is_whitespace() || chars[m].1 == SENTINEL) {
                if chars[m].1 == SENTINEL {
                    end = chars[m].0 + SENTINEL.len_utf8();
                    // Closing punctuation right after a marker (`.[1])`) stays too.
                }
                m += 1;
            }
            // A parenthesised group of citation links after the end
            // (`China. ([site.org](url)) It reached`) belongs to the sentence it
            // follows, not to the next one.
            if let Some(close) = cite_group_after(&chars, m) {
                end = chars[close].0 + 1;
            }
            ends.push(end);
            k = chars.partition_point(|x| x.0 < end);
            continue;
        }
        k += 1;
    }
    // Hard breaks end units too.
    for &b in &flat.hard_breaks {
        ends.push(b);
    }
    ends.push(text.len());
    ends.sort_unstable();
    ends.dedup();

    let sentinel_positions: Vec<usize> = text
        .char_indices()
        .filter(|(_, c)| *c == SENTINEL)
        .map(|(i, _)| i)
        .collect();
    let mut out = Vec::new();
    let mut start = 0;
    for end in ends {
        if end <= start {
            continue;
        }
        let piece = &text[start..end];
        let mut cites = Vec::new();
        for (si, &p) in sentinel_positions.iter().enumerate() {
            if p >= start && p < end {
                if let Some(c) = flat.cites.get(si) {
                    cites.extend(c.iter().cloned());
                }
            }
        }
        let clean = clean_fact_text(piece);
        if !clean.is_empty() || !cites.is_empty() {
            out.push(Sentence {
                range: start..end,
                text: clean,
                cites,
            });
        }
        start = end;
    }
    out
}

/// Index of the `)` closing a citation group that opens at `chars[open]`: a short
/// parenthesis holding at least one citation and no sentence of its own.
pub(super) fn cite_group_after(chars: &[(usize, char)], open: usize) -> Option<usize> {
    if chars.get(open).map(|x| x.1) != Some('(') {
        return None;
    }
    let close =
        (open + 1..chars.len().min(open + 200)).find(|&j| matches!(chars[j].1, ')' | '('))?;
    if chars[close].1 != ')' {
        return None;
    }
    let inner = &chars[open + 1..close];
    let cites = inner.iter().any(|x| x.1 == SENTINEL);
    let sentence = inner
        .windows(2)
        .any(|w| matches!(w[0].1, '.' | '!' | '?' | '。') && w[1].1.is_whitespace());
    (cites && !sentence).then_some(close)
}

pub(super) static EMPTY_PARENS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\(\s*[,;]?\s*\)|（\s*）|\[\s*\]").unwrap());

/// Fact text: markers removed, whitespace collapsed, leftovers of removed markers
/// (empty parentheses, spaces before punctuation) tidied.
pub(crate) fn clean_fact_text(piece: &str) -> String {
    // Markers dropped, whitespace runs collapsed to one space, ends trimmed, and no
    // space before closing punctuation (`word .` -> `word.`). Most sentences hold no
    // brackets, and for them all of it is one pass.
    let has_brackets = piece.contains(['(', '（', '[']);
    let mut collapsed = String::with_capacity(piece.len());
    let mut space = false;
    for c in piece.chars() {
        if c == SENTINEL {
            continue;
        }
        if c.is_whitespace() {
            space = !collapsed.is_empty();
            continue;
        }
        if space && (has_brackets || !is_closing_punct(c)) {
            collapsed.push(' ');
        }
        space = false;
        collapsed.push(c);
    }
    if !has_brackets {
        return collapsed;
    }
    // Empty brackets left by removed markers go first; spaces they leave before
    // punctuation go after (spaces elsewhere stay as they are).
    let t = EMPTY_PARENS.replace_all(&collapsed, "");
    let mut out = String::with_capacity(t.len());
    for c in t.chars() {
        if is_closing_punct(c) {
            out.truncate(out.trim_end().len());
        }
        out.push(c);
    }
    out.truncate(out.trim_end().len());
    match out.find(|c: char| !c.is_whitespace()) {
        Some(0) => out,
        Some(i) => out.split_off(i),
        None => String::new(),
    }
}

pub(super) fn is_closing_punct(c: char) -> bool {
    matches!(
        c,
        '.' | ',' | ';' | ':' | '!' | '?' | '。' | '，' | '；' | '：' | '！' | '？' | '）' | ')'
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::citations::markers::{scan_text, Glued};

    /// The regex definition the one-pass `clean_fact_text` replaced.
    fn clean_fact_text_regex(piece: &str) -> String {
        let no_markers: String = piece.chars().filter(|&c| c != SENTINEL).collect();
        let collapsed = no_markers.split_whitespace().collect::<Vec<_>>().join(" ");
        let t = EMPTY_PARENS.replace_all(&collapsed, "");
        let space_before = Regex::new(r"\s+([.,;:!?。，；：！？）)])").unwrap();
        let t = space_before.replace_all(&t, "$1");
        t.trim().to_string()
    }

    #[test]
    fn one_pass_cleaning_matches_the_regex_definition() {
        let s = SENTINEL;
        let cases = [
            format!("  Revenue rose 12% {s} .  "),
            format!("Growth ( ) was strong {s}{s} ,  and [ ] more （ ） here ( ; ) ."),
            format!("{s} () leading\n\tspace\u{3000}and ideographic\u{3000}。 end ）"),
            format!("数据增长了 。{s}另一句 ， 完"),
            "no change at all".to_string(),
            format!("plain , fast path {s} ; with  spaces ! and ？ CJK ）end ."),
            "a\u{a0}\u{a0}!  ?b (c) [d] ( , )x".to_string(),
            String::new(),
            format!("{s}"),
        ];
        for c in &cases {
            assert_eq!(clean_fact_text(c), clean_fact_text_regex(c), "{c:?}");
        }
    }

    #[test]
    fn markers_after_terminal_punctuation_stay_with_their_sentence() {
        let mut flat = Flat::default();
        scan_text(
            &mut flat,
            "First claim. [1] Second claim [2]. Third, e.g. this one.",
            0..60,
            Glued::No,
        );
        let s = split_sentences(&flat);
        let texts: Vec<&str> = s.iter().map(|x| x.text.as_str()).collect();
        assert_eq!(
            texts,
            vec!["First claim.", "Second claim.", "Third, e.g. this one."]
        );
        assert_eq!(s[0].cites, vec![RawCite::Num("1".into())]);
        assert_eq!(s[1].cites, vec![RawCite::Num("2".into())]);
        assert!(s[2].cites.is_empty());
    }

    #[test]
    fn cjk_sentences_and_decimals() {
        let mut flat = Flat::default();
        scan_text(
            &mut flat,
            "增长了3.5倍【1】。第二句话[2]！",
            0..40,
            Glued::No,
        );
        let s = split_sentences(&flat);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].text, "增长了3.5倍。");
        assert_eq!(s[1].cites, vec![RawCite::Num("2".into())]);
    }
}
