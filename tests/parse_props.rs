//! Arbitrary input never panics the parser, and what it returns stays inside the
//! text it was given.

use std::path::Path;

use proptest::prelude::*;
use tvir_report::{parse_str, SourceFormat};

/// Pieces real reports are made of, so random inputs reach deep parser paths.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("[1]".to_string()),
        Just("[^1_2]".to_string()),
        Just("【3】".to_string()),
        Just("<sup>2</sup>".to_string()),
        Just("<a href=\"#ref1\">[1]</a>".to_string()),
        Just("\n\n## References\n\n".to_string()),
        Just("\n[1] https://example.org/a\n".to_string()),
        Just("\n1. Title, [https://x.org](https://x.org)\n".to_string()),
        Just("![alt](images/a.png)".to_string()),
        Just(
            "<figure><img src=\"charts/b.png\"><figcaption>图 1：说明 [1]</figcaption></figure>"
                .to_string()
        ),
        Just("\n*Figure 1: caption*\n".to_string()),
        Just("\n| a | Snippet IDs |\n|---|---|\n| x | 1 |\n".to_string()),
        Just("```mermaid\ngraph TD\nA-->B\n```".to_string()),
        Just("。".to_string()),
        Just(". ".to_string()),
        Just("offspring.1 ".to_string()),
        Just("[网页: https://a.cn/x]".to_string()),
        Just("\u{E000}".to_string()),
        "[ -~]{0,20}",
        "\\PC{0,10}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        for format in [SourceFormat::Markdown, SourceFormat::Html] {
            let r = parse_str(&text, format, Path::new("r.md"), Path::new("."));
            for f in &r.facts {
                prop_assert!(r.text.get(f.span.clone()).is_some());
            }
        }
    }

    #[test]
    fn report_like_text_never_panics(parts in proptest::collection::vec(fragment(), 0..40)) {
        let text = parts.concat();
        for format in [SourceFormat::Markdown, SourceFormat::Html] {
            let r = parse_str(&text, format, Path::new("r.md"), Path::new("."));
            let idxs: Vec<&str> = r.references.iter().map(|x| x.idx.as_str()).collect();
            for f in &r.facts {
                prop_assert!(r.text.get(f.span.clone()).is_some());
                prop_assert!(f.line >= 1);
                for i in &f.ref_idxs {
                    // A marker naming no entry stays a cited unit (settled "no usable source").
                    prop_assert!(idxs.contains(&i.as_str()) || r.unusable_citation(i).is_some());
                }
            }
            for g in &r.figures {
                prop_assert!(r.text.get(g.span.clone()).is_some());
                if let Some(c) = &g.caption_span {
                    prop_assert!(r.text.get(c.clone()).is_some());
                }
            }
        }
    }
}
