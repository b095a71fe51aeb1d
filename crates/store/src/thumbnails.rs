//! Figure thumbnails by content (owned by the eval's output stage): the SHA-256 of a
//! figure's bytes plus the thumbnail settings -> the JPEG `tvir eval` writes beside
//! `report.json`. A re-run into a new output folder copies the stored JPEG instead
//! of decoding the figure again.
//!
//! The table is added on open when missing (no existing table changes, so older
//! cache files stay readable and older versions ignore it).

use rusqlite::{params, Connection, OptionalExtension};

pub(crate) fn init_schema(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS thumbnails (
            key        TEXT PRIMARY KEY,
            jpeg       BLOB NOT NULL,
            created_at INTEGER NOT NULL
        );",
    )
}

/// The stored JPEG of one content key.
pub fn get(conn: &Connection, key: &str) -> rusqlite::Result<Option<Vec<u8>>> {
    conn.query_row(
        "SELECT jpeg FROM thumbnails WHERE key = ?1",
        params![key],
        |row| row.get(0),
    )
    .optional()
}

pub fn put(conn: &Connection, key: &str, jpeg: &[u8]) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO thumbnails (key, jpeg, created_at) VALUES (?1, ?2, ?3)
         ON CONFLICT(key) DO UPDATE SET jpeg = excluded.jpeg, created_at = excluded.created_at",
        params![key, jpeg, chrono::Utc::now().timestamp()],
    )?;
    Ok(())
}

pub fn count(conn: &Connection) -> rusqlite::Result<u64> {
    conn.query_row("SELECT COUNT(*) FROM thumbnails", [], |row| {
        row.get::<_, i64>(0)
    })
    .map(|n| n.max(0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_thumbnail_reads_back_by_key() {
        let store = crate::Store::in_memory().unwrap();
        store.with_conn(|c| put(c, "k1", b"\xff\xd8jpeg")).unwrap();
        assert_eq!(
            store.with_conn(|c| get(c, "k1")).unwrap().as_deref(),
            Some(&b"\xff\xd8jpeg"[..])
        );
        assert_eq!(store.with_conn(|c| get(c, "k2")).unwrap(), None);
        assert_eq!(store.with_conn(count).unwrap(), 1);
    }
}
