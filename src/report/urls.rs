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
    l.starts_with("http://") || l.starts_with("https://") || l.starts_with("www.")
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

/// Key for comparing two URLs loosely (scheme, `www.`, trailing slash and case of
/// the host ignored), used to match inline links to reference entries.
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
    let (host, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let host = host.to_ascii_lowercase();
    let host = host.strip_prefix("www.").unwrap_or(&host).to_string();
    let path = path.trim_end_matches('/');
    format!("{host}{path}")
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn url_keys_ignore_scheme_www_and_slash() {
        assert_eq!(url_key("https://www.A.com/x/"), url_key("http://a.com/x"));
        assert_ne!(url_key("https://a.com/x"), url_key("https://a.com/y"));
    }
}
