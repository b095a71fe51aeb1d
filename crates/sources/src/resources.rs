//! Raw resources for rendered pages: the scripts, style sheets and fonts a report's
//! page loads, fetched under the same address rules as pages and kept byte for byte
//! in the cache's `resources` table (`tvir cache put` seeds it).

use super::{normalize_url, FetchError, Fetcher};

impl Fetcher {
    /// Raw bytes and content type of a script, style sheet or font a rendered page
    /// loads: the same address rules as pages, capped at the page size limit, kept
    /// byte for byte in the cache's resource store (never reduced to text). Offline,
    /// only the store answers ([`FetchError::Offline`] otherwise; `tvir cache put`
    /// seeds it).
    pub async fn resource(
        &self,
        url: &str,
        accept: &str,
    ) -> Result<(Vec<u8>, Option<String>), FetchError> {
        let raw = url.trim();
        let (key, parsed) = self.allowed_url(raw)?;
        if let Some(row) = self
            .inner
            .store
            .with_conn(|c| tvir_store::resources::get(c, &key))?
        {
            return Ok((row.body, row.content_type));
        }
        if self.inner.config.offline {
            return Err(FetchError::Offline {
                url: raw.to_string(),
            });
        }
        let fetched = self
            .get_2xx(raw, &parsed, self.inner.config.page_cap_bytes, accept)
            .await?;
        self.put_resource(raw, fetched.body.clone(), fetched.content_type.clone())?;
        Ok((fetched.body, fetched.content_type))
    }

    /// Store `body` as the resource at `url` (`tvir cache put URL FILE`).
    pub fn put_resource(
        &self,
        url: &str,
        body: Vec<u8>,
        content_type: Option<String>,
    ) -> Result<(), FetchError> {
        let key = normalize_url(url.trim());
        let row = tvir_store::resources::ResourceRow { body, content_type };
        self.inner
            .store
            .with_conn(|c| tvir_store::resources::put(c, &key, &row))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FetchConfig;

    #[tokio::test]
    async fn resources_offline_come_from_the_cache_only_and_private_hosts_are_refused() {
        let config = FetchConfig {
            offline: true,
            ..FetchConfig::default()
        };
        let fetcher = Fetcher::new(config, None).unwrap();
        let url = "https://cdn.example.org/lib/chart.js";
        assert!(matches!(
            fetcher.resource(url, "*/*").await,
            Err(FetchError::Offline { .. })
        ));
        fetcher
            .put_resource(
                url,
                b"window.Chart = 1;".to_vec(),
                Some("text/javascript".into()),
            )
            .unwrap();
        let (body, ct) = fetcher.resource(url, "*/*").await.unwrap();
        assert_eq!(body, b"window.Chart = 1;");
        assert_eq!(ct.as_deref(), Some("text/javascript"));
        // The address rules come before the cache.
        fetcher
            .put_resource("http://127.0.0.1/x.js", b"1".to_vec(), None)
            .unwrap();
        assert!(matches!(
            fetcher.resource("http://127.0.0.1/x.js", "*/*").await,
            Err(FetchError::Refused { .. })
        ));
    }
}
