//! MDX's JSX attribute values written as a literal in braces (`src={"c.svg"}`,
//! `height={420}`, ``title={`Fares`}``). CommonMark does not take such a line for an
//! HTML tag, so a component that shows a picture or a chart file would stay prose.
//! The parse and the rendered page both read the report through [`plain_values`], so
//! they see the same tags at the same offsets.

use std::sync::LazyLock;

use regex::Regex;

/// A line that starts a tag.
static TAG_LINE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?m)^[ \t]*<[A-Za-z][^\n]*").unwrap());
/// `={literal}`: a string in double, single or back quotes (no `${}` inside), or a
/// bare number or name.
static BRACED_LITERAL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"=\s*(\{)\s*(?:"[^"\n]*"|'[^'\n]*'|(`)[^`$\n]*(`)|[\w.-]+)\s*(\})"#).unwrap()
});

/// Makes braced literal values plain HTML values in place (`src= "c.svg" `): the
/// braces become spaces and back quotes double quotes, so every byte offset stays the
/// report's. Only lines that start a tag are touched.
pub(crate) fn plain_values(bytes: &mut [u8]) {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return;
    };
    let mut edits = Vec::new();
    for line in TAG_LINE.find_iter(text) {
        for c in BRACED_LITERAL.captures_iter(line.as_str()) {
            for (g, to) in [(1, b' '), (2, b'"'), (3, b'"'), (4, b' ')] {
                if let Some(m) = c.get(g) {
                    edits.push((line.start() + m.start(), to));
                }
            }
        }
    }
    // Only ASCII bytes are replaced by ASCII bytes, so the text stays UTF-8.
    for (i, to) in edits {
        bytes[i] = to;
    }
}

/// [`plain_values`] on a string; borrowed when nothing changes.
pub(crate) fn with_plain_values(text: &str) -> std::borrow::Cow<'_, str> {
    let mut bytes = text.as_bytes().to_vec();
    plain_values(&mut bytes);
    if bytes == text.as_bytes() {
        std::borrow::Cow::Borrowed(text)
    } else {
        std::borrow::Cow::Owned(String::from_utf8(bytes).unwrap_or_else(|_| text.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(s: &str) -> String {
        with_plain_values(s).into_owned()
    }

    #[test]
    fn braced_literals_on_tag_lines_become_plain_values_at_the_same_offsets() {
        let line = "<ChartFrame src={\"c.svg\"} alt={'Fares'} title={`Lanes`} height={420} />";
        let out = plain(line);
        assert_eq!(
            out,
            "<ChartFrame src= \"c.svg\"  alt= 'Fares'  title= \"Lanes\"  height= 420  />"
        );
        assert_eq!(out.len(), line.len());
    }

    #[test]
    fn expressions_prose_and_templates_with_substitutions_are_left_alone() {
        for s in [
            "<Chart data={rows.map(r => r.x)} />",
            "<Chart title={`Fares ${year}`} />",
            "Sets are written {1, 2} and x={3} in prose.",
            "A line <Tag a={\"b\"}> that does not start with a tag.",
        ] {
            assert_eq!(plain(s), s);
            assert!(matches!(
                with_plain_values(s),
                std::borrow::Cow::Borrowed(_)
            ));
        }
    }
}
