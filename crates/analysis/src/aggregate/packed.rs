//! How a report page of the HTML summary stores its evidence (the units table and
//! the cited sources): as plain markup, or packed (deflated, base64) in an inert
//! `<script type="application/x-tvir-evidence">` that the folder's shared
//! `evidence.js` inflates in place when the page opens. On the scale bench's
//! reports a packed page is about 18 KB where its plain markup is 75 KB (10,000
//! pages: 176 MB), and in headless Chromium over `file://` its units show about
//! 62 ms after navigation against 49 ms for a plain page (medians over 30 pages,
//! `scripts/page_load_bench.mjs`); plain pages need no script at all.

use std::io::Write as _;

use base64::Engine as _;

/// The `type` of the script element holding a packed block.
pub const PACKED_TYPE: &str = "application/x-tvir-evidence";
/// The shared script that inflates packed blocks (written once per summary folder).
pub const SCRIPT_FILE: &str = "evidence.js";
/// Its text.
pub const SCRIPT: &str = include_str!("../../assets/evidence.js");

/// How report pages store their evidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EvidenceEncoding {
    /// Deflated and shown by `evidence.js` (the default).
    #[default]
    Packed,
    /// Plain markup: bigger, and readable with scripts off.
    Plain,
}

/// Appends `html` to `out` as `encoding` stores it; `record_path` is named in the
/// note a browser without scripts shows instead.
pub fn push_evidence(out: &mut String, html: &str, encoding: EvidenceEncoding, record_path: &str) {
    if encoding == EvidenceEncoding::Plain {
        out.push_str(html);
        return;
    }
    let mut z = flate2::write::ZlibEncoder::new(
        Vec::with_capacity(html.len() / 4),
        // Level 2 (zlib-rs's fast strategy): on 10,000 scale-bench pages level 9
        // took as long as writing the rest of the page, and level 1 (its quick
        // strategy) left a third more bytes.
        flate2::Compression::new(2),
    );
    // Writing to a Vec cannot fail.
    let _ = z.write_all(html.as_bytes());
    let bytes = z.finish().unwrap_or_default();
    out.push_str("<div class=\"packed-evidence\"><p class=\"unpacking\">Showing the units&hellip;</p><noscript><p class=\"warn\">The units of this page are stored compressed and need JavaScript to show. The same evidence is in <code>");
    out.push_str(&super::html::esc(record_path));
    out.push_str("</code>; <code>tvir summarize --format html --html-evidence plain</code> writes pages that need no script.</p></noscript><script type=\"");
    out.push_str(PACKED_TYPE);
    out.push_str("\">");
    base64::engine::general_purpose::STANDARD.encode_string(&bytes, out);
    out.push_str("</script></div>\n");
}

/// A page with every packed block replaced by its markup, as `evidence.js` leaves
/// it in a browser (for tests and tools reading pages without one). A block that
/// cannot be read is an error naming why.
pub fn unpack_page(page: &str) -> Result<String, String> {
    use std::io::Read as _;
    let open = "<div class=\"packed-evidence\">";
    let script = format!("<script type=\"{PACKED_TYPE}\">");
    let mut out = String::with_capacity(page.len() * 4);
    let mut rest = page;
    while let Some(at) = rest.find(open) {
        out.push_str(&rest[..at]);
        let block = &rest[at..];
        let start = block
            .find(&script)
            .ok_or("a packed block without its script")?
            + script.len();
        let len = block[start..]
            .find("</script>")
            .ok_or("a packed block without its end")?;
        let data = base64::engine::general_purpose::STANDARD
            .decode(block[start..start + len].trim())
            .map_err(|e| format!("packed block: {e}"))?;
        let mut html = String::new();
        flate2::read::ZlibDecoder::new(&data[..])
            .read_to_string(&mut html)
            .map_err(|e| format!("packed block: {e}"))?;
        out.push_str(&html);
        let end = start + len + "</script></div>\n".len();
        rest = block.get(end..).unwrap_or("");
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_evidence_unpacks_to_the_same_markup() {
        let html = "<table class=\"units\"><tr><td>f&amp;ct é 数据</td></tr></table>\n".repeat(50);
        let mut page = String::from("<body><p>head</p>");
        push_evidence(
            &mut page,
            &html,
            EvidenceEncoding::Packed,
            "a/b/report.json",
        );
        page.push_str("<p>tail</p></body>");
        assert!(!page.contains("<table"), "packed markup is not in the page");
        assert!(
            page.len() < html.len() / 4,
            "{} vs {}",
            page.len(),
            html.len()
        );
        assert!(
            page.contains("a/b/report.json"),
            "the no-script note names the record"
        );
        assert_eq!(
            unpack_page(&page).unwrap(),
            format!("<body><p>head</p>{html}<p>tail</p></body>")
        );
        let mut plain = String::new();
        push_evidence(&mut plain, &html, EvidenceEncoding::Plain, "x");
        assert_eq!(plain, html);
        let open = format!("<script type=\"{PACKED_TYPE}\">");
        let broken = page.replacen(&open, &format!("{open}!!"), 1);
        assert!(unpack_page(&broken).is_err());
    }
}
