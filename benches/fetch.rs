//! Fetcher throughput against a local server with fixed latency, and text extraction
//! of a large HTML page. Run: `cargo bench --bench fetch`.

use std::time::Duration;

use criterion::measurement::{Measurement, ValueFormatter};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use tvir_sources::{extract, FetchConfig, Fetcher, PageStatus};
use tvir_testing::page_server::{article_html, PageServer, PageServerOptions};

/// 200 distinct URLs spread over 8 local servers (8 hosts x the default per-host
/// limit of 4 = 32 in flight), each answering after 50 ms.
fn fetch_200_urls(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let servers: Vec<PageServer> = runtime.block_on(async {
        let mut servers = Vec::new();
        for _ in 0..8 {
            servers.push(
                PageServer::start_with(PageServerOptions {
                    latency: Duration::from_millis(50),
                })
                .await
                .expect("server"),
            );
        }
        servers
    });
    let mut round = 0u64;
    let mut group = c.benchmark_group("fetch");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(15));
    group.bench_function("200_urls_50ms_latency_concurrency_32", |b| {
        b.iter_batched(
            || {
                round += 1;
                let urls: Vec<String> = (0..200)
                    .map(|i| servers[i % servers.len()].url(&format!("/delay/0/r{round}-p{i}")))
                    .collect();
                let config = FetchConfig {
                    allow_private: true,
                    concurrency: 32,
                    max_attempts: 1,
                    ..FetchConfig::default()
                };
                (Fetcher::new(config, None).expect("fetcher"), urls)
            },
            |(fetcher, urls)| {
                runtime.block_on(async {
                    let pages =
                        futures::future::join_all(urls.iter().map(|u| fetcher.page(u))).await;
                    assert!(pages.iter().all(|p| p.status == PageStatus::Ok));
                })
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

/// An article page of about `target` bytes: the fixture's boilerplate around many
/// copies of its article (paragraphs, lists, tables). Dense text, the worst case.
fn dense_page(target: usize) -> String {
    let article = article_html();
    let start = article.find("<article").expect("fixture has an article");
    let end = article.find("</article>").expect("fixture has an article") + "</article>".len();
    let (head, body, tail) = (&article[..start], &article[start..end], &article[end..]);
    let mut page = String::from(head);
    let mut i = 0;
    while page.len() + tail.len() < target {
        page.push_str(&body.replace("Lakeside", &format!("Lakeside {i}")));
        i += 1;
    }
    page.push_str(tail);
    page
}

/// About 2 MB shaped like a modern news page: an article of about `article_bytes`
/// inside inline scripts (framework state), styles and SVG icons that fill the rest.
fn script_heavy_page(article_bytes: usize) -> String {
    let article = dense_page(article_bytes);
    let body_at = article.find("<body>").expect("fixture has a body") + "<body>".len();
    let filler_bytes = (2 * 1024 * 1024usize).saturating_sub(article.len());
    let item =
        "{\"id\": 1, \"title\": \"headline text for a related story\", \"tags\": [\"a\", \"b\"]}, ";
    let rule = ".card-item > .title { margin: 0 4px; color: #333; } ";
    let icon = "<svg viewBox=\"0 0 24 24\"><path d=\"M12 2L2 7l10 5 10-5-10-5zm0 13l-10-5v6l10 5 10-5v-6l-10 5z\"/></svg>\n";
    let state = format!(
        "<script>window.__STATE__ = {{\"items\": [{}]}};</script>\n",
        item.repeat(filler_bytes / 2 / item.len())
    );
    let style = format!(
        "<style>{}</style>\n",
        rule.repeat(filler_bytes / 4 / rule.len())
    );
    let icons = icon.repeat(filler_bytes / 4 / icon.len());
    let mut page = String::from(&article[..body_at]);
    page.push_str(&state);
    page.push_str(&style);
    page.push_str(&icons);
    page.push_str(&article[body_at..]);
    page
}

fn extract_cases() -> Vec<(&'static str, String)> {
    vec![
        // Linear whole-page path (too large for readability).
        ("html_2mb_dense_article", dense_page(2 * 1024 * 1024)),
        // Worst case for the readability path: what is left after stripping scripts,
        // styles and SVG is just under the readability limit.
        (
            "html_2mb_script_heavy_worst_case",
            script_heavy_page(extract::READABILITY_MAX_BYTES - 8 * 1024),
        ),
        // A typical article page.
        ("html_128kb_article", dense_page(128 * 1024)),
    ]
}

fn extract_group<M: Measurement>(c: &mut Criterion<M>, group_name: &str) {
    let mut group = c.benchmark_group(group_name);
    group.sample_size(20);
    for (name, page) in extract_cases() {
        group.bench_function(format!("{name}_{}kb", page.len() / 1024), |b| {
            b.iter(|| {
                let text = extract::extract(
                    page.as_bytes(),
                    Some("text/html; charset=utf-8"),
                    Some("https://news.example/story"),
                )
                .expect("extract");
                assert!(text.text.len() > 10_000);
            })
        });
    }
    group.finish();
}

/// Wall-clock time.
fn extract_pages(c: &mut Criterion) {
    extract_group(c, "extract");
}

/// CPU time of the benchmark thread: extraction is single-threaded CPU work, and on a
/// machine shared with other builds wall time mostly measures waiting for a core.
fn extract_pages_cpu(c: &mut Criterion<ThreadCpuTime>) {
    extract_group(c, "extract_cpu");
}

pub struct ThreadCpuTime;

fn thread_cpu_nanos() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes the timespec we pass.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

impl Measurement for ThreadCpuTime {
    type Intermediate = u64;
    type Value = u64;
    fn start(&self) -> u64 {
        thread_cpu_nanos()
    }
    fn end(&self, start: u64) -> u64 {
        thread_cpu_nanos().saturating_sub(start)
    }
    fn add(&self, a: &u64, b: &u64) -> u64 {
        a + b
    }
    fn zero(&self) -> u64 {
        0
    }
    fn to_f64(&self, value: &u64) -> f64 {
        *value as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        &CpuFormatter
    }
}

struct CpuFormatter;

impl ValueFormatter for CpuFormatter {
    fn scale_values(&self, typical: f64, values: &mut [f64]) -> &'static str {
        let (factor, unit) = if typical < 1e3 {
            (1.0, "ns cpu")
        } else if typical < 1e6 {
            (1e-3, "us cpu")
        } else if typical < 1e9 {
            (1e-6, "ms cpu")
        } else {
            (1e-9, "s cpu")
        };
        values.iter_mut().for_each(|v| *v *= factor);
        unit
    }
    fn scale_throughputs(
        &self,
        _typical: f64,
        throughput: &Throughput,
        values: &mut [f64],
    ) -> &'static str {
        let per = match throughput {
            Throughput::Bytes(n) | Throughput::BytesDecimal(n) | Throughput::Elements(n) => {
                *n as f64
            }
        };
        values.iter_mut().for_each(|v| *v = per * 1e9 / *v);
        "units/s cpu"
    }
    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "ns"
    }
}

criterion_group!(benches, fetch_200_urls, extract_pages);
criterion_group! {
    name = cpu;
    config = Criterion::default().with_measurement(ThreadCpuTime);
    targets = extract_pages_cpu
}
criterion_main!(benches, cpu);
