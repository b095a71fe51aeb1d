//! Figure facts by content (owned by the eval pipeline): the SHA-256 of a figure's
//! bytes plus the settings that shape the result -> whether it decodes and, for
//! images, the IQ analysis (size, R, A, S, C, Laplacian variances, contrast stats,
//! perceptual hash) as JSON. An unchanged image is decoded once across runs.
//!
//! Added in store schema version 1; older cache files simply gain the table on open
//! (no existing table changes, so files written by older versions stay readable and
//! older versions ignore the new table).

use rusqlite::{params, Connection, OptionalExtension};

pub(crate) fn init_schema(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS figure_facts (
            key        TEXT PRIMARY KEY,
            facts      TEXT NOT NULL,
            created_at INTEGER NOT NULL
        );",
    )
}

/// The stored facts (JSON) of one content key.
pub fn get(conn: &Connection, key: &str) -> rusqlite::Result<Option<String>> {
    conn.query_row(
        "SELECT facts FROM figure_facts WHERE key = ?1",
        params![key],
        |row| row.get(0),
    )
    .optional()
}

pub fn put(conn: &Connection, key: &str, facts: &str) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO figure_facts (key, facts, created_at) VALUES (?1, ?2, ?3)
         ON CONFLICT(key) DO UPDATE SET facts = excluded.facts, created_at = excluded.created_at",
        params![key, facts, chrono::Utc::now().timestamp()],
    )?;
    Ok(())
}

pub fn count(conn: &Connection) -> rusqlite::Result<u64> {
    conn.query_row("SELECT COUNT(*) FROM figure_facts", [], |row| {
        row.get::<_, i64>(0)
    })
    .map(|n| n.max(0) as u64)
}
