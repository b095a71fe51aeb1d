//! Reading our own Rust sources as tokens (proc-macro2's lexer: comments gone, strings
//! whole), for the checks that tests say what they do: the string literals of a file
//! (doc comments left out) and a function's attributes and body.

use std::collections::BTreeSet;
use std::path::Path;
use std::str::FromStr;

use proc_macro2::{Delimiter, TokenStream, TokenTree};

/// The file's tokens, or an error naming the file.
pub fn tokens(path: &Path) -> Result<TokenStream, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    TokenStream::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Every string literal (its source text, quotes included) at any depth, except the
/// text of doc comments (`#[doc = "..."]`, which is what `///` and `//!` become).
pub fn string_literals(ts: &TokenStream) -> Vec<String> {
    let mut out = Vec::new();
    collect_literals(ts, &mut out);
    out
}

fn collect_literals(ts: &TokenStream, out: &mut Vec<String>) {
    let trees: Vec<TokenTree> = ts.clone().into_iter().collect();
    for (i, t) in trees.iter().enumerate() {
        match t {
            TokenTree::Group(g) => collect_literals(&g.stream(), out),
            TokenTree::Literal(l) => {
                let text = l.to_string();
                let doc = i >= 2
                    && matches!(&trees[i - 1], TokenTree::Punct(p) if p.as_char() == '=')
                    && matches!(&trees[i - 2], TokenTree::Ident(d) if d == "doc");
                let string =
                    text.starts_with('"') || text.starts_with('r') || text.starts_with("b\"");
                if string && !doc {
                    out.push(text);
                }
            }
            _ => {}
        }
    }
}

/// A function found in a file: the text of its attributes and its body.
pub struct FnItem {
    pub attributes: Vec<String>,
    pub body: TokenStream,
}

impl FnItem {
    /// Marked `#[test]` or an async runtime's test attribute (`#[tokio::test(...)]`).
    pub fn is_test(&self) -> bool {
        self.attributes.iter().any(|a| {
            let a: String = a.chars().filter(|c| !c.is_whitespace()).collect();
            a == "test" || a.contains("::test")
        })
    }
}

/// Every function named `name` in `ts`, at any depth (modules, impls).
pub fn functions(ts: &TokenStream, name: &str) -> Vec<FnItem> {
    let mut out = Vec::new();
    collect_functions(ts, name, &mut out);
    out
}

fn collect_functions(ts: &TokenStream, name: &str, out: &mut Vec<FnItem>) {
    let trees: Vec<TokenTree> = ts.clone().into_iter().collect();
    for (i, t) in trees.iter().enumerate() {
        if let TokenTree::Group(g) = t {
            collect_functions(&g.stream(), name, out);
            continue;
        }
        let is_fn = matches!(t, TokenTree::Ident(f) if f == "fn");
        let named = matches!(trees.get(i + 1), Some(TokenTree::Ident(n)) if n == name);
        if !(is_fn && named) {
            continue;
        }
        let Some(body) = trees[i + 2..].iter().find_map(|t| match t {
            TokenTree::Group(g) if g.delimiter() == Delimiter::Brace => Some(g.stream()),
            _ => None,
        }) else {
            continue;
        };
        // Attributes: `# [ ... ]` pairs before `fn`, past `pub`, `async` and the like.
        let mut attributes = Vec::new();
        let mut j = i;
        while j > 0 {
            match &trees[j - 1] {
                TokenTree::Ident(k)
                    if ["pub", "async", "unsafe", "const"].contains(&&*k.to_string()) =>
                {
                    j -= 1
                }
                TokenTree::Group(g) if g.delimiter() == Delimiter::Parenthesis => j -= 1,
                TokenTree::Group(g)
                    if g.delimiter() == Delimiter::Bracket
                        && j >= 2
                        && matches!(&trees[j - 2], TokenTree::Punct(p) if p.as_char() == '#') =>
                {
                    attributes.push(g.stream().to_string());
                    j -= 2;
                }
                _ => break,
            }
        }
        out.push(FnItem { attributes, body });
    }
}

/// The identifiers of `ts` followed by `(` or `!`: the functions and macros it calls.
pub fn calls(ts: &TokenStream) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    collect_calls(ts, &mut out);
    out
}

fn collect_calls(ts: &TokenStream, out: &mut BTreeSet<String>) {
    let trees: Vec<TokenTree> = ts.clone().into_iter().collect();
    for (i, t) in trees.iter().enumerate() {
        match t {
            TokenTree::Group(g) => collect_calls(&g.stream(), out),
            TokenTree::Ident(id) => {
                let called = match trees.get(i + 1) {
                    Some(TokenTree::Group(g)) => g.delimiter() == Delimiter::Parenthesis,
                    Some(TokenTree::Punct(p)) => p.as_char() == '!',
                    _ => false,
                };
                if called {
                    out.insert(id.to_string());
                }
            }
            _ => {}
        }
    }
}

/// The string literals of `ts` directly followed by `,` and a variable (an identifier
/// not called): a flag whose value a helper takes as a parameter (`"--dedup", mode`).
pub fn literals_before_a_variable(ts: &TokenStream) -> Vec<String> {
    let mut out = Vec::new();
    collect_before_variable(ts, &mut out);
    out
}

fn collect_before_variable(ts: &TokenStream, out: &mut Vec<String>) {
    let trees: Vec<TokenTree> = ts.clone().into_iter().collect();
    for (i, t) in trees.iter().enumerate() {
        match t {
            TokenTree::Group(g) => collect_before_variable(&g.stream(), out),
            TokenTree::Literal(l) => {
                let comma =
                    matches!(trees.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == ',');
                // The identifier ends the argument: a plain variable, not a call or a path.
                let variable = matches!(trees.get(i + 2), Some(TokenTree::Ident(_)))
                    && match trees.get(i + 3) {
                        None => true,
                        Some(TokenTree::Punct(p)) => p.as_char() == ',',
                        _ => false,
                    };
                if comma && variable {
                    out.push(l.to_string());
                }
            }
            _ => {}
        }
    }
}

/// Every identifier of `ts`, at any depth.
pub fn identifiers(ts: &TokenStream) -> Vec<String> {
    let mut out = Vec::new();
    for t in ts.clone() {
        match t {
            TokenTree::Group(g) => out.extend(identifiers(&g.stream())),
            TokenTree::Ident(id) => out.push(id.to_string()),
            _ => {}
        }
    }
    out
}

/// The text of a string literal: `"--dedup"` and `r"--dedup"` give `--dedup` (escapes
/// are left as written; the checks look for plain words).
pub fn literal_text(literal: &str) -> &str {
    let t = literal.trim_start_matches(['b', 'r']).trim_matches('#');
    t.strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(t)
}
