//! The render cache's page key: what a stored render was made from, before the
//! files and resources the page used are added.

use sha2::{Digest, Sha256};
use tvir_browser::Viewport;
use tvir_report::render::RenderPlan;

/// The key of the served page: its bytes and entry, the browser and the browser
/// stage's code (`code`), the viewport. `version` None: the key of any browser's
/// render of the page by any version of the suite (what a run without a browser
/// looks up: the latest render stored).
pub(crate) fn page_key(plan: &RenderPlan, version: Option<&str>, code: &str) -> String {
    let v: Viewport = tvir_browser::VIEWPORT;
    let mut h = Sha256::new();
    match version {
        // The browser and this suite's own detection and capture code: a render made
        // by either's other version is made again when a browser is at hand.
        Some(version) => {
            h.update(b"tvir-render 1\n");
            h.update(version.as_bytes());
            h.update(b"\n");
            h.update(code.as_bytes());
        }
        None => h.update(b"tvir-render any browser 1\n"),
    }
    h.update(format!("\n{}x{}@{}\n", v.width, v.height, v.scale).as_bytes());
    h.update(plan.entry.as_bytes());
    h.update(b"\n");
    h.update(plan.html.as_bytes());
    hex::encode(h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_render_by_other_browser_stage_code_is_not_this_codes_render() {
        let plan = RenderPlan {
            entry: "report.html".into(),
            html: "<canvas id=\"c\"></canvas>".into(),
            candidates: Vec::new(),
            probes: Vec::new(),
        };
        let v = Some("Chromium 156");
        assert_ne!(page_key(&plan, v, "0a"), page_key(&plan, v, "0b"));
        assert_eq!(page_key(&plan, v, "0a"), page_key(&plan, v, "0a"));
        // Without a browser, any version's render of the page answers.
        assert_eq!(page_key(&plan, None, "0a"), page_key(&plan, None, "0b"));
        assert_ne!(page_key(&plan, None, "0a"), page_key(&plan, v, "0a"));
        assert_eq!(tvir_browser::CODE_FINGERPRINT.len(), 16);
    }
}
