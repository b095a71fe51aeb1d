//! The report folder's own script files a page loads (`<script src="app.js">`), read
//! so that the parse sees which elements they draw charts into, as it does for
//! inline scripts. Bounded and never outside the folder: a report is untrusted.

use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

/// `src` of a `<script>` start tag.
static SCRIPT_SRC: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)<script\b[^>]*?\ssrc\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))"#).unwrap()
});

/// At most this many script files are read for one report...
const MAX_FILES: usize = 20;
/// ...each at most this large (a bigger file is a library bundle, not the report's
/// own drawing code)...
const MAX_FILE_BYTES: u64 = 2 << 20;
/// ...and together at most this much.
const MAX_TOTAL_BYTES: u64 = 8 << 20;

/// The text of each local script file `text` loads, in page order, read from the
/// report folder `root` (resolved like a figure's path). Files outside the folder
/// (by `..` or a link), missing, too large or past the limits are left out.
pub(crate) fn folder_scripts(text: &str, root: &Path) -> Vec<String> {
    if !text.contains("src") {
        return Vec::new();
    }
    let Ok(folder) = root.canonicalize() else {
        return Vec::new();
    };
    let mut seen = Vec::new();
    let mut out = Vec::new();
    let mut total = 0u64;
    for c in SCRIPT_SRC.captures_iter(text) {
        if out.len() >= MAX_FILES {
            break;
        }
        let Some(src) = (1..=3).find_map(|i| c.get(i)).map(|m| m.as_str()) else {
            continue;
        };
        let Some(path) = crate::figures::local_path(root, src) else {
            continue;
        };
        let Ok(path) = path.canonicalize() else {
            continue;
        };
        if !path.starts_with(&folder) || seen.contains(&path) {
            continue;
        }
        let size = match std::fs::metadata(&path) {
            Ok(m) if m.is_file() => m.len(),
            _ => continue,
        };
        if size > MAX_FILE_BYTES || total + size > MAX_TOTAL_BYTES {
            continue;
        }
        if let Ok(bytes) = std::fs::read(&path) {
            total += size;
            out.push(String::from_utf8_lossy(&bytes).into_owned());
            seen.push(path);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_folders_own_scripts_and_nothing_outside_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("report");
        std::fs::create_dir_all(root.join("js")).unwrap();
        std::fs::write(root.join("js/app one.js"), "drawCharts();").unwrap();
        std::fs::write(
            root.join("big.js"),
            vec![b'x'; (MAX_FILE_BYTES + 1) as usize],
        )
        .unwrap();
        std::fs::write(dir.path().join("secret.js"), "outside").unwrap();
        let html = r#"<script src="https://cdn.example.org/chart.js"></script>
<script src="js/app%20one.js?v=2"></script>
<SCRIPT type="module" SRC='./js/app one.js'></SCRIPT>
<script src=../secret.js></script>
<script src="big.js"></script>
<script src="missing.js"></script>
<script src="data:text/javascript,alert(1)"></script>"#;
        assert_eq!(
            folder_scripts(html, &root),
            vec!["drawCharts();".to_string()]
        );
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(dir.path().join("secret.js"), root.join("link.js")).unwrap();
            assert!(folder_scripts(r#"<script src="link.js"></script>"#, &root).is_empty());
        }
        assert!(folder_scripts(html, &dir.path().join("no-such-folder")).is_empty());
    }

    #[test]
    fn a_chart_drawn_only_by_a_folder_script_is_a_pseudo_visual_of_the_parse() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let html = "<html><body>\n<h1>Report</h1>\n<p>Some words.</p>\n<div id=\"trend\"></div>\n<script src=\"charts.js\"></script>\n</body></html>\n";
        std::fs::write(root.join("report.html"), html).unwrap();
        let parse = || {
            crate::parse_str(
                html,
                crate::SourceFormat::Html,
                &root.join("report.html"),
                root,
            )
        };
        assert!(parse().pseudo_visuals.is_empty(), "no script file yet");
        std::fs::write(
            root.join("charts.js"),
            "echarts.init(document.getElementById('trend')).setOption({});",
        )
        .unwrap();
        let lines: Vec<usize> = parse().pseudo_visuals.iter().map(|p| p.line).collect();
        assert_eq!(lines, vec![4]);
    }
}
