//! Alpha on white and the two 8-bit gray conversions the reference uses: OpenCV's
//! fixed-point `cvtColor(RGB2GRAY)` for sharpness and contrast, PIL's mode "L" for the
//! perceptual hash. (`image`'s own `to_luma8` uses Rec.709 weights: neither.)

use image::{DynamicImage, RgbImage, RgbaImage};
use rayon::prelude::*;

/// Rows per rayon task: big enough to amortise scheduling, small enough that one
/// large image spreads across all threads.
const ROWS_PER_TASK: usize = 64;

/// OpenCV `cvtColor` RGB->GRAY for 8-bit input: 15-bit fixed point, rounded.
///
/// Measured against cv2 4.14 and 5.0 on 200k random pixels: these constants agree
/// on every pixel. The 14-bit constants (4899, 9617, 1868) quoted in
/// DEPENDENCIES.md are OpenCV's YCrCb ones; for gray they differ by one level on
/// about 0.3 % of pixels.
#[inline]
pub fn cv_gray(r: u8, g: u8, b: u8) -> u8 {
    let sum = u32::from(r)
        .wrapping_mul(9798)
        .wrapping_add(u32::from(g).wrapping_mul(19235))
        .wrapping_add(u32::from(b).wrapping_mul(3735))
        .wrapping_add(1 << 14);
    (sum >> 15) as u8
}

/// PIL `convert("L")` from RGB: 16-bit fixed point, rounded.
#[inline]
pub fn pil_gray(r: u8, g: u8, b: u8) -> u8 {
    let sum = u32::from(r)
        .wrapping_mul(19595)
        .wrapping_add(u32::from(g).wrapping_mul(38470))
        .wrapping_add(u32::from(b).wrapping_mul(7471))
        .wrapping_add(0x8000);
    (sum >> 16) as u8
}

/// `a * b / 255` rounded the way PIL's paste-with-mask does it.
#[inline]
fn muldiv255(a: u32, b: u32) -> u32 {
    // Wrapping ops keep overflow-check branches out of the pixel loops; with a, b <= 255
    // nothing can overflow.
    let t = a.wrapping_mul(b).wrapping_add(128);
    ((t >> 8).wrapping_add(t)) >> 8
}

/// One channel of `src` over white with coverage `alpha` (PIL `paste(img, mask=alpha)`
/// onto a white canvas).
#[inline]
pub fn over_white(src: u8, alpha: u8) -> u8 {
    let a = u32::from(alpha);
    muldiv255(u32::from(src), a).wrapping_add(muldiv255(255, 255u32.wrapping_sub(a))) as u8
}

/// RGBA composited on white, as RGB.
pub fn composite_on_white(img: &RgbaImage) -> RgbImage {
    let (w, h) = img.dimensions();
    let mut out = RgbImage::new(w, h);
    out.par_chunks_mut(3 * w as usize * ROWS_PER_TASK)
        .zip(img.par_chunks(4 * w as usize * ROWS_PER_TASK))
        .for_each(|(dst, src)| {
            for (d, s) in dst.chunks_exact_mut(3).zip(src.chunks_exact(4)) {
                let a = s[3];
                if a == 255 {
                    d.copy_from_slice(&s[..3]);
                } else {
                    d[0] = over_white(s[0], a);
                    d[1] = over_white(s[1], a);
                    d[2] = over_white(s[2], a);
                }
            }
        });
    out
}

/// Pixel layout of a source row, as [`convert_row`] reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowLayout {
    Rgba,
    Rgb,
    Luma,
    LumaAlpha,
}

impl RowLayout {
    pub fn bytes_per_pixel(self) -> usize {
        match self {
            RowLayout::Rgba => 4,
            RowLayout::Rgb => 3,
            RowLayout::Luma => 1,
            RowLayout::LumaAlpha => 2,
        }
    }
}

/// An 8-bit image as rows of one of the [`RowLayout`]s: all of them, or a window of
/// consecutive rows (a streaming decoder's band). Other pixel types (16-bit, float)
/// are converted to RGBA8 first, as the reference's PIL conversion does.
pub struct RowSource<'a> {
    pub width: usize,
    pub height: usize,
    pub layout: RowLayout,
    /// Image row that `data` starts with.
    first_row: usize,
    data: std::borrow::Cow<'a, [u8]>,
}

impl<'a> RowSource<'a> {
    pub fn new(img: &'a DynamicImage) -> RowSource<'a> {
        let (width, height) = (img.width() as usize, img.height() as usize);
        let (layout, data): (RowLayout, std::borrow::Cow<'a, [u8]>) = match img {
            DynamicImage::ImageRgba8(i) => (RowLayout::Rgba, i.as_raw().as_slice().into()),
            DynamicImage::ImageRgb8(i) => (RowLayout::Rgb, i.as_raw().as_slice().into()),
            DynamicImage::ImageLuma8(i) => (RowLayout::Luma, i.as_raw().as_slice().into()),
            DynamicImage::ImageLumaA8(i) => (RowLayout::LumaAlpha, i.as_raw().as_slice().into()),
            other => (RowLayout::Rgba, other.to_rgba8().into_raw().into()),
        };
        RowSource {
            width,
            height,
            layout,
            first_row: 0,
            data,
        }
    }

    /// Rows `first_row..` of a `width` x `height` image, `data` holding whole rows.
    pub fn window(
        width: usize,
        height: usize,
        layout: RowLayout,
        first_row: usize,
        data: &'a [u8],
    ) -> RowSource<'a> {
        debug_assert_eq!(data.len() % (width * layout.bytes_per_pixel()).max(1), 0);
        RowSource {
            width,
            height,
            layout,
            first_row,
            data: data.into(),
        }
    }

    /// The bytes of image row `y` (which must lie in the window).
    pub fn row(&self, y: usize) -> &[u8] {
        let stride = self.width * self.layout.bytes_per_pixel();
        let i = y - self.first_row;
        &self.data[i * stride..(i + 1) * stride]
    }

    /// Both gray values of row `y` (alpha on white) into `cv` and `pil` (`width` each).
    pub fn gray_row(&self, y: usize, cv: &mut [u8], pil: &mut [u8]) {
        convert_row(self.layout, self.row(y), cv, pil);
    }
}

/// Both gray images of one picture, alpha already composited on white.
#[derive(Debug, Clone, PartialEq)]
pub struct GrayPlanes {
    pub width: u32,
    pub height: u32,
    /// OpenCV luma, row-major: sharpness and contrast.
    pub cv: Vec<u8>,
    /// PIL "L" luma, row-major: the perceptual hash.
    pub pil: Vec<u8>,
}

impl GrayPlanes {
    /// Convert any decoded image (rows in parallel).
    pub fn from_image(img: &DynamicImage) -> GrayPlanes {
        let src = RowSource::new(img);
        let w = src.width;
        let n = w * src.height;
        let mut cv = vec![0u8; n];
        let mut pil = vec![0u8; n];
        if w > 0 {
            cv.par_chunks_mut(w * ROWS_PER_TASK)
                .zip(pil.par_chunks_mut(w * ROWS_PER_TASK))
                .enumerate()
                .for_each(|(i, (cv, pil))| {
                    for (k, (c, p)) in cv.chunks_mut(w).zip(pil.chunks_mut(w)).enumerate() {
                        src.gray_row(i * ROWS_PER_TASK + k, c, p);
                    }
                });
        }
        GrayPlanes {
            width: img.width(),
            height: img.height(),
            cv,
            pil,
        }
    }
}

/// One source row into both gray rows (alpha composited on white). `cv` and `pil`
/// hold one byte per pixel of `src`.
pub fn convert_row(layout: RowLayout, src: &[u8], cv: &mut [u8], pil: &mut [u8]) {
    let n = cv.len();
    assert!(pil.len() == n && src.len() == n * layout.bytes_per_pixel());
    match layout {
        RowLayout::Luma => {
            cv.copy_from_slice(src);
            pil.copy_from_slice(src);
        }
        RowLayout::LumaAlpha => {
            for ((c, p), px) in cv.iter_mut().zip(pil.iter_mut()).zip(src.chunks_exact(2)) {
                let v = over_white(px[0], px[1]);
                *c = v;
                *p = v;
            }
        }
        RowLayout::Rgba | RowLayout::Rgb => {
            let done = convert_row_simd(layout, src, cv, pil);
            let c = layout.bytes_per_pixel();
            convert_pixels_scalar(layout, &src[done * c..], &mut cv[done..], &mut pil[done..]);
        }
    }
}

/// Scalar reference conversion of RGB/RGBA pixels.
fn convert_pixels_scalar(layout: RowLayout, src: &[u8], cv: &mut [u8], pil: &mut [u8]) {
    let c = layout.bytes_per_pixel();
    for ((cv, pil), s) in cv.iter_mut().zip(pil.iter_mut()).zip(src.chunks_exact(c)) {
        let (r, g, b) = if c == 4 && s[3] != 255 {
            (
                over_white(s[0], s[3]),
                over_white(s[1], s[3]),
                over_white(s[2], s[3]),
            )
        } else {
            (s[0], s[1], s[2])
        };
        *cv = cv_gray(r, g, b);
        *pil = pil_gray(r, g, b);
    }
}

/// Converts a prefix of the row with SIMD where the CPU allows; returns how many
/// pixels it did (the rest go through [`convert_pixels_scalar`]).
fn convert_row_simd(layout: RowLayout, src: &[u8], cv: &mut [u8], pil: &mut [u8]) -> usize {
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    {
        let c = layout.bytes_per_pixel();
        if std::is_x86_feature_detected!("avx512bw") {
            // SAFETY: the CPU supports AVX-512BW, checked just above.
            done = unsafe { avx512::convert(layout, src, cv, pil) };
        }
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, checked just above.
            done += unsafe {
                avx2::convert(layout, &src[done * c..], &mut cv[done..], &mut pil[done..])
            };
        }
    }
    let _ = (layout, src, cv, pil);
    done
}

/// Both grays of packed pixels (one per u32 lane: r, g, b, a bytes), shared by the
/// AVX2 and AVX-512 steps. With S = 9798 r + 19235 g + 3735 b, OpenCV's gray is
/// (S + 2^14) >> 15 and PIL's is (2S + b - r + 2^15) >> 16, because
/// 2 x (9798, 19235, 3735) + (-1, 0, 1) is exactly PIL's (19595, 38470, 7471). All
/// weights fit in i16, so `madd` on (r, b) and (g, a) pairs does the multiplications.
/// Returns (OpenCV gray, PIL gray), each 0..=255 in every u32 lane. The invoking
/// module imports the vector ops `and`, `srl32`, `add32`, `madd` and `splat32`.
#[cfg(target_arch = "x86_64")]
macro_rules! two_lumas {
    ($px:expr) => {{
        let low_bytes = splat32(0x00FF_00FF);
        let rb = and($px, low_bytes);
        let ga = and(srl32($px, 8), low_bytes);
        let s = add32(
            madd(rb, splat32((3735 << 16) | 9798)),
            madd(ga, splat32(19235)),
        );
        // b - r: weights -1 (low half, r) and +1 (high half, b).
        let d = madd(rb, splat32((1 << 16) | 0xFFFF));
        let cv = srl32(add32(s, splat32(1 << 14)), 15);
        let pil = srl32(add32(add32(add32(s, s), d), splat32(1 << 15)), 16);
        (cv, pil)
    }};
}

/// RGBA over white on packed pixels, as [`over_white`] per channel: two rounded
/// `x / 255` terms in u16 lanes (s a + 128 <= 65153 and the rounding step <= 65407,
/// so nothing overflows). The alpha byte of the result is garbage and gets weight 0
/// in [`two_lumas`]. Vector ops as there, plus `or`, `sll32`, `srl16`, `add16`,
/// `sub16`, `mul16` and `splat16`.
#[cfg(target_arch = "x86_64")]
macro_rules! over_white_px {
    ($v:expr) => {{
        let v = $v;
        let low_bytes = splat32(0x00FF_00FF);
        let c255 = splat16(255);
        // Alpha in both u16 halves of each pixel.
        let a = srl32(v, 24);
        let a = or(a, sll32(a, 16));
        let div255 = |t| {
            let t = add16(t, splat16(128));
            srl16(add16(srl16(t, 8), t), 8)
        };
        let white = div255(mul16(c255, sub16(c255, a)));
        let rb = add16(div255(mul16(and(v, low_bytes), a)), white);
        let ga = add16(div255(mul16(and(srl32(v, 8), low_bytes), a)), white);
        or(rb, sll32(and(ga, low_bytes), 8))
    }};
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    //! Sixteen pixels per step; results narrow straight to bytes with `vpmovdb`.

    use std::arch::x86_64::*;

    use super::RowLayout;

    // The ops `two_lumas!` and `over_white_px!` are written with.
    use std::arch::x86_64::{
        _mm512_add_epi16 as add16, _mm512_add_epi32 as add32, _mm512_and_si512 as and,
        _mm512_madd_epi16 as madd, _mm512_mullo_epi16 as mul16, _mm512_or_si512 as or,
        _mm512_set1_epi16 as splat16, _mm512_set1_epi32 as splat32, _mm512_slli_epi32 as sll32,
        _mm512_srli_epi16 as srl16, _mm512_srli_epi32 as srl32, _mm512_sub_epi16 as sub16,
    };

    #[target_feature(enable = "avx512bw")]
    pub(super) unsafe fn convert(
        layout: RowLayout,
        src: &[u8],
        cv: &mut [u8],
        pil: &mut [u8],
    ) -> usize {
        let n = cv.len();
        let alpha_bits = splat32(0xFF00_0000u32 as i32);
        let spread = _mm512_broadcast_i32x4(_mm_setr_epi8(
            0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1,
        ));
        let mut x = 0;
        loop {
            let px = match layout {
                RowLayout::Rgba => {
                    if x + 16 > n {
                        break;
                    }
                    let v = _mm512_loadu_si512(src.as_ptr().add(4 * x).cast());
                    if _mm512_cmpeq_epi32_mask(and(v, alpha_bits), alpha_bits) == 0xFFFF {
                        v
                    } else {
                        over_white_px!(v)
                    }
                }
                RowLayout::Rgb => {
                    // Four 16-byte loads, pixels 4k..4k+3 each; the last reads 4 bytes
                    // past the 16 pixels.
                    if 3 * x + 52 > src.len() {
                        break;
                    }
                    let p = src.as_ptr().add(3 * x);
                    let l = |k: usize| _mm_loadu_si128(p.add(12 * k).cast());
                    let v = _mm512_castsi128_si512(l(0));
                    let v = _mm512_inserti32x4(v, l(1), 1);
                    let v = _mm512_inserti32x4(v, l(2), 2);
                    let v = _mm512_inserti32x4(v, l(3), 3);
                    _mm512_shuffle_epi8(v, spread)
                }
                _ => break,
            };
            let (c, p) = two_lumas!(px);
            // Every u32 lane holds 0..=255: truncating to bytes is exact.
            _mm_storeu_si128(cv.as_mut_ptr().add(x).cast(), _mm512_cvtepi32_epi8(c));
            _mm_storeu_si128(pil.as_mut_ptr().add(x).cast(), _mm512_cvtepi32_epi8(p));
            x += 16;
        }
        x
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    //! Eight pixels per step.

    use std::arch::x86_64::*;

    use super::RowLayout;

    // The ops `two_lumas!` and `over_white_px!` are written with.
    use std::arch::x86_64::{
        _mm256_add_epi16 as add16, _mm256_add_epi32 as add32, _mm256_and_si256 as and,
        _mm256_madd_epi16 as madd, _mm256_mullo_epi16 as mul16, _mm256_or_si256 as or,
        _mm256_set1_epi16 as splat16, _mm256_set1_epi32 as splat32, _mm256_slli_epi32 as sll32,
        _mm256_srli_epi16 as srl16, _mm256_srli_epi32 as srl32, _mm256_sub_epi16 as sub16,
    };

    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn convert(
        layout: RowLayout,
        src: &[u8],
        cv: &mut [u8],
        pil: &mut [u8],
    ) -> usize {
        let n = cv.len();
        let alpha_bits = splat32(0xFF00_0000u32 as i32);
        let gather = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
        // RGB: bytes of four pixels of each 128-bit lane spread to one u32 each.
        let spread = _mm256_broadcastsi128_si256(_mm_setr_epi8(
            0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1,
        ));
        let mut x = 0;
        loop {
            let px = match layout {
                RowLayout::Rgba => {
                    if x + 8 > n {
                        break;
                    }
                    let v = _mm256_loadu_si256(src.as_ptr().add(4 * x).cast());
                    let opaque = _mm256_cmpeq_epi32(and(v, alpha_bits), alpha_bits);
                    if _mm256_movemask_epi8(opaque) == -1 {
                        v
                    } else {
                        over_white_px!(v)
                    }
                }
                RowLayout::Rgb => {
                    // Two 16-byte loads (pixels 0-3 and 4-7); the second reads 4 bytes
                    // past the 8 pixels, so stop while those bytes are still in `src`.
                    if 3 * x + 28 > src.len() {
                        break;
                    }
                    let p = src.as_ptr().add(3 * x);
                    let lo = _mm_loadu_si128(p.cast());
                    let hi = _mm_loadu_si128(p.add(12).cast());
                    _mm256_shuffle_epi8(_mm256_set_m128i(hi, lo), spread)
                }
                _ => break,
            };
            let (c, p) = two_lumas!(px);
            // Pack to 16 then 8 bits, and gather the two lanes' low dwords: the low
            // 128 bits then hold [c0-3, c4-7, p0-3, p4-7].
            let packed = _mm256_packus_epi16(_mm256_packus_epi32(c, p), _mm256_setzero_si256());
            let lanes = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(packed, gather));
            _mm_storel_epi64(cv.as_mut_ptr().add(x).cast(), lanes);
            _mm_storel_epi64(pil.as_mut_ptr().add(x).cast(), _mm_srli_si128(lanes, 8));
            x += 8;
        }
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gray_formulas_at_known_points() {
        for v in [0u8, 1, 77, 128, 254, 255] {
            assert_eq!(cv_gray(v, v, v), v);
            assert_eq!(pil_gray(v, v, v), v);
        }
        // Pure primaries: the two formulas round differently.
        assert_eq!(cv_gray(255, 0, 0), 76);
        assert_eq!(pil_gray(255, 0, 0), 76);
        assert_eq!(cv_gray(0, 255, 0), 150);
        assert_eq!(pil_gray(0, 255, 0), 150);
        assert_eq!(cv_gray(0, 0, 255), 29);
        assert_eq!(pil_gray(0, 0, 255), 29);
        // A point where they differ by one.
        let differs = (0..=255u8)
            .flat_map(|r| (0..=255u8).step_by(15).map(move |g| (r, g)))
            .any(|(r, g)| cv_gray(r, g, 200) != pil_gray(r, g, 200));
        assert!(differs);
    }

    /// Every row length around the SIMD step (8 pixels; RGB also needs 4 bytes of
    /// slack), random colours with opaque, transparent and partial alpha, against the
    /// per-pixel formulas.
    #[test]
    fn row_conversion_matches_the_pixel_formulas() {
        let mut seed = 0x9e37_79b9_u32;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            seed
        };
        for layout in [
            RowLayout::Rgba,
            RowLayout::Rgb,
            RowLayout::Luma,
            RowLayout::LumaAlpha,
        ] {
            let c = layout.bytes_per_pixel();
            for n in (0..70).chain([255, 256, 1001]) {
                let src: Vec<u8> = (0..n * c)
                    .map(|i| {
                        let v = next() as u8;
                        // Alpha: mostly opaque runs, some 0 and partial values.
                        let is_alpha = (layout == RowLayout::Rgba && i % 4 == 3)
                            || (layout == RowLayout::LumaAlpha && i % 2 == 1);
                        match (is_alpha, (i / c) % 11) {
                            (true, 0..=6) => 255,
                            (true, 7) => 0,
                            _ => v,
                        }
                    })
                    .collect();
                let (mut cv, mut pil) = (vec![0u8; n], vec![0u8; n]);
                convert_row(layout, &src, &mut cv, &mut pil);
                for (i, px) in src.chunks_exact(c).enumerate() {
                    let (r, g, b) = match layout {
                        RowLayout::Rgba => (
                            over_white(px[0], px[3]),
                            over_white(px[1], px[3]),
                            over_white(px[2], px[3]),
                        ),
                        RowLayout::Rgb => (px[0], px[1], px[2]),
                        RowLayout::Luma => (px[0], px[0], px[0]),
                        RowLayout::LumaAlpha => {
                            let v = over_white(px[0], px[1]);
                            (v, v, v)
                        }
                    };
                    assert_eq!(cv[i], cv_gray(r, g, b), "{layout:?} n={n} pixel {i}");
                    assert_eq!(pil[i], pil_gray(r, g, b), "{layout:?} n={n} pixel {i}");
                }
            }
        }
    }

    /// The SIMD compositing against the scalar one over every (value, alpha) pair.
    #[test]
    fn simd_composite_covers_all_value_alpha_pairs() {
        let src: Vec<u8> = (0..=255u8)
            .flat_map(|a| (0..=255u8).flat_map(move |v| [v, 255 - v, v / 2, a]))
            .collect();
        let n = src.len() / 4;
        let (mut cv, mut pil) = (vec![0u8; n], vec![0u8; n]);
        convert_row(RowLayout::Rgba, &src, &mut cv, &mut pil);
        let (mut cv2, mut pil2) = (vec![0u8; n], vec![0u8; n]);
        convert_pixels_scalar(RowLayout::Rgba, &src, &mut cv2, &mut pil2);
        assert_eq!(cv, cv2);
        assert_eq!(pil, pil2);
    }

    #[test]
    fn opaque_composite_is_identity() {
        for v in 0..=255u8 {
            assert_eq!(over_white(v, 255), v);
        }
    }

    #[test]
    fn alpha_on_white() {
        assert_eq!(over_white(0, 0), 255);
        assert_eq!(over_white(17, 255), 17);
        assert_eq!(over_white(0, 128), 127);
        assert_eq!(over_white(255, 37), 255);
        let img = RgbaImage::from_raw(2, 1, vec![0, 0, 0, 0, 10, 20, 30, 255]).unwrap();
        let rgb = composite_on_white(&img);
        assert_eq!(rgb.as_raw(), &vec![255, 255, 255, 10, 20, 30]);
        let planes = GrayPlanes::from_image(&DynamicImage::ImageRgba8(img));
        assert_eq!(planes.cv[0], 255);
        assert_eq!(planes.pil[0], 255);
        assert_eq!(planes.cv[1], cv_gray(10, 20, 30));
    }
}
