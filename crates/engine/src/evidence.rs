//! Evidence gathered once per report and shared by its runs: every figure's bytes
//! (local, remote or inline), whether it decodes, its image reference and IQ, and
//! the text of every cited source page with how its fetch ended.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use futures::future::join_all;
use futures::StreamExt;
use serde_json::{json, Value};

use crate::engine::Engine;
use crate::figure_ops::FigureOps;
use crate::figures::{content_hash, image_ref, Encoder};
use crate::pages::FigureFailure;
use crate::render::RenderResult;
use crate::settings::{JudgeMode, Unread};
use crate::timing::{with_cpu, ReportTiming, StageTime};
use tvir_images::{ImageInput, ImageLimits, IqResult};
use tvir_report::{Figure, FigureKind, Report};
use tvir_rubric::SourceText;
use tvir_sources::PageStatus;

/// Evidence gathered once per report and shared by its runs.
pub(crate) struct Evidence {
    pub(crate) figures: Vec<FigureEvidence>,
    pub(crate) iq: IqResult,
    /// By reference idx; None when sources were not fetched (no judge, dry run).
    pub(crate) sources: Option<BTreeMap<String, SourceText>>,
    /// By reference idx: how its page fetch ended (`ok`, `refused`, `blocked`,
    /// `failed`, `unavailable`, or `no_url` / `no_reference`) and why.
    pub(crate) fetch: BTreeMap<String, (String, Option<String>)>,
    /// Charts drawn by script that no figure stands for (no browser, a library
    /// missing offline, a page that failed), with why.
    pub(crate) unrendered: Vec<crate::render::Unrendered>,
    /// The `render` block of the report's records.
    pub(crate) render: Option<crate::record::RenderRecord>,
    /// The `thumbnails` of the report's records: where each figure's picture goes,
    /// with the bytes to make it from (see [`thumbnail_records`]).
    pub(crate) thumbnails: Vec<crate::record::ThumbnailRecord>,
    /// Set when this report's fetches reached no server and neither did any other
    /// fetch of the run (see [`crate::network`]): "no network: N of N cited pages
    /// could not be reached (...)".
    pub(crate) no_network: Option<String>,
}

pub(crate) struct FigureEvidence {
    /// Why the figure is unusable (missing file, broken link, undecodable, empty path).
    pub(crate) invalid: Option<String>,
    /// Why the figure was not fetched in this run (offline, transient failure): its
    /// units are skipped, not scored 0.
    pub(crate) unavailable: Option<String>,
    /// The image reference vision requests carry (see [`crate::figures`]).
    pub(crate) data_uri: Option<String>,
}

impl Evidence {
    /// The audit of `sources` shown in unit details; `max_chars` is the rubric's
    /// cut per source (what the judge is given).
    pub(crate) fn audit(&self, sources: &[SourceText], max_chars: Option<usize>) -> Vec<Value> {
        source_audit(sources, &self.fetch, max_chars)
    }
}

impl Evidence {
    /// Why the pages `idxs` cite could not be read for a reason of this machine's,
    /// not the report's: the run reached no network, or a cited page is
    /// `unavailable` (offline and not in the cache or the sources file). The unit
    /// then fails with this reason instead of being settled as unsupported: a zero
    /// must be the report's fault. None when every unread page failed on its own
    /// (a 404, a dead host while others answered, a login wall).
    pub(crate) fn unread_on_our_side(&self, idxs: &[String]) -> Option<String> {
        if let Some(why) = &self.no_network {
            return Some(why.clone());
        }
        let mut reasons: Vec<String> = idxs
            .iter()
            .filter_map(|i| self.fetch.get(i))
            .filter(|(status, _)| status == "unavailable")
            .map(|(_, why)| why.clone().unwrap_or_else(|| "not available".into()))
            .collect();
        reasons.sort();
        reasons.dedup();
        (!reasons.is_empty()).then(|| {
            format!(
                "cited page not available in this run ({}); fill the cache with `tvir fetch` or pass --sources FILE",
                reasons.join("; ")
            )
        })
    }
}

impl FigureEvidence {
    pub(crate) fn usable(&self) -> bool {
        self.invalid.is_none() && self.unavailable.is_none()
    }
}

impl Engine {
    pub(crate) async fn gather_evidence(
        &self,
        report: &Arc<Report>,
        render: Option<&RenderResult>,
        timing: &mut ReportTiming,
    ) -> Evidence {
        let timed = |started: Instant| started.elapsed();
        let (figures, sources) = futures::join!(
            async {
                let t = Instant::now();
                let r = self.figure_evidence(report, render).await;
                (r, timed(t))
            },
            async {
                let t = Instant::now();
                let r = self.source_texts(report).await;
                (r, timed(t))
            }
        );
        let ((((figures, iq), thumbnails), images_cpu), images_wall) = figures;
        let (sources, fetch_wall) = sources;
        timing.images = StageTime::new(images_wall, images_cpu);
        timing.fetch = StageTime::new(fetch_wall, None);
        let (sources, fetch, no_network) = match sources {
            Some((s, f, n)) => (Some(s), f, n),
            None => (None, BTreeMap::new(), None),
        };
        Evidence {
            figures,
            iq,
            sources,
            fetch,
            unrendered: render.map(|r| r.unrendered.clone()).unwrap_or_default(),
            render: render.map(|r| crate::render::render_record(report, r)),
            thumbnails,
            no_network,
        }
    }

    /// Bytes of every figure (local files inside the report folder, or remote), then
    /// decodability and IQ on the blocking pool (rayon inside), from the figure facts
    /// memo when the content is known. Usable figures are registered under the image
    /// reference their requests carry; nothing is encoded here. Also returns the CPU
    /// time of that work.
    async fn figure_evidence(
        &self,
        report: &Arc<Report>,
        render: Option<&RenderResult>,
    ) -> (
        (
            (Vec<FigureEvidence>, IqResult),
            Vec<crate::record::ThumbnailRecord>,
        ),
        Option<std::time::Duration>,
    ) {
        let limits = self.settings.image_limits.clone();
        let bytes: Vec<Result<Arc<Vec<u8>>, FigureFailure>> = join_all(
            report
                .figures
                .iter()
                .map(|f| self.figure_bytes(report, f, &limits, render)),
        )
        .await
        .into_iter()
        .map(|r| r.map(Arc::new))
        .collect();
        let n = report.figures.len();
        let figures_report = report.clone();
        let want_ref = self.settings.mode != JudgeMode::NoJudge;
        let max_side = self.settings.image_size.max_side();
        let ops = self.figure_ops.clone();
        let work = move || {
            use rayon::prelude::*;
            let report = figures_report;
            let cpu_us = AtomicU64::new(0);
            // Each figure's bytes are hashed once here; the decode check, the image
            // reference and the IQ facts all take that digest.
            let (evidence, hashes): (Vec<FigureEvidence>, Vec<Option<String>>) = bytes
                .par_iter()
                .zip(report.figures.par_iter())
                .map(|(b, f)| {
                    let (e, cpu) =
                        with_cpu(|| figure_check(ops.as_ref(), b, f, want_ref, max_side));
                    if let Some(c) = cpu {
                        cpu_us.fetch_add(c.as_micros() as u64, Ordering::Relaxed);
                    }
                    e
                })
                .unzip();
            let (iq, score_cpu) = with_cpu(|| {
                let (inputs, input_hashes) = iq_inputs(&report, &bytes, &hashes);
                ops.score_hashed(&inputs, &input_hashes)
            });
            let cpu = score_cpu.map(|c| c + std::time::Duration::from_micros(cpu_us.into_inner()));
            (evidence, iq, bytes, hashes, cpu)
        };
        match tokio::task::spawn_blocking(work).await {
            Ok((evidence, iq, bytes, hashes, cpu)) => {
                let ops = self.figure_ops.clone();
                let encode: Encoder = Arc::new(move |b: &[u8], name: &str| {
                    ops.prepare(b, name, true)
                        .and_then(|u| u.ok_or_else(|| "no image produced".to_string()))
                });
                for ((e, b), f) in evidence.iter().zip(&bytes).zip(&report.figures) {
                    if let (Some(r), Ok(b)) = (&e.data_uri, b) {
                        self.images
                            .register(r, b.clone(), &f.content, encode.clone());
                    }
                }
                let thumbnails = thumbnail_records(&report.figures, &evidence, &bytes, &hashes);
                (((evidence, iq), thumbnails), cpu)
            }
            Err(e) => (
                (
                    (
                        (0..n)
                            .map(|_| FigureEvidence {
                                invalid: Some(format!("image processing crashed: {e}")),
                                unavailable: None,
                                data_uri: None,
                            })
                            .collect(),
                        IqResult {
                            images: Vec::new(),
                            duplicate_penalty: 0.0,
                            iq: 0.0,
                        },
                    ),
                    Vec::new(),
                ),
                None,
            ),
        }
    }

    async fn figure_bytes(
        &self,
        report: &Report,
        figure: &Figure,
        limits: &ImageLimits,
        render: Option<&RenderResult>,
    ) -> Result<Vec<u8>, FigureFailure> {
        if figure.render.is_some() {
            // A chart the browser drew: its PNG is in memory.
            return render
                .and_then(|r| r.pngs.get(&figure.content))
                .map(|b| b.as_ref().clone())
                .ok_or_else(|| {
                    FigureFailure::Unavailable(format!(
                        "rendered chart {} has no image in this run",
                        figure.content
                    ))
                });
        }
        let content = figure.content.trim();
        if content.is_empty() {
            return Err(FigureFailure::Broken("empty image path".into()));
        }
        if content.starts_with("http://") || content.starts_with("https://") {
            let got = match &self.pages {
                Some(p) => p.figure_bytes(content).await,
                None => Err(FigureFailure::Unavailable(
                    "remote image not fetched (no network)".into(),
                )),
            };
            // `--unread reference`: the reference's pipeline scores a remote figure
            // it could not download as an invalid figure (0, counted), whatever the
            // cause; the download error stays on its units.
            return match got {
                Err(FigureFailure::Unavailable(why))
                    if self.settings.unread == Unread::Reference =>
                {
                    Err(FigureFailure::Broken(format!(
                        "could not be downloaded: {why}"
                    )))
                }
                other => other,
            };
        }
        if content.starts_with("data:") {
            return decode_data_uri(content).map_err(FigureFailure::Broken);
        }
        read_local(&report.root, content, limits.max_file_bytes).map_err(FigureFailure::Broken)
    }

    /// Text of every reference cited by a fact or a chart, fetched once per URL.
    #[allow(clippy::type_complexity)]
    async fn source_texts(
        &self,
        report: &Report,
    ) -> Option<(
        BTreeMap<String, SourceText>,
        BTreeMap<String, (String, Option<String>)>,
        Option<String>,
    )> {
        if !self.judging() {
            return None;
        }
        let mut cited: BTreeSet<&str> = report
            .facts
            .iter()
            .flat_map(|f| f.ref_idxs.iter().map(String::as_str))
            .collect();
        cited.extend(
            report
                .figures
                .iter()
                .filter(|f| f.kind == FigureKind::Chart)
                .flat_map(|f| f.ref_idxs.iter().map(String::as_str)),
        );
        let refs: BTreeMap<&str, &tvir_report::Reference> = report
            .references
            .iter()
            .map(|r| (r.idx.as_str(), r))
            .collect();
        let urls: BTreeSet<String> = cited
            .iter()
            .filter_map(|i| refs.get(i).and_then(|r| r.url.clone()))
            .filter(|u| !tvir_report::is_uploaded_file(u))
            .collect();
        // This report's outcomes, for the run's page count and the no-network check.
        let report_tally = std::sync::Mutex::new(tvir_sources::PageTally::default());
        let watch = &self.page_watch;
        // URL -> (text, status, reason).
        let pages: BTreeMap<String, (String, String, Option<String>)> = match &self.pages {
            None => urls
                .into_iter()
                .map(|u| {
                    let why = Some("no fetcher in this run".to_string());
                    (u, (String::new(), "unavailable".into(), why))
                })
                .collect(),
            Some(p) => {
                futures::stream::iter(urls)
                    .map(|u| {
                        let report_tally = &report_tally;
                        async move {
                            watch.started();
                            let page = p.page(&u).await;
                            watch.finished(&page);
                            report_tally
                                .lock()
                                .unwrap_or_else(|p| p.into_inner())
                                .add(&page);
                            let status = page.status.as_str().to_string();
                            let mut reason = page.reason;
                            let text = if page.status == PageStatus::Ok {
                                page.text
                            } else {
                                String::new()
                            };
                            if text.trim().is_empty() && reason.is_none() {
                                reason = Some(if page.status == PageStatus::Ok {
                                    "the page has no readable text".to_string()
                                } else {
                                    format!("fetch ended {status}")
                                });
                            }
                            (u, (text, status, reason))
                        }
                    })
                    .buffer_unordered(16)
                    .collect()
                    .await
            }
        };
        let mut texts = BTreeMap::new();
        let mut fetch = BTreeMap::new();
        for idx in cited {
            let r = refs.get(idx);
            let url = r.and_then(|r| r.url.clone());
            let (text, note) = match (r, url.as_ref().and_then(|u| pages.get(u))) {
                (None, _) => (
                    String::new(),
                    (
                        "no_reference".to_string(),
                        Some(format!("no reference [{idx}] in the report")),
                    ),
                ),
                (Some(_), None) => (
                    String::new(),
                    (
                        "no_url".to_string(),
                        Some("the reference has no URL".to_string()),
                    ),
                ),
                (Some(_), Some((text, status, reason))) => {
                    (text.clone(), (status.clone(), reason.clone()))
                }
            };
            fetch.insert(idx.to_string(), note);
            texts.insert(
                idx.to_string(),
                SourceText {
                    idx: idx.to_string(),
                    url,
                    title: r.and_then(|r| r.title.clone()),
                    text,
                },
            );
        }
        let report_tally = report_tally.into_inner().unwrap_or_else(|p| p.into_inner());
        let no_network = watch.no_network(&report_tally).await;
        Some((texts, fetch, no_network))
    }
}

/// What one figure's bytes amount to: broken, not fetched, or usable (with the image
/// reference its vision requests carry); and the bytes' content hash, when there are
/// bytes.
fn figure_check(
    ops: &dyn FigureOps,
    bytes: &Result<Arc<Vec<u8>>, FigureFailure>,
    figure: &Figure,
    want_ref: bool,
    max_side: u32,
) -> (FigureEvidence, Option<String>) {
    let b = match bytes {
        Ok(b) => b,
        Err(failure) => return (figure_failure(failure), None),
    };
    let hash = content_hash(b);
    let evidence = match ops.check_hashed(b, &hash, &figure.content) {
        Err(reason) => FigureEvidence {
            invalid: Some(reason),
            unavailable: None,
            data_uri: None,
        },
        Ok(()) => FigureEvidence {
            invalid: None,
            unavailable: None,
            data_uri: want_ref.then(|| image_ref(&hash, max_side)),
        },
    };
    (evidence, Some(hash))
}

/// Where each figure's thumbnail goes (`figures/fig-N-HASH.jpg`, see
/// [`crate::record::ThumbnailRecord`]) with the bytes to make it from; a figure
/// that is broken or was not fetched gets the reason instead. The output stage
/// writes the file only when it is not there yet, so a re-run decodes nothing.
fn thumbnail_records(
    figures: &[Figure],
    evidence: &[FigureEvidence],
    bytes: &[Result<Arc<Vec<u8>>, FigureFailure>],
    hashes: &[Option<String>],
) -> Vec<crate::record::ThumbnailRecord> {
    figures
        .iter()
        .zip(evidence)
        .zip(bytes.iter().zip(hashes))
        .enumerate()
        .map(|(i, ((f, e), (b, hash)))| {
            let mut t = crate::record::ThumbnailRecord {
                unit: format!("figure:{}", i + 1),
                content: f.content.clone(),
                ..Default::default()
            };
            match (e.invalid.as_ref().or(e.unavailable.as_ref()), b, hash) {
                (Some(why), _, _) => t.reason = Some(why.clone()),
                (None, Ok(b), Some(hash)) => {
                    t.path = Some(format!(
                        "{}/fig-{}-{}.jpg",
                        crate::record::FIGURES_DIR,
                        i + 1,
                        &hash[..hash.len().min(12)]
                    ));
                    t.bytes = Some(b.clone());
                    t.hash = Some(hash.clone());
                }
                (None, _, _) => t.reason = Some("no bytes were read for this figure".into()),
            }
            t
        })
        .collect()
}

/// The evidence of a figure with no bytes.
fn figure_failure(failure: &FigureFailure) -> FigureEvidence {
    match failure {
        FigureFailure::Unavailable(reason) => FigureEvidence {
            invalid: None,
            unavailable: Some(reason.clone()),
            data_uri: None,
        },
        FigureFailure::Broken(reason) => FigureEvidence {
            invalid: Some(reason.clone()),
            unavailable: None,
            data_uri: None,
        },
    }
}

/// IQ inputs: the image figures this run could fetch (the others are skipped units),
/// each with its content hash (from `hashes`, by figure).
fn iq_inputs<'h>(
    report: &Report,
    bytes: &[Result<Arc<Vec<u8>>, FigureFailure>],
    hashes: &'h [Option<String>],
) -> (Vec<ImageInput>, Vec<Option<&'h str>>) {
    report
        .figures
        .iter()
        .zip(bytes)
        .zip(hashes)
        .filter(|((f, _), _)| f.kind == FigureKind::Image)
        .filter_map(|((f, b), h)| {
            let bytes = match b {
                Ok(b) => Ok(b.as_ref().clone()),
                Err(FigureFailure::Broken(r)) => Err(r.clone()),
                Err(FigureFailure::Unavailable(_)) => return None,
            };
            let input = ImageInput {
                label: f.content.clone(),
                bytes,
            };
            Some((input, h.as_deref()))
        })
        .unzip()
}

/// Each cited source as the unit details show it: its address and title, how much
/// text it gave and how much of it the judge was given, and how its fetch ended (`ok`, `refused`, `blocked`, `failed`,
/// `unavailable`, `no_url`, `no_reference`) with the reason when it gave none.
fn source_audit(
    sources: &[SourceText],
    fetch: &BTreeMap<String, (String, Option<String>)>,
    max_chars: Option<usize>,
) -> Vec<Value> {
    sources
        .iter()
        .map(|s| {
            let (status, reason) = match fetch.get(&s.idx) {
                Some((status, reason)) => (status.as_str(), reason.clone()),
                None => (
                    "no_reference",
                    Some(format!("no reference [{}] in the report", s.idx)),
                ),
            };
            let chars = s.text.chars().count();
            let judge_chars = if s.text.trim().is_empty() {
                0
            } else {
                max_chars.map_or(chars, |m| chars.min(m))
            };
            json!({"idx": s.idx, "url": s.url, "title": s.title, "chars": chars,
                   "judge_chars": judge_chars, "fetch": status, "reason": reason})
        })
        .collect()
}

/// Read a figure file that must lie inside the report folder, capped in size.
fn read_local(root: &Path, content: &str, cap: u64) -> Result<Vec<u8>, String> {
    let rel = content.split(['?', '#']).next().unwrap_or(content);
    let rel = percent_decode(rel);
    let rel_path = Path::new(&rel);
    if rel_path.is_absolute() {
        return Err(format!("absolute image path refused: {content}"));
    }
    let root_abs = std::fs::canonicalize(root).map_err(|e| format!("report folder: {e}"))?;
    let full = std::fs::canonicalize(root_abs.join(rel_path))
        .map_err(|_| format!("missing image file: {content}"))?;
    if !full.starts_with(&root_abs) {
        return Err(format!("image path leaves the report folder: {content}"));
    }
    let meta = std::fs::metadata(&full).map_err(|e| format!("{content}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("not a file: {content}"));
    }
    if meta.len() > cap {
        return Err(format!(
            "{content}: {} bytes exceeds the {cap}-byte image cap",
            meta.len()
        ));
    }
    std::fs::read(&full).map_err(|e| format!("{content}: {e}"))
}

fn percent_decode(s: &str) -> String {
    if !s.contains('%') {
        return s.to_string();
    }
    url::form_urlencoded::parse(format!("x={}", s.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_else(|| s.to_string())
}

fn decode_data_uri(uri: &str) -> Result<Vec<u8>, String> {
    use base64::Engine as _;
    let (head, data) = uri.split_once(',').ok_or("malformed data: URI")?;
    if !head.ends_with(";base64") {
        return Err("data: URI is not base64".into());
    }
    base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| format!("data: URI: {e}"))
}
