//! `--sources FILE.jsonl`: pre-fetched pages, one `{"url": "...", "text": "..."}`
//! object per line, used instead of the network for those URLs. A page whose fetch
//! failed where the file was made is `{"url": "...", "error": "..."}`: the same
//! failure, with its error, as a fetch in this run would have given.

use std::collections::HashMap;
use std::path::Path;

use super::normalize_url;

#[derive(Debug, thiserror::Error)]
pub enum SourcesFileError {
    #[error("sources file {path}: {source}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("sources file {path}, line {line}: {message}")]
    Line {
        path: String,
        line: usize,
        message: String,
    },
}

#[derive(serde::Deserialize)]
struct Entry {
    url: String,
    text: Option<String>,
    error: Option<String>,
}

/// One page of a sources file.
#[derive(Debug, Clone, PartialEq)]
pub enum SourcePage {
    /// The page's text (empty: the page was read and is empty).
    Text(String),
    /// The fetch failed, with this error.
    Failed(String),
}

/// Normalised URL -> page. Blank lines are skipped; a later line for the same URL
/// replaces an earlier one (so a file can be patched by appending).
pub fn load(path: &Path) -> Result<HashMap<String, SourcePage>, SourcesFileError> {
    let raw = std::fs::read(path).map_err(|source| SourcesFileError::Read {
        path: path.display().to_string(),
        source,
    })?;
    parse(&String::from_utf8_lossy(&raw), &path.display().to_string())
}

pub fn parse(content: &str, path: &str) -> Result<HashMap<String, SourcePage>, SourcesFileError> {
    let mut pages = HashMap::new();
    for (i, line) in content.lines().enumerate() {
        let line = line.trim().trim_start_matches('\u{feff}');
        if line.is_empty() {
            continue;
        }
        let err = |message: String| SourcesFileError::Line {
            path: path.to_string(),
            line: i + 1,
            message,
        };
        let entry: Entry = serde_json::from_str(line).map_err(|e| {
            err(format!(
                "expected {{\"url\", \"text\"}} or {{\"url\", \"error\"}}: {e}"
            ))
        })?;
        if entry.url.trim().is_empty() {
            return Err(err("empty `url`".into()));
        }
        let page = match (entry.text, entry.error) {
            (Some(_), Some(_)) => {
                return Err(err(
                    "both `text` and `error`: a page was either read or not".into(),
                ))
            }
            (Some(text), None) => SourcePage::Text(text),
            (None, Some(error)) if !error.trim().is_empty() => SourcePage::Failed(error),
            (None, Some(_)) => return Err(err("empty `error`".into())),
            (None, None) => return Err(err("expected `text` or `error`".into())),
        };
        pages.insert(normalize_url(&entry.url), page);
    }
    Ok(pages)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lines_and_normalises_urls() {
        let content = "{\"url\": \"HTTPS://Example.com/a#frag\", \"text\": \"first\"}\n\n\
                       {\"url\": \"https://b.example/\", \"text\": \"\"}\n\
                       {\"url\": \"https://example.com/a\", \"text\": \"second\"}\n";
        let pages = parse(content, "s.jsonl").unwrap();
        assert_eq!(pages.len(), 2);
        assert_eq!(
            pages["https://example.com/a"],
            SourcePage::Text("second".into())
        );
        assert_eq!(pages["https://b.example/"], SourcePage::Text(String::new()));
    }

    #[test]
    fn a_failed_fetch_is_recorded_with_its_error() {
        let content = "{\"url\": \"https://a.example/x\", \"error\": \"HTTP 500\"}\n";
        let pages = parse(content, "s.jsonl").unwrap();
        assert_eq!(
            pages["https://a.example/x"],
            SourcePage::Failed("HTTP 500".into())
        );
        for (bad, why) in [
            (
                r#"{"url": "https://a/", "text": "x", "error": "HTTP 500"}"#,
                "both",
            ),
            (r#"{"url": "https://a/", "error": " "}"#, "empty `error`"),
            (r#"{"url": "https://a/"}"#, "expected `text` or `error`"),
        ] {
            let msg = parse(bad, "s.jsonl").unwrap_err().to_string();
            assert!(msg.starts_with("sources file s.jsonl, line 1:"), "{msg}");
            assert!(msg.contains(why), "{msg}");
        }
    }

    #[test]
    fn errors_name_file_and_line() {
        let err = parse(
            "{\"url\": \"https://a/\", \"text\": \"x\"}\n{\"url\": 3}\n",
            "s.jsonl",
        )
        .unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("sources file s.jsonl, line 2:"), "{msg}");
        let err = parse("{\"url\": \" \", \"text\": \"x\"}", "s.jsonl").unwrap_err();
        assert!(err.to_string().contains("empty `url`"));
    }

    #[test]
    fn missing_file_is_a_read_error() {
        let err = load(Path::new("/nonexistent/sources.jsonl")).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/sources.jsonl"));
    }
}
