//! Reading a report from disk: folder or file, BOM, lossy UTF-8, size cap.

use std::path::{Path, PathBuf};

use super::model::SourceFormat;
use super::ReportError;

/// Reports larger than this are refused: no real report comes close, and the parser
/// holds several copies of the text while working.
pub const MAX_REPORT_BYTES: u64 = 20 * 1024 * 1024;

/// A report's source text, decoded, with where it came from.
#[derive(Debug, Clone)]
pub struct LoadedSource {
    pub path: PathBuf,
    pub root: PathBuf,
    pub format: SourceFormat,
    pub text: String,
    pub warnings: Vec<String>,
}

/// Find the report file for a folder (`report.md`, else `report.html`/`report.htm`,
/// else `report.mdx`)
/// or accept a file as it is.
pub fn resolve_report_file(path: &Path) -> Result<PathBuf, ReportError> {
    let meta = std::fs::metadata(path).map_err(|e| ReportError::Unreadable {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    if meta.is_file() {
        return Ok(path.to_path_buf());
    }
    for name in ["report.md", "report.html", "report.htm", "report.mdx"] {
        let candidate = path.join(name);
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    Err(ReportError::NoReportFile {
        path: path.display().to_string(),
    })
}

/// Markdown unless the extension says HTML, or the text itself starts as an HTML
/// document.
pub fn detect_format(path: &Path, text: &str) -> SourceFormat {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(|e| e.to_ascii_lowercase());
    match ext.as_deref() {
        Some("html") | Some("htm") | Some("xhtml") => SourceFormat::Html,
        Some("md") | Some("mdx") | Some("markdown") | Some("txt") => SourceFormat::Markdown,
        _ => {
            let head: String = text.trim_start().chars().take(64).collect();
            let head = head.to_ascii_lowercase();
            if head.starts_with("<!doctype html") || head.starts_with("<html") {
                SourceFormat::Html
            } else {
                SourceFormat::Markdown
            }
        }
    }
}

/// Decode bytes as UTF-8: strip a BOM, decode invalid sequences lossily and warn
/// with the byte offset of the first one.
pub fn decode(bytes: &[u8], file: &Path) -> (String, Vec<String>) {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    match std::str::from_utf8(bytes) {
        Ok(s) => (s.to_string(), Vec::new()),
        Err(e) => {
            let offset = e.valid_up_to();
            let invalid = count_invalid_sequences(bytes);
            let warning = format!(
                "{}: invalid UTF-8 at byte offset {offset} ({invalid} invalid sequence(s) replaced with U+FFFD)",
                file.display()
            );
            (String::from_utf8_lossy(bytes).into_owned(), vec![warning])
        }
    }
}

fn count_invalid_sequences(mut bytes: &[u8]) -> usize {
    let mut count = 0;
    loop {
        match std::str::from_utf8(bytes) {
            Ok(_) => return count,
            Err(e) => {
                count += 1;
                let skip = e.valid_up_to() + e.error_len().unwrap_or(bytes.len() - e.valid_up_to());
                bytes = &bytes[skip.min(bytes.len())..];
            }
        }
    }
}

/// Read a report folder or file from disk.
pub fn read_source(path: &Path) -> Result<LoadedSource, ReportError> {
    let file = resolve_report_file(path)?;
    let unreadable = |message: String| ReportError::Unreadable {
        path: file.display().to_string(),
        message,
    };
    let size = std::fs::metadata(&file)
        .map_err(|e| unreadable(e.to_string()))?
        .len();
    if size > MAX_REPORT_BYTES {
        return Err(ReportError::TooLarge {
            path: file.display().to_string(),
            size,
            limit: MAX_REPORT_BYTES,
        });
    }
    let bytes = std::fs::read(&file).map_err(|e| unreadable(e.to_string()))?;
    // The file may have grown between the size check and the read.
    if bytes.len() as u64 > MAX_REPORT_BYTES {
        return Err(ReportError::TooLarge {
            path: file.display().to_string(),
            size: bytes.len() as u64,
            limit: MAX_REPORT_BYTES,
        });
    }
    let (text, warnings) = decode(&bytes, &file);
    let format = detect_format(&file, &text);
    let root = file
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    Ok(LoadedSource {
        path: file,
        root,
        format,
        text,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bom_is_stripped() {
        let (text, warnings) = decode(b"\xEF\xBB\xBF# Title", Path::new("r.md"));
        assert_eq!(text, "# Title");
        assert!(warnings.is_empty());
    }

    #[test]
    fn invalid_utf8_is_lossy_with_offset_warning() {
        let (text, warnings) = decode(b"abc\xFFdef\xFE", Path::new("x/report.md"));
        assert_eq!(text, "abc\u{FFFD}def\u{FFFD}");
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("x/report.md"), "{}", warnings[0]);
        assert!(warnings[0].contains("byte offset 3"), "{}", warnings[0]);
        assert!(warnings[0].contains("2 invalid"), "{}", warnings[0]);
    }

    #[test]
    fn format_from_extension_or_content() {
        assert_eq!(detect_format(Path::new("a.html"), ""), SourceFormat::Html);
        assert_eq!(
            detect_format(Path::new("a.md"), "<html>"),
            SourceFormat::Markdown
        );
        assert_eq!(
            detect_format(Path::new("a"), "  <!DOCTYPE html><html>"),
            SourceFormat::Html
        );
        assert_eq!(detect_format(Path::new("a"), "# x"), SourceFormat::Markdown);
    }
}
