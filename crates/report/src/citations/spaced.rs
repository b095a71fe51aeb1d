//! Spaced numerals inside a sentence, as Gemini's exports in Japanese, Chinese and
//! Korean write them: the citation sits where the English original had it, so
//! after a phrase and before a comma, a particle or a closing bracket
//! (`…が 9、これは`, `クリニック 1 や`, `데이터 2에 따르면`), glued after a closing
//! quote (`「不応期」16 や`), or as the subject of its sentence (`。19は、…`).
//!
//! Only asked in reports written in that dialect (their sentence-end numerals all
//! name entries, [`super::Glued::Spaced`]), and every numeral found is a
//! [`RawCite::Weak`] (a citation only when it names an entry) or, after a Latin
//! word, a [`RawCite::AfterName`]: `Veo 3は` is the model's name wherever
//! `Veo 3` recurs in the report, which the resolver knows ([`named_numbers`]).

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

use super::markers::{takes_spaced_marker, RawCite, SENTINEL};

/// What follows a citation numeral inside a sentence: a comma, colon or closing
/// bracket, a CJK character (a particle: `や`, `は`, `에`), or the end of the text.
static IN_SENTENCE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(\S+) (\d{1,3}(?:, ?\d{1,3})*)(?:[、，：）」』】]|[,:)](?:\s|$)|\s?[\p{Hiragana}\p{Han}\p{Katakana}\p{Hangul}]|\s*$)",
    )
    .unwrap()
});
/// A numeral glued after a closing quote or bracket (`「不応期」16 や`, `」2、`).
static AFTER_CLOSE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"[」』）】](\d{1,3}(?:[,，] ?\d{1,3})*)(?:[、，。．）\s]|[\p{Hiragana}\p{Hangul}]|$)",
    )
    .unwrap()
});
/// A source as the subject of its sentence (`。19は、…`, "source 19 says").
static SUBJECT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|[。．！？] ?)(\d{1,3})(?:は|が|では|によると|によれば|는|은|에 따르면)")
        .unwrap()
});
/// Numerals opening a piece of text, after a word that closed an emphasis or a
/// link (`**…となります** 14。`, `**grew fast** 3.`).
static LEADING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^ (\d{1,3}(?:, ?\d{1,3})*)(?:[.!?](?:\s|$)|[。．！？、，：）」』】]|[,:)](?:\s|$)|\s?[\p{Hiragana}\p{Han}\p{Katakana}\p{Hangul}]|\s*$)",
    )
    .unwrap()
});
/// Text that is only numerals, after a label (`**関連資料:** 1`).
static LABEL_VALUE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*(\d{1,3}(?:[,，] ?\d{1,3})*)\s*$").unwrap());
/// Counters and quantity words after which a numeral counts things (`3 人`,
/// `5 年`, `10 以上`, `2 つ`, `3 か月`), not sources.
const COUNTERS: &str = "人年月日回個件つ本台名歳倍割円時分秒章節点位号例以未程前超万億千百種社項級代期階部層段週株枚冊度曲話巻局桁ヶケカかヵ명개년월일회세";

fn numbers(list: &str) -> Vec<String> {
    list.split([',', '，'])
        .map(|n| n.trim().to_string())
        .filter(|n| n.parse::<u32>().is_ok_and(|v| v > 0))
        .collect()
}

/// The cites of numerals `list` written after word `w`: one numeral after a
/// Latin word may be part of a name, which the resolver decides.
fn cites_after(w: &str, list: Vec<String>) -> Option<Vec<RawCite>> {
    let latin = w.chars().last().is_some_and(|l| l.is_ascii_alphanumeric());
    match (latin, list.as_slice()) {
        (_, []) => None,
        (true, [n]) => Some(vec![RawCite::AfterName(n.clone(), latin_tail(w))]),
        _ => Some(list.into_iter().map(RawCite::Weak).collect()),
    }
}

/// Where a cut ending at `end` should end: past one space that only separated
/// the numeral from CJK text (`協会 7 や` reads `協会や` without it).
fn spaced_end(text: &str, end: usize) -> usize {
    let mut rest = text[end..].chars();
    match (rest.next(), rest.next()) {
        (Some(' '), Some(c))
            if crate::language::is_cjk(c) || ('\u{AC00}'..='\u{D7AF}').contains(&c) =>
        {
            end + 1
        }
        _ => end,
    }
}

fn counted(after: &str) -> bool {
    after
        .trim_start()
        .chars()
        .next()
        .is_some_and(|c| COUNTERS.contains(c) || c == '%' || c == '％')
}

/// Numerals citing inside a sentence of `text`; `prev` is the unit's text written
/// before it (for a subject or a label's value at the start of `text`). Ranges cover what the
/// fact text drops: the space and the digits, or nothing for a subject, whose
/// numeral stays as the sentence's subject.
pub(crate) fn in_sentence_numerals(text: &str, prev: &str) -> Vec<(Range<usize>, Vec<RawCite>)> {
    let before = prev.chars().next_back().filter(|&c| c != SENTINEL);
    let mut out = Vec::new();
    for c in IN_SENTENCE.captures_iter(text) {
        let (word, nums) = (&c[1], c.get(2).expect("numbers"));
        let w = word.trim_matches(|ch: char| !ch.is_alphanumeric());
        let after = &text[nums.end()..];
        if !takes_spaced_marker(w) || counted(after) {
            continue;
        }
        // `Node 1:`, `Step 2:` label what follows.
        if after.starts_with(':') && w.ends_with(|l: char| l.is_ascii_alphanumeric()) {
            continue;
        }
        if let Some(cites) = cites_after(w, numbers(nums.as_str())) {
            out.push((
                c.get(1).expect("word").end()..spaced_end(text, nums.end()),
                cites,
            ));
        }
    }
    if let Some(c) = LEADING.captures(text) {
        let nums = c.get(1).expect("numbers");
        let word: String = {
            let mut w: Vec<char> = prev
                .chars()
                .rev()
                .take_while(|c| !c.is_whitespace() && *c != SENTINEL)
                .collect();
            w.reverse();
            w.into_iter().collect()
        };
        let w = word.trim_matches(|ch: char| !ch.is_alphanumeric());
        // After a label (`Employees:`) the numerals are its value.
        let after_label = word.trim_end_matches(['*', '_']).ends_with([':', '：']);
        if !w.is_empty() && !after_label && takes_spaced_marker(w) && !counted(&text[nums.end()..])
        {
            if let Some(cites) = cites_after(w, numbers(nums.as_str())) {
                out.push((0..nums.end(), cites));
            }
        }
    }
    for c in AFTER_CLOSE.captures_iter(text) {
        let nums = c.get(1).expect("numbers");
        if counted(&text[nums.end()..]) {
            continue;
        }
        let list = numbers(nums.as_str());
        if !list.is_empty() {
            let cut = nums.start()..spaced_end(text, nums.end());
            out.push((cut, list.into_iter().map(RawCite::Weak).collect()));
        }
    }
    // A CJK label's value that is only numerals (`**関連資料:** 1`): the label
    // cites (after a Latin label, `Employees: 120` is a value).
    let mut tail = prev
        .chars()
        .rev()
        .filter(|&c| c != SENTINEL && c != '*' && c != '_');
    let label = matches!(tail.next(), Some(':' | '：'))
        && tail
            .next()
            .is_some_and(|c| crate::language::is_cjk(c) || ('\u{AC00}'..='\u{D7AF}').contains(&c));
    if label {
        if let Some(c) = LABEL_VALUE.captures(text) {
            let nums = c.get(1).expect("numbers");
            let list = numbers(nums.as_str());
            if !list.is_empty() {
                out.push((nums.range(), list.into_iter().map(RawCite::Weak).collect()));
            }
        }
    }
    let opens = before.is_none_or(|c| c.is_whitespace() || "。．！？".contains(c));
    for c in SUBJECT.captures_iter(text) {
        let n = c.get(1).expect("number");
        if n.start() == 0 && !opens {
            continue;
        }
        if let Some(v) = n.as_str().parse::<u32>().ok().filter(|&v| v > 0) {
            // After the numeral, so it belongs to this sentence, not the one the
            // full stop ended.
            out.push((n.end()..n.end(), vec![RawCite::Weak(v.to_string())]));
        }
    }
    out
}

/// The Latin word ending `w` (`、Veo` in unspaced CJK text gives `veo`), lowercased.
pub(crate) fn latin_tail(w: &str) -> String {
    let start = w
        .char_indices()
        .rev()
        .take_while(|&(_, c)| c.is_ascii_alphanumeric() || ".+-".contains(c))
        .last()
        .map_or(w.len(), |(i, _)| i);
    w[start..]
        .trim_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase()
}

/// Latin `word N` pairs that are names with a number (`Veo 3`, `Windows 11`,
/// `Amazon Linux 2 AMI`), never citations: written in a reference title, three
/// times or more in `body`, or anywhere followed by more of the name (a Latin
/// word, a version `.1`). A product cited twice with its source (`Writesonic 29 や
/// … Writesonic 29 に`) stays a citation.
pub(crate) fn named_numbers<'a>(
    body: impl Iterator<Item = &'a str>,
    titles: impl Iterator<Item = &'a str>,
) -> HashSet<(String, String)> {
    static PAIR: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"([A-Za-z][A-Za-z0-9.+\-]*) (\d{1,3})(\.\d| [A-Za-z]|\D|$)").unwrap()
    });
    let pairs = |t: &'a str| {
        PAIR.captures_iter(t).map(|c| {
            let w = c[1].trim_matches(|ch: char| !ch.is_alphanumeric());
            let more = c[3].chars().count() > 1;
            ((w.to_lowercase(), c[2].to_string()), more)
        })
    };
    let mut names: HashSet<(String, String)> = titles.flat_map(pairs).map(|(k, _)| k).collect();
    let mut seen: HashMap<(String, String), usize> = HashMap::new();
    for (key, more) in body.flat_map(pairs) {
        let n = seen.entry(key.clone()).or_default();
        *n += 1;
        if more || *n >= 3 {
            names.insert(key);
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(t: &str) -> Vec<(String, Vec<RawCite>)> {
        in_sentence_numerals(t, "")
            .into_iter()
            .map(|(r, c)| (t[r].to_string(), c))
            .collect()
    }
    fn weak(n: &str) -> RawCite {
        RawCite::Weak(n.to_string())
    }

    #[test]
    fn numerals_inside_a_sentence_cite() {
        assert_eq!(
            found("記述も見られるが 9、これは"),
            vec![(" 9".to_string(), vec![weak("9")])]
        );
        assert_eq!(
            found("医学クリニック 1 や健康メディア 17 による")[1].1,
            vec![weak("17")]
        );
        assert_eq!(found("수집된 데이터 2에 따르면")[0].1, vec![weak("2")]);
        assert_eq!(
            found("「不応期」16 や「射精後不応期」2、")[0].1,
            vec![weak("16")]
        );
        assert_eq!(found("地位 4 は、計り知れない")[0].1, vec![weak("4")]);
        // A compound ending in a position word is an ordinary word.
        assert_eq!(found("生産性の向上 5、品質")[0].1, vec![weak("5")]);
        // After a Latin word: the resolver decides (a recurring name is no cite).
        assert_eq!(
            found("Notion AI 37 や")[0].1,
            vec![RawCite::AfterName("37".into(), "ai".into())]
        );
    }

    #[test]
    fn a_source_as_the_subject_cites_its_own_sentence() {
        let t = "低いことがある 16。38は、拡散モデルは遅いと述べている。";
        let subj = in_sentence_numerals(t, "");
        let at = t.find("38").unwrap() + 2;
        assert!(subj
            .iter()
            .any(|(r, c)| *r == (at..at) && c == &vec![weak("38")]));
        assert_eq!(
            in_sentence_numerals("7によれば、市場は伸びた。", "").len(),
            1
        );
        assert!(in_sentence_numerals("7によれば", "a").is_empty());
        assert!(in_sentence_numerals("。1つは速さである。2024年は転機だった。", "").is_empty());
        assert!(in_sentence_numerals("値は3は超えない。。0は無効である。", "").is_empty());
    }

    #[test]
    fn numerals_after_an_emphasis_cite() {
        let got = in_sentence_numerals(" 14。この措置は", "適用除外日となります");
        assert_eq!(got[0].1, vec![weak("14")]);
        assert_eq!(got[0].0, 0..3);
        assert!(in_sentence_numerals(" 14。", "約").is_empty());
        assert!(in_sentence_numerals(" 3 人", "参加者は").is_empty());
    }

    #[test]
    fn a_label_whose_value_is_numerals_cites() {
        let got = in_sentence_numerals(" 1, 5  ", "**関連資料:**");
        assert_eq!(got[0].1, vec![weak("1"), weak("5")]);
        assert!(in_sentence_numerals(" 1, 5", "**Employees:**").is_empty());
    }

    #[test]
    fn counts_and_quantities_are_not_citations() {
        for t in [
            "参加者は 3 人であった",
            "期間は 5 年、費用は",
            "約 5、",
            "第 3 章では",
            "全体の 10 %を",
            "10 以上の",
            "2 つの方法",
            "3 か月後",
            "その上 5、",
            "10以上 5、",
        ] {
            assert!(found(t).is_empty(), "{t}: {:?}", found(t));
        }
    }

    #[test]
    fn recurring_latin_pairs_are_names() {
        let body = [
            "Veo 3は高度である。Veo 3の機能。Veo 3で作る。",
            "Notion AI 37 や Notion AI 37 に",
            "Amazon Linux 2 AMIを選ぶ。Java 17.0.2 を使う。",
        ];
        let names = named_numbers(body.into_iter(), ["Claude 3 release notes"].into_iter());
        let has = |w: &str, n: &str| names.contains(&(w.to_string(), n.to_string()));
        assert!(has("veo", "3") && has("linux", "2") && has("java", "17") && has("claude", "3"));
        // A product cited twice with its source is no name.
        assert!(!has("ai", "37"));
        assert!(found("### Node 1: Slack Trigger").is_empty());
        assert!(found("Phase 1およびPhase 2で確立された").is_empty());
        // In unspaced CJK text the name is the Latin tail of the word.
        assert_eq!(
            found("記述することで、Veo 3はより")[0].1,
            vec![RawCite::AfterName("3".into(), "veo".into())]
        );
    }
}
