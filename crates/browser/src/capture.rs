//! The capture step's pieces that do not talk to the page: the capture script
//! (`js/capture.js`), the box it returns, the clip to the visible part of the fixed
//! viewport, and the one-colour check of a screenshot.
//!
//! Why the window is never resized: `captureBeyondViewport` (and any device-metrics
//! change) makes Chromium resize the page around the shot; responsive pages redraw or
//! move their charts in between, so the measured clip grabs wrong or cleared pixels.
//! Instead each chart is scrolled into view and only visible pixels are captured; a
//! chart larger than the viewport is cut to its visible part (top-left aligned) and
//! the page notes say so.

use serde::Deserialize;

pub(crate) const CAPTURE_JS: &str = include_str!("../js/capture.js");

/// The expression that runs one capture.js step.
pub(crate) fn op(step: serde_json::Value) -> String {
    format!("({CAPTURE_JS})({step})")
}

/// A chart placed in the viewport by capture.js `place` (CSS px; x/y in page
/// coordinates of the top document, scroll offsets, viewport size).
#[derive(Deserialize, Debug, Clone, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Placed {
    #[serde(default)]
    pub found: bool,
    #[serde(default)]
    pub x: f64,
    #[serde(default)]
    pub y: f64,
    #[serde(default)]
    pub width: f64,
    #[serde(default)]
    pub height: f64,
    #[serde(default)]
    pub scroll_x: f64,
    #[serde(default)]
    pub scroll_y: f64,
    #[serde(default)]
    pub vw: f64,
    #[serde(default)]
    pub vh: f64,
    /// What was forced to show a chart that never revealed itself.
    #[serde(default)]
    pub forced: Option<String>,
    /// Why the box is not shown whole when it is not (larger than the viewport, or
    /// placed past where the page scrolls).
    #[serde(default)]
    pub cut_why: Option<String>,
    /// Boxes that clipped the chart (overflow not visible) opened for the shot.
    #[serde(default)]
    pub unclipped: u32,
}

/// Whole-pixel clip in page coordinates, and whether the box had to be cut to the
/// visible part of the viewport.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Clip {
    pub x: f64,
    pub y: f64,
    pub width: f64,
    pub height: f64,
    pub cut: bool,
}

/// The part of the placed box inside the viewport, rounded to whole CSS pixels; None
/// when nothing of it is visible.
pub(crate) fn clip(p: &Placed) -> Option<Clip> {
    let (vx0, vy0) = (p.scroll_x, p.scroll_y);
    let (vx1, vy1) = (p.scroll_x + p.vw, p.scroll_y + p.vh);
    let x0 = p.x.max(vx0).round();
    let y0 = p.y.max(vy0).round();
    let x1 = (p.x + p.width).min(vx1).round();
    let y1 = (p.y + p.height).min(vy1).round();
    if x1 - x0 < 1.0 || y1 - y0 < 1.0 {
        return None;
    }
    let cut = p.x < vx0 - 0.5
        || p.y < vy0 - 0.5
        || p.x + p.width > vx1 + 0.5
        || p.y + p.height > vy1 + 0.5;
    Some(Clip {
        x: x0,
        y: y0,
        width: x1 - x0,
        height: y1 - y0,
        cut,
    })
}

/// A screenshot is blank when fewer than one pixel in a thousand differs from the
/// first one (a cleared canvas, an empty box). Undecodable data counts as blank.
pub(crate) fn is_one_colour(png_bytes: &[u8]) -> bool {
    let mut dec = png::Decoder::new(std::io::Cursor::new(png_bytes));
    dec.set_transformations(png::Transformations::EXPAND);
    let Ok(mut reader) = dec.read_info() else {
        return true;
    };
    let Some(size) = reader.output_buffer_size() else {
        return true;
    };
    let mut buf = vec![0; size];
    let Ok(info) = reader.next_frame(&mut buf) else {
        return true;
    };
    let (w, h) = (info.width as usize, info.height as usize);
    if w == 0 || h == 0 {
        return true;
    }
    let bpp = info.line_size / w;
    if bpp == 0 {
        return true;
    }
    let first = &buf[..bpp];
    let mut differing = 0usize;
    for row in buf[..info.buffer_size()].chunks_exact(info.line_size) {
        for px in row[..w * bpp].chunks_exact(bpp) {
            if px != first {
                differing += 1;
            }
        }
    }
    differing * 1000 < w * h
}

/// Room left around the drawing when a shot is trimmed, in pixels.
const TRIM_PAD: u32 = 12;

/// A shot of a chart file without the empty margins its frame adds: the box the
/// suite gave the frame (the page's width, the height a component asked for) is our
/// layout, not the file's, so the background beyond the drawing's extent (what
/// differs from the top-left pixel, with `TRIM_PAD` px kept around it) is cut. None
/// when there is nothing to cut (or the data is no PNG).
pub(crate) fn trim_margins(png_bytes: &[u8]) -> Option<Vec<u8>> {
    let mut dec = png::Decoder::new(std::io::Cursor::new(png_bytes));
    dec.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = dec.read_info().ok()?;
    let mut buf = vec![0; reader.output_buffer_size()?];
    let info = reader.next_frame(&mut buf).ok()?;
    let (w, h) = (info.width as usize, info.height as usize);
    let bpp = info.line_size.checked_div(w)?;
    if h == 0 || bpp == 0 {
        return None;
    }
    let px = |x: usize, y: usize| &buf[y * info.line_size + x * bpp..][..bpp];
    let bg = px(0, 0).to_vec();
    let (mut x0, mut y0, mut x1, mut y1) = (w, h, 0, 0);
    for y in 0..h {
        for x in 0..w {
            if px(x, y).iter().zip(&bg).any(|(a, b)| a.abs_diff(*b) > 8) {
                (x0, y0, x1, y1) = (x0.min(x), y0.min(y), x1.max(x), y1.max(y));
            }
        }
    }
    if x0 > x1 {
        return None;
    }
    let pad = TRIM_PAD as usize;
    let (x0, y0) = (x0.saturating_sub(pad), y0.saturating_sub(pad));
    let (x1, y1) = ((x1 + pad).min(w - 1), (y1 + pad).min(h - 1));
    let (cw, ch) = (x1 - x0 + 1, y1 - y0 + 1);
    if (cw, ch) == (w, h) {
        return None;
    }
    let mut data = Vec::with_capacity(cw * ch * bpp);
    for y in y0..=y1 {
        data.extend_from_slice(&buf[y * info.line_size + x0 * bpp..][..cw * bpp]);
    }
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, cw as u32, ch as u32);
        enc.set_color(info.color_type);
        enc.set_depth(png::BitDepth::Eight);
        enc.write_header().ok()?.write_image_data(&data).ok()?;
    }
    Some(out)
}

/// Width and height from a PNG's IHDR.
pub(crate) fn png_size(png: &[u8]) -> Option<(u32, u32)> {
    if png.len() < 24 || &png[..8] != b"\x89PNG\r\n\x1a\n" {
        return None;
    }
    let w = u32::from_be_bytes(png[16..20].try_into().ok()?);
    let h = u32::from_be_bytes(png[20..24].try_into().ok()?);
    Some((w, h))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placed(x: f64, y: f64, width: f64, height: f64, sy: f64) -> Placed {
        Placed {
            found: true,
            x,
            y,
            width,
            height,
            scroll_x: 0.0,
            scroll_y: sy,
            vw: 1280.0,
            vh: 900.0,
            forced: None,
            cut_why: None,
            unclipped: 0,
        }
    }

    #[test]
    fn clip_inside_the_viewport_is_the_rounded_box() {
        let c = clip(&placed(190.4, 2000.6, 900.0, 260.0, 1700.0)).unwrap();
        assert_eq!(
            (c.x, c.y, c.width, c.height, c.cut),
            (190.0, 2001.0, 900.0, 260.0, false)
        );
    }

    #[test]
    fn clip_of_a_tall_box_is_cut_to_the_viewport() {
        let c = clip(&placed(0.0, 1000.0, 600.0, 1500.0, 1000.0)).unwrap();
        assert_eq!((c.y, c.height, c.cut), (1000.0, 900.0, true));
        assert!(clip(&placed(0.0, 0.0, 600.0, 100.0, 1000.0)).is_none());
    }

    fn png_of(w: u32, h: u32, f: impl Fn(u32, u32) -> [u8; 4]) -> Vec<u8> {
        let mut out = Vec::new();
        {
            let mut enc = png::Encoder::new(&mut out, w, h);
            enc.set_color(png::ColorType::Rgba);
            enc.set_depth(png::BitDepth::Eight);
            let mut wr = enc.write_header().unwrap();
            let mut data = Vec::new();
            for y in 0..h {
                for x in 0..w {
                    data.extend_from_slice(&f(x, y));
                }
            }
            wr.write_image_data(&data).unwrap();
        }
        out
    }

    #[test]
    fn one_colour_png_is_blank_a_drawn_one_is_not() {
        assert!(is_one_colour(&png_of(50, 40, |_, _| [36, 52, 71, 255])));
        assert!(!is_one_colour(&png_of(50, 40, |x, _| if x < 10 {
            [249, 199, 79, 255]
        } else {
            [36, 52, 71, 255]
        })));
        assert!(is_one_colour(b"not a png"));
    }

    #[test]
    fn a_chart_file_shot_loses_its_empty_margins_and_keeps_a_pad() {
        // A 40x30 drawing at (100, 50) on a white 400x300 shot.
        let shot = png_of(400, 300, |x, y| {
            if (100..140).contains(&x) && (50..80).contains(&y) {
                [200, 40, 40, 255]
            } else {
                [255, 255, 255, 255]
            }
        });
        let cut = trim_margins(&shot).expect("margins cut");
        assert_eq!(png_size(&cut), Some((40 + 24, 30 + 24)));
        assert!(!is_one_colour(&cut));
        // A drawing within the pad of every edge: nothing to cut; no PNG: nothing done.
        let near_edges = png_of(40, 30, |x, y| {
            if (x, y) == (1, 1) || (x, y) == (38, 28) {
                [0, 0, 0, 255]
            } else {
                [255; 4]
            }
        });
        assert!(trim_margins(&near_edges).is_none());
        assert!(trim_margins(b"not a png").is_none());
    }
}
