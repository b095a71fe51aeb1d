//! The report text the report-level judges read: invalid figures blanked, captions
//! revised at each figure's own location (Appendix C).

use std::ops::Range;

use tvir_report::Figure;

/// One replacement of a byte range of the report text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    pub range: Range<usize>,
    pub replacement: String,
}

/// Blank an unusable figure: its path (as written) is removed inside the figure's own
/// span, so the judge sees a figure marker with no image behind it.
pub fn blank_figure(text: &str, figure: &Figure) -> Option<Edit> {
    let span = figure.span.clone();
    let inside = text.get(span.clone())?;
    if figure.content.is_empty() || !inside.contains(&figure.content) {
        return None;
    }
    Some(Edit {
        range: span,
        replacement: inside.replace(&figure.content, ""),
    })
}

/// Replace a figure's caption with a revision, or insert the revision right after the
/// figure when it has no caption. An empty revision deletes the caption, as the
/// reference evaluator's replacement does (nothing is inserted for a figure that
/// had none).
pub fn revise_caption(text: &str, figure: &Figure, revised: &str) -> Option<Edit> {
    let revised = revised.trim();
    if revised.is_empty() && figure.caption_span.is_none() {
        return None;
    }
    match &figure.caption_span {
        Some(span) => {
            text.get(span.clone())?;
            Some(Edit {
                range: span.clone(),
                replacement: revised.to_string(),
            })
        }
        None => {
            let end = figure.span.end;
            text.get(..end)?;
            Some(Edit {
                range: end..end,
                replacement: format!("\n\n{revised}\n"),
            })
        }
    }
}

/// Apply non-overlapping edits (overlapping or out-of-bounds ones are dropped, the
/// earlier-starting edit wins) and return the new text.
pub fn apply_edits(text: &str, mut edits: Vec<Edit>) -> String {
    edits.sort_by_key(|a| (a.range.start, a.range.end));
    let mut out = String::with_capacity(text.len());
    let mut pos = 0;
    for edit in edits {
        let r = edit.range;
        if r.start < pos || r.end > text.len() || text.get(r.clone()).is_none() {
            continue;
        }
        out.push_str(&text[pos..r.start]);
        out.push_str(&edit.replacement);
        pos = r.end;
    }
    out.push_str(&text[pos..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tvir_report::FigureKind;

    fn figure(text: &str, elem: &str, caption: Option<&str>) -> Figure {
        let start = text.find(elem).unwrap();
        Figure {
            content: "images/a.png".into(),
            kind: FigureKind::Image,
            caption: caption.map(str::to_string),
            context: None,
            ref_idxs: vec![],
            line: 1,
            number: None,
            alt: None,
            span: start..start + elem.len(),
            caption_span: caption.map(|c| {
                let s = text.find(c).unwrap();
                s..s + c.len()
            }),
            render: None,
            chart_data: None,
            caption_source: None,
        }
    }

    #[test]
    fn blanking_removes_the_path_only_inside_the_span() {
        let text = "See images/a.png below.\n![x](images/a.png)\n";
        let f = figure(text, "![x](images/a.png)", None);
        let e = blank_figure(text, &f).unwrap();
        assert_eq!(
            apply_edits(text, vec![e]),
            "See images/a.png below.\n![x]()\n"
        );
    }

    #[test]
    fn revision_replaces_only_the_figures_own_caption() {
        let text = "Chart A\n\n![x](images/a.png)\nChart A\n";
        let mut f = figure(text, "![x](images/a.png)", None);
        // The caption is the second "Chart A", after the image.
        let s = text.rfind("Chart A").unwrap();
        f.caption = Some("Chart A".into());
        f.caption_span = Some(s..s + 7);
        let e = revise_caption(text, &f, "Figure 1: Revenue by year").unwrap();
        assert_eq!(
            apply_edits(text, vec![e]),
            "Chart A\n\n![x](images/a.png)\nFigure 1: Revenue by year\n"
        );
    }

    #[test]
    fn missing_caption_is_inserted_after_the_figure() {
        let text = "Intro\n![x](images/a.png)\nMore";
        let f = figure(text, "![x](images/a.png)", None);
        let e = revise_caption(text, &f, "Figure 1: A").unwrap();
        assert_eq!(
            apply_edits(text, vec![e]),
            "Intro\n![x](images/a.png)\n\nFigure 1: A\n\nMore"
        );
    }

    #[test]
    fn an_empty_revision_deletes_the_caption_and_inserts_nothing() {
        // The reference replaces the caption by the revision as returned: an empty
        // one removes it (the former rule kept the caption).
        let text = "![x](images/a.png)\nChart A\nMore";
        let mut f = figure(text, "![x](images/a.png)", None);
        let s = text.find("Chart A").unwrap();
        f.caption = Some("Chart A".into());
        f.caption_span = Some(s..s + 7);
        let e = revise_caption(text, &f, "  ").unwrap();
        assert_eq!(apply_edits(text, vec![e]), "![x](images/a.png)\n\nMore");
        let bare = figure(text, "![x](images/a.png)", None);
        assert_eq!(revise_caption(text, &bare, ""), None);
    }

    #[test]
    fn overlapping_and_bad_edits_are_dropped() {
        let text = "abcdef";
        let edits = vec![
            Edit {
                range: 1..3,
                replacement: "X".into(),
            },
            Edit {
                range: 2..4,
                replacement: "Y".into(),
            },
            Edit {
                range: 5..99,
                replacement: "Z".into(),
            },
        ];
        assert_eq!(apply_edits(text, edits), "aXdef");
        assert_eq!(
            apply_edits(
                "图表",
                vec![Edit {
                    range: 1..2,
                    replacement: "x".into()
                }]
            ),
            "图表"
        );
    }
}
