//! Finding and cleaning URLs in report text.

use std::sync::LazyLock;

use regex::Regex;

/// A bare URL in running text. Raw CJK characters are allowed inside (real reports
/// emit them unencoded), full-width punctuation and brackets end it.
pub(crate) static BARE_URL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)(?-u:\b)(?:https?://|www\.)[^\s<>"'`\[\]{}|\\^（）【】，。、；：！？「」《》]+"#,
    )
    .unwrap()
});

/// Whether a string is an absolute http(s) URL (or a `www.` address).
pub(crate) fn is_web_url(s: &str) -> bool {
    let l = s.trim_start().to_ascii_lowercase();
    l.starts_with("http://")
        || l.starts_with("https://")
        || l.starts_with("www.")
        || identifier_url(s.trim_start()).is_some()
}

/// Whether link text only names its target (the URL itself, or the target's host
/// as in `[docs.example.com](https://docs.example.com/a)`): such a link is a
/// citation marker, and its text is no part of the sentence.
pub(crate) fn text_names_target(text: &str, url: &str) -> bool {
    if is_web_url(text) {
        return true;
    }
    let t = text.trim().to_ascii_lowercase();
    let t = t.strip_prefix("www.").unwrap_or(&t);
    // The host: after the scheme, before the path, port or credentials.
    let rest = url.trim().split_once("://").map(|(_, r)| r);
    let host = rest
        .and_then(|r| r.split(['/', '?', '#']).next())
        .map(|h| h.rsplit('@').next().unwrap_or(h))
        .map(|h| h.split(':').next().unwrap_or(h).to_ascii_lowercase());
    match host {
        Some(h) if t.contains('.') => {
            let h = h.strip_prefix("www.").unwrap_or(&h);
            h == t || h.ends_with(&format!(".{t}"))
        }
        _ => false,
    }
}

/// Whether a link target is a file the user uploaded to the chat or one the
/// assistant wrote in its sandbox (`file://file-…`, `file:///…`,
/// `sandbox:/mnt/data/…`): a citation of a source no judge can open.
pub fn is_uploaded_file(s: &str) -> bool {
    let l = s.trim_start().trim_start_matches('<').to_ascii_lowercase();
    l.starts_with("file:") || l.starts_with("sandbox:")
}

/// Whether a link target can stand for a source: a web address, or an uploaded
/// file (a source, though an unreadable one).
pub(crate) fn is_citable_url(s: &str) -> bool {
    is_web_url(s) || is_uploaded_file(s)
}

/// The web address of a scholarly identifier written as a link target:
/// `doi:10.1000/xyz` -> `https://doi.org/10.1000/xyz`, `arXiv:2401.00001` ->
/// `https://arxiv.org/abs/2401.00001`.
fn identifier_url(s: &str) -> Option<String> {
    let (scheme, rest) = s.split_once(':')?;
    let rest = rest.trim_start_matches('/').trim();
    match scheme.to_ascii_lowercase().as_str() {
        "doi" if rest.starts_with("10.") && rest.contains('/') => {
            Some(format!("https://doi.org/{rest}"))
        }
        "arxiv" if rest.starts_with(|c: char| c.is_ascii_digit()) || rest.contains('/') => {
            Some(format!("https://arxiv.org/abs/{rest}"))
        }
        _ => None,
    }
}

/// Clean a URL as found: drop Markdown backslash escapes, angle brackets, and
/// trailing punctuation that belongs to the sentence (a closing parenthesis stays
/// when the URL opened one, as in Wikipedia addresses).
pub(crate) fn clean_url(raw: &str) -> String {
    let mut s = raw
        .trim()
        .trim_start_matches('<')
        .trim_end_matches('>')
        .to_string();
    if let Some(web) = identifier_url(&s) {
        s = web;
    }
    if s.contains('\\') {
        let mut out = String::with_capacity(s.len());
        let mut chars = s.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\\' {
                if let Some(&n) = chars.peek() {
                    if n.is_ascii_punctuation() {
                        out.push(n);
                        chars.next();
                        continue;
                    }
                }
            }
            out.push(c);
        }
        s = out;
    }
    while let Some(last) = s.chars().last() {
        let strip = match last {
            '.' | ',' | ';' | ':' | '!' | '?' | '\'' | '"' | '*' | '_' | '。' | '，' | '；'
            | '：' | '）' | '】' | '》' | '、' => true,
            ')' => s.matches('(').count() < s.matches(')').count(),
            ']' => s.matches('[').count() < s.matches(']').count(),
            _ => false,
        };
        if strip {
            s.pop();
        } else {
            break;
        }
    }
    s
}

/// Query parameters that only track where a click came from; they never change
/// the page a reader (or a judge) gets.
const TRACKING_PARAMS: &[&str] = &[
    "fbclid",
    "gclid",
    "dclid",
    "gclsrc",
    "msclkid",
    "yclid",
    "igshid",
    "mc_cid",
    "mc_eid",
    "_ga",
    "_gl",
    "_hsenc",
    "_hsmi",
    "mkt_tok",
    "oly_anon_id",
    "oly_enc_id",
    "vero_id",
    "wickedid",
    "srsltid",
    "spm",
    "share_source",
    "share_medium",
    "ved",
    "ei",
];

fn is_tracking_param(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.starts_with("utm_") || TRACKING_PARAMS.contains(&n.as_str())
}

/// Key for comparing two URLs as the page a judge would read: scheme, `www.`, host
/// case, the fragment, tracking parameters (`utm_*`, `fbclid`, ...) and a trailing
/// slash do not matter. Used to match inline links to reference entries and to
/// merge repeated entries.
pub(crate) fn url_key(url: &str) -> String {
    let u = url.trim();
    let lower = u.to_ascii_lowercase();
    let rest = if lower.starts_with("https://") {
        &u[8..]
    } else if lower.starts_with("http://") {
        &u[7..]
    } else {
        u
    };
    let rest = match rest.find('#') {
        Some(i) => &rest[..i],
        None => rest,
    };
    let (rest, query) = match rest.find('?') {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let (host, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let host = host.to_ascii_lowercase();
    let host = host.strip_prefix("www.").unwrap_or(&host);
    let host = host
        .strip_suffix(":443")
        .or_else(|| host.strip_suffix(":80"))
        .unwrap_or(host);
    let path = path.trim_end_matches('/');
    let kept: Vec<&str> = query
        .unwrap_or("")
        .split(['&', ';'])
        .filter(|p| !p.is_empty())
        .filter(|p| !is_tracking_param(p.split('=').next().unwrap_or("")))
        .collect();
    if kept.is_empty() {
        format!("{host}{path}")
    } else {
        format!("{host}{path}?{}", kept.join("&"))
    }
}

/// Whether a URL points at a picture file (a link to an image is not a source).
pub(crate) fn is_image_url(url: &str) -> bool {
    let key = url_key(url).to_ascii_lowercase();
    let path = key.split('?').next().unwrap_or("");
    [
        ".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg", ".bmp", ".tif", ".tiff", ".avif",
    ]
    .iter()
    .any(|ext| path.ends_with(ext))
}

/// A Markdown link `[text](http...)` that the Markdown parser refused (its target
/// holds spaces, as text fragments `#:~:text=a b` do): byte range of the whole
/// link, its text and its target.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LooseLink {
    pub range: std::ops::Range<usize>,
    pub text: String,
    pub url: String,
}

/// Find `[text](http...)` links in one piece of text, taking the target whole up
/// to the parenthesis that closes the one after `]` (parentheses inside the target,
/// as in `Sturgeon_(fish)` or `#:~:text=a (b) c`, are balanced), never across a
/// line break. The text may hold balanced brackets (`[Report [PDF]](...)`).
pub(crate) fn loose_links(s: &str) -> Vec<LooseLink> {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(rel) = s[from..].find("](") {
        let close_bracket = from + rel;
        let url_start = close_bracket + 2;
        from = url_start;
        let tail = &s[url_start..];
        let tl = tail.get(..8).unwrap_or(tail).to_ascii_lowercase();
        if !(tl.starts_with("http://") || tl.starts_with("https://")) {
            continue;
        }
        // The opening bracket, balancing nested brackets, on the same line.
        let mut depth = 0usize;
        let mut open = None;
        for (i, c) in s[..close_bracket].char_indices().rev() {
            match c {
                ']' => depth += 1,
                '[' if depth == 0 => {
                    open = Some(i);
                    break;
                }
                '[' => depth -= 1,
                '\n' => break,
                _ => {}
            }
        }
        let Some(open) = open else { continue };
        // The closing parenthesis, balancing parentheses inside the target.
        let mut depth = 1usize;
        let mut end = None;
        for (i, &b) in bytes.iter().enumerate().skip(url_start) {
            match b {
                b'(' => depth += 1,
                b')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(i);
                        break;
                    }
                }
                b'\n' => break,
                _ => {}
            }
        }
        let Some(end) = end else { continue };
        // A link around an earlier one (`[![](img)](url)`) replaces it: callers
        // slice the text between links, so ranges must be disjoint and in order.
        while out
            .last()
            .is_some_and(|l: &LooseLink| l.range.start >= open)
        {
            out.pop();
        }
        if out.last().is_some_and(|l| l.range.end > open) {
            from = end + 1;
            continue;
        }
        out.push(LooseLink {
            range: open..end + 1,
            text: s[open + 1..close_bracket].to_string(),
            url: s[url_start..end].trim().to_string(),
        });
        from = end + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_text_that_names_its_host() {
        assert!(text_names_target(
            "docs.example.com",
            "https://docs.example.com/a"
        ));
        assert!(text_names_target(
            "example.com",
            "https://www.docs.example.com/a"
        ));
        assert!(text_names_target("https://e.org/x", "https://e.org/x"));
        assert!(!text_names_target("the docs", "https://docs.example.com/a"));
        assert!(!text_names_target(
            "other.org",
            "https://docs.example.com/a"
        ));
    }

    #[test]
    fn loose_links_never_overlap() {
        let t = "[![](https://e.org/badge.png)](https://e.org/home) then [a](https://e.org/a)";
        let l = loose_links(t);
        assert_eq!(
            l.len(),
            2,
            "{:?}",
            l.iter().map(|x| &x.range).collect::<Vec<_>>()
        );
        assert_eq!(l[0].url, "https://e.org/home");
        assert!(l.windows(2).all(|w| w[0].range.end <= w[1].range.start));
    }

    #[test]
    fn trailing_punctuation_and_escapes_are_removed() {
        assert_eq!(clean_url("https://a.com/x."), "https://a.com/x");
        assert_eq!(
            clean_url("https://a.com/Rice\\_Ambo\\_2013.pdf"),
            "https://a.com/Rice_Ambo_2013.pdf"
        );
        assert_eq!(
            clean_url("https://en.wikipedia.org/wiki/A_(b))."),
            "https://en.wikipedia.org/wiki/A_(b)"
        );
        assert_eq!(clean_url("<https://a.com/>"), "https://a.com/");
    }

    #[test]
    fn bare_urls_keep_cjk_but_stop_at_fullwidth_punctuation() {
        let t = "见 https://zh.wikipedia.org/wiki/南京汤包，以及其他";
        let m = BARE_URL.find(t).unwrap();
        assert_eq!(m.as_str(), "https://zh.wikipedia.org/wiki/南京汤包");
    }

    #[test]
    fn url_keys_ignore_fragment_tracking_and_host_case() {
        assert_eq!(
            url_key("https://WWW.Example.com/a/?utm_source=chatgpt.com#x"),
            url_key("http://example.com/a")
        );
        assert_eq!(
            url_key("https://e.com/p?id=3&utm_medium=mail&fbclid=z"),
            url_key("https://e.com/p?id=3")
        );
        assert_ne!(
            url_key("https://e.com/p?id=3"),
            url_key("https://e.com/p?id=4")
        );
        assert_ne!(url_key("https://e.com/Path"), url_key("https://e.com/path"));
        assert!(is_image_url("https://e.com/photos/a.JPG?w=300"));
        assert!(!is_image_url("https://e.com/photos/a.html"));
    }

    #[test]
    fn loose_links_balance_parentheses_and_brackets() {
        let t = "x ([delta](https://e.org/d#:~:text=over 300 (incl. pelicans) nest)). y";
        let l = loose_links(t);
        assert_eq!(l.len(), 1);
        assert_eq!(
            l[0].url,
            "https://e.org/d#:~:text=over 300 (incl. pelicans) nest"
        );
        assert_eq!(l[0].text, "delta");
        assert_eq!(
            &t[l[0].range.clone()],
            "[delta](https://e.org/d#:~:text=over 300 (incl. pelicans) nest)"
        );
        let l =
            loose_links("[Report [PDF]](https://e.org/a b) and [c](#x) [d](https://e.org/(open");
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].text, "Report [PDF]");
        assert_eq!(l[0].url, "https://e.org/a b");
    }

    #[test]
    fn url_keys_ignore_scheme_www_and_slash() {
        assert_eq!(url_key("https://www.A.com/x/"), url_key("http://a.com/x"));
        assert_ne!(url_key("https://a.com/x"), url_key("https://a.com/y"));
    }

    #[test]
    fn scholarly_identifiers_are_web_addresses() {
        assert!(is_web_url("doi:10.1000/xyz123"));
        assert_eq!(
            clean_url("doi:10.1000/xyz123"),
            "https://doi.org/10.1000/xyz123"
        );
        assert_eq!(
            clean_url("arXiv:2401.00001"),
            "https://arxiv.org/abs/2401.00001"
        );
        assert!(!is_web_url("doi:not-a-doi"));
        assert!(!is_web_url("mailto:someone@example.org"));
    }
}
