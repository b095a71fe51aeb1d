//! `tvir iq PATH... [--json]`: Image Quality from pixels. A report folder contributes
//! its `kind: image` figures in report order; any other argument is an image file.
//! All images of one invocation are scored together (one duplicate penalty, one IQ).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use tvir_images::{self as images, inputs, ImageInput, ImageLimits, IqParams, IqResult};
use tvir_sources::{FetchConfig, Fetcher};

#[derive(Debug, clap::Args)]
pub struct IqArgs {
    /// Report folders and/or image files (PNG, JPEG, WebP, GIF, BMP, TIFF, SVG).
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Print the result as one JSON object (INTERFACE.md shape).
    #[arg(long)]
    pub json: bool,
    /// Never fetch remote figure images (they are then scored as failed).
    #[arg(long)]
    pub offline: bool,
    /// Permit fetching loopback and private addresses.
    #[arg(long)]
    pub allow_private: bool,
    /// Hamming distance (inclusive) under which two images are near-duplicates.
    #[arg(long, default_value_t = IqParams::paper().dup_threshold)]
    pub dup_threshold: u32,
    /// Only read and decode every image, print its size, score nothing (the baseline
    /// for speed measurements).
    #[arg(long, hide = true)]
    pub decode_only: bool,
    /// Like --decode-only, but PNGs that scoring streams are decoded row by row and
    /// each row dropped (the decode work of the streamed route, without its memory).
    #[arg(long, hide = true, conflicts_with = "decode_only")]
    pub decode_rows_only: bool,
}

pub fn run(args: IqArgs) -> anyhow::Result<ExitCode> {
    let limits = ImageLimits::default();
    let params = IqParams {
        dup_threshold: args.dup_threshold,
        ..IqParams::paper()
    };
    let mut all_inputs: Vec<ImageInput> = Vec::new();
    let mut fetcher: Option<Fetcher> = None;
    let mut runtime: Option<tokio::runtime::Runtime> = None;
    for path in &args.paths {
        if path.is_dir() {
            let report = tvir_report::load(path)
                .with_context(|| format!("cannot load report folder {}", path.display()))?;
            let rt = match &mut runtime {
                Some(rt) => rt,
                None => runtime.insert(
                    tokio::runtime::Builder::new_multi_thread()
                        .enable_all()
                        .build()
                        .context("cannot start the async runtime")?,
                ),
            };
            if fetcher.is_none() && !args.offline {
                let config = FetchConfig {
                    allow_private: args.allow_private,
                    offline: args.offline,
                    ..FetchConfig::default()
                };
                fetcher = Some(Fetcher::new(config, None).context("cannot set up the fetcher")?);
            }
            let inputs = rt.block_on(inputs::report_image_inputs(
                &report,
                fetcher.as_ref(),
                &limits,
            ));
            all_inputs.extend(inputs);
        } else {
            all_inputs.push(inputs::file_input(path, &display(path), &limits));
        }
    }
    if args.decode_only || args.decode_rows_only {
        return Ok(decode_only(&all_inputs, &limits, args.decode_rows_only));
    }
    let result = images::score_images_with(&all_inputs, &limits, &params);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&result)?);
    } else {
        print!("{}", render_table(&result));
    }
    let failed = result.images.iter().any(|s| s.error.is_some());
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Decode every input on rayon (as scoring does) and print sizes or errors. With
/// `rows`, streamable PNGs are decoded row by row without keeping the rows.
fn decode_only(inputs: &[ImageInput], limits: &ImageLimits, rows: bool) -> ExitCode {
    use rayon::prelude::*;
    let sizes: Vec<Result<(u32, u32), String>> = inputs
        .par_iter()
        .map(|i| {
            let bytes = i.bytes.as_ref().map_err(Clone::clone)?;
            if rows {
                if let Some(mut png) =
                    images::png_rows(bytes, &i.label, limits).map_err(|e| e.to_string())?
                {
                    let mut row = vec![0u8; png.stride()];
                    while png.read_row(&mut row).map_err(|e| e.to_string())? {}
                    return Ok((png.width as u32, png.height as u32));
                }
            }
            images::decode_dynamic(bytes, &i.label, limits)
                .map(|d| (d.width(), d.height()))
                .map_err(|e| e.to_string())
        })
        .collect();
    let mut failed = false;
    for (i, s) in inputs.iter().zip(&sizes) {
        match s {
            Ok((w, h)) => println!("{w}x{h}\t{}", i.label),
            Err(e) => {
                failed = true;
                println!("FAILED\t{e}");
            }
        }
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn display(p: &Path) -> String {
    p.display().to_string()
}

/// Human-readable table: components in [0, 1], IQ on the 0-100 scale.
pub fn render_table(r: &IqResult) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>3}  {:>11}  {:>5}  {:>5}  {:>5}  {:>5}  {:>5}  {:<16}  path",
        "#", "size", "R", "A", "S", "C", "Q", "phash"
    );
    for (i, s) in r.images.iter().enumerate() {
        let note = match (&s.error, s.duplicate_of) {
            (Some(e), _) => format!("  FAILED: {e}"),
            (None, Some(j)) => format!("  (duplicate of #{j})"),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "{:>3}  {:>11}  {:>5.3}  {:>5.3}  {:>5.3}  {:>5.3}  {:>5.3}  {:<16}  {}{}",
            i,
            format!("{}x{}", s.width, s.height),
            s.resolution,
            s.aspect,
            s.sharpness,
            s.contrast,
            s.quality,
            s.phash.as_deref().unwrap_or("-"),
            s.path,
            note
        );
    }
    let failed = r.images.iter().filter(|s| s.error.is_some()).count();
    let _ = writeln!(
        out,
        "images: {}  failed: {}  duplicate penalty: {:.3}  IQ: {:.2}",
        r.images.len(),
        failed,
        r.duplicate_penalty,
        r.iq * 100.0
    );
    out
}
