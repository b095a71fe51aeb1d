//! `--sources FILE.jsonl`: pre-fetched pages, one `{"url": "...", "text": "..."}`
//! object per line, used instead of the network for those URLs.

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
    text: String,
}

/// Normalised URL -> text. Blank lines are skipped; a later line for the same URL
/// replaces an earlier one (so a file can be patched by appending).
pub fn load(path: &Path) -> Result<HashMap<String, String>, SourcesFileError> {
    let raw = std::fs::read(path).map_err(|source| SourcesFileError::Read {
        path: path.display().to_string(),
        source,
    })?;
    parse(&String::from_utf8_lossy(&raw), &path.display().to_string())
}

pub fn parse(content: &str, path: &str) -> Result<HashMap<String, String>, SourcesFileError> {
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
        let entry: Entry = serde_json::from_str(line)
            .map_err(|e| err(format!("expected {{\"url\", \"text\"}}: {e}")))?;
        if entry.url.trim().is_empty() {
            return Err(err("empty `url`".into()));
        }
        pages.insert(normalize_url(&entry.url), entry.text);
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
        assert_eq!(pages["https://example.com/a"], "second");
        assert_eq!(pages["https://b.example/"], "");
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
