//! Figures (images and charts with caption, context and cited data sources),
//! pseudo-visuals (text diagrams) and the figure-level structural errors.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::ops::Range;
use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

use super::blocks::{inline_text, Block, BlockKind, Inline, LineIndex};
use super::citations::{flatten, Glued, Resolved, Resolver};
use super::cues::{is_decorative, CAPTION_LINE};
use super::model::{Figure, FigureKind, PseudoVisual, StructuralError};
use super::render_map::RenderMap;
use super::urls::is_web_url;

/// A standalone caption (orphan check) needs an explicit separator after the number.
static CAPTION_STRICT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^[*_\s]*(?:figure|fig\.?|图|圖|chart|图表|exhibit|插图)\s*(\d{1,3}(?:[.\-]\d{1,3})?)\s*(?:\([^)]*\)|（[^）]*）)?[*_\s]*[:：.．、|\-—–]")
        .unwrap()
});
/// A table caption line (`表1：...`, `Table 2.`): an orphan when neither a table nor
/// an image is next to it.
static TABLE_CAPTION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^[*_\s]*(?:table|tab\.|表)\s*(\d{1,3}|[ivxlc]{1,6})\s*(?:\([^)]*\)|（[^）]*）)?[*_\s]*[:：.．、|\-—–]")
        .unwrap()
});
static FIG_ID: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)^fig(?:ure)?[-_]?(\d{1,3})$").unwrap());
static CHART_EVIDENCE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)chart|plot|graphs?(?-u:\b)|histogram|heat ?map|trend|bar[-_ ]?chart|pie|scatter|line[-_ ]?chart|curve|roadmap|timeline|dashboard|box ?plot|折线|柱状|柱形|条形图|直方图|箱线图|雷达图|面积图|饼图|趋势|图表|热力图|散点|曲线|统计图|走势|分布图|对比图|路线图").unwrap()
});
static IMAGE_EVIDENCE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)photo|photograph|picture|screenshot|screen shot|portrait|landscape|architecture|framework|diagram|schematic|illustration|\.jpe?g$|照片|实拍|截图|实景|景观|风景|图片|架构|框架|示意图|流程图|概念图|原理图").unwrap()
});
static MERMAID_START: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*(graph\s+(TD|TB|BT|RL|LR)|flowchart(\s+(TD|TB|BT|RL|LR))?|sequenceDiagram|classDiagram|stateDiagram(-v2)?|erDiagram|gantt|pie(\s+title.*)?|journey|mindmap|timeline|gitGraph|quadrantChart|xychart-beta|sankey-beta|block-beta)\s*$").unwrap()
});
static FILENAME_LIKE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)^[\w\-. ]+\.(png|jpe?g|gif|webp|svg|bmp|tiff?)$").unwrap());

/// Result of the figure stage.
#[derive(Debug, Default)]
pub(crate) struct FigureScan {
    pub figures: Vec<Figure>,
    pub pseudo_visuals: Vec<PseudoVisual>,
    /// Blocks that are captions, figures or text diagrams (no facts from them).
    pub non_fact_blocks: HashSet<usize>,
    pub traceability: Vec<StructuralError>,
    pub consistency: Vec<StructuralError>,
    pub completeness: Vec<StructuralError>,
}

/// Classify a text diagram: Mermaid (fenced or left unfenced) or ASCII/box art.
fn pseudo_visual_kind(block: &Block) -> Option<&'static str> {
    match &block.kind {
        BlockKind::Code { info } => {
            let info = info.trim().to_ascii_lowercase();
            let info = info.split_whitespace().next().unwrap_or("");
            let body = block.plain_text();
            if matches!(info, "mermaid" | "mmd") {
                return Some("mermaid");
            }
            if matches!(info, "plantuml" | "puml" | "dot" | "graphviz") {
                return Some("diagram");
            }
            // Charts a page draws by script (`<canvas>`, ECharts targets, chart files).
            if info == "chart" {
                return Some("chart");
            }
            let first = body.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            if MERMAID_START.is_match(first) {
                return Some("mermaid");
            }
            if matches!(info, "" | "text" | "txt" | "ascii" | "plain") && is_ascii_art(&body) {
                return Some("ascii_art");
            }
            None
        }
        BlockKind::Paragraph => {
            let first = block.plain_text();
            let first = first.lines().next().unwrap_or("");
            MERMAID_START.is_match(first).then_some("mermaid")
        }
        _ => None,
    }
}

fn is_ascii_art(body: &str) -> bool {
    let lines: Vec<&str> = body.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.len() < 3 {
        return false;
    }
    let drawn = lines
        .iter()
        .filter(|l| {
            l.chars().any(|c| {
                ('\u{2500}'..='\u{257F}').contains(&c)
                    || matches!(c, '▶' | '►' | '▼' | '→' | '↓' | '←' | '↑')
            }) || l.contains("+--")
                || l.contains("-->")
                || l.contains("--+")
                || l.trim_start().starts_with('|') && l.trim_end().ends_with('|')
        })
        .count();
    drawn * 10 >= lines.len() * 3
}

/// `kind` by the reference evaluator's path rule first, then by evidence from the
/// file name, alt text and caption.
pub(crate) fn figure_kind(src: &str, alt: &str, caption: Option<&str>) -> FigureKind {
    let path = src.trim().trim_start_matches("./");
    let lower = path.to_ascii_lowercase();
    if lower.starts_with("images/") || is_web_url(&lower) && !lower.starts_with("www.") {
        return FigureKind::Image;
    }
    if lower.starts_with("charts/") {
        return FigureKind::Chart;
    }
    let inline_svg = lower.starts_with("data:image/svg+xml");
    // A `data:` URI's payload is no file name: only alt and caption are evidence.
    let name = if lower.starts_with("data:") {
        ""
    } else {
        path.rsplit('/').next().unwrap_or(path)
    };
    let evidence = format!("{name} {alt} {}", caption.unwrap_or(""));
    if CHART_EVIDENCE.is_match(&evidence) {
        FigureKind::Chart
    } else if IMAGE_EVIDENCE.is_match(&evidence) {
        FigureKind::Image
    } else if inline_svg {
        // An SVG drawn inside the page with nothing saying otherwise: a chart.
        FigureKind::Chart
    } else {
        FigureKind::Unknown
    }
}

fn caption_number(caption: &str) -> Option<String> {
    CAPTION_LINE.captures(caption).map(|c| c[1].to_string())
}

/// Whether a paragraph is wholly emphasized (`*...*`, `_..._`): an unnumbered
/// caption under an image.
fn emphasized_line(block: &Block, text: &str) -> bool {
    let raw = text.get(block.span.clone()).unwrap_or("").trim();
    let n = raw.chars().count();
    (3..=400).contains(&n)
        && ((raw.starts_with('*') && raw.ends_with('*'))
            || (raw.starts_with('_') && raw.ends_with('_')))
        && !raw.contains('\n')
}

fn text_span(inlines: &[Inline]) -> Option<Range<usize>> {
    let spans: Vec<Range<usize>> = inlines
        .iter()
        .filter(|i| {
            matches!(
                i,
                Inline::Text { .. }
                    | Inline::Link { .. }
                    | Inline::FootnoteRef { .. }
                    | Inline::Code { .. }
            )
        })
        .filter_map(Inline::span)
        .collect();
    Some(spans.first()?.start..spans.last()?.end)
}

fn caption_refs(inlines: &[Inline], resolver: &Resolver) -> Vec<String> {
    let flat = flatten(inlines, Glued::No);
    let mut out: Vec<String> = Vec::new();
    for c in flat.cites.iter().flatten() {
        if let Resolved::Ref(i) = resolver.resolve(c) {
            if !out.contains(&i) {
                out.push(i);
            }
        }
    }
    out
}

fn alt_as_caption(alt: &str) -> Option<String> {
    let a = alt.trim();
    if a.is_empty() || FILENAME_LIKE.is_match(a) || a.chars().count() < 3 {
        return None;
    }
    let generic = [
        "image", "img", "picture", "figure", "photo", "图片", "图像", "插图", "alt",
    ];
    if generic.contains(&a.to_lowercase().as_str()) {
        return None;
    }
    Some(a.to_string())
}

/// Inputs for the figure stage.
pub(crate) struct FigureInput<'a> {
    pub blocks: &'a [Block],
    pub text: &'a str,
    pub lines: &'a LineIndex,
    pub root: &'a Path,
    pub ref_blocks: &'a HashSet<usize>,
    pub resolver: &'a Resolver,
    /// Charts a browser drew (their placeholder images name them).
    pub renders: Option<&'a RenderMap>,
}

/// An image element: src, alt, span, declared width and height.
type ImageRef = (String, String, Range<usize>, Option<u32>, Option<u32>);

struct Pending {
    block: usize,
    src: String,
    alt: String,
    span: Range<usize>,
    caption: Option<(String, Option<Range<usize>>, Vec<String>)>,
    /// `figcaption` or `caption line`: where `caption` was found.
    caption_from: &'static str,
    number: Option<String>,
}

pub(crate) fn extract_figures(input: &FigureInput<'_>) -> FigureScan {
    let mut scan = FigureScan::default();
    let blocks = input.blocks;
    let mut pending: Vec<Pending> = Vec::new();
    let mut caption_blocks: HashSet<usize> = HashSet::new();

    for (bi, b) in blocks.iter().enumerate() {
        if let Some(kind) = pseudo_visual_kind(b) {
            // Mermaid is a chart the viewer draws (issue #12 lists it with the
            // script-drawn charts); its notation stays visible.
            let (kind, notation) = match kind {
                "mermaid" => ("chart", Some("mermaid".to_string())),
                k => (k, None),
            };
            scan.pseudo_visuals.push(PseudoVisual {
                kind: kind.to_string(),
                line: input.lines.line_of(b.span.start),
                notation,
            });
            scan.non_fact_blocks.insert(bi);
            continue;
        }
        if input.ref_blocks.contains(&bi) {
            continue;
        }
        let images: Vec<ImageRef> = b
            .inlines
            .iter()
            .filter_map(|i| match i {
                Inline::Image {
                    src,
                    alt,
                    span,
                    width,
                    height,
                } => Some((src.clone(), alt.clone(), span.clone(), *width, *height)),
                _ => None,
            })
            .filter(|(src, alt, _, w, h)| {
                src.starts_with(super::render_map::RENDERED_SRC) || !is_decorative(src, alt, *w, *h)
            })
            .collect();
        if images.is_empty() {
            continue;
        }
        if let BlockKind::Figure {
            caption,
            caption_span,
            id,
        } = &b.kind
        {
            scan.non_fact_blocks.insert(bi);
            let cap = caption.as_ref().map(|c| {
                let text = inline_text(c);
                (text, caption_span.clone(), caption_refs(c, input.resolver))
            });
            let cap = cap.filter(|c| !c.0.is_empty());
            let number = cap.as_ref().and_then(|c| caption_number(&c.0)).or_else(|| {
                id.as_deref()
                    .and_then(|i| FIG_ID.captures(i))
                    .map(|c| c[1].to_string())
            });
            for (src, alt, _, _, _) in images {
                pending.push(Pending {
                    block: bi,
                    src,
                    alt,
                    // The whole `<figure>` is the element to blank.
                    span: b.span.clone(),
                    caption: cap.clone(),
                    caption_from: "figcaption",
                    number: number.clone(),
                });
            }
            continue;
        }
        // Images inside a Markdown paragraph: text in the same block after the last
        // image, split off by a line break, is its caption.
        let last_img = b
            .inlines
            .iter()
            .rposition(|i| matches!(i, Inline::Image { .. }))
            .unwrap_or(0);
        let first_img = b
            .inlines
            .iter()
            .position(|i| matches!(i, Inline::Image { .. }))
            .unwrap_or(0);
        let before_text = inline_text(&b.inlines[..first_img]);
        let after: Vec<Inline> = b.inlines[last_img + 1..]
            .iter()
            .filter(|i| !matches!(i, Inline::Image { .. }))
            .cloned()
            .collect();
        let after_text = inline_text(&after);
        let image_only_block = before_text.is_empty();
        let mut same_block_caption = None;
        if image_only_block && !after_text.is_empty() {
            let starts_with_break = b.inlines[last_img + 1..]
                .iter()
                .take_while(|i| {
                    matches!(i, Inline::Text { text, .. } if text.trim().is_empty())
                        || matches!(i, Inline::Break { .. })
                })
                .any(|i| matches!(i, Inline::Break { .. }));
            if starts_with_break || CAPTION_LINE.is_match(&after_text) {
                same_block_caption = Some((
                    after_text.clone(),
                    text_span(&after),
                    caption_refs(&after, input.resolver),
                ));
            }
        }
        if image_only_block {
            scan.non_fact_blocks.insert(bi);
        }
        let mut caption = same_block_caption;
        if caption.is_none() && image_only_block {
            // Caption line below, else a numbered caption line above.
            let below = blocks.get(bi + 1).filter(|n| {
                matches!(n.kind, BlockKind::Paragraph)
                    && n.images().next().is_none()
                    && (CAPTION_LINE.is_match(&n.plain_text()) || emphasized_line(n, input.text))
            });
            let above = bi.checked_sub(1).and_then(|p| blocks.get(p)).filter(|p| {
                matches!(p.kind, BlockKind::Paragraph)
                    && p.images().next().is_none()
                    && CAPTION_STRICT.is_match(&p.plain_text())
                    && !caption_blocks.contains(&(bi - 1))
            });
            let chosen = below
                .map(|n| (bi + 1, n))
                .or_else(|| above.map(|p| (bi - 1, p)));
            if let Some((ci, cb)) = chosen {
                caption_blocks.insert(ci);
                caption = Some((
                    cb.plain_text(),
                    text_span(&cb.inlines),
                    caption_refs(&cb.inlines, input.resolver),
                ));
            }
        }
        let n_images = images.len();
        for (src, alt, span, _, _) in images {
            let cap = if n_images == 1 || caption.is_some() {
                caption.clone()
            } else {
                None
            };
            let number = cap.as_ref().and_then(|c| caption_number(&c.0));
            pending.push(Pending {
                block: bi,
                src,
                alt,
                span,
                caption: cap,
                caption_from: "caption line",
                number,
            });
        }
    }
    scan.non_fact_blocks.extend(caption_blocks.iter().copied());

    // Orphan captions: numbered caption lines no figure claimed.
    for (bi, b) in blocks.iter().enumerate() {
        if caption_blocks.contains(&bi)
            || scan.non_fact_blocks.contains(&bi)
            || input.ref_blocks.contains(&bi)
            || !matches!(b.kind, BlockKind::Paragraph)
        {
            continue;
        }
        let t = b.plain_text();
        let reads_as_caption = t.chars().count() <= 400
            && !t.contains('\n')
            && (emphasized_line(b, input.text) || t.chars().count() <= 200);
        if !reads_as_caption {
            continue;
        }
        let next_to = |pred: &dyn Fn(&Block) -> bool| {
            bi.checked_sub(1)
                .and_then(|p| blocks.get(p))
                .is_some_and(pred)
                || blocks.get(bi + 1).is_some_and(pred)
        };
        let orphan_figure = CAPTION_STRICT.is_match(&t);
        let orphan_table = TABLE_CAPTION.is_match(&t)
            && !next_to(&|n: &Block| matches!(n.kind, BlockKind::TableRow { .. }));
        if orphan_figure || orphan_table {
            scan.non_fact_blocks.insert(bi);
            scan.completeness.push(StructuralError {
                code: "orphan_caption".into(),
                line: Some(input.lines.line_of(b.span.start)),
                reason: format!("caption with no image: {}", short(&t)),
            });
        }
    }

    // Context: explicit mentions of the figure's number, else surrounding text.
    let body_blocks: Vec<usize> = (0..blocks.len())
        .filter(|i| {
            !scan.non_fact_blocks.contains(i)
                && !input.ref_blocks.contains(i)
                && matches!(
                    blocks[*i].kind,
                    BlockKind::Paragraph | BlockKind::ListItem { .. } | BlockKind::TableRow { .. }
                )
        })
        .collect();
    let block_texts: HashMap<usize, String> = body_blocks
        .iter()
        .map(|&i| (i, blocks[i].plain_text()))
        .collect();
    // Only blocks holding a mention prefix can mention a figure; keeping just those
    // spares every figure a scan of every other block (`mentions_number` was 15 % of
    // a parse).
    let lower_texts: HashMap<usize, String> = block_texts
        .iter()
        .filter(|(_, t)| has_mention_prefix(t))
        .map(|(i, t)| (*i, t.to_lowercase()))
        .collect();
    let mut number_positions: HashMap<String, Vec<usize>> = HashMap::new();
    for p in &pending {
        if let Some(n) = &p.number {
            number_positions.entry(n.clone()).or_default().push(p.block);
        }
    }

    for p in pending {
        let caption_text = p.caption.as_ref().map(|c| c.0.clone());
        let rendered = input.renders.and_then(|m| m.lookup(&p.src));
        let mut caption_source = rendered.map(|r| {
            match (&p.caption, alt_as_caption(&p.alt)) {
                (Some(_), _) => p.caption_from,
                (None, Some(_)) => r.caption_text_source(),
                (None, None) => "none",
            }
            .to_string()
        });
        let (mut caption, caption_span, ref_idxs) = match p.caption {
            Some((t, s, r)) => (Some(t), s, r),
            None => (alt_as_caption(&p.alt), None, Vec::new()),
        };
        // A picture file a frame or component shows, with no caption from the report:
        // its own title, as a chart file's `<title>` captions it.
        if caption.is_none() && rendered.is_none() {
            if let Some(title) = shown_file_title(input, &p.span, &p.src) {
                caption = Some(title);
                caption_source = Some("chart file title".to_string());
            }
        }
        let mut context = None;
        if let Some(n) = &p.number {
            // Numbering may restart per section: only look between the neighbouring
            // figures that carry the same number.
            let same = &number_positions[n];
            let lo = same.iter().copied().filter(|&b| b < p.block).max();
            let hi = same.iter().copied().filter(|&b| b > p.block).min();
            let mentions: Vec<&str> = body_blocks
                .iter()
                .filter(|&&i| lo.is_none_or(|l| i > l) && hi.is_none_or(|h| i < h))
                .filter(|i| lower_texts.get(i).is_some_and(|t| mentions_number(t, n)))
                .filter_map(|i| block_texts.get(i).map(String::as_str))
                .collect();
            if !mentions.is_empty() {
                context = Some(mentions.join("\n\n"));
            }
        }
        if context.is_none() {
            let before = body_blocks
                .iter()
                .rev()
                .find(|&&i| i < p.block)
                .and_then(|i| block_texts.get(i));
            let after = body_blocks
                .iter()
                .find(|&&i| i > p.block)
                .and_then(|i| block_texts.get(i));
            if before.is_some() || after.is_some() {
                let mut c = String::new();
                if let Some(b) = before {
                    c.push_str(b);
                    c.push('\n');
                }
                c.push_str("<figure>");
                if let Some(a) = after {
                    c.push('\n');
                    c.push_str(a);
                }
                context = Some(c);
            }
        }
        let kind = match rendered {
            Some(_) => FigureKind::Chart,
            None => figure_kind(
                &p.src,
                &p.alt,
                caption_text.as_deref().or(caption.as_deref()),
            ),
        };
        let line = input.lines.line_of(p.span.start);
        let (content, render, chart_data) = match rendered {
            Some(r) => (
                r.content.clone(),
                Some("browser".to_string()),
                r.chart_data.clone(),
            ),
            None => (p.src, None, None),
        };
        scan.figures.push(Figure {
            content,
            render,
            chart_data,
            kind,
            caption,
            context,
            ref_idxs,
            line,
            number: p.number,
            alt: (!p.alt.is_empty()).then_some(p.alt),
            span: p.span,
            caption_span,
            caption_source,
        });
    }

    figure_errors(input, &mut scan);
    scan
}

/// The own title of the SVG file that the start tag at `span` (a frame or a
/// component, [`crate::html::picture_shown_by`]; never an `<img>` or a Markdown image)
/// shows: the `<title>` heading the file's root `<svg>`. Reads at most 256 KiB.
fn shown_file_title(input: &FigureInput<'_>, span: &Range<usize>, src: &str) -> Option<String> {
    static TAG_NAME: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^<([A-Za-z][\w.:-]*)").unwrap());
    static SVG_TITLE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?is)<svg\b[^>]*>\s*(?:<!--.*?-->\s*|<desc\b[^>]*>.*?</desc>\s*|<metadata\b[^>]*>.*?</metadata>\s*)*<title\b[^>]*>(.*?)</title>").unwrap()
    });
    let tag = crate::jsx::with_plain_values(input.text.get(span.clone())?);
    let tag = &*tag;
    let name = TAG_NAME.captures(tag)?[1].to_ascii_lowercase();
    let attrs = crate::html::parse_tag_attrs(tag);
    let shown =
        crate::html::picture_shown_by(&name, attrs.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
    if shown != src
        || !src
            .split(['?', '#'])
            .next()?
            .to_ascii_lowercase()
            .ends_with(".svg")
    {
        return None;
    }
    let path = local_path(input.root, src)?;
    let mut head = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(std::fs::File::open(path).ok()?, 256 * 1024),
        &mut head,
    )
    .ok()?;
    let text = String::from_utf8_lossy(&head);
    let raw = SVG_TITLE.captures(&text)?.get(1)?.as_str();
    let title = raw
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&");
    let title = title.split_whitespace().collect::<Vec<_>>().join(" ");
    (!title.is_empty() && title.chars().count() <= 300).then_some(title)
}

/// Whether a text mentions figure number `n` ("Figure 2", "Fig. 2", "chart 2",
/// "图 2", "圖2", "#fig2"), the number not running on into more digits. A plain scan
/// rather than a per-figure regex, which would be compiled on every parse.
/// `lower` must already be lowercased (done once per block, not per figure).
/// Whether the lowercased `text` would contain one of the stems every prefix
/// `mentions_number` looks for ("fig", "chart", "图", "圖"), without lowercasing it
/// (a full Unicode lowercase of every block was most of this stage). ASCII case
/// folding is exact here: no non-ASCII letter lowercases to any of these letters.
fn has_mention_prefix(text: &str) -> bool {
    let ci = |stem: &[u8]| {
        text.as_bytes()
            .windows(stem.len())
            .any(|w| w.eq_ignore_ascii_case(stem))
    };
    text.contains(['图', '圖']) || ci(b"fig") || ci(b"chart")
}

fn mentions_number(lower: &str, n: &str) -> bool {
    let prefixes = ["figure", "fig.", "fig", "chart", "图", "圖", "#fig"];
    for p in prefixes {
        let mut from = 0;
        while let Some(i) = lower[from..].find(p) {
            let at = from + i;
            from = at + p.len();
            // Latin prefixes must start a word ("configure 2" is no mention).
            if p.is_ascii() && !p.starts_with('#') {
                if let Some(prev) = lower[..at].chars().next_back() {
                    if prev.is_alphanumeric() {
                        continue;
                    }
                }
            }
            let rest = lower[from..].trim_start();
            if let Some(after) = rest.strip_prefix(n) {
                let next = after.chars().next();
                let runs_on = match next {
                    Some(c) if c.is_ascii_digit() => true,
                    // "Figure 1.2" is another number; "Figure 1." ends a sentence.
                    Some('.') => after[1..]
                        .chars()
                        .next()
                        .is_some_and(|c| c.is_ascii_digit()),
                    _ => false,
                };
                if !runs_on {
                    return true;
                }
            }
        }
    }
    false
}

fn short(s: &str) -> String {
    let mut e: String = s.chars().take(60).collect();
    if s.chars().count() > 60 {
        e.push('…');
    }
    e
}

/// The file of the report folder a relative address names (query and fragment cut,
/// percent-escapes decoded); None for a web, data or protocol-relative address.
pub(crate) fn local_path(root: &Path, src: &str) -> Option<std::path::PathBuf> {
    let s = src.trim();
    if s.is_empty()
        || is_web_url(s)
        || s.starts_with("data:")
        || s.contains("://")
        || s.starts_with("//")
    {
        return None;
    }
    let s = s.split(['?', '#']).next().unwrap_or(s);
    let decoded = percent_decode(s);
    Some(root.join(decoded.trim_start_matches("./")))
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        // The two hex digits are read as bytes: `%` may be followed by a
        // multi-byte character, inside which no `str` may be sliced.
        if let (b'%', Some(&[h, l])) = (bytes[i], bytes.get(i + 1..i + 3)) {
            if let (Some(h), Some(l)) = ((h as char).to_digit(16), (l as char).to_digit(16)) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn figure_errors(input: &FigureInput<'_>, scan: &mut FigureScan) {
    let mut numbers: Vec<(u32, usize)> = Vec::new();
    for f in &scan.figures {
        let where_ = format!("figure `{}`", short(&f.content));
        if f.content.trim().is_empty() {
            scan.completeness.push(StructuralError {
                code: "empty_image_path".into(),
                line: Some(f.line),
                reason: "image element with an empty path".into(),
            });
        } else if let Some(p) = local_path(input.root, &f.content).filter(|_| f.render.is_none()) {
            if !p.is_file() {
                scan.completeness.push(StructuralError {
                    code: "missing_image_file".into(),
                    line: Some(f.line),
                    reason: format!("{where_}: local file {} does not exist", p.display()),
                });
            }
        }
        if f.caption.is_none() {
            scan.completeness.push(StructuralError {
                code: "figure_without_caption".into(),
                line: Some(f.line),
                reason: format!("{where_} has no caption"),
            });
        }
        if f.kind == FigureKind::Chart && f.ref_idxs.is_empty() {
            scan.traceability.push(StructuralError {
                code: "chart_without_source".into(),
                line: Some(f.line),
                reason: format!("{where_} is a chart whose caption cites no data source"),
            });
        }
        if let Some(n) = f.number.as_deref().and_then(|n| n.parse::<u32>().ok()) {
            numbers.push((n, f.line));
        }
    }
    let mut seen: HashMap<u32, usize> = HashMap::new();
    for &(n, line) in &numbers {
        if let Some(first) = seen.get(&n) {
            scan.consistency.push(StructuralError {
                code: "duplicate_figure_number".into(),
                line: Some(line),
                reason: format!("figure number {n} is used again (first at line {first})"),
            });
        } else {
            seen.insert(n, line);
        }
    }
    let set: BTreeSet<u32> = numbers.iter().map(|(n, _)| *n).collect();
    if let Some(&max) = set.iter().next_back() {
        let missing: Vec<String> = (1..max)
            .filter(|n| !set.contains(n))
            .map(|n| n.to_string())
            .collect();
        if !missing.is_empty() && max <= 500 {
            scan.consistency.push(StructuralError {
                code: "figure_number_gap".into(),
                line: None,
                reason: format!(
                    "figure numbers skip {} (highest is {max})",
                    missing.join(", ")
                ),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_decoding_reads_escapes_and_keeps_everything_else() {
        assert_eq!(percent_decode("a%20b%E4%B8%AD.png"), "a b中.png");
        // `%` before a multi-byte character, or one hex digit then one: kept as
        // written (this sliced inside the character and panicked).
        assert_eq!(percent_decode("b%C］3.png"), "b%C］3.png");
        assert_eq!(percent_decode("x%中E4.png"), "x%中E4.png");
        assert_eq!(percent_decode("end%"), "end%");
        assert_eq!(percent_decode("end%4"), "end%4");
        assert_eq!(percent_decode("%zz%41"), "%zzA");
    }

    #[test]
    fn kind_path_rule_then_evidence() {
        assert_eq!(
            figure_kind("images/a.png", "", Some("trend chart")),
            FigureKind::Image
        );
        assert_eq!(figure_kind("./charts/a.png", "", None), FigureKind::Chart);
        assert_eq!(
            figure_kind("https://x.com/a.png", "", None),
            FigureKind::Image
        );
        assert_eq!(
            figure_kind("sessions/roe_trend.png", "ROE Trend", None),
            FigureKind::Chart
        );
        assert_eq!(
            figure_kind("res/a.png", "", Some("图5：收入趋势图")),
            FigureKind::Chart
        );
        assert_eq!(
            figure_kind("res/a.png", "", Some("Photo of the site")),
            FigureKind::Image
        );
        assert_eq!(figure_kind("res/a.png", "", None), FigureKind::Unknown);
    }

    #[test]
    fn caption_numbers() {
        assert_eq!(caption_number("Figure 3: Growth").as_deref(), Some("3"));
        assert_eq!(caption_number("图 1：架构").as_deref(), Some("1"));
        assert_eq!(caption_number("**图2**：趋势").as_deref(), Some("2"));
        assert_eq!(caption_number("Fig. 4. X").as_deref(), Some("4"));
        assert_eq!(caption_number("Figures show"), None);
    }

    #[test]
    fn mentions_match_number_exactly() {
        assert!(mentions_number("as figure 1 shows", "1"));
        assert!(mentions_number("see fig. 1.", "1"));
        assert!(mentions_number("如图1所示", "1"));
        assert!(mentions_number("如 图 1 所示", "1"));
        assert!(mentions_number("<a href=\"#fig1\">", "1"));
        assert!(!mentions_number("figure 12 shows", "1"));
        assert!(!mentions_number("figure 1.2 shows", "1"));
        assert!(!mentions_number("图12", "1"));
        assert!(!mentions_number("configure 1 item", "1"));
    }

    #[test]
    fn ascii_art_detection() {
        assert!(is_ascii_art("+----+\n| A  |\n+----+\n   |\n   v"));
        assert!(!is_ascii_art("let x = 1;\nlet y = 2;\nprint(x + y)"));
    }
}
