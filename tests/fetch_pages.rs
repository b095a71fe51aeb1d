//! The fetcher against a real HTTP server on 127.0.0.1 serving fixture pages.

use std::time::Duration;

use tvir_sources::{Backend, FetchConfig, FetchError, Fetcher, PageOrigin, PageStatus};
use tvir_store::Store;
use tvir_testing::page_server::PageServer;

/// Local servers need `allow_private`; one attempt keeps failure tests fast.
fn local_config() -> FetchConfig {
    FetchConfig {
        allow_private: true,
        max_attempts: 1,
        total_timeout: Duration::from_secs(10),
        ..FetchConfig::default()
    }
}

fn fetcher(config: FetchConfig) -> Fetcher {
    Fetcher::new(config, None).expect("fetcher")
}

#[tokio::test]
async fn html_article_loses_boilerplate_and_keeps_structure() {
    let server = PageServer::start().await.unwrap();
    let page = fetcher(local_config())
        .page(&server.url("/article.html"))
        .await;
    assert_eq!(page.status, PageStatus::Ok, "{page:?}");
    let text = &page.text;
    for kept in [
        "rose from 410 megawatts",
        "grant budget is nearly spent",
        "Where the new capacity came from",
        "Household rooftops: 198 megawatts",
        "2024",
        "835",
        "17%",
        "substations in the northern districts",
    ] {
        assert!(text.contains(kept), "missing {kept:?} in:\n{text}");
    }
    for dropped in [
        "analyticsQueue",
        "font-family",
        "Accept all cookies",
        "Privacy policy",
        "All rights reserved",
        "Ferry timetable",
        "Weather",
    ] {
        assert!(
            !text.contains(dropped),
            "kept boilerplate {dropped:?} in:\n{text}"
        );
    }
    assert_eq!(
        page.content_type.as_deref(),
        Some("text/html; charset=utf-8")
    );
    assert_eq!(page.reason, None);
    assert!(!page.from_cache);
}

#[tokio::test]
async fn pdf_text_is_extracted() {
    let server = PageServer::start().await.unwrap();
    let page = fetcher(local_config()).page(&server.url("/doc.pdf")).await;
    assert_eq!(page.status, PageStatus::Ok, "{page:?}");
    assert!(page.text.contains("835 megawatts"), "{:?}", page.text);
    assert!(
        page.text.contains("energy office annual summary"),
        "{:?}",
        page.text
    );
}

#[tokio::test]
async fn redirect_chains_are_followed_up_to_five() {
    let server = PageServer::start().await.unwrap();
    let f = fetcher(local_config());
    let page = f.page(&server.url("/redirect/5")).await;
    assert_eq!(page.status, PageStatus::Ok, "{page:?}");
    assert_eq!(page.final_url, Some(server.url("/article.html")));
    let page = f.page(&server.url("/redirect/6")).await;
    assert_eq!(page.status, PageStatus::Failed);
    assert_eq!(
        page.reason.as_deref(),
        Some("too many redirects (more than 5)")
    );
    assert_eq!(server.hits_for("/article.html"), 1);
}

#[tokio::test]
async fn private_addresses_are_refused_without_any_request() {
    let server = PageServer::start().await.unwrap();
    let f = fetcher(FetchConfig {
        max_attempts: 1,
        ..FetchConfig::default()
    });
    for url in [
        server.url("/article.html"),
        format!("http://localhost:{}/article.html", server.addr().port()),
        format!("http://[::1]:{}/article.html", server.addr().port()),
        "http://169.254.169.254/latest/meta-data/".to_string(),
        "http://10.1.2.3/internal".to_string(),
        "http://192.168.0.1/".to_string(),
        "http://[fd00::1]/".to_string(),
        "http://0.0.0.0/".to_string(),
    ] {
        let page = f.page(&url).await;
        assert_eq!(page.status, PageStatus::Refused, "{url}: {page:?}");
        assert!(page.text.is_empty());
        assert!(
            page.reason.as_deref().is_some_and(|r| !r.is_empty()),
            "{url}"
        );
    }
    let page = f.page("file:///etc/passwd").await;
    assert_eq!(page.status, PageStatus::Refused);
    assert_eq!(
        page.reason.as_deref(),
        Some("scheme `file` is not allowed (only http and https)")
    );
    let metadata = f.page("http://169.254.169.254/latest/meta-data/").await;
    assert_eq!(
        metadata.reason.as_deref(),
        Some("host 169.254.169.254 is a link-local address (169.254.169.254)")
    );
    assert_eq!(server.hits(), 0, "a refused URL reached the server");
    let image = f.image_bytes(&server.url("/image.png")).await;
    assert!(
        matches!(image, Err(FetchError::Refused { .. })),
        "{image:?}"
    );
    assert_eq!(server.hits(), 0);
}

#[tokio::test]
async fn redirects_to_private_addresses_are_refused() {
    let server = PageServer::start().await.unwrap();
    let internal = PageServer::start().await.unwrap();
    // Only the first server is trusted; everything private it redirects to is not.
    let f = fetcher(FetchConfig {
        max_attempts: 1,
        exempt_addrs: vec![server.addr()],
        ..FetchConfig::default()
    });
    let ok = f.page(&server.url("/redirect/2")).await;
    assert_eq!(
        ok.status,
        PageStatus::Ok,
        "exempt server should be reachable: {ok:?}"
    );
    for target in [
        internal.url("/article.html"),
        format!("http://localhost:{}/article.html", internal.addr().port()),
        "http://169.254.169.254/latest/meta-data/iam/".to_string(),
        "http://[::ffff:127.0.0.1]/".to_string(),
        "gopher://example.com/".to_string(),
    ] {
        let url = format!(
            "{}?url={}",
            server.url("/redirect-to"),
            url::form_urlencoded::byte_serialize(target.as_bytes()).collect::<String>()
        );
        let page = f.page(&url).await;
        assert_eq!(page.status, PageStatus::Refused, "{target}: {page:?}");
        assert!(page.text.is_empty());
    }
    assert_eq!(internal.hits(), 0, "a redirect reached the private server");
}

#[tokio::test]
async fn resolver_refuses_names_that_resolve_to_private_addresses() {
    use reqwest::dns::Resolve;
    use tvir_sources::address::{Refusal, SafeResolver};
    let name: reqwest::dns::Name = "localhost".parse().unwrap();
    let err = match SafeResolver.resolve(name).await {
        Ok(addrs) => panic!("resolved: {:?}", addrs.collect::<Vec<_>>()),
        Err(err) => err,
    };
    let refusal = err.downcast_ref::<Refusal>().expect("a Refusal");
    assert!(matches!(refusal, Refusal::Resolved { host, .. } if host == "localhost"));
    assert!(refusal.to_string().contains("loopback"), "{refusal}");
}

#[tokio::test]
async fn slow_responses_time_out() {
    let server = PageServer::start().await.unwrap();
    let f = fetcher(FetchConfig {
        total_timeout: Duration::from_millis(300),
        ..local_config()
    });
    let page = f.page(&server.url("/slow?ms=3000")).await;
    assert_eq!(page.status, PageStatus::Failed, "{page:?}");
    assert!(
        page.reason.as_deref().unwrap().starts_with("timed out"),
        "{page:?}"
    );
}

#[tokio::test]
async fn endless_and_oversized_bodies_hit_the_cap() {
    let server = PageServer::start().await.unwrap();
    let f = fetcher(FetchConfig {
        page_cap_bytes: 64 * 1024,
        ..local_config()
    });
    let page = f.page(&server.url("/endless")).await;
    assert_eq!(page.status, PageStatus::Failed, "{page:?}");
    assert_eq!(
        page.reason.as_deref(),
        Some("body larger than the 65536-byte cap")
    );
    // Declared length over the cap: refused before reading.
    let page = f.page(&server.url("/big?bytes=100000")).await;
    assert_eq!(page.status, PageStatus::Failed);
    let page = f.page(&server.url("/big?bytes=1000")).await;
    assert_eq!(page.status, PageStatus::Ok);
}

#[tokio::test]
async fn gzip_bodies_are_decoded() {
    let server = PageServer::start().await.unwrap();
    let f = fetcher(local_config());
    let zipped = f.page(&server.url("/gzip.html")).await;
    let plain = f.page(&server.url("/article.html")).await;
    assert_eq!(zipped.status, PageStatus::Ok, "{zipped:?}");
    assert_eq!(zipped.text, plain.text);
}

#[tokio::test]
async fn gbk_pages_are_decoded_from_header_or_meta() {
    let server = PageServer::start().await.unwrap();
    let f = fetcher(local_config());
    for path in ["/gbk.html", "/gbk-meta.html"] {
        let page = f.page(&server.url(path)).await;
        assert_eq!(page.status, PageStatus::Ok, "{path}: {page:?}");
        assert!(
            page.text.contains("全市光伏装机容量达到八百三十五兆瓦"),
            "{path}: {}",
            page.text
        );
        assert!(
            !page.text.contains('\u{fffd}'),
            "{path}: replacement characters"
        );
    }
}

#[tokio::test]
async fn blocked_pages_never_carry_text() {
    let server = PageServer::start().await.unwrap();
    let f = fetcher(local_config());
    for (path, expected) in [
        ("/captcha.html", "captcha or bot check"),
        ("/soft404.html", "soft 404"),
        ("/login.html", "login wall"),
        ("/paywall.html", "paywall"),
        ("/denied", "access denied"),
    ] {
        let page = f.page(&server.url(path)).await;
        assert_eq!(page.status, PageStatus::Blocked, "{path}: {page:?}");
        assert!(page.text.is_empty(), "{path}");
        let reason = page.reason.unwrap_or_default();
        assert!(reason.contains(expected), "{path}: {reason}");
    }
}

#[tokio::test]
async fn content_types_and_http_errors() {
    let server = PageServer::start().await.unwrap();
    let f = fetcher(local_config());
    let plain = f.page(&server.url("/plain.txt")).await;
    assert_eq!(plain.text, "Plain text source: capacity 835 MW.");
    let json = f.page(&server.url("/data.json")).await;
    assert_eq!(json.text, r#"{"county": "Lakeside", "capacity_mw": 835}"#);
    let xml = f.page(&server.url("/data.xml")).await;
    assert!(xml.text.contains("<capacity year=\"2024\">835</capacity>"));
    let binary = f.page(&server.url("/binary.bin")).await;
    assert_eq!(binary.status, PageStatus::Failed);
    assert!(
        binary
            .reason
            .as_deref()
            .unwrap()
            .starts_with("unsupported content type"),
        "{binary:?}"
    );
    let missing = f.page(&server.url("/missing")).await;
    assert_eq!(missing.status, PageStatus::Failed);
    assert_eq!(missing.reason.as_deref(), Some("HTTP 404 Not Found"));
    let empty = f.page(&server.url("/empty.html")).await;
    assert_eq!(empty.status, PageStatus::Failed);
    let closed = f.page("http://127.0.0.1:9/").await;
    assert_eq!(closed.status, PageStatus::Failed);
    assert!(
        closed
            .reason
            .as_deref()
            .unwrap()
            .starts_with("connection failed"),
        "{closed:?}"
    );
}

#[tokio::test]
async fn transient_errors_are_retried() {
    let server = PageServer::start().await.unwrap();
    let f = fetcher(FetchConfig {
        max_attempts: 3,
        ..local_config()
    });
    let page = f.page(&server.url("/flaky/a?fail=2")).await;
    assert_eq!(page.status, PageStatus::Ok, "{page:?}");
    assert_eq!(server.hits_for("/flaky/a"), 3);
    let single = fetcher(local_config());
    let page = single.page(&server.url("/flaky/b?fail=1")).await;
    assert_eq!(page.status, PageStatus::Failed);
    assert_eq!(page.reason.as_deref(), Some("HTTP 503 Service Unavailable"));
}

#[tokio::test]
async fn sends_a_browser_user_agent() {
    let server = PageServer::start().await.unwrap();
    let page = fetcher(local_config()).page(&server.url("/ua")).await;
    assert!(page.text.starts_with("Mozilla/5.0"), "{page:?}");
}

#[tokio::test]
async fn concurrent_requests_for_one_page_fetch_once() {
    let server = PageServer::start().await.unwrap();
    let f = fetcher(local_config());
    let base = server.url("/slow?ms=200");
    let variants = [
        base.clone(),
        format!("{base}#section-2"),
        format!("{base}&utm_source=newsletter"),
        format!("  {base}  "),
    ];
    let calls = (0..24).map(|i| {
        let f = f.clone();
        let url = variants[i % variants.len()].clone();
        async move { f.page(&url).await }
    });
    let pages = futures::future::join_all(calls).await;
    assert!(pages.iter().all(|p| p.status == PageStatus::Ok));
    assert_eq!(server.hits_for("/slow"), 1);
    // Each caller gets its own spelling back.
    assert_eq!(pages[1].url, variants[1]);
}

#[tokio::test]
async fn cache_is_shared_across_fetchers_and_refreshable() {
    let server = PageServer::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("cache.sqlite");
    let url = server.url("/article.html");
    let first = Fetcher::new(local_config(), Some(Store::open(&db).unwrap())).unwrap();
    let fresh = first.page(&url).await;
    assert!(!fresh.from_cache);
    let missing = first.page(&server.url("/missing")).await;
    assert_eq!(missing.status, PageStatus::Failed);

    // A second run (new fetcher, same file): both come from the cache.
    let second = Fetcher::new(local_config(), Some(Store::open(&db).unwrap())).unwrap();
    let (cached, origin) = second.page_with_origin(&url).await;
    assert_eq!(origin, PageOrigin::Cache);
    assert!(cached.from_cache);
    assert_eq!(cached.text, fresh.text);
    assert_eq!(cached.final_url, fresh.final_url);
    let missing_again = second.page(&server.url("/missing")).await;
    assert!(missing_again.from_cache);
    assert_eq!(missing_again.reason, missing.reason);
    assert_eq!(server.hits_for("/article.html"), 1);
    assert_eq!(server.hits_for("/missing"), 1);

    // Failures expire quickly; pages with text do not.
    let expired = Fetcher::new(
        FetchConfig {
            failure_ttl: Duration::ZERO,
            ..local_config()
        },
        Some(Store::open(&db).unwrap()),
    )
    .unwrap();
    expired.page(&server.url("/missing")).await;
    expired.page(&url).await;
    assert_eq!(server.hits_for("/missing"), 2);
    assert_eq!(server.hits_for("/article.html"), 1);

    // --refresh-sources: fetched again, once per run.
    let refresh = Fetcher::new(
        FetchConfig {
            refresh: true,
            ..local_config()
        },
        Some(Store::open(&db).unwrap()),
    )
    .unwrap();
    assert!(!refresh.page(&url).await.from_cache);
    assert!(refresh.page(&url).await.from_cache);
    assert_eq!(server.hits_for("/article.html"), 2);

    // The cache row holds what the issue lists.
    let row = refresh
        .store()
        .with_conn(|conn| tvir_store::pages::get(conn, &tvir_sources::normalize_url(&url)))
        .unwrap()
        .unwrap();
    assert_eq!(row.status, "ok");
    assert_eq!(row.final_url.as_deref(), Some(url.as_str()));
    assert_eq!(
        row.content_type.as_deref(),
        Some("text/html; charset=utf-8")
    );
    assert_eq!(
        row.size,
        Some(tvir_testing::page_server::article_html().len() as u64)
    );
    assert!(row.fetched_at > 1_700_000_000);
    assert_eq!(row.error, None);
}

#[tokio::test]
async fn offline_uses_only_cache_and_sources_file() {
    let server = PageServer::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("cache.sqlite");
    let cached_url = server.url("/article.html");
    Fetcher::new(local_config(), Some(Store::open(&db).unwrap()))
        .unwrap()
        .page(&cached_url)
        .await;
    let sources = dir.path().join("sources.jsonl");
    std::fs::write(
        &sources,
        format!(
            "{}\n",
            serde_json::json!({"url": server.url("/plain.txt#x"), "text": "pre-fetched text"})
        ),
    )
    .unwrap();
    let hits_before = server.hits();
    let offline = Fetcher::new(
        FetchConfig {
            offline: true,
            sources_file: Some(sources.clone()),
            ..local_config()
        },
        Some(Store::open(&db).unwrap()),
    )
    .unwrap();
    let cached = offline.page(&cached_url).await;
    assert_eq!(cached.status, PageStatus::Ok);
    assert!(cached.from_cache);
    let (from_file, origin) = offline.page_with_origin(&server.url("/plain.txt")).await;
    assert_eq!(origin, PageOrigin::SourcesFile);
    assert_eq!(from_file.text, "pre-fetched text");
    let unknown = offline.page(&server.url("/data.json")).await;
    assert_eq!(unknown.status, PageStatus::Unavailable);
    assert!(unknown.text.is_empty());
    let image = offline.image_bytes(&server.url("/image.png")).await;
    assert!(matches!(image, Err(FetchError::Offline { .. })));
    assert_eq!(
        server.hits(),
        hits_before,
        "offline mode touched the network"
    );

    // A broken sources file is a clear error naming the file and line.
    std::fs::write(&sources, "{\"url\": \"https://a.example/\"}\n").unwrap();
    let err = Fetcher::new(
        FetchConfig {
            sources_file: Some(sources.clone()),
            ..local_config()
        },
        None,
    )
    .unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("sources.jsonl, line 1"), "{msg}");
}

#[tokio::test]
async fn image_bytes_checks_status_type_and_cap() {
    let server = PageServer::start().await.unwrap();
    let f = fetcher(FetchConfig {
        image_cap_bytes: 10_000,
        ..local_config()
    });
    let png = f.image_bytes(&server.url("/image.png")).await.unwrap();
    assert!(png.starts_with(b"\x89PNG"));
    let html = f
        .image_bytes(&server.url("/article.html"))
        .await
        .unwrap_err();
    assert!(html.to_string().contains("not an image"), "{html}");
    let missing = f.image_bytes(&server.url("/missing")).await.unwrap_err();
    assert!(missing.to_string().contains("HTTP 404"), "{missing}");
    server.add_page("/huge.png", "image/png", vec![0u8; 20_000]);
    let huge = f.image_bytes(&server.url("/huge.png")).await.unwrap_err();
    assert!(huge.to_string().contains("cap"), "{huge}");
}

#[tokio::test]
async fn reader_backends_go_through_the_service() {
    let server = PageServer::start().await.unwrap();
    server.add_page(
        "/serper",
        "application/json",
        r#"{"text": "Serper extracted text about solar capacity.", "metadata": {}}"#,
    );
    let serper = fetcher(FetchConfig {
        backend: Backend::Serper,
        serper_api_key: tvir_sources::ApiKey::new("test-key"),
        serper_base_url: Some(server.url("/serper")),
        ..local_config()
    });
    let page = serper.page("https://example.invalid/report").await;
    assert_eq!(page.status, PageStatus::Ok, "{page:?}");
    assert_eq!(page.text, "Serper extracted text about solar capacity.");
    assert_eq!(server.hits_for("/serper"), 1);

    server.add_page(
        "/jina/https://example.invalid/captcha",
        "text/plain",
        "Title: Just a moment...\n\nVerify you are human by completing the action below.",
    );
    let jina = fetcher(FetchConfig {
        backend: Backend::Jina,
        jina_base_url: Some(server.url("/jina")),
        ..local_config()
    });
    let page = jina.page("https://example.invalid/captcha").await;
    assert_eq!(page.status, PageStatus::Blocked, "{page:?}");

    // No key: the fetcher still starts; only a page really to be fetched is
    // unavailable in this run (its units fail), naming the key, and it is not
    // cached (a later run with the key fetches it).
    let keyless = fetcher(FetchConfig {
        backend: Backend::Serper,
        serper_base_url: Some(server.url("/serper")),
        ..local_config()
    });
    let page = keyless.page("https://example.invalid/other").await;
    assert_eq!(page.status, PageStatus::Unavailable, "{page:?}");
    assert!(
        page.reason
            .as_deref()
            .unwrap_or("")
            .contains("SERPER_API_KEY"),
        "{page:?}"
    );
    assert_eq!(server.hits_for("/serper"), 1, "no request without the key");
    // The key never shows in debug output.
    assert!(!format!("{serper:?}").contains("test-key"));
}

/// End to end through reqwest: a host name that is not `localhost` but resolves to a
/// private address is refused by the resolver at connect time. Uses this machine's
/// own host name when it resolves only to forbidden addresses (it usually maps to
/// 127.0.x.x or a private container address); skipped otherwise.
#[tokio::test]
async fn names_resolving_to_private_addresses_are_refused_at_connect_time() {
    let server = PageServer::start().await.unwrap();
    let host = match std::fs::read_to_string("/etc/hostname") {
        Ok(h) if !h.trim().is_empty() => h.trim().to_string(),
        _ => {
            crate::common::skip("no host name");
            return;
        }
    };
    let resolved: Vec<std::net::SocketAddr> =
        match tokio::net::lookup_host((host.as_str(), 0)).await {
            Ok(addrs) => addrs.collect(),
            Err(_) => vec![],
        };
    let all_forbidden = !resolved.is_empty()
        && resolved
            .iter()
            .all(|a| tvir_sources::address::classify_ip(a.ip()).is_some());
    if !all_forbidden || host.eq_ignore_ascii_case("localhost") {
        crate::common::skip(&format!(
            "host name {host} does not resolve only to private addresses"
        ));
        return;
    }
    let f = fetcher(FetchConfig {
        max_attempts: 1,
        ..FetchConfig::default()
    });
    let url = format!("http://{host}:{}/article.html", server.addr().port());
    let page = f.page(&url).await;
    assert_eq!(page.status, PageStatus::Refused, "{page:?}");
    let reason = page.reason.unwrap_or_default();
    assert!(
        reason.contains("resolves only to forbidden addresses"),
        "{reason}"
    );
    assert_eq!(server.hits(), 0);
    // The same name is fetched when private addresses are allowed (if it reaches the
    // server's 127.0.0.1 binding).
    if resolved.iter().any(|a| a.ip().is_loopback()) {
        let page = fetcher(local_config()).page(&url).await;
        assert_eq!(page.status, PageStatus::Ok, "{page:?}");
    }
}
