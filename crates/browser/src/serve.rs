//! What the page may load, decided per request: files inside the report folder under
//! the synthetic origin [`ORIGIN`], scripts/styles/fonts of public hosts through the
//! caller's provider, nothing else. Pure functions; the protocol side is in `render`.

use std::net::IpAddr;
use std::path::{Component, Path, PathBuf};

use crate::ResourceKind;

/// The page's origin. `.invalid` is reserved (RFC 2606) and never resolves, so nothing
/// under it can reach a network even if interception failed; being one origin, the
/// report and the chart files it frames are same-origin (under `file://` each file is
/// its own opaque origin and a framed chart could not be inspected).
pub const ORIGIN: &str = "http://tvir-report.invalid";

/// Largest file served from the report folder.
pub const MAX_FOLDER_FILE: u64 = 64 << 20;

/// How one request is answered.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Route {
    /// A file under the report folder (relative path, checked for `..`; symlinks are
    /// checked when opened).
    Folder(String),
    /// A public http(s) resource to ask the provider for.
    Provider(ResourceKind),
    /// Refused with the reason.
    Refuse(String),
}

/// The URL of `entry` (a `/`-separated path relative to the root) under [`ORIGIN`].
pub(crate) fn entry_url(entry: &str) -> String {
    let mut u = url::Url::parse(ORIGIN).expect("origin");
    u.set_path(entry.trim_start_matches('/'));
    u.to_string()
}

/// Route a request by URL and the resource type Chromium reports (`Script`,
/// `Stylesheet`, `Font`, `Document`, …).
pub(crate) fn route(url: &str, resource_type: &str) -> Route {
    let Ok(u) = url::Url::parse(url) else {
        return Route::Refuse("not a URL".into());
    };
    if u.origin().ascii_serialization() == ORIGIN {
        let path = u.path();
        let decoded = match percent_decode(path.trim_start_matches('/')) {
            Some(p) => p,
            None => return Route::Refuse("bad path encoding".into()),
        };
        if decoded.is_empty() {
            return Route::Refuse("not a file".into());
        }
        let p = Path::new(&decoded);
        if p.components().any(|c| !matches!(c, Component::Normal(_))) {
            return Route::Refuse("path leaves the report folder".into());
        }
        return Route::Folder(decoded);
    }
    match u.scheme() {
        "http" | "https" => {}
        other => return Route::Refuse(format!("scheme {other} not allowed")),
    }
    match u.host() {
        None => return Route::Refuse("no host".into()),
        Some(url::Host::Domain(d)) => {
            let d = d.trim_end_matches('.').to_ascii_lowercase();
            if d == "localhost" || d.ends_with(".localhost") || !d.contains('.') {
                return Route::Refuse(format!("local host {d} never contacted"));
            }
        }
        Some(url::Host::Ipv4(ip)) => {
            if !public_ip(IpAddr::V4(ip)) {
                return Route::Refuse(format!("private address {ip} never contacted"));
            }
        }
        Some(url::Host::Ipv6(ip)) => {
            if !public_ip(IpAddr::V6(ip)) {
                return Route::Refuse(format!("private address {ip} never contacted"));
            }
        }
    }
    match resource_type {
        "Script" => Route::Provider(ResourceKind::Script),
        "Stylesheet" => Route::Provider(ResourceKind::Stylesheet),
        "Font" => Route::Provider(ResourceKind::Font),
        "Document" => Route::Refuse("navigation to another site".into()),
        other => Route::Refuse(format!(
            "{} from the network not allowed",
            other.to_lowercase()
        )),
    }
}

/// Whether an address is a public unicast one (not loopback, private, link-local,
/// unique-local, shared, documentation, multicast, unspecified).
pub(crate) fn public_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v) => {
            let o = v.octets();
            !(v.is_loopback()
                || v.is_private()
                || v.is_link_local()
                || v.is_unspecified()
                || v.is_broadcast()
                || v.is_multicast()
                || v.is_documentation()
                || o[0] == 0
                || (o[0] == 100 && (o[1] & 0xc0) == 64)
                || (o[0] == 198 && (o[1] & 0xfe) == 18)
                || o[0] >= 240)
        }
        IpAddr::V6(v) => {
            if let Some(m) = v.to_ipv4_mapped() {
                return public_ip(IpAddr::V4(m));
            }
            let s = v.segments();
            !(v.is_loopback()
                || v.is_unspecified()
                || v.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
                || (s[0] == 0x2001 && s[1] == 0xdb8))
        }
    }
}

fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let h = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(h, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The file for `rel` under `root`, if it exists, is a regular file and its real path
/// (symlinks resolved) stays inside the real root.
pub(crate) fn folder_file(root: &Path, rel: &str) -> Result<PathBuf, String> {
    let real_root = root
        .canonicalize()
        .map_err(|e| format!("report folder {}: {e}", root.display()))?;
    let real = root
        .join(rel)
        .canonicalize()
        .map_err(|_| "not found in the report folder".to_string())?;
    if !real.starts_with(&real_root) {
        return Err("link leaves the report folder".into());
    }
    let meta = std::fs::metadata(&real).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a file".into());
    }
    if meta.len() > MAX_FOLDER_FILE {
        return Err(format!("file over {} MB", MAX_FOLDER_FILE >> 20));
    }
    Ok(real)
}

/// Content type by file extension.
pub(crate) fn content_type(path: &str) -> &'static str {
    let ext = path.rsplit('.').next().unwrap_or("").to_ascii_lowercase();
    match ext.as_str() {
        "html" | "htm" | "xhtml" => "text/html; charset=utf-8",
        "md" | "markdown" => "text/html; charset=utf-8",
        "js" | "mjs" | "cjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "csv" => "text/csv; charset=utf-8",
        "tsv" => "text/tab-separated-values; charset=utf-8",
        "txt" => "text/plain; charset=utf-8",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "avif" => "image/avif",
        "ico" => "image/x-icon",
        "woff2" => "font/woff2",
        "woff" => "font/woff",
        "ttf" => "font/ttf",
        "otf" => "font/otf",
        "wasm" => "application/wasm",
        "xml" => "application/xml",
        "geojson" | "topojson" => "application/json",
        _ => "application/octet-stream",
    }
}

/// Whether a served document is HTML (its source is kept for the script-drawn-SVG rule).
pub(crate) fn is_html(path: &str) -> bool {
    content_type(path).starts_with("text/html")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folder_urls_stay_in_the_folder() {
        assert_eq!(
            route("http://tvir-report.invalid/charts/a%20b.html", "Document"),
            Route::Folder("charts/a b.html".into())
        );
        // The URL parser already folds `..`; an encoded one is refused here.
        assert_eq!(
            route(
                "http://tvir-report.invalid/a/..%2F..%2Fetc/passwd",
                "Document"
            ),
            Route::Refuse("path leaves the report folder".into())
        );
        assert_eq!(
            route("http://tvir-report.invalid/../../etc/passwd", "Document"),
            Route::Folder("etc/passwd".into())
        );
    }

    #[test]
    fn only_public_scripts_styles_fonts_go_to_the_provider() {
        let cdn = "https://cdn.jsdelivr.net/npm/chart.js@4";
        assert_eq!(route(cdn, "Script"), Route::Provider(ResourceKind::Script));
        assert_eq!(
            route(cdn, "Stylesheet"),
            Route::Provider(ResourceKind::Stylesheet)
        );
        assert_eq!(route(cdn, "Font"), Route::Provider(ResourceKind::Font));
        assert!(matches!(route(cdn, "XHR"), Route::Refuse(_)));
        assert!(matches!(route(cdn, "Image"), Route::Refuse(_)));
        assert!(matches!(
            route("https://example.org/", "Document"),
            Route::Refuse(_)
        ));
        for local in [
            "http://127.0.0.1:8765/x.js",
            "http://[::1]/x.js",
            "http://169.254.169.254/latest",
            "http://10.1.2.3/a.js",
            "http://192.168.0.1/a.js",
            "http://localhost/a.js",
            "http://intranet/a.js",
            "http://[::ffff:127.0.0.1]/a.js",
            "http://[fd00::1]/a.js",
        ] {
            assert!(
                matches!(route(local, "Script"), Route::Refuse(_)),
                "{local}"
            );
        }
        assert!(matches!(
            route("ftp://example.org/a.js", "Script"),
            Route::Refuse(_)
        ));
    }

    #[test]
    fn symlinks_out_of_the_folder_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.txt"), "x").unwrap();
        std::fs::write(dir.path().join("ok.html"), "<p>").unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("secret.txt"),
            dir.path().join("link.txt"),
        )
        .unwrap();
        assert!(folder_file(dir.path(), "ok.html").is_ok());
        assert_eq!(
            folder_file(dir.path(), "link.txt"),
            Err("link leaves the report folder".to_string())
        );
        assert!(folder_file(dir.path(), "missing.js").is_err());
    }

    #[test]
    fn entry_urls_are_encoded() {
        assert_eq!(
            entry_url("sub dir/report.html"),
            "http://tvir-report.invalid/sub%20dir/report.html"
        );
    }
}
