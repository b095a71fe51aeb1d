//! Slicing text at offsets the parser computed. A search on a string returns
//! offsets that are character boundaries of that string, and slicing with them is
//! safe; an offset reached by arithmetic (`+ 1`, `- 1`, a length added), kept from
//! another string, or taken from a list of ranges that may be out of order is not,
//! and `&s[a..b]` then panics inside a multi-byte character or when `a > b`. These
//! helpers are the one way to slice with such an offset: they never panic, and the
//! fallback is defined (an offset past the end is the end, an offset inside a
//! character moves back to that character's start, a start past the end gives "").

/// The last character boundary of `s` at or before `i` (the end if `i` is past it).
pub(crate) fn floor(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// `s[start..end]` with both offsets moved to character boundaries by [`floor`];
/// empty when `start` is at or past `end`.
pub(crate) fn cut(s: &str, start: usize, end: usize) -> &str {
    let (a, b) = (floor(s, start), floor(s, end));
    s.get(a..b.max(a)).unwrap_or("")
}

/// `s[start..]`, with `start` moved to a character boundary by [`floor`].
pub(crate) fn from(s: &str, start: usize) -> &str {
    cut(s, start, s.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_inside_characters_past_the_end_or_reversed_never_panic() {
        let s = "a。b😀";
        assert_eq!(floor(s, 2), 1);
        assert_eq!(floor(s, 99), s.len());
        assert_eq!(cut(s, 0, 2), "a");
        assert_eq!(cut(s, 1, 4), "。");
        assert_eq!(cut(s, 5, 2), "");
        assert_eq!(cut(s, 6, 99), "😀");
        assert_eq!(from(s, 3), "。b😀");
        assert_eq!(from(s, 99), "");
    }
}
