//! Figures on the HTML page: each report's pictures (the bounded thumbnails `tvir
//! eval` wrote beside `report.json`, embedded as data URIs once per report through
//! a CSS class that the gallery and every unit of the figure use), the fallback to
//! the report folders of `--reports` for results written before thumbnails
//! existed, and the reason shown when there is no picture.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Component, Path};

use super::html::{esc, HtmlOptions};
use crate::load::LoadedRecord;
use tvir_engine::record::{ReportRecord, UnitRecord};
use tvir_images::{self as images, ImageLimits};

/// A relative path that stays inside its folder (no root, no `..`).
fn is_contained_relative(p: &Path) -> bool {
    p.components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

/// A PNG data URI thumbnail of a figure of a report, or why there is none.
pub fn thumbnail(
    report_dir: &Path,
    content: &str,
    side: u32,
    limits: &ImageLimits,
) -> Result<String, String> {
    let lower = content.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("data:") {
        return Err("remote image (not fetched for this page)".into());
    }
    let rel = Path::new(content.trim_start_matches("./"));
    if content.trim().is_empty() || !is_contained_relative(rel) {
        return Err("path outside the report folder".into());
    }
    let dir = report_dir
        .canonicalize()
        .map_err(|e| format!("report folder: {e}"))?;
    let path = dir
        .join(rel)
        .canonicalize()
        .map_err(|e| format!("missing file: {e}"))?;
    if !path.starts_with(&dir) {
        return Err("path leaves the report folder (symlink)".into());
    }
    let meta = std::fs::metadata(&path).map_err(|e| e.to_string())?;
    if meta.len() > limits.max_file_bytes {
        return Err(format!("file larger than {} bytes", limits.max_file_bytes));
    }
    let bytes = std::fs::read(&path).map_err(|e| e.to_string())?;
    let img = images::decode(&bytes, content, limits).map_err(|e| e.to_string())?;
    images::to_png_data_uri(&img, side).map_err(|e| e.to_string())
}

/// Largest thumbnail file embedded in the page (bytes; a 320-pixel JPEG of
/// `tvir eval` is far below it): the per-picture bound of the page's size.
pub const MAX_EMBEDDED_THUMBNAIL_BYTES: u64 = 96 * 1024;

/// One figure of a report on the page: its embedded picture (a CSS class whose
/// background is the thumbnail's data URI, defined once per report and used by the
/// gallery and every unit of the figure), or why there is none.
pub(super) struct PagePicture {
    pub(super) unit: String,
    pub(super) content: String,
    picture: Result<String, String>,
}

impl PagePicture {
    pub(super) fn picture(&self) -> String {
        match &self.picture {
            Ok(class) => format!(
                "<div class=\"pic {class}\" role=\"img\" aria-label=\"{}\"></div>",
                esc(&self.content)
            ),
            Err(why) => format!("<div class=\"nopic\">{}</div>", esc(why)),
        }
    }
}

/// The pictures of one report's section and the `<style>` defining them.
pub(super) struct ReportPictures {
    pub(super) style: String,
    pub(super) figures: Vec<PagePicture>,
}

impl ReportPictures {
    /// The figure a unit judged: a figure unit by its name (`figure:N`), an
    /// Image Quality unit (`image:K`) by the file its detail names.
    pub(super) fn figure_of(&self, u: &UnitRecord) -> Option<&PagePicture> {
        self.figures.iter().find(|f| f.unit == u.unit).or_else(|| {
            let path = u.detail.get("path").and_then(|v| v.as_str())?;
            u.unit
                .starts_with("image:")
                .then(|| self.figures.iter().find(|f| f.content == path))
                .flatten()
        })
    }

    /// The picture of the figure a unit judged, or nothing for other units.
    pub(super) fn of_unit(&self, u: &UnitRecord) -> String {
        self.figure_of(u)
            .map(PagePicture::picture)
            .unwrap_or_default()
    }
}

/// A thumbnail `tvir eval` wrote beside `report.json` (`thumbnails[].path`) as a
/// data URI: the path must stay inside that folder, the file be a JPEG or PNG of at
/// most [`MAX_EMBEDDED_THUMBNAIL_BYTES`].
fn stored_thumbnail(report_json: &Path, rel: &str) -> Result<String, String> {
    use base64::Engine as _;
    let dir = report_json.parent().unwrap_or(Path::new("."));
    if rel.trim().is_empty() || !is_contained_relative(Path::new(rel)) {
        return Err(format!("thumbnail path {rel} leaves the report's folder"));
    }
    let path = dir.join(rel);
    let missing = |e: std::io::Error| {
        format!(
            "thumbnail {rel} missing from the output folder ({e}); run tvir eval again to write it"
        )
    };
    let meta = std::fs::symlink_metadata(&path).map_err(missing)?;
    if !meta.is_file() {
        return Err(format!("thumbnail {rel} is not a file"));
    }
    if meta.len() > MAX_EMBEDDED_THUMBNAIL_BYTES {
        return Err(format!(
            "thumbnail {rel} is {} bytes, over the page's bound of {MAX_EMBEDDED_THUMBNAIL_BYTES}",
            meta.len()
        ));
    }
    let bytes = std::fs::read(&path).map_err(missing)?;
    let mime = if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        "image/jpeg"
    } else if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        "image/png"
    } else {
        return Err(format!("thumbnail {rel} is neither JPEG nor PNG"));
    };
    Ok(format!(
        "data:{mime};base64,{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    ))
}

/// Every figure of a report with its picture: from the thumbnails `tvir eval`
/// wrote into the output folder; for results written before those existed, from
/// the report folders given with `--reports`; else the reason there is none.
pub(super) fn report_pictures(
    i: usize,
    r: &LoadedRecord,
    opts: &HtmlOptions,
    limits: &ImageLimits,
) -> ReportPictures {
    let rec = &r.record;
    let mut figures: Vec<(String, String, Result<String, String>)> = Vec::new();
    if !rec.thumbnails.is_empty() {
        for t in &rec.thumbnails {
            let uri = match (&t.path, &t.reason) {
                (Some(rel), _) => stored_thumbnail(&r.path, rel),
                (None, Some(why)) => Err(format!("no picture: {why}")),
                (None, None) => Err("no picture recorded".to_string()),
            };
            figures.push((t.unit.clone(), t.content.clone(), uri));
        }
    } else {
        let mut seen = BTreeSet::new();
        for u in rec.units.iter().filter(|u| u.unit.starts_with("figure:")) {
            let content = u
                .detail
                .get("content")
                .or_else(|| u.detail.get("path"))
                .and_then(|v| v.as_str());
            let Some(content) = content else { continue };
            if !seen.insert(u.unit.clone()) {
                continue;
            }
            let uri = match &opts.reports_root {
                Some(root) => thumbnail(
                    &root.join(&r.system).join(&r.task_id),
                    content,
                    opts.thumbnail_side,
                    limits,
                ),
                None => Err(
                    "no thumbnail in the output folder (written before tvir eval made them) and no --reports folder given"
                        .into(),
                ),
            };
            figures.push((u.unit.clone(), content.to_string(), uri));
        }
    }
    let mut style = String::new();
    let figures = figures
        .into_iter()
        .enumerate()
        .map(|(k, (unit, content, uri))| {
            let picture = if k >= opts.max_thumbnails_per_report {
                Err(format!(
                    "picture not embedded: {} per report at most",
                    opts.max_thumbnails_per_report
                ))
            } else {
                uri.map(|uri| {
                    let class = format!("p{i}-{k}");
                    // A data URI is base64 and ASCII punctuation only: safe in a
                    // quoted CSS string.
                    let _ = write!(style, ".{class}{{background-image:url(\"{uri}\")}}");
                    class
                })
            };
            PagePicture {
                unit,
                content,
                picture,
            }
        })
        .collect();
    if !style.is_empty() {
        style = format!("<style>{style}</style>\n");
    }
    ReportPictures { style, figures }
}

/// A figure unit's caption, from any of its units' details.
pub(super) fn figure_caption<'a>(rec: &'a ReportRecord, unit: &str) -> Option<&'a str> {
    rec.units
        .iter()
        .filter(|u| u.unit == unit)
        .find_map(|u| u.detail.get("caption").and_then(|c| c.as_str()))
        .filter(|c| !c.is_empty())
}

/// Short metric names for the figure gallery.
pub(super) fn metric_short(metric: &str) -> &str {
    match metric {
        "figure_quality" => "FQ",
        "figure_caption_quality" => "FCQ",
        "figure_context_integration" => "FCI",
        "chart_quality" => "CQ",
        "image_quality" => "IQ",
        "chart_source_consistency" => "CSC",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thumbnail_refuses_escapes() {
        let dir = tempfile::tempdir().unwrap();
        let l = ImageLimits::default();
        assert!(thumbnail(dir.path(), "../x.png", 100, &l)
            .unwrap_err()
            .contains("outside"));
        assert!(thumbnail(dir.path(), "/etc/passwd", 100, &l)
            .unwrap_err()
            .contains("outside"));
        assert!(thumbnail(dir.path(), "https://e.x/a.png", 100, &l)
            .unwrap_err()
            .contains("remote"));
        assert!(thumbnail(dir.path(), "images/none.png", 100, &l)
            .unwrap_err()
            .contains("missing"));
    }

    #[test]
    fn stored_thumbnails_are_bounded_and_contained() {
        let dir = tempfile::tempdir().unwrap();
        let report = dir.path().join("report.json");
        std::fs::create_dir_all(dir.path().join("figures")).unwrap();
        std::fs::write(
            dir.path().join("figures/a.jpg"),
            [0xFF, 0xD8, 0xFF, 0xE0, 1, 2],
        )
        .unwrap();
        let uri = stored_thumbnail(&report, "figures/a.jpg").unwrap();
        assert!(uri.starts_with("data:image/jpeg;base64,"), "{uri}");
        let big = vec![0xFFu8; MAX_EMBEDDED_THUMBNAIL_BYTES as usize + 1];
        std::fs::write(dir.path().join("figures/big.jpg"), big).unwrap();
        let e = stored_thumbnail(&report, "figures/big.jpg").unwrap_err();
        assert!(e.contains("over the page's bound"), "{e}");
        std::fs::write(dir.path().join("figures/t.jpg"), b"<svg/>").unwrap();
        assert!(stored_thumbnail(&report, "figures/t.jpg")
            .unwrap_err()
            .contains("neither"));
        let e = stored_thumbnail(&report, "figures/gone.jpg").unwrap_err();
        assert!(e.contains("missing from the output folder"), "{e}");
        assert!(stored_thumbnail(&report, "../x.jpg")
            .unwrap_err()
            .contains("leaves"));
        assert!(stored_thumbnail(&report, "/etc/passwd")
            .unwrap_err()
            .contains("leaves"));
    }
}
