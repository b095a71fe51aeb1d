//! The vision check: before the first vision unit of a run, the client shows the
//! judge two small generated images, each with one large digit, and asks which digit
//! it sees. Both must be named correctly (the digits differ, so a model that cannot
//! see and always gives the same answer fails). A server that refuses image parts
//! fails too. A failing judge makes every vision metric not evaluated, with
//! [`BLIND_REASON`], never 0. The verdict is cached per (server, model) in the
//! store's `judge_adaptations` table.

use std::io::Cursor;

use base64::Engine as _;
use serde_json::{json, Value};

use super::{JudgeRequest, Message, Part, Role};

/// The unit reason of every vision metric when the judge cannot see.
pub const BLIND_REASON: &str = "judge model cannot read images";
/// `metric` of the probe requests (and their schema name).
pub const PROBE_METRIC: &str = "vision_check";

/// The check's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Vision {
    /// Named both digits.
    Sees,
    /// Misread a digit, could not answer, or the server refused image parts; the
    /// text says which.
    Blind(String),
    /// The check could not run to a verdict (server unreachable, timeouts); vision
    /// units are then asked as usual and the verdict is not remembered.
    Unknown(String),
}

/// 5 x 7 bitmaps of the digits 0-9, one row per byte (bit 4 = leftmost column).
const FONT: [[u8; 7]; 10] = [
    [
        0b01110, 0b10001, 0b10011, 0b10101, 0b11001, 0b10001, 0b01110,
    ], // 0
    [
        0b00100, 0b01100, 0b00100, 0b00100, 0b00100, 0b00100, 0b01110,
    ], // 1
    [
        0b01110, 0b10001, 0b00001, 0b00010, 0b00100, 0b01000, 0b11111,
    ], // 2
    [
        0b11111, 0b00010, 0b00100, 0b00010, 0b00001, 0b10001, 0b01110,
    ], // 3
    [
        0b00010, 0b00110, 0b01010, 0b10010, 0b11111, 0b00010, 0b00010,
    ], // 4
    [
        0b11111, 0b10000, 0b11110, 0b00001, 0b00001, 0b10001, 0b01110,
    ], // 5
    [
        0b00110, 0b01000, 0b10000, 0b11110, 0b10001, 0b10001, 0b01110,
    ], // 6
    [
        0b11111, 0b00001, 0b00010, 0b00100, 0b01000, 0b01000, 0b01000,
    ], // 7
    [
        0b01110, 0b10001, 0b10001, 0b01110, 0b10001, 0b10001, 0b01110,
    ], // 8
    [
        0b01110, 0b10001, 0b10001, 0b01111, 0b00001, 0b00010, 0b01100,
    ], // 9
];
/// Pixels per font cell, and the white margin around the glyph.
const CELL: u32 = 24;
const MARGIN: u32 = 36;
const WIDTH: u32 = 5 * CELL + 2 * MARGIN;
const HEIGHT: u32 = 7 * CELL + 2 * MARGIN;

/// A PNG of `digit` (0-9), black on white, about 190 x 240 pixels.
pub fn probe_png(digit: u8) -> Vec<u8> {
    let glyph = FONT[usize::from(digit % 10)];
    let img = image::GrayImage::from_fn(WIDTH, HEIGHT, |x, y| {
        let inside =
            (MARGIN..MARGIN + 5 * CELL).contains(&x) && (MARGIN..MARGIN + 7 * CELL).contains(&y);
        let on = inside && {
            let (col, row) = ((x - MARGIN) / CELL, (y - MARGIN) / CELL);
            glyph[row as usize] & (0b10000 >> col) != 0
        };
        image::Luma([if on { 0 } else { 255 }])
    });
    let mut out = Cursor::new(Vec::new());
    image::DynamicImage::ImageLuma8(img)
        .write_to(&mut out, image::ImageFormat::Png)
        .expect("encoding a small PNG in memory cannot fail");
    out.into_inner()
}

/// The digit in a PNG made by [`probe_png`], read back by sampling each font cell
/// (used by the mock judge to play a model that can see). `None` for any other
/// image.
pub fn read_probe_png(png: &[u8]) -> Option<u8> {
    let img = image::load_from_memory_with_format(png, image::ImageFormat::Png)
        .ok()?
        .to_luma8();
    if img.dimensions() != (WIDTH, HEIGHT) {
        return None;
    }
    let mut rows = [0u8; 7];
    for (r, row) in rows.iter_mut().enumerate() {
        for c in 0..5u32 {
            let x = MARGIN + c * CELL + CELL / 2;
            let y = MARGIN + r as u32 * CELL + CELL / 2;
            if img.get_pixel(x, y).0[0] < 128 {
                *row |= 0b10000 >> c;
            }
        }
    }
    FONT.iter().position(|g| *g == rows).map(|d| d as u8)
}

/// The `data:` URI of a PNG, as image parts carry it.
pub fn png_data_uri(png: &[u8]) -> String {
    format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(png)
    )
}

/// The digit in a `data:image/png;base64,` URI made by [`probe_png`].
pub fn read_probe_data_uri(uri: &str) -> Option<u8> {
    let b64 = uri.strip_prefix("data:image/png;base64,")?;
    let png = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
    read_probe_png(&png)
}

/// The answer schema of a probe: one digit.
pub fn probe_schema() -> Value {
    json!({"type": "object",
           "properties": {"digit": {"type": "integer", "enum": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
                                    "description": "The digit shown in the image."}},
           "required": ["digit"], "additionalProperties": false})
}

/// The request showing `digit`; `round` (1 or 2) only labels it.
pub fn probe_request(digit: u8, round: u32) -> JudgeRequest {
    JudgeRequest {
        metric: PROBE_METRIC.into(),
        report: String::new(),
        unit: format!("vision:{round}"),
        messages: vec![
            Message {
                role: Role::System,
                parts: vec![Part::Text {
                    text: "You check what an image shows and answer in JSON.".into(),
                }],
            },
            Message {
                role: Role::User,
                parts: vec![
                    Part::Text {
                        text: "The attached image shows one large black digit (0 to 9) on a \
                               white background. Which digit is it? Reply with a JSON object \
                               such as {\"digit\": 4}."
                            .into(),
                    },
                    Part::Image {
                        data_uri: png_data_uri(&probe_png(digit)),
                    },
                ],
            },
        ],
        schema: probe_schema(),
        sample: 0,
    }
}

/// Two different digits for the two rounds.
pub fn probe_digits(draw: impl FnOnce() -> (u8, u8)) -> (u8, u8) {
    let (a, b) = draw();
    let first = a % 10;
    // 1..=9 added: the second digit always differs from the first.
    let second = (first + 1 + b % 9) % 10;
    (first, second)
}

/// Is this error text a server refusing image parts (rather than a fault)?
pub fn refuses_images(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    ["image", "multimodal", "vision", "multi-modal"]
        .iter()
        .any(|w| lower.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_digit_reads_back_and_the_glyphs_differ() {
        for d in 0..10u8 {
            let png = probe_png(d);
            assert_eq!(read_probe_png(&png), Some(d), "digit {d}");
            assert_eq!(read_probe_data_uri(&png_data_uri(&png)), Some(d));
        }
        for (a, ga) in FONT.iter().enumerate() {
            for (b, gb) in FONT.iter().enumerate().skip(a + 1) {
                assert_ne!(ga, gb, "{a} and {b} look alike");
            }
        }
        assert_eq!(read_probe_png(b"not a png"), None);
        assert_eq!(read_probe_data_uri("data:image/jpeg;base64,AAAA"), None);
    }

    #[test]
    fn the_two_digits_always_differ() {
        for a in 0..=255u8 {
            for b in [0u8, 1, 7, 8, 9, 200, 255] {
                let (x, y) = probe_digits(|| (a, b));
                assert!(x < 10 && y < 10 && x != y, "{a} {b} -> {x} {y}");
            }
        }
    }

    #[test]
    fn probe_requests_carry_the_image_and_a_digit_enum() {
        let req = probe_request(7, 1);
        assert_eq!(req.metric, PROBE_METRIC);
        let Part::Image { data_uri } = &req.messages[1].parts[1] else {
            panic!("no image part")
        };
        assert_eq!(read_probe_data_uri(data_uri), Some(7));
        assert!(super::super::schema::validate(&req.schema, &json!({"digit": 7})).is_ok());
        assert!(super::super::schema::validate(&req.schema, &json!({"digit": 12})).is_err());
    }

    #[test]
    fn image_refusals_are_recognised() {
        assert!(refuses_images(
            "Invalid content type. image_url is only supported by certain models."
        ));
        assert!(refuses_images("This model is not a multimodal model"));
        assert!(!refuses_images("The server had an error while processing"));
    }
}
