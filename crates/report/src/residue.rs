//! Citation residue: text shaped like a citation that the parse consumed nowhere.
//!
//! The self-check's other counts read what the grammar recognised, so a dialect
//! the grammar does not know leaves no trace in them. This scan does not use the
//! grammar: it looks at the text outside every reference list, code block,
//! figure and cited unit for citation shapes in any script and counts them by
//! class ([`ResidueCounts`]). A report whose residue is large against its cited
//! units was most likely parsed wrong.

use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

use crate::citations::{latin_tail, named_numbers, takes_spaced_marker, LABEL_NOUNS};
use crate::model::{Reference, ResidueCounts};

/// A numeral a space before sentence-end punctuation (`grew 1.`, `している 1。`),
/// glued after it (`growth.1 `, `增长。1`), or glued to a CJK word before an
/// ideographic full stop (`増えた1。`).
static SPACED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(\S+)[ \u{3000}](\d{1,3}(?:, ?\d{1,3})*)(?:[.!?](?:\s|$)|[。．！？])").unwrap()
});
static GLUED_AFTER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(\p{L}{2,}[)”’\x22]?)[.!?。．！？](\d{1,3}(?:, ?\d{1,3})*)(?:\s|$)").unwrap()
});
/// A numeral a space after the full stop that ends a line (`grew. 3⏎`): nothing
/// it could count follows it.
static AFTER_STOP_EOL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)(\p{L}{2,}[)”’\x22]?)[.!?] {1,2}(\d{1,3}(?:, ?\d{1,3})*)[ \t]*$").unwrap()
});
/// A numeral right after an ideographic full stop (`…です。1 次に`, `。 1 2`,
/// `。19は…`); one followed by a Han or Katakana character or by `つ` is a quantity
/// with its counter or unit (`。25歳の場合`, `。1つは`).
static AFTER_CJK_STOP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"([\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}][。．！？]) ?(\d{1,3}(?:[, ]\d{1,3})*)(?:[\s,，]|$|[\p{Hiragana}&&[^つ]])").unwrap()
});
/// Two or more numerals in a list before a full stop or at a line's end, after
/// any token (`requires Python 3.10+ 2, 7, 10.`, `moved 1, 2, 3, 10⏎`), or alone
/// on a line: lists of entry numbers, whatever the word before takes.
static NUMBER_LIST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)(\S+|^)[ \t]+(\d{1,3}(?:, ?\d{1,3})+)(?:[.!?。．！？](?:\s|$)|[ \t]*$)")
        .unwrap()
});
/// A numeral glued to the end of a word before punctuation, a table cell's end or
/// the line's end (`claim3.`, `synthesis27`).
static GLUED_WORD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)(\p{L}{3,}[)”’\x22*_]*)(\d{1,3}(?:,\d{1,3})*)(?:[.!?;,:](?:\s|$)| *\|| *$)")
        .unwrap()
});
/// A numeral glued to a year (`Smith et al. 201220` for `2012 [20]`): the year
/// part is 1900–2039 and what follows it must name an entry.
static GLUED_YEAR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)(?:^|[^\d.,])((?:19|20)\d\d)(\d{1,3})(?:[.;,:](?:\s|$)| *\|| *$)").unwrap()
});
static GLUED_CJK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"([\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}])(\d{1,3})[。．！？]").unwrap()
});
/// A numeral ending a table cell after a word (`free tier 3 |`).
static CELL_END: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(\S+) (\d{1,3}(?:, ?\d{1,3})*)[。.]? *\||(\p{Ll}{3,}[.)*_]*)(\d{1,3}(?:,\d{1,3})*)[。.]? *\|")
        .unwrap()
});
/// Superscripts after a word or punctuation, in lists, alone on a line, after a
/// name that carries its own number (`GPT-4⁴`: an exponent follows a bare
/// number, not a name), and carets.
static SUPERSCRIPT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)⁽[⁰¹²³⁴⁵⁶⁷⁸⁹\d]{1,4}⁾|\p{L}[\p{L}\d]*-\d{1,3}[⁰¹²³⁴⁵⁶⁷⁸⁹]{1,3}|[⁰¹²³⁴⁵⁶⁷⁸⁹]{1,3}(?:[˒,][⁰¹²³⁴⁵⁶⁷⁸⁹]{1,3})+|(?:^|\s|\\)[⁰¹²³⁴⁵⁶⁷⁸⁹]{1,3}(?:[.,;:]|\s|$)|(?:\p{L}{3,}|[.,;:)\]”’\x22'%*_。，）]|[2-9]\d|\d{3,})[⁰¹²³⁴⁵⁶⁷⁸⁹]{1,3}|(?:\p{L}|[.,;:)\]。*_])\^\[?\d{1,3}\]?\^?")
        .unwrap()
});
static BRACKETS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)<a(?-u:\b)[^>]*href\s*=\s*["']#[^"']*["'][^>]*>\s*[\p{P}\p{S}]{0,2}\s*(?:[⁰¹²³⁴⁵⁶⁷⁸⁹]{1,3}|\d{1,3})\s*[\p{P}\p{S}]{0,2}\s*</a>|(?:^|[^\])}\\\w=])\{\d{1,3}(?:,\s*\d{1,3})*\}|《\d{1,3}(?:,\s*\d{1,3})*》|(?:[^\s（(]（\d{1,3}(?:[,，、]\s*\d{1,3})*）|〔\d{1,3}(?:[,，、]\s*\d{1,3})*〕|⟨\d{1,3}(?:,\s*\d{1,3})*⟩|［\d{1,3}(?:[,，、]\s*\d{1,3})*］)(?:[.。，,、;；:：!?！？\s|]|$)|«\d{1,3}»|†\d{1,3}|<\d{1,3}(?:,\s*\d{1,3})*>|&lt;\d{1,3}(?:,\s*\d{1,3})*&gt;|\[(?:ref|refs|source|src|cite|citation|note|fn)\.?\s*#?\d{1,3}\]|\((?:source|sources|ref|refs|citation|cite|see source|fn|note|footnote)\.?\s*#?\d{1,3}(?:,\s*\d{1,3})*\)|[\p{L}*_)”\x22][.。]?\s?\(\d{1,3}(?:,\s*\d{1,3})*\)(?:[.。，,;；:：!?！？)]|[ \t]*(?:\n|$))"#)
        .unwrap()
});
static LINKS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\[\s*\]\((?:https?|file|sandbox):|\[(?:source|sources|link|ref|reference|citation|cite|\d{1,3})\]\(https?://|\[(?:www\.)?[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}\]\(https?://")
        .unwrap()
});
static FILES: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)[(<](?:file|sandbox):[^)\s>]+[)>]").unwrap());
static LINK_MARKUP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\[[^\]\n]*\]\([^)\s]*\)|<(?:https?|file|sandbox):[^>\s]*>|https?://\S+").unwrap()
});

/// Count the residue in `text` at positions `consumed` does not cover. `max_label`
/// bounds the numerals read as citations (the list's highest number, or 300
/// without a list). `spaced_dialect`: the report cites as `claim 2.`, so a numeral
/// that names an entry after a label noun (`language model 2.`) may be one more.
pub(crate) fn scan(
    text: &str,
    consumed: &dyn Fn(usize) -> bool,
    max_label: u64,
    spaced_dialect: bool,
) -> ResidueCounts {
    let mut c = ResidueCounts::default();
    let label_ok = |nums: &str| {
        nums.split([',', ' '])
            .filter_map(|n| n.trim().parse::<u64>().ok())
            .all(|n| n >= 1 && n <= max_label)
    };
    let names = named_numbers(std::iter::once(text), std::iter::empty());
    let mut seen: Vec<usize> = Vec::new();
    for re in [
        &*SPACED,
        &*NUMBER_LIST,
        &*GLUED_AFTER,
        &*AFTER_STOP_EOL,
        &*GLUED_WORD,
        &*GLUED_YEAR,
        &*GLUED_CJK,
        &*AFTER_CJK_STOP,
        &*CELL_END,
    ] {
        for m in re.captures_iter(text) {
            let (Some(word), Some(nums)) = (m.get(1).or(m.get(3)), m.get(2).or(m.get(4))) else {
                continue;
            };
            let w = word.as_str().trim_matches(|ch: char| !ch.is_alphanumeric());
            let word_ok = if std::ptr::eq(re, &*GLUED_CJK) || std::ptr::eq(re, &*AFTER_CJK_STOP) {
                takes_spaced_marker(word.as_str())
            } else if std::ptr::eq(re, &*NUMBER_LIST) {
                true
            } else if std::ptr::eq(re, &*GLUED_YEAR) {
                // A number after a label (`Output Tokens: 20029`) is its value.
                is_year(w) && !text[..word.start()].trim_end().ends_with(':')
            } else if std::ptr::eq(re, &*SPACED) {
                // The grammar reads a spaced numeral only after a word that takes
                // no number (`rose to 7.` is a quantity); the residue also counts
                // one after a year (`between 2021 and 2023 1.`) and a list of
                // numerals after any word (`within three years 4, 5.`), which
                // prose writes with "and".
                takes_spaced_marker(w)
                    || is_year(w)
                    || (nums.as_str().contains(',') && w.chars().any(char::is_alphabetic))
                    || (spaced_dialect && LABEL_NOUNS.contains(&w.to_lowercase().as_str()))
            } else {
                takes_spaced_marker(w)
            };
            // A numeral glued to a name that is part of a path or identifier
            // (`upstash/context7`, `gpt-4o-mini3`) belongs to the name.
            let in_name = std::ptr::eq(re, &*GLUED_WORD) || std::ptr::eq(re, &*CELL_END);
            let in_name = in_name
                && text[..word.start()]
                    .chars()
                    .next_back()
                    .is_some_and(|ch| ch.is_ascii_digit() || "/-_.@".contains(ch));
            // A Latin `word N` the report writes again is a name (`Wi-Fi 7`).
            let named = || {
                let tail = latin_tail(word.as_str());
                !tail.is_empty() && names.contains(&(tail, nums.as_str().to_string()))
            };
            if consumed(nums.start()) || !word_ok || in_name || !label_ok(nums.as_str()) || named()
            {
                continue;
            }
            if !seen.contains(&nums.start()) {
                seen.push(nums.start());
                c.numerals += 1;
            }
        }
    }
    let count = |re: &Regex| {
        re.find_iter(text)
            .filter(|m| !consumed(m.start()) && !consumed(m.end().saturating_sub(1)))
            .count()
    };
    // `$O(N^2)$`: an exponent in inline math is no citation.
    static MATH: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\$[^$\n]+\$").unwrap());
    let math: Vec<Range<usize>> = MATH.find_iter(text).map(|m| m.range()).collect();
    c.superscripts = SUPERSCRIPT
        .find_iter(text)
        .filter(|m| !consumed(m.start()) && !consumed(m.end().saturating_sub(1)))
        .filter(|m| !math.iter().any(|r| r.contains(&m.start())))
        .count();
    // `(3)` glued to a Latin letter or digit is a call or a label (`add(2, 3)`,
    // `checkEligibility(18)`); prose puts a space before it.
    c.brackets = BRACKETS
        .find_iter(text)
        .filter(|m| !consumed(m.start()) && !consumed(m.end().saturating_sub(1)))
        .filter(|m| {
            !m.as_str()
                .find('(')
                .and_then(|i| m.as_str()[..i].chars().next_back())
                .is_some_and(|ch| ch.is_ascii_alphanumeric())
        })
        .count();
    // An image (`![](url)`) is not an empty-text link.
    c.links = LINKS
        .find_iter(text)
        .filter(|m| !consumed(m.start()) && !consumed(m.end().saturating_sub(1)))
        .filter(|m| !text[..m.start()].ends_with('!'))
        .count();
    c.files = count(&FILES);
    c.link_lines = link_lines(text, consumed);
    c
}

/// The highest number a citation numeral can have: the list's last entry, or 300
/// in a report without a list.
pub(crate) fn max_label(has_list: bool, references: &[Reference]) -> u64 {
    let last = references
        .iter()
        .filter_map(|r| r.idx.parse::<u64>().ok())
        .max();
    match (has_list, last) {
        (true, Some(n)) => n,
        _ => 300,
    }
}

fn is_year(w: &str) -> bool {
    w.len() == 4 && w.parse::<u32>().is_ok_and(|y| (1900..2040).contains(&y))
}

/// Lines in the last third of the text, outside what was consumed, whose
/// characters are mostly link markup.
fn link_lines(text: &str, consumed: &dyn Fn(usize) -> bool) -> usize {
    let tail_from = text.len() - text.len() / 3;
    let mut n = 0;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let start = at;
        at += line.len();
        // A cited bullet whose links outweigh its words (`- 2011 rule change
        // [[4]](https://…)[[5]](https://…)`) is a unit: its text after the
        // bullet, or its last character, lies in a consumed span.
        let body = line.trim_start();
        let body = body
            .strip_prefix(['-', '*', '+', '•'])
            .unwrap_or(body)
            .trim_start();
        let content = start + (line.len() - body.len());
        let last = start + line.trim_end().len().saturating_sub(1);
        if start < tail_from || consumed(content) || consumed(last) {
            continue;
        }
        let chars = line.chars().filter(|c| !c.is_whitespace()).count();
        if chars < 10 {
            continue;
        }
        let linked: usize = LINK_MARKUP
            .find_iter(line)
            .map(|m| m.as_str().chars().filter(|c| !c.is_whitespace()).count())
            .sum();
        if linked * 10 >= chars * 6 {
            n += 1;
        }
    }
    n
}

/// Spans the residue scan skips, as a lookup: sorted, disjoint ranges.
pub(crate) fn covered(spans: &[Range<usize>], pos: usize) -> bool {
    let i = spans.partition_point(|r| r.end <= pos);
    spans
        .get(i)
        .is_some_and(|r| r.start <= pos && pos < r.end.max(r.start + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn residue(text: &str) -> ResidueCounts {
        scan(text, &|_| false, 300, false)
    }

    #[test]
    fn each_class_is_counted_in_any_script() {
        assert_eq!(residue("Output rose sharply 3. Then it fell.").numerals, 1);
        assert_eq!(residue("Output rose sharply.3 Then it fell.").numerals, 1);
        assert_eq!(residue("利用者が増えています 1。次に").numerals, 1);
        assert_eq!(residue("利用者が増えた1。次に").numerals, 1);
        assert_eq!(residue("| plan | free for small teams 3 |").numerals, 1);
        assert_eq!(residue("Output rose sharply³ and fell⁽⁴⁾.").superscripts, 2);
        assert_eq!(
            residue("It rose {3}. It fell <4>. [ref 5] (Source 6)").brackets,
            4
        );
        assert_eq!(residue("It rose sharply (3).").brackets, 1);
        // A JSX attribute's value (`height={420}` in MDX) is no citation.
        assert_eq!(
            residue("<ChartFrame src=\"c.html\" height={420} />\nIt rose {3}.").brackets,
            1
        );
        // After a name that carries its own number.
        assert_eq!(residue("Tools like GPT-4⁴. Then").superscripts, 1);
        // After the full stop that ends a line.
        assert_eq!(residue("It rose sharply. (3)\nIt fell.").brackets, 1);
        assert_eq!(residue("It rose sharply. 3\nIt fell.").numerals, 1);
        assert_eq!(
            residue("它增长了（3）。它下降了〔4〕。 It fell ⟨5⟩. 见<a href=\"#r6\">（6）</a>")
                .brackets,
            4
        );
        // Glued to the end of a line or cell, or to a year; superscript lists and
        // superscripts standing alone.
        assert_eq!(residue("| grew in the latest synthesis27 |").numerals, 1);
        assert_eq!(residue("Lee et al. 201220\nNext line").numerals, 1);
        assert_eq!(residue("between 2021 and 2023 1. Then").numerals, 1);
        assert_eq!(residue("It rose to 3.1 km¹˒³. Then\n⁴.\n").superscripts, 2);
        assert_eq!(
            residue("A ([](https://e.org/a)) and [source](https://e.org/b) and [e.org](https://e.org/c).").links,
            3
        );
        assert_eq!(
            residue("See [a.pdf](file://file-Ab12) and [b](sandbox:/mnt/data/b.csv).").files,
            2
        );
    }

    #[test]
    fn quantities_and_consumed_text_are_not_residue() {
        // A number after a word that takes one, a year, a decimal, a unit.
        let r =
            residue("It happened in 2024. Growth was 3.5 times. The rate rose to 7. Area 5 km².");
        assert!(r.is_empty(), "{r:?}");
        // Numbers beyond the list are quantities.
        assert!(scan("Output rose sharply 42.", &|_| false, 10, false).is_empty());
        // Enumerations, regex quantifiers and figure links are not citations.
        let r = residue(
            "章节：（1）行程概览；（2）亮点 `^[a-z]{1,64}$` 如<a href=\"#f1\">图 1</a>所示",
        );
        assert!(r.is_empty(), "{r:?}");
        // Ages and counted things after an ideographic stop, a label's value,
        // names with a digit, calls in code and images are not citations either.
        let r = residue(
            "See ![](https://e.org/a.png) and the photo [here](https://e.org/b).\n\
             睡眠不足と仮定する。25歳の場合。2つの例\nTotal Output Tokens: 20029\n\
             | Server | upstash/context7 |\nassertEquals(5, calc.add(2, 3))\n",
        );
        assert!(r.is_empty(), "{r:?}");
        // An exponent in inline math is no citation.
        assert_eq!(residue("Cost grows as $O(N^2)$ with size.").superscripts, 0);
        assert_eq!(residue("Cost grows as N^2 with size.").superscripts, 1);
        // Lists of numerals after any token, or alone on a line.
        let r = residue("Requires Python 3.10+ 2, 7, 10.\nModules moved 1, 2, 3\n    1, 2, 10\n");
        assert_eq!(r.numerals, 3, "{r:?}");
        // A name the report writes again (`Wi-Fi 7`) is not residue.
        let r = residue("| Wi-Fi 7 | Wi-Fi 7 |\nAlso Wi-Fi 7 here.\nAnd Wi-Fi 7 again.");
        assert_eq!(r.numerals, 0, "{r:?}");
        assert_eq!(residue("| Wi-Fi 7 |\n").numerals, 1);
        // A label's number (`model 2.`) is residue only in a report that cites as
        // `claim 2.`, and only when it could name an entry.
        let label = "It runs on the Gemini language model 2. It costs less 3.";
        assert_eq!(residue(label).numerals, 1, "only `less 3.`");
        assert_eq!(scan(label, &|_| false, 300, true).numerals, 2);
        assert_eq!(scan(label, &|_| false, 1, true).numerals, 0);
        // Consumed text is never residue.
        assert!(scan("Output rose sharply 3. {4}", &|_| true, 300, false).is_empty());
    }

    #[test]
    fn trailing_lines_of_links_count() {
        let body = "Some words of a report body here.\n".repeat(6);
        let text = format!("{body}[\\[1\\]](https://e.org/a) [\\[2\\]](https://e.org/b)\n");
        assert_eq!(residue(&text).link_lines, 1);
        assert_eq!(residue(&body).link_lines, 0);
        // A bullet that a cited unit covers after its marker is not residue.
        let line = "- Rule changed [[4]](https://e.org/a)[[5]](https://e.org/b)\n";
        let text = format!("{body}{line}");
        let unit = body.len() + 2..text.len() - 1;
        assert_eq!(
            scan(&text, &|p| unit.contains(&p), 300, false).link_lines,
            0
        );
    }
}
