//! The streamed route (PNG rows swept while they decode) and the decoded route
//! (`decode_dynamic` then `analyze`) must give identical analyses on real files: our
//! fixtures (palette + tRNS, gray, gray + alpha, RGBA, odd sizes, a truncated file)
//! and, when `TVIR_CORPUS_DIR` is set, every image of the corpus reports.

use crate::common;

use std::path::{Path, PathBuf};

use tvir_images::{self as images, inputs, ImageLimits};

/// Raster files only: SVG has no streamed route to compare.
fn image_files(dir: &Path) -> Vec<PathBuf> {
    let raster: Vec<&str> = inputs::IMAGE_EXTENSIONS
        .into_iter()
        .filter(|e| *e != "svg")
        .collect();
    inputs::image_files_under(dir, &raster)
}

/// Returns how many files were PNGs that took the streamed route.
fn check_routes_agree(files: &[PathBuf]) -> usize {
    let limits = ImageLimits::default();
    let mut streamed = 0;
    for path in files {
        let name = path.display().to_string();
        let bytes = std::fs::read(path).unwrap();
        let via_bytes = images::analyze_bytes(&bytes, &name, &limits);
        let via_decode =
            images::decode_dynamic(&bytes, &name, &limits).map(|i| images::analyze(&i));
        match (via_bytes, via_decode) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{name}"),
            (Err(a), Err(b)) => {
                assert!(a.to_string().contains(&name), "{a}");
                assert!(b.to_string().contains(&name), "{b}");
            }
            (a, b) => panic!("{name}: routes disagree: {a:?} vs {b:?}"),
        }
        if images::png_rows(&bytes, &name, &limits).is_ok_and(|r| r.is_some()) {
            streamed += 1;
        }
    }
    streamed
}

#[test]
fn streamed_and_decoded_routes_agree_on_fixtures() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/images");
    let files = image_files(&dir);
    assert!(files.len() >= 25, "fixtures missing: {}", files.len());
    let streamed = check_routes_agree(&files);
    // Most fixtures are PNGs; the streamed route must really have been taken.
    assert!(streamed >= 15, "only {streamed} fixtures streamed");
}

#[test]
fn streamed_and_decoded_routes_agree_on_corpus_images() {
    let Some(corpus) = common::corpus_dir() else {
        return;
    };
    let files = image_files(&corpus.join("reports"));
    assert!(
        !files.is_empty(),
        "no images under {}/reports",
        corpus.display()
    );
    let streamed = check_routes_agree(&files);
    assert!(streamed > 0);
}
