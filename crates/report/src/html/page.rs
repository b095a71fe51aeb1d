//! Whole pages: what a browser shows. Navigation, tables of contents, script-drawn
//! charts, drawing SVGs and anchors into the reference section are recognised from
//! the document tree, never from indentation.

use std::collections::HashSet;
use std::sync::LazyLock;

use base64::Engine as _;
use regex::Regex;
use scraper::ElementRef;

use crate::cues::is_reference_heading;

use super::element::{collapse_ws, has_token, parse_dimension, text_of, tokens, visible_chars};

/// An id or class token naming a reference section (`<section id="sources">`).
pub(super) static REF_CONTAINER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(refs?|references?|sources?|citations?|bibliography|biblio|footnotes?|endnotes?|works-?cited|(?:refs?|references?|sources?|citations?)[-_]?(?:list|section|container))$").unwrap()
});
/// An in-page target that names a reference entry (`#ref-3`, `#cite_note-3`, `#fn3`).
pub(super) static REF_TARGET: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(refs?|references?|sources?|citations?|cite|bib|bibliography|fn|footnotes?|endnotes?|notes?)(?:[-_:]?(?:note|ref)?[-_:]?\d{0,4})$").unwrap()
});
/// Digits closing a reference entry id (`ref-3`, `cite_note-12`, `fn4`).
pub(super) static REF_ID_NUMBER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(?:refs?|references?|sources?|citations?|cite|bib|fn|footnotes?|endnotes?|notes?|r|s|c)[-_:]?(?:note[-_:]?)?(\d{1,4})$").unwrap()
});
/// In-page targets that are figures, tables or sections, never reference entries.
pub(super) static NON_REF_TARGET: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(fig|figure|tab|table|chart|eq|equation|sec|section|img|image)[-_:]?\d")
        .unwrap()
});
/// An id or class token of navigation: menus, tables of contents, breadcrumbs.
pub(super) static NAV_TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(nav|navbar|navigation|menu|menubar|toc|breadcrumbs?|pagination|skip-?link|table-?of-?contents|tableofcontents|sidenav|topnav)$|^(nav|navbar|toc|menu|sidenav|topnav)[-_]|[-_](nav|navbar|toc|menu|navigation)$").unwrap()
});
/// Class tokens of text a reader does not see as report text: notebook prompts
/// (`In [3]:`), screen-reader-only labels.
pub(super) static HIDDEN_TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(jp-InputPrompt|jp-OutputPrompt|prompt|input_prompt|output_prompt|sr-only|visually-hidden|screen-reader-text)$").unwrap()
});
/// An id or class token of a sidebar, header or footer band: navigation only when
/// it is mostly links.
pub(super) static SIDEBAR_TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)sidebar|side-bar|aside|masthead|site-header|site-footer").unwrap()
});
/// A class marking a caption (`caption`, `fig-caption`, `img-caption`, `figure-title`).
pub(super) static CAPTION_CLASS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)caption|figcap|(fig|figure|img|image|chart|graph|plot)[-_]?(title|desc|description|note|text|label|legend-text)").unwrap()
});
/// A file a chart component points at (`charts/sales.json`, `plot.html`, `*.vl.json`).
pub(super) static CHART_FILE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)chart|plot|graph|vega|echarts|\.vl\.json|\.vg\.json").unwrap()
});
/// Script calls of chart libraries.
pub(super) static CHART_SCRIPT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"new\s+Chart\s*\(|\bChart\s*\(|echarts\s*\.\s*init|Plotly\s*\.\s*(newPlot|plot|react)|Highcharts\s*\.\s*(chart|stockChart)|new\s+ApexCharts|vegaEmbed\s*\(|google\s*\.\s*visualization|c3\s*\.\s*generate|\bd3\s*\.\s*select|am[45]charts|new\s+Chartist|billboard\s*\.\s*generate").unwrap()
});
/// Element ids a chart script draws into.
pub(super) static CHART_TARGET_ID: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?:getElementById\s*\(\s*|querySelector\s*\(\s*['"]#|(?:newPlot|Plotly\.plot|Plotly\.react|Highcharts\.chart|Highcharts\.stockChart|vegaEmbed|d3\.select)\s*\(\s*['"]#?)['"]?([A-Za-z][\w\-:.]*)['"]"#).unwrap()
});
/// `name = document.` right before a lookup: the variable the element is kept in.
static LOOKUP_VARIABLE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"([A-Za-z_$][\w$]*)\s*=\s*(?:document\s*\.\s*)?$").unwrap());
/// A function or method defined in a script: `function draw(`, `draw = function(`,
/// `draw: (a) =>`, `draw = a =>`, or a method's shorthand at the start of a line
/// (`draw(a) {`).
static FUNCTION_DEF: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)\bfunction\s*\*?\s*([A-Za-z_$][\w$]*)\s*\(|([A-Za-z_$][\w$]*)\s*[:=]\s*(?:async\s+)?(?:function\b[^(]*\(|\([^()]*\)\s*=>|[A-Za-z_$][\w$]*\s*=>)|^[ \t]*(?:async\s+|static\s+)*([A-Za-z_$][\w$]*)\s*\([^()]*\)\s*\{").unwrap()
});
/// A call whose first argument is an element id, bare or as a selector:
/// `initGraph('network')`, `Charts.draw("#sales", data)`.
static CALL_WITH_ID: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"([A-Za-z_$][\w$]*)\s*\(\s*['"`]#?([A-Za-z][\w\-:.]*)['"`]\s*[,)]"#).unwrap()
});
/// Words the method-shorthand form would take for a name: statements, not functions.
const NOT_FUNCTIONS: &[&str] = &[
    "if", "for", "while", "switch", "catch", "function", "return", "with", "else", "do",
];

/// Whether the element a script looks up at `at` (a `getElementById(`/`querySelector(`
/// call in `code`; `blank` is [`code_only`] of it) is kept in a variable that, in the
/// rest of its block, is only filled with markup or text (`cards.innerHTML = ...`,
/// `list.appendChild(...)`) and never handed to a call or asked for a drawing
/// context: a box of cards or rows the page builds, not a chart, even in a script
/// that draws charts elsewhere. Anything less clear keeps the id.
fn filled_with_markup_only(code: &str, blank: &str, at: usize) -> bool {
    let mut from = at.saturating_sub(80);
    while !code.is_char_boundary(from) {
        from += 1;
    }
    let Some(caps) = LOOKUP_VARIABLE.captures(&code[from..at]) else {
        return false;
    };
    let var = &caps[1];
    const FILLS: &[&str] = &[
        "innerHTML",
        "outerHTML",
        "textContent",
        "innerText",
        "appendChild",
        "append",
        "prepend",
        "insertAdjacentHTML",
        "replaceChildren",
    ];
    let scope = &blank[at..block_end(blank, at)];
    let mut filled = false;
    for (start, end) in uses_of(scope, var) {
        let after = scope[end..].trim_start();
        let before = scope[..start].trim_end();
        if let Some(member) = after.strip_prefix('.') {
            let member = member.trim_start();
            let name_len = member
                .bytes()
                .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$'))
                .count();
            let name = &member[..name_len];
            if name == "getContext" {
                return false;
            }
            filled |= FILLS.contains(&name);
            continue;
        }
        // Handed to a call (`f(var)`, `f(a, var)`) or to an option (`{ el: var }`).
        let closes_argument = after.starts_with(',') || after.starts_with(')');
        if (closes_argument && (before.ends_with('(') || before.ends_with(',')))
            || before.ends_with(':')
        {
            return false;
        }
    }
    filled
}

/// Byte ranges of `name` as a whole identifier in `code`.
fn uses_of<'a>(code: &'a str, name: &'a str) -> impl Iterator<Item = (usize, usize)> + 'a {
    let ident = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'$');
    code.match_indices(name).filter_map(move |(i, _)| {
        let end = i + name.len();
        let clear_before = i == 0 || !ident(code.as_bytes()[i - 1]);
        let clear_after = end >= code.len() || !ident(code.as_bytes()[end]);
        (clear_before && clear_after).then_some((i, end))
    })
}

/// `code` with the contents of its string and template literals and its comments
/// replaced by spaces (newlines and byte offsets kept): brace counts and name
/// searches then see code only (`display: grid` in a template is no use of `grid`).
fn code_only(code: &str) -> String {
    let bytes = code.as_bytes();
    let mut out = bytes.to_vec();
    let blank = |from: usize, to: usize, out: &mut Vec<u8>| {
        for b in &mut out[from..to.min(bytes.len())] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
    };
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            q @ (b'"' | b'\'' | b'`') => {
                let start = i + 1;
                i += 1;
                while i < bytes.len() && bytes[i] != q {
                    if bytes[i] == b'\\' {
                        i += 1;
                    } else if q != b'`' && bytes[i] == b'\n' {
                        break;
                    }
                    i += 1;
                }
                blank(start, i, &mut out);
            }
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                let start = i;
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
                blank(start, i, &mut out);
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                let start = i;
                i = code[i + 2..]
                    .find("*/")
                    .map_or(bytes.len(), |e| i + 2 + e + 1);
                blank(start, i + 1, &mut out);
            }
            _ => {}
        }
        i += 1;
    }
    // Only whole literals and comments were blanked, multi-byte characters with them.
    String::from_utf8(out).unwrap_or_else(|_| " ".repeat(code.len()))
}

/// Where the block around byte `from` of literal-free code ends: the byte of the `}`
/// that closes it, or the end of the text.
fn block_end(blank: &str, from: usize) -> usize {
    let mut depth = 0usize;
    for (i, b) in blank.bytes().enumerate().skip(from) {
        match b {
            b'{' => depth += 1,
            b'}' if depth == 0 => return i,
            b'}' => depth -= 1,
            _ => {}
        }
    }
    blank.len()
}

/// The body of the function whose definition (name, then `(`, `=>` or `{`) ends at
/// `from` in literal-free code: from its `{` to the matching `}`, or for an arrow
/// function without braces, the rest of its line.
fn function_body(blank: &str, from: usize) -> std::ops::Range<usize> {
    let bytes = blank.as_bytes();
    let mut i = from;
    if bytes.get(from.wrapping_sub(1)) == Some(&b'{') {
        i = from - 1;
    } else if bytes.get(from.wrapping_sub(1)) == Some(&b'(') {
        // Past the parameters to what follows them.
        let mut depth = 1usize;
        while i < bytes.len() && depth > 0 {
            match bytes[i] {
                b'(' => depth += 1,
                b')' => depth -= 1,
                _ => {}
            }
            i += 1;
        }
    }
    while i < bytes.len() && bytes[i].is_ascii_whitespace() {
        i += 1;
    }
    if bytes.get(i) == Some(&b'{') {
        let end = block_end(blank, i + 1);
        return i..(end + 1).min(blank.len());
    }
    let end = blank[i..].find('\n').map_or(blank.len(), |e| i + e);
    i..end
}

/// Ids the page's scripts draw charts into. In each script that calls a chart
/// library, the ids its chart calls and element lookups name (not a box it only fills
/// with markup); across all scripts, the ids handed as the first argument to a
/// function whose body draws a chart, directly or through one or two calls of other
/// such functions (`NetworkGraph.initGraph('network', data)` where `initGraph`
/// runs `d3.select(...)` in another file).
fn chart_ids_of(codes: &[&str]) -> HashSet<String> {
    let mut ids = HashSet::new();
    let blanks: Vec<String> = codes.iter().map(|c| code_only(c)).collect();
    for (code, blank) in codes.iter().zip(&blanks) {
        if !CHART_SCRIPT.is_match(code) {
            continue;
        }
        for c in CHART_TARGET_ID.captures_iter(code) {
            let whole = c.get(0).expect("match");
            if !filled_with_markup_only(code, blank, whole.start()) {
                ids.insert(c[1].to_string());
            }
        }
    }
    let mut bodies: Vec<(&str, &str)> = Vec::new();
    for (code, blank) in codes.iter().zip(&blanks) {
        for c in FUNCTION_DEF.captures_iter(blank) {
            let Some(name) = c.get(1).or_else(|| c.get(2)).or_else(|| c.get(3)) else {
                continue;
            };
            if NOT_FUNCTIONS.contains(&name.as_str()) {
                continue;
            }
            let end = c.get(0).expect("match").end();
            let body = function_body(blank, end);
            bodies.push((&code[name.range()], &code[body]));
        }
    }
    let mut drawing: HashSet<&str> = bodies
        .iter()
        .filter(|(_, body)| CHART_SCRIPT.is_match(body))
        .map(|(name, _)| *name)
        .collect();
    for _ in 0..2 {
        let callers: Vec<&str> = bodies
            .iter()
            .filter(|(name, _)| !drawing.contains(name))
            .filter(|(_, body)| {
                CALL_NAME
                    .captures_iter(body)
                    .any(|c| drawing.contains(&c[1]))
            })
            .map(|(name, _)| *name)
            .collect();
        if callers.is_empty() {
            break;
        }
        drawing.extend(callers);
    }
    if drawing.is_empty() {
        return ids;
    }
    for code in codes {
        for c in CALL_WITH_ID.captures_iter(code) {
            if drawing.contains(&c[1]) {
                ids.insert(c[2].to_string());
            }
        }
    }
    ids
}

/// A call of a named function or method: `draw(`, `this.draw (`.
static CALL_NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"([A-Za-z_$][\w$]*)\s*\(").unwrap());

/// Shapes that draw something inside an `<svg>`.
pub(super) const SVG_SHAPES: &[&str] = &[
    "rect", "line", "polyline", "polygon", "circle", "ellipse", "path",
];

/// What the whole document says about its elements before the walk: which ids lie
/// in a reference section (so anchors into them are citations) and which elements
/// scripts draw charts into.
#[derive(Default)]
pub(super) struct PageInfo {
    pub(super) ref_ids: HashSet<String>,
    pub(super) chart_ids: HashSet<String>,
}

impl PageInfo {
    /// `scripts`: the page's own script files (see [`crate::page_scripts`]), read
    /// with its inline scripts.
    pub(super) fn of(root: ElementRef<'_>, scripts: &[String]) -> PageInfo {
        let mut info = PageInfo::default();
        let mut ref_heading: Option<u8> = None;
        let mut inline: Vec<String> = Vec::new();
        for node in root.descendants() {
            let Some(el) = ElementRef::wrap(node) else {
                continue;
            };
            let v = el.value();
            let name = v.name();
            if name == "script" {
                inline.push(el.text().collect());
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
        let codes: Vec<&str> = inline
            .iter()
            .chain(scripts)
            .map(String::as_str)
            .filter(|c| !c.trim().is_empty())
            .collect();
        info.chart_ids = chart_ids_of(&codes);
        info
    }
}

pub(super) fn heading_level(name: &str) -> Option<u8> {
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
pub(super) fn is_navigation(el: ElementRef<'_>) -> bool {
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
pub(super) fn link_share(el: ElementRef<'_>) -> f64 {
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
pub(super) fn is_toc_list(el: ElementRef<'_>) -> bool {
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
pub(super) fn is_drawing_svg(el: ElementRef<'_>) -> bool {
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
pub(super) fn svg_data_uri(source: &str) -> String {
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
pub(super) fn svg_alt(el: ElementRef<'_>) -> String {
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
pub(super) fn script_visual(el: ElementRef<'_>, page: &PageInfo) -> Option<&'static str> {
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
    // A control or a line of text a chart script also looks up (a "show all" button,
    // a caption it fills in) is no chart: only a box can hold one.
    let holder = !matches!(
        name,
        "button"
            | "a"
            | "input"
            | "select"
            | "textarea"
            | "option"
            | "label"
            | "form"
            | "img"
            | "p"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
            | "li"
            | "ul"
            | "ol"
            | "table"
            | "tr"
            | "td"
            | "th"
            | "summary"
    );
    if holder && v.id().is_some_and(|id| page.chart_ids.contains(id)) && empty() {
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

/// A reference entry's number: from its id (`ref-3`), its `value`, or its place in
/// an `<ol>` (counting from `start`).
pub(super) fn entry_number(li: ElementRef<'_>) -> Option<u64> {
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
