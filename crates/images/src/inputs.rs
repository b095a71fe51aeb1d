//! Turning a report's figures into [`ImageInput`]s: local paths resolved against the
//! report folder (bounded reads), `data:` URIs decoded, http(s) URLs through the
//! shared fetcher (which applies the address rules and the size cap).

use std::path::{Path, PathBuf};

use base64::Engine;

use super::{load, ImageInput, ImageLimits};
use tvir_report::{FigureKind, Report};
use tvir_sources::Fetcher;

/// Where a figure's bytes come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FigureSource {
    Local(PathBuf),
    Remote(String),
    DataUri(String),
    /// Empty or otherwise unusable reference, with the reason.
    Invalid(String),
}

/// `%XX` escapes decoded (figure paths in Markdown are often URL-encoded).
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .filter(|h| h.iter().all(u8::is_ascii_hexdigit))
            .and_then(|h| std::str::from_utf8(h).ok());
        match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
            Some(b) if bytes[i] == b'%' => {
                out.push(b);
                i += 3;
            }
            _ => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// Classify a figure's `content` and resolve local paths against `root`. A path that
/// does not exist as written is retried percent-decoded and without a query string.
pub fn figure_source(root: &Path, content: &str) -> FigureSource {
    let c = content.trim();
    if c.is_empty() {
        return FigureSource::Invalid("empty figure path".into());
    }
    let lower = c.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        return FigureSource::Remote(c.to_string());
    }
    if lower.starts_with("//") {
        return FigureSource::Remote(format!("https:{c}"));
    }
    if lower.starts_with("data:") {
        return FigureSource::DataUri(c.to_string());
    }
    if lower.starts_with("file://") {
        return FigureSource::Invalid(format!("{c}: file:// URLs are not followed"));
    }
    let rel = c.trim_start_matches("./");
    let mut candidates = vec![rel.to_string()];
    if let Some(decoded) = percent_decode(rel) {
        candidates.push(decoded);
    }
    if let Some((path, _query)) = rel.split_once(['?', '#']) {
        candidates.push(path.to_string());
    }
    for cand in &candidates {
        let p = root.join(cand);
        if p.is_file() {
            return FigureSource::Local(p);
        }
    }
    FigureSource::Local(root.join(rel))
}

/// Bytes of a `data:` URI (base64 or percent-encoded payload).
pub fn data_uri_bytes(uri: &str) -> Result<Vec<u8>, String> {
    let rest = uri.get(5..).ok_or("malformed data URI")?;
    let (meta, payload) = rest.split_once(',').ok_or("data URI without a comma")?;
    if meta.to_ascii_lowercase().ends_with(";base64") {
        let cleaned: String = payload.chars().filter(|c| !c.is_whitespace()).collect();
        base64::engine::general_purpose::STANDARD
            .decode(cleaned.as_bytes())
            .map_err(|e| format!("bad base64 in data URI: {e}"))
    } else {
        percent_decode(payload)
            .map(String::into_bytes)
            .ok_or_else(|| "bad percent-encoding in data URI".into())
    }
}

/// A label for a data URI that does not print the whole payload.
fn data_uri_label(uri: &str) -> String {
    let head: String = uri.chars().take(40).collect();
    format!("{head}... ({} bytes)", uri.len())
}

/// File extensions the loader reads (lowercase).
pub const IMAGE_EXTENSIONS: [&str; 9] = [
    "png", "jpg", "jpeg", "webp", "gif", "bmp", "tif", "tiff", "svg",
];

/// Every file below `dir` (recursively, symlinks not followed) whose extension is
/// one of `extensions` (case-insensitive), sorted by path. Unreadable folders are
/// skipped: this lists candidates, the loader reports on each file.
pub fn image_files_under(dir: &Path, extensions: &[&str]) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_dir() => pending.push(path),
                Ok(t) if t.is_file() => {
                    let ext = path.extension().and_then(|e| e.to_str());
                    if ext.is_some_and(|e| extensions.contains(&e.to_ascii_lowercase().as_str())) {
                        files.push(path);
                    }
                }
                _ => {}
            }
        }
    }
    files.sort();
    files
}

/// Read one local image file into an input (errors become the failure reason).
pub fn file_input(path: &Path, label: &str, limits: &ImageLimits) -> ImageInput {
    ImageInput {
        label: label.to_string(),
        bytes: load::read_file_bounded(path, limits).map_err(|e| match e {
            super::ImageError::Io { message, .. } => {
                format!("cannot read {}: {message}", path.display())
            }
            other => other.to_string(),
        }),
    }
}

/// Inputs for the report's `kind: image` figures, in report order. Remote images are
/// fetched concurrently through `fetcher`; without one they fail with a reason.
pub async fn report_image_inputs(
    report: &Report,
    fetcher: Option<&Fetcher>,
    limits: &ImageLimits,
) -> Vec<ImageInput> {
    let figures: Vec<&str> = report
        .figures
        .iter()
        .filter(|f| f.kind == FigureKind::Image)
        .map(|f| f.content.as_str())
        .collect();
    let futures = figures.iter().map(|content| async move {
        let label = content.to_string();
        match figure_source(&report.root, content) {
            FigureSource::Local(path) => file_input(&path, &label, limits),
            FigureSource::DataUri(uri) => ImageInput {
                label: data_uri_label(&uri),
                bytes: data_uri_bytes(&uri),
            },
            FigureSource::Invalid(reason) => ImageInput {
                label,
                bytes: Err(reason),
            },
            FigureSource::Remote(url) => {
                let bytes = match fetcher {
                    Some(f) => f.image_bytes(&url).await.map_err(|e| e.to_string()),
                    None => Err(format!("{url}: remote images need the fetcher (offline)")),
                };
                ImageInput { label, bytes }
            }
        }
    });
    futures::future::join_all(futures).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_figure_content() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("images")).unwrap();
        std::fs::write(dir.path().join("images/a b.png"), b"x").unwrap();
        let root = dir.path();
        assert_eq!(
            figure_source(root, "./images/a%20b.png"),
            FigureSource::Local(root.join("images/a b.png"))
        );
        assert_eq!(
            figure_source(root, "images/a b.png"),
            FigureSource::Local(root.join("images/a b.png"))
        );
        assert_eq!(
            figure_source(root, "https://x.org/a.png"),
            FigureSource::Remote("https://x.org/a.png".into())
        );
        assert!(matches!(
            figure_source(root, "  "),
            FigureSource::Invalid(_)
        ));
        assert!(matches!(
            figure_source(root, "data:image/png;base64,AAAA"),
            FigureSource::DataUri(_)
        ));
        assert!(matches!(
            figure_source(root, "file:///etc/passwd"),
            FigureSource::Invalid(_)
        ));
    }

    #[test]
    fn data_uris() {
        assert_eq!(data_uri_bytes("data:image/png;base64,aGk=").unwrap(), b"hi");
        assert_eq!(
            data_uri_bytes("data:image/svg+xml,%3Csvg%3E").unwrap(),
            b"<svg>"
        );
        assert!(data_uri_bytes("data:image/png;base64,@@@").is_err());
        assert_eq!(percent_decode("a%2"), Some("a%2".into()));
    }
}
