//! One small report per citation/reference/figure style real systems emit (our own
//! fixtures, written for these tests), each checked for what the parser extracts.

use crate::common;

use std::path::PathBuf;

use common::report::{codes, fact_refs, s};
use tvir_report::{self as report, FigureKind, Language, Report};

fn load(name: &str) -> Report {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/reports")
        .join(name);
    report::load(&dir).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn refs(r: &Report) -> Vec<(String, Option<String>)> {
    r.references
        .iter()
        .map(|x| (x.idx.clone(), x.url.clone()))
        .collect()
}

#[test]
fn tvir_anchor_markers_and_html_figures() {
    let r = load("tvir_html_figures");
    assert_eq!(r.language, Language::Zh);
    assert_eq!(r.references.len(), 3);
    assert_eq!(
        r.references[2].url.as_deref(),
        Some("https://example.net/文章/共享单车")
    );
    assert_eq!(fact_refs(&r), vec![s(&["1"]), s(&["2", "3"])]);
    assert_eq!(r.facts[1].fact, "2023年共享单车日均骑行量达到3000万次。");
    assert_eq!(r.facts[0].line, 5);
    assert_eq!(r.figures.len(), 2);
    let (a, b) = (&r.figures[0], &r.figures[1]);
    assert_eq!((a.kind, b.kind), (FigureKind::Image, FigureKind::Chart));
    assert_eq!(a.ref_idxs, s(&["1"]));
    assert_eq!(b.ref_idxs, s(&["2"]));
    assert_eq!(a.number.as_deref(), Some("1"));
    // Explicit mentions give the context.
    assert!(a
        .context
        .as_deref()
        .unwrap()
        .contains("自行车道网络在中心城区最为密集"));
    assert!(b.context.as_deref().unwrap().contains("季节变化见图 2"));
    // Spans point at the figure element and the caption text.
    assert!(r.text[a.span.clone()].starts_with("<figure>"));
    assert!(r.text[a.span.clone()].ends_with("</figure>"));
    let cap = &r.text[a.caption_span.clone().unwrap()];
    assert!(cap.starts_with("图 1：中心城区"), "{cap}");
    assert!(cap.ends_with("</a>"), "{cap}");
    // Fact spans cover the sentence in the source.
    assert!(r.text[r.facts[1].span.clone()].contains("3000万次"));
    assert!(codes(&r).is_empty(), "{:?}", codes(&r));
}

#[test]
fn claude_trailing_markers_after_chatter() {
    let r = load("claude_trailing_markers");
    assert_eq!(refs(&r).len(), 3);
    assert_eq!(
        r.references[0].title.as_deref(),
        Some("Urban heat islands explained | Example Org")
    );
    // Markers after the last sentence of a paragraph cite that sentence only.
    assert_eq!(fact_refs(&r), vec![s(&["1", "2"]), s(&["3"])]);
    assert!(r.facts[0].fact.starts_with("Dense pavement"));
}

#[test]
fn gemini_glued_numerals_and_citation_column() {
    let r = load("gemini_glued");
    assert_eq!(
        refs(&r),
        vec![
            (
                "1".into(),
                Some("https://example.org/grass_carbon.pdf".into())
            ),
            ("2".into(), Some("https://example.com/grazing".into())),
            ("3".into(), Some("https://example.net/decomp".into())),
        ]
    );
    assert_eq!(
        r.references[0].title.as_deref(),
        Some("Grassland carbon stocks - Example Journal")
    );
    // `3.5 times` is a decimal and `Fig.1` an abbreviation: not citations.
    assert_eq!(
        fact_refs(&r),
        vec![
            s(&["1"]),
            s(&["2", "3"]),
            s(&["1"]),
            s(&["2"]),
            s(&["1", "3"])
        ]
    );
    assert_eq!(r.facts[3].fact, "Steppe | 120 | Root turnover");
}

#[test]
fn openai_docx_shared_urls_and_unfenced_mermaid() {
    let r = load("openai_docx");
    let mut got = refs(&r);
    got.sort();
    assert_eq!(
        got,
        vec![
            ("1".into(), Some("https://example.org/reef-review".into())),
            (
                "2".into(),
                Some("https://example.com/recovery-times".into())
            ),
            ("3".into(), Some("https://example.org/reef-review".into())),
        ]
    );
    assert_eq!(fact_refs(&r), vec![s(&["1"]), s(&["2", "3"]), s(&["1"])]);
    assert_eq!(r.pseudo_visuals.len(), 1);
    assert_eq!(r.pseudo_visuals[0].kind, "chart");
    assert_eq!(r.pseudo_visuals[0].notation.as_deref(), Some("mermaid"));
    assert!(r.facts.iter().all(|f| !f.fact.contains("-->")));
}

#[test]
fn mirothinker_url_tags_become_references() {
    let r = load("mirothinker_tags");
    assert_eq!(
        refs(&r),
        vec![
            ("1".into(), Some("https://www.example.cn/westlake".into())),
            ("2".into(), Some("https://travel.example.com/hz".into())),
        ]
    );
    assert_eq!(fact_refs(&r), vec![s(&["1"]), s(&["1", "2"])]);
    assert!(!r.facts[0].fact.contains("图片"), "{}", r.facts[0].fact);
}

#[test]
fn msagent_br_captions_and_orphans() {
    let r = load("msagent_br_captions");
    assert_eq!(r.figures.len(), 2);
    assert_eq!(
        r.figures[0].caption.as_deref(),
        Some("图1：多智能体系统示例框架。")
    );
    assert_eq!(r.figures[1].kind, FigureKind::Chart);
    let cap_span = r.figures[0].caption_span.clone().unwrap();
    assert_eq!(&r.text[cap_span], "图1：多智能体系统示例框架。");
    let c = codes(&r);
    assert_eq!(
        c.iter().filter(|x| *x == "orphan_caption").count(),
        2,
        "{c:?}"
    );
    // One of the two image files is missing.
    assert_eq!(
        c.iter().filter(|x| *x == "missing_image_file").count(),
        1,
        "{c:?}"
    );
}

#[test]
fn finresearch_caption_lines_and_context() {
    let r = load("finresearch_captions");
    assert!(r.references.is_empty());
    assert_eq!(r.figures.len(), 2);
    let f = &r.figures[0];
    assert_eq!(
        f.caption.as_deref(),
        Some("Figure 1: Gross margin trend, 2024Q3-2025Q2")
    );
    assert_eq!(f.kind, FigureKind::Chart);
    assert!(f.context.as_deref().unwrap().contains("as Figure 1 shows"));
    assert!(codes(&r).contains(&"chart_without_source".to_string()));
}

#[test]
fn deerflow_unnumbered_bullets_and_remote_images() {
    let r = load("deerflow_key_citations");
    // The repeated bullet is one entry; unnumbered lists are numbered in order.
    assert_eq!(
        refs(&r).iter().map(|x| x.0.as_str()).collect::<Vec<_>>(),
        vec!["1", "2"]
    );
    assert_eq!(
        r.references[1].title.as_deref(),
        Some("Tea terraces of Hangzhou | Example Travel")
    );
    assert_eq!(r.figures.len(), 2);
    assert!(r.figures.iter().all(|f| f.kind == FigureKind::Image));
    // Alt text is the caption of last resort, with no span to replace in place.
    assert_eq!(r.figures[0].caption.as_deref(), Some("Longjing tea leaves"));
    assert!(r.figures[0].caption_span.is_none());
    assert!(r.facts.is_empty());
}

#[test]
fn footnote_definitions() {
    let r = load("footnotes");
    let mut got = refs(&r);
    got.sort();
    assert_eq!(
        got.iter().map(|x| x.0.as_str()).collect::<Vec<_>>(),
        vec!["1", "1_4", "2"]
    );
    assert_eq!(
        fact_refs(&r),
        vec![s(&["1"]), s(&["1_4"]), s(&["2", "1_4"])]
    );
}

#[test]
fn escaped_ranges_lists_sup_lenticular_and_numbered_links() {
    let r = load("escaped_numbered_links");
    assert_eq!(r.references.len(), 4);
    assert_eq!(
        fact_refs(&r),
        vec![
            s(&["1"]),
            s(&["2", "3", "4"]),
            s(&["1", "2", "3"]),
            s(&["4"]),
            s(&["2"]),
        ]
    );
    // `[2024]` and `[Retrieve]` resolve to nothing and make no fact or error.
    assert!(r.facts.iter().all(|f| !f.fact.contains("2024")));
    assert!(r.structural_errors.consistency.is_empty());
}

#[test]
fn inline_links_without_list_make_references_in_order() {
    let r = load("inline_links");
    assert_eq!(
        refs(&r),
        vec![
            (
                "1".into(),
                Some("https://stats.example.com/remote#:~:text=remote work, rose sharply".into())
            ),
            ("2".into(), Some("https://survey.example.org/hybrid".into())),
        ]
    );
    assert_eq!(fact_refs(&r), vec![s(&["1"]), s(&["2"]), s(&["1"])]);
}

#[test]
fn ieee_and_whole_entry_links() {
    let r = load("ieee_whole_entry");
    assert_eq!(
        refs(&r),
        vec![
            ("1".into(), Some("https://example.org/sulfide".into())),
            (
                "2".into(),
                Some("https://example.com/oxide-stability".into())
            ),
        ]
    );
    assert_eq!(
        r.references[1].title.as_deref(),
        Some("Oxide electrolyte stability in air")
    );
}

#[test]
fn lists_split_by_subheadings_and_a_second_list() {
    let r = load("two_lists_subheadings");
    assert_eq!(
        refs(&r).iter().map(|x| x.0.as_str()).collect::<Vec<_>>(),
        vec!["1", "2", "3", "4"]
    );
    assert_eq!(
        r.references[3].url.as_deref(),
        Some("https://atlas.example.org/")
    );
    assert_eq!(r.facts.len(), 3);
}

#[test]
fn wrapped_and_repeated_report_counts_once() {
    let r = load("wrapper_repeated");
    assert_eq!(
        refs(&r),
        vec![("1".into(), Some("https://example.org/bees".into()))]
    );
    assert_eq!(r.facts.len(), 1);
    assert!(r.structural_errors.consistency.is_empty());
}

#[test]
fn logos_are_not_figures_and_cjk_urls_are_kept() {
    let r = load("logos_cjk");
    assert_eq!(r.figures.len(), 1, "{:?}", r.figures);
    assert_eq!(r.figures[0].caption.as_deref(), Some("图1：南京汤包实拍。"));
    assert_eq!(
        r.references[0].url.as_deref(),
        Some("https://zh.example.org/wiki/南京汤包")
    );
    assert!(codes(&r).contains(&"missing_image_file".to_string()));
}

#[test]
fn html_report_parsed_directly() {
    let r = load("html_report");
    assert_eq!(r.format, tvir_report::SourceFormat::Html);
    assert_eq!(
        refs(&r),
        vec![
            ("1".into(), Some("https://example.org/glaciers".into())),
            ("2".into(), Some("https://example.com/dark-ice".into())),
        ]
    );
    assert_eq!(fact_refs(&r), vec![s(&["1"]), s(&["2"]), s(&["1"])]);
    assert_eq!(r.facts[2].fact, "2022 | 6%");
    assert_eq!(r.figures.len(), 1);
    let f = &r.figures[0];
    assert_eq!((f.kind, f.ref_idxs.clone()), (FigureKind::Chart, s(&["1"])));
    assert_eq!(
        f.context.as_deref(),
        Some("As Figure 1 shows, losses peaked in 2022.")
    );
    assert!(codes(&r).is_empty(), "{:?}", codes(&r));
}

#[test]
fn structural_errors_for_numbering_and_dangling_markers() {
    let text = "# T\n\nA claim [1]. Another [3]. A third [1][4].\n\nRevenue grew 40% last year.\n\n![](charts/x.png)\n\n![empty]()\n\n![a](images/y.png)\n*Figure 2: y*\n\n![b](images/z.png)\n*Figure 2: z*\n\n## References\n\n[1] https://a.example/1\n[2] Title only, no link\n[4] https://a.example/4\n[4] https://a.example/other\n";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("report.md"), text).unwrap();
    let r = report::load(dir.path()).unwrap();
    let c = codes(&r);
    for code in [
        "marker_without_entry",
        "duplicate_reference_number",
        "missing_reference_numbers",
        "duplicate_figure_number",
        "figure_number_gap",
        "uncited_quantitative",
        "empty_image_path",
        "figure_without_caption",
        "missing_image_file",
    ] {
        assert!(c.contains(&code.to_string()), "{code} not in {c:?}");
    }
    // [3] names no entry: an error, and its sentence is still a cited unit (CS
    // settles it as "no usable source"; issue #26).
    assert_eq!(fact_refs(&r), vec![s(&["1"]), s(&["3"]), s(&["1", "4"])]);
    assert!(r.unusable_citation("3").is_some());
}

#[test]
fn lossy_utf8_warns_with_offset_and_oversize_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("report.md"), b"# T\n\nbad \xFF byte [1].\n").unwrap();
    let r = report::load(dir.path()).unwrap();
    assert_eq!(r.warnings.len(), 1);
    assert!(r.warnings[0].contains("byte offset 9"), "{}", r.warnings[0]);
    assert!(r.text.contains('\u{FFFD}'));

    let big = dir.path().join("big.md");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(report::load::MAX_REPORT_BYTES + 1).unwrap();
    let err = report::load(&big).unwrap_err();
    assert!(matches!(err, report::ReportError::TooLarge { .. }), "{err}");
    assert!(err.to_string().contains("big.md"));
}

#[test]
fn detect_language_is_public() {
    assert_eq!(
        report::detect_language("请分析大模型智能体的记忆机制"),
        Language::Zh
    );
    assert_eq!(
        report::detect_language("Analyse agent memory"),
        Language::En
    );
}
