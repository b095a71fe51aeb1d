//! Fetched page cache (owned by the source fetcher): normalised URL -> status, final
//! URL, content type, size, text, fetch time, error. Shared by every run and system
//! that uses the same cache file.

use rusqlite::{params, Connection, OptionalExtension};

pub(crate) fn init_schema(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS pages (
            url          TEXT PRIMARY KEY,
            status       TEXT NOT NULL,
            final_url    TEXT,
            content_type TEXT,
            size         INTEGER,
            text         TEXT NOT NULL DEFAULT '',
            fetched_at   INTEGER NOT NULL,
            error        TEXT,
            backend      TEXT
        );",
    )
}

/// One cached page. `status` is the snake_case name of
/// `tvir_sources::PageStatus`; `fetched_at` is Unix seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct PageRow {
    pub url: String,
    pub status: String,
    pub final_url: Option<String>,
    pub content_type: Option<String>,
    /// Body size in bytes as received (after content decoding).
    pub size: Option<u64>,
    pub text: String,
    pub fetched_at: i64,
    pub error: Option<String>,
    pub backend: Option<String>,
}

pub fn get(conn: &Connection, url: &str) -> rusqlite::Result<Option<PageRow>> {
    conn.query_row(
        "SELECT url, status, final_url, content_type, size, text, fetched_at, error, backend
         FROM pages WHERE url = ?1",
        params![url],
        |row| {
            Ok(PageRow {
                url: row.get(0)?,
                status: row.get(1)?,
                final_url: row.get(2)?,
                content_type: row.get(3)?,
                size: row.get::<_, Option<i64>>(4)?.map(|n| n.max(0) as u64),
                text: row.get(5)?,
                fetched_at: row.get(6)?,
                error: row.get(7)?,
                backend: row.get(8)?,
            })
        },
    )
    .optional()
}

pub fn put(conn: &Connection, row: &PageRow) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO pages (url, status, final_url, content_type, size, text, fetched_at, error, backend)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
         ON CONFLICT(url) DO UPDATE SET
            status = excluded.status, final_url = excluded.final_url,
            content_type = excluded.content_type, size = excluded.size,
            text = excluded.text, fetched_at = excluded.fetched_at,
            error = excluded.error, backend = excluded.backend",
        params![
            row.url,
            row.status,
            row.final_url,
            row.content_type,
            row.size.map(|n| n.min(i64::MAX as u64) as i64),
            row.text,
            row.fetched_at,
            row.error,
            row.backend,
        ],
    )?;
    Ok(())
}

/// Number of cached pages per status (for `tvir fetch` summaries and tests).
pub fn count_by_status(conn: &Connection) -> rusqlite::Result<Vec<(String, u64)>> {
    let mut stmt =
        conn.prepare("SELECT status, COUNT(*) FROM pages GROUP BY status ORDER BY status")?;
    let rows = stmt.query_map([], |row| {
        Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)? as u64))
    })?;
    rows.collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(url: &str, status: &str, text: &str) -> PageRow {
        PageRow {
            url: url.into(),
            status: status.into(),
            final_url: Some(format!("{url}?final")),
            content_type: Some("text/html".into()),
            size: Some(1234),
            text: text.into(),
            fetched_at: 1_700_000_000,
            error: None,
            backend: Some("direct".into()),
        }
    }

    #[test]
    fn put_get_and_replace() {
        let conn = Connection::open_in_memory().unwrap();
        init_schema(&conn).unwrap();
        // Idempotent: opening an existing file runs it again.
        init_schema(&conn).unwrap();
        assert_eq!(get(&conn, "https://a.example/").unwrap(), None);
        let first = row("https://a.example/", "failed", "");
        put(&conn, &first).unwrap();
        assert_eq!(get(&conn, "https://a.example/").unwrap(), Some(first));
        let second = row("https://a.example/", "ok", "hello");
        put(&conn, &second).unwrap();
        assert_eq!(get(&conn, "https://a.example/").unwrap(), Some(second));
        put(&conn, &row("https://b.example/", "ok", "x")).unwrap();
        assert_eq!(count_by_status(&conn).unwrap(), vec![("ok".to_string(), 2)]);
    }
}
