//! Figures of the HTML summary: each report's pictures (the bounded thumbnails `tvir
//! eval` wrote beside `report.json`), copied into the summary's `pictures/` folder
//! once each, named by content, however many report pages show them; the fallback
//! to the report folders of `--reports` for results written before thumbnails
//! existed; and the reason shown when there is no picture.

use std::collections::{BTreeSet, HashMap};
use std::path::{Component, Path};
use std::sync::Mutex;

use super::html::{esc, HtmlOptions};
use super::page_record::{PageRecord, PageUnit};
use crate::load::LoadedRecord;
use tvir_images::{self as images, ImageLimits};

/// A relative path that stays inside its folder (no root, no `..`).
fn is_contained_relative(p: &Path) -> bool {
    p.components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

/// A PNG thumbnail of a figure of a report, or why there is none.
pub fn thumbnail(
    report_dir: &Path,
    content: &str,
    side: u32,
    limits: &ImageLimits,
) -> Result<Vec<u8>, String> {
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
    let uri = images::to_png_data_uri(&img, side).map_err(|e| e.to_string())?;
    use base64::Engine as _;
    let b64 = uri.split_once(',').map(|(_, b)| b).unwrap_or_default();
    base64::engine::general_purpose::STANDARD
        .decode(b64)
        .map_err(|e| format!("thumbnail encoding: {e}"))
}

/// Largest thumbnail file copied into the summary (bytes; a 320-pixel JPEG of
/// `tvir eval` is far below it): the per-picture bound of the folder's size.
pub const MAX_EMBEDDED_THUMBNAIL_BYTES: u64 = 96 * 1024;

/// The summary's `pictures/` folder: every picture written once, named by its
/// content (the figure hash in the thumbnail's name, else a hash of the bytes),
/// whatever number of report pages show it.
pub(super) struct PictureFolder {
    dir: std::path::PathBuf,
    /// File name (or why it could not be written) by content key.
    written: Mutex<HashMap<String, Result<String, String>>>,
}

/// Folder of the pictures inside the summary folder.
pub const PICTURES_DIR: &str = "pictures";

impl PictureFolder {
    pub(super) fn new(summary_dir: &Path) -> Self {
        Self {
            dir: summary_dir.join(PICTURES_DIR),
            written: Mutex::new(HashMap::new()),
        }
    }

    /// Files written so far.
    pub(super) fn count(&self) -> usize {
        self.written
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .filter(|v| v.is_ok())
            .count()
    }

    /// The file name of the picture of content `key` (extension `ext`), writing
    /// the bytes `make` gives the first time the key is seen. With `link_from` (the
    /// file those bytes were read from), the picture is a hard link to it where the
    /// file system allows (the summary inside its output folder then costs no
    /// second copy of each thumbnail; a copy of the folder still holds the bytes).
    fn put(
        &self,
        key: &str,
        ext: &str,
        link_from: Option<&Path>,
        make: impl FnOnce() -> Result<Vec<u8>, String>,
    ) -> Result<String, String> {
        let mut written = self.written.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(done) = written.get(key) {
            return done.clone();
        }
        let name = format!("{key}.{ext}");
        let dest = self.dir.join(&name);
        let result = make().and_then(|bytes| {
            std::fs::create_dir_all(&self.dir)
                .and_then(|()| {
                    let linked =
                        link_from.is_some_and(|src| std::fs::hard_link(src, &dest).is_ok());
                    if linked {
                        Ok(())
                    } else {
                        std::fs::write(&dest, bytes)
                    }
                })
                .map(|()| name.clone())
                .map_err(|e| format!("picture not written to {}: {e}", self.dir.display()))
        });
        written.insert(key.to_string(), result.clone());
        result
    }
}

/// A content key for bytes without a figure hash (64-bit SipHash, hex).
fn bytes_key(bytes: &[u8]) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    format!("b{:016x}", h.finish())
}

/// The figure hash in a thumbnail name `fig-N-HASH.jpg` (12 hex digits).
fn figure_hash_of(rel: &str) -> Option<&str> {
    let name = rel.rsplit('/').next()?.strip_suffix(".jpg")?;
    let hash = name.strip_prefix("fig-")?.split_once('-')?.1;
    (hash.len() == 12 && hash.bytes().all(|b| b.is_ascii_hexdigit())).then_some(hash)
}

/// One figure of a report page: its picture (a file of the `pictures/` folder,
/// shown by the gallery and every unit of the figure), or why there is none.
pub(super) struct PagePicture {
    pub(super) unit: String,
    pub(super) content: String,
    /// The picture's address relative to the page.
    picture: Result<String, String>,
}

impl PagePicture {
    pub(super) fn picture(&self) -> String {
        match &self.picture {
            Ok(src) => format!(
                "<img class=\"pic\" src=\"{}\" alt=\"{}\" loading=\"lazy\">",
                esc(src),
                esc(&self.content)
            ),
            Err(why) => format!("<div class=\"nopic\">{}</div>", esc(why)),
        }
    }
}

/// The pictures of one report's page.
pub(super) struct ReportPictures {
    pub(super) figures: Vec<PagePicture>,
}

impl ReportPictures {
    /// The figure a unit judged: a figure unit by its name (`figure:N`), an
    /// Image Quality unit (`image:K`) by the file its detail names.
    pub(super) fn figure_of(&self, u: &PageUnit) -> Option<&PagePicture> {
        self.figures.iter().find(|f| f.unit == u.unit).or_else(|| {
            let path = u.detail.path.as_deref()?;
            u.unit
                .starts_with("image:")
                .then(|| self.figures.iter().find(|f| f.content == path))
                .flatten()
        })
    }

    /// The picture of the figure a unit judged, or nothing for other units.
    pub(super) fn of_unit_into(&self, out: &mut String, u: &PageUnit) {
        if let Some(f) = self.figure_of(u) {
            out.push_str(&f.picture());
        }
    }
}

/// A thumbnail `tvir eval` wrote beside `report.json` (`thumbnails[].path`), read
/// for the pictures folder: the path must stay inside that folder, the file be a
/// JPEG or PNG of at most [`MAX_EMBEDDED_THUMBNAIL_BYTES`]. Returns the bytes and
/// their extension.
fn stored_thumbnail(report_json: &Path, rel: &str) -> Result<(Vec<u8>, &'static str), String> {
    let dir = report_json.parent().unwrap_or(Path::new("."));
    if rel.trim().is_empty() || !is_contained_relative(Path::new(rel)) {
        return Err(format!("thumbnail {rel} leaves the report's folder"));
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
            "thumbnail {rel} is {} bytes, over the summary's bound of {MAX_EMBEDDED_THUMBNAIL_BYTES}",
            meta.len()
        ));
    }
    let bytes = std::fs::read(&path).map_err(missing)?;
    let ext = if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        "jpg"
    } else if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        "png"
    } else {
        return Err(format!("thumbnail {rel} is neither JPEG nor PNG"));
    };
    Ok((bytes, ext))
}

/// Every figure of a report with its picture: from the thumbnails `tvir eval`
/// wrote into the output folder; for results written before those existed, from
/// the report folders given with `--reports`; else the reason there is none.
/// Pictures go to `folder` (once each); `to_root` leads from the page to the
/// summary folder.
pub(super) fn report_pictures(
    r: &LoadedRecord,
    page: &PageRecord,
    opts: &HtmlOptions,
    limits: &ImageLimits,
    folder: &PictureFolder,
    to_root: &str,
) -> ReportPictures {
    let mut figures: Vec<(String, String, Result<String, String>)> = Vec::new();
    let over = |k: usize| {
        (k >= opts.max_thumbnails_per_report).then(|| {
            format!(
                "picture not shown: {} per report at most",
                opts.max_thumbnails_per_report
            )
        })
    };
    if !page.thumbnails.is_empty() {
        for (k, t) in page.thumbnails.iter().enumerate() {
            let file = match (&t.path, &t.reason, over(k)) {
                (_, _, Some(why)) => Err(why),
                (Some(rel), _, None) => match figure_hash_of(rel) {
                    // Named by the figure's hash: a picture already copied is not read again.
                    // Missing here: say so, even when another report's copy was written.
                    Some(hash)
                        if !r
                            .path
                            .parent()
                            .unwrap_or(Path::new("."))
                            .join(rel)
                            .is_file() =>
                    {
                        stored_thumbnail(&r.path, rel)
                            .and_then(|(b, _)| folder.put(hash, "jpg", None, || Ok(b)))
                    }
                    Some(hash) => {
                        let src = r.path.parent().unwrap_or(Path::new(".")).join(rel);
                        folder.put(hash, "jpg", Some(&src), || {
                            stored_thumbnail(&r.path, rel).and_then(|(b, ext)| {
                                if ext == "jpg" {
                                    Ok(b)
                                } else {
                                    Err(format!("thumbnail {rel} is not a JPEG"))
                                }
                            })
                        })
                    }
                    None => stored_thumbnail(&r.path, rel)
                        .and_then(|(b, ext)| folder.put(&bytes_key(&b), ext, None, || Ok(b))),
                },
                (None, Some(why), None) => Err(format!("no picture: {why}")),
                (None, None, None) => Err("no picture recorded".to_string()),
            };
            figures.push((t.unit.clone(), t.content.clone(), file));
        }
    } else {
        let mut seen = BTreeSet::new();
        for u in page.units.iter().filter(|u| u.unit.starts_with("figure:")) {
            // `content` when the detail has that field (whatever it holds), else `path`.
            let content = if u.detail.has_content {
                u.detail.content.as_deref()
            } else {
                u.detail.path.as_deref()
            };
            let Some(content) = content else { continue };
            if !seen.insert(u.unit.to_string()) {
                continue;
            }
            let file = match (over(figures.len()), &opts.reports_root) {
                (Some(why), _) => Err(why),
                (None, Some(root)) => thumbnail(
                    &root.join(&r.system).join(&r.task_id),
                    content,
                    opts.thumbnail_side,
                    limits,
                )
                .and_then(|png| folder.put(&bytes_key(&png), "png", None, || Ok(png))),
                (None, None) => Err(
                    "no thumbnail in the output folder (written before tvir eval made them) and no --reports folder given"
                        .into(),
                ),
            };
            figures.push((u.unit.to_string(), content.to_string(), file));
        }
    }
    let figures = figures
        .into_iter()
        .map(|(unit, content, file)| PagePicture {
            unit,
            content,
            picture: file.map(|name| format!("{to_root}{PICTURES_DIR}/{name}")),
        })
        .collect();
    ReportPictures { figures }
}

/// A figure unit's caption, from any of its units' details.
pub(super) fn figure_caption<'a>(page: &'a PageRecord, unit: &str) -> Option<&'a str> {
    page.units
        .iter()
        .filter(|u| u.unit == unit)
        .find_map(|u| u.detail.caption.as_deref())
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
    fn each_picture_is_written_once_by_content() {
        let dir = tempfile::tempdir().unwrap();
        let folder = PictureFolder::new(dir.path());
        let mut made = 0;
        for _ in 0..3 {
            let name = folder
                .put("abcdef012345", "jpg", None, || {
                    made += 1;
                    Ok(vec![0xFF, 0xD8, 0xFF])
                })
                .unwrap();
            assert_eq!(name, "abcdef012345.jpg");
        }
        assert_eq!((made, folder.count()), (1, 1));
        assert!(dir.path().join("pictures/abcdef012345.jpg").is_file());
        // From a file on the same file system: a hard link to it, no second copy.
        use std::os::unix::fs::MetadataExt;
        let source = dir.path().join("thumb.jpg");
        std::fs::write(&source, [0xFF, 0xD8, 0xFF, 1]).unwrap();
        let name = folder
            .put("0123456789ab", "jpg", Some(&source), || {
                Ok(std::fs::read(&source).unwrap())
            })
            .unwrap();
        let linked = std::fs::metadata(dir.path().join("pictures").join(name)).unwrap();
        assert_eq!(linked.ino(), std::fs::metadata(&source).unwrap().ino());
        // Where no link can be made (no such file), the bytes are written.
        let name = folder
            .put(
                "ba9876543210",
                "jpg",
                Some(&dir.path().join("gone.jpg")),
                || Ok(vec![0xFF, 0xD8, 0xFF, 2]),
            )
            .unwrap();
        assert_eq!(
            std::fs::read(dir.path().join("pictures").join(name)).unwrap(),
            [0xFF, 0xD8, 0xFF, 2]
        );
        assert_eq!(
            figure_hash_of("figures/fig-3-abcdef012345.jpg"),
            Some("abcdef012345")
        );
        assert_eq!(figure_hash_of("figures/other.jpg"), None);
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
        let (bytes, ext) = stored_thumbnail(&report, "figures/a.jpg").unwrap();
        assert_eq!((bytes.len(), ext), (6, "jpg"));
        let big = vec![0xFFu8; MAX_EMBEDDED_THUMBNAIL_BYTES as usize + 1];
        std::fs::write(dir.path().join("figures/big.jpg"), big).unwrap();
        let e = stored_thumbnail(&report, "figures/big.jpg").unwrap_err();
        assert!(e.contains("over the summary's bound"), "{e}");
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
