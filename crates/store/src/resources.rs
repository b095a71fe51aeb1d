//! Raw resources by URL (owned by the source fetcher): the exact bytes of scripts,
//! style sheets and fonts a rendered page loads, and of the remote figures a run
//! downloaded, with their content type. Filled by the fetcher on a successful fetch
//! and by `tvir cache put URL FILE`, so an offline machine renders from the same
//! bytes and `tvir rate export` shows raters the pictures the judges saw. Unlike
//! [`crate::pages`], nothing is reduced to text here.

use rusqlite::{params, Connection, OptionalExtension};

pub(crate) fn init_schema(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS resources (
            url          TEXT PRIMARY KEY,
            body         BLOB NOT NULL,
            content_type TEXT,
            stored_at    INTEGER NOT NULL
        );",
    )
}

/// A stored resource: its bytes and content type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceRow {
    pub body: Vec<u8>,
    pub content_type: Option<String>,
}

pub fn get(conn: &Connection, url: &str) -> rusqlite::Result<Option<ResourceRow>> {
    conn.query_row(
        "SELECT body, content_type FROM resources WHERE url = ?1",
        params![url],
        |row| {
            Ok(ResourceRow {
                body: row.get(0)?,
                content_type: row.get(1)?,
            })
        },
    )
    .optional()
}

pub fn put(conn: &Connection, url: &str, row: &ResourceRow) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO resources (url, body, content_type, stored_at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT(url) DO UPDATE SET body = excluded.body,
             content_type = excluded.content_type, stored_at = excluded.stored_at",
        params![
            url,
            row.body,
            row.content_type,
            chrono::Utc::now().timestamp()
        ],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_then_get_replaces() {
        let conn = Connection::open_in_memory().unwrap();
        init_schema(&conn).unwrap();
        assert!(get(&conn, "https://cdn.example/a.js").unwrap().is_none());
        let row = |b: &[u8]| ResourceRow {
            body: b.to_vec(),
            content_type: Some("text/javascript".into()),
        };
        put(&conn, "https://cdn.example/a.js", &row(b"one")).unwrap();
        put(&conn, "https://cdn.example/a.js", &row(b"two")).unwrap();
        assert_eq!(
            get(&conn, "https://cdn.example/a.js").unwrap(),
            Some(row(b"two"))
        );
    }
}
