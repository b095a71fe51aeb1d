//! What a run fetches for a report: the references cited by at least one fact or by a
//! chart's caption (uncited references are skipped, as in the paper), and remote
//! figure images. `tvir fetch` and `tvir eval` both select through here.

use std::collections::HashSet;

use super::normalize_url;
use tvir_report::{FigureKind, Report};

/// A cited reference that has a URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CitedSource {
    /// The reference label as written ("3", "1_4").
    pub idx: String,
    pub url: String,
}

/// Cited references with a URL, in order of first citation (facts in report order,
/// then charts). A label cited several times appears once; when two labels share a
/// URL both are listed (each needs its text).
pub fn cited_sources(report: &Report) -> Vec<CitedSource> {
    let cited = report
        .facts
        .iter()
        .flat_map(|fact| fact.ref_idxs.iter())
        .chain(
            report
                .figures
                .iter()
                .filter(|figure| figure.kind == FigureKind::Chart)
                .flat_map(|figure| figure.ref_idxs.iter()),
        );
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for idx in cited {
        if !seen.insert(idx.as_str()) {
            continue;
        }
        let url = report
            .references
            .iter()
            .filter(|r| &r.idx == idx)
            .find_map(|r| r.url.as_deref().map(str::trim).filter(|u| !u.is_empty()))
            // An uploaded file is no page to fetch: CS settles it without one.
            .filter(|u| !tvir_report::is_uploaded_file(u));
        if let Some(url) = url {
            out.push(CitedSource {
                idx: idx.clone(),
                url: url.to_string(),
            });
        }
    }
    out
}

/// URLs to fetch for a report: [`cited_sources`] deduplicated by normalised URL, in
/// order of first citation. Each is the URL as written (trimmed).
pub fn cited_urls(report: &Report) -> Vec<String> {
    dedup_by_normalised(cited_sources(report).into_iter().map(|s| s.url))
}

/// Figures whose content is an http(s) URL, deduplicated by normalised URL.
pub fn remote_image_urls(report: &Report) -> Vec<String> {
    dedup_by_normalised(
        report
            .figures
            .iter()
            .map(|f| f.content.trim())
            .filter(|c| {
                let lower = c.to_ascii_lowercase();
                lower.starts_with("http://") || lower.starts_with("https://")
            })
            .map(str::to_string),
    )
}

fn dedup_by_normalised(urls: impl Iterator<Item = String>) -> Vec<String> {
    let mut seen = HashSet::new();
    urls.filter(|u| seen.insert(normalize_url(u))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tvir_report::{Fact, Figure, Language, Reference, SourceFormat, StructuralErrors};

    fn reference(idx: &str, url: Option<&str>) -> Reference {
        Reference {
            idx: idx.into(),
            url: url.map(Into::into),
            title: None,
            line: 1,
        }
    }

    fn fact(refs: &[&str]) -> Fact {
        Fact {
            fact: "a claim".into(),
            ref_idxs: refs.iter().map(|s| s.to_string()).collect(),
            line: 1,
            span: 0..1,
        }
    }

    fn figure(kind: FigureKind, content: &str, refs: &[&str]) -> Figure {
        Figure {
            content: content.into(),
            kind,
            caption: Some("caption".into()),
            context: None,
            ref_idxs: refs.iter().map(|s| s.to_string()).collect(),
            line: 1,
            number: None,
            alt: None,
            span: 0..1,
            caption_span: None,
            render: None,
            chart_data: None,
            caption_source: None,
        }
    }

    fn report(references: Vec<Reference>, facts: Vec<Fact>, figures: Vec<Figure>) -> Report {
        Report {
            path: "r/report.md".into(),
            root: "r".into(),
            format: SourceFormat::Markdown,
            text: String::new(),
            language: Language::En,
            references,
            facts,
            figures,
            pseudo_visuals: vec![],
            structural_errors: StructuralErrors::default(),
            warnings: vec![],
            extraction: Default::default(),
        }
    }

    #[test]
    fn selects_cited_references_only_in_citation_order() {
        let r = report(
            vec![
                reference("1", Some("https://one.example/a")),
                reference("2", Some("https://two.example/")),
                reference("3", Some("https://three.example/")),
                reference("4", None),
                reference("5", Some("https://five.example/")),
                reference("6", Some("https://six.example/img-source")),
            ],
            vec![fact(&["3", "1"]), fact(&["1"]), fact(&["4", "9"])],
            vec![
                figure(FigureKind::Chart, "charts/c.png", &["5"]),
                // An image's caption citation is where the image came from: not fetched.
                figure(FigureKind::Image, "images/i.png", &["6"]),
            ],
        );
        assert_eq!(
            cited_urls(&r),
            vec![
                "https://three.example/",
                "https://one.example/a",
                "https://five.example/"
            ]
        );
        let sources = cited_sources(&r);
        assert_eq!(sources.len(), 3);
        assert_eq!(sources[0].idx, "3");
        // "2" is uncited, "4" has no URL, "9" does not exist.
    }

    #[test]
    fn dedups_by_normalised_url_but_keeps_each_label() {
        let r = report(
            vec![
                reference("1", Some("https://Example.com/a#section")),
                reference("2", Some(" https://example.com/a ")),
            ],
            vec![fact(&["1", "2"])],
            vec![],
        );
        assert_eq!(cited_urls(&r), vec!["https://Example.com/a#section"]);
        assert_eq!(cited_sources(&r).len(), 2);
    }

    #[test]
    fn remote_images() {
        let r = report(
            vec![],
            vec![],
            vec![
                figure(FigureKind::Image, "images/local.png", &[]),
                figure(FigureKind::Image, "https://cdn.example/x.png", &[]),
                figure(FigureKind::Image, "HTTPS://cdn.example/x.png", &[]),
                figure(FigureKind::Unknown, "http://other.example/y.jpg", &[]),
            ],
        );
        assert_eq!(
            remote_image_urls(&r),
            vec!["https://cdn.example/x.png", "http://other.example/y.jpg"]
        );
    }
}
