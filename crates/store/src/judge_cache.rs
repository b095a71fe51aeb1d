//! Judge answer cache (owned by the judge client): one row per valid answer, keyed by
//! a hash of model, canonical request and sample index (see `judge::cache`). Only
//! validated answers are written; errors never are. No credential is stored.

use rusqlite::{params, Connection, OptionalExtension};

pub(crate) fn init_schema(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS judge_cache (
            key TEXT PRIMARY KEY,
            model TEXT NOT NULL,
            metric TEXT NOT NULL,
            sample INTEGER NOT NULL,
            answer TEXT NOT NULL,
            raw TEXT NOT NULL,
            prompt_tokens INTEGER NOT NULL,
            completion_tokens INTEGER NOT NULL,
            cached_tokens INTEGER NOT NULL,
            latency_ms INTEGER NOT NULL,
            server_model TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE INDEX IF NOT EXISTS judge_cache_model_metric ON judge_cache(model, metric);",
    )?;
    // Migration (batch engines): how the answer was obtained, `live` or `batch`.
    // Stores written before it get the column with every row `live`.
    let has_via = conn
        .prepare("SELECT 1 FROM pragma_table_info('judge_cache') WHERE name = 'via'")?
        .exists([])?;
    if !has_via {
        conn.execute_batch("ALTER TABLE judge_cache ADD COLUMN via TEXT NOT NULL DEFAULT 'live'")?;
    }
    Ok(())
}

/// One cached answer.
#[derive(Debug, Clone, PartialEq)]
pub struct CachedAnswer {
    pub key: String,
    pub model: String,
    pub metric: String,
    pub sample: u32,
    /// The validated answer, as JSON text.
    pub answer: String,
    pub raw: String,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cached_tokens: u64,
    pub latency_ms: u64,
    /// Model name the server reported.
    pub server_model: String,
    /// RFC 3339 UTC.
    pub created_at: String,
    /// `live` or `batch`: how the answer was obtained (prices differ).
    pub via: String,
}

pub fn get(conn: &Connection, key: &str) -> rusqlite::Result<Option<CachedAnswer>> {
    conn.prepare_cached(
        "SELECT key, model, metric, sample, answer, raw, prompt_tokens, completion_tokens,
                cached_tokens, latency_ms, server_model, created_at, via
         FROM judge_cache WHERE key = ?1",
    )?
    .query_row(params![key], |row| {
        Ok(CachedAnswer {
            key: row.get(0)?,
            model: row.get(1)?,
            metric: row.get(2)?,
            sample: row.get(3)?,
            answer: row.get(4)?,
            raw: row.get(5)?,
            prompt_tokens: row.get::<_, i64>(6)?.max(0) as u64,
            completion_tokens: row.get::<_, i64>(7)?.max(0) as u64,
            cached_tokens: row.get::<_, i64>(8)?.max(0) as u64,
            latency_ms: row.get::<_, i64>(9)?.max(0) as u64,
            server_model: row.get(10)?,
            created_at: row.get(11)?,
            via: row.get(12)?,
        })
    })
    .optional()
}

/// Insert or replace (two processes answering the same question store equal rows).
pub fn put(conn: &Connection, a: &CachedAnswer) -> rusqlite::Result<()> {
    let clamp = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    conn.prepare_cached(
        "INSERT OR REPLACE INTO judge_cache (key, model, metric, sample, answer, raw,
            prompt_tokens, completion_tokens, cached_tokens, latency_ms, server_model, created_at, via)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
    )?
    .execute(params![
        a.key,
        a.model,
        a.metric,
        a.sample,
        a.answer,
        a.raw,
        clamp(a.prompt_tokens),
        clamp(a.completion_tokens),
        clamp(a.cached_tokens),
        clamp(a.latency_ms),
        a.server_model,
        a.created_at,
        a.via
    ])?;
    Ok(())
}

pub fn count(conn: &Connection) -> rusqlite::Result<u64> {
    conn.query_row("SELECT COUNT(*) FROM judge_cache", [], |r| {
        r.get::<_, i64>(0)
    })
    .map(|n| n.max(0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(key: &str) -> CachedAnswer {
        CachedAnswer {
            key: key.into(),
            model: "m".into(),
            metric: "citation_support".into(),
            sample: 1,
            answer: "{\"verdict\":\"supported\"}".into(),
            raw: "raw".into(),
            prompt_tokens: 10,
            completion_tokens: 2,
            cached_tokens: 0,
            latency_ms: 50,
            server_model: "m-2025".into(),
            created_at: "2026-01-01T00:00:00Z".into(),
            via: "live".into(),
        }
    }

    #[test]
    fn round_trip_and_replace() {
        let conn = Connection::open_in_memory().unwrap();
        init_schema(&conn).unwrap();
        init_schema(&conn).unwrap(); // idempotent
        assert_eq!(get(&conn, "k").unwrap(), None);
        put(&conn, &row("k")).unwrap();
        assert_eq!(get(&conn, "k").unwrap(), Some(row("k")));
        put(&conn, &row("k")).unwrap();
        put(&conn, &row("k2")).unwrap();
        assert_eq!(count(&conn).unwrap(), 2);
    }

    #[test]
    fn stores_without_the_via_column_are_migrated() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE judge_cache (key TEXT PRIMARY KEY, model TEXT NOT NULL,
                metric TEXT NOT NULL, sample INTEGER NOT NULL, answer TEXT NOT NULL,
                raw TEXT NOT NULL, prompt_tokens INTEGER NOT NULL,
                completion_tokens INTEGER NOT NULL, cached_tokens INTEGER NOT NULL,
                latency_ms INTEGER NOT NULL, server_model TEXT NOT NULL,
                created_at TEXT NOT NULL);
             INSERT INTO judge_cache VALUES ('old', 'm', 'cs', 0, '{}', 'r', 1, 1, 0, 5, 'm', 't');",
        )
        .unwrap();
        init_schema(&conn).unwrap();
        init_schema(&conn).unwrap();
        assert_eq!(get(&conn, "old").unwrap().unwrap().via, "live");
        let mut b = row("new");
        b.via = "batch".into();
        put(&conn, &b).unwrap();
        assert_eq!(get(&conn, "new").unwrap().unwrap().via, "batch");
    }
}
