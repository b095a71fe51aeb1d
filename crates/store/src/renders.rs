//! Rendered pages (owned by the eval's render stage), in two steps, because what a
//! render depends on is only known after rendering:
//!
//! - `render_pages`: the key of the served page (its bytes, entry name, browser
//!   version, viewport) -> the files and resources the page used (JSON list);
//! - `renders`: the key of the page plus the content of everything it used -> the
//!   render (JSON: charts with their PNGs, requests, notes).
//!
//! A lookup hashes the listed files and resources as they are now; any change gives a
//! new key and a new render. `browser_versions` remembers an executable's version by
//! path, size and modification time, so a warm re-run spawns no browser at all.

use rusqlite::{params, Connection, OptionalExtension};

pub(crate) fn init_schema(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS render_pages (
            key        TEXT PRIMARY KEY,
            used       TEXT NOT NULL,
            created_at INTEGER NOT NULL
        );
        CREATE TABLE IF NOT EXISTS renders (
            key        TEXT PRIMARY KEY,
            result     TEXT NOT NULL,
            created_at INTEGER NOT NULL
        );
        CREATE TABLE IF NOT EXISTS browser_versions (
            executable TEXT NOT NULL,
            size       INTEGER NOT NULL,
            mtime      INTEGER NOT NULL,
            version    TEXT NOT NULL,
            PRIMARY KEY (executable, size, mtime)
        );",
    )
}

/// The list of what a served page used (JSON), by page key.
pub fn get_used(conn: &Connection, page_key: &str) -> rusqlite::Result<Option<String>> {
    conn.query_row(
        "SELECT used FROM render_pages WHERE key = ?1",
        params![page_key],
        |row| row.get(0),
    )
    .optional()
}

/// A stored render (JSON), by render key.
pub fn get_render(conn: &Connection, render_key: &str) -> rusqlite::Result<Option<String>> {
    conn.query_row(
        "SELECT result FROM renders WHERE key = ?1",
        params![render_key],
        |row| row.get(0),
    )
    .optional()
}

/// Store a render and what its page used, together.
pub fn put(
    conn: &Connection,
    page_key: &str,
    used: &str,
    render_key: &str,
    result: &str,
) -> rusqlite::Result<()> {
    let now = chrono::Utc::now().timestamp();
    conn.execute(
        "INSERT INTO render_pages (key, used, created_at) VALUES (?1, ?2, ?3)
         ON CONFLICT(key) DO UPDATE SET used = excluded.used, created_at = excluded.created_at",
        params![page_key, used, now],
    )?;
    conn.execute(
        "INSERT INTO renders (key, result, created_at) VALUES (?1, ?2, ?3)
         ON CONFLICT(key) DO UPDATE SET result = excluded.result, created_at = excluded.created_at",
        params![render_key, result, now],
    )?;
    Ok(())
}

/// The remembered version of an executable with this size and modification time.
pub fn get_version(
    conn: &Connection,
    executable: &str,
    size: i64,
    mtime: i64,
) -> rusqlite::Result<Option<String>> {
    conn.query_row(
        "SELECT version FROM browser_versions WHERE executable = ?1 AND size = ?2 AND mtime = ?3",
        params![executable, size, mtime],
        |row| row.get(0),
    )
    .optional()
}

pub fn put_version(
    conn: &Connection,
    executable: &str,
    size: i64,
    mtime: i64,
    version: &str,
) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT OR REPLACE INTO browser_versions (executable, size, mtime, version)
         VALUES (?1, ?2, ?3, ?4)",
        params![executable, size, mtime, version],
    )?;
    Ok(())
}

pub fn count(conn: &Connection) -> rusqlite::Result<u64> {
    conn.query_row("SELECT COUNT(*) FROM renders", [], |row| {
        row.get::<_, i64>(0)
    })
    .map(|n| n.max(0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_step_lookup_and_versions() {
        let conn = Connection::open_in_memory().unwrap();
        init_schema(&conn).unwrap();
        assert!(get_used(&conn, "p").unwrap().is_none());
        put(&conn, "p", "[\"a.js\"]", "r", "{\"charts\":[]}").unwrap();
        assert_eq!(get_used(&conn, "p").unwrap().as_deref(), Some("[\"a.js\"]"));
        assert_eq!(
            get_render(&conn, "r").unwrap().as_deref(),
            Some("{\"charts\":[]}")
        );
        assert_eq!(count(&conn).unwrap(), 1);
        put_version(&conn, "/usr/bin/chromium", 10, 20, "Chromium 1").unwrap();
        assert_eq!(
            get_version(&conn, "/usr/bin/chromium", 10, 20)
                .unwrap()
                .as_deref(),
            Some("Chromium 1")
        );
        assert!(get_version(&conn, "/usr/bin/chromium", 10, 21)
            .unwrap()
            .is_none());
    }
}
