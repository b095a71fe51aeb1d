//! Every image of the real-report corpus decodes and scores in range (the parity
//! numbers against the reference come from `scripts/compare_iq.py`; corpus data is
//! never copied into the repository).

use crate::common;

use tvir_images::{self as images, inputs, ImageLimits};

#[test]
fn corpus_images_score_in_range() {
    let Some(dir) = common::corpus_dir() else {
        return;
    };
    let files = inputs::image_files_under(&dir.join("reports"), &inputs::IMAGE_EXTENSIONS);
    assert!(!files.is_empty(), "no images under the corpus");
    let limits = ImageLimits::default();
    let inputs: Vec<_> = files
        .iter()
        .map(|p| inputs::file_input(p, &p.display().to_string(), &limits))
        .collect();
    let result = images::score_images(&inputs, &limits);
    for s in &result.images {
        assert!(s.error.is_none(), "{}: {:?}", s.path, s.error);
        for v in [s.resolution, s.aspect, s.sharpness, s.contrast, s.quality] {
            assert!((0.0..=1.0).contains(&v), "{}: {v}", s.path);
        }
        assert_eq!(s.phash.as_ref().map(String::len), Some(16), "{}", s.path);
        assert!(s.width > 0 && s.height > 0);
    }
    assert!(result.iq > 0.0 && result.iq <= 1.0);
}
