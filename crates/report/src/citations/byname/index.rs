//! What each reference entry can be cited by when a report cites by name: its
//! authors' surnames and year (author-date styles), its key (`[smith2019]`,
//! `smith2019:`, a BibTeX label) and the source names it states (link text, a
//! name in parentheses, the outlet after a title, the site's domain).

use std::sync::LazyLock;

use regex::Regex;
use unicode_normalization::UnicodeNormalization;

/// Fold a name for matching: diacritics dropped, lower case, typographic quotes
/// and dashes made plain, runs of space collapsed.
pub(crate) fn fold(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut space = false;
    for c in s.nfd() {
        if ('\u{300}'..='\u{36f}').contains(&c) {
            continue;
        }
        let c = match c {
            '’' | '‘' | '`' => '\'',
            '–' | '—' | '‐' => '-',
            c => c,
        };
        if c.is_whitespace() {
            space = !out.is_empty();
            continue;
        }
        if space {
            out.push(' ');
            space = false;
        }
        out.extend(c.to_lowercase());
    }
    out
}

/// What one entry can be cited by.
#[derive(Debug, Default, Clone)]
pub(crate) struct EntryNames {
    pub idx: String,
    /// Folded words of the first author (surname and, for corporate authors, every word).
    pub first_author: Vec<String>,
    /// Folded words of every author.
    pub author_words: Vec<String>,
    /// Folded year as written (`2015a`, `n.d.`, `in press`).
    pub year: Option<String>,
    /// Folded key (`smith-fanconi-2019`).
    pub key: Option<String>,
    /// Folded key with the locator the list gave it (`smith2019 pages 3-5`): a list
    /// of passages has one entry per passage of the same key.
    pub passage: Option<String>,
    /// Folded source names (outlet, link text, name in parentheses, domain label).
    pub names: Vec<String>,
}

static LEAD_LABEL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*(?:>\s*)*(?:[-*+•]\s+)?(?:\\?\[\^?\d{1,4}\\?\]:?|\d{1,4}[.)、．]|【\d{1,4}】|\(\d{1,4}\))?\s*").unwrap()
});
/// A key label opening an entry: `[smith2019]`, `[@smith2019]:`, `**smith2019**:`,
/// `smith2019:`, `@article{smith2019,`, and a passage label `(smith2019 pages 3-5):`.
static KEY_LABEL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:\[@?([^\[\]\s]{2,80})\]:?|\*\*@?([A-Za-z][\w.:\-]{1,80})\*\*\s*:|@?([A-Za-z][\w.\-]*(?:\d|[-_])[\w.\-]*)\s*:\s|@[a-z]+\{([^,\s]{1,80}),|\(([A-Za-z][\w.\-]*\d[\w.\-]*)((?:\s+[A-Za-z.§]{1,12}\s*[\w\-–]{1,20}){0,2})\)\s*:)\s*").unwrap()
});
/// A year standing alone in an entry (`Lancet 2021.`, `2023;14:7`, `Sep 2010.`) when
/// no author-date year pattern matched.
static LOOSE_YEAR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|[\s,.;:(（])((?:19|20)\d{2}[a-z]?)(?:$|[\s,.;:)）])").unwrap()
});
static URL_OR_DOI: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)https?://\S+|doi:\s*\S+|\b10\.\d{4,9}/\S+").unwrap());
/// The year of an author-date entry: `(2015a)`, `（2023）`, `, 2019.`, `(n.d.)`.
static ENTRY_YEAR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)[(（]\s*((?:19|20)\d{2}[a-z]?|n\.\s?d\.|in press|forthcoming)\s*(?:[,，][^)）]{0,30})?[)）]|(?:^|[,.，。]\s*)((?:19|20)\d{2}[a-z]?)\s*[.,，。]").unwrap()
});
static LINK_TEXT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\[([^\[\]]{1,120})\]\(([^)\s]*)").unwrap());
static PAREN_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"[(（]([^()（）\d]{2,40})[)）]|\[([^\[\]\d]{2,40})\](?:[^(]|$)").unwrap()
});
static DOMAIN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)https?://(?:www\d?\.|m\.|en\.)?([^/\s.]+)\.").unwrap());
static INITIALS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(?:[A-Z]\.?-?\s?){1,4}$").unwrap());
static AUTHOR_SPLIT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\s*(?:,|，|、|;|；|&|\band\b|和|与|\bet al\.?|等人?)\s*").unwrap()
});
static NAME_SEPARATORS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\s+[-|–—]\s+|[|｜]|\s*:\s+|\s*：\s*|\.\s+").unwrap());
static PARENS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[(（\[][^()（）\[\]]*[)）\]]").unwrap());

impl EntryNames {
    /// Read an entry from its source line (the raw list line) and the parsed title.
    pub fn from_line(idx: &str, line: &str, title: Option<&str>) -> Self {
        let mut e = EntryNames {
            idx: idx.to_string(),
            ..Default::default()
        };
        let rest = LEAD_LABEL.find(line).map_or(line, |m| &line[m.end()..]);
        let mut body = rest;
        if let Some(c) = KEY_LABEL.captures(rest) {
            let key = (1..=5)
                .find_map(|i| c.get(i))
                .map(|m| m.as_str())
                .unwrap_or("");
            // A bracketed label that is a link text or a number is no key.
            let is_link = rest[c.get(0).unwrap().end()..].starts_with('(');
            if !is_link && !key.chars().all(|ch| ch.is_ascii_digit()) {
                e.key = Some(fold(key));
                if let Some(loc) = c.get(6).filter(|m| !m.as_str().trim().is_empty()) {
                    e.passage = Some(fold(&format!("{key} {}", loc.as_str().trim())));
                }
                body = &rest[c.get(0).unwrap().end()..];
            }
        }
        let plain = body.replace(['*', '_'], "");
        if let Some(c) = ENTRY_YEAR.captures(&plain) {
            let m = c.get(1).or_else(|| c.get(2)).unwrap();
            e.year = Some(fold(m.as_str()).replace(". ", "."));
            let whole = c.get(0).unwrap();
            let authors = plain[..whole.start()].trim();
            // An author part is short: a long lead is a title with a year in it.
            if !authors.is_empty() && authors.chars().count() <= 300 {
                e.read_authors(authors);
            }
        } else {
            // Vancouver and similar styles put the year after the journal; the
            // authors still open the entry, up to the first full stop after them.
            let bare = URL_OR_DOI.replace_all(&plain, " ");
            if let Some(m) = LOOSE_YEAR.captures(&bare).and_then(|c| c.get(1)) {
                e.year = Some(fold(m.as_str()));
                let lead = &bare[..m.start()];
                let authors = lead
                    .match_indices(". ")
                    .map(|(i, _)| &lead[..i])
                    // `A. Smith, B. Lee.` opens with a dotted initial: go past it.
                    .find(|a| !INITIALS.is_match(a.trim()))
                    .unwrap_or(lead)
                    .trim();
                if !authors.is_empty() && authors.chars().count() <= 300 {
                    e.read_authors(authors);
                }
            }
        }
        for c in LINK_TEXT.captures_iter(body) {
            e.push_name(&c[1]);
        }
        for c in PAREN_NAME.captures_iter(&plain) {
            if let Some(m) = c.get(1).or_else(|| c.get(2)) {
                e.push_name(m.as_str());
            }
        }
        for c in DOMAIN.captures_iter(body) {
            e.push_name(&c[1]);
        }
        let title_text = title.unwrap_or("");
        for t in [title_text, &plain] {
            let without_links = LINK_TEXT.replace_all(t, "$1");
            for raw in NAME_SEPARATORS.split(&without_links) {
                let bare = PARENS.replace_all(raw, "");
                for seg in [raw, &bare] {
                    let seg = seg.trim_matches(|c: char| !c.is_alphanumeric());
                    if seg.chars().count() <= 40 {
                        e.push_name(seg);
                    }
                }
            }
        }
        e
    }

    fn read_authors(&mut self, authors: &str) {
        // `World Health Organization [WHO]`: the abbreviation is a name of its own.
        static ABBREV: LazyLock<Regex> =
            LazyLock::new(|| Regex::new(r"[\[(（]([^\])）]{1,20})[\])）]").unwrap());
        for c in ABBREV.captures_iter(authors) {
            self.push_name(&c[1]);
            self.author_words.push(fold(&c[1]));
        }
        let authors = ABBREV.replace_all(authors, " ");
        let mut first = true;
        for chunk in AUTHOR_SPLIT.split(&authors) {
            let chunk = chunk.trim().trim_end_matches('.');
            if chunk.is_empty() || INITIALS.is_match(chunk) {
                continue;
            }
            let words: Vec<String> = chunk
                .split_whitespace()
                .filter(|w| !INITIALS.is_match(w))
                .map(|w| fold(w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')))
                .filter(|w| !w.is_empty())
                .collect();
            if words.is_empty() {
                continue;
            }
            if first {
                self.first_author = words.clone();
                first = false;
            }
            self.author_words.extend(words);
        }
        // A corporate author names the source too (`McKinsey & Company`).
        self.push_name(&authors);
    }

    fn push_name(&mut self, s: &str) {
        let f = fold(s.trim());
        if f.chars().filter(|c| c.is_alphanumeric()).count() >= 2 && !self.names.contains(&f) {
            self.names.push(f);
        }
    }

    /// The name a reader would see in the text when the entry is mentioned: the
    /// first author's surname, a corporate author's words, a CJK name (folded).
    /// Only for entries read as author-date (an author and a year): `None` when
    /// the name is too short to search (Latin under 3 letters, CJK under 2).
    pub fn mention_name(&self) -> Option<String> {
        self.year.as_ref()?;
        // A person's surname: a corporate name of several words ("Stock
        // Assessment", a council) is too often ordinary prose in the text.
        if self.first_author.len() != 1 {
            return None;
        }
        let name = self.first_author.join(" ");
        let han = name.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c));
        let long = if han {
            name.chars().count() >= 2
        } else {
            name.chars().filter(|c| c.is_alphabetic()).count() >= 3
        };
        long.then_some(name)
    }

    /// Whether the folded name `n` names this entry's source.
    pub fn has_name(&self, n: &str) -> bool {
        let squeezed: String = n.chars().filter(|c| !c.is_whitespace()).collect();
        self.names.iter().any(|x| {
            x == n
                || x.chars()
                    .filter(|c| !c.is_whitespace())
                    .eq(squeezed.chars())
        })
    }

    /// Whether cited surnames (folded; the first one first) and a year name this entry.
    pub fn matches_author_year(&self, surnames: &[String], year: &str) -> bool {
        let Some(y) = &self.year else { return false };
        if y != year && !(year.len() == 4 && y.starts_with(year) && y.len() == 5) {
            return false;
        }
        let Some(first) = surnames.first() else {
            return false;
        };
        let first_ok =
            self.first_author.iter().any(|w| w == first) || first_name_is_name(first, self);
        first_ok
            && surnames[1..].iter().all(|s| {
                self.author_words.contains(s)
                        || self.names.contains(s)
                        // `Harbor & Finch Partners`: a corporate name split at `&`.
                        || s.split(' ').all(|w| self.author_words.iter().any(|a| a == w))
            })
    }
}

/// A cited "surname" that is a whole corporate name or its abbreviation (`WHO`).
fn first_name_is_name(first: &str, e: &EntryNames) -> bool {
    e.first_author.len() > 1 && e.first_author.join(" ") == first
        || e.author_words.iter().any(|w| w == first) && e.names.iter().any(|n| n == first)
}
