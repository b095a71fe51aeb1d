//! Text cues both front ends and the later stages recognise: a heading that opens
//! a reference list, a numbered caption line, a decorative image. They live below
//! the front ends so that block building and analysis share one definition.

use std::sync::LazyLock;

use regex::Regex;

static REF_HEADING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^(key |main |selected |full |all |primary |cited |useful |additional |web )?(references?|sources?|citations?|works cited|works consulted|bibliography|reference list|reference links|source links|source list|cited works|cited sources|(sources?|references?|citations?) (and|&) (references?|sources?|citations?|notes|links|further reading)|notes (and|&) references|sources cited|sources used|sources consulted|footnotes|endnotes|further reading|image sources|image credits|picture credits|photo credits|figure sources|image references|参考文献|参考资料|参考链接|参考来源|参考网址|参考与引用|引用的著作|引用文献|引用清单|参考清单|文献清单|引用列表|参考列表|引用来源|引用资料|关键引用|主要引用|引用|来源|资料来源|信息来源|数据来源|图片来源|图片出处|图源|文献|注释|脚注|參考文獻|參考資料|參考來源|引用來源|關鍵引用|出典|参考リンク|引用文献|참고\s?문헌|참고\s?자료|출처|referencias|fuentes|bibliografía|bibliografia|références|sources et références|bibliographie|quellen|quellenverzeichnis|literatur|literaturverzeichnis|einzelnachweise|referências|fontes|riferimenti|fonti|источники|литература|список литературы|ссылки)( list)?( \(\d+\))?(\s*[(（\[【]\s*(excerpts?|partial|partial list|selected|selection|abridged|shortened|condensed|truncated|sample|summary|continued|cont\.?|key|main|full|complete|full list|complete list|\d+ (entries|items|sources|references)|节选|摘录|部分|精选|选录|节录|摘要|选摘|部分列表|節選|摘錄|抜粋|一部)\s*[)）\]】])?$",
    )
    .unwrap()
});
/// A heading's trailing remark in brackets, at most 80 characters long.
static TRAILING_REMARK: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^(.+?)\s*[(（]([^()（）]{1,80})[)）]$").unwrap());
static HEADING_NUMBERING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^((\d+(\.\d+)*|[ivxlc]+|[a-z]|[一二三四五六七八九十]+)[.)、:：]?\s+|第[一二三四五六七八九十\d]+[章节部分]\s*)").unwrap()
});
/// A numbered caption line: `Figure 2: ...`, `Fig. 3.`, `图1：...`, `**图 4** ...`.
pub(crate) static CAPTION_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^[*_\s]*(?:figure|fig\.?|图|圖|chart|图表|exhibit|插图)\s*(\d{1,3}(?:[.\-]\d{1,3})?)[*_\s]*(?:[:：.．、|\-—–]|\s)")
        .unwrap()
});
static DECORATIVE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(^|[^a-z])(logo|logos|badge|badges|favicon|icon|icons|avatar|spacer|pixel|emoji|sprite|tracking)([^a-z]|$)").unwrap()
});
static BADGE_HOSTS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^https?://(img\.shields\.io|shields\.io|badge\.fury\.io|badgen\.net|travis-ci\.|codecov\.io|api\.netlify\.com)").unwrap()
});

/// Whether a heading or label line names a reference list ("References",
/// "## 5. Sources:", "**参考文献**"). Called on every paragraph, so it rejects long
/// text before any regex; `REF_HEADING` is case-insensitive, so nothing is lowercased.
pub(crate) fn is_reference_heading(text: &str) -> bool {
    let t = text
        .trim()
        .trim_matches(|c: char| c == '*' || c == '_' || c == '#' || c.is_whitespace());
    // Numbering is at most a few dozen bytes; a label is at most 40 characters.
    if t.is_empty() || t.len() > 40 * 4 + 64 {
        return false;
    }
    // A pictograph before the words ("📚 参考文献", "🔗 Sources").
    let t = t.trim_start_matches(|c: char| {
        !(c.is_alphanumeric() || c.is_whitespace() || "([{【（<".contains(c))
    });
    let t = HEADING_NUMBERING.replace(t.trim_start(), "");
    let n = t
        .trim()
        .trim_end_matches([':', '：', '.'])
        .trim_matches(|c: char| c == '*' || c == '_')
        .trim();
    if !n.is_empty() && n.chars().count() <= 40 && REF_HEADING.is_match(n) {
        return true;
    }
    // A reference heading with a remark in brackets after it ("References (to move
    // to the appendix)", "引用清单（定稿时改为期刊格式）"): the head alone decides.
    match TRAILING_REMARK.captures(n) {
        Some(c) => {
            let head = c[1].trim();
            !head.is_empty() && head.chars().count() <= 40 && REF_HEADING.is_match(head)
        }
        None => false,
    }
}

/// Whether a heading opens a source section, read more widely than
/// [`is_reference_heading`]: also a reference heading followed by any qualifier after
/// a bracket, colon, dash or comma ("Sources: what this drew on", "References —
/// a selection"). The self-check counts cited units under such a heading; the
/// parser keeps the narrower rule for taking a list.
pub(crate) fn is_source_section_heading(text: &str) -> bool {
    if is_reference_heading(text) {
        return true;
    }
    let t = text
        .trim()
        .trim_matches(|c: char| c == '*' || c == '_' || c == '#' || c.is_whitespace());
    if t.chars().count() > 80 {
        return false;
    }
    let cut = t
        .find(['(', '（', '[', '【', ':', '：', '—', '–', ',', '，'])
        .or_else(|| t.find(" - "));
    match cut {
        Some(i) if i > 0 => is_reference_heading(&t[..i]),
        _ => false,
    }
}

/// Logos, badges, icons and tracking pixels are not figures.
pub(crate) fn is_decorative(src: &str, alt: &str, width: Option<u32>, height: Option<u32>) -> bool {
    if BADGE_HOSTS.is_match(src) {
        return true;
    }
    // A `data:` URI has no file name (its payload is not one).
    let name = if src.trim_start().starts_with("data:") {
        ""
    } else {
        src.rsplit('/').next().unwrap_or(src)
    };
    let name = name.split(['?', '#']).next().unwrap_or(name);
    if DECORATIVE.is_match(name) || DECORATIVE.is_match(alt.trim()) {
        return true;
    }
    match (width, height) {
        (Some(w), _) if w <= 2 => true,
        (_, Some(h)) if h <= 2 => true,
        (Some(w), Some(h)) if w <= 48 && h <= 48 => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_recognised() {
        for h in [
            "References",
            "## **参考文献**",
            "Key Citations",
            "7. Sources",
            "引用的著作",
            "Works Cited:",
            "## References (Excerpt)",
            "Sources (partial)",
            "参考资料（节选）",
            "Bibliography [selected]",
            "References (to move to the appendix before submitting)",
            "引用清单（定稿时改为期刊格式）",
            "## Sources (in the order first cited)",
            "### 📚 参考文献（Bibliography）",
        ] {
            assert!(is_reference_heading(h), "{h}");
        }
        for h in [
            "Data Sources and Collection",
            "Introduction",
            "Sources of uncertainty in estimates",
            "Methods (and their sources)",
        ] {
            assert!(!is_reference_heading(h), "{h}");
            assert!(!is_source_section_heading(h), "{h}");
        }
        for h in [
            "Sources: what this briefing drew on",
            "References — a selection of web pages",
            "## 参考资料：网页",
        ] {
            assert!(
                is_source_section_heading(h) && !is_reference_heading(h),
                "{h}"
            );
        }
        assert!(!is_source_section_heading("References to the 1998 flood"));
    }

    #[test]
    fn decorative_images() {
        assert!(is_decorative(
            "https://img.shields.io/badge/x",
            "",
            None,
            None
        ));
        assert!(is_decorative("assets/company-logo.png", "", None, None));
        assert!(is_decorative("t.gif", "", Some(1), Some(1)));
        assert!(!is_decorative(
            "images/silicon_wafer.png",
            "Silicon wafer",
            None,
            None
        ));
    }
}
