//! Image Quality throughput: one 5370 x 3570 chart-sized image (full decode, PNG rows
//! decoded and dropped, analysis of the decoded image, and the scoring route, which
//! streams the PNG into the sweep), a folder of mixed images (our fixtures; plus the
//! corpus images when TVIR_CORPUS_DIR is set), and the perceptual hash alone.
//!
//! cargo bench --bench iq

use std::io::Cursor;
use std::path::{Path, PathBuf};

use criterion::{criterion_group, criterion_main, Criterion};
use tvir_images::{self as images, inputs, ImageInput, ImageLimits};

/// A synthetic RGBA chart of the corpus' largest size: flat background, grid, bars,
/// anti-aliasing-like ramps and some noise, PNG-encoded.
fn big_chart_png() -> Vec<u8> {
    let (w, h) = (5370u32, 3570u32);
    let mut state = 0x1234_5678u32;
    let img = image::RgbaImage::from_fn(w, h, |x, y| {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        // A little noise on the bars only: real charts compress well (the corpus
        // chart is 0.6 MB), and the file must stay under the 20 MiB cap.
        let noise = (state & 3) as u8;
        let bar = (x / 400) % 2 == 0 && y > 3570 - (x % 3000) && y > 600;
        let grid = x % 200 == 0 || y % 150 == 0;
        let base = if bar {
            [40, 90 + (x % 100) as u8, 160]
        } else if grid {
            [200, 200, 200]
        } else {
            [255, 255, 255]
        };
        let noise = if bar { noise } else { 0 };
        image::Rgba([
            base[0].saturating_sub(noise),
            base[1].saturating_sub(noise),
            base[2],
            if x < 10 { 0 } else { 255 },
        ])
    });
    let mut out = Vec::new();
    img.write_to(&mut Cursor::new(&mut out), image::ImageFormat::Png)
        .unwrap();
    out
}

fn image_files(dir: &Path) -> Vec<PathBuf> {
    inputs::image_files_under(dir, &inputs::IMAGE_EXTENSIONS)
}

fn load_inputs(files: &[PathBuf], limits: &ImageLimits) -> Vec<ImageInput> {
    files
        .iter()
        .map(|p| inputs::file_input(p, &p.display().to_string(), limits))
        .collect()
}

fn bench_big(c: &mut Criterion) {
    let limits = ImageLimits::default();
    let png = big_chart_png();
    let decoded = images::decode_dynamic(&png, "big.png", &limits).unwrap();
    let mut g = c.benchmark_group("big_5370x3570");
    g.sample_size(10);
    g.bench_function("decode_only", |b| {
        b.iter(|| images::decode_dynamic(&png, "big.png", &limits).unwrap())
    });
    g.bench_function("decode_rows_only", |b| {
        b.iter(|| {
            let mut rows = images::png_rows(&png, "big.png", &limits).unwrap().unwrap();
            let mut row = vec![0u8; rows.stride()];
            while rows.read_row(&mut row).unwrap() {}
        })
    });
    g.bench_function("analyze_only", |b| b.iter(|| images::analyze(&decoded)));
    let input = vec![ImageInput {
        label: "big.png".into(),
        bytes: Ok(png.clone()),
    }];
    // The scoring route: the PNG is streamed into the sweep, never decoded in full.
    g.bench_function("decode_and_score", |b| {
        b.iter(|| images::score_images(&input, &limits))
    });
    g.finish();
}

fn bench_folder(c: &mut Criterion) {
    let limits = ImageLimits::default();
    let mut folders = vec![(
        "fixtures",
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/images"),
    )];
    if let Ok(dir) = std::env::var("TVIR_CORPUS_DIR") {
        folders.push(("corpus", PathBuf::from(dir).join("reports")));
    }
    let mut g = c.benchmark_group("folder");
    g.sample_size(10);
    for (name, dir) in folders {
        let files = image_files(&dir);
        let inputs = load_inputs(&files, &limits);
        g.bench_function(format!("{name}_decode_only_{}", files.len()), |b| {
            b.iter(|| {
                use rayon::prelude::*;
                inputs
                    .par_iter()
                    .map(|i| {
                        i.bytes
                            .as_ref()
                            .ok()
                            .and_then(|b| images::decode_dynamic(b, &i.label, &limits).ok())
                            .map(|d| d.width())
                    })
                    .collect::<Vec<_>>()
            })
        });
        g.bench_function(format!("{name}_score_{}", files.len()), |b| {
            b.iter(|| images::score_images(&inputs, &limits))
        });
    }
    g.finish();
}

/// A deterministic chart-like gray plane: flat background, grid, bars and noise.
fn gray_plane(w: usize, h: usize) -> Vec<u8> {
    let mut state = 0x9E37_79B9u32;
    (0..w * h)
        .map(|i| {
            let (x, y) = (i % w, i / w);
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            if (x / 97) % 3 == 0 && y > h / 3 {
                60 + (state & 31) as u8
            } else if x % 150 == 0 || y % 120 == 0 {
                200
            } else {
                255 - (state & 1) as u8
            }
        })
        .collect()
}

/// The perceptual hash alone (Pillow Lanczos resize to 32 x 32 + DCT) on gray planes:
/// horizontal-first (wide and landscape) and vertical-first (tall) shapes.
fn bench_phash(c: &mut Criterion) {
    let mut g = c.benchmark_group("phash_gray");
    g.sample_size(20);
    for (w, h) in [(5370usize, 3570usize), (1984, 960), (300, 5370)] {
        let plane = gray_plane(w, h);
        g.bench_function(format!("{w}x{h}"), |b| {
            b.iter(|| images::phash::phash_gray(&plane, w as u32, h as u32))
        });
    }
    g.finish();
}

criterion_group!(benches, bench_big, bench_folder, bench_phash);
criterion_main!(benches);
