//! Arbitrary bytes through the whole report parser, as Markdown and as HTML: it must
//! never panic, and every span it returns must index the text it was given.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use tvir_report::{load::decode, parse_str, SourceFormat};

fuzz_target!(|data: &[u8]| {
    let (text, _warnings) = decode(data, Path::new("fuzz.md"));
    for format in [SourceFormat::Markdown, SourceFormat::Html] {
        let report = parse_str(&text, format, Path::new("fuzz.md"), Path::new("."));
        for fact in &report.facts {
            assert!(report.text.get(fact.span.clone()).is_some());
        }
        for figure in &report.figures {
            assert!(report.text.get(figure.span.clone()).is_some());
            if let Some(c) = &figure.caption_span {
                assert!(report.text.get(c.clone()).is_some());
            }
        }
    }
});
