//! What a provider's prompt prefix cache serves (OpenAI's rule: a prompt prefix
//! already processed is reused from 1,024 tokens on, in 128-token steps). The mock
//! judge reports cached tokens by it and `benches/batch_cost.rs` prices with it.

/// Bytes of the longest common prefix of `a` and `b`, ending on a character
/// boundary (so `&a[..n]` and `&b[..n]` are the shared text).
pub fn common_prefix_len(a: &str, b: &str) -> usize {
    let n = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    (0..=n).rev().find(|&i| a.is_char_boundary(i)).unwrap_or(0)
}

/// Bytes of the longest prefix `text` shares with any of `seen`.
pub fn longest_shared_prefix<'a>(seen: impl IntoIterator<Item = &'a str>, text: &str) -> usize {
    seen.into_iter()
        .map(|s| common_prefix_len(s, text))
        .max()
        .unwrap_or(0)
}

/// Tokens the cache serves when `shared` tokens of a prompt were processed before:
/// nothing below 1,024, else whole 128-token steps.
pub fn cacheable_tokens(shared: u64) -> u64 {
    if shared >= 1024 {
        shared / 128 * 128
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_end_on_character_boundaries() {
        assert_eq!(common_prefix_len("abcd", "abxy"), 2);
        assert_eq!(common_prefix_len("", "abc"), 0);
        assert_eq!(common_prefix_len("same", "same"), 4);
        // "é" and "è" share their first UTF-8 byte: not a whole character.
        assert_eq!(common_prefix_len("aé", "aè"), 1);
        assert_eq!(longest_shared_prefix(["xyz", "abc1", "ab"], "abc2"), 3);
        assert_eq!(longest_shared_prefix([], "abc"), 0);
    }

    #[test]
    fn cache_starts_at_1024_tokens_in_128_token_steps() {
        assert_eq!(cacheable_tokens(1023), 0);
        assert_eq!(cacheable_tokens(1024), 1024);
        assert_eq!(cacheable_tokens(1151), 1024);
        assert_eq!(cacheable_tokens(1152), 1152);
    }
}
