//! Citations by name rather than by number: author-date (`(Bloom et al., 2015)`,
//! `Bloom et al. (2015)`, `[Bloom 2015]`, `张三等（2023）`), keys (`[@key]`,
//! `[key]`, `(key pages 3-5)`, `\cite{key}`) and source names (`[Reuters]`,
//! `[来源：新华社]`). A shape counts only when it names a listed entry: prose in
//! brackets or a year in parentheses is never a citation. A shape that names
//! several entries cites all of them and says so; one that names none is counted
//! (author-date shapes only) for the self-check.

mod flat;
mod index;

use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

use crate::model::Reference;
pub(crate) use flat::mark_names;
pub(crate) use index::fold;
use index::EntryNames;

/// The entries of a reference list as citable by name.
#[derive(Debug, Default)]
pub(crate) struct NameIndex {
    entries: Vec<EntryNames>,
}

/// One citation by name found in a sentence.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NameCite {
    /// Byte range in the scanned text.
    pub span: Range<usize>,
    /// The entries it names (more than one: ambiguous, all candidates kept).
    pub idxs: Vec<String>,
    /// One name in it matched several entries (two `Smith, 2020`): the
    /// candidates are all in `idxs` and none was picked.
    pub ambiguous: bool,
    /// The citation as written.
    pub written: String,
}

/// What a scan of one text found.
#[derive(Debug, Default)]
pub(crate) struct NameScan {
    pub cites: Vec<NameCite>,
    /// Author-date shapes (an author-like name and a year) that name no entry.
    pub unresolved: Vec<String>,
}

thread_local! {
    /// Set when a lookup of one name finds several entries; read and cleared
    /// per citation (scans run on one thread each).
    static AMBIGUOUS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// A lookup's result, noting whether it matched more than one entry.
fn noted(found: Vec<String>) -> Vec<String> {
    if found.len() > 1 {
        AMBIGUOUS.with(|a| a.set(true));
    }
    found
}

const YEAR: &str = r"(?:1[89]|20)\d{2}[a-z]?|n\.\s?d\.|in press|forthcoming";

/// `(...)` or `（...）` holding no nested parentheses.
static PAREN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[(（]([^()（）\n]{2,400})[)）]").unwrap());
/// `[...]` not opening a link or a footnote definition.
static BRACKET: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\[([^\[\]\n]{2,300})\]").unwrap());
static LATEX_CITE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"\\(?:cite|citep|citet|parencite|textcite|autocite)\*?(?:\[[^\]]*\])*\{([^}]{1,400})\}",
    )
    .unwrap()
});
/// One author-date item: authors, then years (`2015a, 2016`), then a locator.
static AUTHOR_YEAR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"(?i)^(?:(?:see also|see|e\.g\.,?|cf\.|i\.e\.,?|as cited in|参见|见)\s+)?(.+?)[\s,，]+((?:{YEAR})(?:\s*[,，]\s*(?:{YEAR}))*)(?:\s*[,:，：]\s*.*)?$"
    ))
    .unwrap()
});
/// The year in parentheses after a narrative citation, with an optional locator.
static NARRATIVE_YEAR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"(?i)^\s*((?:{YEAR})(?:\s*[,，]\s*(?:{YEAR}))*)(?:\s*[,:，：]\s*(?:p|pp|chap|ch|para|sec)\.?\s*[\w\-–]+)?\s*$"
    ))
    .unwrap()
});
/// A key with an optional locator: `smith2019 pages 3-5`, `@smith2019, p. 3`.
static KEY_ITEM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^-?@?([^\s,;，；]{2,80})(?:[\s,，]+(?:pages?|pp?\.|p\.|chap\.|chapter|sec\.|§|media|figs?\.?|figure|table|para\.?)\s*[\w\-–]+(?:\s*[-–]\s*\w+)?)?$").unwrap()
});
static SOURCE_PREFIX: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\s*(?:sources?|via|来源|資料來源|资料来源|数据来源|出处|引自)\s*[:：]?\s*")
        .unwrap()
});
/// An explicit source label, `Source:` or `来源：`: what follows is a citation.
static SOURCE_LABEL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\s*(?:sources?|来源|資料來源|资料来源|数据来源|出处|引自)\s*[:：]\s*\S")
        .unwrap()
});
/// A Pandoc citation `[@key]`, `[see @key, p. 3; @other]`: a citation whatever it names.
static PANDOC_CITE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\[(?:[^\[\]\n]{0,40}?[\s;])?-?@[A-Za-z_][^\[\]\n]{0,300}\]").unwrap()
});
/// A key slug with a digit and a passage locator: `smith2019twolysm pages 3-5`.
static KEY_WITH_LOCATOR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^[a-z][\w\-]*\d[\w\-]*\s+(?:pages?|pp?\.|media|chap\.|sec\.)\s*[\w\-–]+$")
        .unwrap()
});
/// Bracket text shaped like a citation by name: a key slug with a year
/// (`lee-2021`, `smith_2019a`) or one to four capitalised names, comma-separated.
static LOST_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:[a-z][a-z]+[-_]?(?:19|20)\d{2}[a-z]?|\p{Lu}[\p{L}'’.-]+(?:\s(?:&|\p{Lu}[\p{L}'’.-]+)){0,3}(?:\s*,\s*\p{Lu}[\p{L}'’.-]+(?:\s(?:&|\p{Lu}[\p{L}'’.-]+)){0,3}){0,3}(?:\s*,\s*(?:19|20)\d{2}(?:-\d{2}(?:-\d{2})?)?)?)$").unwrap()
});
/// A source name then a date: `Reuters, 2026-09-04`, `Kyodo News, 2024`.
static DATED_SOURCE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^([^,;，；\d][^,;，；]{1,60}?)\s*[,，]\s*(?:19|20)\d{2}(?:-\d{2}(?:-\d{2})?)?$")
        .unwrap()
});
/// An unbracketed narrative citation: `Lu et al. 2024`, `Smith & Lee 2020`, `Smith 2020`.
static BARE_NARRATIVE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|[^\p{L}\p{N}'’-])(\p{Lu}[\p{L}'’-]+(?:\s+et\s+al\.?|\s+(?:and|&)\s+\p{Lu}[\p{L}'’-]+)?),?\s+((?:19|20)\d{2}[a-z]?)(?:$|[^\p{L}\p{N}])")
        .unwrap()
});
static ITEM_SPLIT: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\s*[;；]\s*").unwrap());
static NAME_SPLIT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\s*(?:[,;，；、/]|\s和\s)\s*").unwrap());
static SURNAME_SPLIT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\s*(?:,|，|、|&|\band\b|和|与|\bet al\.?|等人?)\s*").unwrap()
});

impl NameIndex {
    /// Index a list's entries from their source lines (`lines` are the report's).
    pub fn new(refs: &[Reference], text: &str) -> Self {
        let lines: Vec<&str> = text.lines().collect();
        let entries = refs
            .iter()
            .map(|r| {
                let line = r
                    .line
                    .checked_sub(1)
                    .and_then(|l| lines.get(l))
                    .copied()
                    .unwrap_or("");
                EntryNames::from_line(&r.idx, line, r.title.as_deref())
            })
            .collect();
        NameIndex { entries }
    }

    /// Entries listed under a key; a key with the locator a list entry carries
    /// (`smith2019 pages 3-5`) names that passage's entry alone.
    fn by_key(&self, item: &str, key: &str) -> Vec<String> {
        let passage = fold(item.trim().trim_start_matches(['-', '@']));
        let exact: Vec<String> = self
            .entries
            .iter()
            .filter(|e| e.passage.as_deref() == Some(passage.as_str()))
            .map(|e| e.idx.clone())
            .collect();
        if !exact.is_empty() {
            return noted(exact);
        }
        let k = fold(key.trim_start_matches('@'));
        noted(
            self.entries
                .iter()
                .filter(|e| e.key.as_deref() == Some(k.as_str()))
                .map(|e| e.idx.clone())
                .collect(),
        )
    }

    fn by_name(&self, name: &str) -> Vec<String> {
        let n = fold(name);
        if n.chars().filter(|c| c.is_alphanumeric()).count() < 2 {
            return Vec::new();
        }
        noted(
            self.entries
                .iter()
                .filter(|e| e.has_name(&n))
                .map(|e| e.idx.clone())
                .collect(),
        )
    }

    fn by_author_year(&self, surnames: &[String], year: &str) -> Vec<String> {
        noted(
            self.entries
                .iter()
                .filter(|e| e.matches_author_year(surnames, year))
                .map(|e| e.idx.clone())
                .collect(),
        )
    }

    /// Author-date lookup of an author text and a list of years; `None` when the
    /// author text is not author-like.
    fn author_years(&self, authors: &str, years: &str) -> Option<Vec<String>> {
        let surnames = surnames(authors).or_else(|| self.handle(authors))?;
        let mut out = Vec::new();
        for y in years.split([',', '，']) {
            let y = fold(y.trim()).replace(". ", ".");
            for i in self.by_author_year(&surnames, &y) {
                if !out.contains(&i) {
                    out.push(i);
                }
            }
        }
        Some(out)
    }

    /// Each entry's index and the name a mention of it would show (see
    /// [`EntryNames::mention_name`]).
    pub fn mention_names(&self) -> Vec<(String, String)> {
        self.entries
            .iter()
            .filter_map(|e| e.mention_name().map(|n| (e.idx.clone(), n)))
            .collect()
    }

    /// A lower-case single-token author (`thedrcat`, a handle or user name) is an
    /// author only when some entry's first author is exactly that token: prose in
    /// parentheses (`(see above, 2023)`) never becomes one.
    fn handle(&self, authors: &str) -> Option<Vec<String>> {
        let a = authors.trim().trim_matches(['*', '_']);
        let token = !a.is_empty()
            && a.chars().count() >= 3
            && a.chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
            && a.chars().next().is_some_and(|c| c.is_alphabetic());
        if !token {
            return None;
        }
        // Entry authors are read with Markdown emphasis (`*`, `_`) dropped.
        let f = fold(a.trim_end_matches('.')).replace('_', "");
        self.entries
            .iter()
            .any(|e| e.first_author.len() == 1 && e.first_author[0] == f)
            .then(|| vec![f])
    }

    /// `Lu et al. 2024`, `Smith and Lee 2020`, `Smith 2020` outside any bracket:
    /// a citation only when the surnames and the year name a listed entry (never
    /// counted as lost: prose alone is no citation). The span is the year, so the
    /// names stay in the sentence. Brackets the bracket rules resolved are taken;
    /// inside prose in parentheses (`(sourcing L3 from Lu et al. 2024)`) it counts.
    fn bare_narrative(
        &self,
        text: &str,
        taken: &[Range<usize>],
    ) -> Vec<(Range<usize>, Vec<String>)> {
        let mut out = Vec::new();
        for c in BARE_NARRATIVE.captures_iter(text) {
            let year = c.get(2).unwrap();
            if overlaps(taken, &c.get(0).unwrap().range()) {
                continue;
            }
            AMBIGUOUS.with(|a| a.set(false));
            if let Some(found) = self.author_years(&c[1], year.as_str()) {
                if !found.is_empty() {
                    out.push((year.range(), found));
                }
            }
        }
        out
    }

    /// Find the citations by name in one sentence or unit of text.
    pub fn scan(&self, text: &str) -> NameScan {
        let mut scan = NameScan::default();
        let mut taken: Vec<Range<usize>> = Vec::new();
        if self.entries.is_empty() {
            // No list to resolve against: shapes that are citations whatever they
            // name are still counted, so that the self-check can say so. Keys
            // here; author-date shapes and labelled sources by the loops below,
            // where every lookup comes back empty.
            for m in LATEX_CITE
                .find_iter(text)
                .chain(PANDOC_CITE.find_iter(text))
            {
                scan.unresolved.push(m.as_str().to_string());
                taken.push(m.range());
            }
        }
        let push = |scan: &mut NameScan,
                    taken: &mut Vec<Range<usize>>,
                    span: Range<usize>,
                    idxs: Vec<String>,
                    text: &str| {
            taken.push(span.clone());
            let mut unique: Vec<String> = Vec::with_capacity(idxs.len());
            for i in idxs {
                if !unique.contains(&i) {
                    unique.push(i);
                }
            }
            scan.cites.push(NameCite {
                written: text[span.clone()].to_string(),
                span,
                idxs: unique,
                ambiguous: AMBIGUOUS.with(|a| a.replace(false)),
            });
        };
        for c in LATEX_CITE.captures_iter(text) {
            if overlaps(&taken, &c.get(0).unwrap().range()) {
                continue;
            }
            AMBIGUOUS.with(|a| a.set(false));
            let idxs: Vec<String> = c[1]
                .split(',')
                .flat_map(|k| self.by_key(k, k.trim()))
                .collect();
            if idxs.is_empty() {
                scan.unresolved.push(c[0].to_string());
            } else {
                push(&mut scan, &mut taken, c.get(0).unwrap().range(), idxs, text);
            }
        }
        for c in PAREN.captures_iter(text) {
            let whole = c.get(0).unwrap();
            if overlaps(&taken, &whole.range()) {
                continue;
            }
            AMBIGUOUS.with(|a| a.set(false));
            if let Some(idxs) = self.parenthetical(text, whole.range(), &c[1], &mut scan.unresolved)
            {
                push(&mut scan, &mut taken, whole.range(), idxs, text);
            }
        }
        for c in BRACKET.captures_iter(text) {
            let whole = c.get(0).unwrap();
            if overlaps(&taken, &whole.range()) {
                continue;
            }
            let after = &text[whole.end()..];
            // A link, a footnote label or a reference definition is no citation here.
            if after.starts_with('(') || after.starts_with(':') || c[1].starts_with('^') {
                continue;
            }
            AMBIGUOUS.with(|a| a.set(false));
            if let Some(idxs) = self.bracketed(&c[1], &mut scan.unresolved) {
                push(&mut scan, &mut taken, whole.range(), idxs, text);
            } else if at_citation_position(after) && LOST_NAME.is_match(c[1].trim()) {
                // A key slug (`[lee-2021]`) or a run of capitalised names at the end
                // of a sentence (`[Velano Daily]`) that names nothing was a citation.
                scan.unresolved.push(c[0].to_string());
            }
        }
        if !self.entries.is_empty() {
            for (span, idxs) in self.bare_narrative(text, &taken) {
                push(&mut scan, &mut taken, span, idxs, text);
            }
        }
        scan.cites.sort_by_key(|c| c.span.start);
        scan
    }

    /// `[Author Year]`, `[@key, p. 3]`, `[@a; @b]`, `[key]`, `[Reuters]`,
    /// `[Kyodo News, Nikkei Asia]`, `[来源：新华社]`.
    fn bracketed(&self, inner: &str, unresolved: &mut Vec<String>) -> Option<Vec<String>> {
        let inner = inner.trim();
        // `[Reuters, 2026-09-04]`: an outlet with the date of its story, which
        // locates the story but is no name.
        if let Some(c) = DATED_SOURCE.captures(inner) {
            let found = self.by_name(c[1].trim());
            if !found.is_empty() {
                return Some(found);
            }
        }
        let mut idxs = Vec::new();
        let items: Vec<&str> = ITEM_SPLIT.split(inner).collect();
        // Keys first: every item a listed key.
        let keyed: Vec<Vec<String>> = items
            .iter()
            .map(|it| {
                KEY_ITEM
                    .captures(it)
                    .map(|c| self.by_key(it, &c[1]))
                    .unwrap_or_default()
            })
            .collect();
        if keyed.iter().all(|k| !k.is_empty()) {
            return Some(keyed.into_iter().flatten().collect());
        }
        // `[@key]` is a citation whatever it names: one naming nothing is lost.
        if items
            .iter()
            .any(|it| it.trim_start().trim_start_matches('-').starts_with('@'))
        {
            unresolved.push(format!("[{inner}]"));
            return None;
        }
        // Author-date items.
        let mut all_dated = true;
        for it in &items {
            match AUTHOR_YEAR.captures(it) {
                Some(c) => match self.author_years(&c[1], &c[2]) {
                    Some(found) if !found.is_empty() => idxs.extend(found),
                    Some(_) => unresolved.push(format!("[{inner}]")),
                    None => all_dated = false,
                },
                None => all_dated = false,
            }
        }
        if all_dated && !idxs.is_empty() {
            return Some(idxs);
        }
        // Source names: every name a listed one.
        let names = SOURCE_PREFIX.replace(inner, "");
        let parts: Vec<&str> = NAME_SPLIT
            .split(&names)
            .filter(|p| !p.trim().is_empty())
            .collect();
        if parts.is_empty() || parts.len() > 8 {
            return None;
        }
        let mut named = Vec::new();
        for p in parts {
            let found = self.by_name(p.trim());
            if found.is_empty() {
                // `[Source: X]` is a citation even when X names no entry.
                if SOURCE_LABEL.is_match(inner) {
                    unresolved.push(format!("[{inner}]"));
                }
                return None;
            }
            named.extend(found);
        }
        Some(named)
    }

    /// `(来源：新华社)`, `(Source: Reuters, Bloomberg)`: names after an explicit label.
    fn labelled_names(&self, inner: &str, unresolved: &mut Vec<String>) -> Option<Vec<String>> {
        if !SOURCE_LABEL.is_match(inner) {
            return None;
        }
        let names = SOURCE_PREFIX.replace(inner, "");
        let mut named = Vec::new();
        for p in NAME_SPLIT.split(&names).filter(|p| !p.trim().is_empty()) {
            let found = self.by_name(p.trim());
            if found.is_empty() {
                unresolved.push(format!("({})", inner.trim()));
                return None;
            }
            named.extend(found);
        }
        (!named.is_empty()).then_some(named)
    }

    /// `(Author, Year; Author, Year)`, `(key pages 3-5, key2 page 7)`, or the year
    /// of a narrative citation `Author et al. (2015)` / `张三（2023）`.
    fn parenthetical(
        &self,
        text: &str,
        whole: Range<usize>,
        inner: &str,
        unresolved: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(y) = NARRATIVE_YEAR.captures(inner) {
            return self.narrative(&text[..whole.start], &y[1], unresolved);
        }
        if SOURCE_LABEL.is_match(inner) {
            return self.labelled_names(inner, unresolved);
        }
        let items: Vec<&str> = ITEM_SPLIT.split(inner.trim()).collect();
        let mut idxs = Vec::new();
        let mut any = false;
        for it in &items {
            let Some(c) = AUTHOR_YEAR.captures(it) else {
                continue;
            };
            match self.author_years(&c[1], &c[2]) {
                Some(found) if !found.is_empty() => {
                    any = true;
                    idxs.extend(found);
                }
                Some(_) => unresolved.push(format!("({})", it.trim())),
                None => {}
            }
        }
        if any {
            return Some(idxs);
        }
        // Keys with page locators, separated by commas or semicolons.
        let parts: Vec<&str> = inner
            .split([',', ';', '，', '；'])
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .collect();
        let keys: Vec<Vec<String>> = parts
            .iter()
            .map(|k| {
                KEY_ITEM
                    .captures(k)
                    .map(|c| self.by_key(k, &c[1]))
                    .unwrap_or_default()
            })
            .collect();
        if !keys.is_empty() && keys.iter().all(|k| !k.is_empty()) {
            return Some(keys.into_iter().flatten().collect());
        }
        // `(smith2019 pages 3-5, lee2021 page 7)` is a citation by its shape (a
        // slug with a digit and a locator): the keys found are kept, the others
        // are reported lost.
        if !parts.is_empty() && parts.iter().all(|k| KEY_WITH_LOCATOR.is_match(k)) {
            for (k, found) in parts.iter().zip(&keys) {
                if found.is_empty() {
                    unresolved.push(format!("({k})"));
                }
            }
            let found: Vec<String> = keys.into_iter().flatten().collect();
            return (!found.is_empty()).then_some(found);
        }
        None
    }

    /// A narrative citation: the author text right before `(Year)`. The longest
    /// run of author-like words that names an entry wins.
    fn narrative(
        &self,
        before: &str,
        years: &str,
        unresolved: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        let before = before.trim_end();
        let tail: String = before
            .chars()
            .rev()
            .take(120)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        let candidates = narrative_candidates(&tail);
        if candidates.is_empty() {
            return None;
        }
        for cand in &candidates {
            if let Some(found) = self.author_years(cand, years) {
                if !found.is_empty() {
                    return Some(found);
                }
            }
        }
        // Author-like text before a year that names nothing: count it when it is a
        // capitalised name (not `in (2020)`).
        const FUNCTION_WORDS: [&str; 16] = [
            "in", "by", "from", "since", "until", "on", "at", "the", "as", "of", "after", "before",
            "during", "to", "for", "and",
        ];
        let last = candidates.last().filter(|c| {
            let first = c.split_whitespace().next().unwrap_or("").to_lowercase();
            !FUNCTION_WORDS.contains(&first.as_str()) && !is_han_text(c)
        });
        if let Some(last) = last {
            unresolved.push(format!("{last} ({years})"));
        }
        None
    }
}

/// Author texts that may stand before a narrative year, longest first:
/// `Bloom et al.`, `Bloom, Han and Liang`, `McKinsey & Company`, `张三等`.
fn narrative_candidates(tail: &str) -> Vec<String> {
    let tail = tail.trim_end_matches(['*', '_', ' ']);
    // CJK: the last two to four Han characters, with `等`/`等人` after a name.
    let han: Vec<char> = tail.chars().rev().take_while(|c| is_han(*c)).collect();
    if !han.is_empty() {
        let han: String = han.into_iter().rev().collect();
        let core = han.trim_end_matches("等人").trim_end_matches('等');
        let n = core.chars().count();
        let mut out = Vec::new();
        // `张三与李四（2023）`: two names joined; the first is the first author.
        if let Some((a, b)) = core.rsplit_once(['与', '和']) {
            let na = a.chars().count();
            if (2..=4).contains(&b.chars().count()) {
                for k in (2..=4.min(na)).rev() {
                    let first: String = a.chars().skip(na - k).collect();
                    out.push(format!("{first}与{b}"));
                }
            }
        }
        for k in (2..=4.min(n)).rev() {
            let s: String = core.chars().skip(n - k).collect();
            out.push(s);
        }
        // `Smith 等（2020）`
        if core.is_empty() {
            let latin = tail
                .trim_end_matches("等人")
                .trim_end_matches('等')
                .trim_end();
            out.extend(latin_candidates(latin));
        }
        return out;
    }
    latin_candidates(tail)
}

fn latin_candidates(tail: &str) -> Vec<String> {
    const JOINERS: [&str; 12] = [
        "&", "and", "of", "for", "the", "de", "van", "von", "der", "la", "et", "al.",
    ];
    // Latin names inside CJK prose (`……被Samat等人（2017）`, `Lai与Fyfe（2000）`):
    // the names start after the last Han character or CJK punctuation mark.
    let joiner = |c: char| matches!(c, '与' | '和' | '及');
    let cut = tail
        .char_indices()
        .rev()
        .find(|&(_, c)| (is_han(c) && !joiner(c)) || is_cjk_punctuation(c))
        .map_or(0, |(i, c)| i + c.len_utf8());
    let tail = tail[cut..].replace(joiner, " and ");
    let words: Vec<&str> = tail.split_whitespace().collect();
    let mut start = words.len();
    while start > 0 {
        let w = words[start - 1].trim_matches(|c: char| c == ',' || c == '[' || c == ']');
        let capital = w.chars().next().is_some_and(|c| c.is_uppercase());
        if capital || JOINERS.contains(&w) || w.starts_with('[') && w.ends_with(']') {
            start -= 1;
        } else {
            break;
        }
    }
    let mut out = Vec::new();
    for s in start..words.len() {
        let cand = words[s..].join(" ");
        let first = words[s].trim_matches(|c: char| !c.is_alphanumeric());
        if first.chars().next().is_some_and(|c| c.is_uppercase()) {
            out.push(cand);
        }
    }
    out
}

/// The text after a bracket ends a sentence or clause there: the place of a
/// citation, not of a bracketed word inside the prose.
fn at_citation_position(after: &str) -> bool {
    let a = after.trim_start_matches([' ', '*', '_']);
    a.is_empty() || a.starts_with(['.', '。', ',', '，', ';', '；', ':', '!', '?', '\n', '['])
}

fn overlaps(taken: &[Range<usize>], r: &Range<usize>) -> bool {
    taken.iter().any(|t| t.start < r.end && r.start < t.end)
}

/// CJK text before a year is too often ordinary prose to count as a lost citation.
fn is_han_text(s: &str) -> bool {
    s.chars().any(is_han)
}

fn is_cjk_punctuation(c: char) -> bool {
    ('\u{3000}'..='\u{303f}').contains(&c) || ('\u{ff00}'..='\u{ffef}').contains(&c)
}

fn is_han(c: char) -> bool {
    ('\u{4e00}'..='\u{9fff}').contains(&c) || ('\u{3400}'..='\u{4dbf}').contains(&c)
}

/// The folded surnames of an author text, the first one first; `None` when the
/// text is not author-like (no capitalised or CJK name, digits, too many words).
fn surnames(authors: &str) -> Option<Vec<String>> {
    static ABBREV: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\s*[\[(（][^\])）]{1,20}[\])）]").unwrap());
    let authors = ABBREV.replace_all(authors.trim(), "");
    let authors = authors.trim().trim_matches(['*', '_']);
    let starts_like_name = authors
        .chars()
        .next()
        .is_some_and(|c| c.is_uppercase() || is_han(c));
    if !starts_like_name
        || authors.split_whitespace().count() > 10
        || authors.chars().any(|c| c.is_ascii_digit())
    {
        return None;
    }
    let out: Vec<String> = SURNAME_SPLIT
        .split(authors)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| {
            // A corporate author keeps all its words; a person's last word is the
            // surname (`John Smith`), unless written `Smith J`.
            let words: Vec<&str> = s.split_whitespace().collect();
            if words.len() > 1 && words.iter().skip(1).all(|w| is_initial(w)) {
                fold(words[0])
            } else {
                fold(s)
            }
        })
        .collect();
    (!out.is_empty()).then_some(out)
}

fn is_initial(w: &str) -> bool {
    let letters: Vec<char> = w.chars().filter(|c| c.is_alphabetic()).collect();
    !letters.is_empty() && letters.len() <= 3 && letters.iter().all(|c| c.is_uppercase())
}

#[cfg(test)]
mod tests;
