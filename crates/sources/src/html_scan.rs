//! Linear-time HTML scanning without building a tree: removing heavy non-text markup
//! before the readability pass, and whole-page text for pages too large for it (or
//! where it finds no article). A 2 MB page takes a few milliseconds.

use std::borrow::Cow;

/// Elements whose content is never text a reader sees.
const RAW_SKIP: &[&str] = &["script", "style", "noscript", "template", "svg", "math"];

/// Elements dropped with their content in the whole-page text (boilerplate).
const BOILERPLATE: &[&str] = &[
    "nav", "header", "footer", "aside", "form", "button", "iframe", "select", "textarea", "head",
    "menu", "dialog", "canvas", "object", "embed", "video", "audio", "picture",
];
const SKIPPED_ROLES: &[&str] = &[
    "navigation",
    "banner",
    "contentinfo",
    "search",
    "dialog",
    "menu",
    "menubar",
    "complementary",
];
const BLOCK: &[&str] = &[
    "p",
    "div",
    "section",
    "article",
    "main",
    "br",
    "hr",
    "ul",
    "ol",
    "dl",
    "dt",
    "dd",
    "blockquote",
    "pre",
    "table",
    "thead",
    "tbody",
    "tfoot",
    "figure",
    "figcaption",
    "address",
    "details",
    "summary",
    "caption",
    "body",
    "html",
];
const VOID: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track",
    "wbr", "param",
];

/// Find `needle` (ASCII, lowercase) in `hay` from `from`, ignoring ASCII case.
fn find_ci(hay: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    let first = needle[0];
    let mut i = from;
    while i + needle.len() <= hay.len() {
        let rel = hay[i..]
            .iter()
            .position(|&b| b.to_ascii_lowercase() == first)?;
        i += rel;
        if i + needle.len() <= hay.len() && hay[i..i + needle.len()].eq_ignore_ascii_case(needle) {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// End (exclusive) of the tag starting at `start` (`<`), honouring quoted attribute
/// values; the end of input when unterminated.
fn tag_end(bytes: &[u8], start: usize) -> usize {
    let mut quote: Option<u8> = None;
    let mut i = start + 1;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None if b == b'"' || b == b'\'' => quote = Some(b),
            None if b == b'>' => return i + 1,
            None => {}
        }
        i += 1;
    }
    bytes.len()
}

/// Lowercase tag name after `<` or `</`, and whether it is a closing tag.
fn tag_name(bytes: &[u8], start: usize) -> (Cow<'_, str>, bool) {
    let mut i = start + 1;
    let closing = bytes.get(i) == Some(&b'/');
    if closing {
        i += 1;
    }
    let name_end = bytes[i..]
        .iter()
        .position(|b| !(b.is_ascii_alphanumeric() || *b == b'-' || *b == b':'))
        .map_or(bytes.len(), |p| i + p);
    let raw = &bytes[i..name_end];
    // ASCII by construction, so this cannot fail.
    let name = std::str::from_utf8(raw).unwrap_or("");
    let name = if raw.iter().any(u8::is_ascii_uppercase) {
        Cow::Owned(name.to_ascii_lowercase())
    } else {
        Cow::Borrowed(name)
    };
    (name, closing)
}

/// Where the content of a raw element opened at `content_from` ends: the start of its
/// closing tag and the position after it.
fn skip_raw(bytes: &[u8], content_from: usize, name: &str) -> (usize, usize) {
    let closing = format!("</{name}");
    match find_ci(bytes, content_from, closing.as_bytes()) {
        Some(at) => (at, tag_end(bytes, at)),
        None => (bytes.len(), bytes.len()),
    }
}

/// The page without comments and without script, style, noscript, template, svg and
/// math elements. Borrowed when there is nothing to remove.
pub fn strip_heavy(html: &str) -> Cow<'_, str> {
    let bytes = html.as_bytes();
    let mut out: Option<String> = None;
    let mut copied_to = 0;
    let mut i = 0;
    while let Some(rel) = bytes[i..].iter().position(|&b| b == b'<') {
        let lt = i + rel;
        let cut_to = if bytes[lt..].starts_with(b"<!--") {
            Some(find_ci(bytes, lt + 4, b"-->").map_or(bytes.len(), |p| p + 3))
        } else {
            let (name, closing) = tag_name(bytes, lt);
            if !closing && RAW_SKIP.contains(&name.as_ref()) {
                let end = tag_end(bytes, lt);
                let self_closing = end >= 2 && bytes[end - 2] == b'/';
                Some(if self_closing {
                    end
                } else {
                    skip_raw(bytes, end, &name).1
                })
            } else {
                None
            }
        };
        match cut_to {
            Some(to) => {
                let buf = out.get_or_insert_with(|| String::with_capacity(html.len()));
                buf.push_str(&html[copied_to..lt]);
                copied_to = to;
                i = to;
            }
            None => i = lt + 1,
        }
        if i >= bytes.len() {
            break;
        }
    }
    match out {
        None => Cow::Borrowed(html),
        Some(mut buf) => {
            buf.push_str(&html[copied_to.min(html.len())..]);
            Cow::Owned(buf)
        }
    }
}

/// Elements whose end tag may be omitted: not counted as nesting, so sloppy pages
/// with unclosed paragraphs or list items are not mistaken for deep ones.
const OPTIONAL_END: &[&str] = &[
    "p", "li", "dt", "dd", "tr", "td", "th", "thead", "tbody", "tfoot", "option", "optgroup",
    "colgroup", "rb", "rt", "rp", "html", "head", "body",
];

/// Whether elements nest deeper than `limit` anywhere in the page. Tree-scoring
/// passes slow down sharply with depth (a 20 000-deep `<div>` chain of 220 KB stalls
/// them for minutes), so such pages take the linear path.
pub fn nesting_exceeds(html: &str, limit: usize) -> bool {
    let bytes = html.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while let Some(rel) = bytes[i..].iter().position(|&b| b == b'<') {
        let lt = i + rel;
        if bytes[lt..].starts_with(b"<!--") {
            i = find_ci(bytes, lt + 4, b"-->").map_or(bytes.len(), |p| p + 3);
            continue;
        }
        let next = bytes.get(lt + 1).copied().unwrap_or(b' ');
        if !(next.is_ascii_alphabetic() || next == b'/') {
            i = lt + 1;
            continue;
        }
        let end = tag_end(bytes, lt);
        let (name, closing) = tag_name(bytes, lt);
        let self_closing = end >= 2 && bytes[end - 2] == b'/';
        i = end;
        if RAW_SKIP.contains(&name.as_ref()) && !closing && !self_closing {
            i = skip_raw(bytes, end, &name).1;
            continue;
        }
        if VOID.contains(&name.as_ref()) || OPTIONAL_END.contains(&name.as_ref()) || self_closing {
            continue;
        }
        if closing {
            depth = depth.saturating_sub(1);
        } else {
            depth += 1;
            if depth > limit {
                return true;
            }
        }
        if i >= bytes.len() {
            break;
        }
    }
    false
}

/// Decode character references in text (numeric, and the named ones pages use for
/// prose); unknown names stay as written.
pub fn decode_entities(text: &str) -> Cow<'_, str> {
    if !text.contains('&') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let after = &rest[amp + 1..];
        let end = after
            .char_indices()
            .take(32)
            .find(|(_, c)| *c == ';')
            .map(|(i, _)| i);
        let decoded = end.and_then(|end| {
            let name = &after[..end];
            let ch = if let Some(num) = name.strip_prefix('#') {
                let code = match num.strip_prefix(['x', 'X']) {
                    Some(hex) => u32::from_str_radix(hex, 16).ok(),
                    None => num.parse::<u32>().ok(),
                };
                code.map(|c| char::from_u32(c).unwrap_or('\u{fffd}').to_string())
            } else {
                named_entity(name).map(str::to_string)
            };
            ch.map(|c| (c, end + 1))
        });
        match decoded {
            Some((s, consumed)) => {
                out.push_str(&s);
                rest = &after[consumed..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

fn named_entity(name: &str) -> Option<&'static str> {
    Some(match name {
        "amp" | "AMP" => "&",
        "lt" | "LT" => "<",
        "gt" | "GT" => ">",
        "quot" | "QUOT" => "\"",
        "apos" => "'",
        "nbsp" => "\u{a0}",
        "ensp" | "emsp" | "thinsp" => " ",
        "shy" | "zwj" | "zwnj" | "lrm" | "rlm" => "",
        "mdash" => "\u{2014}",
        "ndash" => "\u{2013}",
        "hellip" => "\u{2026}",
        "lsquo" => "\u{2018}",
        "rsquo" => "\u{2019}",
        "ldquo" => "\u{201c}",
        "rdquo" => "\u{201d}",
        "laquo" => "\u{ab}",
        "raquo" => "\u{bb}",
        "bull" => "\u{2022}",
        "middot" => "\u{b7}",
        "copy" => "\u{a9}",
        "reg" => "\u{ae}",
        "trade" => "\u{2122}",
        "deg" => "\u{b0}",
        "plusmn" => "\u{b1}",
        "times" => "\u{d7}",
        "divide" => "\u{f7}",
        "minus" => "\u{2212}",
        "le" => "\u{2264}",
        "ge" => "\u{2265}",
        "ne" => "\u{2260}",
        "asymp" => "\u{2248}",
        "permil" => "\u{2030}",
        "micro" => "\u{b5}",
        "frac12" => "\u{bd}",
        "frac14" => "\u{bc}",
        "frac34" => "\u{be}",
        "sup2" => "\u{b2}",
        "sup3" => "\u{b3}",
        "euro" => "\u{20ac}",
        "pound" => "\u{a3}",
        "yen" => "\u{a5}",
        "cent" => "\u{a2}",
        "sect" => "\u{a7}",
        "para" => "\u{b6}",
        "larr" => "\u{2190}",
        "rarr" => "\u{2192}",
        "uarr" => "\u{2191}",
        "darr" => "\u{2193}",
        _ => return None,
    })
}

/// Does a start tag carry `hidden`, `aria-hidden="true"` or a boilerplate role?
/// `tag` is the whole tag text; tags without attributes are answered without work.
fn tag_hides(tag: &[u8]) -> bool {
    if !tag.contains(&b' ') && !tag.contains(&b'\t') && !tag.contains(&b'\n') {
        return false;
    }
    let lower = String::from_utf8_lossy(tag).to_ascii_lowercase();
    let attrs = lower.trim_start_matches('<').trim_end_matches('>');
    if attrs
        .split(|c: char| c.is_ascii_whitespace() || c == '/')
        .skip(1)
        .any(|a| a == "hidden" || a.starts_with("hidden="))
    {
        return true;
    }
    if attrs.contains("aria-hidden=\"true\"") || attrs.contains("aria-hidden='true'") {
        return true;
    }
    match attrs.find("role=") {
        Some(at) => {
            let value = attrs[at + 5..]
                .trim_start_matches(['"', '\''])
                .split(|c: char| c == '"' || c == '\'' || c.is_ascii_whitespace())
                .next()
                .unwrap_or("");
            SKIPPED_ROLES.contains(&value)
        }
        None => false,
    }
}

/// Title and whole-page text with boilerplate removed: headings as `#` lines, list
/// items as `- ` lines, table rows as `a | b` lines, one line per block.
pub fn unread(html: &str) -> (Option<String>, String) {
    let bytes = html.as_bytes();
    let mut sink = TextSink::default();
    let mut title: Option<String> = None;
    // (element name, nesting depth of that name) while inside a dropped element.
    let mut skipping: Option<(Cow<'_, str>, usize)> = None;
    let mut i = 0;
    loop {
        let lt = bytes[i..].iter().position(|&b| b == b'<').map(|p| i + p);
        let text_end = lt.unwrap_or(bytes.len());
        if skipping.is_none() && text_end > i {
            sink.push_inline(&decode_entities(&html[i..text_end]));
        }
        let Some(lt) = lt else { break };
        if bytes[lt..].starts_with(b"<!--") {
            i = find_ci(bytes, lt + 4, b"-->").map_or(bytes.len(), |p| p + 3);
            continue;
        }
        let next = bytes.get(lt + 1).copied().unwrap_or(b' ');
        if next == b'!' || next == b'?' {
            i = tag_end(bytes, lt);
            continue;
        }
        if !(next.is_ascii_alphabetic() || next == b'/') {
            // A bare `<` in text.
            if skipping.is_none() {
                sink.push_inline("<");
            }
            i = lt + 1;
            continue;
        }
        let end = tag_end(bytes, lt);
        let (name, closing) = tag_name(bytes, lt);
        let self_closing = end >= 2 && bytes[end - 2] == b'/';
        i = end;
        if !closing && (RAW_SKIP.contains(&name.as_ref()) || name == "title") {
            if self_closing {
                continue;
            }
            let (content_end, after) = skip_raw(bytes, end, &name);
            if name == "title" && title.is_none() {
                let t = decode_entities(&html[end.min(content_end)..content_end])
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ");
                if !t.is_empty() {
                    title = Some(t);
                }
            }
            i = after;
            continue;
        }
        if let Some((skip_name, depth)) = skipping.as_mut() {
            if *skip_name == name && !VOID.contains(&name.as_ref()) && !self_closing {
                if closing {
                    *depth -= 1;
                    if *depth == 0 {
                        skipping = None;
                    }
                } else {
                    *depth += 1;
                }
            }
            continue;
        }
        if closing {
            if is_heading(&name) || BLOCK.contains(&name.as_ref()) || name == "li" || name == "tr" {
                sink.break_line();
            }
            continue;
        }
        let hides = BOILERPLATE.contains(&name.as_ref()) || tag_hides(&bytes[lt..end]);
        if hides {
            if !VOID.contains(&name.as_ref()) && !self_closing {
                skipping = Some((name, 1));
            }
            continue;
        }
        if let Some(level) = heading_level(&name) {
            sink.break_line();
            sink.push_raw(&"#".repeat(level));
            sink.push_raw(" ");
        } else if name == "li" {
            sink.break_line();
            sink.push_raw("- ");
        } else if name == "tr" {
            sink.break_line();
        } else if name == "td" || name == "th" {
            sink.cell();
        } else if BLOCK.contains(&name.as_ref()) {
            sink.break_line();
        }
    }
    (title, sink.text)
}

fn heading_level(name: &str) -> Option<usize> {
    match name {
        "h1" => Some(1),
        "h2" => Some(2),
        "h3" => Some(3),
        "h4" => Some(4),
        "h5" => Some(5),
        "h6" => Some(6),
        _ => None,
    }
}

fn is_heading(name: &str) -> bool {
    heading_level(name).is_some()
}

/// Builds text line by line, collapsing whitespace inside a line.
#[derive(Default)]
struct TextSink {
    text: String,
    /// A space is owed before the next word on this line.
    pending_space: bool,
    /// No cell yet on this line (so no separator before the first cell).
    line_start: bool,
}

impl TextSink {
    fn push_inline(&mut self, raw: &str) {
        let mut words = raw.split_whitespace().peekable();
        if raw.starts_with(char::is_whitespace) {
            self.pending_space = true;
        }
        while let Some(word) = words.next() {
            if self.pending_space && !self.text.is_empty() && !self.text.ends_with(['\n', ' ']) {
                self.text.push(' ');
            }
            self.text.push_str(word);
            self.pending_space = words.peek().is_some();
            self.line_start = false;
        }
        if raw.ends_with(char::is_whitespace) {
            self.pending_space = true;
        }
    }

    fn push_raw(&mut self, s: &str) {
        self.text.push_str(s);
        self.pending_space = false;
    }

    fn break_line(&mut self) {
        if !self.text.is_empty() && !self.text.ends_with('\n') {
            self.text.push('\n');
        }
        self.pending_space = false;
        self.line_start = true;
    }

    fn cell(&mut self) {
        if !self.line_start && !self.text.ends_with('\n') {
            self.text.push_str(" | ");
        }
        self.pending_space = false;
        self.line_start = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_scripts_styles_svg_and_comments() {
        let html = "<p>a</p><SCRIPT type=x>if (a < b) { x = '</div>'; }</script>\
                    <!-- note <p>hidden</p> --><style>p{}</style><svg><text>chart</text></svg>\
                    <p>b</p><script src=x.js/><noscript>enable js</noscript><p>c</p>";
        assert_eq!(strip_heavy(html), "<p>a</p><p>b</p><p>c</p>");
        assert!(matches!(strip_heavy("<p>plain</p>"), Cow::Borrowed(_)));
        // Unterminated script: the rest is dropped, nothing panics.
        assert_eq!(strip_heavy("<p>x</p><script>var a = 1;"), "<p>x</p>");
    }

    #[test]
    fn nesting_depth() {
        let deep = format!("{}x{}", "<div>".repeat(100), "</div>".repeat(100));
        assert!(nesting_exceeds(&deep, 80));
        assert!(!nesting_exceeds(&deep, 100));
        // Siblings, unclosed paragraphs and void elements do not add depth.
        let wide = "<div><p>a<p>b<br><img src=x></div>".repeat(500);
        assert!(!nesting_exceeds(&wide, 3));
        assert!(!nesting_exceeds("<script>'<div><div><div>'</script>", 1));
    }

    #[test]
    fn decodes_entities() {
        assert_eq!(
            decode_entities("A &amp; B &lt;3&gt; &#8364;5 &#x4E2D; &mdash; &nbsp;&bogus; & x"),
            "A & B <3> €5 中 — \u{a0}&bogus; & x"
        );
    }
}
