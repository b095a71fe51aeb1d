//! The grammar of one reference-list line: its labels (`[3]`, `[^3]`, `3.`, `【3】`),
//! its URL and its title, whatever the list style.

use std::sync::LazyLock;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use regex::Regex;

use crate::urls::{clean_url, is_web_url, loose_links, BARE_URL};

pub(super) static ANCHOR_TAG: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"(?i)^\s*<a\s+[^>]*>\s*</a>\s*"#).unwrap());
/// An inline tag wrapping an entry's label in Markdown with raw HTML
/// (`<span id="ref-1" class="ref-label">[1]</span> Author. Title. URL`): opening
/// tags without a link target before the label, closing tags after it.
pub(super) static LABEL_OPEN_TAG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)^\s*<(?:span|sup|b|strong|em|i|cite|small|label|a)(?:\s+[^>]*)?>\s*"#)
        .unwrap()
});
pub(super) static LABEL_CLOSE_TAG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)^\s*</(?:span|sup|b|strong|em|i|cite|small|label|a)\s*>\s*"#).unwrap()
});
pub(super) static BULLET: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(?:>\s*)*(?:[-*+•]\s+)?").unwrap());
pub(super) static FOOTNOTE_LABEL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\[\^([^\]\s]+)\]:?\s*").unwrap());
pub(super) static BRACKET_LABEL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\\?\[(\d{1,4})\\?\]\s*").unwrap());
pub(super) static LENTICULAR_LABEL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^【(\d{1,4})】\s*").unwrap());
pub(super) static NUMBER_LABEL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(\d{1,4})\\?[.)、．]\s*").unwrap());
pub(super) static PAREN_LABEL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\((\d{1,4})\)\s*").unwrap());
pub(super) static WHOLE_LINK_LABEL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(\d{1,4})\.\s*(.*)$").unwrap());
pub(super) static IEEE_NOISE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\[online\]\.?|available( online)?\s*(at)?\s*:|accessed\s*:?[^.]*\.?|retrieved from:?",
    )
    .unwrap()
});

/// An author-date entry written without a link (`Bloom, N., & Han, R. (2024).
/// Title. *Journal*.`, `McKinsey & Company. (2022). Title.`, `Turnitin (2023).`):
/// names, then the year (or `n.d.`, `in press`) in brackets and a full stop, within
/// the first words.
static AUTHOR_DATE_ENTRY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[\p{L}][^()\[\]\n]{0,200}?\s?\((?:(?:1[89]|20)\d{2}[a-z]?(?:,\s?[^()]{1,30})?|n\.\s?d\.|in press)\)\.\s+\S")
        .unwrap()
});

/// Whether a list line is an author-date entry with no link: it names its work by
/// author and year, and a citation by name may resolve to it.
pub(super) fn author_date_entry(line: &str) -> Option<String> {
    let s = line.trim();
    let s = s[BULLET.find(s).map(|m| m.end()).unwrap_or(0)..].trim_start();
    let plain = inline_parse(s).0;
    let plain = plain.trim();
    if !AUTHOR_DATE_ENTRY.is_match(plain) || plain.chars().count() < 20 {
        return None;
    }
    let t = tidy_title(plain);
    (!t.is_empty()).then_some(t)
}

/// One parsed line of a reference list.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct EntryLine {
    pub labels: Vec<String>,
    pub url: Option<String>,
    pub title: Option<String>,
}

impl EntryLine {
    pub(super) fn url_only(&self) -> bool {
        self.labels.is_empty() && self.url.is_some() && self.title.is_none()
    }
}

/// Plain text and links of one line of Markdown inline content.
pub(super) fn inline_parse(line: &str) -> (String, Vec<(String, String)>) {
    let mut plain = String::new();
    let mut links: Vec<(String, String)> = Vec::new();
    let mut current: Option<(String, String)> = None;
    let mut opts = Options::empty();
    opts.insert(Options::ENABLE_STRIKETHROUGH);
    for ev in Parser::new_ext(line, opts) {
        match ev {
            Event::Start(Tag::Link { dest_url, .. }) => {
                current = Some((dest_url.to_string(), String::new()));
            }
            Event::End(TagEnd::Link) => {
                if let Some(l) = current.take() {
                    plain.push_str(&l.1);
                    links.push(l);
                }
            }
            Event::Text(t) | Event::Code(t) => match current.as_mut() {
                Some(l) => l.1.push_str(&t),
                None => plain.push_str(&t),
            },
            Event::SoftBreak | Event::HardBreak => plain.push(' '),
            _ => {}
        }
    }
    (plain, links)
}

/// Parse one line of a reference list.
pub(crate) fn parse_entry_line(line: &str) -> Option<EntryLine> {
    let mut s = line.trim();
    // `<a id="ref3"></a>` anchors and list bullets.
    while let Some(m) = ANCHOR_TAG.find(s) {
        s = &s[m.end()..];
    }
    s = &s[BULLET.find(s).map(|m| m.end()).unwrap_or(0)..];
    while let Some(m) = ANCHOR_TAG.find(s) {
        s = &s[m.end()..];
    }
    let mut wrapped = false;
    while let Some(m) = LABEL_OPEN_TAG.find(s) {
        if m.as_str().to_ascii_lowercase().contains("href") {
            break;
        }
        s = &s[m.end()..];
        wrapped = true;
    }
    if s.is_empty() {
        return None;
    }
    let mut labels = Vec::new();
    if let Some(c) = FOOTNOTE_LABEL.captures(s) {
        labels.push(c[1].to_string());
        s = &s[c.get(0).map(|m| m.end()).unwrap_or(0)..];
    } else if let Some(c) = LENTICULAR_LABEL.captures(s) {
        labels.push(c[1].to_string());
        s = &s[c.get(0).map(|m| m.end()).unwrap_or(0)..];
    } else if BRACKET_LABEL.is_match(s) {
        while let Some(c) = BRACKET_LABEL.captures(s) {
            labels.push(c[1].to_string());
            s = &s[c.get(0).map(|m| m.end()).unwrap_or(0)..];
        }
    } else if let Some(c) = NUMBER_LABEL.captures(s) {
        labels.push(c[1].to_string());
        s = &s[c.get(0).map(|m| m.end()).unwrap_or(0)..];
    } else if let Some(c) = PAREN_LABEL.captures(s) {
        labels.push(c[1].to_string());
        s = &s[c.get(0).map(|m| m.end()).unwrap_or(0)..];
    }
    while wrapped && !labels.is_empty() {
        let Some(m) = LABEL_CLOSE_TAG.find(s) else {
            break;
        };
        s = &s[m.end()..];
    }
    // Links whose target holds spaces, which the Markdown parser refuses.
    let mut rest = s.to_string();
    let mut loose = Vec::new();
    if rest.contains("](") {
        let found: Vec<_> = loose_links(s)
            .into_iter()
            .filter(|l| l.url.contains(char::is_whitespace))
            .collect();
        if !found.is_empty() {
            let mut out = String::new();
            let mut last = 0;
            for l in &found {
                out.push_str(crate::slice::cut(s, last, l.range.start));
                out.push_str(&l.text.replace(['[', ']'], ""));
                out.push(' ');
                last = l.range.end;
            }
            out.push_str(crate::slice::from(s, last));
            rest = out;
            loose = found.into_iter().map(|l| (l.url, l.text)).collect();
        }
    }
    let (plain, mut links) = inline_parse(&rest);
    links.extend(loose);
    let mut title_from_link = None;
    // A whole entry wrapped in one link: `[3. Title](url)`.
    if labels.is_empty() {
        if let Some((_, text)) = links.first() {
            let t = text.trim();
            if let Some(c) = WHOLE_LINK_LABEL.captures(t) {
                if plain.trim_start().starts_with(t) {
                    labels.push(c[1].to_string());
                    title_from_link = Some(c[2].trim().to_string());
                }
            }
        }
    }
    let link_url = links
        .iter()
        .find(|(u, _)| is_web_url(u))
        .map(|(u, t)| (clean_url(u), t.clone()));
    // A full http(s) address beats a bare `www.site` mention (often the site name).
    let bare = BARE_URL
        .find_iter(&plain)
        .find(|m| !m.as_str().to_ascii_lowercase().starts_with("www."))
        .or_else(|| BARE_URL.find(&plain))
        .map(|m| clean_url(m.as_str()));
    let url = link_url.as_ref().map(|(u, _)| u.clone()).or(bare.clone());
    // Title: the link's text when it is not itself a URL, else the plain text with
    // URLs and list boilerplate removed.
    let title = title_from_link.or_else(|| {
        if let Some((_, t)) = &link_url {
            let t = t.trim();
            let others: String = plain.replace(t, "");
            let others = tidy_title(&strip_urls(&others));
            if !t.is_empty() && !is_web_url(t) && !t.chars().all(|c| c.is_ascii_digit()) {
                if others.chars().count() > t.chars().count() {
                    return Some(others);
                }
                return Some(t.to_string());
            }
            let o = others;
            return (!o.is_empty()).then_some(o);
        }
        let t = tidy_title(&strip_urls(&plain));
        (!t.is_empty()).then_some(t)
    });
    let title = title.filter(|t| !t.is_empty() && !is_web_url(t));
    if labels.is_empty() && url.is_none() {
        return None;
    }
    Some(EntryLine { labels, url, title })
}

pub(super) fn strip_urls(s: &str) -> String {
    BARE_URL.replace_all(s, " ").into_owned()
}

pub(super) static RETRIEVED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)[,，]?\s*(檢索日期|检索日期|访问日期|訪問日期|accessed( on)?|retrieved( on)?)\s*[:：]?[^\]]*?\d{4}\s*[,，]?\s*$").unwrap()
});

pub(super) fn tidy_title(s: &str) -> String {
    let s = IEEE_NOISE.replace_all(s, " ");
    let s = RETRIEVED.replace(s.trim(), "");
    let collapsed: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    collapsed
        .trim_matches(|c: char| {
            c.is_whitespace()
                || matches!(
                    c,
                    '-' | '–' | '—' | '|' | ':' | ',' | ';' | '，' | '：' | '(' | ')' | '[' | ']'
                )
        })
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_styles() {
        let e = parse_entry_line("<a id=\"ref9\"></a> [9] ResearchGate (2024). Memory loop. https://www.researchgate.net/figure/x_fig2").unwrap();
        assert_eq!(e.labels, vec!["9"]);
        assert_eq!(
            e.url.as_deref(),
            Some("https://www.researchgate.net/figure/x_fig2")
        );
        assert_eq!(
            e.title.as_deref(),
            Some("ResearchGate (2024). Memory loop.")
        );

        let e = parse_entry_line("[2] [13] https://a.org/p").unwrap();
        assert_eq!(e.labels, vec!["2", "13"]);
        assert_eq!(e.url.as_deref(), Some("https://a.org/p"));
        assert_eq!(e.title, None);

        let e = parse_entry_line("3. Stock Assessment \\- MDPI, 檢索日期：4月 24, 2025， [https://www.mdpi.com/a\\_b](https://www.mdpi.com/a\\_b)").unwrap();
        assert_eq!(e.labels, vec!["3"]);
        assert_eq!(e.url.as_deref(), Some("https://www.mdpi.com/a_b"));
        assert!(e.title.unwrap().starts_with("Stock Assessment - MDPI"));

        let e = parse_entry_line("- [Tangbao - Wikipedia](https://en.wikipedia.org/wiki/Tangbao)")
            .unwrap();
        assert!(e.labels.is_empty());
        assert_eq!(e.title.as_deref(), Some("Tangbao - Wikipedia"));

        let e = parse_entry_line(
            "[4] \"Deep Nets,\" Example Site. [Online]. Available: https://ex.com/deep.",
        )
        .unwrap();
        assert_eq!(e.url.as_deref(), Some("https://ex.com/deep"));
        assert_eq!(e.title.as_deref(), Some("\"Deep Nets,\" Example Site."));

        let e = parse_entry_line("[5\\. A Whole Entry Title](https://ex.com/w)").unwrap();
        assert_eq!(e.labels, vec!["5"]);
        assert_eq!(e.title.as_deref(), Some("A Whole Entry Title"));

        let e = parse_entry_line("[^1_4]: https://ex.com/f").unwrap();
        assert_eq!(e.labels, vec!["1_4"]);

        assert_eq!(parse_entry_line("[References listed in the report]"), None);
    }

    #[test]
    fn author_date_entries_without_links() {
        for l in [
            "Okafor, T. (2021). Rivers and their towns. *Journal of Places*, 4, 1-9.",
            "- Lindqvist, A., & Baptiste, R. (2022a). A second look at towns. Press.",
            "Harbour Institute. (2019). Annual survey of ports. Harbour Institute.",
            "Meridian Group (n.d.). Port statistics. Meridian Group.",
            "Okafor, T. (2023, March 4). A field note. *Town Weekly*.",
        ] {
            assert!(author_date_entry(l).is_some(), "{l}");
        }
        for l in [
            "See the appendix for the full list (2021).",
            "In (2020) the law changed, and nobody cited it.",
            "The survey (2021)",
            "Okafor T. Rivers and their towns. Journal of Places 2021;4:1-9.",
        ] {
            assert!(author_date_entry(l).is_none(), "{l}");
        }
    }
}
