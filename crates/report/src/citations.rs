//! Citation markers and fact-citation pairs: each body unit (sentence, list-item
//! sentence, heading, table row or whole table) is flattened to text with a
//! sentinel where each marker sits, split into sentences, and every sentence with a
//! resolvable marker becomes a [`Fact`].

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

use super::blocks::{Block, BlockKind, Inline, LineIndex};
use super::model::{Fact, Reference, StructuralError};
use super::urls::{clean_url, is_image_url, is_web_url, loose_links, url_key, BARE_URL};

/// Stands in for a citation marker in flattened unit text (a private-use char that
/// real reports do not contain).
pub(crate) const SENTINEL: char = '\u{E000}';

/// Largest `[N-M]` range expanded; anything wider is not a citation range.
const MAX_RANGE: u32 = 100;

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

static BRACKET_NUM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"\[\^([^\]\s]+)\]|[\[［](?:(?i:citations?|cite|sources?|refs?|references?)\s*[:：#]?\s*|(?:来源|参考|引用|文献)\s*[:：#]?\s*)?\s*([0-9]+(?:\s*(?:[,，、;；]|and)\s*[0-9]+|\s*[-–—~]\s*[0-9]+)*)\s*[\]］]|【([0-9]+(?:\s*[,，、]\s*[0-9]+)*)(?:[†:][^】]*)?】|\[(?:网页|网站|网址|来源|链接|参考|source|web|url|link)\s*[:：]\s*([^\]\s]+)\]|\[(?:图片|图像|圖片|image|img|file|文件)\s*[:：]\s*([^\]\n]+)\]|<(?:[a-z]+:)?cite\s+id="([^"<>]*)"\s*>(?:[^<]*</(?:[a-z]+:)?cite>)?|</(?:[a-z]+:)?cite>"#)
        .unwrap()
});
static NUM_IN_ID: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"[0-9]{1,4}").unwrap());
/// Superscript digits used as citation markers (`rose 40%.¹²`, `growth³˒⁴`).
static SUPERSCRIPT_RUN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[⁰¹²³⁴⁵⁶⁷⁸⁹]+(?:[,˒⁻–-][⁰¹²³⁴⁵⁶⁷⁸⁹]+)*").unwrap());
static NUM_LIST: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[0-9]+(?:\s*[-–—~]\s*[0-9]+)?").unwrap());
static MARKER_TEXT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*[\[(（【]?\^?(\d{1,4}(?:\s*[,，、\-–]\s*\d{1,4})*)[\])）】]?\s*$").unwrap()
});
static CITE_COLUMN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(snippet ids?|sources?|source ids?|refs?\.?|references?|citations?|cites?|来源|引用|参考|参考文献|出处|文献)$").unwrap()
});
static CELL_NUMBERS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\[?\d{1,4}\]?(?:\s*[,，、;]?\s*\[?\d{1,4}\]?)*$").unwrap());
/// Abbreviations after which a period does not end a sentence.
const ABBREVIATIONS: &[&str] = &[
    "e.g", "i.e", "et al", "al", "fig", "figs", "no", "nos", "vol", "vols", "vs", "mr", "mrs",
    "ms", "dr", "prof", "sr", "jr", "st", "approx", "ca", "cf", "eq", "eqs", "ref", "refs", "pp",
    "p", "ch", "sec", "tab", "inc", "ltd", "co", "corp", "dept", "est", "jan", "feb", "mar", "apr",
    "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "u.s", "u.k", "e.u", "a.m", "p.m",
    "ph.d", "vol", "op", "resp", "viz",
];

fn expand_numbers(list: &str) -> Vec<String> {
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
fn scan_text(flat: &mut Flat, text: &str, src: Range<usize>, allow_glued: Glued) {
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
                &text[last..l.range.start],
                map_src(last, l.range.start),
                allow_glued,
            );
            let link_src = map_src(l.range.start, l.range.end);
            if !is_web_url(&l.text) {
                flat.push_text(&l.text, link_src.clone());
            }
            if !is_image_url(&l.url) && !l.text.trim().is_empty() {
                flat.push_cite(
                    vec![RawCite::Url(clean_url(&l.url))],
                    link_src.end..link_src.end,
                );
            }
            last = l.range.end;
        }
    }
    scan_markers(flat, &text[last..], map_src(last, text.len()), allow_glued);
}

/// Textual markers (`[3]`, `【3】`, `[^3]`, tags) inside link-free text.
fn scan_markers(flat: &mut Flat, text: &str, src: Range<usize>, allow_glued: Glued) {
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
fn assistant_pair(after: &str) -> Option<&str> {
    let rest = after.strip_prefix(':')?;
    let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    (digits > 0 && rest[digits..].starts_with(['\u{2020}', '\u{3011}'])).then(|| &rest[..digits])
}

/// Superscript digit runs that read as citations: after punctuation or a word of
/// three letters or more, never after a digit or a short unit (`10⁶`, `km²`).
fn superscript_markers(text: &str) -> Vec<(Range<usize>, Vec<String>)> {
    let mut out = Vec::new();
    for m in SUPERSCRIPT_RUN.find_iter(text) {
        let before = &text[..m.start()];
        let Some(prev) = before.chars().last() else {
            continue;
        };
        let ok = if prev.is_alphabetic() {
            let word: String = before
                .chars()
                .rev()
                .take_while(|c| c.is_alphabetic())
                .collect();
            word.chars().count() >= 3 && !super::language::is_cjk(prev)
                || super::language::is_cjk(prev)
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
                '⁰' => '0',
                '¹' => '1',
                '²' => '2',
                '³' => '3',
                '⁴' => '4',
                '⁵' => '5',
                '⁶' => '6',
                '⁷' => '7',
                '⁸' => '8',
                '⁹' => '9',
                '⁻' => '-',
                _ => ',',
            })
            .collect();
        out.push((m.range(), expand_numbers(&plain)));
    }
    out
}

/// Bare URLs and glued numerals inside marker-free text.
fn scan_plain(flat: &mut Flat, text: &str, src: Range<usize>, allow_glued: Glued) {
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
        for (r, n) in superscript_markers(text) {
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
fn glued_numerals(text: &str, before: Option<char>) -> Vec<(Range<usize>, Vec<String>)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut k = 0;
    while k < chars.len() {
        let (pos, c) = chars[k];
        let punct = matches!(c, '.' | ')' | '”' | '"' | '’' | '?' | '!');
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
fn ends_with_year(before: &str) -> bool {
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

/// Words after which a number before a period is a quantity, not a citation.
const NUMBER_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "act",
    "after",
    "age",
    "aged",
    "and",
    "approximately",
    "are",
    "around",
    "article",
    "at",
    "be",
    "been",
    "before",
    "below",
    "between",
    "by",
    "category",
    "chapter",
    "class",
    "day",
    "days",
    "down",
    "episode",
    "equal",
    "equals",
    "factor",
    "fig",
    "figure",
    "from",
    "gen",
    "generation",
    "grade",
    "group",
    "hour",
    "hours",
    "in",
    "is",
    "issue",
    "item",
    "just",
    "least",
    "level",
    "line",
    "minus",
    "minute",
    "minutes",
    "model",
    "month",
    "months",
    "nearly",
    "no",
    "number",
    "of",
    "on",
    "only",
    "or",
    "out",
    "over",
    "p",
    "page",
    "pages",
    "part",
    "phase",
    "plus",
    "pp",
    "rank",
    "ranked",
    "rated",
    "reached",
    "round",
    "rule",
    "score",
    "scored",
    "season",
    "section",
    "series",
    "stage",
    "step",
    "table",
    "than",
    "the",
    "tier",
    "times",
    "to",
    "top",
    "type",
    "under",
    "up",
    "v",
    "version",
    "vol",
    "volume",
    "was",
    "week",
    "weeks",
    "were",
    "with",
    "year",
    "years",
];

/// Numerals a space before a sentence end (`through diet 2.`, `less so 1, 3.`):
/// after a word with a letter that does not take a number, each at most three
/// digits, then terminal punctuation and a space or the end.
pub(crate) fn spaced_numerals(text: &str) -> Vec<(Range<usize>, Vec<String>)> {
    static SPACED: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"(\S+) (\d{1,3}(?:, ?\d{1,3})*)[.!?。](?:\s|$)").unwrap());
    let mut out = Vec::new();
    for c in SPACED.captures_iter(text) {
        let (word, nums) = (c.get(1).expect("word"), c.get(2).expect("numbers"));
        let w = word.as_str().trim_matches(|ch: char| !ch.is_alphanumeric());
        if !w.chars().any(char::is_alphabetic) || NUMBER_WORDS.contains(&w.to_lowercase().as_str())
        {
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

/// Flatten inlines (or a slice of them) into text with sentinels.
pub(crate) fn flatten(inlines: &[Inline], allow_glued: Glued) -> Flat {
    let mut flat = Flat::default();
    flatten_into(&mut flat, inlines, allow_glued);
    flat
}

fn flatten_into(flat: &mut Flat, inlines: &[Inline], allow_glued: Glued) {
    for inline in inlines {
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
                let web = is_web_url(url);
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
                    // the target is a citation; a link to a picture, or one with no
                    // text (a linked image), is not.
                    if !is_web_url(text) {
                        flat.push_text(text, span.clone());
                    }
                    if !is_image_url(url) && !text.trim().is_empty() {
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

/// Checks raw markers against the reference list.
pub(crate) struct Resolver {
    idxs: HashSet<String>,
    by_url: HashMap<String, String>,
    has_list: bool,
    max_numeric: u64,
}

/// Outcome of resolving one raw marker.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Resolved {
    Ref(String),
    /// A marker whose number names no entry (consistency error).
    Dangling(String),
    /// Not a citation at all (`[2024]`, a link to an unlisted page).
    NotACitation,
}

impl Resolver {
    pub fn new(refs: &[Reference], has_list: bool) -> Self {
        let mut by_url = HashMap::new();
        for r in refs {
            if let Some(u) = &r.url {
                by_url.entry(url_key(u)).or_insert_with(|| r.idx.clone());
            }
        }
        Resolver {
            idxs: refs.iter().map(|r| r.idx.clone()).collect(),
            by_url,
            has_list,
            max_numeric: refs
                .iter()
                .filter_map(|r| r.idx.parse().ok())
                .max()
                .unwrap_or(0),
        }
    }

    pub fn resolve(&self, c: &RawCite) -> Resolved {
        match c {
            RawCite::Num(n) | RawCite::Foot(n) => {
                if !self.has_list {
                    // No list at all: an explicit marker points nowhere (numbers too
                    // large to be reference numbers are years or quantities).
                    match n.parse::<u64>() {
                        Ok(v) if v == 0 || v > 300 => Resolved::NotACitation,
                        _ => Resolved::Dangling(n.clone()),
                    }
                } else if self.idxs.contains(n) {
                    Resolved::Ref(n.clone())
                } else {
                    // Numbers far beyond the list (years, quantities) are not markers.
                    match n.parse::<u64>() {
                        Ok(v) if v == 0 || v > self.max_numeric + 10 => Resolved::NotACitation,
                        _ => Resolved::Dangling(n.clone()),
                    }
                }
            }
            RawCite::Input(_) => Resolved::NotACitation,
            RawCite::Weak(n) => {
                if self.has_list && self.idxs.contains(n) {
                    Resolved::Ref(n.clone())
                } else {
                    Resolved::NotACitation
                }
            }
            RawCite::Url(u) => match self.by_url.get(&url_key(u)) {
                Some(i) => Resolved::Ref(i.clone()),
                None => Resolved::NotACitation,
            },
            RawCite::Linked(n, u) => {
                if self.has_list && self.idxs.contains(n) {
                    Resolved::Ref(n.clone())
                } else {
                    self.resolve(&RawCite::Url(u.clone()))
                }
            }
        }
    }
}

/// A sentence (or whole unit) cut from a flat unit.
#[derive(Debug, Clone)]
pub(crate) struct Sentence {
    /// Flat byte range, markers included.
    pub range: Range<usize>,
    pub text: String,
    pub cites: Vec<RawCite>,
}

fn is_closing(c: char) -> bool {
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
                            .all(|ch| ch.is_alphabetic() && !super::language::is_cjk(ch));
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
fn cite_group_after(chars: &[(usize, char)], open: usize) -> Option<usize> {
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

static EMPTY_PARENS: LazyLock<Regex> =
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

fn is_closing_punct(c: char) -> bool {
    matches!(
        c,
        '.' | ',' | ';' | ':' | '!' | '?' | '。' | '，' | '；' | '：' | '！' | '？' | '）' | ')'
    )
}

/// Cited numbers in a citation column cell of a table (`31`, `15, 23`).
pub(crate) fn cell_citations(cell: &str) -> Option<Vec<RawCite>> {
    let c = cell.trim();
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

/// Inputs for fact extraction.
pub(crate) struct FactInput<'a> {
    pub blocks: &'a [Block],
    pub text: &'a str,
    pub lines: &'a LineIndex,
    /// Blocks that never produce facts (reference lists, captions, pseudo-visuals).
    pub excluded: &'a HashSet<usize>,
    pub resolver: &'a Resolver,
    pub allow_glued: Glued,
}

/// What fact extraction produced.
#[derive(Debug, Default)]
pub(crate) struct FactScan {
    pub facts: Vec<Fact>,
    pub traceability: Vec<StructuralError>,
    pub consistency: Vec<StructuralError>,
}

static QUANTITATIVE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)[0-9](?:[0-9,.]*[0-9])?\s*(?:%|％|percent|per cent|百分点|倍|亿|万|千|million|billion|trillion|thousand|tons?|tonnes?|吨|元|美元|港元|欧元|kg|km|mb|gb|tb|bps|x(?-u:\b))|[$€£¥￥]\s?[0-9]|[0-9]+\.[0-9]+")
        .unwrap()
});

fn resolve_all(
    resolver: &Resolver,
    cites: &[RawCite],
    line: usize,
    dangling: &mut Vec<StructuralError>,
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for c in cites {
        match resolver.resolve(c) {
            Resolved::Ref(i) => {
                if !out.contains(&i) {
                    out.push(i);
                }
            }
            Resolved::Dangling(i) => dangling.push(StructuralError {
                code: "marker_without_entry".into(),
                line: Some(line),
                reason: format!("citation marker [{i}] names no entry of the reference list"),
            }),
            Resolved::NotACitation => {}
        }
    }
    out
}

fn table_caption_like(b: &Block) -> bool {
    static CAP: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)^[*_\s]*(table|tab\.|表|数据来源|资料来源|来源|source|sources|note)\s*[\d一二三四五六七八九十:：.]").unwrap()
    });
    // A "Note:" of several sentences (`Note: Revenue rose 10% [2]. Guidance is
    // flat [2].`) is a paragraph of claims with their own markers, not a caption.
    static NOTE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?i)^[*_\s]*note\b").unwrap());
    static SENTENCE_END: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"[.!?。！？](?:\s*\[[^\]]*\])*\s+\S").unwrap());
    let text = b.plain_text();
    if NOTE.is_match(&text) && SENTENCE_END.is_match(&text) {
        return false;
    }
    matches!(b.kind, BlockKind::Paragraph) && CAP.is_match(&text)
}

/// Extract fact-citation pairs and the sentence-level structural errors.
pub(crate) fn extract_facts(input: &FactInput<'_>) -> FactScan {
    let mut scan = FactScan::default();
    let blocks = input.blocks;
    let mut i = 0;
    // The last body unit seen: markers standing alone cite it.
    let mut prev: Option<PrevUnit> = None;
    // The units of the list items right before the current block: a paragraph of
    // markers alone under a list cites every item of it.
    let mut list_run: Vec<PrevUnit> = Vec::new();
    // `uncited_quantitative` errors withdrawn because later markers cite the unit.
    let mut resolved_trace: HashSet<usize> = HashSet::new();
    while i < blocks.len() {
        let b = &blocks[i];
        if input.excluded.contains(&i) {
            i += 1;
            continue;
        }
        match &b.kind {
            BlockKind::TableRow { table, .. } => {
                prev = None;
                let table = *table;
                let start = i;
                while i < blocks.len()
                    && matches!(blocks[i].kind, BlockKind::TableRow { table: t, .. } if t == table)
                {
                    i += 1;
                }
                table_facts(input, start..i, &mut scan);
                continue;
            }
            BlockKind::Heading(_) => {
                prev = None;
                let flat = flatten(&b.inlines, input.allow_glued);
                let line = input.lines.line_of(b.span.start);
                let cites: Vec<RawCite> = flat.cites.iter().flatten().cloned().collect();
                let idxs = resolve_all(input.resolver, &cites, line, &mut scan.consistency);
                let text = clean_fact_text(&flat.text);
                if !idxs.is_empty() && !text.is_empty() {
                    scan.facts.push(Fact {
                        fact: text,
                        ref_idxs: idxs,
                        line,
                        span: b.span.clone(),
                    });
                }
            }
            BlockKind::Paragraph | BlockKind::ListItem { .. } => {
                // A caption-like line next to a table belongs to the table.
                let next_is_table = blocks
                    .get(i + 1)
                    .is_some_and(|n| matches!(n.kind, BlockKind::TableRow { .. }));
                let prev_is_table =
                    i > 0 && matches!(blocks[i - 1].kind, BlockKind::TableRow { .. });
                if (next_is_table || prev_is_table) && table_caption_like(b) {
                    i += 1;
                    continue;
                }
                let flat = flatten(&b.inlines, input.allow_glued);
                let sentences = split_sentences(&flat);
                let is_item = matches!(b.kind, BlockKind::ListItem { .. });
                let after_item = i > 0
                    && matches!(blocks[i - 1].kind, BlockKind::ListItem { .. })
                    && !input.excluded.contains(&(i - 1));
                if is_item && !after_item {
                    list_run.clear();
                }
                // `[1][2][3]` in a paragraph of its own under a list (ODR-style
                // writers): the markers cite each item of the list.
                if !is_item && after_item && list_run.len() > 1 && {
                    let text = clean_fact_text(&flat.text);
                    !flat.cites.is_empty()
                        && (text.chars().all(|c| !c.is_alphanumeric())
                            || LABEL_ONLY.is_match(&text))
                } {
                    let line = input.lines.line_of(b.span.start);
                    let cites: Vec<RawCite> = flat.cites.iter().flatten().cloned().collect();
                    let idxs = resolve_all(input.resolver, &cites, line, &mut scan.consistency);
                    if !idxs.is_empty() {
                        for u in list_run.iter_mut() {
                            let fi = match u.fact {
                                Some(fi) => fi,
                                None => {
                                    if let Some(t) = u.trace.take() {
                                        resolved_trace.insert(t);
                                    }
                                    scan.facts.push(Fact {
                                        fact: u.text.clone(),
                                        ref_idxs: Vec::new(),
                                        line: u.line,
                                        span: u.span.clone(),
                                    });
                                    u.fact = Some(scan.facts.len() - 1);
                                    scan.facts.len() - 1
                                }
                            };
                            let f = &mut scan.facts[fi];
                            for idx in &idxs {
                                if !f.ref_idxs.contains(idx) {
                                    f.ref_idxs.push(idx.clone());
                                }
                            }
                        }
                        prev = list_run.last().cloned();
                        list_run.clear();
                        i += 1;
                        continue;
                    }
                }
                if !is_item {
                    list_run.clear();
                }
                for s in sentences {
                    let src_start = flat.src(s.range.start);
                    let src_end = flat.src(s.range.end.saturating_sub(1)) + 1;
                    let line = input.lines.line_of(src_start);
                    let idxs = resolve_all(input.resolver, &s.cites, line, &mut scan.consistency);
                    let span = snap_to_chars(input.text, src_start..src_end.max(src_start));
                    let markers_alone = s.text.is_empty()
                        || s.text.chars().all(|c| !c.is_alphanumeric())
                        || LABEL_ONLY.is_match(&s.text);
                    // `URL: https://...`, `GitHub: https://...`: a line naming where a
                    // source is (annotated source lists), not a claim that cites it.
                    if url_label(&s.text, &s.cites) {
                        continue;
                    }
                    // `*Product URL:* [Title](url)` on its own line under the claim in
                    // the same item or paragraph: it names the claim's source.
                    let markers_alone = markers_alone
                        || prev.as_ref().is_some_and(|p| p.span.start >= b.span.start)
                            && s.cites.iter().all(|c| matches!(c, RawCite::Url(_)))
                            && link_label_line(input.text.get(span.clone()).unwrap_or(""));
                    if idxs.is_empty() {
                        if markers_alone {
                            continue;
                        }
                        let trace = (!s.text.is_empty() && QUANTITATIVE.is_match(&s.text))
                            .then_some(scan.traceability.len());
                        prev = Some(PrevUnit {
                            text: s.text.clone(),
                            line,
                            span: span.clone(),
                            fact: None,
                            trace,
                        });
                        if is_item {
                            list_run.extend(prev.clone());
                        }
                        if trace.is_some() {
                            scan.traceability.push(StructuralError {
                                code: "uncited_quantitative".into(),
                                line: Some(line),
                                reason: format!(
                                    "quantitative statement without a citation: {}",
                                    excerpt(&s.text)
                                ),
                            });
                        }
                        continue;
                    }
                    if markers_alone {
                        // Markers alone (after a line break, in their own paragraph,
                        // or behind a `Sources:` label): they cite the unit before.
                        let target = match prev.as_mut() {
                            Some(p) => match p.fact {
                                Some(fi) => Some(fi),
                                None => {
                                    if let Some(t) = p.trace.take() {
                                        resolved_trace.insert(t);
                                    }
                                    scan.facts.push(Fact {
                                        fact: p.text.clone(),
                                        ref_idxs: Vec::new(),
                                        line: p.line,
                                        span: p.span.clone(),
                                    });
                                    p.fact = Some(scan.facts.len() - 1);
                                    p.fact
                                }
                            },
                            None => scan.facts.len().checked_sub(1),
                        };
                        if let Some(fi) = target {
                            let f = &mut scan.facts[fi];
                            for idx in idxs {
                                if !f.ref_idxs.contains(&idx) {
                                    f.ref_idxs.push(idx);
                                }
                            }
                        }
                        // Keep the list's copy of that unit in step.
                        if let (Some(p), Some(l)) = (prev.as_ref(), list_run.last_mut()) {
                            if l.span == p.span {
                                l.fact = p.fact;
                                l.trace = p.trace;
                            }
                        }
                        continue;
                    }
                    prev = Some(PrevUnit {
                        text: s.text.clone(),
                        line,
                        span: span.clone(),
                        fact: Some(scan.facts.len()),
                        trace: None,
                    });
                    if is_item {
                        list_run.extend(prev.clone());
                    }
                    scan.facts.push(Fact {
                        fact: s.text,
                        ref_idxs: idxs,
                        line,
                        span,
                    });
                }
            }
            _ => {}
        }
        i += 1;
    }
    if !resolved_trace.is_empty() {
        let mut k = 0;
        scan.traceability.retain(|_| {
            k += 1;
            !resolved_trace.contains(&(k - 1))
        });
    }
    scan
}

/// A body unit already seen, which a following run of bare markers may cite.
#[derive(Clone)]
struct PrevUnit {
    text: String,
    line: usize,
    span: Range<usize>,
    /// Index of its fact, once it has one.
    fact: Option<usize>,
    /// Index of its `uncited_quantitative` error, if one was raised.
    trace: Option<usize>,
}

/// A unit that is only a source label before its markers (`Sources: [2][5]`).
/// A unit that is a short label ending in a colon and cites only by URL.
fn url_label(text: &str, cites: &[RawCite]) -> bool {
    let label = text.trim_end_matches([' ', '.']);
    !cites.is_empty()
        && cites.iter().all(|c| matches!(c, RawCite::Url(_)))
        && label.ends_with([':', '：'])
        && label.split_whitespace().count() <= 3
        && label.chars().filter(|c| c.is_alphanumeric()).count() <= 24
}

/// A line that is a short source label and links only (`*Product URL:* [Title](url)`,
/// `- **Source**: [Site](url), [Site](url)`), in Markdown source.
fn link_label_line(raw: &str) -> bool {
    let Some(c) = LINK_LABEL_LINE.captures(raw.trim()) else {
        return false;
    };
    let label = c.get(1).map_or("", |m| m.as_str());
    label.split_whitespace().count() <= 3 && SOURCE_LABEL_WORD.is_match(label)
}

static LINK_LABEL_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:[-*+]\s+)?[*_]{0,2}([^\s:：*_\[][^:：*_\[]{0,23}?)[*_]{0,2}\s*[:：]\s*[*_]{0,2}\s*(?:\[[^\]]*\]\([^)\s]*\)[\s,;，、]*)+$").unwrap()
});

static SOURCE_LABEL_WORD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?-u:\b)(?:url|link|source|sources|page|thread|web\s?site|site|reference|ref|via)(?-u:\b)|来源|链接|出处").unwrap()
});

static LABEL_ONLY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^[(（\[]?\s*(sources?|refs?\.?|references?|citations?|cited|via|来源|资料来源|数据来源|信息来源|参考|参考文献|参考资料|出处|引用)\s*[:：]?\s*[)）\]]?\s*[.。]?$").unwrap()
});

/// Widen a byte range to char boundaries inside `text` (offsets mapped through
/// unescaped text can land inside a multi-byte character).
pub(crate) fn snap_to_chars(text: &str, r: Range<usize>) -> Range<usize> {
    let mut start = r.start.min(text.len());
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = r.end.clamp(start, text.len());
    while !text.is_char_boundary(end) {
        end += 1;
    }
    start..end
}

fn excerpt(s: &str) -> String {
    let mut e: String = s.chars().take(80).collect();
    if s.chars().count() > 80 {
        e.push('…');
    }
    e
}

/// Facts of one table: a citation on a row makes a fact of that row; a citation in
/// a caption or source line next to the table makes one fact of the whole table.
fn table_facts(input: &FactInput<'_>, rows: Range<usize>, scan: &mut FactScan) {
    let blocks = input.blocks;
    let header = &blocks[rows.start];
    let cite_col = if matches!(header.kind, BlockKind::TableRow { header: true, .. }) {
        header
            .plain_text()
            .split(" | ")
            .position(is_citation_column)
    } else {
        None
    };
    let table_span = blocks[rows.start].span.start..blocks[rows.end - 1].span.end;
    let table_text: String = blocks[rows.clone()]
        .iter()
        .map(|b| b.plain_text())
        .collect::<Vec<_>>()
        .join("\n");
    // Whole-table citation from an adjacent caption/source line.
    for adj in [rows.start.checked_sub(1), Some(rows.end)]
        .into_iter()
        .flatten()
    {
        let Some(b) = blocks.get(adj) else { continue };
        if input.excluded.contains(&adj) || !table_caption_like(b) {
            continue;
        }
        let flat = flatten(&b.inlines, input.allow_glued);
        let cites: Vec<RawCite> = flat.cites.iter().flatten().cloned().collect();
        let line = input.lines.line_of(table_span.start);
        let idxs = resolve_all(input.resolver, &cites, line, &mut scan.consistency);
        if !idxs.is_empty() {
            scan.facts.push(Fact {
                fact: table_text.clone(),
                ref_idxs: idxs,
                line,
                span: table_span.clone(),
            });
        }
    }
    for b in &blocks[rows.clone()] {
        let is_header = matches!(b.kind, BlockKind::TableRow { header: true, .. });
        let flat = flatten(&b.inlines, Glued::No);
        let mut cites: Vec<RawCite> = flat.cites.iter().flatten().cloned().collect();
        let mut text = clean_fact_text(&flat.text);
        if let (Some(col), false) = (cite_col, is_header) {
            let row_text = b.plain_text();
            let cells: Vec<&str> = row_text.split(" | ").map(str::trim).collect();
            if let Some(cell) = cells.get(col) {
                if let Some(c) = cell_citations(cell) {
                    cites.extend(c);
                    let kept: Vec<&str> = cells
                        .iter()
                        .enumerate()
                        .filter(|(k, _)| *k != col)
                        .map(|(_, c)| *c)
                        .collect();
                    text = kept.join(" | ");
                }
            }
        }
        if cites.is_empty() {
            continue;
        }
        let line = input.lines.line_of(b.span.start);
        let idxs = resolve_all(input.resolver, &cites, line, &mut scan.consistency);
        if !idxs.is_empty() && !text.is_empty() {
            scan.facts.push(Fact {
                fact: text,
                ref_idxs: idxs,
                line,
                span: b.span.clone(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn ranges_and_lists_expand() {
        assert_eq!(expand_numbers("1-3, 5"), vec!["1", "2", "3", "5"]);
        assert_eq!(expand_numbers("4–2"), vec!["4"]);
    }

    #[test]
    fn resolver_rules() {
        let refs: Vec<Reference> = (1..=3)
            .map(|i| Reference {
                idx: i.to_string(),
                url: Some(format!("https://e.org/{i}")),
                title: None,
                line: 1,
            })
            .collect();
        let r = Resolver::new(&refs, true);
        assert_eq!(
            r.resolve(&RawCite::Num("2".into())),
            Resolved::Ref("2".into())
        );
        assert_eq!(
            r.resolve(&RawCite::Num("5".into())),
            Resolved::Dangling("5".into())
        );
        assert_eq!(
            r.resolve(&RawCite::Num("2024".into())),
            Resolved::NotACitation
        );
        assert_eq!(
            r.resolve(&RawCite::Weak("9".into())),
            Resolved::NotACitation
        );
        assert_eq!(
            r.resolve(&RawCite::Url("http://www.e.org/3/".into())),
            Resolved::Ref("3".into())
        );
        assert_eq!(
            r.resolve(&RawCite::Linked("7".into(), "https://e.org/1".into())),
            Resolved::Ref("1".into())
        );
    }
}
