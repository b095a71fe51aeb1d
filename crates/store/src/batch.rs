//! Batch API bookkeeping (owned by `tvir_judge::batch`): one row per judge request that
//! goes through a provider's batch engine or an offline runner, and one row per
//! provider batch. Together with the judge cache they make a batch run resumable:
//! a request in a live batch is never submitted again, and answers that came back
//! are in `judge_cache` (with `via = 'batch'`).
//!
//! Request states: `queued` (waiting for the next wave), `submitted` (in the
//! provider batch `batch_id`), `exported` (written to a JSONL file for an offline
//! runner), `failed` (gave up: `last_error` is the provider's error), `answered`
//! (the answer is in the judge cache).

use rusqlite::{params, Connection, OptionalExtension};

pub(crate) fn init_schema(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS batch_requests (
            key         TEXT PRIMARY KEY,
            model       TEXT NOT NULL,
            metric      TEXT NOT NULL,
            sample      INTEGER NOT NULL DEFAULT 0,
            body        TEXT NOT NULL,
            schema      TEXT NOT NULL,
            state       TEXT NOT NULL,
            batch_id    TEXT,
            wave        INTEGER NOT NULL DEFAULT 0,
            attempts    INTEGER NOT NULL DEFAULT 0,
            reasks      INTEGER NOT NULL DEFAULT 0,
            last_error  TEXT,
            updated_at  TEXT NOT NULL
        );
        CREATE INDEX IF NOT EXISTS batch_requests_state ON batch_requests(model, state);
        CREATE TABLE IF NOT EXISTS batches (
            id             TEXT PRIMARY KEY,
            model          TEXT NOT NULL,
            base_url       TEXT NOT NULL,
            input_file_id  TEXT NOT NULL,
            wave           INTEGER NOT NULL,
            requests       INTEGER NOT NULL,
            status         TEXT NOT NULL,
            completed      INTEGER NOT NULL DEFAULT 0,
            failed         INTEGER NOT NULL DEFAULT 0,
            collected      INTEGER NOT NULL DEFAULT 0,
            created_at     TEXT NOT NULL,
            updated_at     TEXT NOT NULL
        );
        CREATE TABLE IF NOT EXISTS batch_uploads (
            input_file_id  TEXT PRIMARY KEY,
            model          TEXT NOT NULL,
            base_url       TEXT NOT NULL,
            wave           INTEGER NOT NULL,
            keys           TEXT NOT NULL,
            created_at     TEXT NOT NULL
        );",
    )?;
    // Migration: tokens of earlier attempts of a request (invalid answers that were
    // re-asked), added to the usage of the answer that is finally kept, so every
    // attempt is priced. Stores written before it get the columns at 0.
    let has_spent = conn
        .prepare(
            "SELECT 1 FROM pragma_table_info('batch_requests') WHERE name = 'spent_prompt_tokens'",
        )?
        .exists([])?;
    if !has_spent {
        conn.execute_batch(
            "ALTER TABLE batch_requests ADD COLUMN spent_prompt_tokens INTEGER NOT NULL DEFAULT 0;
             ALTER TABLE batch_requests ADD COLUMN spent_completion_tokens INTEGER NOT NULL DEFAULT 0;
             ALTER TABLE batch_requests ADD COLUMN spent_cached_tokens INTEGER NOT NULL DEFAULT 0;",
        )?;
    }
    Ok(())
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// One request known to the batch engine.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchRequest {
    pub key: String,
    pub model: String,
    pub metric: String,
    pub sample: u32,
    /// The `/v1/chat/completions` body to send (re-asks included).
    pub body: String,
    /// The JSON schema the answer must satisfy.
    pub schema: String,
    pub state: String,
    pub batch_id: Option<String>,
    pub wave: u32,
    /// Failed or expired lines so far.
    pub attempts: u32,
    /// Invalid answers re-asked so far.
    pub reasks: u32,
    pub last_error: Option<String>,
    /// Tokens of earlier answered attempts (invalid answers re-asked since).
    pub spent: SpentTokens,
}

/// Token counts of a request's earlier answered attempts, as stored (the judge's
/// own usage type is not known here: the store depends on nothing of the suite).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpentTokens {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cached_tokens: u64,
}

/// A request about to be queued.
#[derive(Debug, Clone, Copy)]
pub struct NewRequest<'a> {
    pub key: &'a str,
    pub model: &'a str,
    pub metric: &'a str,
    pub sample: u32,
    pub body: &'a str,
    pub schema: &'a str,
}

const COLUMNS: &str =
    "key, model, metric, sample, body, schema, state, batch_id, wave, attempts, reasks, last_error,
     spent_prompt_tokens, spent_completion_tokens, spent_cached_tokens";

fn from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<BatchRequest> {
    Ok(BatchRequest {
        key: row.get(0)?,
        model: row.get(1)?,
        metric: row.get(2)?,
        sample: row.get::<_, i64>(3)?.max(0) as u32,
        body: row.get(4)?,
        schema: row.get(5)?,
        state: row.get(6)?,
        batch_id: row.get(7)?,
        wave: row.get::<_, i64>(8)?.max(0) as u32,
        attempts: row.get::<_, i64>(9)?.max(0) as u32,
        reasks: row.get::<_, i64>(10)?.max(0) as u32,
        last_error: row.get(11)?,
        spent: SpentTokens {
            prompt_tokens: row.get::<_, i64>(12)?.max(0) as u64,
            completion_tokens: row.get::<_, i64>(13)?.max(0) as u64,
            cached_tokens: row.get::<_, i64>(14)?.max(0) as u64,
        },
    })
}

pub fn get(conn: &Connection, key: &str) -> rusqlite::Result<Option<BatchRequest>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM batch_requests WHERE key = ?1"
    ))?
    .query_row(params![key], from_row)
    .optional()
}

/// Insert a new queued request (`r.state` etc. are ignored); an existing row (any
/// state) is left alone. Returns whether a row was inserted.
pub fn insert_queued(conn: &Connection, r: &NewRequest<'_>) -> rusqlite::Result<bool> {
    let n = conn
        .prepare_cached(
            "INSERT OR IGNORE INTO batch_requests (key, model, metric, sample, body, schema, state, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'queued', ?7)",
        )?
        .execute(params![r.key, r.model, r.metric, r.sample, r.body, r.schema, now()])?;
    Ok(n > 0)
}

/// Write every mutable field of `r`.
pub fn update(conn: &Connection, r: &BatchRequest) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE batch_requests SET body = ?2, state = ?3, batch_id = ?4, wave = ?5,
                attempts = ?6, reasks = ?7, last_error = ?8, updated_at = ?9,
                spent_prompt_tokens = ?10, spent_completion_tokens = ?11, spent_cached_tokens = ?12
         WHERE key = ?1",
    )?
    .execute(params![
        r.key,
        r.body,
        r.state,
        r.batch_id,
        r.wave,
        r.attempts,
        r.reasks,
        r.last_error,
        now(),
        r.spent.prompt_tokens as i64,
        r.spent.completion_tokens as i64,
        r.spent.cached_tokens as i64,
    ])?;
    Ok(())
}

/// Requests of `model` in `state`, in key order (deterministic files).
pub fn by_state(
    conn: &Connection,
    model: &str,
    state: &str,
) -> rusqlite::Result<Vec<BatchRequest>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM batch_requests WHERE model = ?1 AND state = ?2 ORDER BY key"
    ))?;
    let rows = stmt.query_map(params![model, state], from_row)?;
    rows.collect()
}

/// Requests of `model` per state.
pub fn count_by_state(conn: &Connection, model: &str) -> rusqlite::Result<Vec<(String, u64)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT state, COUNT(*) FROM batch_requests WHERE model = ?1 GROUP BY state ORDER BY state",
    )?;
    let rows = stmt.query_map(params![model], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?.max(0) as u64))
    })?;
    rows.collect()
}

/// The highest wave number used so far for `model` (0 when none).
pub fn last_wave(conn: &Connection, model: &str) -> rusqlite::Result<u32> {
    conn.query_row(
        "SELECT COALESCE(MAX(wave), 0) FROM batch_requests WHERE model = ?1",
        params![model],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n.max(0) as u32)
}

/// One provider batch.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchRow {
    pub id: String,
    pub model: String,
    pub base_url: String,
    pub input_file_id: String,
    pub wave: u32,
    pub requests: u64,
    pub status: String,
    pub completed: u64,
    pub failed: u64,
    pub collected: bool,
    pub created_at: String,
}

fn batch_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<BatchRow> {
    Ok(BatchRow {
        id: row.get(0)?,
        model: row.get(1)?,
        base_url: row.get(2)?,
        input_file_id: row.get(3)?,
        wave: row.get::<_, i64>(4)?.max(0) as u32,
        requests: row.get::<_, i64>(5)?.max(0) as u64,
        status: row.get(6)?,
        completed: row.get::<_, i64>(7)?.max(0) as u64,
        failed: row.get::<_, i64>(8)?.max(0) as u64,
        collected: row.get::<_, i64>(9)? != 0,
        created_at: row.get(10)?,
    })
}

/// Record a created batch and move its requests to `submitted`, in one transaction
/// (so a kill leaves either both or neither).
pub fn record_batch(conn: &Connection, b: &BatchRow, keys: &[String]) -> rusqlite::Result<()> {
    let tx = conn.unchecked_transaction()?;
    let ts = now();
    tx.execute(
        "INSERT OR REPLACE INTO batches (id, model, base_url, input_file_id, wave, requests, status,
            completed, failed, collected, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 0, 0, 0, ?8, ?8)",
        params![
            b.id,
            b.model,
            b.base_url,
            b.input_file_id,
            b.wave,
            b.requests as i64,
            b.status,
            ts
        ],
    )?;
    {
        let mut stmt = tx.prepare_cached(
            "UPDATE batch_requests SET state = 'submitted', batch_id = ?2, wave = ?3, updated_at = ?4
             WHERE key = ?1 AND state IN ('queued', 'exported')",
        )?;
        for k in keys {
            stmt.execute(params![k, b.id, b.wave, ts])?;
        }
    }
    tx.execute(
        "DELETE FROM batch_uploads WHERE input_file_id = ?1",
        params![b.input_file_id],
    )?;
    tx.commit()
}

pub fn update_batch_status(
    conn: &Connection,
    id: &str,
    status: &str,
    completed: u64,
    failed: u64,
) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE batches SET status = ?2, completed = ?3, failed = ?4, updated_at = ?5 WHERE id = ?1",
        params![id, status, completed as i64, failed as i64, now()],
    )?;
    Ok(())
}

pub fn mark_collected(conn: &Connection, id: &str) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE batches SET collected = 1, updated_at = ?2 WHERE id = ?1",
        params![id, now()],
    )?;
    Ok(())
}

/// Batches of `model` on `base_url` not collected yet.
pub fn open_batches(
    conn: &Connection,
    model: &str,
    base_url: &str,
) -> rusqlite::Result<Vec<BatchRow>> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, model, base_url, input_file_id, wave, requests, status, completed, failed,
                collected, created_at
         FROM batches WHERE model = ?1 AND base_url = ?2 AND collected = 0 ORDER BY created_at, id",
    )?;
    let rows = stmt.query_map(params![model, base_url], batch_from_row)?;
    rows.collect()
}

/// An uploaded input file whose batch may or may not have been created (a kill
/// between upload and the batch row): re-attached by its file id.
#[derive(Debug, Clone, PartialEq)]
pub struct Upload {
    pub input_file_id: String,
    pub wave: u32,
    pub keys: Vec<String>,
}

pub fn record_upload(
    conn: &Connection,
    model: &str,
    base_url: &str,
    up: &Upload,
) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT OR REPLACE INTO batch_uploads (input_file_id, model, base_url, wave, keys, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            up.input_file_id,
            model,
            base_url,
            up.wave,
            up.keys.join("\n"),
            now()
        ],
    )?;
    Ok(())
}

pub fn uploads(conn: &Connection, model: &str, base_url: &str) -> rusqlite::Result<Vec<Upload>> {
    let mut stmt = conn.prepare_cached(
        "SELECT input_file_id, wave, keys FROM batch_uploads
         WHERE model = ?1 AND base_url = ?2 ORDER BY created_at, input_file_id",
    )?;
    let rows = stmt.query_map(params![model, base_url], |r| {
        let keys: String = r.get(2)?;
        Ok(Upload {
            input_file_id: r.get(0)?,
            wave: r.get::<_, i64>(1)?.max(0) as u32,
            keys: keys.lines().map(str::to_string).collect(),
        })
    })?;
    rows.collect()
}

pub fn drop_upload(conn: &Connection, input_file_id: &str) -> rusqlite::Result<()> {
    conn.execute(
        "DELETE FROM batch_uploads WHERE input_file_id = ?1",
        params![input_file_id],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_without_the_spent_columns_are_migrated() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE batch_requests (key TEXT PRIMARY KEY, model TEXT NOT NULL,
                metric TEXT NOT NULL, sample INTEGER NOT NULL DEFAULT 0, body TEXT NOT NULL,
                schema TEXT NOT NULL, state TEXT NOT NULL, batch_id TEXT,
                wave INTEGER NOT NULL DEFAULT 0, attempts INTEGER NOT NULL DEFAULT 0,
                reasks INTEGER NOT NULL DEFAULT 0, last_error TEXT, updated_at TEXT NOT NULL);
             INSERT INTO batch_requests (key, model, metric, body, schema, state, updated_at)
                VALUES ('old', 'm', 'cs', '{}', '{}', 'queued', 't');",
        )
        .unwrap();
        init_schema(&conn).unwrap();
        init_schema(&conn).unwrap();
        let mut r = get(&conn, "old").unwrap().unwrap();
        assert_eq!(r.spent, SpentTokens::default());
        r.spent.completion_tokens = 7;
        update(&conn, &r).unwrap();
        assert_eq!(
            get(&conn, "old").unwrap().unwrap().spent.completion_tokens,
            7
        );
    }

    #[test]
    fn queue_submit_and_reattach_uploads() {
        let conn = Connection::open_in_memory().unwrap();
        init_schema(&conn).unwrap();
        init_schema(&conn).unwrap();
        let new = |key, body| NewRequest {
            key,
            model: "m",
            metric: "cs",
            sample: 0,
            body,
            schema: "{}",
        };
        assert!(insert_queued(&conn, &new("k1", "{}")).unwrap());
        assert!(insert_queued(&conn, &new("k2", "{}")).unwrap());
        assert!(!insert_queued(&conn, &new("k1", "{\"x\":1}")).unwrap());
        assert_eq!(get(&conn, "k1").unwrap().unwrap().body, "{}");
        let up = Upload {
            input_file_id: "file-1".into(),
            wave: 1,
            keys: vec!["k1".into(), "k2".into()],
        };
        record_upload(&conn, "m", "u", &up).unwrap();
        assert_eq!(uploads(&conn, "m", "u").unwrap(), vec![up]);
        let b = BatchRow {
            id: "batch_1".into(),
            model: "m".into(),
            base_url: "u".into(),
            input_file_id: "file-1".into(),
            wave: 1,
            requests: 2,
            status: "validating".into(),
            completed: 0,
            failed: 0,
            collected: false,
            created_at: String::new(),
        };
        record_batch(&conn, &b, &["k1".into()]).unwrap();
        assert!(uploads(&conn, "m", "u").unwrap().is_empty());
        let k1 = get(&conn, "k1").unwrap().unwrap();
        assert_eq!(
            (k1.state.as_str(), k1.batch_id.as_deref(), k1.wave),
            ("submitted", Some("batch_1"), 1)
        );
        assert_eq!(by_state(&conn, "m", "queued").unwrap().len(), 1);
        assert_eq!(last_wave(&conn, "m").unwrap(), 1);
        assert_eq!(open_batches(&conn, "m", "u").unwrap().len(), 1);
        mark_collected(&conn, "batch_1").unwrap();
        assert!(open_batches(&conn, "m", "u").unwrap().is_empty());
        assert_eq!(
            count_by_state(&conn, "m").unwrap(),
            vec![("queued".to_string(), 1), ("submitted".to_string(), 1)]
        );
    }
}
