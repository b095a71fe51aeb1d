//! HTML front end: whole HTML reports and HTML blocks inside Markdown become the same
//! leaf blocks as Markdown. The HTML parser keeps no source positions, so spans are
//! recovered by locating each element's distinctive text in the source, moving
//! forward only; where that fails the enclosing element's span is used.

mod element;
mod figures;
mod inlines;
mod page;
mod walk;

use std::ops::Range;

use scraper::{ElementRef, Html};

use super::blocks::Block;
use super::render_map::RenderMap;
pub(crate) use element::{parse_dimension, parse_tag_attrs, picture_shown_by};
use page::PageInfo;
use walk::HtmlWalker;

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
    /// Byte ranges the parser reads as raw text or drops (the insides of `<script>` and
    /// `<style>`, comments), sorted. No element or report text lives there, so a match
    /// inside one is never taken: a script's template literal that repeats the page's
    /// markup or wording would otherwise pull every later element's line into the script.
    opaque: Vec<Range<usize>>,
}

impl<'a> Locator<'a> {
    fn new(raw: &'a str, base: usize) -> Self {
        Locator {
            raw,
            base,
            cursor: 0,
            opaque: opaque_ranges(raw),
        }
    }

    /// Position (in the fragment) of `needle` at or after the cursor; the cursor moves
    /// to it.
    fn seek(&mut self, needle: &str) -> Option<usize> {
        let found = self.find_from(self.cursor, needle)?;
        self.cursor = found;
        Some(found)
    }

    /// First position of `needle` at or after `from` outside the opaque ranges.
    fn find_from(&self, from: usize, needle: &str) -> Option<usize> {
        if needle.is_empty() {
            return None;
        }
        let mut from = from;
        loop {
            let pos = self.raw.get(from..)?.find(needle)? + from;
            // The last range starting at or before `pos`, if it covers `pos`.
            let i = self.opaque.partition_point(|r| r.start <= pos);
            match i.checked_sub(1).map(|i| &self.opaque[i]) {
                Some(r) if pos < r.end => from = r.end,
                _ => return Some(pos),
            }
        }
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

/// The insides of `<script>` and `<style>` elements and of comments in `raw`, in order.
/// An unclosed one runs to the end, as the parser reads it.
fn opaque_ranges(raw: &str) -> Vec<Range<usize>> {
    // ASCII lowercasing keeps byte offsets, so positions found here index `raw`.
    let lower = raw.to_ascii_lowercase();
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(lt) = lower[at..].find('<').map(|p| p + at) {
        let rest = &lower[lt..];
        if rest.starts_with("<!--") {
            let end = lower[lt + 4..]
                .find("-->")
                .map_or(lower.len(), |p| lt + 4 + p + 3);
            out.push(lt..end);
            at = end;
            continue;
        }
        let name = ["script", "style"].into_iter().find(|n| {
            rest[1..].starts_with(n)
                && matches!(rest.as_bytes().get(1 + n.len()), Some(b) if b.is_ascii_whitespace() || *b == b'>' || *b == b'/')
        });
        let Some(name) = name else {
            at = lt + 1;
            continue;
        };
        let Some(open_end) = lower[lt..].find('>').map(|p| lt + p + 1) else {
            break;
        };
        let close = format!("</{name}");
        let end = lower[open_end..]
            .find(&close)
            .map_or(lower.len(), |p| open_end + p);
        if open_end < end {
            out.push(open_end..end);
        }
        at = end.max(open_end);
    }
    out
}

/// Blocks of an HTML fragment that starts at byte `base` of the report text.
/// With `renders`, charts a browser drew there become figures.
pub(crate) fn blocks_from_fragment(
    raw: &str,
    base: usize,
    renders: Option<&RenderMap>,
    scripts: &[String],
) -> Vec<Block> {
    let doc = Html::parse_fragment(raw);
    let mut walker = HtmlWalker {
        loc: Locator::new(raw, base),
        blocks: Vec::new(),
        table_count: 10_000,
        page: PageInfo::of(doc.root_element(), scripts),
        ref_heading: None,
        ref_container: 0,
        renders,
    };
    walker.walk_children(doc.root_element());
    walker.blocks
}

/// Blocks of a whole HTML report.
/// With `renders`, charts a browser drew there become figures.
pub(crate) fn blocks_from_document(
    text: &str,
    renders: Option<&RenderMap>,
    scripts: &[String],
) -> Vec<Block> {
    let doc = Html::parse_document(text);
    let mut walker = HtmlWalker {
        loc: Locator::new(text, 0),
        blocks: Vec::new(),
        table_count: 0,
        page: PageInfo::of(doc.root_element(), scripts),
        ref_heading: None,
        ref_container: 0,
        renders,
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
    use crate::blocks::BlockKind;

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
        let blocks = blocks_from_fragment(raw, 100, None, &[]);
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
        let cap = crate::blocks::inline_text(caption.as_ref().unwrap());
        assert_eq!(cap, "Figure 1: A thing. Source: [2]");
        assert_eq!(blocks[0].span, 100..100 + raw.len());
        let img = blocks[0].images().next().unwrap().span().unwrap();
        assert!(raw[img.start - 100..img.end - 100].starts_with("<img"));
    }

    #[test]
    fn document_headings_paragraphs_lists_tables() {
        let doc = "<html><head><title>x</title></head><body><h1>Title</h1><p>Para <sup>3</sup>.</p><ul><li>one</li><li>two</li></ul><table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table></body></html>";
        let blocks = blocks_from_document(doc, None, &[]);
        let kinds: Vec<_> = blocks.iter().map(|b| format!("{:?}", b.kind)).collect();
        assert_eq!(kinds[0], "Heading(1)");
        assert_eq!(kinds[1], "Paragraph");
        assert!(kinds[2].starts_with("ListItem"));
        assert!(kinds[4].contains("header: true"));
        assert_eq!(blocks[5].plain_text(), "1 | 2");
        assert_eq!(&doc[blocks[0].span.clone()], "<h1>Title</h1>");
    }

    #[test]
    fn markup_repeated_in_a_script_does_not_pull_spans_into_it() {
        // A page whose script builds rows from a template literal that repeats the page's
        // own markup and (decoded) wording: every block lies before the script, where
        // the reader sees it.
        let doc = "<html><body>\n<h2>Plans &amp; rates</h2>\n<p>Flex&nbsp;15 at 9.39&cent; per kWh</p>\n<div class=\"chart-wrap\"><canvas id=\"usage\"></canvas></div>\n<p>After the chart.</p>\n<!-- <p>Plans & rates</p> -->\n<script>\nconst row = `<h2>Plans & rates</h2><p>Flex\u{a0}15 at 9.39\u{a2} per kWh</p><div><canvas id=\"usage\"></canvas></div><p>After the chart.</p>`;\nnew Chart(document.getElementById('usage'), {});\n</script>\n</body></html>";
        let script = doc.find("<script>").unwrap();
        let blocks = blocks_from_document(doc, None, &[]);
        assert!(blocks.len() >= 4, "{blocks:?}");
        for b in &blocks {
            assert!(
                b.span.end <= script,
                "{:?} placed at {:?}, inside the script at {script}: {:?}",
                b.kind,
                b.span,
                &doc[b.span.clone()]
            );
        }
        let canvas = blocks
            .iter()
            .find(|b| doc[b.span.clone()].contains("<canvas"))
            .expect("the canvas is a block");
        assert!(doc[canvas.span.clone()].starts_with("<canvas id=\"usage\""));
    }

    #[test]
    fn opaque_ranges_are_script_and_style_insides_and_comments() {
        let raw = "<p>a</p><SCRIPT type=x>1<2</SCRIPT><style>p{}</style><!-- c --><scripts>t</scripts><script>open";
        let r = opaque_ranges(raw);
        let texts: Vec<&str> = r.iter().map(|r| &raw[r.clone()]).collect();
        assert_eq!(texts, ["1<2", "p{}", "<!-- c -->", "open"]);
    }

    /// The source text of each script-chart block of `doc`, in order.
    fn chart_spans(doc: &str) -> Vec<&str> {
        chart_spans_with(doc, &[])
    }

    /// [`chart_spans`] of a page that also loads the script files `scripts`.
    fn chart_spans_with<'a>(doc: &'a str, scripts: &[String]) -> Vec<&'a str> {
        blocks_from_document(doc, None, scripts)
            .iter()
            .filter(|b| matches!(&b.kind, BlockKind::Code { info } if info == "chart"))
            .map(|b| &doc[b.span.clone()])
            .collect()
    }

    #[test]
    fn boxes_a_page_script_file_draws_into_are_chart_candidates() {
        // The page names its boxes only in calls of functions its script files
        // define; the files draw into them with d3 (through a parameter) or Chart.js
        // (one call further down), fill a box with cards, or place a map.
        let doc = "<html><body>\n<h2>Network</h2>\n<div id=\"net\"></div>\n<h2>Scenarios</h2>\n<div id=\"scen\">\n<!-- filled by script -->\n</div>\n<h2>States</h2>\n<div id=\"cards\"></div>\n<h2>Map</h2>\n<div id=\"map\"></div>\n<script src=\"graph.js\"></script>\n<script>\nGraph.initGraph('net', data);\nScenarios.init(\"scen\", data);\nMapView.initMap('map', data);\nfillCards();\n</script>\n</body></html>";
        let graph = "const Graph = {\n  initGraph(containerId, data) {\n    const el = document.getElementById(containerId);\n    el.innerHTML = '';\n    this.svg = d3.select(`#${containerId}`).append('svg');\n  },\n};\n";
        let scenarios = "const Scenarios = {\n  init(id, data) {\n    const box = document.getElementById(id);\n    this.drawComparison(box, data);\n  },\n  drawComparison(box, data) {\n    const c = document.createElement('canvas');\n    box.appendChild(c);\n    this.chart = new Chart(c, { type: 'bar', data });\n  },\n};\n";
        let cards = "function fillCards() {\n  const grid = document.getElementById('cards');\n  grid.innerHTML = rows.map(r => `<div style=\"display: grid; gap: 4px\">${r}</div>`).join('');\n}\nfunction bars() { new Chart(ctx, {}); }\n";
        let map = "const MapView = {\n  initMap(containerId = 'map', data) {\n    this.map = L.map(containerId).setView([0, 0], 4);\n  },\n};\n";
        let files: Vec<String> = [graph, scenarios, cards, map].map(String::from).to_vec();
        let charts = chart_spans_with(doc, &files);
        assert!(
            charts.iter().any(|c| c.contains("id=\"net\"")),
            "{charts:?}"
        );
        assert!(
            charts.iter().any(|c| c.contains("id=\"scen\"")),
            "{charts:?}"
        );
        assert!(
            !charts.iter().any(|c| c.contains("id=\"cards\"")),
            "{charts:?}"
        );
        assert!(
            !charts.iter().any(|c| c.contains("id=\"map\"")),
            "{charts:?}"
        );
        assert_eq!(charts.len(), 2, "{charts:?}");
        // Without the files the page's own calls name no chart.
        assert!(chart_spans(doc).is_empty());
    }

    #[test]
    fn a_box_filled_only_with_markup_stays_no_chart_whatever_its_templates_say() {
        // `display: grid` and `{ grid: ... }` inside strings or templates are no
        // handing-over of the `grid` variable; a lookup handed to a chart is kept.
        let script = |rest: &str| {
            format!(
                "<script>\nconst grid = document.getElementById('cards');\ngrid.innerHTML = `<div style=\"display: grid\">x</div>`;\nconst label = 'options: grid';\n{rest}\n</script>"
            )
        };
        let doc = |rest: &str| {
            format!(
                "<html><body>\n<div id=\"cards\"></div>\n<canvas id=\"c\"></canvas>\n{}\n</body></html>",
                script(rest)
            )
        };
        let no_hand = doc("new Chart(document.getElementById('c'), {});");
        assert_eq!(chart_spans(&no_hand).len(), 1, "only the canvas");
        let handed = doc("new Chart(document.getElementById('c'), {});\ndraw(grid);");
        assert_eq!(chart_spans(&handed).len(), 2, "the box is handed to a call");
    }

    #[test]
    fn script_chart_targets_keep_their_place_after_repaired_markup() {
        // A note written as `<p><p>…</p></p>` leaves an empty paragraph the parser
        // makes up for the stray `</p>`; it must not push the next chart's place down
        // to the next paragraph written.
        let card = |id: &str, note: &str| {
            format!(
                "<div class='card'>\n<div class='wrap'>\n<div id='{id}'></div>\n</div>\n<script>\nvegaEmbed('#{id}', {{\"mark\": \"bar\"}});\n</script>\n<p class='note'>\n<p>{note}</p>\n</p>\n</div>\n"
            )
        };
        let doc = format!(
            "<html><body>\n<h2>Findings</h2>\n<p>Intro words.</p>\n{}{}<h2>Next</h2>\n<p>Closing words.</p>\n</body></html>",
            card("vis-a", "First chart note."),
            card("vis-b", "Second chart note.")
        );
        let charts = chart_spans(&doc);
        assert_eq!(
            charts,
            ["<div id='vis-a'></div>", "<div id='vis-b'></div>"],
            "{doc}"
        );
    }

    #[test]
    fn a_box_a_chart_script_only_fills_with_markup_is_no_chart() {
        let doc = "<html><body>\n<h2>Market</h2>\n<div id=\"trend\"></div>\n<div id=\"cards\" class=\"grid\"></div>\n<div id=\"box\"></div>\n<div id=\"notes\"></div>\n<script>\nconst el = document.getElementById('trend');\nel.innerHTML = '';\necharts.init(el).setOption({});\nfunction showCards(items) {\n  const cards = document.getElementById('cards');\n  cards.innerHTML = '';\n  items.forEach(i => { const c = document.createElement('div'); cards.appendChild(c); });\n}\nconst b = document.getElementById('box');\nb.textContent = 'loading';\nlineChart(b, [1, 2, 3]);\ndocument.getElementById('notes').textContent = 'x';\n</script>\n</body></html>";
        let charts = chart_spans(doc);
        // `notes` is looked up without a variable: whether it holds a chart is left
        // to what the live page shows there.
        assert_eq!(
            charts,
            [
                "<div id=\"trend\"></div>",
                "<div id=\"box\"></div>",
                "<div id=\"notes\"></div>"
            ],
            "{doc}"
        );
    }
}
