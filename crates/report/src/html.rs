//! HTML front end: whole HTML reports and HTML blocks inside Markdown become the same
//! leaf blocks as Markdown. The HTML parser keeps no source positions, so spans are
//! recovered by locating each element's distinctive text in the source, moving
//! forward only; where that fails the enclosing element's span is used.

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::sync::LazyLock;

use base64::Engine as _;
use regex::Regex;
use scraper::{ElementRef, Html, Node};

use super::blocks::{Block, BlockKind, Inline};
use super::cues::{is_decorative, is_reference_heading, CAPTION_LINE};

static ATTR: LazyLock<Regex> = LazyLock::new(|| {
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
fn decode_entities(s: &str) -> String {
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

static ENTITY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[a-zA-Z][a-zA-Z0-9]{1,31});").unwrap()
});

/// Text as the HTML parser decodes it, for the entities reports use (`&amp;`,
/// `&nbsp;`, numeric references); an unknown one is left as written, which the
/// caller detects because the result then differs from the parsed text.
fn decode_text(s: &str) -> String {
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
fn image_source(v: &scraper::node::Element) -> String {
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
fn is_cite_element(el: ElementRef<'_>) -> bool {
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

/// Elements whose content is never report text.
const SKIPPED: &[&str] = &[
    "script", "style", "noscript", "template", "head", "title", "meta", "link", "svg", "iframe",
    "button", "select", "textarea",
];
const BLOCK_CONTAINERS: &[&str] = &[
    "html",
    "body",
    "div",
    "section",
    "article",
    "main",
    "header",
    "footer",
    "aside",
    "nav",
    "ul",
    "ol",
    "dl",
    "table",
    "thead",
    "tbody",
    "tfoot",
    "blockquote",
    "details",
    "center",
    "form",
    "fieldset",
    "hgroup",
];
const LEAVES: &[&str] = &[
    "p",
    "li",
    "dt",
    "dd",
    "summary",
    "caption",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "pre",
    "tr",
    "figure",
    "figcaption",
    "address",
];

/// Finds source positions of elements, moving forward through the fragment.
struct Locator<'a> {
    raw: &'a str,
    base: usize,
    cursor: usize,
}

impl Locator<'_> {
    /// Position (in the fragment) of `needle` at or after the cursor; the cursor moves
    /// to it.
    fn seek(&mut self, needle: &str) -> Option<usize> {
        if needle.is_empty() {
            return None;
        }
        let found = self.raw.get(self.cursor..)?.find(needle)? + self.cursor;
        self.cursor = found;
        Some(found)
    }

    fn find_from(&self, from: usize, needle: &str) -> Option<usize> {
        if needle.is_empty() {
            return None;
        }
        Some(self.raw.get(from..)?.find(needle)? + from)
    }

    fn abs(&self, r: Range<usize>) -> Range<usize> {
        self.base + r.start..self.base + r.end
    }

    /// Start tag `<name` at or after the cursor; the element's span runs to its
    /// matching close tag when one follows (nesting of the same name is rare in the
    /// leaves we locate), else to the end of the start tag.
    fn element(&mut self, name: &str) -> Option<Range<usize>> {
        let open = format!("<{name}");
        let mut from = self.cursor;
        let start = loop {
            let pos = self.find_from(from, &open)?;
            let next = self.raw[pos + open.len()..].chars().next();
            if matches!(next, Some(c) if c.is_whitespace() || c == '>' || c == '/') {
                break pos;
            }
            from = pos + open.len();
        };
        self.cursor = start;
        let close = format!("</{name}");
        let end = match self.find_from(start, &close) {
            Some(c) => self.raw[c..]
                .find('>')
                .map(|g| c + g + 1)
                .unwrap_or(self.raw.len()),
            None => self.raw[start..]
                .find('>')
                .map(|g| start + g + 1)
                .unwrap_or(self.raw.len()),
        };
        Some(start..end)
    }
}

// ---------------------------------------------------------------------------
// Whole pages: what a browser shows. Navigation, script-drawn charts, figure
// wrappers with class-marked captions and anchors into the reference section are
// recognised from the document tree, never from indentation.
// ---------------------------------------------------------------------------

/// An id or class token naming a reference section (`<section id="sources">`).
static REF_CONTAINER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(refs?|references?|sources?|citations?|bibliography|biblio|footnotes?|endnotes?|works-?cited|(?:refs?|references?|sources?|citations?)[-_]?(?:list|section|container))$").unwrap()
});
/// An in-page target that names a reference entry (`#ref-3`, `#cite_note-3`, `#fn3`).
static REF_TARGET: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(refs?|references?|sources?|citations?|cite|bib|bibliography|fn|footnotes?|endnotes?|notes?)(?:[-_:]?(?:note|ref)?[-_:]?\d{0,4})$").unwrap()
});
/// Digits closing a reference entry id (`ref-3`, `cite_note-12`, `fn4`).
static REF_ID_NUMBER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(?:refs?|references?|sources?|citations?|cite|bib|fn|footnotes?|endnotes?|notes?|r|s|c)[-_:]?(?:note[-_:]?)?(\d{1,4})$").unwrap()
});
/// The text of a numbered citation anchor: `3`, `[3]`, `3, 4`, `[5-7]`.
static CITE_TEXT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*[\[(（【]?\d{1,4}(?:\s*[,，、\-–]\s*\d{1,4})*[\])）】]?\s*$").unwrap()
});
/// An anchor class marking a citation (`class="citation"`, `cite-ref`, `footnote-ref`).
static CITE_CLASS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)cit|(^|[-_ ])(ref|fn|footnote|source)([-_ ]|$)").unwrap());
/// In-page targets that are figures, tables or sections, never reference entries.
static NON_REF_TARGET: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(fig|figure|tab|table|chart|eq|equation|sec|section|img|image)[-_:]?\d")
        .unwrap()
});
/// An id or class token of navigation: menus, tables of contents, breadcrumbs.
static NAV_TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(nav|navbar|navigation|menu|menubar|toc|breadcrumbs?|pagination|skip-?link|table-?of-?contents|tableofcontents|sidenav|topnav)$|^(nav|navbar|toc|menu|sidenav|topnav)[-_]|[-_](nav|navbar|toc|menu|navigation)$").unwrap()
});
/// Class tokens of text a reader does not see as report text: notebook prompts
/// (`In [3]:`), screen-reader-only labels.
static HIDDEN_TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(jp-InputPrompt|jp-OutputPrompt|prompt|input_prompt|output_prompt|sr-only|visually-hidden|screen-reader-text)$").unwrap()
});
/// An id or class token of a sidebar, header or footer band: navigation only when
/// it is mostly links.
static SIDEBAR_TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)sidebar|side-bar|aside|masthead|site-header|site-footer").unwrap()
});
/// A class marking a caption (`caption`, `fig-caption`, `img-caption`, `figure-title`).
static CAPTION_CLASS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)caption|figcap|(fig|figure|img|image|chart|graph|plot)[-_]?(title|desc|description|note|text|label|legend-text)").unwrap()
});
/// A file a chart component points at (`charts/sales.json`, `plot.html`, `*.vl.json`).
static CHART_FILE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)chart|plot|graph|vega|echarts|\.vl\.json|\.vg\.json").unwrap()
});
/// Script calls of chart libraries.
static CHART_SCRIPT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"new\s+Chart\s*\(|\bChart\s*\(|echarts\s*\.\s*init|Plotly\s*\.\s*(newPlot|plot|react)|Highcharts\s*\.\s*(chart|stockChart)|new\s+ApexCharts|vegaEmbed\s*\(|google\s*\.\s*visualization|c3\s*\.\s*generate|\bd3\s*\.\s*select|am[45]charts|new\s+Chartist|billboard\s*\.\s*generate").unwrap()
});
/// Element ids a chart script draws into.
static CHART_TARGET_ID: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?:getElementById\s*\(\s*|querySelector\s*\(\s*['"]#|(?:newPlot|Plotly\.plot|Plotly\.react|Highcharts\.chart|Highcharts\.stockChart|vegaEmbed|d3\.select)\s*\(\s*['"]#?)['"]?([A-Za-z][\w\-:.]*)['"]"#).unwrap()
});
/// Shapes that draw something inside an `<svg>`.
const SVG_SHAPES: &[&str] = &[
    "rect", "line", "polyline", "polygon", "circle", "ellipse", "path",
];

fn tokens(el: &scraper::node::Element) -> impl Iterator<Item = &str> {
    el.id()
        .into_iter()
        .chain(el.attr("class").unwrap_or("").split_whitespace())
}

fn has_token(el: &scraper::node::Element, re: &Regex) -> bool {
    tokens(el).any(|t| re.is_match(t))
}

fn text_of(el: ElementRef<'_>) -> String {
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

fn visible_chars(s: &str) -> usize {
    s.chars().filter(|c| !c.is_whitespace()).count()
}

/// What the whole document says about its elements before the walk: which ids lie
/// in a reference section (so anchors into them are citations) and which elements
/// scripts draw charts into.
#[derive(Default)]
struct PageInfo {
    ref_ids: HashSet<String>,
    chart_ids: HashSet<String>,
}

impl PageInfo {
    fn of(root: ElementRef<'_>) -> PageInfo {
        let mut info = PageInfo::default();
        let mut ref_heading: Option<u8> = None;
        for node in root.descendants() {
            let Some(el) = ElementRef::wrap(node) else {
                continue;
            };
            let v = el.value();
            let name = v.name();
            if name == "script" {
                let code: String = el.text().collect();
                if CHART_SCRIPT.is_match(&code) {
                    for c in CHART_TARGET_ID.captures_iter(&code) {
                        info.chart_ids.insert(c[1].to_string());
                    }
                }
                continue;
            }
            if let Some(level) = heading_level(name) {
                if is_reference_heading(&text_of(el)) {
                    ref_heading = Some(level);
                } else if ref_heading.is_some_and(|l| level <= l) {
                    ref_heading = None;
                }
            }
            if let Some(id) = v.id() {
                let in_container = std::iter::once(el)
                    .chain(el.ancestors().filter_map(ElementRef::wrap))
                    .any(|a| has_token(a.value(), &REF_CONTAINER));
                if ref_heading.is_some() || in_container {
                    info.ref_ids.insert(id.to_string());
                }
            }
        }
        info
    }
}

fn heading_level(name: &str) -> Option<u8> {
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

/// Navigation a reader does not read as report text: `<nav>`, menus, tables of
/// contents, link-only sidebars and header/footer bands, `aria-hidden` elements.
fn is_navigation(el: ElementRef<'_>) -> bool {
    let v = el.value();
    let name = v.name();
    if name == "nav" || v.attr("aria-hidden") == Some("true") {
        return true;
    }
    if matches!(
        v.attr("role"),
        Some("navigation" | "menu" | "menubar" | "tablist" | "banner" | "contentinfo")
    ) && link_share(el) >= 0.5
    {
        return true;
    }
    if has_token(v, &HIDDEN_TOKEN) {
        return true;
    }
    // A navigation class on an element that is mostly links (`class="with-toc"` on a
    // whole layout is not navigation).
    if has_token(v, &NAV_TOKEN) && link_share(el) >= 0.5 {
        return true;
    }
    if (matches!(name, "header" | "footer" | "aside") || has_token(v, &SIDEBAR_TOKEN))
        && link_share(el) >= 0.6
    {
        return true;
    }
    matches!(name, "ul" | "ol") && is_toc_list(el)
}

/// Share of an element's visible text that sits inside links.
fn link_share(el: ElementRef<'_>) -> f64 {
    let total = visible_chars(&text_of(el));
    if total == 0 {
        return 0.0;
    }
    let linked: usize = el
        .descendants()
        .filter_map(ElementRef::wrap)
        .filter(|e| e.value().name() == "a")
        .map(|a| visible_chars(&text_of(a)))
        .sum();
    linked as f64 / total as f64
}

/// A list whose every item is one in-page link: a table of contents.
fn is_toc_list(el: ElementRef<'_>) -> bool {
    let items: Vec<ElementRef<'_>> = el
        .children()
        .filter_map(ElementRef::wrap)
        .filter(|c| c.value().name() == "li")
        .collect();
    items.len() >= 2
        && items.iter().all(|li| {
            let own = visible_chars(&text_of(*li));
            let links: Vec<ElementRef<'_>> = li
                .descendants()
                .filter_map(ElementRef::wrap)
                .filter(|e| e.value().name() == "a")
                .collect();
            let first = links.first();
            first.is_some_and(|a| a.value().attr("href").is_some_and(|h| h.starts_with('#')))
                && first.is_some_and(|a| {
                    // Nested sub-lists of the TOC count with their item.
                    let linked: usize = links.iter().map(|l| visible_chars(&text_of(*l))).sum();
                    let _ = a;
                    linked * 10 >= own * 9
                })
        })
}

/// An `<svg>` that draws a chart or diagram (not an icon): at least three shapes
/// and no declared size of 48 px or less.
fn is_drawing_svg(el: ElementRef<'_>) -> bool {
    let v = el.value();
    let w = v.attr("width").and_then(parse_dimension);
    let h = v.attr("height").and_then(parse_dimension);
    if let (Some(w), Some(h)) = (w, h) {
        if w <= 48 && h <= 48 {
            return false;
        }
    }
    if w.is_none() && h.is_none() {
        if let Some(vb) = v.attr("viewBox").or_else(|| v.attr("viewbox")) {
            let nums: Vec<f64> = vb
                .split([' ', ','])
                .filter_map(|x| x.trim().parse().ok())
                .collect();
            if nums.len() == 4 && nums[2] <= 48.0 && nums[3] <= 48.0 {
                return false;
            }
        }
    }
    if tokens(v).any(|t| t.to_ascii_lowercase().contains("icon")) {
        return false;
    }
    let in_control = el.ancestors().filter_map(ElementRef::wrap).any(|a| {
        matches!(
            a.value().name(),
            "a" | "button" | "nav" | "label" | "summary"
        )
    });
    if in_control {
        return false;
    }
    el.descendants()
        .filter_map(ElementRef::wrap)
        .filter(|d| SVG_SHAPES.contains(&d.value().name()))
        .take(3)
        .count()
        >= 3
}

/// The SVG element's source as a `data:image/svg+xml;base64,` URI the image loader
/// rasterises: the SVG namespace added when the page left it out (HTML allows that,
/// XML does not), and HTML-only entities rewritten as numeric ones.
fn svg_data_uri(source: &str) -> String {
    let mut svg = source.to_string();
    if !svg.contains("xmlns=") {
        svg = svg.replacen("<svg", "<svg xmlns=\"http://www.w3.org/2000/svg\"", 1);
    }
    if svg.contains("xlink:") && !svg.contains("xmlns:xlink") {
        svg = svg.replacen(
            "<svg",
            "<svg xmlns:xlink=\"http://www.w3.org/1999/xlink\"",
            1,
        );
    }
    let svg = svg.replace("&nbsp;", "&#160;");
    format!(
        "data:image/svg+xml;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(svg.as_bytes())
    )
}

/// Alt text of an inline SVG: its `aria-label`, else its `<title>`.
fn svg_alt(el: ElementRef<'_>) -> String {
    if let Some(l) = el.value().attr("aria-label") {
        return l.trim().to_string();
    }
    el.children()
        .filter_map(ElementRef::wrap)
        .find(|c| c.value().name() == "title")
        .map(|t| {
            collapse_ws(&t.text().collect::<String>())
                .trim()
                .to_string()
        })
        .unwrap_or_default()
}

/// A chart drawn at view time (canvas, script target, Mermaid source, chart file):
/// the pseudo-visual kind it is listed under.
fn script_visual(el: ElementRef<'_>, page: &PageInfo) -> Option<&'static str> {
    let v = el.value();
    let name = v.name();
    let class = v.attr("class").unwrap_or("").to_ascii_lowercase();
    if matches!(name, "pre" | "div") && class.split_whitespace().any(|c| c == "mermaid") {
        return Some("mermaid");
    }
    if name == "pre"
        && el.children().filter_map(ElementRef::wrap).any(|c| {
            c.value().name() == "code"
                && c.value().attr("class").is_some_and(|k| {
                    k.contains("language-mermaid") || k.split_whitespace().any(|t| t == "mermaid")
                })
        })
    {
        return Some("mermaid");
    }
    if name == "canvas" {
        return Some("chart");
    }
    let empty = || visible_chars(&text_of(el)) <= 40;
    if v.id().is_some_and(|id| page.chart_ids.contains(id)) && empty() {
        return Some("chart");
    }
    let pointer = [
        "src",
        "data",
        "data-src",
        "data-chart",
        "data-url",
        "data-spec",
        "data-config",
    ]
    .iter()
    .filter_map(|a| v.attr(a))
    .find(|u| CHART_FILE.is_match(u));
    let component = matches!(name, "iframe" | "embed" | "object")
        || name.contains('-')
        || name.starts_with("div");
    if pointer.is_some() && component && empty() {
        return Some("chart");
    }
    None
}

/// Whether an element is a caption: `<figcaption>`, a caption class, or a numbered
/// caption text (`Figure 3: ...`, `图 2：...`) in a short text element.
fn is_caption_element(el: ElementRef<'_>) -> bool {
    let v = el.value();
    if v.name() == "figcaption" || has_token(v, &CAPTION_CLASS) {
        // A caption never holds the picture itself (`class="captioned-image"`).
        return !el
            .descendants()
            .filter_map(ElementRef::wrap)
            .any(|d| matches!(d.value().name(), "img" | "svg" | "canvas"));
    }
    if !matches!(
        v.name(),
        "p" | "div" | "span" | "em" | "i" | "small" | "strong" | "b" | "center" | "cite"
    ) {
        return false;
    }
    // A caption line holds inline content only (a layout row whose text happens to
    // start with a caption is no caption).
    let has_blocks = el
        .descendants()
        .skip(1)
        .filter_map(ElementRef::wrap)
        .any(|d| {
            let n = d.value().name();
            BLOCK_CONTAINERS.contains(&n)
                || LEAVES.contains(&n)
                || matches!(n, "img" | "svg" | "canvas" | "div" | "p")
        });
    !has_blocks
        && text_capped(el, 400).is_some_and(|t| CAPTION_LINE.is_match(collapse_ws(&t).trim()))
}

/// The element's text when it has at most `max` visible characters.
fn text_capped(el: ElementRef<'_>, max: usize) -> Option<String> {
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

/// A short line that is wholly emphasized (`<p><em>...</em></p>`, `<em>...</em>`):
/// an unnumbered caption when it sits right under an image.
fn is_emphasized_line(el: ElementRef<'_>) -> bool {
    let name = el.value().name();
    let Some(t) = text_capped(el, 300) else {
        return false;
    };
    let n = collapse_ws(&t).trim().chars().count();
    if !(3..=300).contains(&n) {
        return false;
    }
    if matches!(name, "em" | "i" | "small") {
        return true;
    }
    if !matches!(name, "p" | "div") {
        return false;
    }
    let mut kids = el.children().filter(|c| match c.value() {
        Node::Text(t) => !t.trim().is_empty(),
        Node::Element(_) => true,
        _ => false,
    });
    let only = kids.next();
    kids.next().is_none()
        && only
            .and_then(ElementRef::wrap)
            .is_some_and(|c| matches!(c.value().name(), "em" | "i" | "small"))
}

/// A visual inside an element that is a figure: a non-decorative `<img>` or a
/// drawing `<svg>`.
fn is_visual(el: ElementRef<'_>) -> bool {
    let v = el.value();
    match v.name() {
        "img" => !is_decorative(
            v.attr("src").unwrap_or(""),
            v.attr("alt").unwrap_or(""),
            v.attr("width").and_then(parse_dimension),
            v.attr("height").and_then(parse_dimension),
        ),
        "svg" => is_drawing_svg(el),
        _ => false,
    }
}

fn visuals_in(el: ElementRef<'_>) -> usize {
    std::iter::once(el)
        .chain(el.descendants().skip(1).filter_map(ElementRef::wrap))
        .filter(|e| is_visual(*e))
        .count()
}

/// Visible text of an element outside captions and visuals, counted up to just
/// past `max`.
fn prose_outside_captions(el: ElementRef<'_>, max: usize) -> usize {
    let mut n = 0;
    for node in el.descendants() {
        let Node::Text(t) = node.value() else {
            continue;
        };
        let excluded = node.ancestors().filter_map(ElementRef::wrap).any(|a| {
            let name = a.value().name();
            matches!(name, "script" | "style" | "svg" | "noscript")
                || is_caption_element(a) && a != el
        });
        if !excluded {
            n += visible_chars(t);
            if n > max {
                break;
            }
        }
    }
    n
}

/// A caption read from the source: its inlines, the span of its inner text and the
/// span of the whole element.
type CaptionRead = (Vec<Inline>, Option<Range<usize>>, Option<Range<usize>>);

/// The caption found for a figure wrapper.
enum CaptionAt<'d> {
    Inside(ElementRef<'d>),
    Next(ElementRef<'d>),
}

/// A figure wrapper (an `<img>`/`<svg>` itself, or an element holding visuals and
/// at most a short label besides its caption) and where its caption is.
/// Append a source line's inlines to a figure caption (a space between); the
/// caption span stays the caption's, or becomes the source line's when the figure
/// had no caption.
fn append_source(
    caption: &mut Vec<Inline>,
    caption_span: &mut Option<Range<usize>>,
    source: Vec<Inline>,
    source_span: Option<Range<usize>>,
) {
    if source.is_empty() {
        return;
    }
    let has_text = caption.iter().any(|i| match i {
        Inline::Text { text, .. } => !text.trim().is_empty(),
        Inline::Image { .. } | Inline::CellSep | Inline::Break { .. } => false,
        _ => true,
    });
    if has_text {
        let at = caption
            .last()
            .and_then(Inline::span)
            .map_or(0..0, |r| r.end..r.end);
        caption.push(Inline::Text {
            text: " ".to_string(),
            span: at,
            sup: false,
        });
    } else {
        caption.clear();
        *caption_span = source_span;
    }
    caption.extend(source);
}

/// A class token of a figure's source line (`<p class="chart-source">`).
static SOURCE_CLASS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(sources?|credits?|attribution|source[-_](line|note|text))$|^(fig|figure|img|image|chart|graph|plot|data|table)[-_]?(sources?|credits?)$").unwrap()
});
/// The text of a source line: `Source: ...`, `Data: ...`, `来源：...`.
static SOURCE_TEXT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^[\s(（]*(sources?|data(?: sources?)?|credits?|数据来源|资料来源|图片来源|来源|出处)\s*[:：]").unwrap()
});

/// A short line of inline content naming where a figure's data comes from, by its
/// class (`source`, `chart-source`, `fig-credit`) or its text (`Source: ...`).
fn is_source_line(el: ElementRef<'_>) -> bool {
    let v = el.value();
    if !matches!(
        v.name(),
        "p" | "div" | "span" | "small" | "em" | "i" | "cite" | "footer"
    ) || visuals_in(el) > 0
    {
        return false;
    }
    let inline_only = !el
        .descendants()
        .skip(1)
        .filter_map(ElementRef::wrap)
        .any(|d| {
            let n = d.value().name();
            matches!(
                n,
                "p" | "div" | "ul" | "ol" | "table" | "h1" | "h2" | "h3" | "h4" | "h5" | "h6"
            )
        });
    let Some(t) = text_capped(el, 300) else {
        return false;
    };
    inline_only && (has_token(v, &SOURCE_CLASS) || SOURCE_TEXT.is_match(collapse_ws(&t).trim()))
}

/// The caption line after a `<figure>` that holds pictures and no caption of its own.
fn figure_next_caption<'d>(
    fig: ElementRef<'d>,
    next: Option<ElementRef<'d>>,
) -> Option<ElementRef<'d>> {
    if visuals_in(fig) == 0 {
        return None;
    }
    let own_caption = fig
        .descendants()
        .skip(1)
        .filter_map(ElementRef::wrap)
        .any(|d| d.value().name() == "figcaption" || is_caption_element(d));
    if own_caption {
        return None;
    }
    let next = next?;
    (visuals_in(next) == 0 && (is_caption_element(next) || is_emphasized_line(next)))
        .then_some(next)
}

fn figure_caption<'d>(el: ElementRef<'d>, next: Option<ElementRef<'d>>) -> Option<CaptionAt<'d>> {
    if matches!(el.value().name(), "figure" | "table" | "ul" | "ol" | "tr") {
        return None;
    }
    if visuals_in(el) == 0 || prose_outside_captions(el, 40) > 40 || is_caption_element(el) {
        return None;
    }
    // Paragraphs, list items, headings or a drawn chart besides the picture make the
    // element a section of the report, not a figure.
    let holds_prose = el
        .descendants()
        .skip(1)
        .filter_map(ElementRef::wrap)
        .any(|d| {
            let n = d.value().name();
            let blockish = matches!(
                n,
                "p" | "li"
                    | "h1"
                    | "h2"
                    | "h3"
                    | "h4"
                    | "h5"
                    | "h6"
                    | "table"
                    | "blockquote"
                    | "pre"
                    | "dd"
                    | "dt"
            );
            if n == "canvas" {
                return true;
            }
            blockish
                && !is_caption_element(d)
                && !is_source_line(d)
                && !d
                    .ancestors()
                    .filter_map(ElementRef::wrap)
                    .take_while(|a| *a != el)
                    .any(is_caption_element)
                && visible_chars(&text_of(d)) > 0
        });
    if holds_prose {
        return None;
    }
    let inside = el
        .descendants()
        .skip(1)
        .filter_map(ElementRef::wrap)
        .find(|d| is_caption_element(*d) && visuals_in(*d) == 0);
    if let Some(c) = inside {
        return Some(CaptionAt::Inside(c));
    }
    let next = next?;
    (visuals_in(next) == 0 && (is_caption_element(next) || is_emphasized_line(next)))
        .then_some(CaptionAt::Next(next))
}

/// A reference entry's number: from its id (`ref-3`), its `value`, or its place in
/// an `<ol>` (counting from `start`).
fn entry_number(li: ElementRef<'_>) -> Option<u64> {
    if let Some(c) = li.value().id().and_then(|i| REF_ID_NUMBER.captures(i)) {
        return c[1].parse().ok();
    }
    if let Some(v) = li.value().attr("value").and_then(|v| v.trim().parse().ok()) {
        return Some(v);
    }
    let parent = li.parent().and_then(ElementRef::wrap)?;
    if parent.value().name() != "ol" {
        return None;
    }
    let start: u64 = parent
        .value()
        .attr("start")
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(1);
    let before = li
        .prev_siblings()
        .filter_map(ElementRef::wrap)
        .filter(|e| e.value().name() == "li")
        .count() as u64;
    Some(start + before)
}

static LABELLED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*[\[(（【]?\d{1,4}[\])）】.]").unwrap());

struct HtmlWalker<'a> {
    loc: Locator<'a>,
    blocks: Vec<Block>,
    table_count: usize,
    page: PageInfo,
    /// Level of the reference heading whose section the walk is in.
    ref_heading: Option<u8>,
    /// Depth of reference-section containers (`<section id="sources">`) around the walk.
    ref_container: usize,
}

fn first_text_snippet(inlines: &[Inline]) -> Option<String> {
    inlines.iter().find_map(|i| match i {
        Inline::Text { text, .. } => {
            let t = text.trim();
            if t.is_empty() {
                None
            } else {
                Some(t.chars().take(12).collect())
            }
        }
        _ => None,
    })
}

impl<'a> HtmlWalker<'a> {
    fn walk_children(&mut self, el: ElementRef<'_>) {
        // Loose text directly inside a container becomes a paragraph of its own.
        let mut loose: Vec<Inline> = Vec::new();
        let kids: Vec<_> = el.children().collect();
        // Caption and source-line siblings already read with the figure before them.
        let mut consumed: Vec<ElementRef<'_>> = Vec::new();
        // The next sibling element after `k` not yet read, unless visible text
        // comes first.
        let next_after = |k: usize, consumed: &[ElementRef<'_>]| {
            kids[k + 1..]
                .iter()
                .filter(|n| ElementRef::wrap(**n).is_none_or(|e| !consumed.contains(&e)))
                .find(|n| match n.value() {
                    Node::Text(t) => !t.trim().is_empty(),
                    Node::Comment(_) => false,
                    _ => true,
                })
                .and_then(|n| ElementRef::wrap(*n))
        };
        for (k, child) in kids.iter().enumerate() {
            match child.value() {
                Node::Text(t) if !t.trim().is_empty() => {
                    // Located like running text, so a block made of loose text (a
                    // `<div class="reference-item">[3] Title <a>`) spans its words.
                    let inl = self.text_node(t, false);
                    loose.extend(inl);
                }
                Node::Element(e) => {
                    let name = e.name();
                    let Some(child_el) = ElementRef::wrap(*child) else {
                        continue;
                    };
                    if consumed.contains(&child_el) {
                        continue;
                    }
                    if is_navigation(child_el) {
                        continue;
                    }
                    if let Some(kind) = script_visual(child_el, &self.page) {
                        self.flush_loose(&mut loose, "div");
                        self.script_visual_block(child_el, kind);
                        continue;
                    }
                    if SKIPPED.contains(&name) && name != "svg" {
                        continue;
                    }
                    // The next sibling element, unless text a reader sees comes first.
                    let next = kids[k + 1..]
                        .iter()
                        .find(|n| match n.value() {
                            Node::Text(t) => !t.trim().is_empty(),
                            Node::Comment(_) => false,
                            _ => true,
                        })
                        .and_then(|n| ElementRef::wrap(*n));
                    if name == "figure" {
                        // A `<figure>` with no caption of its own, captioned by the
                        // line after it (`<p class="caption">Figure 1: ...`).
                        if let Some(n) = figure_next_caption(child_el, next) {
                            self.flush_loose(&mut loose, "div");
                            consumed.push(n);
                            self.figure_wrapper(child_el, CaptionAt::Next(n));
                            self.source_after(next_after(k, &consumed), &mut consumed);
                            continue;
                        }
                    } else if let Some(cap) = figure_caption(child_el, next) {
                        self.flush_loose(&mut loose, "div");
                        if let CaptionAt::Next(n) = cap {
                            consumed.push(n);
                        }
                        self.figure_wrapper(child_el, cap);
                        self.source_after(next_after(k, &consumed), &mut consumed);
                        continue;
                    }
                    if name == "svg" {
                        if is_drawing_svg(child_el) {
                            let inline = self.svg_inline(child_el);
                            loose.push(inline);
                        }
                        continue;
                    }
                    if BLOCK_CONTAINERS.contains(&name) || LEAVES.contains(&name) {
                        self.flush_loose(&mut loose, "div");
                        let before = self.blocks.len();
                        self.element(child_el);
                        let made_figure = self.blocks.len() > before
                            && self
                                .blocks
                                .last()
                                .is_some_and(|b| matches!(b.kind, BlockKind::Figure { .. }));
                        if name == "figure" && made_figure {
                            self.source_after(next_after(k, &consumed), &mut consumed);
                        }
                    } else {
                        let mut inl = Vec::new();
                        self.inline_element(child_el, false, &mut inl);
                        loose.extend(inl);
                    }
                }
                _ => {}
            }
        }
        self.flush_loose(&mut loose, "div");
    }

    /// A source line right after a figure (`<p class="source">Source: ... [2]</p>`):
    /// read into the figure's caption, so its citations are the figure's sources,
    /// and not read again as a paragraph.
    fn source_after<'d>(
        &mut self,
        next: Option<ElementRef<'d>>,
        consumed: &mut Vec<ElementRef<'d>>,
    ) {
        let Some(src_el) = next.filter(|n| is_source_line(*n)) else {
            return;
        };
        if !self
            .blocks
            .last()
            .is_some_and(|b| matches!(b.kind, BlockKind::Figure { .. }))
        {
            return;
        }
        let (inl, inner, elem) = self.read_caption(src_el);
        consumed.push(src_el);
        let Some(block) = self.blocks.last_mut() else {
            return;
        };
        if let BlockKind::Figure {
            caption,
            caption_span,
            ..
        } = &mut block.kind
        {
            let mut cap = caption.take().unwrap_or_default();
            append_source(&mut cap, caption_span, inl, inner);
            *caption = Some(cap);
        }
        if let Some(e) = elem {
            block.span = block.span.start.min(e.start)..block.span.end.max(e.end);
        }
    }

    fn in_ref_section(&self) -> bool {
        self.ref_heading.is_some() || self.ref_container > 0
    }

    /// A chart drawn at view time or a Mermaid source: a code block of that kind,
    /// which the figure stage lists as a pseudo-visual and no stage reads as text.
    fn script_visual_block(&mut self, el: ElementRef<'_>, kind: &str) {
        let name = el.value().name();
        let id = el.value().id();
        let mut from = self.loc.cursor;
        let start = loop {
            let Some(p) = self.loc.find_from(from, &format!("<{name}")) else {
                break None;
            };
            let tag_end = self.loc.raw[p..].find('>').map(|g| p + g).unwrap_or(p);
            let tag = &self.loc.raw[p..tag_end];
            if id.is_none_or(|i| tag.contains(i)) {
                break Some(p);
            }
            from = p + 1;
        };
        let span = match start {
            Some(p) => {
                self.loc.cursor = p;
                self.loc.element(name).unwrap_or(p..p)
            }
            None => self.loc.cursor..self.loc.cursor,
        };
        self.loc.cursor = self.loc.cursor.max(span.end);
        let abs = self.loc.abs(span);
        let text: String = el.text().collect();
        let mut block = Block::new(
            BlockKind::Code {
                info: kind.to_string(),
            },
            abs.clone(),
        );
        block.inlines.push(Inline::Code { text, span: abs });
        block.from_html = true;
        self.blocks.push(block);
    }

    /// An inline `<svg>` drawing as an image whose content is the SVG itself.
    fn svg_inline(&mut self, el: ElementRef<'_>) -> Inline {
        let at = self.loc.element("svg");
        let (span, src) = match at {
            Some(r) => {
                let src = svg_data_uri(&self.loc.raw[r.clone()]);
                self.loc.cursor = r.end;
                (self.loc.abs(r), src)
            }
            None => (
                self.loc.abs(self.loc.cursor..self.loc.cursor),
                svg_data_uri(&el.html()),
            ),
        };
        Inline::Image {
            src,
            alt: svg_alt(el),
            span,
            width: None,
            height: None,
        }
    }

    /// Read a caption element at or after the cursor: its inlines, the span of its
    /// inner text and the span of the whole element.
    fn read_caption(&mut self, c: ElementRef<'_>) -> CaptionRead {
        let name = c.value().name();
        let from = self.loc.cursor;
        let snippet: String = collapse_ws(&text_of(c)).trim().chars().take(12).collect();
        let open = self.loc.find_from(from, &snippet).and_then(|p| {
            self.loc.raw[from..p]
                .rfind(&format!("<{name}"))
                .map(|o| from + o)
        });
        if let Some(o) = open {
            self.loc.cursor = o;
        }
        let elem = self.loc.element(name);
        let inner = elem.clone().map(|r| {
            let inner_start = self.loc.raw[r.start..]
                .find('>')
                .map(|g| r.start + g + 1)
                .unwrap_or(r.start)
                .min(r.end);
            let inner_end = self.loc.raw[..r.end]
                .rfind(&format!("</{name}"))
                .unwrap_or(r.end)
                .max(inner_start);
            self.loc.abs(inner_start..inner_end)
        });
        if elem.is_none() {
            self.loc.cursor = from;
        }
        let mut inl = Vec::new();
        self.collect_inlines(c, false, &mut inl);
        if let Some(r) = &elem {
            self.loc.cursor = self.loc.cursor.max(r.end);
        }
        (inl, inner, elem.map(|r| self.loc.abs(r)))
    }

    /// Visuals of a figure wrapper, in document order, with its caption when the
    /// caption sits inside.
    fn gather_visuals(
        &mut self,
        el: ElementRef<'_>,
        caption_el: ElementRef<'_>,
        images: &mut Vec<Inline>,
        caption: &mut Option<CaptionRead>,
    ) {
        if el == caption_el {
            *caption = Some(self.read_caption(el));
            return;
        }
        if is_source_line(el) {
            return;
        }
        match el.value().name() {
            "img" => {
                let inline = self.image_inline(el);
                images.push(inline);
                return;
            }
            "svg" => {
                if is_drawing_svg(el) {
                    let inline = self.svg_inline(el);
                    images.push(inline);
                }
                return;
            }
            n if SKIPPED.contains(&n) => return,
            _ => {}
        }
        for child in el.children().filter_map(ElementRef::wrap) {
            self.gather_visuals(child, caption_el, images, caption);
        }
    }

    /// A figure built from a wrapper (`<div class="figure">`, `<p>` holding an image,
    /// a bare `<img>`) and its class- or text-marked caption.
    fn figure_wrapper(&mut self, el: ElementRef<'_>, cap: CaptionAt<'_>) {
        let mut images = Vec::new();
        let mut caption = None;
        let caption_el = match cap {
            CaptionAt::Inside(c) | CaptionAt::Next(c) => c,
        };
        self.gather_visuals(el, caption_el, &mut images, &mut caption);
        if let CaptionAt::Next(c) = cap {
            caption = Some(self.read_caption(c));
        }
        let (mut cap_inl, mut caption_span, cap_elem) = caption.unwrap_or_default();
        // A source line inside the wrapper (`<p class="chart-source">Data: ...`)
        // belongs to the caption: its citations are the figure's sources.
        let source = el
            .descendants()
            .skip(1)
            .filter_map(ElementRef::wrap)
            .find(|d| {
                *d != caption_el && is_source_line(*d) && !d.ancestors().any(|a| a == *caption_el)
            });
        if let Some(src_el) = source {
            let save = self.loc.cursor;
            self.loc.cursor = images
                .iter()
                .filter_map(Inline::span)
                .map(|r| r.start.saturating_sub(self.loc.base))
                .min()
                .unwrap_or(save)
                .min(save);
            let (inl, inner, _) = self.read_caption(src_el);
            self.loc.cursor = self.loc.cursor.max(save);
            append_source(&mut cap_inl, &mut caption_span, inl, inner);
        }
        let mut spans: Vec<Range<usize>> = images.iter().filter_map(Inline::span).collect();
        spans.extend(cap_elem);
        let span = match (
            spans.iter().map(|s| s.start).min(),
            spans.iter().map(|s| s.end).max(),
        ) {
            (Some(a), Some(b)) => a..b.max(a),
            _ => self.loc.abs(self.loc.cursor..self.loc.cursor),
        };
        let id = el
            .value()
            .id()
            .or_else(|| caption_el.value().id())
            .map(str::to_string);
        let mut block = Block::new(
            BlockKind::Figure {
                caption: Some(cap_inl),
                caption_span,
                id,
            },
            span,
        );
        block.inlines = images;
        block.from_html = true;
        self.blocks.push(block);
    }

    fn flush_loose(&mut self, loose: &mut Vec<Inline>, _tag: &str) {
        if loose.iter().all(|i| match i {
            Inline::Text { text, .. } => text.trim().is_empty(),
            Inline::Break { .. } => true,
            _ => false,
        }) {
            loose.clear();
            return;
        }
        let inlines = std::mem::take(loose);
        let from = self.loc.cursor;
        self.push_leaf(BlockKind::Paragraph, None, inlines, None, from);
    }

    fn element(&mut self, el: ElementRef<'_>) {
        let name = el.value().name();
        match name {
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                let level = name[1..].parse().unwrap_or(1);
                let from = self.loc.cursor;
                let mut inl = Vec::new();
                self.collect_inlines(el, false, &mut inl);
                if is_reference_heading(&super::blocks::inline_text(&inl)) {
                    self.ref_heading = Some(level);
                } else if self.ref_heading.is_some_and(|l| level <= l) {
                    self.ref_heading = None;
                }
                self.push_leaf(
                    BlockKind::Heading(level),
                    Some(name),
                    inl,
                    el.value().id(),
                    from,
                );
            }
            "p" | "dt" | "dd" | "summary" | "caption" | "address" | "figcaption" => {
                let from = self.loc.cursor;
                let mut inl = Vec::new();
                self.collect_inlines(el, false, &mut inl);
                self.push_leaf(BlockKind::Paragraph, Some(name), inl, el.value().id(), from);
            }
            "li" => {
                let from = self.loc.cursor;
                let mut inl = Vec::new();
                self.collect_inlines(el, false, &mut inl);
                // Entries of a reference list carry their number as written text, so
                // the list reader sees `[3] Title URL` whatever numbered it.
                let by_id = el.value().id().is_some_and(|i| REF_ID_NUMBER.is_match(i));
                let label = if self.in_ref_section() || by_id {
                    let text = super::blocks::inline_text(&inl);
                    entry_number(el).filter(|_| !LABELLED.is_match(&text))
                } else {
                    None
                };
                self.push_leaf(
                    BlockKind::ListItem { number: None },
                    Some("li"),
                    inl,
                    el.value().id(),
                    from,
                );
                if let (Some(n), Some(b)) = (label, self.blocks.last_mut()) {
                    let at = b.span.start;
                    b.inlines.insert(
                        0,
                        Inline::Text {
                            text: format!("[{n}] "),
                            span: at..at,
                            sup: false,
                        },
                    );
                }
                // Nested lists are their own items.
                for child in el.children().filter_map(ElementRef::wrap) {
                    if matches!(child.value().name(), "ul" | "ol") {
                        self.element(child);
                    }
                }
            }
            "pre" => {
                let text: String = el.text().collect();
                let span = self
                    .loc
                    .element("pre")
                    .unwrap_or(self.loc.cursor..self.loc.cursor);
                let abs = self.loc.abs(span);
                let mut block = Block::new(
                    BlockKind::Code {
                        info: String::new(),
                    },
                    abs.clone(),
                );
                block.inlines.push(Inline::Code { text, span: abs });
                block.from_html = true;
                self.blocks.push(block);
            }
            "tr" => {
                let header = el
                    .children()
                    .filter_map(ElementRef::wrap)
                    .all(|c| c.value().name() == "th");
                let from = self.loc.cursor;
                let mut inl = Vec::new();
                for (i, cell) in el
                    .children()
                    .filter_map(ElementRef::wrap)
                    .filter(|c| matches!(c.value().name(), "td" | "th"))
                    .enumerate()
                {
                    if i > 0 {
                        inl.push(Inline::CellSep);
                    }
                    self.collect_inlines(cell, false, &mut inl);
                }
                let table = self.table_count;
                self.push_leaf(
                    BlockKind::TableRow { table, header },
                    Some("tr"),
                    inl,
                    None,
                    from,
                );
            }
            "table" => {
                self.table_count += 1;
                self.walk_children(el);
            }
            "figure" => self.figure(el),
            _ => {
                let is_ref = has_token(el.value(), &REF_CONTAINER);
                self.ref_container += usize::from(is_ref);
                let outer = self.ref_heading;
                self.walk_children(el);
                self.ref_container -= usize::from(is_ref);
                if outer.is_none()
                    && matches!(name, "section" | "article" | "aside" | "footer" | "details")
                {
                    self.ref_heading = None;
                }
            }
        }
    }

    fn figure(&mut self, el: ElementRef<'_>) {
        let fig_span = self.loc.element("figure");
        let mut images = Vec::new();
        let mut caption: Option<Vec<Inline>> = None;
        let mut caption_span = None;
        let mut caption_id = None;
        let mut chart = None;
        let mut source: Option<ElementRef<'_>> = None;
        for node in el.descendants() {
            let Some(child) = ElementRef::wrap(node) else {
                continue;
            };
            match child.value().name() {
                "img" => images.push(self.image_inline(child)),
                "svg" if is_drawing_svg(child) => images.push(self.svg_inline(child)),
                "canvas" if chart.is_none() => chart = Some(child),
                _ if source.is_none()
                    && is_source_line(child)
                    && !child
                        .ancestors()
                        .filter_map(ElementRef::wrap)
                        .any(|a| a.value().name() == "figcaption" || is_caption_element(a)) =>
                {
                    source = Some(child);
                }
                name if caption.is_none()
                    && (name == "figcaption" || is_caption_element(child))
                    && visuals_in(child) == 0 =>
                {
                    let mut inl = Vec::new();
                    let cap_start = self.loc.cursor;
                    if let Some(open) = self.loc.element(name) {
                        let inner_start = self.loc.raw[open.start..]
                            .find('>')
                            .map(|g| open.start + g + 1)
                            .unwrap_or(open.start);
                        let inner_end = self.loc.raw[..open.end]
                            .rfind(&format!("</{name}"))
                            .unwrap_or(open.end)
                            .max(inner_start);
                        caption_span = Some(self.loc.abs(inner_start..inner_end));
                    } else {
                        self.loc.cursor = cap_start;
                    }
                    self.collect_inlines(child, false, &mut inl);
                    caption_id = child.value().id().map(str::to_string);
                    caption = Some(inl);
                }
                _ => {}
            }
        }
        if images.is_empty() {
            if let Some(c) = chart {
                // A script-drawn chart in a `<figure>`: listed, with the figure's line.
                let save = self.loc.cursor;
                self.loc.cursor = fig_span.as_ref().map_or(save, |s| s.start);
                self.script_visual_block(c, "chart");
                self.loc.cursor = save.max(fig_span.as_ref().map_or(save, |s| s.end));
                return;
            }
        }
        if let Some(src_el) = source {
            let save = self.loc.cursor;
            self.loc.cursor = fig_span.as_ref().map_or(save, |s| s.start);
            let mut inl = Vec::new();
            self.collect_inlines(src_el, false, &mut inl);
            self.loc.cursor = save;
            let mut cap = caption.take().unwrap_or_default();
            append_source(&mut cap, &mut caption_span, inl, None);
            caption = Some(cap);
        }
        let span = fig_span
            .clone()
            .map(|s| self.loc.abs(s))
            .or_else(|| images.first().and_then(Inline::span))
            .unwrap_or(self.loc.base..self.loc.base);
        if let Some(s) = &fig_span {
            self.loc.cursor = self.loc.cursor.max(s.end.min(self.loc.raw.len()));
        }
        let mut block = Block::new(
            BlockKind::Figure {
                caption,
                caption_span,
                id: el.value().id().map(str::to_string).or(caption_id),
            },
            span,
        );
        block.inlines = images;
        block.from_html = true;
        self.blocks.push(block);
    }

    /// A text node of the tree as inlines located in the source (moving the cursor
    /// to it); whitespace-only text keeps the cursor's position.
    fn text_node(&mut self, t: &str, sup: bool) -> Vec<Inline> {
        let text = collapse_ws(t);
        if text.is_empty() {
            return Vec::new();
        }
        let needle: String = text.trim().chars().take(12).collect();
        match self.loc.seek(&needle) {
            Some(p) => self.text_pieces(text, p, sup),
            None => {
                let span = self.loc.abs(self.loc.cursor..self.loc.cursor);
                vec![Inline::Text { text, span, sup }]
            }
        }
    }

    /// A text node found at `p` in the fragment, as inlines whose spans cover its
    /// source: one piece per source line, so a sentence in the middle of a long
    /// paragraph maps to its own bytes (a span of the node's first bytes only made
    /// every later sentence collapse onto the node's start, and the self-check then
    /// found the sentence's markers attached to nothing). When the source does not
    /// rebuild the parsed text (entities the decoder does not know), the whole node
    /// is one piece with proportional offsets.
    fn text_pieces(&self, text: String, p: usize, sup: bool) -> Vec<Inline> {
        let raw = self.loc.raw;
        let end = raw[p..].find('<').map_or(raw.len(), |i| p + i);
        let seg = &raw[p..end];
        let lead = text.len() - text.trim_start().len();
        let trail = text.trim_end().len() < text.len();
        let mut pieces: Vec<(String, Range<usize>)> = Vec::new();
        let mut off = p;
        for line in seg.split_inclusive('\n') {
            let t0 = line.trim_start();
            let start = off + (line.len() - t0.len());
            let t1 = t0.trim_end();
            if !t1.is_empty() {
                // Entities are pieces of their own, so offsets after them stay exact.
                let mut line_pieces: Vec<(String, Range<usize>)> = Vec::new();
                let mut last = 0;
                for m in ENTITY.find_iter(t1) {
                    if m.start() > last {
                        line_pieces.push((
                            t1[last..m.start()].to_string(),
                            start + last..start + m.start(),
                        ));
                    }
                    line_pieces.push((decode_text(m.as_str()), start + m.start()..start + m.end()));
                    last = m.end();
                }
                if last < t1.len() {
                    line_pieces.push((t1[last..].to_string(), start + last..start + t1.len()));
                }
                line_pieces = line_pieces
                    .into_iter()
                    .map(|(t, r)| (collapse_ws(&t), r))
                    .collect();
                // A line's pieces join with nothing between them, lines with a space.
                if let Some(first) = line_pieces.first_mut() {
                    if !pieces.is_empty() {
                        first.0.insert(0, ' ');
                        first.1.start = first.1.start.saturating_sub(1);
                    }
                }
                pieces.extend(line_pieces);
            }
            off += line.len();
        }
        let mut rebuilt = " ".repeat(lead);
        rebuilt.push_str(&pieces.iter().map(|(t, _)| t.as_str()).collect::<String>());
        if trail {
            rebuilt.push(' ');
        }
        if pieces.is_empty() || rebuilt != text {
            return vec![Inline::Text {
                text,
                span: self.loc.abs(p..end.max(p)),
                sup,
            }];
        }
        let n = pieces.len();
        pieces
            .into_iter()
            .enumerate()
            .map(|(i, (t, r))| {
                let mut piece = String::new();
                let mut start = r.start;
                if i == 0 && lead > 0 {
                    piece.push(' ');
                    start = start.saturating_sub(1);
                }
                piece.push_str(&t);
                if i + 1 == n && trail {
                    piece.push(' ');
                }
                Inline::Text {
                    text: piece,
                    span: self.loc.abs(start..r.end),
                    sup,
                }
            })
            .collect()
    }

    fn image_inline(&mut self, img: ElementRef<'_>) -> Inline {
        let v = img.value();
        let src = image_source(v);
        let alt = v.attr("alt").unwrap_or("").to_string();
        let at = self.loc.element("img");
        let span = at
            .clone()
            .map(|r| self.loc.abs(r))
            .unwrap_or(self.loc.base + self.loc.cursor..self.loc.base + self.loc.cursor);
        if let Some(r) = at {
            self.loc.cursor = r.end;
        }
        Inline::Image {
            src,
            alt,
            span,
            width: v.attr("width").and_then(parse_dimension),
            height: v.attr("height").and_then(parse_dimension),
        }
    }

    fn collect_inlines(&mut self, el: ElementRef<'_>, sup: bool, out: &mut Vec<Inline>) {
        for child in el.children() {
            match child.value() {
                Node::Text(t) => {
                    let inl = self.text_node(t, sup);
                    out.extend(inl);
                }
                Node::Element(_) => {
                    if let Some(c) = ElementRef::wrap(child) {
                        self.inline_element(c, sup, out);
                    }
                }
                _ => {}
            }
        }
    }

    /// One element inside running text: images, breaks, superscripts, code, links
    /// (in-page citation anchors included) and anything else by its content.
    fn inline_element(&mut self, c: ElementRef<'_>, sup: bool, out: &mut Vec<Inline>) {
        let e = c.value();
        let name = e.name();
        if name == "svg" && is_drawing_svg(c) {
            let inline = self.svg_inline(c);
            out.push(inline);
            return;
        }
        if SKIPPED.contains(&name) || matches!(name, "ul" | "ol") {
            return;
        }
        if name != "a" && is_navigation(c) {
            return;
        }
        match name {
            "img" => {
                let inline = self.image_inline(c);
                out.push(inline);
            }
            "br" => {
                let p = self.loc.cursor;
                out.push(Inline::Break {
                    span: self.loc.abs(p..p),
                    hard: true,
                });
            }
            "sup" => {
                // Separators and brackets around citation anchors
                // (`<sup>[<a>1</a>, <a>2</a>]</sup>`) are no sentence text.
                let mut inner = Vec::new();
                self.collect_inlines(c, true, &mut inner);
                let cites = inner
                    .iter()
                    .any(|i| matches!(i, Inline::Text { text, .. } if CITE_TEXT.is_match(text)));
                if cites {
                    inner.retain(|i| match i {
                        Inline::Text { text, .. } => {
                            let t = text.trim();
                            t.is_empty()
                                || !t.chars().all(|ch| ",;，；、[]【】()（）-–—".contains(ch))
                        }
                        _ => true,
                    });
                }
                out.extend(inner);
            }
            // `<cite>4</cite>`, `<span class="citation">4</span>`,
            // `<span data-ref="4">[4]</span>`: a number marked as a citation by its
            // element, class or data attribute reads like a superscript.
            "cite" | "span" | "small" | "mark" if is_cite_element(c) => {
                self.collect_inlines(c, true, out)
            }
            "code" => {
                let text: String = c.text().collect();
                let p = self.loc.cursor;
                out.push(Inline::Code {
                    text,
                    span: self.loc.abs(p..p),
                });
            }
            "a" => {
                let href = e.attr("href").unwrap_or("");
                if is_anchor_decoration(c) {
                    return;
                }
                if href.is_empty() || href.starts_with('#') {
                    // A second reference to the same footnote (`[2:1]` pointing at
                    // `#fn2`) cites entry 2.
                    if let Some(n) = self.repeat_reference(c) {
                        let p = self.loc.cursor;
                        let span = match text_capped(c, 24)
                            .and_then(|t| self.loc.find_from(p, t.trim()))
                        {
                            Some(at) => self.loc.abs(at..at + 1),
                            None => self.loc.abs(p..p),
                        };
                        out.push(Inline::Text {
                            text: format!("[{n}]"),
                            span,
                            sup: true,
                        });
                        return;
                    }
                    // A number pointing into the reference section cites
                    // that entry, like a superscript.
                    let cite = self.is_cite_anchor(c);
                    self.collect_inlines(c, sup || cite, out);
                } else {
                    let text = collapse_ws(&c.text().collect::<String>());
                    let start = self.loc.element("a");
                    let span = start
                        .map(|r| self.loc.abs(r))
                        .unwrap_or(self.loc.abs(self.loc.cursor..self.loc.cursor));
                    out.push(Inline::Link {
                        url: href.to_string(),
                        text: text.trim().to_string(),
                        span,
                    });
                    // Images inside the link (badges, thumbnails) still count.
                    for img in c
                        .descendants()
                        .filter_map(ElementRef::wrap)
                        .filter(|d| d.value().name() == "img")
                    {
                        let inline = self.image_inline(img);
                        out.push(inline);
                    }
                }
            }
            "p" | "div" | "li" | "figcaption" => {
                // A break only after content: `<li>\n<p>` (loose lists, footnote
                // lists) must not open with an empty line, which split each entry in
                // two (a label line and an unlabelled line numbered after the list).
                let has_content = out.iter().any(|i| match i {
                    Inline::Text { text, .. } => !text.trim().is_empty(),
                    Inline::Break { .. } | Inline::CellSep => false,
                    _ => true,
                });
                if has_content {
                    let p = self.loc.cursor;
                    out.push(Inline::Break {
                        span: self.loc.abs(p..p),
                        hard: true,
                    });
                }
                self.collect_inlines(c, sup, out);
            }
            _ => self.collect_inlines(c, sup, out),
        }
    }

    /// An in-page anchor whose text is a number (`3`, `[3]`) and whose target is in
    /// the reference section, names an entry (`#ref-3`), or whose class marks a
    /// citation.
    /// `<a href="#fn2">[2:1]</a>`: the repeated-reference form of footnote
    /// renderers; the entry number when the target names that entry.
    fn repeat_reference(&self, a: ElementRef<'_>) -> Option<u64> {
        static REPEAT: LazyLock<Regex> =
            LazyLock::new(|| Regex::new(r"^\s*\[?(\d{1,4}):\d{1,3}\]?\s*$").unwrap());
        let target = a.value().attr("href")?.strip_prefix('#')?;
        let text = text_capped(a, 24)?;
        let n: u64 = REPEAT.captures(&text)?[1].parse().ok()?;
        let by_id: u64 = REF_ID_NUMBER.captures(target)?[1].parse().ok()?;
        (n == by_id).then_some(n)
    }

    fn is_cite_anchor(&self, a: ElementRef<'_>) -> bool {
        let v = a.value();
        let target = v.attr("href").unwrap_or("").trim_start_matches('#');
        if NON_REF_TARGET.is_match(target) {
            return false;
        }
        let Some(text) = text_capped(a, 24) else {
            return false;
        };
        CITE_TEXT.is_match(&text)
            && (self.page.ref_ids.contains(target)
                || REF_TARGET.is_match(target)
                || v.attr("class").is_some_and(|k| CITE_CLASS.is_match(k)))
    }

    fn push_leaf(
        &mut self,
        kind: BlockKind,
        tag: Option<&str>,
        inlines: Vec<Inline>,
        id: Option<&str>,
        from: usize,
    ) {
        let after_inlines = self.loc.cursor;
        self.loc.cursor = from.min(self.loc.cursor);
        let located = tag.and_then(|t| {
            let save = self.loc.cursor;
            // Locate by the element's text first (robust when tags repeat), then by tag.
            let by_text = first_text_snippet(&inlines).and_then(|s| {
                let p = self.loc.find_from(save, &s)?;
                let open = self.loc.raw[..p].rfind(&format!("<{t}"))?;
                (open >= save).then_some(open)
            });
            if let Some(open) = by_text {
                self.loc.cursor = open;
            }
            let r = self.loc.element(t);
            if r.is_none() {
                self.loc.cursor = save;
            }
            r
        });
        let span = match located {
            Some(r) => self.loc.abs(r),
            None => {
                let spans: Vec<Range<usize>> = inlines
                    .iter()
                    .filter_map(Inline::span)
                    .filter(|s| !s.is_empty())
                    .collect();
                match (spans.first(), spans.last()) {
                    (Some(a), Some(b)) => a.start..b.end.max(a.start),
                    _ => self.loc.abs(self.loc.cursor..self.loc.cursor),
                }
            }
        };
        self.loc.cursor = self.loc.cursor.max(after_inlines);
        // Inline spans found before the leaf was located may lie outside it; clamp.
        let inlines = inlines
            .into_iter()
            .map(|i| clamp_inline(i, &span))
            .collect();
        let mut block = Block::new(kind, span);
        block.inlines = inlines;
        block.html_id = id.map(str::to_string);
        block.from_html = true;
        self.blocks.push(block);
    }
}

/// Heading permalinks (`¶`, `#`) and footnote back-links (`↩`): not text.
fn is_anchor_decoration(a: ElementRef<'_>) -> bool {
    let class = a.value().attr("class").unwrap_or("");
    if class.split_whitespace().any(|c| {
        matches!(
            c,
            "anchor-link"
                | "headerlink"
                | "header-anchor"
                | "anchor"
                | "footnote-backref"
                | "permalink"
        )
    }) {
        return true;
    }
    text_capped(a, 3).is_some_and(|t| {
        matches!(
            t.trim(),
            "¶" | "#" | "§" | "🔗" | "↩" | "↩\u{fe0e}" | "↑" | "⤴"
        )
    })
}

fn clamp_inline(i: Inline, outer: &Range<usize>) -> Inline {
    let fix = |s: Range<usize>| {
        if s.start >= outer.start && s.end <= outer.end {
            s
        } else {
            outer.start..outer.start
        }
    };
    match i {
        Inline::Text { text, span, sup } => Inline::Text {
            text,
            span: fix(span),
            sup,
        },
        other => other,
    }
}

fn collapse_ws(s: &str) -> String {
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

/// Blocks of an HTML fragment that starts at byte `base` of the report text.
pub(crate) fn blocks_from_fragment(raw: &str, base: usize, _full: &str) -> Vec<Block> {
    let doc = Html::parse_fragment(raw);
    let mut walker = HtmlWalker {
        loc: Locator {
            raw,
            base,
            cursor: 0,
        },
        blocks: Vec::new(),
        table_count: 10_000,
        page: PageInfo::of(doc.root_element()),
        ref_heading: None,
        ref_container: 0,
    };
    walker.walk_children(doc.root_element());
    walker.blocks
}

/// Blocks of a whole HTML report.
pub(crate) fn blocks_from_document(text: &str) -> Vec<Block> {
    let doc = Html::parse_document(text);
    let mut walker = HtmlWalker {
        loc: Locator {
            raw: text,
            base: 0,
            cursor: 0,
        },
        blocks: Vec::new(),
        table_count: 0,
        page: PageInfo::of(doc.root_element()),
        ref_heading: None,
        ref_container: 0,
    };
    let root = doc.root_element();
    match root
        .children()
        .filter_map(ElementRef::wrap)
        .find(|e| e.value().name() == "body")
    {
        Some(body) => walker.walk_children(body),
        None => walker.walk_children(root),
    }
    walker.blocks
}

/// Whether a text is an HTML document whatever its file is called: it opens (after
/// blank lines, a BOM, an XML prolog, comments or a fenced ```` ```html ```` line)
/// with `<!DOCTYPE html>` or `<html>`.
pub(crate) fn looks_like_document(text: &str) -> bool {
    let mut rest = text.trim_start_matches('\u{feff}').trim_start();
    loop {
        let lower: String = rest
            .chars()
            .take(16)
            .collect::<String>()
            .to_ascii_lowercase();
        if lower.starts_with("<!doctype html") || lower.starts_with("<html") {
            return true;
        }
        let skip = if lower.starts_with("<?xml") {
            rest.find("?>").map(|i| i + 2)
        } else if lower.starts_with("<!--") {
            rest.find("-->").map(|i| i + 3)
        } else if lower.starts_with("```html") || lower.starts_with("~~~html") {
            rest.find('\n').map(|i| i + 1)
        } else {
            None
        };
        match skip {
            Some(n) => rest = rest[n..].trim_start(),
            None => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attrs_are_parsed_in_any_quoting() {
        let a = parse_tag_attrs(r#"<img src="a b.png" alt='x &amp; y' width=30 hidden>"#);
        assert_eq!(a["src"], "a b.png");
        assert_eq!(a["alt"], "x & y");
        assert_eq!(a["width"], "30");
        assert_eq!(a["hidden"], "");
    }

    #[test]
    fn figure_fragment_gives_caption_span() {
        let raw = "<figure>\n  <img src=\"images/a.png\" alt=\"A\">\n  <figcaption id=\"fig1\">Figure 1: A thing. Source: <a href=\"#ref2\">[2]</a></figcaption>\n</figure>";
        let blocks = blocks_from_fragment(raw, 100, "");
        assert_eq!(blocks.len(), 1);
        let BlockKind::Figure {
            caption,
            caption_span,
            id,
        } = &blocks[0].kind
        else {
            panic!("not a figure: {:?}", blocks[0].kind)
        };
        assert_eq!(id.as_deref(), Some("fig1"));
        let cs = caption_span.clone().unwrap();
        assert_eq!(
            &raw[cs.start - 100..cs.end - 100],
            "Figure 1: A thing. Source: <a href=\"#ref2\">[2]</a>"
        );
        let cap = super::super::blocks::inline_text(caption.as_ref().unwrap());
        assert_eq!(cap, "Figure 1: A thing. Source: [2]");
        assert_eq!(blocks[0].span, 100..100 + raw.len());
        let img = blocks[0].images().next().unwrap().span().unwrap();
        assert!(raw[img.start - 100..img.end - 100].starts_with("<img"));
    }

    #[test]
    fn document_headings_paragraphs_lists_tables() {
        let doc = "<html><head><title>x</title></head><body><h1>Title</h1><p>Para <sup>3</sup>.</p><ul><li>one</li><li>two</li></ul><table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table></body></html>";
        let blocks = blocks_from_document(doc);
        let kinds: Vec<_> = blocks.iter().map(|b| format!("{:?}", b.kind)).collect();
        assert_eq!(kinds[0], "Heading(1)");
        assert_eq!(kinds[1], "Paragraph");
        assert!(kinds[2].starts_with("ListItem"));
        assert!(kinds[4].contains("header: true"));
        assert_eq!(blocks[5].plain_text(), "1 | 2");
        assert_eq!(&doc[blocks[0].span.clone()], "<h1>Title</h1>");
    }
}
