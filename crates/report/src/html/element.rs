//! What one element or tag says on its own: attributes and entities, the real
//! source of a lazily loaded image, citation elements, class tokens and visible text.

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;
use scraper::{ElementRef, Node};

/// The text of a numbered citation anchor: `3`, `[3]`, `3, 4`, `[5-7]`.
pub(super) static CITE_TEXT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*[\[(（【]?\d{1,4}(?:\s*[,，、\-–]\s*\d{1,4})*[\])）】]?\s*$").unwrap()
});
/// An anchor class marking a citation (`class="citation"`, `cite-ref`, `footnote-ref`).
pub(super) static CITE_CLASS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)cit|(^|[-_ ])(ref|fn|footnote|source)([-_ ]|$)").unwrap());
pub(super) static ATTR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?s)([A-Za-z_:][-A-Za-z0-9_:.]*)\s*(?:=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?"#,
    )
    .unwrap()
});

/// Attributes of one start tag (`<img src="a" alt='b'>`), names lowercased, values
/// with the common entities decoded.
pub(crate) fn parse_tag_attrs(tag: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let inner = tag.trim_start_matches('<');
    // Skip the tag name.
    let rest = inner
        .find(|c: char| c.is_whitespace())
        .map(|i| &inner[i..])
        .unwrap_or("");
    let rest = rest.trim_end_matches('>').trim_end_matches('/');
    for cap in ATTR.captures_iter(rest) {
        let name = cap[1].to_ascii_lowercase();
        let value = cap
            .get(2)
            .or_else(|| cap.get(3))
            .or_else(|| cap.get(4))
            .map(|m| decode_entities(m.as_str()))
            .unwrap_or_default();
        out.entry(name).or_insert(value);
    }
    out
}

/// Decode the handful of entities that appear in attribute values.
pub(super) fn decode_entities(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    s.replace("&amp;", "&")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&apos;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
}

pub(super) static ENTITY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[a-zA-Z][a-zA-Z0-9]{1,31});").unwrap()
});

/// Text as the HTML parser decodes it, for the entities reports use (`&amp;`,
/// `&nbsp;`, numeric references); an unknown one is left as written, which the
/// caller detects because the result then differs from the parsed text.
pub(super) fn decode_text(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    static NUMERIC: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"&#(?:[xX]([0-9a-fA-F]{1,6})|([0-9]{1,7}));").unwrap());
    let s = NUMERIC.replace_all(s, |c: &regex::Captures<'_>| {
        let v = match (c.get(1), c.get(2)) {
            (Some(h), _) => u32::from_str_radix(h.as_str(), 16).ok(),
            (_, Some(d)) => d.as_str().parse().ok(),
            _ => None,
        };
        v.and_then(char::from_u32)
            .map_or_else(|| c[0].to_string(), |ch| ch.to_string())
    });
    decode_entities(&s.replace("&nbsp;", "\u{a0}"))
        .replace("&mdash;", "\u{2014}")
        .replace("&ndash;", "\u{2013}")
        .replace("&hellip;", "\u{2026}")
        .replace("&rsquo;", "\u{2019}")
        .replace("&lsquo;", "\u{2018}")
        .replace("&rdquo;", "\u{201d}")
        .replace("&ldquo;", "\u{201c}")
}

/// The picture an `<img>` shows: its `src`, unless lazy loading left a placeholder
/// there (no `src`, a tiny `data:` GIF/SVG, a `placeholder`/`blank`/`spacer`/
/// `loading` file) and the real address sits in `data-src`, `data-original`,
/// `data-lazy-src` or the first candidate of `data-srcset`/`srcset`.
pub(super) fn image_source(v: &scraper::node::Element) -> String {
    static PLACEHOLDER: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)^data:image/(gif|svg\+xml)|placeholder|blank\.(gif|png)|spacer|loading\.|lazy[-_.]?load|1x1\.").unwrap()
    });
    let src = v.attr("src").map(str::trim).unwrap_or("");
    let lazy = ["data-src", "data-original", "data-lazy-src", "data-url"]
        .iter()
        .find_map(|k| v.attr(k).map(str::trim).filter(|x| !x.is_empty()))
        .or_else(|| {
            ["data-srcset", "srcset"].iter().find_map(|k| {
                v.attr(k)
                    .and_then(|x| x.split(',').next())
                    .and_then(|x| x.split_whitespace().next())
                    .filter(|x| !x.is_empty())
            })
        });
    match lazy {
        Some(l) if src.is_empty() || (PLACEHOLDER.is_match(src) && src.len() < 400) => {
            l.to_string()
        }
        _ => src.to_string(),
    }
}

/// A `<cite>`, `<span>`, ... whose whole text is a citation number and which says so
/// by its name (`cite`), its class (`citation`, `ref`, ...) or a data attribute
/// (`data-ref`, `data-cite`, `data-citation`, `data-source`).
pub(super) fn is_cite_element(el: ElementRef<'_>) -> bool {
    let v = el.value();
    let marked = v.name() == "cite"
        || v.attr("class").is_some_and(|k| CITE_CLASS.is_match(k))
        || v.attrs().any(|(k, _)| {
            matches!(
                k,
                "data-ref" | "data-cite" | "data-citation" | "data-source" | "data-ref-id"
            )
        });
    marked && text_capped(el, 24).is_some_and(|t| CITE_TEXT.is_match(&t))
}

/// `"300"`, `"300px"` -> 300; percentages and junk -> None.
pub(crate) fn parse_dimension(v: &str) -> Option<u32> {
    let v = v.trim().trim_end_matches("px").trim();
    v.parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && *x >= 0.0)
        .map(|x| x.min(u32::MAX as f64) as u32)
}

pub(super) fn tokens(el: &scraper::node::Element) -> impl Iterator<Item = &str> {
    el.id()
        .into_iter()
        .chain(el.attr("class").unwrap_or("").split_whitespace())
}

pub(super) fn has_token(el: &scraper::node::Element, re: &Regex) -> bool {
    tokens(el).any(|t| re.is_match(t))
}

pub(super) fn text_of(el: ElementRef<'_>) -> String {
    let mut s = String::new();
    for node in el.descendants() {
        if let Node::Text(t) = node.value() {
            let skipped = node.ancestors().any(|a| {
                a.value().as_element().is_some_and(|e| {
                    matches!(e.name(), "script" | "style" | "noscript" | "template")
                })
            });
            if !skipped {
                s.push_str(t);
            }
        }
    }
    s
}

pub(super) fn visible_chars(s: &str) -> usize {
    s.chars().filter(|c| !c.is_whitespace()).count()
}

/// The element's text when it has at most `max` visible characters.
pub(super) fn text_capped(el: ElementRef<'_>, max: usize) -> Option<String> {
    let mut s = String::new();
    let mut n = 0;
    for node in el.descendants() {
        if let Node::Text(t) = node.value() {
            n += visible_chars(t);
            if n > max {
                return None;
            }
            s.push_str(t);
        }
    }
    Some(s)
}

pub(super) fn collapse_ws(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut last_ws = false;
    for c in s.chars() {
        if c.is_whitespace() {
            if !last_ws {
                out.push(' ');
            }
            last_ws = true;
        } else {
            out.push(c);
            last_ws = false;
        }
    }
    out
}

/// The elements of HTML itself: any other name is a component (`<ChartFrame>`, read
/// lower-cased, `<chart-frame>`).
const HTML_ELEMENTS: &[&str] = &[
    "a",
    "abbr",
    "address",
    "area",
    "article",
    "aside",
    "audio",
    "b",
    "base",
    "bdi",
    "bdo",
    "blockquote",
    "body",
    "br",
    "button",
    "canvas",
    "caption",
    "cite",
    "code",
    "col",
    "colgroup",
    "data",
    "datalist",
    "dd",
    "del",
    "details",
    "dfn",
    "dialog",
    "div",
    "dl",
    "dt",
    "em",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "head",
    "header",
    "hgroup",
    "hr",
    "html",
    "i",
    "img",
    "input",
    "ins",
    "kbd",
    "label",
    "legend",
    "li",
    "link",
    "main",
    "map",
    "mark",
    "menu",
    "meta",
    "meter",
    "nav",
    "noscript",
    "ol",
    "optgroup",
    "option",
    "output",
    "p",
    "picture",
    "pre",
    "progress",
    "q",
    "rp",
    "rt",
    "ruby",
    "s",
    "samp",
    "script",
    "search",
    "section",
    "select",
    "slot",
    "small",
    "source",
    "span",
    "strong",
    "style",
    "sub",
    "summary",
    "sup",
    "table",
    "tbody",
    "td",
    "template",
    "textarea",
    "tfoot",
    "th",
    "thead",
    "time",
    "title",
    "tr",
    "track",
    "u",
    "ul",
    "var",
    "video",
    "wbr",
    "svg",
    "math",
    "center",
    "font",
    "big",
    "tt",
    "strike",
    "nobr",
];
/// Elements of HTML whose `src` loads something of their own.
const OWN_SRC: &[&str] = &[
    "img", "image", "input", "script", "source", "track", "video", "audio", "picture",
];
/// What a picture file's name ends with.
const PICTURE_FILES: &[&str] = &[
    ".svg", ".png", ".jpg", ".jpeg", ".gif", ".webp", ".avif", ".bmp",
];

/// The local picture file a frame or a component shows (`<iframe src="charts/x.svg">`,
/// `<object data="x.svg">`, `<ChartFrame src={"charts/x.png"} />`): a reader sees
/// that picture, as with `<img>`. None for anything else, a remote address included.
pub(super) fn shown_picture(el: ElementRef<'_>) -> Option<String> {
    let v = el.value();
    // An element of HTML with content (`<figure src>` holding an `<img>`, or one a
    // self-closing `<Figure ... />` left open over what follows) is read as itself.
    let own = HTML_ELEMENTS.contains(&v.name())
        && !matches!(v.name(), "iframe" | "frame" | "embed" | "object");
    if own
        && el.children().any(|c| {
            c.value().is_element() || c.value().as_text().is_some_and(|t| !t.trim().is_empty())
        })
    {
        return None;
    }
    picture_shown_by(v.name(), v.attrs())
}

/// [`shown_picture`] from a start tag's name (lower case) and attributes.
pub(crate) fn picture_shown_by<'a>(
    name: &str,
    mut attrs: impl Iterator<Item = (&'a str, &'a str)>,
) -> Option<String> {
    let frame = matches!(name, "iframe" | "frame" | "embed" | "object");
    // An element of HTML has no `src` of its own, except those that load media or
    // scripts themselves (`<img>` is read as an image elsewhere): with one it is an
    // MDX component whose name HTML reads lower-cased (`<Figure src="c.svg" />`).
    let element = !frame && HTML_ELEMENTS.contains(&name);
    if element && OWN_SRC.contains(&name) {
        return None;
    }
    attrs.find_map(|(k, value)| {
        let k = k.to_ascii_lowercase();
        let wanted = if frame {
            matches!(k.as_str(), "src" | "data")
        } else if element {
            k == "src"
        } else {
            !matches!(
                k.as_str(),
                "href" | "action" | "poster" | "style" | "class" | "id"
            )
        };
        // JSX writes `src={"x.svg"}`, which HTML reads as the whole braced text.
        let value = value
            .trim()
            .trim_start_matches('{')
            .trim_end_matches('}')
            .trim()
            .trim_matches(['"', '\'', '`']);
        let path = value.split(['?', '#']).next().unwrap_or(value);
        let lower = path.to_ascii_lowercase();
        let remote = ["http:", "https:", "//", "data:", "javascript:"]
            .iter()
            .any(|p| lower.starts_with(p));
        (wanted
            && !remote
            && !value.contains(['<', '>', '"', ' '])
            && PICTURE_FILES.iter().any(|e| lower.ends_with(e)))
        .then(|| value.to_string())
    })
}
