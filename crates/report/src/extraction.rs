//! Over 1,000 lines: each sign of the self-check is counted, thresholded and unit
//! tested here, side by side (the tests are a fifth of the file).
//!
//! The parse's self-check: does the rules parse look right from the inside?
//!
//! A wrong parse has tell-tale signs the parser can count cheaply: bracketed numbers
//! that name no entry (the list was missed), numbers that name entries but sit in no
//! cited sentence (markers written where the parser did not look), a list nobody
//! cites, cited "sentences" that are really reference entries, runs of entry-like
//! lines that were not taken as a list, `<img>` tags without figures, and many
//! quantitative sentences without a citation in a report that otherwise cites
//! heavily. Each sign with its threshold is one reason; any reason makes the report
//! `suspect`. Only generic inputs are used (text, spans, the model), so the check
//! holds as the grammar grows.

use std::collections::HashSet;
use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

use super::model::{
    Extraction, ExtractionCounts, ExtractionMethod, ExtractionVerdict, Fact, Figure, Reference,
    SourceFormat, StructuralErrors,
};

/// What the check reads: the report's text and model, plus the spans the parser
/// took as reference lists and as code (neither is body text).
pub(crate) struct CheckInput<'a> {
    pub text: &'a str,
    pub format: SourceFormat,
    pub has_list: bool,
    pub list_spans: Vec<Range<usize>>,
    pub skip_spans: Vec<Range<usize>>,
    pub references: &'a [Reference],
    pub facts: &'a [Fact],
    /// Spans of units dropped as verbatim repeats of an earlier unit: their markers
    /// are attached (to the unit kept), not stray.
    pub repeat_spans: Vec<Range<usize>>,
    pub figures: &'a [Figure],
    pub errors: &'a StructuralErrors,
    /// The parse read `claim 2.` numerals as citations (the report's dialect).
    pub spaced_dialect: bool,
    /// Citations by name that named an entry.
    pub names_resolved: usize,
    /// Citation shapes by name (author-date, key, labelled source) that named no
    /// entry, as written.
    pub names_unresolved: &'a [String],
    /// Author-date entries with the (folded) name a mention of each would show:
    /// an entry no citation resolved whose name stands in the text was cited in a
    /// form no rule reads (`Summers indicates ...`, no year).
    pub mention_names: Vec<(String, String)>,
}

/// Thresholds of the verdict (calibrated on the corpus and `tests/fixtures/reports/check-*`;
/// see `docs/parser.md`).
const MIN_MARKERS: usize = 5;
const UNRESOLVED_SHARE: f64 = 0.5;
const UNATTACHED_SHARE: f64 = 0.15;
const MIN_UNATTACHED: usize = 3;
const MIN_LIST_FOR_CITED_SHARE: usize = 5;
const CITED_ENTRY_SHARE: f64 = 0.2;
const MIN_FACTS_LIKE_ENTRIES: usize = 2;
const MIN_UNLISTED_LINES: usize = 3;
const HEAVY_CITING_UNITS: usize = 10;
const UNCITED_QUANT_MIN: usize = 10;
const UNCITED_QUANT_RATIO: f64 = 1.0;
const LONG_BODY_CHARS: usize = 3000;
// A list of two entries or more with no cited unit, or a list of five or more of
// which at most two units cite under a fifth, is not cited.
const MIN_UNCITED_LIST: usize = 2;
const NEARLY_NO_UNITS: usize = 2;
// Citations by name naming no entry: two or more, a fifth of those seen or more.
const MIN_NAMES_UNRESOLVED: usize = 2;
const NAMES_UNRESOLVED_SHARE: f64 = 0.2;
const MIN_UNITS_WITHOUT_TEXT: usize = 3;
// Lead-in labels with a marker ("BTA [4]:") are legitimate units; a parse is wrong
// when many units are bare markers, so the share matches the 20 % a parse may be off.
const UNITS_WITHOUT_TEXT_SHARE: f64 = 0.2;
// Residue: each mark is a citation the parse may have lost, and losing over 5 % of
// the units is a wrong parse. Link lines (also further reading) need 4 and 20 %.
const MIN_RESIDUE: usize = 1;
const RESIDUE_SHARE: f64 = 0.05;
const MIN_RESIDUE_WITH_LINK_LINES: usize = 4;
const LINK_LINE_SHARE: f64 = 0.2;

static SCRIPT_STYLE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?is)<script(?-u:\b).*?</script\s*>|<style(?-u:\b).*?</style\s*>|<!--.*?-->")
        .unwrap()
});
/// `[3]`, `[3, 4]`, `[3-5]`, `\[3\]`, `[^3]`, `[^1_4]`, `【3】`, `【3†source】`.
static BRACKET: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"\\?\[\s*(\d{1,4}(?:\s*(?:,|，|、|-|–|—)\s*\d{1,4})*)\s*\\?\]|\[\^([^\]\s]{1,20})\]|【\s*(\d{1,4}(?::\d{1,4})?)(?:†[^】]*)?\s*】",
    )
    .unwrap()
});
/// Unbracketed numbers as HTML citations: `<sup>3</sup>`, `<a href="#src">3</a>`.
static HTML_NUM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?is)<sup(?-u:\b)[^>]*>\s*(\d{1,3}(?:\s*,\s*\d{1,3})*)\s*</sup>|<a(?-u:\b)[^>]*href\s*=\s*["']#[^"']*["'][^>]*>\s*(\d{1,3})\s*</a>"#)
        .unwrap()
});
static IMG: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?is)<img(?-u:\b)[^>]*>").unwrap());
static LOGO: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)logo|icon|badge|avatar|favicon|sprite|pixel").unwrap());
static URL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)https?://[^\s)\]>]+|www\.[^\s)\]>]+").unwrap());
/// How a reference entry line starts: `[3]`, `3.`, `3)`, `- `, `* `, `[^3]:`, `【3】`.
static ENTRY_START: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*(?:\\?\[\^?\d{1,4}\\?\]:?|\d{1,4}[.)、]|[-*+•]|【\d{1,4}】)\s*").unwrap()
});
static LEADING_TAGS: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*(?:<[^>]*>\s*)+").unwrap());
static LINK_SYNTAX: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\]\([^)]*\)").unwrap());
static MARKUP: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\[[^\]]*\]|【[^】]*】|<[^>]*>").unwrap());

/// A citation-like number in the body text.
struct Marker {
    pos: usize,
    label: String,
    /// A marker that is a link (`[3](url)`, `[[3]](url)`): it cites its own
    /// target, whether or not the report has a list.
    linked: bool,
}

/// Run the self-check.
pub(crate) fn check(input: &CheckInput<'_>) -> Extraction {
    let text = input.text;
    let mut skip: Vec<Range<usize>> = input
        .list_spans
        .iter()
        .chain(&input.skip_spans)
        .cloned()
        .collect();
    if input.format == SourceFormat::Html || text.contains("<script") || text.contains("<style") {
        skip.extend(SCRIPT_STYLE.find_iter(text).map(|m| m.range()));
    }
    let skip = merge_spans(skip);
    // Binary search over sorted, disjoint spans: the check stays linear in the text.
    let skipped = |pos: usize| {
        let i = skip.partition_point(|r| r.end <= pos);
        skip.get(i).is_some_and(|r| r.contains(&pos))
    };

    let idxs: HashSet<&str> = input.references.iter().map(|r| r.idx.as_str()).collect();
    let markers = find_markers(text, &skipped, &idxs);
    let mut counts = ExtractionCounts {
        markers_seen: markers.len(),
        cited_units: input.facts.len(),
        list_entries: if input.has_list {
            input.references.len()
        } else {
            0
        },
        ..Default::default()
    };
    let mut fact_spans: Vec<Range<usize>> = input
        .facts
        .iter()
        .map(|f| f.span.clone())
        .chain(input.repeat_spans.iter().cloned())
        .collect();
    fact_spans.sort_by_key(|r| (r.start, r.end));
    let reach = unit_reach(&fact_spans);
    let figure_spans: Vec<Range<usize>> = input
        .figures
        .iter()
        .flat_map(|f| [Some(f.span.clone()), f.caption_span.clone()])
        .flatten()
        .collect();
    for m in &markers {
        if !m.linked && (!input.has_list || !idxs.contains(m.label.as_str())) {
            counts.markers_unresolved += 1;
            continue;
        }
        counts.markers_resolved += 1;
        let in_figure = figure_spans
            .iter()
            .any(|r| r.start <= m.pos && m.pos <= r.end);
        if !in_figure && !attached(text, &fact_spans, &reach, m.pos) {
            counts.markers_unattached += 1;
        }
    }
    if input.has_list {
        let cited: HashSet<&str> = input
            .facts
            .iter()
            .flat_map(|f| f.ref_idxs.iter())
            .chain(input.figures.iter().flat_map(|f| f.ref_idxs.iter()))
            .map(String::as_str)
            .collect();
        counts.entries_never_cited = input
            .references
            .iter()
            .filter(|r| !cited.contains(r.idx.as_str()))
            .count();
    }
    counts.uncited_quantitative = input
        .errors
        .traceability
        .iter()
        .filter(|e| e.code == "uncited_quantitative")
        .count();
    counts.unlisted_reference_lines = unlisted_entry_lines(text, &skipped);
    counts.facts_like_entries = input
        .facts
        .iter()
        .filter(|f| looks_like_entry(&f.fact, text.get(f.span.clone()).unwrap_or("")))
        .count();
    counts.img_tags = IMG
        .find_iter(text)
        .filter(|m| !skipped(m.start()))
        .filter(|m| !LOGO.is_match(m.as_str()))
        .count();

    counts.units_without_text = input.facts.iter().filter(|f| without_text(&f.fact)).count();
    counts.names_resolved = input.names_resolved;
    counts.names_unresolved = input.names_unresolved.len();
    let sections = source_sections(text, &skipped);
    let in_section = |pos: usize| sections.iter().find(|(r, _)| r.contains(&pos));
    let mut first_section = None;
    for f in input.facts {
        let listed = input.list_spans.iter().any(|r| r.contains(&f.span.start));
        if let (false, Some((_, h))) = (listed, in_section(f.span.start)) {
            counts.units_in_source_sections += 1;
            first_section.get_or_insert_with(|| h.clone());
        }
    }
    // Residue: citation shapes outside lists, code, figures and cited units.
    let consumed = merge_spans(
        skip.iter()
            .cloned()
            .chain(fact_spans.iter().cloned())
            .chain(figure_spans.iter().cloned())
            .collect(),
    );
    counts.residue = super::residue::scan(
        text,
        &|pos| super::residue::covered(&consumed, pos),
        super::residue::max_label(input.has_list, input.references),
        input.spaced_dialect,
    );
    let body_chars = body_chars(text, &skip);
    let numbered = numbered_list(text, input.references, input.has_list);
    let mut reasons = reasons(&counts, input, body_chars, numbered);
    // Entries named in the text that no citation resolved: only in a report that
    // cites by name (no numbered marker names an entry), where a mention of an
    // author is how it cites.
    // And only where the report cites by name somewhere, or cites nothing.
    let by_name = input.names_resolved > 0 || input.facts.is_empty();
    if input.has_list && counts.markers_resolved == 0 && by_name {
        let cited: HashSet<&str> = input
            .facts
            .iter()
            .flat_map(|f| f.ref_idxs.iter())
            .chain(input.figures.iter().flat_map(|f| f.ref_idxs.iter()))
            .map(String::as_str)
            .collect();
        let named = named_uncited(text, &skipped, &input.mention_names, &cited);
        if !named.is_empty() {
            let examples: Vec<String> = named
                .iter()
                .take(3)
                .map(|(i, n)| format!("[{i}] {n}"))
                .collect();
            reasons.push(format!(
                "{} reference entries no citation resolved are named in the text (e.g. {}): cited in a form no rule reads",
                named.len(),
                examples.join("; ")
            ));
        }
    }
    if let Some(h) = first_section {
        reasons.push(format!(
            "{} cited units sit inside a source section (under \"{h}\"): its entries were read as claims",
            counts.units_in_source_sections
        ));
    }
    Extraction {
        method: ExtractionMethod::Rules,
        verdict: if reasons.is_empty() {
            ExtractionVerdict::Ok
        } else {
            ExtractionVerdict::Suspect
        },
        reasons,
        counts,
        judge: None,
    }
}

/// Uncited entries whose mention name stands in the body (outside lists and
/// code): a Latin name as a whole word written with a capital, a CJK name as is.
/// A name shared with a cited entry is no sign (the mention is that entry's).
fn named_uncited(
    text: &str,
    skipped: &dyn Fn(usize) -> bool,
    names: &[(String, String)],
    cited: &HashSet<&str>,
) -> Vec<(String, String)> {
    let cited_names: HashSet<&str> = names
        .iter()
        .filter(|(i, _)| cited.contains(i.as_str()))
        .map(|(_, n)| n.as_str())
        .collect();
    let mut out: Vec<(String, String)> = Vec::new();
    for (idx, name) in names {
        if cited.contains(idx.as_str())
            || cited_names.contains(name.as_str())
            || out.iter().any(|(_, n)| n == name)
        {
            continue;
        }
        let han = name.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c));
        let found = if han {
            text.match_indices(name.as_str()).any(|(p, _)| !skipped(p))
        } else {
            let words: Vec<String> = name.split(' ').map(regex::escape).collect();
            let Ok(re) = Regex::new(&format!(
                r"(?i)(?:^|[^\p{{L}}\p{{N}}_])({})(?:$|[^\p{{L}}\p{{N}}_])",
                words.join(r"\s+")
            )) else {
                continue;
            };
            let hit = re.captures_iter(text).any(|c| {
                let m = c.get(1).unwrap();
                !skipped(m.start()) && m.as_str().starts_with(char::is_uppercase)
            });
            hit
        };
        if found {
            out.push((idx.clone(), name.clone()));
        }
    }
    out
}

fn reasons(
    c: &ExtractionCounts,
    input: &CheckInput<'_>,
    body_chars: usize,
    numbered: bool,
) -> Vec<String> {
    let mut out = Vec::new();
    let share = |a: usize, b: usize| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    if c.markers_seen >= MIN_MARKERS
        && share(c.markers_unresolved, c.markers_seen) > UNRESOLVED_SHARE
    {
        let why = if input.has_list {
            "name no entry of the reference list"
        } else {
            "point nowhere: no reference list was found"
        };
        out.push(format!(
            "{} of {} bracketed citation numbers {why}",
            c.markers_unresolved, c.markers_seen
        ));
    }
    if c.markers_unattached >= MIN_UNATTACHED
        && share(c.markers_unattached, c.markers_resolved) > UNATTACHED_SHARE
    {
        out.push(format!(
            "{} of {} citation markers that name an entry belong to no cited sentence",
            c.markers_unattached, c.markers_resolved
        ));
    }
    // An unnumbered list ("Key Citations" bullets) in a report that writes no
    // marker at all is a bibliography, not a parse failure; a numbered list, or a
    // report that does cite, is expected to be cited.
    // In an HTML page that writes no marker, units cited by inline links to pages
    // do not make an unnumbered further-reading list (`<ol>` of links) a sign of
    // missed citations either.
    // Rules reading uncited entries, sentences and lines as unseen citations need
    // a residue mark: without one the report does not cite there (its counts and
    // structural errors say so), which is no sign of a wrong parse.
    let residue_seen = c.residue.total() > 0;
    let cites_expected = residue_seen
        && (numbered
            || c.markers_seen > 0
            || (c.cited_units > 0 && input.format != SourceFormat::Html));
    if c.list_entries >= MIN_LIST_FOR_CITED_SHARE && cites_expected {
        let cited = c.list_entries - c.entries_never_cited;
        if share(cited, c.list_entries) < CITED_ENTRY_SHARE {
            let how_many = match cited {
                0 => "none of them is cited".to_string(),
                1 => "only 1 of them is cited".to_string(),
                k => format!("only {k} of them are cited"),
            };
            out.push(format!(
                "a reference list of {} entries exists but {how_many}",
                c.list_entries
            ));
        }
    }
    // A list that (nearly) nothing cites, whatever the citation style: the report
    // may cite in a way no rule reads, and only a reader can tell.
    let cited_entries = c.list_entries - c.entries_never_cited;
    // An HTML page citing by inline links beside an unnumbered further-reading
    // list is read right: only a list nothing cites is a sign there.
    let links_only_page =
        input.format == SourceFormat::Html && c.markers_seen == 0 && c.cited_units > 0;
    let barely_cited = c.cited_units == 0
        || (c.list_entries >= MIN_LIST_FOR_CITED_SHARE
            && c.cited_units <= NEARLY_NO_UNITS
            && !links_only_page
            && share(cited_entries, c.list_entries) < CITED_ENTRY_SHARE);
    if c.list_entries >= MIN_UNCITED_LIST
        && barely_cited
        && !out.iter().any(|r| r.starts_with("a reference list"))
    {
        out.push(if c.cited_units == 0 {
            format!(
                "a reference list of {} entries exists but nothing in the report cites any of them",
                c.list_entries
            )
        } else {
            let units = match c.cited_units {
                1 => "1 cited unit cites".to_string(),
                n => format!("{n} cited units cite"),
            };
            format!(
                "a reference list of {} entries exists but {units} only {cited_entries} of them",
                c.list_entries
            )
        });
    }
    if c.names_unresolved >= MIN_NAMES_UNRESOLVED
        && share(c.names_unresolved, c.names_unresolved + c.names_resolved)
            >= NAMES_UNRESOLVED_SHARE
    {
        let examples: Vec<&str> = input
            .names_unresolved
            .iter()
            .take(3)
            .map(String::as_str)
            .collect();
        let list = if input.has_list {
            "name no entry of the reference list"
        } else {
            "point nowhere: no reference list was found"
        };
        out.push(format!(
            "{} of {} citations by name (author-date, key or source) {list} (e.g. {})",
            c.names_unresolved,
            c.names_unresolved + c.names_resolved,
            examples.join("; ")
        ));
    }
    let long = body_chars >= LONG_BODY_CHARS;
    if c.list_entries >= 3 && numbered && residue_seen && c.cited_units == 0 && long {
        let msg = format!(
            "a long report ({body_chars} characters) with a reference list of {} entries has no cited sentence",
            c.list_entries
        );
        if !out.iter().any(|r| r.starts_with("a reference list")) {
            out.push(msg);
        }
    }
    if c.facts_like_entries >= MIN_FACTS_LIKE_ENTRIES {
        out.push(format!(
            "{} cited units look like reference entries (a URL, or \"[N] Title. Site. URL\")",
            c.facts_like_entries
        ));
    }
    // Entry-like lines are a missed list when a marker names nothing (or residue).
    let missed_list = residue_seen || c.markers_unresolved > 0;
    if c.unlisted_reference_lines >= MIN_UNLISTED_LINES && missed_list {
        out.push(format!(
            "{} lines outside any reference list look like reference entries (numbered or bulleted, with a URL)",
            c.unlisted_reference_lines
        ));
    }
    if c.cited_units >= HEAVY_CITING_UNITS
        && residue_seen
        && c.uncited_quantitative >= UNCITED_QUANT_MIN
        && c.uncited_quantitative as f64 > UNCITED_QUANT_RATIO * c.cited_units as f64
    {
        out.push(format!(
            "{} quantitative sentences carry no citation although the report cites elsewhere ({} cited units)",
            c.uncited_quantitative, c.cited_units
        ));
    }
    if c.units_without_text >= MIN_UNITS_WITHOUT_TEXT
        && share(c.units_without_text, c.cited_units) > UNITS_WITHOUT_TEXT_SHARE
    {
        out.push(format!(
            "{} of {} cited units have no text of their own (bare markers or a label such as \"Sources:\")",
            c.units_without_text, c.cited_units
        ));
    }
    let residue = c.residue.total();
    let marks = residue - c.residue.link_lines;
    let units = c.cited_units as f64;
    if (marks >= MIN_RESIDUE && marks as f64 > RESIDUE_SHARE * units)
        || (residue >= MIN_RESIDUE_WITH_LINK_LINES && residue as f64 > LINK_LINE_SHARE * units)
    {
        let r = &c.residue;
        out.push(format!(
            "{residue} citation-like marks outside every cited unit against {} cited units \
             ({} numerals, {} superscripts, {} bracketed numbers, {} bare links, {} uploaded files, {} link lines)",
            c.cited_units, r.numerals, r.superscripts, r.brackets, r.links, r.files, r.link_lines
        ));
    }
    if c.img_tags >= 2 && input.figures.is_empty() {
        out.push(format!(
            "{} <img> tags in the source but no figure was found",
            c.img_tags
        ));
    }
    out
}

/// A Markdown heading (`## …`), a bold label line (`**Sources (partial)**`) or an
/// HTML heading, with its level (a label: 7, below every heading).
static SECTION_HEADING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^[ \t]{0,3}(?:(#{1,6})[ \t]+([^\n]{1,200}?)[ \t#]*$|\*\*([^*\n]{1,120})\*\*[ \t]*:?[ \t]*$|<h([1-6])\b[^>]*>([^<\n]{1,200})</h[1-6]>)")
        .unwrap()
});

/// Sections opened by a heading that names sources
/// ([`crate::cues::is_source_section_heading`]): from the heading to the next heading
/// of the same or a higher level, each with the heading's text.
fn source_sections(text: &str, skipped: &dyn Fn(usize) -> bool) -> Vec<(Range<usize>, String)> {
    let heads: Vec<(usize, usize, usize, String)> = SECTION_HEADING
        .captures_iter(text)
        .filter(|c| !skipped(c.get(0).map_or(0, |m| m.start())))
        .filter_map(|c| {
            let all = c.get(0)?;
            let (level, title) = if let Some(h) = c.get(1) {
                (h.as_str().len(), c.get(2)?.as_str())
            } else if let Some(b) = c.get(3) {
                (7, b.as_str())
            } else {
                (c.get(4)?.as_str().parse().ok()?, c.get(5)?.as_str())
            };
            Some((all.start(), all.end(), level, title.trim().to_string()))
        })
        .collect();
    let mut out = Vec::new();
    for (i, (_, end, level, title)) in heads.iter().enumerate() {
        if !crate::cues::is_source_section_heading(title) {
            continue;
        }
        let stop = heads[i + 1..]
            .iter()
            .find(|h| h.2 <= *level || *level == 7)
            .map_or(text.len(), |h| h.0);
        out.push((*end..stop, title.clone()));
    }
    out
}

fn find_markers(text: &str, skipped: &dyn Fn(usize) -> bool, idxs: &HashSet<&str>) -> Vec<Marker> {
    let mut out = Vec::new();
    let push_numbers = |out: &mut Vec<Marker>, pos: usize, group: &str, linked: bool| {
        for label in expand(group) {
            // Large numbers that name no entry are years and quantities, not markers.
            let big = label.parse::<u64>().map_or(true, |v| v == 0 || v > 300);
            if big && !idxs.contains(label.as_str()) {
                continue;
            }
            out.push(Marker { pos, label, linked });
        }
    };
    for c in BRACKET.captures_iter(text) {
        let m = c.get(0).expect("whole match");
        if skipped(m.start()) {
            continue;
        }
        let after = &text[m.end()..];
        // `[1]: url` at a line start is a link definition (an entry), not a marker;
        // `[3](#ref3)` and `[3](url)` are markers.
        if after.starts_with(':') && line_start(text, m.start()) {
            continue;
        }
        // `[3](url)`, or `[3]` as the text of a link (`[[3]](url)`).
        let linked = after.starts_with('(') && !after.starts_with("()")
            || after.starts_with("](") && text[..m.start()].ends_with('[');
        if let Some(pair) = c.get(3).filter(|n| n.as_str().contains(':')) {
            // `【4:1†source】`: one marker naming `4:1` (see citations.rs).
            out.push(Marker {
                pos: m.start(),
                label: pair.as_str().to_string(),
                linked: false,
            });
        } else if let Some(n) = c.get(1).or_else(|| c.get(3)) {
            push_numbers(&mut out, m.start(), n.as_str(), linked);
        } else if let Some(label) = c.get(2) {
            if after.starts_with(':') {
                continue;
            }
            out.push(Marker {
                pos: m.start(),
                label: label.as_str().to_string(),
                linked: false,
            });
        }
    }
    for c in HTML_NUM.captures_iter(text) {
        let m = c.get(0).expect("whole match");
        if skipped(m.start()) {
            continue;
        }
        if let Some(n) = c.get(1).or_else(|| c.get(2)) {
            push_numbers(&mut out, m.start(), n.as_str(), false);
        }
    }
    out.sort_by_key(|m| m.pos);
    out
}

fn line_start(text: &str, pos: usize) -> bool {
    text[..pos]
        .rsplit('\n')
        .next()
        .is_none_or(|l| l.trim().is_empty())
}

/// Numbers named by a marker group: `3, 4` -> 3, 4; `3-5` -> 3, 4, 5 (ranges up to
/// 50 long; longer ones count their ends).
fn expand(group: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in group.split([',', '，', '、']) {
        let ends: Vec<u64> = part
            .split(['-', '–', '—'])
            .filter_map(|x| x.trim().parse().ok())
            .collect();
        match ends.as_slice() {
            [a, b] if a < b && b - a <= 50 => out.extend((*a..=*b).map(|n| n.to_string())),
            xs => out.extend(xs.iter().map(|n| n.to_string())),
        }
    }
    out
}

/// A marker belongs to a cited unit when it lies inside one, or follows one with
/// nothing but markup, whitespace and punctuation in between.
///
/// `facts` is sorted by start; `reach` holds, for each prefix of it, the furthest
/// reach (`max(end, start + 1)`) and the furthest end seen so far, so a marker is placed by binary search
/// rather than by walking every unit (reports have hundreds of both).
fn attached(text: &str, facts: &[Range<usize>], reach: &[(usize, usize)], pos: usize) -> bool {
    // Units starting at or before the marker.
    let upto = facts.partition_point(|r| r.start <= pos);
    if upto > 0 && reach[upto - 1].0 > pos {
        return true;
    }
    // None of those contains the marker, so all of them end at or before it: the
    // nearest one before is the one ending last.
    let best_end = upto.checked_sub(1).map(|i| reach[i].1);
    // Markers may also open the unit they cite (table citation columns, leading
    // markers): the next unit starting right after.
    let next = facts[upto..].iter().map(|r| r.start).find(|&s| s > pos);
    if let Some(end) = best_end {
        if let Some(gap) = text.get(end..pos) {
            if gap_is_markup(gap, false) {
                return true;
            }
        }
    }
    if let Some(n) = next {
        if let Some(gap) = text.get(pos..n) {
            if gap_is_markup(gap, true) {
                return true;
            }
        }
    }
    false
}

/// Prefix maxima over units sorted by start: (furthest reach, furthest end).
fn unit_reach(sorted: &[Range<usize>]) -> Vec<(usize, usize)> {
    sorted
        .iter()
        .scan((0, 0), |far, r| {
            *far = (far.0.max(r.end.max(r.start + 1)), far.1.max(r.end));
            Some(*far)
        })
        .collect()
}

/// Whether a gap between a unit and a marker holds only markup (`[...]`, `【...】`,
/// `<...>`, each closed), whitespace and punctuation, with at most two line breaks
/// outside markup (`no_blank_line`: and no blank line anywhere). One pass that
/// stops at the first letter, so long gaps cost little.
fn gap_is_markup(gap: &str, no_blank_line: bool) -> bool {
    if no_blank_line && gap.contains("\n\n") {
        return false;
    }
    let mut newlines = 0;
    let mut rest = gap;
    while let Some(c) = rest.chars().next() {
        let close = match c {
            '[' => Some(']'),
            '【' => Some('】'),
            '<' => Some('>'),
            _ => None,
        };
        if let Some(end) = close.and_then(|cl| rest[c.len_utf8()..].find(cl).map(|i| (i, cl))) {
            rest = &rest[c.len_utf8() + end.0 + end.1.len_utf8()..];
            continue;
        }
        if c.is_alphanumeric() {
            return false;
        }
        if c == '\n' {
            newlines += 1;
            if newlines > 2 {
                return false;
            }
        }
        rest = &rest[c.len_utf8()..];
    }
    true
}

/// Lines outside lists and code that look like reference entries, counted only in
/// runs of three or more such lines (blank lines between them allowed).
fn unlisted_entry_lines(text: &str, skipped: &dyn Fn(usize) -> bool) -> usize {
    let mut total = 0;
    let mut run = 0;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        if !skipped(start + (line.len() - line.trim_start().len())) && entry_line(trimmed) {
            run += 1;
        } else {
            if run >= MIN_UNLISTED_LINES {
                total += run;
            }
            run = 0;
        }
    }
    if run >= MIN_UNLISTED_LINES {
        total += run;
    }
    total
}

/// A numbered or bulleted line whose substance is a URL: the text left once URLs,
/// link syntax and the enumerator are gone is short, and it does not read as a
/// cited sentence (no marker at its end).
fn entry_line(line: &str) -> bool {
    let Some(m) = ENTRY_START.find(line) else {
        return false;
    };
    let rest = &line[m.end()..];
    if !URL.is_match(rest) {
        return false;
    }
    let words = URL.replace_all(rest, "");
    let words = LINK_SYNTAX.replace_all(&words, "]");
    let words = words.trim();
    // `... [3]`, and `... [[3]]` left by a linked marker `[[3]](url)`, before
    // the sentence's full stop or not.
    let words = words.trim_end_matches(['.', ',', ';', '。', '，', '；', ' ']);
    let ends_with_marker = words.ends_with(']') && words.len() > 3 && {
        let tail = words.trim_end_matches(']');
        tail.rsplit('[')
            .next()
            .is_some_and(|n| n.trim().parse::<u32>().is_ok())
    };
    !ends_with_marker && words.chars().count() <= 160 && !url_cited_claim(line, m.as_str())
}

/// A bulleted or numbered line that is a claim citing the URL at its end (see
/// `url_cited_claim`), not a reference entry.
pub(crate) fn listed_url_claim(line: &str) -> bool {
    ENTRY_START
        .find(line)
        .is_some_and(|m| url_cited_claim(line, m.as_str()))
}

/// Bibliographic signs in an entry's text: a year, `et al.`, a DOI, an access
/// date, a volume and issue, a ` | Site` or ` - Site` tail.
static BIBLIOGRAPHIC: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?-u:\b)(?:1[89]\d\d|20\d\d)(?-u:\b)|et al|(?-u:\b)doi(?-u:\b)|accessed|retrieved|\d+\s*\(\d+\)|\s[|\-\u{2013}\u{2014}]\s|(?-u:\b)(?:vol|pp)\.")
        .unwrap()
});

/// A bulleted or `N.` numbered claim that cites with a URL at its end (`- Delete
/// chats after a year to meet the storage limit https://...`, `* **Bias:** skewed
/// data harms some groups [https://...].`): a sentence, not an entry. It has many
/// words before the URL (five when the URL is bracketed after them, as a citation
/// is, seven for a bare one), mostly not capitalised as a title's are, nothing
/// after the URL but punctuation, and no bibliographic sign. `[3]`-style labels always start entries.
fn url_cited_claim(line: &str, start: &str) -> bool {
    let start = start.trim();
    if !(start.starts_with(['-', '*', '+', '\u{2022}']) || start.ends_with(['.', ')'])) {
        return false;
    }
    let rest = &line[line.find(start).map_or(0, |i| i + start.len())..];
    // The last URL, and what is before and after it.
    let Some(last) = URL.find_iter(rest).last() else {
        return false;
    };
    let before = rest[..last.start()].trim_end();
    let after = rest[last.end()..].trim();
    if !after.chars().all(|c| {
        matches!(
            c,
            '.' | ')' | ']' | ';' | ',' | '\u{3002}' | '\u{ff09}' | '*'
        )
    }) {
        return false;
    }
    let bracketed = before.ends_with(['(', '[', '\u{ff08}']);
    let before = before.trim_end_matches(['(', '[', '\u{ff08}', ':', ' ']);
    if URL.is_match(before) || before.contains("](") {
        return false;
    }
    let plain = MARKUP.replace_all(before, "");
    let plain = plain.replace(['*', '_'], "");
    if BIBLIOGRAPHIC.is_match(&plain) {
        return false;
    }
    let cjk = plain
        .chars()
        .filter(|&c| super::language::is_cjk(c))
        .count();
    let words = plain.split_whitespace().count() + cjk / 2;
    // Titles capitalise their long words; sentences mostly do not.
    let long: Vec<&str> = plain
        .split_whitespace()
        .filter(|w| w.chars().filter(|c| c.is_alphabetic()).count() >= 4)
        .collect();
    let capitals = long
        .iter()
        .filter(|w| {
            w.chars()
                .find(|c| c.is_alphabetic())
                .is_some_and(char::is_uppercase)
        })
        .count();
    words >= if bracketed { 5 } else { 7 } && capitals * 2 < long.len().max(1)
}

/// A cited unit that is really a reference entry: its text holds a URL and it starts
/// like an entry (`[3] Title. Site. URL`), or little is left once URLs go.
fn looks_like_entry(fact: &str, source: &str) -> bool {
    if !URL.is_match(fact) {
        return false;
    }
    let src = source.trim();
    if ENTRY_START.find(src).is_some_and(|m| {
        let head = &src[m.as_str().len()..];
        // `[3] Title` / `3. Title`, not a bullet that happens to carry a link.
        !m.as_str().trim_start().starts_with(['-', '*', '+', '•']) && !head.is_empty()
    }) {
        return true;
    }
    let words = URL.replace_all(fact, "");
    let words = LINK_SYNTAX.replace_all(&words, "]");
    words.chars().filter(|c| c.is_alphanumeric()).count() <= 40
}

/// A unit whose text is bare markers or a short label ending in a colon.
fn without_text(fact: &str) -> bool {
    let t = MARKUP.replace_all(fact, "");
    let t = t.trim();
    let letters = t.chars().filter(|c| c.is_alphanumeric()).count();
    letters < 2
        || (t
            .trim_end_matches([',', '，', ' ', '.'])
            .ends_with([':', '：'])
            && t.split_whitespace().count() <= 2
            && letters <= 20)
}

/// Whether the list's entries are written with numbers (`[3]`, `3.`, `[^3]:`, `【3】`)
/// in the source, rather than as plain bullets.
fn numbered_list(text: &str, refs: &[Reference], has_list: bool) -> bool {
    if !has_list || refs.is_empty() {
        return false;
    }
    let lines: Vec<&str> = text.lines().collect();
    let numbered = refs
        .iter()
        .filter(|r| {
            lines.get(r.line.saturating_sub(1)).is_some_and(|l| {
                // `<li>[3] Title ...` and `<a id="ref3"></a> [3] ...`: the number
                // a reader sees comes after the tags.
                let l = LEADING_TAGS.find(l).map_or(*l, |m| &l[m.end()..]);
                ENTRY_START
                    .find(l)
                    .is_some_and(|m| m.as_str().chars().any(|c| c.is_ascii_digit()))
            })
        })
        .count();
    numbered * 2 >= refs.len()
}

/// Sorted, disjoint spans covering the same bytes.
fn merge_spans(mut spans: Vec<Range<usize>>) -> Vec<Range<usize>> {
    spans.sort_by_key(|r| (r.start, r.end));
    let mut out: Vec<Range<usize>> = Vec::with_capacity(spans.len());
    for r in spans {
        match out.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

/// Non-space characters outside the skipped spans.
fn body_chars(text: &str, skip: &[Range<usize>]) -> usize {
    let count = |t: &str| t.chars().filter(|c| !c.is_whitespace()).count();
    let mut total = 0;
    let mut at = 0;
    for r in skip {
        let start = r.start.clamp(at, text.len());
        total += text.get(at..start).map_or(0, count);
        at = r.end.clamp(at, text.len());
    }
    total + text.get(at..).map_or(0, count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_merge() {
        assert_eq!(
            merge_spans(vec![5..9, 0..2, 1..3, 8..12]),
            vec![0..3, 5..12]
        );
    }

    #[test]
    fn ranges_and_lists_expand() {
        assert_eq!(expand("3-5"), ["3", "4", "5"]);
        assert_eq!(expand("1, 7"), ["1", "7"]);
        assert_eq!(expand("1-900"), ["1", "900"]);
    }

    #[test]
    fn entry_lines_and_entry_facts() {
        assert!(entry_line("[3] Some Title. Site. https://example.org/a"));
        assert!(entry_line("- [Title](https://example.org/a)"));
        assert!(!entry_line("Revenue grew https://example.org/a"));
        assert!(!entry_line(
            "- Revenue grew 5 % in 2024 according to [Site](https://example.org/a) [3]"
        ));
        // Bulleted or numbered claims that cite a URL at their end are not entries.
        assert!(!entry_line(
            "- Shorten how long reviewers keep chat logs so the retention meets the storage limit https://example.org/retention"
        ));
        assert!(!entry_line(
            "2. Let users turn off sharing of contact data with the assistant (https://example.org/sharing)."
        ));
        assert!(!entry_line(
            "*   **Bias:** Skewed training data can harm some patient groups [https://example.org/bias]."
        ));
        // Entries stay entries: labels, years, site tails, short titles.
        assert!(entry_line(
            "[4] Shorten how long reviewers keep chat logs so the retention meets the storage limit https://example.org/retention"
        ));
        assert!(entry_line(
            "- Lee, A. and Park, J. (2021). Sleep and memory consolidation in older adults. https://example.org/sleep"
        ));
        assert!(entry_line(
            "- How the city council reviews every new housing permit application - City News https://example.org/permits"
        ));
        assert!(entry_line(
            "- Chat retention policy (https://example.org/retention)."
        ));
        assert!(entry_line(
            "- Hospitals Adopt New Rules For Sharing Patient Records Across State Lines https://example.org/records"
        ));
        assert!(without_text("Sources:"));
        assert!(without_text(""));
        assert!(!without_text("结论：增长很快"));
        assert!(!without_text("Revenue grew 5 %."));
        assert!(looks_like_entry(
            "Some Title. Site. https://example.org/a",
            "[3] Some Title. Site. https://example.org/a"
        ));
        assert!(!looks_like_entry(
            "Revenue grew by five percent over the year as the company expanded.",
            "Revenue grew by five percent over the year as the company expanded. [3]"
        ));
    }

    fn input_with<'a>(
        has_list: bool,
        figures: &'a [Figure],
        errors: &'a StructuralErrors,
    ) -> CheckInput<'a> {
        CheckInput {
            text: "",
            format: SourceFormat::Markdown,
            has_list,
            list_spans: Vec::new(),
            skip_spans: Vec::new(),
            references: &[],
            facts: &[],
            repeat_spans: Vec::new(),
            figures,
            errors,
            spaced_dialect: false,
            names_resolved: 0,
            names_unresolved: &[],
            mention_names: Vec::new(),
        }
    }

    #[test]
    fn uncited_entries_named_in_the_text() {
        let text = "Summers indicates that music matters. 张三认为如此。\nThe summers were hot.\n\nSummers, T. (2018). Music. Press.\n";
        let list = text.find("Summers, T.").unwrap()..text.len();
        let skipped = |p: usize| list.contains(&p);
        let names = |xs: &[(&str, &str)]| -> Vec<(String, String)> {
            xs.iter()
                .map(|(i, n)| (i.to_string(), n.to_string()))
                .collect()
        };
        let none: HashSet<&str> = HashSet::new();
        // A capitalised whole-word mention outside the list, and a CJK name.
        assert_eq!(
            named_uncited(
                text,
                &skipped,
                &names(&[("1", "summers"), ("2", "张三")]),
                &none
            ),
            names(&[("1", "summers"), ("2", "张三")])
        );
        // Cited entries, names only in the list, lower-case words and parts of
        // words are no sign; nor is a name a cited entry shares.
        let cited: HashSet<&str> = ["1"].into_iter().collect();
        assert!(named_uncited(text, &skipped, &names(&[("1", "summers")]), &cited).is_empty());
        assert!(named_uncited(text, &skipped, &names(&[("3", "music")]), &none).is_empty());
        assert!(named_uncited(text, &skipped, &names(&[("3", "summer")]), &none).is_empty());
        assert!(named_uncited(text, &skipped, &names(&[("3", "hot")]), &none).is_empty());
        assert!(named_uncited(
            text,
            &skipped,
            &names(&[("1", "summers"), ("4", "summers")]),
            &cited
        )
        .is_empty());
    }

    #[test]
    fn each_reason_has_its_threshold() {
        let errors = StructuralErrors::default();
        let input = input_with(true, &[], &errors);
        let base = ExtractionCounts {
            markers_seen: 20,
            markers_resolved: 20,
            list_entries: 10,
            entries_never_cited: 2,
            cited_units: 15,
            ..Default::default()
        };
        assert!(reasons(&base, &input, 5000, true).is_empty());
        // Rules reading uncited text as missed citations need a residue mark.
        let case = |f: &dyn Fn(&mut ExtractionCounts), needle: &str| {
            let mut c = base.clone();
            c.residue.numerals = 1;
            f(&mut c);
            let r = reasons(&c, &input, 5000, true);
            assert!(r.iter().any(|x| x.contains(needle)), "{needle}: {r:?}");
        };
        case(
            &|c| {
                c.markers_resolved = 8;
                c.markers_unresolved = 12;
            },
            "name no entry",
        );
        case(&|c| c.markers_unattached = 5, "belong to no cited sentence");
        case(&|c| c.entries_never_cited = 9, "only 1 of them");
        case(&|c| c.facts_like_entries = 2, "look like reference entries");
        case(
            &|c| c.unlisted_reference_lines = 4,
            "outside any reference list",
        );
        case(&|c| c.uncited_quantitative = 16, "quantitative sentences");
        case(
            &|c| {
                c.cited_units = 0;
                c.entries_never_cited = 3;
                c.list_entries = 3;
                c.markers_seen = 0;
                c.markers_resolved = 0;
            },
            "exists but nothing in the report cites any of them",
        );
        case(&|c| c.img_tags = 3, "<img> tags");
        case(&|c| c.units_without_text = 4, "no text of their own");
        // Just under each threshold stays ok.
        let mut c = base.clone();
        c.markers_unattached = 3; // 15 % of 20
        c.facts_like_entries = 1;
        c.unlisted_reference_lines = 2;
        c.uncited_quantitative = 15;
        c.entries_never_cited = 8; // 2 of 10 cited = 20 %
        c.units_without_text = 3; // 20 % of 15
        assert!(
            reasons(&c, &input, 5000, true).is_empty(),
            "{:?}",
            reasons(&c, &input, 5000, true)
        );
        // A list nothing cites is suspect, numbered or not, with or without
        // residue: the report may cite in a way no rule reads (by name).
        let mut c = base.clone();
        c.markers_seen = 0;
        c.markers_resolved = 0;
        c.cited_units = 0;
        c.entries_never_cited = 10;
        for numbered in [false, true] {
            assert!(reasons(&c, &input, 5000, numbered)
                .iter()
                .any(|r| r.contains("nothing in the report cites any of them")));
        }
        c.residue.numerals = 1;
        assert!(reasons(&c, &input, 5000, true)
            .iter()
            .any(|r| r.contains("exists but none of them is cited")));
        // Nearly no unit: two units citing one entry of ten.
        c.residue.numerals = 0;
        c.cited_units = 2;
        c.entries_never_cited = 9;
        assert!(reasons(&c, &input, 5000, false)
            .iter()
            .any(|r| r.contains("2 cited units cite only 1 of them")));
        // A one-entry list is too small to call uncited.
        let mut c = ExtractionCounts {
            list_entries: 1,
            entries_never_cited: 1,
            ..Default::default()
        };
        assert!(reasons(&c, &input, 5000, false).is_empty());
        // Author-date shapes naming no entry: 2 of 5 is suspect, 1 of 5 is not.
        let unresolved = ["(Smith, 2020)".to_string(), "Lee (2019)".to_string()];
        let mut named = input_with(true, &[], &errors);
        named.names_unresolved = &unresolved;
        c.list_entries = 0;
        c.entries_never_cited = 0;
        c.names_unresolved = 2;
        c.names_resolved = 3;
        assert!(reasons(&c, &named, 5000, false)
            .iter()
            .any(|r| r
                .contains("2 of 5 citations by name (author-date, key or source) name no entry")));
        c.names_unresolved = 1;
        c.names_resolved = 4;
        assert!(reasons(&c, &named, 5000, false).is_empty());
        // Without residue, uncited entries, lines and quantities are no reasons.
        let mut c = base.clone();
        c.entries_never_cited = 9;
        c.unlisted_reference_lines = 4;
        c.uncited_quantitative = 16;
        assert!(reasons(&c, &input, 5000, true).is_empty());
        // Entry-like lines beside a marker that names nothing are a missed list.
        c.markers_resolved = 19;
        c.markers_unresolved = 1;
        let r = reasons(&c, &input, 5000, true);
        assert!(
            r.len() == 1 && r[0].contains("outside any reference list"),
            "{r:?}"
        );
        // Residue over 5 % of the units: 1 of 15 is suspect, 1 of 20 is not.
        let mut c = base.clone();
        c.residue.superscripts = 1;
        assert!(!reasons(&c, &input, 5000, true).is_empty());
        c.cited_units = 20;
        assert!(reasons(&c, &input, 5000, true).is_empty());
        // No list: bracketed numbers point nowhere.
        let no_list = input_with(false, &[], &errors);
        let c = ExtractionCounts {
            markers_seen: 6,
            markers_unresolved: 6,
            ..Default::default()
        };
        assert!(reasons(&c, &no_list, 100, false)[0].contains("no reference list"));
    }

    #[test]
    fn markers_follow_units_across_markup() {
        let text = "A claim.  [1][2] Next claim.";
        let facts: Vec<Range<usize>> = std::iter::once(0..8).collect();
        let reach = unit_reach(&facts);
        assert!(attached(text, &facts, &reach, 10));
        assert!(!attached("A claim. Other words [1]", &facts, &reach, 21));
    }

    /// The regex-and-scan definition the indexed version replaced.
    fn attached_naive(text: &str, facts: &[Range<usize>], pos: usize) -> bool {
        let mut best: Option<&Range<usize>> = None;
        for r in facts {
            if r.start <= pos && pos < r.end.max(r.start + 1) {
                return true;
            }
            if r.end <= pos && best.is_none_or(|b| r.end > b.end) {
                best = Some(r);
            }
        }
        let next = facts
            .iter()
            .filter(|r| r.start > pos)
            .map(|r| r.start)
            .min();
        let gap_ok = |gap: &str| {
            let gap = MARKUP.replace_all(gap, "");
            gap.chars().all(|c| !c.is_alphanumeric()) && gap.matches('\n').count() <= 2
        };
        if let Some(gap) = best.and_then(|b| text.get(b.end..pos)) {
            if gap_ok(gap) {
                return true;
            }
        }
        if let Some(gap) = next.and_then(|n| text.get(pos..n)) {
            if gap_ok(gap) && !gap.contains("\n\n") {
                return true;
            }
        }
        false
    }

    #[test]
    fn indexed_attachment_agrees_with_the_plain_definition() {
        // Every marker position of texts mixing words, markup (closed and not),
        // line breaks and CJK, against units tiling, nesting and leaving gaps.
        let texts = [
            "A claim.  [1][2] Next claim. <sup>3</sup>\n\nNew para [4] 【5】 end. [6",
            "First [1].\n\n\n[2] Lead-in: [3]\n- item one [4]\n- item <b>two</b> [5]",
            "数据增长了。[1] 另一句【2】。\n<a href=\"#r\">3</a> trailing ] text [ open",
            "x [1]\n\n[2]\n\n\n[3] y",
        ];
        for text in texts {
            let n = text.len();
            let bounds: Vec<usize> = (0..=n).filter(|&i| text.is_char_boundary(i)).collect();
            let pick = |k: usize| bounds[k % bounds.len()];
            for seed in 0..40usize {
                let mut facts: Vec<Range<usize>> = (0..(seed % 5))
                    .map(|j| {
                        let a = pick(seed * 7 + j * 13);
                        let b = pick(seed * 3 + j * 29 + 5);
                        a.min(b)..a.max(b)
                    })
                    .collect();
                facts.sort_by_key(|r| (r.start, r.end));
                let reach = unit_reach(&facts);
                for &pos in &bounds {
                    assert_eq!(
                        attached(text, &facts, &reach, pos),
                        attached_naive(text, &facts, pos),
                        "{text:?} {facts:?} at {pos}"
                    );
                }
            }
        }
    }

    #[test]
    fn body_chars_skip_spans_and_spaces() {
        let text = "ab c\n[skip me] dé";
        let skip = merge_spans(std::iter::once(5..14).collect());
        assert_eq!(body_chars(text, &skip), 5);
        assert_eq!(body_chars(text, &[]), 13);
        assert_eq!(
            body_chars(text, &merge_spans(std::iter::once(0..100).collect())),
            0
        );
    }
}
