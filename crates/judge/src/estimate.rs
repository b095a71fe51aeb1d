//! Token estimates made before sending (rate limiting by `--tpm`, `--dry-run`,
//! `--max-cost` previews). The method, documented in `docs/judge.md`:
//!
//! - text: one token per 4 characters of alphabetic scripts and one per character of
//!   CJK, kana and hangul (tokenizers rarely merge those), rounded up;
//! - each message costs 4 tokens of framing, the reply 3 more;
//! - the JSON schema sent in `response_format` counts like text;
//! - images use OpenAI's high-detail tiling: fit in 2048x2048, shrink the shorter side
//!   to 768, then 85 + 170 per 512-pixel tile; an image whose size cannot be read
//!   from its header counts as 4 tiles (765 tokens);
//! - the completion is estimated as `min(max_tokens, 400)`.

use std::io::Cursor;

use base64::Engine;

use super::{JudgeRequest, Part};

/// Completion tokens assumed per call when estimating (judge answers with a short
/// justification per score are typically 150-400 tokens).
pub const ESTIMATED_COMPLETION_TOKENS: u64 = 400;
const MESSAGE_OVERHEAD: u64 = 4;
const REPLY_OVERHEAD: u64 = 3;
const UNKNOWN_IMAGE_TOKENS: u64 = 765;
/// Only this much of the base64 payload is decoded to find the image size: headers
/// sit at the start (JPEG's frame header after any EXIF block, which is bounded by
/// 64 KiB per segment but may repeat, hence the margin).
const HEADER_BASE64_CHARS: usize = 4 * (192 << 10) / 3;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct TokenEstimate {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

pub fn text_tokens(text: &str) -> u64 {
    let mut wide = 0u64;
    let mut narrow = 0u64;
    for c in text.chars() {
        if is_wide(c) {
            wide += 1;
        } else {
            narrow += 1;
        }
    }
    wide + narrow.div_ceil(4)
}

fn is_wide(c: char) -> bool {
    matches!(c as u32,
        0x1100..=0x11FF       // Hangul Jamo
        | 0x2E80..=0x9FFF     // CJK radicals .. unified ideographs, kana, bopomofo
        | 0xAC00..=0xD7AF     // Hangul syllables
        | 0xF900..=0xFAFF     // CJK compatibility ideographs
        | 0xFF00..=0xFFEF     // full-width forms
        | 0x20000..=0x3FFFF) // CJK extensions
}

/// Tokens of one image given its pixel size (OpenAI high-detail tiling).
pub fn image_tokens_for_size(width: u32, height: u32) -> u64 {
    if width == 0 || height == 0 {
        return 85;
    }
    let (mut w, mut h) = (f64::from(width), f64::from(height));
    let fit = (2048.0 / w.max(h)).min(1.0);
    w *= fit;
    h *= fit;
    let shrink = (768.0 / w.min(h)).min(1.0);
    w *= shrink;
    h *= shrink;
    let tiles = (w / 512.0).ceil() as u64 * (h / 512.0).ceil() as u64;
    85 + 170 * tiles
}

/// Tokens of an image sent as a `data:` URI (its size is read from the header only).
pub fn image_tokens(data_uri: &str) -> u64 {
    image_size(data_uri)
        .map(|(w, h)| image_tokens_for_size(w, h))
        .unwrap_or(UNKNOWN_IMAGE_TOKENS)
}

fn image_size(data_uri: &str) -> Option<(u32, u32)> {
    let (meta, payload) = data_uri.strip_prefix("data:")?.split_once(',')?;
    if !meta.ends_with(";base64") {
        return None;
    }
    let payload = payload.trim().as_bytes();
    // A prefix before any padding whose length is a multiple of 4 decodes on its own
    // (the few bytes dropped at the very end never hold a header).
    let unpadded = payload
        .iter()
        .position(|&b| b == b'=')
        .unwrap_or(payload.len());
    let prefix = &payload[..unpadded.min(HEADER_BASE64_CHARS) / 4 * 4];
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(prefix)
        .ok()?;
    image::ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .ok()?
        .into_dimensions()
        .ok()
}

/// Estimate for one request as it would be sent (schema included).
pub fn estimate_request(request: &JudgeRequest, max_tokens: Option<u32>) -> TokenEstimate {
    let mut prompt = REPLY_OVERHEAD + text_tokens(&request.schema.to_string());
    for message in &request.messages {
        prompt += MESSAGE_OVERHEAD;
        for part in &message.parts {
            prompt += match part {
                Part::Text { text } => text_tokens(text),
                Part::Image { data_uri } => image_tokens(data_uri),
            };
        }
    }
    let completion = max_tokens
        .map(u64::from)
        .unwrap_or(ESTIMATED_COMPLETION_TOKENS)
        .min(ESTIMATED_COMPLETION_TOKENS);
    TokenEstimate {
        prompt_tokens: prompt,
        completion_tokens: completion,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Message, Role};

    fn png_data_uri(w: u32, h: u32) -> String {
        let img = image::RgbImage::new(w, h);
        let mut bytes = Vec::new();
        image::DynamicImage::ImageRgb8(img)
            .write_to(&mut Cursor::new(&mut bytes), image::ImageFormat::Png)
            .unwrap();
        format!(
            "data:image/png;base64,{}",
            base64::engine::general_purpose::STANDARD.encode(bytes)
        )
    }

    #[test]
    fn text_estimates() {
        assert_eq!(text_tokens(""), 0);
        assert_eq!(text_tokens("abcd"), 1);
        assert_eq!(text_tokens("abcde"), 2);
        assert_eq!(text_tokens("中文报告"), 4);
        assert_eq!(text_tokens("中文 ab"), 3);
    }

    #[test]
    fn image_tiles_follow_the_documented_rule() {
        // 1024x1024 -> 768x768 -> 2x2 tiles.
        assert_eq!(image_tokens_for_size(1024, 1024), 85 + 170 * 4);
        // 2048x4096 -> 1024x2048 -> 768x1536 -> 2x3 tiles.
        assert_eq!(image_tokens_for_size(2048, 4096), 85 + 170 * 6);
        // Small images are not upscaled: 1 tile.
        assert_eq!(image_tokens_for_size(100, 100), 85 + 170);
        assert_eq!(image_tokens(&png_data_uri(1024, 1024)), 765);
        assert_eq!(image_tokens(&png_data_uri(600, 300)), 85 + 170 * 2);
        assert_eq!(
            image_tokens("data:image/png;base64,@@@"),
            UNKNOWN_IMAGE_TOKENS
        );
        assert_eq!(image_tokens("https://x/y.png"), UNKNOWN_IMAGE_TOKENS);
        assert_eq!(
            image_tokens("data:image/png;base64,ééééé"),
            UNKNOWN_IMAGE_TOKENS
        );
        // Only the header is decoded: a payload with garbage far after it still works.
        let big = format!("{}{}", png_data_uri(600, 300), "A".repeat(400_000));
        assert_eq!(image_tokens(&big), 85 + 170 * 2);
    }

    #[test]
    fn request_estimate_sums_parts() {
        let req = JudgeRequest {
            metric: "m".into(),
            report: "r".into(),
            unit: "u".into(),
            messages: vec![
                Message {
                    role: Role::System,
                    parts: vec![Part::Text {
                        text: "abcdabcd".into(),
                    }],
                },
                Message {
                    role: Role::User,
                    parts: vec![
                        Part::Text {
                            text: "abcd".into(),
                        },
                        Part::Image {
                            data_uri: png_data_uri(100, 100),
                        },
                    ],
                },
            ],
            schema: serde_json::json!({}),
            sample: 0,
        };
        let e = estimate_request(&req, None);
        // 3 reply + 1 schema ("{}") + 2x4 framing + 2 + 1 + 255.
        assert_eq!(e.prompt_tokens, 3 + 1 + 8 + 2 + 1 + 255);
        assert_eq!(e.completion_tokens, ESTIMATED_COMPLETION_TOKENS);
        assert_eq!(estimate_request(&req, Some(100)).completion_tokens, 100);
    }
}
