//! Retry policy: which failures are worth another attempt, how long to wait
//! (exponential backoff with full jitter, or what the server asked for through
//! `Retry-After`, `retry-after-ms` or `x-ratelimit-reset-*`). Pure functions.

use std::time::{Duration, SystemTime};

use reqwest::header::HeaderMap;

/// Longest wait we accept from a server's header (a hostile or broken server must not
/// park a run for hours).
pub const MAX_SERVER_WAIT: Duration = Duration::from_secs(300);

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    pub base: Duration,
    pub cap: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            base: Duration::from_millis(500),
            cap: Duration::from_secs(30),
        }
    }
}

impl Backoff {
    /// Wait before retry number `retry` (1 = first retry): uniform in
    /// `[d/2, d]` with `d = min(cap, base * 2^(retry-1))`. `unit` is a uniform draw in
    /// [0, 1) supplied by the caller so the function stays pure and testable.
    pub fn delay(&self, retry: u32, unit: f64) -> Duration {
        let exp = retry.saturating_sub(1).min(30);
        let full = self
            .base
            .saturating_mul(1u32 << exp)
            .min(self.cap)
            .as_secs_f64();
        Duration::from_secs_f64(full * (0.5 + 0.5 * unit.clamp(0.0, 1.0)))
    }
}

/// HTTP statuses worth retrying: request timeout, conflict, rate limit, server errors.
/// Except 501 (llama.cpp's server answers "not supported", e.g. images without a
/// vision projector, with it) and 505: asking again cannot change those.
pub fn is_retryable_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429)
        || ((500..=599).contains(&status) && !matches!(status, 501 | 505))
}

/// What the server asked us to wait, if anything: `retry-after-ms`, then
/// `Retry-After` (seconds or an HTTP date), then the `x-ratelimit-reset-*` headers.
pub fn server_requested_wait(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let wait = get("retry-after-ms")
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
        .map(|ms| Duration::from_secs_f64(ms / 1000.0))
        .or_else(|| get("retry-after").and_then(|v| parse_retry_after(v, now)))
        .or_else(|| ratelimit_reset(headers));
    wait.map(|w| w.min(MAX_SERVER_WAIT))
}

/// `Retry-After: 7` or `Retry-After: Wed, 21 Oct 2026 07:28:00 GMT`.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// OpenAI-style `x-ratelimit-reset-requests: 1s` / `x-ratelimit-reset-tokens: 6m0s`.
/// When a `x-ratelimit-remaining-*` says which limit is exhausted, its reset wins;
/// otherwise the shorter reset (the other limit may not be the one we hit).
fn ratelimit_reset(headers: &HeaderMap) -> Option<Duration> {
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let exhausted = |kind: &str| {
        get(&format!("x-ratelimit-remaining-{kind}"))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .is_some_and(|n| n <= 0.0)
    };
    let reset = |kind: &str| get(&format!("x-ratelimit-reset-{kind}")).and_then(parse_go_duration);
    let requests = reset("requests");
    let tokens = reset("tokens");
    let hit: Vec<Duration> = [("requests", requests), ("tokens", tokens)]
        .into_iter()
        .filter(|(kind, d)| d.is_some() && exhausted(kind))
        .filter_map(|(_, d)| d)
        .collect();
    if let Some(max) = hit.into_iter().max() {
        return Some(max);
    }
    match (requests, tokens) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Durations like `1s`, `20ms`, `6m0s`, `1h2m3.5s`, or a bare number of seconds.
pub fn parse_go_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    if let Ok(secs) = text.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let mut total = 0.0f64;
    let mut rest = text;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_len == 0 {
            return None;
        }
        let number: f64 = rest[..num_len].parse().ok()?;
        rest = &rest[num_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let factor = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => return None,
        };
        total += number * factor;
        rest = &rest[unit_len..];
    }
    total.is_finite().then(|| Duration::from_secs_f64(total))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderName, HeaderValue};

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    #[test]
    fn backoff_grows_is_capped_and_jittered() {
        let b = Backoff {
            base: Duration::from_millis(100),
            cap: Duration::from_secs(1),
        };
        assert_eq!(b.delay(1, 1.0), Duration::from_millis(100));
        assert_eq!(b.delay(1, 0.0), Duration::from_millis(50));
        assert_eq!(b.delay(3, 1.0), Duration::from_millis(400));
        assert_eq!(b.delay(10, 1.0), Duration::from_secs(1));
        assert_eq!(b.delay(u32::MAX, 1.0), Duration::from_secs(1));
        let mid = b.delay(2, 0.5);
        assert!(mid > Duration::from_millis(100) && mid < Duration::from_millis(200));
    }

    #[test]
    fn retryable_statuses() {
        for s in [408, 409, 429, 500, 502, 503, 504] {
            assert!(is_retryable_status(s), "{s}");
        }
        for s in [400, 401, 403, 404, 422, 501] {
            assert!(!is_retryable_status(s), "{s}");
        }
    }

    #[test]
    fn retry_after_seconds_and_date() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(parse_retry_after("7", now), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_retry_after("0.5", now),
            Some(Duration::from_millis(500))
        );
        let later = httpdate::fmt_http_date(now + Duration::from_secs(12));
        assert_eq!(
            parse_retry_after(&later, now),
            Some(Duration::from_secs(12))
        );
        let past = httpdate::fmt_http_date(now - Duration::from_secs(12));
        assert_eq!(parse_retry_after(&past, now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-3", now), None);
    }

    #[test]
    fn header_precedence_and_cap() {
        let now = SystemTime::now();
        let h = headers(&[("retry-after-ms", "250"), ("retry-after", "9")]);
        assert_eq!(
            server_requested_wait(&h, now),
            Some(Duration::from_millis(250))
        );
        let h = headers(&[("retry-after", "99999")]);
        assert_eq!(server_requested_wait(&h, now), Some(MAX_SERVER_WAIT));
        assert_eq!(server_requested_wait(&HeaderMap::new(), now), None);
    }

    #[test]
    fn ratelimit_reset_headers() {
        let now = SystemTime::now();
        let h = headers(&[
            ("x-ratelimit-reset-requests", "2s"),
            ("x-ratelimit-reset-tokens", "6m0s"),
            ("x-ratelimit-remaining-tokens", "0"),
            ("x-ratelimit-remaining-requests", "10"),
        ]);
        assert_eq!(
            server_requested_wait(&h, now),
            Some(Duration::from_secs(300))
        );
        let h = headers(&[
            ("x-ratelimit-reset-requests", "2s"),
            ("x-ratelimit-reset-tokens", "20ms"),
        ]);
        assert_eq!(
            server_requested_wait(&h, now),
            Some(Duration::from_millis(20))
        );
    }

    #[test]
    fn go_durations() {
        assert_eq!(
            parse_go_duration("1h2m3.5s"),
            Some(Duration::from_secs_f64(3723.5))
        );
        assert_eq!(parse_go_duration("20ms"), Some(Duration::from_millis(20)));
        assert_eq!(parse_go_duration("3"), Some(Duration::from_secs(3)));
        assert_eq!(parse_go_duration("3 days"), None);
        assert_eq!(parse_go_duration(""), None);
    }
}
