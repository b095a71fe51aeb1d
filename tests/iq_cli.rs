//! `tvir iq FILE... [--json]` end to end: JSON shape (INTERFACE.md), exit codes,
//! failures as data, SVG support, the decompression-bomb refusal.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/images")
        .join(name)
}

fn tvir() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tvir"))
}

#[test]
fn json_shape_and_duplicates() {
    let out = tvir()
        .args(["iq", "--json"])
        .arg(fixture("photo.png"))
        .arg(fixture("chart_bars.png"))
        .arg(fixture("photo_q85.jpg"))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let images = v["images"].as_array().unwrap();
    assert_eq!(images.len(), 3);
    for key in [
        "path",
        "width",
        "height",
        "resolution",
        "aspect",
        "sharpness",
        "contrast",
        "quality",
        "phash",
        "duplicate_of",
        "error",
    ] {
        assert!(images[0].get(key).is_some(), "missing {key}");
    }
    assert_eq!(images[0]["width"], 480);
    assert_eq!(images[0]["phash"].as_str().unwrap().len(), 16);
    assert_eq!(images[0]["duplicate_of"], Value::Null);
    assert_eq!(images[1]["duplicate_of"], Value::Null);
    assert_eq!(
        images[2]["duplicate_of"], 0,
        "the JPEG re-encode duplicates #0"
    );
    // 1 duplicate among 3 valid images: 0.8 / 3.
    let p = v["duplicate_penalty"].as_f64().unwrap();
    assert!((p - 0.8 / 3.0).abs() < 1e-12);
    let mean: f64 = images
        .iter()
        .map(|i| i["quality"].as_f64().unwrap())
        .sum::<f64>()
        / 3.0;
    assert!((v["iq"].as_f64().unwrap() - mean * (1.0 - p)).abs() < 1e-12);
}

#[test]
fn failures_are_scored_zero_and_exit_one() {
    let dir = tempfile::tempdir().unwrap();
    let bomb = dir.path().join("bomb.png");
    // A PNG header claiming 30000 x 30000: refused before any allocation.
    let mut bytes = std::fs::read(fixture("one_pixel.png")).unwrap();
    bytes[16..20].copy_from_slice(&30000u32.to_be_bytes());
    bytes[20..24].copy_from_slice(&30000u32.to_be_bytes());
    let crc = crc32(&bytes[12..29]);
    bytes[29..33].copy_from_slice(&crc.to_be_bytes());
    std::fs::write(&bomb, &bytes).unwrap();
    let out = tvir()
        .args(["iq", "--json"])
        .arg(fixture("truncated.png"))
        .arg(dir.path().join("missing.png"))
        .arg(&bomb)
        .arg(fixture("chart.svg"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let images = v["images"].as_array().unwrap();
    for (i, needle) in [(0, "truncated.png"), (1, "missing.png"), (2, "bomb.png")] {
        let err = images[i]["error"]
            .as_str()
            .unwrap_or_else(|| panic!("#{i} has no error"));
        assert!(err.contains(needle), "{err}");
        assert_eq!(images[i]["quality"], 0.0);
        assert_eq!(images[i]["phash"], Value::Null);
    }
    assert!(
        images[2]["error"].as_str().unwrap().contains("too large"),
        "{}",
        images[2]["error"]
    );
    let svg = &images[3];
    assert_eq!(svg["error"], Value::Null, "{svg}");
    assert_eq!(
        (svg["width"].as_u64(), svg["height"].as_u64()),
        (Some(480), Some(320))
    );
    assert!(svg["quality"].as_f64().unwrap() > 0.5);
    // Failed images count in the mean: IQ = svg Q / 4.
    let iq = v["iq"].as_f64().unwrap();
    assert!((iq - svg["quality"].as_f64().unwrap() / 4.0).abs() < 1e-12);
}

#[test]
fn table_output_and_usage_errors() {
    let out = tvir().arg("iq").arg(fixture("text.png")).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("text.png"));
    assert!(text.contains("IQ:"));
    let out = tvir().arg("iq").output().unwrap();
    assert_eq!(out.status.code(), Some(2), "no PATH is a usage error");
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}
