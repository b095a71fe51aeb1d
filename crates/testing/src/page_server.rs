//! A real HTTP server on 127.0.0.1 serving fixture pages, for the fetcher's tests and
//! benches and for any test that needs cited pages (e.g. `tvir eval` end to end).
//!
//! Fixed routes (all `GET`):
//! - `/article.html` news article wrapped in navigation, cookie banner, aside, footer,
//!   scripts and styles; `/gzip.html` the same, gzip-encoded
//! - `/gbk.html` a Chinese page in GBK (charset in the header); `/gbk-meta.html` the
//!   same bytes with the charset only in `<meta>`
//! - `/doc.pdf` a small generated PDF ([`tiny_pdf`])
//! - `/captcha.html`, `/soft404.html` (status 200), `/login.html`, `/paywall.html`,
//!   `/denied` (403), `/missing` (404), `/empty.html`
//! - `/plain.txt`, `/data.json`, `/data.xml`, `/binary.bin` (octet-stream),
//!   `/image.png` (a 4x4 PNG)
//! - `/redirect/N` N redirects ending at `/article.html`; `/redirect-to?url=U` one
//!   redirect to U
//! - `/slow?ms=N` answers after N ms; `/delay/N/anything` a short page after N ms
//! - `/endless` an HTML body that never ends; `/big?bytes=N` N bytes with a length
//! - `/flaky/KEY?fail=N` 503 for the first N requests per KEY, then the article
//! - `/ua` echoes the request's User-Agent
//!
//! Extra pages can be added at run time with [`PageServer::add_page`].

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;

const ARTICLE: &str = include_str!("../../../tests/fixtures/pages/article.html");
const GBK_PAGE: &str = include_str!("../../../tests/fixtures/pages/gbk.html");
const CAPTCHA: &str = include_str!("../../../tests/fixtures/pages/captcha.html");
const SOFT_404: &str = include_str!("../../../tests/fixtures/pages/soft404.html");
const LOGIN: &str = include_str!("../../../tests/fixtures/pages/login.html");
const PAYWALL: &str = include_str!("../../../tests/fixtures/pages/paywall.html");
const DENIED: &str = include_str!("../../../tests/fixtures/pages/denied.html");

/// Text written into `/doc.pdf`.
pub const PDF_LINES: &[&str] = &[
    "Lakeside county energy office annual summary",
    "Installed solar capacity reached 835 megawatts in 2024.",
];

#[derive(Debug, Clone, Default)]
pub struct PageServerOptions {
    /// Added before every answer (benchmarks of a slow remote site).
    pub latency: Duration,
}

#[derive(Default)]
struct ServerState {
    latency: Duration,
    hits: AtomicUsize,
    hits_by_path: Mutex<HashMap<String, usize>>,
    extra: Mutex<HashMap<String, (String, Vec<u8>)>>,
}

/// A running server; stops when dropped.
pub struct PageServer {
    addr: SocketAddr,
    state: Arc<ServerState>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
}

impl PageServer {
    /// Bind 127.0.0.1 on a free port and serve. Needs a running tokio runtime.
    pub async fn start() -> std::io::Result<Self> {
        Self::start_with(PageServerOptions::default()).await
    }

    pub async fn start_with(options: PageServerOptions) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(ServerState {
            latency: options.latency,
            ..ServerState::default()
        });
        let app = Router::new().fallback(handle).with_state(state.clone());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = rx.await;
                })
                .await;
        });
        Ok(Self {
            addr,
            state,
            shutdown: Some(tx),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT` + `path` (which starts with `/`).
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// Requests received so far, all paths.
    pub fn hits(&self) -> usize {
        self.state.hits.load(Ordering::SeqCst)
    }

    /// Requests received for one path (without the query).
    pub fn hits_for(&self, path: &str) -> usize {
        self.state
            .hits_by_path
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(path)
            .copied()
            .unwrap_or(0)
    }

    /// Serve `body` at `path` with status 200 and `content_type`.
    pub fn add_page(&self, path: &str, content_type: &str, body: impl Into<Vec<u8>>) {
        self.state
            .extra
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(path.to_string(), (content_type.to_string(), body.into()));
    }
}

impl Drop for PageServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

fn html(body: impl Into<Body>) -> Response {
    typed(StatusCode::OK, "text/html; charset=utf-8", body)
}

fn typed(status: StatusCode, content_type: &str, body: impl Into<Body>) -> Response {
    let mut response = Response::new(body.into());
    *response.status_mut() = status;
    if let Ok(value) = HeaderValue::from_str(content_type) {
        response.headers_mut().insert(header::CONTENT_TYPE, value);
    }
    response
}

fn redirect(location: &str) -> Response {
    let mut response = StatusCode::FOUND.into_response();
    if let Ok(value) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    response
}

fn query_param(query: Option<&str>, name: &str) -> Option<String> {
    url::form_urlencoded::parse(query?.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

async fn handle(State(state): State<Arc<ServerState>>, request: Request) -> Response {
    let path = request.uri().path().to_string();
    let query = request.uri().query().map(str::to_string);
    state.hits.fetch_add(1, Ordering::SeqCst);
    let count = {
        let mut by_path = state.hits_by_path.lock().unwrap_or_else(|p| p.into_inner());
        let n = by_path.entry(path.clone()).or_insert(0);
        *n += 1;
        *n
    };
    if !state.latency.is_zero() {
        tokio::time::sleep(state.latency).await;
    }
    let extra = state
        .extra
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&path)
        .cloned();
    if let Some((content_type, body)) = extra {
        return typed(StatusCode::OK, &content_type, body);
    }
    let q = query.as_deref();
    match path.as_str() {
        "/article.html" => html(ARTICLE),
        "/gzip.html" => {
            let mut response = html(gzip(ARTICLE.as_bytes()));
            response
                .headers_mut()
                .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
            response
        }
        "/gbk.html" => typed(StatusCode::OK, "text/html; charset=gbk", gbk_bytes()),
        "/gbk-meta.html" => typed(StatusCode::OK, "text/html", gbk_bytes()),
        "/doc.pdf" => typed(StatusCode::OK, "application/pdf", tiny_pdf(PDF_LINES)),
        "/captcha.html" => html(CAPTCHA),
        "/soft404.html" => html(SOFT_404),
        "/login.html" => html(LOGIN),
        "/paywall.html" => html(PAYWALL),
        "/denied" => typed(StatusCode::FORBIDDEN, "text/html", DENIED),
        "/missing" => typed(StatusCode::NOT_FOUND, "text/html", "<h1>Not Found</h1>"),
        "/empty.html" => html("<html><head></head><body></body></html>"),
        "/plain.txt" => typed(
            StatusCode::OK,
            "text/plain; charset=utf-8",
            "Plain text source: capacity 835 MW.\n",
        ),
        "/data.json" => typed(
            StatusCode::OK,
            "application/json",
            r#"{"county": "Lakeside", "capacity_mw": 835}"#,
        ),
        "/data.xml" => typed(
            StatusCode::OK,
            "application/xml",
            r#"<?xml version="1.0" encoding="utf-8"?><capacity year="2024">835</capacity>"#,
        ),
        "/binary.bin" => typed(
            StatusCode::OK,
            "application/octet-stream",
            vec![0u8, 159, 146, 150, 0, 1, 2, 3],
        ),
        "/image.png" => typed(StatusCode::OK, "image/png", tiny_png()),
        "/ua" => {
            let ua = request
                .headers()
                .get(header::USER_AGENT)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string();
            typed(StatusCode::OK, "text/plain", ua)
        }
        "/redirect-to" => match query_param(q, "url") {
            Some(target) => redirect(&target),
            None => StatusCode::BAD_REQUEST.into_response(),
        },
        "/slow" => {
            let ms = query_param(q, "ms")
                .and_then(|v| v.parse().ok())
                .unwrap_or(5000);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            html(ARTICLE)
        }
        "/endless" => {
            let chunk = Bytes::from("<p>".to_string() + &"filler text ".repeat(700) + "</p>\n");
            let stream =
                futures::stream::repeat_with(move || Ok::<_, std::io::Error>(chunk.clone()));
            html(Body::from_stream(stream))
        }
        "/big" => {
            let n = query_param(q, "bytes")
                .and_then(|v| v.parse().ok())
                .unwrap_or(1024);
            typed(StatusCode::OK, "text/plain", vec![b'a'; n])
        }
        _ => {
            if let Some(rest) = path.strip_prefix("/redirect/") {
                return match rest.parse::<u32>() {
                    Ok(0) | Ok(1) => redirect("/article.html"),
                    Ok(n) => redirect(&format!("/redirect/{}", n - 1)),
                    Err(_) => StatusCode::BAD_REQUEST.into_response(),
                };
            }
            if let Some(rest) = path.strip_prefix("/delay/") {
                let ms: u64 = rest
                    .split('/')
                    .next()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                return html(format!(
                    "<html><head><title>Delayed page {path}</title></head><body><article>\
                     <h1>Delayed page</h1><p>{}</p></article></body></html>",
                    "This page answers after a fixed delay so fetch throughput can be measured. "
                        .repeat(4)
                ));
            }
            if path.starts_with("/flaky/") {
                let fail: usize = query_param(q, "fail")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(1);
                if count <= fail {
                    return typed(StatusCode::SERVICE_UNAVAILABLE, "text/plain", "try again");
                }
                return html(ARTICLE);
            }
            typed(StatusCode::NOT_FOUND, "text/plain", "no such fixture")
        }
    }
}

/// The GBK fixture page as GBK bytes.
pub fn gbk_bytes() -> Vec<u8> {
    encoding_rs::GBK.encode(GBK_PAGE).0.into_owned()
}

/// The boilerplate-wrapped article fixture (UTF-8 HTML).
pub fn article_html() -> &'static str {
    ARTICLE
}

fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    // Writing to a Vec cannot fail.
    let _ = encoder.write_all(data);
    encoder.finish().unwrap_or_default()
}

fn tiny_png() -> Vec<u8> {
    let img = image::RgbImage::from_fn(4, 4, |x, y| {
        image::Rgb([(x * 60) as u8, (y * 60) as u8, 128])
    });
    let mut out = std::io::Cursor::new(Vec::new());
    let _ = img.write_to(&mut out, image::ImageFormat::Png);
    out.into_inner()
}

/// A valid one-page PDF showing `lines` in Helvetica, with a correct cross-reference
/// table (so strict parsers accept it).
pub fn tiny_pdf(lines: &[&str]) -> Vec<u8> {
    let escape = |s: &str| {
        s.chars()
            .filter(|c| c.is_ascii() && !c.is_ascii_control())
            .flat_map(|c| match c {
                '(' | ')' | '\\' => vec!['\\', c],
                c => vec![c],
            })
            .collect::<String>()
    };
    let mut content = String::from("BT /F1 12 Tf 72 720 Td 16 TL\n");
    for line in lines {
        content.push_str(&format!("({}) Tj T*\n", escape(line)));
    }
    content.push_str("ET");
    let objects = [
        "<< /Type /Catalog /Pages 2 0 R >>".to_string(),
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_string(),
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R \
         /Resources << /Font << /F1 5 0 R >> >> >>"
            .to_string(),
        format!(
            "<< /Length {} >>\nstream\n{}\nendstream",
            content.len(),
            content
        ),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
            .to_string(),
    ];
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    for (i, object) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n{}\nendobj\n", i + 1, object).as_bytes());
    }
    let xref_at = out.len();
    out.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
    );
    for offset in offsets {
        out.extend_from_slice(format!("{offset:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{}\n%%EOF\n",
            objects.len() + 1,
            xref_at
        )
        .as_bytes(),
    );
    out
}
