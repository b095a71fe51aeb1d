//! Report language from the share of CJK characters.

use super::model::Language;

/// Share of CJK characters among all letters at or above which a text counts as
/// Chinese. Chinese reports routinely quote English names and URLs, while English
/// reports rarely carry more than a few CJK words, so a low threshold separates them.
const CJK_SHARE_FOR_ZH: f64 = 0.2;

/// Detect the language of a text: `Zh` when CJK characters make up at least a fifth
/// of its letters, otherwise `En` (also for text with no letters at all).
pub fn detect_language(text: &str) -> Language {
    let mut cjk = 0usize;
    let mut other_letters = 0usize;
    for c in text.chars() {
        if is_cjk(c) {
            cjk += 1;
        } else if c.is_alphabetic() {
            other_letters += 1;
        }
    }
    let total = cjk + other_letters;
    if total > 0 && cjk as f64 / total as f64 >= CJK_SHARE_FOR_ZH {
        Language::Zh
    } else {
        Language::En
    }
}

/// Han ideographs (with extensions and compatibility forms), kana and CJK symbols.
pub(crate) fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // kana
        | 0x3400..=0x4DBF    // extension A
        | 0x4E00..=0x9FFF    // unified ideographs
        | 0xF900..=0xFAFF    // compatibility ideographs
        | 0x20000..=0x2FA1F) // extensions B..F, compatibility supplement
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chinese_with_english_terms_is_zh() {
        let text =
            "研究团队用三个月时间比较了多种检索增强方法（RAG）的效果，MemGPT 只是其中一个例子。";
        assert_eq!(detect_language(text), Language::Zh);
    }

    #[test]
    fn english_with_a_few_cjk_words_is_en() {
        let text = "Horizontal gene transfer in plants and animals is rare but consequential. \
                    Retrieved 檢索日期 April 2025 from the journal website.";
        assert_eq!(detect_language(text), Language::En);
    }

    #[test]
    fn empty_or_symbolic_text_defaults_to_en() {
        assert_eq!(detect_language(""), Language::En);
        assert_eq!(detect_language("12345 !!! ---"), Language::En);
    }
}
