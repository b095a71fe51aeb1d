//! Fetcher throughput against a local server with fixed latency, and text extraction
//! of a large HTML page. Run: `cargo bench --bench fetch`.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use tvir_eval::sources::{extract, FetchConfig, Fetcher, PageStatus};
use tvir_eval::testing::page_server::{article_html, PageServer, PageServerOptions};

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

/// A ~2 MB article page: the fixture's boilerplate around many paragraphs, lists and
/// tables.
fn big_page() -> String {
    let article = article_html();
    let start = article.find("<article").expect("fixture has an article");
    let end = article.find("</article>").expect("fixture has an article") + "</article>".len();
    let (head, body, tail) = (&article[..start], &article[start..end], &article[end..]);
    let mut page = String::from(head);
    let mut i = 0;
    while page.len() < 2 * 1024 * 1024 {
        page.push_str(&body.replace("Lakeside", &format!("Lakeside {i}")));
        i += 1;
    }
    page.push_str(tail);
    page
}

fn extract_2mb(c: &mut Criterion) {
    let page = big_page();
    let mut group = c.benchmark_group("extract");
    group.sample_size(20);
    group.bench_function("html_2mb", |b| {
        b.iter(|| {
            let text = extract::extract(
                page.as_bytes(),
                Some("text/html; charset=utf-8"),
                Some("https://news.example/story"),
            )
            .expect("extract");
            assert!(text.text.len() > 100_000);
        })
    });
    group.finish();
}

criterion_group!(benches, fetch_200_urls, extract_2mb);
criterion_main!(benches);
