//! Charts a browser draws: what of a report must be shown in a browser, the page to
//! serve it as (with every start tag marked by its byte offset in
//! [`Report::text`](crate::Report::text)), and the render map that turns the charts a
//! browser found back into figures at the places they stand.
//!
//! Pure and deterministic like the rest of the crate: it never starts a browser. A
//! caller renders [`RenderPlan::html`] (any headless browser), reads each chart's
//! nearest `data-tvir-at` ancestor, and parses again with a [`RenderMap`]
//! ([`crate::parse_rendered`]).

use std::collections::HashSet;
use std::sync::LazyLock;

use pulldown_cmark::{CodeBlockKind, CowStr, Event, Parser, Tag, TagEnd};
use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::model::{Report, SourceFormat};
pub use crate::render_map::{RenderMap, RenderedFigure};

/// The attribute carrying a start tag's byte offset in the report text.
pub const ANCHOR_ATTR: &str = "data-tvir-at";

/// Start tags that hold no chart (document head, void elements): never marked.
const UNMARKED: &[&str] = &[
    "html", "head", "meta", "link", "base", "title", "script", "style", "noscript", "template",
    "br", "wbr", "hr", "param", "source", "track", "col", "area",
];
/// Elements whose content is text, not markup: the scan skips to their close tag.
const RAW_TEXT: &[&str] = &[
    "script", "style", "textarea", "title", "xmp", "noembed", "noframes", "template",
];

/// A script that draws charts or a file that holds them: a reason to render a page.
static SCRIPT_TAG: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?i)<script[\s>]").unwrap());
/// An attribute of a start tag: `name="v"`, `name='v'`, `name=v` or JSX's
/// `name={"v"}`.
static ATTR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"([A-Za-z_:@][\w:.@-]*)\s*=\s*(?:"([^"]*)"|'([^']*)'|\{\s*["'`]([^"'`]*)["'`]\s*\}|([^\s"'=<>`{}]+))"#)
        .unwrap()
});
/// Elements whose file attributes are links, scripts, sources or forms: never a chart
/// shown by a component.
const NOT_COMPONENTS: &[&str] = &[
    "a", "area", "base", "link", "script", "img", "source", "track", "video", "audio", "form",
    "input", "button", "meta", "use", "image", "picture",
];
/// Elements that show a file by themselves (the browser loads it).
const FRAMES: &[&str] = &["iframe", "frame", "embed", "object"];
/// Vega and Vega-Lite: the libraries a spec block is drawn with (fetched by the page
/// through the caller's resource rules, like any chart library).
pub const VEGA_SCRIPTS: [&str; 3] = [
    "https://cdn.jsdelivr.net/npm/vega@6",
    "https://cdn.jsdelivr.net/npm/vega-lite@6",
    "https://cdn.jsdelivr.net/npm/vega-embed@7",
];

/// One start tag of an HTML text: where `<` is, where its name ends, its name
/// (lower case).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StartTag {
    pub at: usize,
    pub name_end: usize,
    pub name: String,
}

/// Every start tag of `raw` in order, outside comments, declarations and the
/// content of raw-text elements (`<script>`, `<style>`, ...).
pub(crate) fn start_tags(raw: &str) -> Vec<StartTag> {
    let bytes = raw.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(p) = raw.get(i..).and_then(|r| r.find('<')) {
        let at = i + p;
        let rest = &raw[at..];
        if rest.starts_with("<!--") {
            i = rest.find("-->").map_or(raw.len(), |e| at + e + 3);
            continue;
        }
        let next = bytes.get(at + 1).copied().unwrap_or(b' ');
        if matches!(next, b'!' | b'?' | b'/') {
            i = rest.find('>').map_or(raw.len(), |e| at + e + 1);
            continue;
        }
        if !next.is_ascii_alphabetic() {
            i = at + 1;
            continue;
        }
        let name_len = rest[1..]
            .bytes()
            .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b':' | b'.'))
            .count();
        let name_end = at + 1 + name_len;
        let name = raw[at + 1..name_end].to_ascii_lowercase();
        let tag_end = tag_end(raw, name_end);
        i = tag_end;
        if RAW_TEXT.contains(&name.as_str()) {
            let close = format!("</{name}");
            let lower_rest = raw[tag_end..].to_ascii_lowercase();
            i = lower_rest.find(&close).map_or(raw.len(), |c| tag_end + c);
        }
        out.push(StartTag { at, name_end, name });
    }
    out
}

/// The byte after the `>` closing a start tag whose name ends at `from` (quoted
/// attribute values may hold `>`).
fn tag_end(raw: &str, from: usize) -> usize {
    let mut quote: Option<u8> = None;
    for (k, b) in raw.as_bytes()[from..].iter().enumerate() {
        match (quote, b) {
            (Some(q), c) if *c == q => quote = None,
            (Some(_), _) => {}
            (None, b'"' | b'\'') => quote = Some(*b),
            (None, b'>') => return from + k + 1,
            _ => {}
        }
    }
    raw.len()
}

/// `raw` (which starts at byte `base` of the report text) with `data-tvir-at="N"`
/// after the name of every start tag that can hold a chart.
pub fn annotate_html(raw: &str, base: usize) -> String {
    annotate(raw, base).0
}

/// A local chart file a start tag points at, and whether the browser shows it by
/// itself (a frame) or the suite must (a component of any name: `<ChartEmbed
/// file="charts/c1.html" />`, `<Plot spec="s.vl.json">`, `<chart-frame src>`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct ChartFile {
    file: String,
    frame: bool,
}

/// What kind of local file a value names: a page (`.html`, `.htm`) or a spec
/// (`.json`, `.vl.json`); None for anything else or a remote address.
fn chart_file_kind(value: &str) -> Option<&'static str> {
    let v = value.trim();
    if v.is_empty() || !is_local(v) || v.contains(['<', '>', '"']) {
        return None;
    }
    let path = v.split(['?', '#']).next().unwrap_or(v).to_ascii_lowercase();
    if path.ends_with(".html") || path.ends_with(".htm") {
        Some("page")
    } else if path.ends_with(".json") {
        Some("spec")
    } else {
        None
    }
}

/// The chart file a start tag (`raw[t.at..end]`) points at, if any.
fn chart_file_of(raw: &str, t: &StartTag, end: usize) -> Option<ChartFile> {
    if NOT_COMPONENTS.contains(&t.name.as_str()) || UNMARKED.contains(&t.name.as_str()) {
        return None;
    }
    let frame = FRAMES.contains(&t.name.as_str());
    let attrs = raw.get(t.name_end..end)?;
    ATTR.captures_iter(attrs).find_map(|c| {
        let name = c.get(1)?.as_str().to_ascii_lowercase();
        let value = (2..=5).find_map(|i| c.get(i))?.as_str();
        if name == ANCHOR_ATTR || name == "href" || name == "action" {
            return None;
        }
        chart_file_kind(value)?;
        Some(ChartFile {
            file: value.trim().to_string(),
            frame,
        })
    })
}

/// `raw` marked (see [`annotate_html`]), a component's chart file shown in it (a
/// page in an `<iframe>`, a JSON file drawn by [`SPEC_LOADER`]), and the chart files
/// found: (offset in the report text, description, whether the file holds JSON and
/// needs the loader).
fn annotate(raw: &str, base: usize) -> (String, Vec<(usize, String, bool)>) {
    let mut out = String::with_capacity(raw.len() + raw.len() / 8);
    let mut files = Vec::new();
    let mut last = 0;
    for t in start_tags(raw) {
        if UNMARKED.contains(&t.name.as_str()) {
            continue;
        }
        let at = base + t.at;
        let end = tag_end(raw, t.name_end);
        let cf = chart_file_of(raw, &t, end);
        let spec = cf
            .as_ref()
            .is_some_and(|cf| chart_file_kind(&cf.file) == Some("spec"));
        let spec_box = |file: &str| {
            format!(
                "<div {ANCHOR_ATTR}=\"{at}\" class=\"tvir-spec-file\" data-tvir-spec-src=\"{}\"></div>",
                attr_escape(file)
            )
        };
        // A frame showing a JSON file would show it as text: the file is drawn in a box
        // put before the frame, and the frame is hidden (our attribute comes first, so
        // it wins over the frame's own `style`).
        if let (Some(cf), true) = (&cf, spec) {
            if cf.frame {
                out.push_str(&raw[last..t.at]);
                out.push_str(&spec_box(&cf.file));
                out.push_str(&raw[t.at..t.name_end]);
                out.push_str(&format!(" {ANCHOR_ATTR}=\"{at}\" style=\"display:none\""));
                last = t.name_end;
                files.push((at, format!("chart file {}", cf.file), true));
                continue;
            }
        }
        out.push_str(&raw[last..t.name_end]);
        out.push_str(&format!(" {ANCHOR_ATTR}=\"{at}\""));
        last = t.name_end;
        let Some(cf) = cf else {
            continue;
        };
        files.push((at, format!("chart file {}", cf.file), spec));
        if cf.frame {
            continue;
        }
        // The component's own start tag, then the file shown inside it; a JSX
        // self-closing tag is closed (HTML would nest what follows inside it).
        let tag = &raw[t.name_end..end];
        let self_closing = tag.trim_end_matches('>').trim_end().ends_with('/');
        out.push_str(tag);
        if spec {
            out.push_str(&spec_box(&cf.file));
        } else {
            out.push_str(&format!(
                "<iframe {ANCHOR_ATTR}=\"{at}\" src=\"{}\" style=\"width:100%;height:600px;border:0\"></iframe>",
                attr_escape(&cf.file)
            ));
        }
        if self_closing {
            out.push_str(&format!("</{}>", &raw[t.at + 1..t.name_end]));
        }
        last = end;
    }
    out.push_str(&raw[last..]);
    (out, files)
}

/// Plotly, loaded by [`SPEC_LOADER`] for a JSON file that holds a Plotly figure.
pub const PLOTLY_SCRIPT: &str = "https://cdn.plot.ly/plotly-2.35.3.min.js";

/// The script that draws each JSON chart file (`div.tvir-spec-file`) with the library
/// its content calls for (Vega/Vega-Lite or Plotly, loaded only then), or draws nothing
/// when the file holds no chart: `spec_loader.js`, called with the libraries' addresses.
static SPEC_LOADER: LazyLock<String> = LazyLock::new(|| {
    let vega: Vec<String> = VEGA_SCRIPTS.iter().map(|s| format!("{s:?}")).collect();
    let body: Vec<&str> = include_str!("spec_loader.js")
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect();
    format!(
        "<script>{}([{}], {PLOTLY_SCRIPT:?});</script>",
        body.join("\n").trim(),
        vega.join(", ")
    )
});

/// An element of the report that needs a browser to be seen: a script target, a
/// chart file shown through a frame or component, a Vega spec.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// 1-based line in the report file.
    pub line: usize,
    /// What it is (`script chart`, `chart file charts/x.html`, `vega-lite spec`).
    pub what: String,
}

/// What of a report a browser must show, and the page to show it with.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderPlan {
    /// The entry path the page is served as, relative to the report folder (the
    /// report file itself for HTML; a sibling name for Markdown), so relative
    /// addresses resolve as the author meant.
    pub entry: String,
    /// The served document: the report (HTML, or Markdown rendered to HTML) with
    /// every start tag marked by its offset in the report text.
    pub html: String,
    /// The elements expected to need a browser (the parse lists them as
    /// pseudo-visuals until rendered). May be empty when the page only has scripts:
    /// which elements are charts is decided in the live page.
    pub candidates: Vec<Candidate>,
    /// The `data-tvir-at` anchors of the start tags on the candidates' lines (and of
    /// chart files shown by Markdown images): the elements whose live state says whether
    /// an undrawn candidate was a chart at all.
    pub probes: Vec<usize>,
}

/// The render plan of a parsed report, or None when nothing in it needs a browser
/// (no script, no chart file, no Vega spec).
pub fn render_plan(report: &Report) -> Option<RenderPlan> {
    let text = report.text.as_str();
    let lines = crate::blocks::LineIndex::new(text);
    let mut candidates: Vec<Candidate> = report
        .pseudo_visuals
        .iter()
        .filter(|p| p.kind == "chart" && p.notation.is_none())
        .map(|p| Candidate {
            line: p.line,
            what: "script chart".into(),
        })
        .collect();
    let known: HashSet<usize> = candidates.iter().map(|c| c.line).collect();
    let is_md = report.format == SourceFormat::Markdown && !crate::html::looks_like_document(text);
    let (html, md_extra) = if is_md {
        markdown_page(text)
    } else {
        let (mut html, files) = annotate(text, 0);
        if files.iter().any(|f| f.2) {
            match html.to_ascii_lowercase().rfind("</body") {
                Some(i) => html.insert_str(i, &SPEC_LOADER),
                None => html.push_str(&SPEC_LOADER),
            }
        }
        let files = files.into_iter().map(|(at, what, _)| (at, what)).collect();
        (html, files)
    };
    let md_extra: Vec<(usize, String)> = md_extra
        .into_iter()
        .filter(|(at, _)| !known.contains(&lines.line_of(*at)))
        .collect();
    for (at, what) in &md_extra {
        let line = lines.line_of(*at);
        if !candidates.iter().any(|c| c.line == line) {
            candidates.push(Candidate {
                line,
                what: what.clone(),
            });
        }
    }
    candidates.sort_by_key(|c| c.line);
    if candidates.is_empty() && !SCRIPT_TAG.is_match(text) {
        return None;
    }
    let file = report
        .path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| "report".into());
    let entry = if is_md {
        let stem = file.rsplit_once('.').map_or(file.as_str(), |(s, _)| s);
        format!("{stem}.tvir-render.html")
    } else {
        file
    };
    let on_lines: HashSet<usize> = candidates.iter().map(|c| c.line).collect();
    let mut probes: Vec<usize> = start_tags(text)
        .into_iter()
        .filter(|t| !UNMARKED.contains(&t.name.as_str()))
        .map(|t| t.at)
        .filter(|at| on_lines.contains(&lines.line_of(*at)))
        .chain(md_extra.iter().map(|(at, _)| *at))
        .collect();
    probes.sort_unstable();
    probes.dedup();
    Some(RenderPlan {
        entry,
        html,
        candidates,
        probes,
    })
}

fn is_local(src: &str) -> bool {
    let s = src.trim().to_ascii_lowercase();
    !(s.starts_with("http:")
        || s.starts_with("https:")
        || s.starts_with("//")
        || s.starts_with("data:")
        || s.starts_with("javascript:"))
}

fn attr_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
}

/// A Markdown report as the HTML page a browser shows: rendered by pulldown-cmark,
/// raw HTML passed through with its start tags marked, `![...](x.html)` shown as an
/// `<iframe>` and Vega/Vega-Lite blocks drawn with vega-embed, each marked with the
/// offset of its source. Also returns the offsets and descriptions of the chart
/// files and specs it found.
fn markdown_page(text: &str) -> (String, Vec<(usize, String)>) {
    let mut extra = Vec::new();
    let mut events: Vec<Event<'_>> = Vec::new();
    let mut html_block: Option<(String, usize)> = None;
    let mut image: Option<(usize, String)> = None;
    let mut code: Option<(usize, String, String)> = None;
    let mut vega_used = false;
    let mut spec_files = false;
    // The same text the parse reads: cited fences closed and HTML regions that
    // indentation would break taken out (offsets kept), those regions appended.
    let closed = crate::markdown::close_cited_fences(text);
    let regions = crate::markdown::indented_html_regions(&closed);
    let mut blanked = closed.as_bytes().to_vec();
    for r in &regions {
        for b in &mut blanked[r.clone()] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
    }
    crate::jsx::plain_values(&mut blanked);
    let blanked = String::from_utf8(blanked).unwrap_or_default();
    let parser = Parser::new_ext(&blanked, crate::markdown::markdown_options()).into_offset_iter();
    for (event, range) in parser {
        if let Some((raw, _)) = html_block.as_mut() {
            match event {
                Event::Html(h) | Event::Text(h) | Event::InlineHtml(h) => {
                    raw.push_str(&h);
                    continue;
                }
                Event::End(TagEnd::HtmlBlock) => {
                    let (raw, base) = html_block.take().unwrap_or_default();
                    let (html, files) = annotate(&raw, base);
                    note_files(&mut extra, &mut spec_files, files);
                    events.push(Event::Html(CowStr::from(html)));
                    continue;
                }
                _ => {}
            }
        }
        if let Some((_, _, body)) = code.as_mut() {
            match event {
                Event::Text(t) => {
                    body.push_str(&t);
                    continue;
                }
                Event::End(TagEnd::CodeBlock) => {
                    let (at, info, body) = code.take().unwrap_or_default();
                    let spec = body.trim();
                    let div = format!(
                        "<div {ANCHOR_ATTR}=\"{at}\" class=\"tvir-vega\"></div>\
                         <script type=\"application/json\" class=\"tvir-vega-spec\">{}</script>",
                        spec.replace("</", "<\\/")
                    );
                    events.push(Event::Html(CowStr::from(div)));
                    extra.push((at, format!("{info} spec")));
                    vega_used = true;
                    continue;
                }
                _ => continue,
            }
        }
        if image.is_some() {
            if let Event::End(TagEnd::Image) = event {
                let (at, src) = image.take().unwrap_or_default();
                let frame = format!(
                    "<iframe {ANCHOR_ATTR}=\"{at}\" src=\"{}\" style=\"width:100%;height:600px;border:0\"></iframe>",
                    attr_escape(&src)
                );
                events.push(Event::Html(CowStr::from(frame)));
                extra.push((at, format!("chart file {src}")));
            }
            continue;
        }
        match event {
            Event::Start(Tag::HtmlBlock) => html_block = Some((String::new(), range.start)),
            Event::InlineHtml(h) => {
                let (html, files) = annotate(&h, range.start);
                note_files(&mut extra, &mut spec_files, files);
                events.push(Event::InlineHtml(CowStr::from(html)));
            }
            Event::Start(Tag::Image { dest_url, .. })
                if is_local(&dest_url) && is_html_file(&dest_url) =>
            {
                image = Some((range.start, dest_url.to_string()));
            }
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info))) if is_vega_info(&info) => {
                let kind = info.split_whitespace().next().unwrap_or("").to_string();
                code = Some((range.start, kind, String::new()));
            }
            e => events.push(e),
        }
    }
    let mut body = String::with_capacity(text.len() * 2);
    pulldown_cmark::html::push_html(&mut body, events.into_iter());
    for r in regions {
        let (html, files) = annotate(&text[r.clone()], r.start);
        note_files(&mut extra, &mut spec_files, files);
        body.push_str(&html);
    }
    let mut head = String::from("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">");
    if vega_used {
        for s in VEGA_SCRIPTS {
            head.push_str(&format!("<script src=\"{s}\"></script>"));
        }
    }
    head.push_str("</head><body>\n");
    let mut page = head + &body;
    if vega_used {
        page.push_str(
            "<script>document.querySelectorAll('div.tvir-vega').forEach(function (d) {\
             var s = d.nextElementSibling; try { vegaEmbed(d, JSON.parse(s.textContent), \
             {actions: false}); } catch (e) {} });</script>",
        );
    }
    if spec_files {
        page.push_str(&SPEC_LOADER);
    }
    page.push_str("</body></html>\n");
    (page, extra)
}

/// Chart files found by [`annotate`] in a Markdown page: listed, and the JSON file
/// loader added when one holds JSON.
fn note_files(
    extra: &mut Vec<(usize, String)>,
    spec_files: &mut bool,
    files: Vec<(usize, String, bool)>,
) {
    for (at, what, spec) in files {
        *spec_files |= spec;
        extra.push((at, what));
    }
}

fn is_html_file(src: &str) -> bool {
    let path = src
        .split(['?', '#'])
        .next()
        .unwrap_or(src)
        .to_ascii_lowercase();
    path.ends_with(".html") || path.ends_with(".htm")
}

fn is_vega_info(info: &str) -> bool {
    matches!(
        info.split_whitespace()
            .next()
            .unwrap_or("")
            .to_ascii_lowercase()
            .as_str(),
        "vega" | "vega-lite" | "vegalite"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_tags_skip_comments_scripts_and_quoted_gt() {
        let raw = r#"<div a="x>y"><!-- <canvas> --><script>if (a<b) "<p>"</script><canvas id=c></canvas></div>"#;
        let names: Vec<(usize, String)> = start_tags(raw)
            .into_iter()
            .map(|t| (t.at, t.name))
            .collect();
        let canvas = raw.find("<canvas id").unwrap();
        assert_eq!(
            names,
            vec![
                (0, "div".to_string()),
                (raw.find("<script").unwrap(), "script".to_string()),
                (canvas, "canvas".to_string())
            ]
        );
    }

    #[test]
    fn annotation_marks_offsets_in_the_source() {
        let raw = "<p>Hi</p>\n<canvas id=\"c\"></canvas><br>";
        let out = annotate_html(raw, 100);
        assert_eq!(
            out,
            "<p data-tvir-at=\"100\">Hi</p>\n<canvas data-tvir-at=\"110\" id=\"c\"></canvas><br>"
        );
        assert_eq!(&raw[10..17], "<canvas");
    }
}

#[cfg(test)]
mod parse_tests {
    use std::path::Path;

    use super::*;
    use crate::{parse_rendered, parse_str, FigureKind, SourceFormat};

    const PAGE: &str = r#"<!DOCTYPE html>
<html><head><script src="https://cdn.jsdelivr.net/npm/chart.js"></script></head><body>
<h1>Solar report</h1>
<p>Capacity grew fast in 2023 [1]. The chart below shows it.</p>
<figure>
<canvas id="cap"></canvas>
<figcaption>Figure 1: Installed capacity by year. Source: [1]</figcaption>
</figure>
<p>Prices fell as well, see the next chart.</p>
<div class="chart-box"><div id="price" style="height:300px"></div></div>
<p class="caption">Figure 2: Module prices [2]</p>
<p>Closing words about the market.</p>
<h2>References</h2>
<ol><li>IEA, Renewables 2023. https://iea.org/r</li><li>BNEF prices. https://bnef.com/p</li></ol>
<script>new Chart(document.getElementById('cap'), {}); echarts.init(document.getElementById('price'));</script>
</body></html>"#;

    fn rendered(content: &str, title: &str) -> RenderedFigure {
        RenderedFigure {
            content: content.into(),
            caption: None,
            title: Some(title.into()),
            heading: None,
            caption_source: None,
            chart_data: Some(serde_json::json!({"title": title, "series": [[1, 2, 3]]})),
        }
    }

    fn map_of(entries: &[(usize, RenderedFigure)]) -> RenderMap {
        let mut map = RenderMap::default();
        for (at, f) in entries {
            map.charts.entry(*at).or_default().push(f.clone());
        }
        map
    }

    #[test]
    fn without_a_browser_script_charts_stay_pseudo_visuals() {
        let r = parse_str(
            PAGE,
            SourceFormat::Html,
            Path::new("report.html"),
            Path::new("."),
        );
        assert!(r.figures.is_empty());
        assert_eq!(
            r.pseudo_visuals
                .iter()
                .filter(|p| p.kind == "chart")
                .count(),
            2
        );
        let plan = render_plan(&r).expect("a page with scripts needs a browser");
        assert_eq!(plan.entry, "report.html");
        assert_eq!(plan.candidates.len(), 2);
        let canvas = PAGE.find("<canvas").unwrap();
        assert!(plan
            .html
            .contains(&format!("<canvas data-tvir-at=\"{canvas}\" id=\"cap\">")));
    }

    #[test]
    fn rendered_charts_become_captioned_figures_in_place() {
        let canvas = PAGE.find("<canvas").unwrap();
        let price = PAGE.find("<div id=\"price\"").unwrap();
        let map = map_of(&[
            (canvas, rendered("report.html#canvas#cap", "Capacity")),
            (price, rendered("report.html#div#price", "Prices")),
        ]);
        let path = Path::new("report.html");
        let r = parse_rendered(PAGE, SourceFormat::Html, path, Path::new("."), &map);
        assert_eq!(r.figures.len(), 2, "{:?}", r.figures);
        let f1 = &r.figures[0];
        assert_eq!(f1.kind, FigureKind::Chart);
        assert_eq!(f1.render.as_deref(), Some("browser"));
        assert_eq!(f1.content, "report.html#canvas#cap");
        assert_eq!(
            f1.caption.as_deref(),
            Some("Figure 1: Installed capacity by year. Source: [1]")
        );
        assert_eq!(f1.ref_idxs, vec!["1"]);
        assert!(f1.chart_data.is_some());
        let f2 = &r.figures[1];
        assert_eq!(f2.caption.as_deref(), Some("Figure 2: Module prices [2]"));
        assert_eq!(f2.ref_idxs, vec!["2"]);
        assert!(f2.context.as_deref().unwrap_or("").contains("Prices fell"));
        // Neither is a pseudo-visual any more; no caption line became a fact.
        assert!(r.pseudo_visuals.iter().all(|p| p.kind != "chart"));
        assert!(r.facts.iter().all(|f| !f.fact.contains("Module prices")));
        assert!(r
            .structural_errors
            .completeness
            .iter()
            .all(|e| e.code != "missing_image_file"));
    }

    #[test]
    fn several_charts_under_one_anchor_and_a_chart_in_running_text() {
        let text = "<html><body><p>Intro text here [1].</p><div id=\"dash\"></div>\
                    <p>Words <span id=\"inline\"></span> more words.</p>\
                    <script>d3.select('#dash')</script></body></html>";
        let dash = text.find("<div id=\"dash\"").unwrap();
        let inline = text.find("<span").unwrap();
        let map = map_of(&[
            (dash, rendered("report.html#svg:nth-of-type(1)", "One")),
            (dash, rendered("report.html#svg:nth-of-type(2)", "Two")),
            (inline, rendered("report.html#span#inline>svg", "Three")),
        ]);
        let r = parse_rendered(
            text,
            SourceFormat::Html,
            Path::new("report.html"),
            Path::new("."),
            &map,
        );
        let names: Vec<&str> = r.figures.iter().map(|f| f.content.as_str()).collect();
        assert_eq!(
            names,
            [
                "report.html#svg:nth-of-type(1)",
                "report.html#svg:nth-of-type(2)",
                "report.html#span#inline>svg"
            ]
        );
        // The configured title is the caption of last resort.
        assert_eq!(r.figures[2].caption.as_deref(), Some("Three"));
    }

    #[test]
    fn components_of_any_name_show_their_chart_files() {
        let md = "# Ferry report\n\nimport ChartEmbed from '../components/ChartEmbed'\n\nRidership rose [1].\n\n\
                  <ChartEmbed file=\"charts/c1.html\" height={420} />\n\n\
                  <Plot spec={\"specs/fares.vl.json\"} />\n\n\
                  <chart-frame data-chart='charts/c2.htm'></chart-frame>\n\n\
                  <a href=\"charts/c3.html\">the chart as a page</a> and <img src=\"pic.png\">\n\n\
                  ## References\n\n1. Source one https://example.com/one\n";
        let r = parse_str(
            md,
            SourceFormat::Markdown,
            Path::new("report.mdx"),
            Path::new("."),
        );
        let plan = render_plan(&r).expect("chart files need a browser");
        let whats: Vec<&str> = plan.candidates.iter().map(|c| c.what.as_str()).collect();
        assert_eq!(
            whats,
            [
                "chart file charts/c1.html",
                "chart file specs/fares.vl.json",
                "chart file charts/c2.htm"
            ]
        );
        let at = md.find("<ChartEmbed").unwrap();
        assert!(
            plan.html.contains(&format!(
                "<ChartEmbed data-tvir-at=\"{at}\" file=\"charts/c1.html\" height= 420  />\
                 <iframe data-tvir-at=\"{at}\" src=\"charts/c1.html\""
            )),
            "{}",
            plan.html
        );
        assert!(plan.html.contains("</ChartEmbed>"));
        let spec = md.find("<Plot").unwrap();
        assert!(plan.html.contains(&format!(
            "<div data-tvir-at=\"{spec}\" class=\"tvir-spec-file\" data-tvir-spec-src=\"specs/fares.vl.json\">"
        )));
        // The loader that decides by the file's content, with the libraries it may load.
        assert!(plan.html.contains(VEGA_SCRIPTS[2]) && plan.html.contains(PLOTLY_SCRIPT));
        // The same in an HTML report; a link and an image are not components.
        let html = "<html><body><p>Text [1].</p><ChartFrame src=\"charts/c1.html\"></ChartFrame>\
                    <a href=\"charts/c3.html\">page</a></body></html>";
        let r = parse_str(
            html,
            SourceFormat::Html,
            Path::new("report.html"),
            Path::new("."),
        );
        let plan = render_plan(&r).expect("a chart file");
        let whats: Vec<&str> = plan.candidates.iter().map(|c| c.what.as_str()).collect();
        assert_eq!(whats, ["chart file charts/c1.html"]);
        assert!(plan.html.contains("src=\"charts/c1.html\" style="));
        assert!(!plan.html.contains("vega-embed"));
        assert!(!plan.html.contains("tvir-spec-file"));
    }

    #[test]
    fn a_json_file_in_a_frame_is_drawn_beside_the_hidden_frame() {
        let html = "<html><body><p>Text [1].</p>\
                    <iframe src=\"figs/ridership.json\" style=\"height:300px\"></iframe>\
                    <iframe src=\"https://example.com/x.json\"></iframe></body></html>";
        let r = parse_str(
            html,
            SourceFormat::Html,
            Path::new("report.html"),
            Path::new("."),
        );
        let plan = render_plan(&r).expect("a chart file");
        let whats: Vec<&str> = plan.candidates.iter().map(|c| c.what.as_str()).collect();
        assert_eq!(whats, ["chart file figs/ridership.json"]);
        let at = html.find("<iframe").unwrap();
        assert!(
            plan.html.contains(&format!(
                "<div data-tvir-at=\"{at}\" class=\"tvir-spec-file\" data-tvir-spec-src=\"figs/ridership.json\"></div>\
                 <iframe data-tvir-at=\"{at}\" style=\"display:none\" src=\"figs/ridership.json\""
            )),
            "{}",
            plan.html
        );
        assert!(plan.html.contains(PLOTLY_SCRIPT));
    }

    #[test]
    fn markdown_raw_html_and_chart_files_are_anchored_and_rendered() {
        let md = "# Title\n\nSome text [1].\n\n<div class=\"c\"><canvas id=\"a\"></canvas></div>\n\n*Figure 1: Sales by region [1]*\n\n![Chart: market share](charts/share.html)\n\nFigure 2: Market share\n\n## References\n\n1. Source one https://example.com/one\n";
        let r = parse_str(
            md,
            SourceFormat::Markdown,
            Path::new("report.md"),
            Path::new("."),
        );
        let plan = render_plan(&r).expect("chart file and canvas");
        assert_eq!(plan.entry, "report.tvir-render.html");
        let canvas = md.find("<canvas").unwrap();
        let img = md.find("![Chart").unwrap();
        assert!(plan
            .html
            .contains(&format!("<canvas data-tvir-at=\"{canvas}\" id=\"a\">")));
        assert!(plan.html.contains(&format!(
            "<iframe data-tvir-at=\"{img}\" src=\"charts/share.html\""
        )));
        assert!(plan
            .candidates
            .iter()
            .any(|c| c.what == "chart file charts/share.html"));
        let map = map_of(&[
            (
                canvas,
                rendered("report.tvir-render.html#canvas#a", "Sales"),
            ),
            (img, rendered("charts/share.html#svg", "Share")),
        ]);
        let r = parse_rendered(
            md,
            SourceFormat::Markdown,
            Path::new("report.md"),
            Path::new("."),
            &map,
        );
        assert_eq!(r.figures.len(), 2, "{:?}", r.figures);
        assert_eq!(
            r.figures[0].caption.as_deref(),
            Some("Figure 1: Sales by region [1]")
        );
        assert_eq!(r.figures[0].ref_idxs, vec!["1"]);
        assert_eq!(r.figures[1].content, "charts/share.html#svg");
        assert_eq!(
            r.figures[1].caption.as_deref(),
            Some("Figure 2: Market share")
        );
        assert!(r.figures.iter().all(|f| f.kind == FigureKind::Chart));
    }

    #[test]
    fn a_page_that_draws_nothing_gives_no_figure_and_plain_pages_need_no_browser() {
        let r = parse_rendered(
            PAGE,
            SourceFormat::Html,
            Path::new("report.html"),
            Path::new("."),
            &RenderMap::default(),
        );
        assert!(r.figures.is_empty());
        let plain = "<html><body><p>Nothing drawn here.</p></body></html>";
        let r = parse_str(
            plain,
            SourceFormat::Html,
            Path::new("r.html"),
            Path::new("."),
        );
        assert!(render_plan(&r).is_none());
    }

    #[test]
    fn vega_lite_blocks_are_drawn_by_vega_embed() {
        let md = "Text.\n\n```vega-lite\n{\"mark\": \"bar\"}\n```\n";
        let r = parse_str(
            md,
            SourceFormat::Markdown,
            Path::new("report.md"),
            Path::new("."),
        );
        let plan = render_plan(&r).expect("a spec needs a browser");
        let at = md.find("```vega-lite").unwrap();
        assert!(plan
            .html
            .contains(&format!("<div data-tvir-at=\"{at}\" class=\"tvir-vega\">")));
        assert!(plan.html.contains(VEGA_SCRIPTS[1]));
        let map = map_of(&[(
            at,
            rendered("report.tvir-render.html#div.tvir-vega", "Bars"),
        )]);
        let r = parse_rendered(
            md,
            SourceFormat::Markdown,
            Path::new("report.md"),
            Path::new("."),
            &map,
        );
        assert_eq!(r.figures.len(), 1);
        assert_eq!(r.figures[0].caption.as_deref(), Some("Bars"));
    }
}
