//! The marker grammar: how citations are written (`[3]`, `[^3]`, `【3】`, `[1-3]`,
//! superscripts, numbered links, bare URLs, numerals glued to a sentence end) and
//! the flattening of a block's inlines into text with a sentinel at each marker.

use std::collections::HashSet;
use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

use crate::blocks::Inline;
use crate::urls::{
    clean_url, is_citable_url, is_image_url, is_web_url, loose_links, text_names_target, url_key,
    BARE_URL,
};

/// Stands in for a citation marker in flattened unit text (a private-use char that
/// real reports do not contain).
pub(crate) const SENTINEL: char = '\u{E000}';

/// Largest `[N-M]` range expanded; anything wider is not a citation range.
pub(super) const MAX_RANGE: u32 = 100;

/// A marker as written, before it is checked against the reference list.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum RawCite {
    /// `[3]`, `【3】`, `<sup>3</sup>`: a numbered marker.
    Num(String),
    /// `[^3]`, `[^1_4]`.
    Foot(String),
    /// A link or URL standing for its source.
    Url(String),
    /// A numbered link `[(3)](url)`: the number if it resolves, else the URL.
    Linked(String, String),
    /// `[图片: image1.jpg]`: a pointer to an input file, not a source; it is
    /// removed from the fact text and never resolves.
    Input(String),
    /// A bare numeral glued to a sentence end (`offspring.1`) or a number in a
    /// citation column: a citation only when it names an existing entry.
    Weak(String),
    /// A bare numeral inside a sentence after a Latin word (`Notion AI 37 や`): a
    /// `Weak` citation unless the report writes that word with that number again
    /// (`Veo 3`, a name).
    AfterName(String, String),
    /// A citation by name (author-date, key, source name) resolved to this entry;
    /// an ambiguous one carries one per candidate.
    Named(String),
}

/// One flattened unit.
#[derive(Debug, Clone, Default)]
pub(crate) struct Flat {
    pub text: String,
    /// Cites for each sentinel, in order.
    pub cites: Vec<Vec<RawCite>>,
    /// (flat offset, source offset) at the start of each piece.
    pub map: Vec<(usize, usize, usize)>,
    /// Flat offsets where a hard line break ends a unit.
    pub hard_breaks: Vec<usize>,
}

impl Flat {
    fn push_text(&mut self, s: &str, src: Range<usize>) {
        if s.is_empty() {
            return;
        }
        self.map.push((self.text.len(), src.start, src.end));
        if s.contains(SENTINEL) {
            // Input that contains the sentinel itself must not pose as a marker;
            // U+FFFD has the same UTF-8 length, so offsets stay valid.
            self.text.push_str(&s.replace(SENTINEL, "\u{FFFD}"));
        } else {
            self.text.push_str(s);
        }
    }

    fn push_cite(&mut self, cites: Vec<RawCite>, src: Range<usize>) {
        if cites.is_empty() {
            return;
        }
        self.map.push((self.text.len(), src.start, src.end));
        self.text.push(SENTINEL);
        self.cites.push(cites);
    }

    /// Source offset of a flat offset.
    pub fn src(&self, flat: usize) -> usize {
        let i = match self.map.binary_search_by(|(f, _, _)| f.cmp(&flat)) {
            Ok(i) => i,
            Err(0) => return self.map.first().map(|m| m.1).unwrap_or(0),
            Err(i) => i - 1,
        };
        let (f, s, e) = self.map[i];
        (s + (flat - f)).min(e.max(s))
    }
}

pub(super) static BRACKET_NUM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"\[\^([^\]\s]+)\]|[\[［](?:(?i:citations?|cite|sources?|refs?|references?)\s*[:：#]?\s*|(?:来源|参考|引用|文献)\s*[:：#]?\s*)?\s*([0-9]+(?:\s*(?:[,，、;；]|and)\s*[0-9]+|\s*[-–—~]\s*[0-9]+)*)\s*[\]］]|【([0-9]+(?:\s*[,，、]\s*[0-9]+)*)(?:[†:][^】]*)?】|\[(?:网页|网站|网址|来源|链接|参考|source|web|url|link)\s*[:：]\s*([^\]\s]+)\]|\[(?:图片|图像|圖片|image|img|file|文件)\s*[:：]\s*([^\]\n]+)\]|<(?:[a-z]+:)?cite\s+id="([^"<>]*)"\s*>(?:[^<]*</(?:[a-z]+:)?cite>)?|</(?:[a-z]+:)?cite>"#)
        .unwrap()
});
pub(super) static NUM_IN_ID: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"[0-9]{1,4}").unwrap());
/// Superscript digits used as citation markers (`rose 40%.¹²`, `growth³˒⁴`).
pub(super) static SUPERSCRIPT_RUN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[⁰¹²³⁴⁵⁶⁷⁸⁹]+(?:[,˒⁻–-][⁰¹²³⁴⁵⁶⁷⁸⁹]+)*").unwrap());
pub(super) static NUM_LIST: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[0-9]+(?:\s*[-–—~]\s*[0-9]+)?").unwrap());
pub(super) static MARKER_TEXT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*[\[(（【]?\^?(\d{1,4}(?:\s*[,，、\-–]\s*\d{1,4})*)[\])）】]?\s*$").unwrap()
});
pub(super) static CITE_COLUMN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(?:(?:main |key |primary |related )?(?:snippet ids?|sources?|source ids?|refs?\.?|references?|citations?|cites?)|\p{Han}{0,4}(?:な|する)?(?:来源|引用|引用元|参考|参考文献|出处|出典|典拠|情報源|参照|参照元|ソース|文献|資料)例?|(?:데이터 |주요 )?(?:출처|소스|참고|참고 자료|근거))$").unwrap()
});
pub(super) static CELL_NUMBERS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\[?\d{1,4}\]?(?:\s*[,，、;]?\s*\[?\d{1,4}\]?)*$").unwrap());
/// Abbreviations after which a period does not end a sentence.
pub(super) const ABBREVIATIONS: &[&str] = &[
    "e.g", "i.e", "et al", "al", "fig", "figs", "no", "nos", "vol", "vols", "vs", "mr", "mrs",
    "ms", "dr", "prof", "sr", "jr", "st", "approx", "ca", "cf", "eq", "eqs", "ref", "refs", "pp",
    "p", "ch", "sec", "tab", "inc", "ltd", "co", "corp", "dept", "est", "jan", "feb", "mar", "apr",
    "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "u.s", "u.k", "e.u", "a.m", "p.m",
    "ph.d", "vol", "op", "resp", "viz",
];

pub(super) fn expand_numbers(list: &str) -> Vec<String> {
    let mut out = Vec::new();
    for m in NUM_LIST.find_iter(list) {
        let part = m.as_str();
        let bounds: Vec<u32> = part
            .split(['-', '–', '—', '~'])
            .filter_map(|p| p.trim().parse().ok())
            .collect();
        match bounds.as_slice() {
            [a, b] if b >= a && b - a <= MAX_RANGE => out.extend((*a..=*b).map(|n| n.to_string())),
            [a, ..] => out.push(a.to_string()),
            [] => {}
        }
    }
    out
}

/// Split plain text into text and textual markers. Links the Markdown parser
/// refused (a target with spaces) are cut out first, whole.
pub(super) fn scan_text(flat: &mut Flat, text: &str, src: Range<usize>, allow_glued: Glued) {
    let map_src = |a: usize, b: usize| -> Range<usize> {
        // Text from the Markdown parser may have lost escapes, so offsets are
        // proportional guesses clamped to the piece.
        let s = (src.start + a).min(src.end);
        let e = (src.start + b).min(src.end).max(s);
        s..e
    };
    let mut last = 0;
    if text.contains("](") {
        for l in loose_links(text) {
            scan_markers(
                flat,
                crate::slice::cut(text, last, l.range.start),
                map_src(last, l.range.start),
                allow_glued,
            );
            let link_src = map_src(l.range.start, l.range.end);
            let before = crate::slice::cut(text, 0, l.range.start);
            let closes = crate::slice::from(text, l.range.end)
                .trim_start()
                .starts_with([')', '）']);
            let parenthesised = closes
                && (before.trim_end().ends_with(['(', '（'])
                    || before.trim().is_empty() && flat.text.trim_end().ends_with(['(', '（']));
            if !(is_web_url(&l.text) || parenthesised && text_names_target(&l.text, &l.url)) {
                flat.push_text(&l.text, link_src.clone());
            }
            if !is_image_url(&l.url) {
                flat.push_cite(
                    vec![RawCite::Url(clean_url(&l.url))],
                    link_src.end..link_src.end,
                );
            }
            last = l.range.end;
        }
    }
    scan_markers(
        flat,
        crate::slice::from(text, last),
        map_src(last, text.len()),
        allow_glued,
    );
}

/// Textual markers (`[3]`, `【3】`, `[^3]`, tags) inside link-free text.
pub(super) fn scan_markers(flat: &mut Flat, text: &str, src: Range<usize>, allow_glued: Glued) {
    let map_src = |a: usize, b: usize| -> Range<usize> {
        let s = (src.start + a).min(src.end);
        let e = (src.start + b).min(src.end).max(s);
        s..e
    };
    let mut last = 0;
    for c in BRACKET_NUM.captures_iter(text) {
        let m = c.get(0).map(|m| m.range()).unwrap_or(0..0);
        let cites = if let Some(f) = c.get(1) {
            // Kimi writes `[^3^]`.
            let label = f.as_str().trim_end_matches('^');
            if label.is_empty() {
                continue;
            }
            vec![RawCite::Foot(label.to_string())]
        } else if let Some(pair) = c
            .get(3)
            .and_then(|n| assistant_pair(&text[n.end()..]).map(|i| (n.as_str(), i)))
        {
            // `【4:1†source】` (OpenAI Assistants file search): the first number is
            // the tool output it came from, the second the result within it. The
            // source behind the pair is kept out of the text, so it is not entry 4:
            // the marker names `4:1`, which only a list labelled that way resolves.
            vec![RawCite::Num(format!("{}:{}", pair.0.trim(), pair.1))]
        } else if let Some(n) = c.get(2).or_else(|| c.get(3)) {
            expand_numbers(n.as_str())
                .into_iter()
                .map(RawCite::Num)
                .collect()
        } else if let Some(u) = c.get(4) {
            if is_web_url(u.as_str()) {
                vec![RawCite::Url(clean_url(u.as_str()))]
            } else {
                continue;
            }
        } else if let Some(f) = c.get(5) {
            vec![RawCite::Input(f.as_str().trim().to_string())]
        } else if let Some(ids) = c.get(6) {
            // `<qwen:cite id="id_12, id_7">quoted evidence</qwen:cite>`: each id
            // names the list entry of that number; the quote is the source's
            // words, not the report's, and goes with the tag.
            NUM_IN_ID
                .find_iter(ids.as_str())
                .map(|n| RawCite::Num(n.as_str().to_string()))
                .collect()
        } else if text[m.clone()].starts_with("</") {
            // A closing tag whose opening one was in an earlier piece of text.
            Vec::new()
        } else {
            continue;
        };
        // `^[3]^` (superscript in Pandoc syntax): the carets go with the marker.
        let mut m = m;
        if m.start > last && text[..m.start].ends_with('^') && text[m.end..].starts_with('^') {
            m = m.start - 1..m.end + 1;
        }
        if m.start < last {
            continue;
        }
        let before = &text[last..m.start];
        // `[MCP Spec][1]`: a reference-style link with no definition, left as text
        // by the Markdown parser; the words cite entry 1 and lose their brackets.
        let bracketed = (c.get(2).is_some() && before.ends_with(']'))
            .then(|| {
                before[..before.len() - 1]
                    .rfind('[')
                    .map(|p| (p, &before[p + 1..before.len() - 1]))
            })
            .flatten()
            .filter(|(_, inner)| {
                !inner.contains([']', '[']) && inner.chars().any(char::is_alphabetic)
            });
        if let Some((p, _)) = bracketed {
            scan_plain(flat, &before[..p], map_src(last, last + p), allow_glued);
            scan_plain(
                flat,
                &before[p + 1..before.len() - 1],
                map_src(last + p + 1, m.start - 1),
                allow_glued,
            );
        } else {
            scan_plain(flat, before, map_src(last, m.start), allow_glued);
        }
        flat.push_cite(cites, map_src(m.start, m.end));
        last = m.end;
    }
    scan_plain(flat, &text[last..], map_src(last, text.len()), allow_glued);
}

/// The result number of an Assistants-style `【M:I†...】` marker, given the text
/// right after `M`.
pub(super) fn assistant_pair(after: &str) -> Option<&str> {
    let rest = after.strip_prefix(':')?;
    let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    (digits > 0 && rest[digits..].starts_with(['\u{2020}', '\u{3011}'])).then(|| &rest[..digits])
}

/// Superscript digit runs that read as citations: after punctuation or a word of
/// three letters or more, never after a digit or a short unit (`10⁶`, `km²`).
pub(super) fn superscript_markers(text: &str, prev: &str) -> Vec<(Range<usize>, Vec<String>)> {
    let mut out = Vec::new();
    for m in SUPERSCRIPT_RUN.find_iter(text) {
        // At the start of a piece, the text before is the unit's so far (an
        // emphasis closed just before `**ImGui**⁶`).
        let before = match &text[..m.start()] {
            "" => prev.trim_end_matches(SENTINEL),
            b => b,
        };
        let Some(prev) = before.chars().last() else {
            continue;
        };
        let ok = if prev.is_alphabetic() {
            let word: String = before
                .chars()
                .rev()
                .take_while(|c| c.is_alphabetic())
                .collect();
            // An acronym (`UI⁹`, `AI²`) is no unit either.
            let acronym = word.chars().count() == 2 && word.chars().all(char::is_uppercase);
            (word.chars().count() >= 3 || acronym) && !crate::language::is_cjk(prev)
                || crate::language::is_cjk(prev)
        } else {
            matches!(
                prev,
                '.' | ','
                    | ';'
                    | ':'
                    | ')'
                    | '"'
                    | '”'
                    | '’'
                    | '\''
                    | '。'
                    | '，'
                    | '；'
                    | '）'
                    | '%'
            )
        };
        if !ok {
            continue;
        }
        let plain: String = m
            .as_str()
            .chars()
            .map(|c| match c {
                '⁻' => '-',
                c => superscript_digit(c).unwrap_or(','),
            })
            .collect();
        out.push((m.range(), expand_numbers(&plain)));
    }
    out
}

/// Bare URLs and glued numerals inside marker-free text.
pub(super) fn scan_plain(flat: &mut Flat, text: &str, src: Range<usize>, allow_glued: Glued) {
    let map_src = |a: usize, b: usize| -> Range<usize> {
        let s = (src.start + a).min(src.end);
        let e = (src.start + b).min(src.end).max(s);
        s..e
    };
    let mut last = 0;
    let mut cuts: Vec<(Range<usize>, RawCite)> = Vec::new();
    for m in BARE_URL.find_iter(text) {
        // Punctuation ending the sentence after a bare URL stays in the text, or the
        // sentence would run on into the next one.
        // So does a closing parenthesis the URL does not open (`(https://x.org/a).`).
        let url = clean_url(m.as_str());
        let kept = if m.as_str().starts_with(url.as_str()) {
            url.len()
        } else {
            m.as_str()
                .trim_end_matches(['.', ',', ';', ':', '!', '?', '。', '，', '；', '：'])
                .len()
        };
        cuts.push((m.start()..m.start() + kept, RawCite::Url(url)));
    }
    if !text.is_ascii() {
        for (r, n) in superscript_markers(text, &flat.text) {
            if !cuts.iter().any(|(c, _)| c.start < r.end && r.start < c.end) {
                for num in n {
                    cuts.push((r.clone(), RawCite::Weak(num)));
                }
            }
        }
    }
    let mut glued = Vec::new();
    if allow_glued != Glued::No {
        // Text before this piece (an emphasis closed just before `.7`) counts.
        let before = flat.text.chars().last().filter(|&c| c != SENTINEL);
        glued = glued_numerals(text, before);
    }
    if allow_glued == Glued::Spaced {
        glued.extend(spaced_numerals(text));
    }
    {
        for (r, n) in glued {
            if !cuts.iter().any(|(c, _)| c.start < r.end && r.start < c.end) {
                for num in n {
                    cuts.push((r.clone(), RawCite::Weak(num)));
                }
            }
        }
    }
    if allow_glued == Glued::Spaced {
        for (r, group) in super::spaced::in_sentence_numerals(text, &flat.text) {
            // An empty range (a subject, whose numeral stays) overlaps a cut
            // that starts at or covers its position.
            let overlaps = |c: &Range<usize>| {
                c.start < r.end.max(r.start + 1) && r.start < c.end.max(c.start + 1)
            };
            if !cuts.iter().any(|(c, _)| overlaps(c)) {
                cuts.extend(group.into_iter().map(|cite| (r.clone(), cite)));
            }
        }
    }
    cuts.sort_by_key(|(r, _)| r.start);
    let mut i = 0;
    while i < cuts.len() {
        let r = cuts[i].0.clone();
        let mut group = vec![cuts[i].1.clone()];
        while i + 1 < cuts.len() && cuts[i + 1].0 == r {
            i += 1;
            group.push(cuts[i].1.clone());
        }
        if r.start >= last {
            flat.push_text(&text[last..r.start], map_src(last, r.start));
            flat.push_cite(group, map_src(r.start, r.end));
            last = r.end;
        }
        i += 1;
    }
    flat.push_text(&text[last..], map_src(last, text.len()));
}

/// Numerals glued to the end of a sentence or clause (`offspring.1`, `).12`,
/// `species.3, 4`) as Gemini writes its citations: the digits must follow terminal
/// punctuation that follows a non-digit, and be followed by whitespace or the end.
/// `before` is the character written just before `text` (the end of an emphasis
/// that closed before the punctuation, as in `**term**.7`).
pub(super) fn glued_numerals(text: &str, before: Option<char>) -> Vec<(Range<usize>, Vec<String>)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut k = 0;
    while k < chars.len() {
        let (pos, c) = chars[k];
        let punct = matches!(
            c,
            '.' | ')' | '”' | '"' | '’' | '?' | '!' | '。' | '．' | '！' | '？'
        );
        let prev = match k {
            0 => before,
            _ => Some(chars[k - 1].1),
        };
        let Some(prev) = prev.filter(|_| punct) else {
            k += 1;
            continue;
        };
        // After a digit the period is usually a decimal point; the exception is a
        // year ending a sentence (`in 2021.74`, written `2021\.74` by Gemini).
        let after_year = c == '.' && ends_with_year(&text[..pos]);
        if (prev.is_ascii_digit() && !after_year) || prev.is_whitespace() {
            k += 1;
            continue;
        }
        // Abbreviations (`Fig.1`) and decimals are not sentence ends.
        if c == '.' {
            let word_start = text[..pos]
                .char_indices()
                .rev()
                .find(|&(_, ch)| ch.is_whitespace() || ch == '(')
                .map(|(i, ch)| i + ch.len_utf8())
                .unwrap_or(0);
            let word = text[word_start..pos].to_lowercase();
            if ABBREVIATIONS.contains(&word.as_str()) {
                k += 1;
                continue;
            }
        }
        let start = pos + c.len_utf8();
        let mut end = start;
        // digits, optionally `, digits` repeated
        let mut j = start;
        let mut seen_digit = false;
        loop {
            let d0 = j;
            while j < bytes.len() && bytes[j].is_ascii_digit() {
                j += 1;
            }
            if j == d0 || j - d0 > 3 {
                break;
            }
            seen_digit = true;
            end = j;
            // Continue on ", " + digit.
            let mut t = j;
            if t < bytes.len() && bytes[t] == b',' {
                t += 1;
                while t < bytes.len() && bytes[t] == b' ' {
                    t += 1;
                }
                if t < bytes.len() && bytes[t].is_ascii_digit() {
                    j = t;
                    continue;
                }
            }
            break;
        }
        let after_ok = end >= bytes.len() || (bytes[end] as char).is_ascii_whitespace();
        if seen_digit && after_ok {
            let nums: Vec<String> = text[start..end]
                .split(',')
                .map(|n| n.trim().to_string())
                .filter(|n| !n.is_empty())
                .collect();
            out.push((start..end, nums));
            while k < chars.len() && chars[k].0 < end {
                k += 1;
            }
            continue;
        }
        k += 1;
    }
    out
}

/// Whether text ends in a standalone year 1900-2099 (not part of a longer number).
pub(super) fn ends_with_year(before: &str) -> bool {
    let b = before.as_bytes();
    if b.len() < 4 {
        return false;
    }
    // Bytes, not str slices: the text before may end in multi-byte characters.
    let tail = &b[b.len() - 4..];
    let standalone = b.len() == 4 || !(b[b.len() - 5].is_ascii_digit() || b[b.len() - 5] == b'.');
    standalone
        && tail.iter().all(u8::is_ascii_digit)
        && (tail.starts_with(b"19") || tail.starts_with(b"20"))
}

/// Which unbracketed numerals read as citations in a report (Gemini's styles).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Glued {
    /// None: numbers are numbers.
    No,
    /// Glued to a sentence end: `offspring.1`, `species.3, 4`.
    Tight,
    /// Also a space before the end: `from the diet 2.`, `less so 1, 3.`.
    Spaced,
}

/// Nouns that name a numbered thing (`model 2`, `Phase 3`): a number after one
/// is the thing's number, so the grammar never reads it as a citation (the
/// residue does, in the `claim 2.` dialect).
pub(crate) const LABEL_NOUNS: &[&str] = &[
    "act",
    "article",
    "category",
    "chapter",
    "class",
    "episode",
    "fig",
    "figure",
    "gen",
    "generation",
    "grade",
    "group",
    "issue",
    "item",
    "level",
    "line",
    "model",
    "number",
    "page",
    "part",
    "phase",
    "rank",
    "round",
    "rule",
    "season",
    "section",
    "series",
    "stage",
    "step",
    "table",
    "tier",
    "type",
    "version",
    "vol",
    "volume",
];

/// Words after which a number before a period is a quantity, not a citation.
pub(super) const NUMBER_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "age",
    "aged",
    "and",
    "approximately",
    "are",
    "around",
    "at",
    "be",
    "been",
    "before",
    "below",
    "between",
    "by",
    "day",
    "days",
    "down",
    "equal",
    "equals",
    "factor",
    "from",
    "hour",
    "hours",
    "in",
    "is",
    "just",
    "least",
    "minus",
    "minute",
    "minutes",
    "month",
    "months",
    "nearly",
    "no",
    "of",
    "on",
    "only",
    "or",
    "out",
    "over",
    "p",
    "pages",
    "plus",
    "pp",
    "ranked",
    "rated",
    "reached",
    "score",
    "scored",
    "than",
    "the",
    "times",
    "to",
    "top",
    "under",
    "up",
    "v",
    "was",
    "week",
    "weeks",
    "were",
    "with",
    "year",
    "years",
];

/// Characters after which a CJK numeral is a count or an ordinal (`約 5。`,
/// `第 3。`, `共 12。`), not a citation.
pub(super) const CJK_NUMBER_WORDS: &[char] = &[
    '約', '约', '第', '全', '計', '计', '共', '満', '满', '近', '超', '達', '达', '為', '为', '是',
    '有', '至', '到', '和', '及', '与', '與', '或', '每', '毎', '各', '数', '數', '凡', '총', '약',
    '제', '및', '와', '과',
];
/// Position words that take a number only on their own or after `以` (`前 5`,
/// `以上 3`): inside a compound they end an ordinary word (`向上`, `統合`, `午後`).
const CJK_POSITION_WORDS: &[char] = &['前', '後', '后', '上', '下', '合'];

/// Numerals a space before a sentence end (`through diet 2.`, `less so 1, 3.`,
/// `…している 1。` as Gemini writes them in Japanese, Chinese and Korean): after a
/// word with a letter that does not take a number, each at most three digits, then
/// terminal punctuation and a space or the end; an ideographic full stop (`。`,
/// `．`, `！`, `？`) needs nothing after it, as CJK text runs on without spaces.
pub(crate) fn spaced_numerals(text: &str) -> Vec<(Range<usize>, Vec<String>)> {
    static SPACED: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(\S+) (\d{1,3}(?:, ?\d{1,3})*)(?:[.!?](?:\s|$)|[。．！？])").unwrap()
    });
    let mut out = Vec::new();
    for c in SPACED.captures_iter(text) {
        let (word, nums) = (c.get(1).expect("word"), c.get(2).expect("numbers"));
        let w = word.as_str().trim_matches(|ch: char| !ch.is_alphanumeric());
        if !takes_spaced_marker(w) {
            continue;
        }
        let list: Vec<String> = nums
            .as_str()
            .split(',')
            .map(|n| n.trim().to_string())
            .filter(|n| n.parse::<u32>().is_ok_and(|v| v > 0))
            .collect();
        if !list.is_empty() {
            // From the space, so the fact text keeps no trailing blank.
            out.push((word.end()..nums.end(), list));
        }
    }
    out
}

/// Whether a spaced numeral after this word can be a citation: the word has a
/// letter and is not one that takes a number (`in 2`, `約 5`).
pub(crate) fn takes_spaced_marker(word: &str) -> bool {
    // In unspaced CJK text the word before is the whole run (`1およびPhase`): its
    // Latin tail is the word that may take the number.
    let tail_start = word
        .char_indices()
        .rev()
        .take_while(|(_, c)| c.is_ascii_alphabetic())
        .last()
        .map_or(word.len(), |(i, _)| i);
    let tail = word[tail_start..].to_lowercase();
    word.chars().any(char::is_alphabetic)
        && !takes_number(&word.to_lowercase())
        && !takes_number(&tail)
        && !takes_cjk_number(word)
}

/// Whether a number after this (lowercase) word is a quantity or a label's number.
fn takes_number(word: &str) -> bool {
    NUMBER_WORDS.contains(&word) || LABEL_NOUNS.contains(&word)
}

/// Whether a CJK word ends in one that takes a number (`約`, `第`, `以上`).
fn takes_cjk_number(word: &str) -> bool {
    let mut rev = word.chars().rev();
    let (Some(last), before) = (rev.next(), rev.next()) else {
        return false;
    };
    CJK_NUMBER_WORDS.contains(&last)
        || CJK_POSITION_WORDS.contains(&last)
            && before.is_none_or(|b| b == '以' || !('\u{4E00}'..='\u{9FFF}').contains(&b))
}

/// Numerals a space after the last word of a table cell (`AI API 利用料別途 9`,
/// `free for public repositories 3, 4`), as Gemini ends cells that cite: where
/// the numerals start in `cell` and the numbers. The caller only asks in reports
/// whose spaced numerals all name entries.
pub(crate) fn cell_end_numerals(cell: &str) -> Option<(usize, Vec<String>)> {
    static CELL_END: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(\S+) (\d{1,3}(?:, ?\d{1,3})*)[。.]?\s*$").unwrap());
    let c = CELL_END.captures(cell)?;
    let (word, nums) = (c.get(1)?, c.get(2)?);
    let w = word.as_str().trim_matches(|ch: char| !ch.is_alphanumeric());
    if !takes_spaced_marker(w) {
        return None;
    }
    let list: Vec<String> = nums
        .as_str()
        .split(',')
        .map(|n| n.trim().to_string())
        .filter(|n| n.parse::<u32>().is_ok_and(|v| v > 0))
        .collect();
    (!list.is_empty()).then_some((word.end(), list))
}

/// Flatten inlines (or a slice of them) into text with sentinels.
pub(crate) fn flatten(inlines: &[Inline], allow_glued: Glued) -> Flat {
    let mut flat = Flat::default();
    flatten_into(&mut flat, inlines, allow_glued);
    flat
}

pub(super) fn flatten_into(flat: &mut Flat, inlines: &[Inline], allow_glued: Glued) {
    // A link with no text is a linked image when an image lies inside it; else it
    // is a citation written with empty text (`([](https://…))`).
    let holds_image = |outer: &Range<usize>| {
        inlines.iter().any(|i| {
            matches!(i, Inline::Image { span, .. }
                if span.start >= outer.start && span.end <= outer.end)
        })
    };
    for (k, inline) in inlines.iter().enumerate() {
        match inline {
            Inline::Text { text, span, sup } => {
                if *sup {
                    if let Some(c) = MARKER_TEXT.captures(text) {
                        let nums = expand_numbers(&c[1]);
                        flat.push_cite(nums.into_iter().map(RawCite::Num).collect(), span.clone());
                        continue;
                    }
                }
                scan_text(flat, text, span.clone(), allow_glued);
            }
            Inline::Link { url, text, span } => {
                // Uploaded files cite like web pages (unreadable ones: CS settles
                // them as "no usable source").
                let web = is_citable_url(url);
                if let Some(c) = MARKER_TEXT.captures(text) {
                    let nums = expand_numbers(&c[1]);
                    if web {
                        let u = clean_url(url);
                        flat.push_cite(
                            nums.into_iter()
                                .map(|n| RawCite::Linked(n, u.clone()))
                                .collect(),
                            span.clone(),
                        );
                    } else {
                        flat.push_cite(nums.into_iter().map(RawCite::Num).collect(), span.clone());
                    }
                    continue;
                }
                if web {
                    // The link text stays in the sentence (unless it is the URL itself),
                    // the target is a citation; a link to a picture, or a linked
                    // image, is not.
                    // A host as link text in parentheses (`([site.org](url))`) is a
                    // marker; in prose (`the ClinicalTrials.gov registry`) a word.
                    let parenthesised = flat.text.trim_end().ends_with(['(', '（'])
                        && matches!(inlines.get(k + 1), Some(Inline::Text { text, .. })
                            if text.trim_start().starts_with([')', '）']));
                    if !(is_web_url(text) || parenthesised && text_names_target(text, url)) {
                        flat.push_text(text, span.clone());
                    }
                    if !is_image_url(url) && (!text.trim().is_empty() || !holds_image(span)) {
                        flat.push_cite(vec![RawCite::Url(clean_url(url))], span.end..span.end);
                    }
                } else {
                    flat.push_text(text, span.clone());
                }
            }
            Inline::FootnoteRef { label, span } => {
                flat.push_cite(vec![RawCite::Foot(label.clone())], span.clone());
            }
            Inline::Code { text, span } => flat.push_text(text, span.clone()),
            Inline::Break { span, hard } => {
                if *hard {
                    flat.hard_breaks.push(flat.text.len());
                }
                flat.push_text(" ", span.clone());
            }
            Inline::CellSep => flat.push_text(" | ", 0..0),
            Inline::Image { .. } => {}
        }
    }
}

/// Every URL cited in order of first appearance (for reports with no list).
pub(crate) fn urls_in_order(flats: &[Flat]) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for f in flats {
        for group in &f.cites {
            for c in group {
                let url = match c {
                    RawCite::Url(u) | RawCite::Linked(_, u) => u,
                    _ => continue,
                };
                if seen.insert(url_key(url)) {
                    out.push(url.clone());
                }
            }
        }
    }
    out
}
/// Cited numbers in a citation column cell of a table (`31`, `15, 23`).
/// The ASCII digit a superscript digit stands for.
fn superscript_digit(c: char) -> Option<char> {
    let at = "⁰¹²³⁴⁵⁶⁷⁸⁹".chars().position(|d| d == c)?;
    char::from_digit(at as u32, 10)
}

pub(crate) fn cell_citations(cell: &str) -> Option<Vec<RawCite>> {
    // Superscript numbers (`⁵`, `¹²`) cite in a citation column too.
    let plain: String = cell
        .chars()
        .map(|c| superscript_digit(c).unwrap_or(c))
        .collect();
    let c = plain.trim();
    if c.is_empty() || !CELL_NUMBERS.is_match(c) {
        return None;
    }
    Some(expand_numbers(c).into_iter().map(RawCite::Weak).collect())
}

pub(crate) fn is_citation_column(header: &str) -> bool {
    let h = header
        .trim()
        .trim_matches(|c: char| c == '*' || c == '_')
        .trim();
    CITE_COLUMN.is_match(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn glued(t: &str) -> Vec<Vec<String>> {
        glued_numerals(t, None)
            .into_iter()
            .map(|(_, n)| n)
            .collect()
    }

    #[test]
    fn glued_numerals_after_sentence_ends_only() {
        assert_eq!(glued("offspring.1 This"), vec![vec!["1".to_string()]]);
        assert_eq!(
            glued("rates.2, 3 Next"),
            vec![vec!["2".to_string(), "3".to_string()]]
        );
        assert_eq!(glued("ended in 2021.74 Next"), vec![vec!["74".to_string()]]);
        assert!(glued("a 3.5 times rise").is_empty());
        assert!(glued("see Fig.1 here").is_empty());
        assert!(glued("version 12021.5 x").is_empty());
        assert!(glued("v1.2.3 ok").is_empty());
        assert!(glued("W=a×2020.5 x").len() == 1);
        assert!(!ends_with_year("a×"));
    }

    #[test]
    fn citation_columns_named_in_any_script() {
        for h in [
            "Sources",
            "**来源**",
            "出典",
            "主要な典拠",
            "関連資料例",
            "参照",
            "출처",
            "Key sources",
        ] {
            assert!(is_citation_column(h), "{h}");
        }
        for h in ["参考価格", "Source code", "資料請求の方法", "数値"] {
            assert!(!is_citation_column(h), "{h}");
        }
    }

    #[test]
    fn ranges_and_lists_expand() {
        assert_eq!(expand_numbers("1-3, 5"), vec!["1", "2", "3", "5"]);
        assert_eq!(expand_numbers("4–2"), vec!["4"]);
    }
}
