//! A [`ResourceProvider`] over local copies of chart libraries: a `manifest.tsv` of
//! `URL<TAB>file` lines (written by `scripts/fetch_chart_libs.sh` from npm packages)
//! plus, for URLs not listed, a match by library name and file (so a page asking for
//! `echarts@5.4.3/dist/echarts.min.js` gets the local `echarts.min.js`). Used by the
//! tests, the bench and the `render` example; the suite itself provides resources
//! through its fetcher and cache.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use futures::future::BoxFuture;

use crate::{Resource, ResourceKind, ResourceProvider};

/// Local chart libraries behind public URLs.
#[derive(Debug, Clone)]
pub struct LocalLibraries {
    dir: PathBuf,
    exact: BTreeMap<String, PathBuf>,
}

impl LocalLibraries {
    /// Read `dir/manifest.tsv`.
    pub fn open(dir: &Path) -> Result<LocalLibraries, String> {
        let manifest = dir.join("manifest.tsv");
        let text = std::fs::read_to_string(&manifest)
            .map_err(|e| format!("{}: {e}", manifest.display()))?;
        let mut exact = BTreeMap::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let (url, file) = line.split_once('\t').ok_or_else(|| {
                format!("{}:{}: expected URL<TAB>file", manifest.display(), i + 1)
            })?;
            exact.insert(url.trim().to_string(), dir.join(file.trim()));
        }
        Ok(LocalLibraries {
            dir: dir.to_path_buf(),
            exact,
        })
    }

    /// The local file standing in for `url`, if any.
    pub fn resolve(&self, url: &str) -> Option<PathBuf> {
        let bare = url.split(['?', '#']).next().unwrap_or(url);
        if let Some(p) = self.exact.get(url).or_else(|| self.exact.get(bare)) {
            return Some(p.clone());
        }
        let u = bare.to_ascii_lowercase();
        let file = u.rsplit('/').next().unwrap_or("");
        // Find the unpacked package folder `<name>-<version>` by package name.
        let pkg = |name: &str| -> Option<PathBuf> {
            let mut best = None;
            for e in std::fs::read_dir(&self.dir).ok()?.flatten() {
                let n = e.file_name().to_string_lossy().to_string();
                if let Some(rest) = n.strip_prefix(name).and_then(|r| r.strip_prefix('-')) {
                    if rest.starts_with(|c: char| c.is_ascii_digit()) {
                        best = Some(e.path().join("package"));
                    }
                }
            }
            best
        };
        let pick = |name: &str, rel: &str| pkg(name).map(|p| p.join(rel)).filter(|p| p.is_file());
        if u.contains("highcharts") {
            let base = pkg("highcharts")?;
            if let Some(i) = u.find("/modules/") {
                return Some(base.join("modules").join(&u[i + 9..])).filter(|p| p.is_file());
            }
            let f = if file.ends_with(".js") {
                file.replace(".src.js", ".js")
            } else {
                "highcharts.js".into()
            };
            return Some(base.join(f)).filter(|p| p.is_file());
        }
        if u.contains("chartjs-") {
            return None; // plugins and adapters are not the library
        }
        if u.contains("chart.js") || file.starts_with("chart.umd") || file == "chart.min.js" {
            return pick("chart.js", "dist/chart.umd.min.js")
                .or_else(|| pick("chart.js", "dist/chart.min.js"));
        }
        if u.contains("echarts") && !u.contains("echarts-") {
            return pick("echarts", "dist/echarts.min.js");
        }
        if u.contains("plotly") {
            return pick("plotly.js-dist-min", "plotly.min.js");
        }
        if u.contains("vega-embed") {
            return pick("vega-embed", "build/vega-embed.min.js");
        }
        if u.contains("vega-lite") {
            return pick("vega-lite", "build/vega-lite.min.js");
        }
        if u.contains("/vega@")
            || u.contains("/vega/")
            || file.starts_with("vega.")
            || u.ends_with("/vega")
        {
            return pick("vega", "build/vega.min.js");
        }
        if u.contains("apexcharts") {
            return if file.ends_with(".css") {
                pick("apexcharts", "dist/apexcharts.css")
            } else {
                pick("apexcharts", "dist/apexcharts.min.js")
            };
        }
        if u.contains("d3js.org/d3")
            || u.contains("/d3@")
            || u.contains("/d3/")
            || file.starts_with("d3.")
        {
            return pick("d3", "dist/d3.min.js");
        }
        None
    }
}

impl ResourceProvider for LocalLibraries {
    fn fetch<'a>(
        &'a self,
        url: &'a str,
        kind: ResourceKind,
    ) -> BoxFuture<'a, Result<Resource, String>> {
        Box::pin(async move {
            let path = self
                .resolve(url)
                .ok_or_else(|| "not among the local chart libraries".to_string())?;
            let body = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let content_type = Some(
                match kind {
                    ResourceKind::Script => "text/javascript",
                    ResourceKind::Stylesheet => "text/css",
                    ResourceKind::Font => "font/woff2",
                }
                .to_string(),
            );
            Ok(Resource { body, content_type })
        })
    }
}
