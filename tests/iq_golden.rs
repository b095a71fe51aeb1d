//! Parity with the reference pipeline (OpenCV + Pillow + imagehash) on images we
//! generate ourselves: golden numbers in `tests/fixtures/iq_golden.json`, produced by
//! `scripts/golden_iq.py` from `tests/fixtures/images` (made by
//! `scripts/gen_iq_fixtures.py`).

use std::path::PathBuf;

use serde::Deserialize;
use tvir_images::{self as images, inputs, ImageLimits};

#[derive(Debug, Deserialize)]
struct GoldenImage {
    file: String,
    width: Option<u32>,
    height: Option<u32>,
    resolution: Option<f64>,
    aspect: Option<f64>,
    sharpness: Option<f64>,
    contrast: Option<f64>,
    quality: f64,
    phash: Option<String>,
    laplacian_var: Option<[f64; 3]>,
    mean_gray: Option<f64>,
    duplicate_of: Option<usize>,
    error: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Golden {
    images: Vec<GoldenImage>,
    duplicate_penalty: f64,
    iq: f64,
}

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn golden() -> Golden {
    let text = std::fs::read_to_string(fixture_dir().join("iq_golden.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Per-image |dQ| <= 0.005 and the components agree too.
#[test]
fn quality_matches_reference_per_image() {
    let golden = golden();
    let limits = ImageLimits::default();
    let mut worst = (0.0f64, String::new());
    for g in &golden.images {
        let path = fixture_dir().join("images").join(&g.file);
        let decoded = images::decode_file(&path, &limits);
        if g.error.is_some() {
            assert!(
                decoded.is_err(),
                "{}: reference failed, we decoded it",
                g.file
            );
            continue;
        }
        let img = decoded.unwrap_or_else(|e| panic!("{}: {e}", g.file));
        let a = images::analyze(&img);
        assert_eq!(
            (Some(a.width), Some(a.height)),
            (g.width, g.height),
            "{}",
            g.file
        );
        let q = a.components.quality(&images::QualityWeights::paper());
        let dq = (q - g.quality).abs();
        if dq > worst.0 {
            worst = (dq, g.file.clone());
        }
        assert!(dq <= 0.005, "{}: Q {q} vs reference {}", g.file, g.quality);
        let close = |ours: f64, theirs: Option<f64>, what: &str| {
            let theirs = theirs.unwrap();
            assert!(
                (ours - theirs).abs() <= 0.01,
                "{}: {what} {ours} vs reference {theirs}",
                g.file
            );
        };
        close(a.components.resolution, g.resolution, "resolution");
        close(a.components.aspect, g.aspect, "aspect");
        close(a.components.sharpness, g.sharpness, "sharpness");
        close(a.components.contrast, g.contrast, "contrast");
        close(a.contrast.mean, g.mean_gray, "mean gray");
        // Laplacian variances: exact for lossless formats; JPEG/WebP-lossy decoders
        // differ slightly between libraries.
        let lossy = g.file.ends_with(".jpg") || g.file.contains("lossy");
        let tol = if lossy { 2e-2 } else { 1e-9 };
        let lv = g.laplacian_var.unwrap();
        for (ours, theirs) in [
            (a.laplacian.aperture1, lv[0]),
            (a.laplacian.aperture3, lv[1]),
            (a.laplacian.aperture5, lv[2]),
        ] {
            assert!(
                (ours - theirs).abs() <= tol * theirs.abs().max(1.0),
                "{}: laplacian variance {ours} vs {theirs}",
                g.file
            );
        }
    }
    eprintln!("worst |dQ| = {:.2e} ({})", worst.0, worst.1);
}

/// The hashes agree bit for bit on lossless images (a lossy decode may move a bit).
#[test]
fn phash_matches_imagehash() {
    let golden = golden();
    let limits = ImageLimits::default();
    let mut mismatches = Vec::new();
    for g in golden.images.iter().filter(|g| g.error.is_none()) {
        let path = fixture_dir().join("images").join(&g.file);
        let img = images::decode_file(&path, &limits).unwrap();
        let ours = images::phash_hex(&img);
        let theirs = g.phash.clone().unwrap();
        if ours != theirs {
            let d = (u64::from_str_radix(&ours, 16).unwrap()
                ^ u64::from_str_radix(&theirs, 16).unwrap())
            .count_ones();
            mismatches.push(format!("{}: {ours} vs {theirs} ({d} bits)", g.file));
        }
    }
    assert!(mismatches.is_empty(), "phash mismatches: {mismatches:#?}");
}

/// Whole-report scoring in manifest order: same duplicate groups, penalty and IQ.
#[test]
fn duplicate_groups_and_iq_match_reference() {
    let golden = golden();
    let limits = ImageLimits::default();
    let inputs: Vec<_> = golden
        .images
        .iter()
        .map(|g| {
            let path = fixture_dir().join("images").join(&g.file);
            inputs::file_input(&path, &g.file, &limits)
        })
        .collect();
    let result = images::score_images(&inputs, &limits);
    let ours: Vec<Option<usize>> = result.images.iter().map(|s| s.duplicate_of).collect();
    let theirs: Vec<Option<usize>> = golden.images.iter().map(|g| g.duplicate_of).collect();
    assert_eq!(ours, theirs);
    assert!((result.duplicate_penalty - golden.duplicate_penalty).abs() < 1e-12);
    assert!(
        (result.iq - golden.iq).abs() <= 0.005,
        "IQ {} vs {}",
        result.iq,
        golden.iq
    );
    let failed: Vec<_> = result.images.iter().filter(|s| s.error.is_some()).collect();
    assert_eq!(failed.len(), 1);
    assert!(failed[0].error.as_ref().unwrap().contains("truncated.png"));
    assert_eq!(failed[0].quality, 0.0);
}
