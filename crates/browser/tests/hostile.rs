//! Real Chromium on hostile pages of our own: busy loops (once, and forever), requests to loopback, a
//! 50,000-point chart, dialogs and pop-ups, a page that never finishes loading, a page
//! with no chart. Needs Chromium and the npm chart libraries (else `skipped: …`).

use crate::common;

use std::io::ErrorKind;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use common::*;
use tvir_browser::{Browser, RequestOutcome};

fn refused(r: &tvir_browser::PageRender, needle: &str) -> bool {
    r.requests
        .iter()
        .any(|q| q.url.contains(needle) && matches!(q.outcome, RequestOutcome::Refused { .. }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_pages_are_contained() {
    let (Some(exe), Some(libs)) = (chromium(), libraries()) else {
        return;
    };
    let mut cfg = config(exe);
    cfg.page_budget = Duration::from_secs(12);
    let browser = Browser::start(cfg).await.expect("browser starts");

    // Requests to loopback, link-local and a tracker are refused and never reach a
    // listener on 127.0.0.1 (WebSockets, which interception does not see, meet the
    // dead proxy).
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let html = read(&pages_dir().join("hostile/network-probe.html"))
        .replace("__PORT__", &port.to_string());
    let mut req = request(&libs, "hostile/network-probe.html");
    req.entry_override = Some(html.into_bytes());
    let r = browser.render(req).await;
    assert!(r.failure.is_none(), "{:?}", r.failure);
    assert_eq!(r.charts.len(), 0);
    for needle in [
        &format!("127.0.0.1:{port}/pixel.gif"),
        &format!("127.0.0.1:{port}/fetch"),
        "169.254.169.254",
        "tracker.example.net",
    ] {
        assert!(
            refused(&r, needle),
            "{needle} not refused: {:#?}",
            r.requests
        );
    }
    let mut connections = 0;
    loop {
        match listener.accept() {
            Ok(_) => connections += 1,
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(connections, 0, "the page reached 127.0.0.1:{port}");

    // A busy loop right after load: stopped, the chart still read.
    let r = render(&browser, &libs, "hostile/loop-after-load.html").await;
    assert!(r.failure.is_none(), "{:?} {:?}", r.failure, r.notes);
    assert_eq!(r.charts.len(), 1, "{:?}", r.notes);
    assert!(r.notes.iter().any(|n| n.contains("busy")), "{:?}", r.notes);

    // A busy loop during parse: stopped, the page read (it has no chart).
    let r = render(&browser, &libs, "hostile/loop-sync.html").await;
    assert!(r.failure.is_none(), "{:?}", r.failure);
    assert!(r.notes.iter().any(|n| n.contains("busy")), "{:?}", r.notes);
    assert_eq!(r.charts.len(), 0);

    // Loops again whenever stopped: hangs in two tabs, fails with the reason.
    let t = Instant::now();
    let r = render(&browser, &libs, "hostile/loop-forever.html").await;
    let reason = r.failure.clone().unwrap_or_else(|| {
        panic!(
            "a page that never yields fails: {:?} {:?}",
            t.elapsed(),
            r.notes
        )
    });
    assert!(reason.contains("hung"), "{reason}");
    assert!(
        r.notes
            .iter()
            .any(|n| n.starts_with("retried in a fresh tab")),
        "{:?}",
        r.notes
    );
    assert!(
        t.elapsed() < Duration::from_secs(2 * (12 + 15)),
        "{:?}",
        t.elapsed()
    );

    // 50,000 points: one chart, data bounded and marked truncated.
    let r = render(&browser, &libs, "hostile/big-50k.html").await;
    assert_eq!(r.charts.len(), 1, "{:?} {:?}", r.failure, r.notes);
    let d = &r.charts[0].data;
    assert!(d.truncated);
    assert_eq!(d.series[0].total, 50_000);
    assert_eq!(d.series[0].values.len(), tvir_browser::MAX_POINTS);
    assert!(d.labels.len() <= tvir_browser::MAX_LABELS);
    assert!(!is_blank(&r.charts[0].png));

    // Dialogs dismissed, pop-ups never opened, the chart found.
    let r = render(&browser, &libs, "hostile/popup-alert.html").await;
    assert_eq!(r.charts.len(), 1, "{:?} {:?}", r.failure, r.notes);
    assert!(
        r.notes.iter().any(|n| n.contains("dialog dismissed")),
        "{:?}",
        r.notes
    );
    assert!(
        r.notes.iter().any(|n| n.contains("pop-ups blocked: 2")),
        "{:?}",
        r.notes
    );
    assert!(
        !r.requests
            .iter()
            .any(|q| q.url.contains("popup.example.net")),
        "{:?}",
        r.requests
    );

    // Never finishes loading: waiting stops at the budget, the drawn chart is captured.
    let r = render(&browser, &libs, "hostile/never-loads.html").await;
    assert!(r.failure.is_none(), "{:?} {:?}", r.failure, r.notes);
    assert_eq!(r.charts.len(), 1, "{:?}", r.notes);
    assert!(
        r.notes.iter().any(|n| n.contains("load did not finish")) || refused(&r, "never-answers"),
        "{:?} {:?}",
        r.notes,
        r.requests
    );

    // A button, a script-filled panel, a table, a static logo, an icon, a noise canvas:
    // none is a chart.
    let r = render(&browser, &libs, "hostile/not-a-chart.html").await;
    assert!(r.failure.is_none(), "{:?}", r.failure);
    assert_eq!(
        r.charts.len(),
        0,
        "{:#?}",
        r.charts
            .iter()
            .map(|c| (&c.library, &c.selector))
            .collect::<Vec<_>>()
    );
    browser.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_outside_the_folder_are_never_served() {
    let (Some(exe), Some(libs)) = (chromium(), libraries()) else {
        return;
    };
    let browser = Browser::start(config(exe)).await.expect("browser starts");
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.js"), "window.SECRET = 1;").unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret.js"), dir.path().join("link.js"))
        .unwrap();
    std::fs::write(dir.path().join("ok.js"), "window.OK = 1;").unwrap();
    std::fs::write(
        dir.path().join("index.html"),
        "<script src=\"ok.js\"></script><script src=\"link.js\"></script>\
         <script src=\"../secret.js\"></script><script src=\"%2e%2e%2fsecret.js\"></script><p>x</p>",
    )
    .unwrap();
    let mut req = request(&libs, "index.html");
    req.root = dir.path().to_path_buf();
    let r = browser.render(req).await;
    assert!(r.failure.is_none(), "{:?}", r.failure);
    let ok = r
        .requests
        .iter()
        .find(|q| q.url.ends_with("/ok.js"))
        .expect("ok.js requested");
    assert_eq!(ok.outcome, RequestOutcome::ServedFromFolder);
    let link = r
        .requests
        .iter()
        .find(|q| q.url.ends_with("/link.js"))
        .expect("link.js requested");
    assert!(
        matches!(&link.outcome, RequestOutcome::Refused { reason } if reason.contains("leaves")),
        "{link:?}"
    );
    assert!(
        !r.requests
            .iter()
            .any(|q| q.url.contains("secret") && q.outcome == RequestOutcome::ServedFromFolder),
        "{:?}",
        r.requests
    );
    browser.close().await;
}

/// A page that goes busy for good after some charts were captured keeps them: the
/// charts captured before fail nothing, the ones after fail with why (and name their
/// library), and the page is not rendered a second time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn charts_captured_before_a_page_hangs_are_kept() {
    let (Some(exe), Some(libs)) = (chromium(), libraries()) else {
        return;
    };
    let mut cfg = config(exe);
    cfg.page_budget = Duration::from_secs(12);
    let browser = Browser::start(cfg).await.expect("browser starts");
    let r = render(&browser, &libs, "hostile/busy-after-first-chart.html").await;
    assert!(r.failure.is_none(), "{:?} {:?}", r.failure, r.notes);
    let shot: Vec<&str> = r.charts.iter().map(|c| c.selector.as_str()).collect();
    assert_eq!(shot, ["#c1"], "{:?}", r.notes);
    assert!(!is_blank(&r.charts[0].png));
    let mut lost: Vec<&str> = r.dropped.iter().map(|d| d.selector.as_str()).collect();
    lost.sort();
    assert_eq!(lost, ["#c2", "#c3", "#c4"], "{:?}", r.dropped);
    for d in &r.dropped {
        assert_eq!(d.library, "chartjs");
        assert!(
            d.reason.contains("busy")
                || d.reason.contains("time limit")
                || d.reason.contains("hung"),
            "{}",
            d.reason
        );
        // A script of this page had to be stopped: even a chart whose turn came after
        // the time limit was lost to the page (it takes the time again), not to this
        // render.
        assert!(!d.transient, "{}", d.reason);
        if d.reason.contains("time limit") {
            assert!(
                d.reason.contains("kept it busy and was stopped"),
                "{}",
                d.reason
            );
        }
    }
    assert!(
        !r.notes
            .iter()
            .any(|n| n.starts_with("retried in a fresh tab")),
        "{:?}",
        r.notes
    );
    browser.close().await;
}
