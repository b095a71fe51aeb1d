//! Recognising pages that are not the cited content: captcha and bot checks,
//! "access denied", login walls, paywall stubs and soft 404s. Such a page must never
//! reach a judge as evidence. Pure functions over the status, title, extracted text
//! and (for HTML) the raw markup.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKind {
    Captcha,
    AccessDenied,
    LoginWall,
    Paywall,
    SoftNotFound,
}

impl BlockKind {
    pub fn as_str(self) -> &'static str {
        match self {
            BlockKind::Captcha => "captcha or bot check",
            BlockKind::AccessDenied => "access denied",
            BlockKind::LoginWall => "login wall",
            BlockKind::Paywall => "paywall",
            BlockKind::SoftNotFound => "soft 404 (page not found)",
        }
    }
}

impl fmt::Display for BlockKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A recognised non-content page: the kind and the evidence that matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockVerdict {
    pub kind: BlockKind,
    pub evidence: String,
}

impl BlockVerdict {
    /// The reason stored with the page, e.g. `captcha or bot check ("verify you are human")`.
    pub fn reason(&self) -> String {
        format!("{} (matched \"{}\")", self.kind, self.evidence)
    }
}

/// Markup that only challenge pages carry: decisive whatever the text length.
const CHALLENGE_MARKUP: &[&str] = &[
    "g-recaptcha",
    "h-captcha",
    "hcaptcha.com/1/api.js",
    "recaptcha/api.js",
    "challenges.cloudflare.com",
    "cf-challenge",
    "cf_chl_opt",
    "/cdn-cgi/challenge-platform",
    "cf-turnstile",
    "geo.captcha-delivery.com",
    "px-captcha",
    "_incapsula_resource",
    "awswaf-captcha",
    "nc_1_wrapper",
];

/// Phrases that mark a page as a challenge, denial, wall or missing page when the
/// page has little else on it. Lowercase; matched against lowercase title + text.
const CAPTCHA_PHRASES: &[&str] = &[
    "verify you are human",
    "verify that you are human",
    "are you a robot",
    "not a robot",
    "checking your browser",
    "checking if the site connection is secure",
    "just a moment...",
    "enable javascript and cookies to continue",
    "unusual traffic from your computer",
    "complete the security check",
    "press & hold",
    "please solve the captcha",
    "captcha",
    "bot detection",
    "human verification",
    "ddos protection by",
    "人机验证",
    "安全验证",
    "滑动验证",
    "请完成验证",
    "访问验证",
    "验证码",
];
const DENIED_PHRASES: &[&str] = &[
    "access denied",
    "access to this page has been denied",
    "403 forbidden",
    "you don't have permission to access",
    "you do not have permission to access",
    "request blocked",
    "request rejected",
    "you have been blocked",
    "sorry, you have been blocked",
    "attention required!",
    "error 1020",
    "the requested url was rejected",
    "访问被拒绝",
    "拒绝访问",
    "禁止访问",
    "您的访问被阻断",
];
const LOGIN_PHRASES: &[&str] = &[
    "sign in to continue",
    "log in to continue",
    "login to continue",
    "please log in",
    "please sign in",
    "you must be logged in",
    "you need to sign in",
    "sign in to view",
    "log in to view",
    "create an account to continue",
    "请先登录",
    "登录后查看",
    "登录后继续",
    "请登录后",
    "登录以继续",
];
const PAYWALL_PHRASES: &[&str] = &[
    "subscribe to continue reading",
    "subscribe to read",
    "subscribers only",
    "for subscribers only",
    "this article is for subscribers",
    "this content is for subscribers",
    "to continue reading, subscribe",
    "already a subscriber",
    "become a subscriber",
    "purchase this article",
    "buy this article",
    "get full access",
    "付费阅读",
    "订阅后阅读",
    "开通会员",
    "购买后阅读",
];
const NOT_FOUND_PHRASES: &[&str] = &[
    "page not found",
    "404 not found",
    "error 404",
    "404 error",
    "page cannot be found",
    "page could not be found",
    "page you requested could not be found",
    "page you are looking for",
    "page you were looking for",
    "page doesn't exist",
    "page does not exist",
    "page no longer exists",
    "this page isn't available",
    "no longer available",
    "content not found",
    "article not found",
    "页面不存在",
    "页面未找到",
    "找不到页面",
    "您访问的页面不存在",
    "页面找不到",
    "内容不存在",
    "文章不存在",
    "已被删除",
];

/// Pages with more readable text than this are judged to be real content even when
/// a phrase matches (a long article may well mention "captcha" or "subscribe").
pub const SHORT_PAGE_CHARS: usize = 1500;

/// Decide whether a fetched page is a non-content page.
///
/// `http_status` is the final response status, `title` the document title, `text` the
/// extracted readable text, `markup` the raw HTML (None for PDF, JSON, text).
pub fn detect(
    http_status: u16,
    title: Option<&str>,
    text: &str,
    markup: Option<&str>,
) -> Option<BlockVerdict> {
    let title_lc = title.unwrap_or("").to_lowercase();
    let text_chars = text.chars().count();
    let short = text_chars <= SHORT_PAGE_CHARS;

    if let Some(markup) = markup {
        // Only the head of the page: challenge scripts sit there, and a 10 MB page
        // should not be lowercased in full.
        let head = lowercase_prefix(markup, 256 * 1024);
        if short {
            if let Some(hit) = CHALLENGE_MARKUP.iter().find(|m| head.contains(*m)) {
                return Some(verdict(BlockKind::Captcha, hit));
            }
        }
    }

    match http_status {
        401 | 407 => {
            return Some(verdict(
                BlockKind::LoginWall,
                &format!("HTTP {http_status}"),
            ))
        }
        403 | 451 => {
            // A 403 is a denial whatever the body says; prefer a more specific kind.
            let body_lc = format!("{title_lc}\n{}", text.to_lowercase());
            if let Some(hit) = find_phrase(&body_lc, CAPTCHA_PHRASES) {
                return Some(verdict(BlockKind::Captcha, hit));
            }
            return Some(verdict(
                BlockKind::AccessDenied,
                &format!("HTTP {http_status}"),
            ));
        }
        _ => {}
    }

    // The title decides regardless of length: "Page not found" is not an article title.
    let ordered: [(BlockKind, &[&str]); 5] = [
        (BlockKind::Captcha, CAPTCHA_PHRASES),
        (BlockKind::AccessDenied, DENIED_PHRASES),
        (BlockKind::SoftNotFound, NOT_FOUND_PHRASES),
        (BlockKind::LoginWall, LOGIN_PHRASES),
        (BlockKind::Paywall, PAYWALL_PHRASES),
    ];
    for (kind, phrases) in ordered {
        // "captcha" alone in a long title (a page about captchas) is still content:
        // titles are only decisive for phrases that read as the whole message.
        if let Some(hit) = find_phrase(&title_lc, phrases) {
            if short || title_is_the_message(&title_lc, hit) {
                return Some(verdict(kind, hit));
            }
        }
    }
    if title_lc.trim() == "404" || title_lc.starts_with("404 ") || title_lc.starts_with("404:") {
        return Some(verdict(BlockKind::SoftNotFound, "404"));
    }
    if !short {
        return None;
    }
    let text_lc = text.to_lowercase();
    for (kind, phrases) in ordered {
        if let Some(hit) = find_phrase(&text_lc, phrases) {
            return Some(verdict(kind, hit));
        }
    }
    None
}

fn verdict(kind: BlockKind, evidence: &str) -> BlockVerdict {
    BlockVerdict {
        kind,
        evidence: evidence.to_string(),
    }
}

fn find_phrase<'a>(haystack: &str, phrases: &[&'a str]) -> Option<&'a str> {
    phrases.iter().copied().find(|p| haystack.contains(p))
}

/// The phrase is a whole segment of the title ("Access Denied",
/// "404 - Page Not Found | Site"), not words inside a real headline.
fn title_is_the_message(title_lc: &str, hit: &str) -> bool {
    title_lc
        .split(['|', '-', '–', '—', ':', '·', '_'])
        .map(|part| part.trim().trim_end_matches(['!', '.', '。', '！']))
        .any(|part| part == hit.trim_end_matches(['!', '.']))
}

fn lowercase_prefix(s: &str, max_bytes: usize) -> String {
    let mut end = s.len().min(max_bytes);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(status: u16, title: &str, text: &str, markup: Option<&str>) -> Option<BlockKind> {
        detect(status, Some(title), text, markup).map(|v| v.kind)
    }

    #[test]
    fn recognises_challenge_pages() {
        assert_eq!(
            kind(
                200,
                "Just a moment...",
                "Checking your browser before accessing",
                None
            ),
            Some(BlockKind::Captcha)
        );
        assert_eq!(
            kind(
                200,
                "Example",
                "Loading",
                Some("<div class=\"g-recaptcha\" data-sitekey=\"x\"></div>")
            ),
            Some(BlockKind::Captcha)
        );
        assert_eq!(
            kind(200, "安全验证", "请完成下方验证后继续访问", None),
            Some(BlockKind::Captcha)
        );
        // A 403 whose body is a bot check is a captcha, not a plain denial.
        assert_eq!(
            kind(403, "Attention", "Please verify you are human", None),
            Some(BlockKind::Captcha)
        );
    }

    #[test]
    fn recognises_denials_walls_paywalls_and_soft_404s() {
        assert_eq!(kind(403, "", "", None), Some(BlockKind::AccessDenied));
        assert_eq!(kind(401, "", "", None), Some(BlockKind::LoginWall));
        assert_eq!(
            kind(
                200,
                "Access Denied",
                "You don't have permission to access this server.",
                None
            ),
            Some(BlockKind::AccessDenied)
        );
        assert_eq!(
            kind(
                200,
                "Example News",
                "Please sign in to continue reading this story.",
                None
            ),
            Some(BlockKind::LoginWall)
        );
        assert_eq!(
            kind(
                200,
                "Markets rally",
                "Markets rallied on Monday. Subscribe to continue reading. Already a subscriber? Log in",
                None
            ),
            Some(BlockKind::Paywall)
        );
        assert_eq!(
            kind(
                200,
                "Page Not Found | Example",
                "Sorry, we couldn't find that.",
                None
            ),
            Some(BlockKind::SoftNotFound)
        );
        assert_eq!(
            kind(200, "404", "Nothing here.", None),
            Some(BlockKind::SoftNotFound)
        );
        assert_eq!(
            kind(200, "出错了", "抱歉，您访问的页面不存在。", None),
            Some(BlockKind::SoftNotFound)
        );
    }

    #[test]
    fn long_articles_mentioning_phrases_are_content() {
        let article = "Researchers studied how captcha systems affect users. ".repeat(60);
        assert_eq!(kind(200, "How captchas work", &article, None), None);
        let paywall_mention = format!(
            "{} Some outlets ask readers to subscribe to continue reading.",
            "Newspapers changed their business models. ".repeat(50)
        );
        assert_eq!(
            kind(200, "Paywalls explained", &paywall_mention, None),
            None
        );
        // Challenge markup in a long real page (a comment form) is not a block either.
        assert_eq!(
            kind(
                200,
                "Blog",
                &article,
                Some("<div class=\"g-recaptcha\"></div>")
            ),
            None
        );
    }

    #[test]
    fn ordinary_pages_pass() {
        assert_eq!(
            kind(
                200,
                "China's AI industry in 2024",
                "The market grew 18% in 2024 according to the ministry.",
                Some("<html><body><p>The market grew</p></body></html>")
            ),
            None
        );
    }

    #[test]
    fn reason_names_kind_and_evidence() {
        let v = detect(200, Some("Just a moment..."), "", None).unwrap();
        assert_eq!(
            v.reason(),
            "captcha or bot check (matched \"just a moment...\")"
        );
    }
}
