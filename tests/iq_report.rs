//! A report's image figures become scoring inputs in report order: local paths
//! resolved against the report folder, charts skipped, missing files and remote URLs
//! without a fetcher failing with a reason (and counting as Q = 0).

use std::path::PathBuf;

use tvir_images::{self as images, inputs, ImageLimits};
use tvir_report::{Figure, FigureKind, Language, Report, SourceFormat, StructuralErrors};

fn figure(content: &str, kind: FigureKind) -> Figure {
    Figure {
        content: content.into(),
        kind,
        caption: None,
        context: None,
        ref_idxs: Vec::new(),
        line: 1,
        number: None,
        alt: None,
        span: 0..0,
        caption_span: None,
        render: None,
        chart_data: None,
        caption_source: None,
    }
}

#[test]
fn report_figures_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/images");
    std::fs::create_dir(dir.path().join("images")).unwrap();
    std::fs::create_dir(dir.path().join("charts")).unwrap();
    std::fs::copy(
        fixtures.join("photo.png"),
        dir.path().join("images/photo one.png"),
    )
    .unwrap();
    std::fs::copy(
        fixtures.join("chart_bars.png"),
        dir.path().join("charts/c.png"),
    )
    .unwrap();
    std::fs::copy(
        fixtures.join("photo_q85.jpg"),
        dir.path().join("images/p.jpg"),
    )
    .unwrap();
    let report = Report {
        path: dir.path().join("report.md"),
        root: dir.path().to_path_buf(),
        format: SourceFormat::Markdown,
        text: String::new(),
        language: Language::En,
        references: Vec::new(),
        facts: Vec::new(),
        figures: vec![
            figure("images/photo%20one.png", FigureKind::Image),
            figure("charts/c.png", FigureKind::Chart),
            figure("./images/missing.png", FigureKind::Image),
            figure("https://example.org/x.png", FigureKind::Image),
            figure("images/p.jpg", FigureKind::Image),
        ],
        pseudo_visuals: Vec::new(),
        structural_errors: StructuralErrors::default(),
        warnings: Vec::new(),
        extraction: Default::default(),
    };
    let limits = ImageLimits::default();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let inputs = rt.block_on(inputs::report_image_inputs(&report, None, &limits));
    let labels: Vec<&str> = inputs.iter().map(|i| i.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "images/photo%20one.png",
            "./images/missing.png",
            "https://example.org/x.png",
            "images/p.jpg"
        ]
    );
    assert!(inputs[0].bytes.is_ok());
    assert!(inputs[1]
        .bytes
        .as_ref()
        .unwrap_err()
        .contains("missing.png"));
    assert!(inputs[2].bytes.is_err());
    let result = images::score_images(&inputs, &limits);
    assert_eq!(result.images[3].duplicate_of, Some(0));
    let q: Vec<f64> = result.images.iter().map(|s| s.quality).collect();
    let mean = q.iter().sum::<f64>() / 4.0;
    // 1 duplicate among 2 valid images: p_dup = min(0.5, 0.4).
    assert!((result.duplicate_penalty - 0.4).abs() < 1e-12);
    assert!((result.iq - mean * 0.6).abs() < 1e-12);
    // FQ combines IQ with a chart score supplied by the caller.
    let fq = images::figure_quality(4, result.iq, 1, 0.5);
    assert!((fq - (4.0 * result.iq + 0.5) / 5.0).abs() < 1e-12);
}
