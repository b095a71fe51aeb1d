//! What the judge client learnt about a server (owned by the judge client): one row
//! per (base URL, model) with the structured-output form it accepts, the name of the
//! token-limit parameter, whether `temperature` and `seed` may be sent, and whether
//! the model can read images. The next run starts from it instead of relearning
//! every refusal with a failed call; a later refusal overwrites it. A second table
//! keeps the requests the server said do not fit the model's context window.
//!
//! Added after `judge_cache` and `pages` existed: creating it is the whole migration
//! (`CREATE TABLE IF NOT EXISTS`), so stores written before it open unchanged.

use rusqlite::{params, Connection, OptionalExtension};

pub(crate) fn init_schema(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS judge_adaptations (
            base_url TEXT NOT NULL,
            model TEXT NOT NULL,
            output_mode TEXT NOT NULL,
            token_param TEXT NOT NULL,
            send_temperature INTEGER NOT NULL,
            send_seed INTEGER NOT NULL,
            vision INTEGER,
            vision_detail TEXT,
            updated_at TEXT NOT NULL,
            reasoning INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (base_url, model)
        );
        CREATE TABLE IF NOT EXISTS judge_overflows (
            base_url TEXT NOT NULL,
            model TEXT NOT NULL,
            key TEXT NOT NULL,
            prompt_tokens INTEGER,
            context_window INTEGER,
            reason TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (base_url, model, key)
        );",
    )?;
    // Stores written before the column existed.
    let has_reasoning = conn
        .prepare("SELECT 1 FROM pragma_table_info('judge_adaptations') WHERE name = 'reasoning'")?
        .exists([])?;
    if !has_reasoning {
        conn.execute_batch(
            "ALTER TABLE judge_adaptations ADD COLUMN reasoning INTEGER NOT NULL DEFAULT 0",
        )?;
    }
    Ok(())
}

/// A request (by its judge-cache key) that the server said does not fit the model's
/// context window: a later run fails it with the same reason instead of sending it
/// again, until `--relearn-judge` forgets it.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredOverflow {
    pub base_url: String,
    pub model: String,
    pub key: String,
    pub prompt_tokens: Option<u32>,
    pub context_window: Option<u32>,
    pub reason: String,
    pub updated_at: String,
}

pub fn get_overflow(
    conn: &Connection,
    base_url: &str,
    model: &str,
    key: &str,
) -> rusqlite::Result<Option<StoredOverflow>> {
    conn.prepare_cached(
        "SELECT base_url, model, key, prompt_tokens, context_window, reason, updated_at
         FROM judge_overflows WHERE base_url = ?1 AND model = ?2 AND key = ?3",
    )?
    .query_row(params![base_url, model, key], |row| {
        Ok(StoredOverflow {
            base_url: row.get(0)?,
            model: row.get(1)?,
            key: row.get(2)?,
            prompt_tokens: row.get(3)?,
            context_window: row.get(4)?,
            reason: row.get(5)?,
            updated_at: row.get(6)?,
        })
    })
    .optional()
}

pub fn put_overflow(conn: &Connection, o: &StoredOverflow) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO judge_overflows (base_url, model, key, prompt_tokens,
            context_window, reason, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        o.base_url,
        o.model,
        o.key,
        o.prompt_tokens,
        o.context_window,
        o.reason,
        o.updated_at,
    ])?;
    Ok(())
}

/// The smallest context window (tokens) any stored overflow reply of (base URL,
/// model) named: what an earlier run learnt about the model's window.
pub fn known_window(
    conn: &Connection,
    base_url: &str,
    model: &str,
) -> rusqlite::Result<Option<u32>> {
    conn.prepare_cached(
        "SELECT MIN(context_window) FROM judge_overflows
         WHERE base_url = ?1 AND model = ?2 AND context_window IS NOT NULL",
    )?
    .query_row(params![base_url, model], |row| row.get(0))
}

/// Forget everything learnt about (base URL, model): `--relearn-judge`.
pub fn forget(conn: &Connection, base_url: &str, model: &str) -> rusqlite::Result<()> {
    conn.execute(
        "DELETE FROM judge_adaptations WHERE base_url = ?1 AND model = ?2",
        params![base_url, model],
    )?;
    conn.execute(
        "DELETE FROM judge_overflows WHERE base_url = ?1 AND model = ?2",
        params![base_url, model],
    )?;
    Ok(())
}

/// One server's adaptations, as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredAdaptations {
    /// Normalised base URL (trimmed, no trailing `/`).
    pub base_url: String,
    pub model: String,
    /// `json_schema`, `json_object+schema`, `json_object` or `prompt_only`.
    pub output_mode: String,
    /// `max_tokens` or `max_completion_tokens`.
    pub token_param: String,
    pub send_temperature: bool,
    pub send_seed: bool,
    /// `None` until the vision check ran to a verdict.
    pub vision: Option<bool>,
    /// What the vision check saw (for the log and the user).
    pub vision_detail: Option<String>,
    /// The model reasons before answering (token limits get reasoning headroom).
    pub reasoning: bool,
    /// RFC 3339 UTC.
    pub updated_at: String,
}

pub fn get(
    conn: &Connection,
    base_url: &str,
    model: &str,
) -> rusqlite::Result<Option<StoredAdaptations>> {
    conn.prepare_cached(
        "SELECT base_url, model, output_mode, token_param, send_temperature, send_seed,
                vision, vision_detail, updated_at, reasoning
         FROM judge_adaptations WHERE base_url = ?1 AND model = ?2",
    )?
    .query_row(params![base_url, model], |row| {
        Ok(StoredAdaptations {
            base_url: row.get(0)?,
            model: row.get(1)?,
            output_mode: row.get(2)?,
            token_param: row.get(3)?,
            send_temperature: row.get::<_, i64>(4)? != 0,
            send_seed: row.get::<_, i64>(5)? != 0,
            vision: row.get::<_, Option<i64>>(6)?.map(|v| v != 0),
            vision_detail: row.get(7)?,
            updated_at: row.get(8)?,
            reasoning: row.get::<_, i64>(9)? != 0,
        })
    })
    .optional()
}

/// Insert or replace the row of (base URL, model).
pub fn put(conn: &Connection, a: &StoredAdaptations) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO judge_adaptations (base_url, model, output_mode, token_param,
            send_temperature, send_seed, vision, vision_detail, updated_at, reasoning)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?
    .execute(params![
        a.base_url,
        a.model,
        a.output_mode,
        a.token_param,
        i64::from(a.send_temperature),
        i64::from(a.send_seed),
        a.vision.map(i64::from),
        a.vision_detail,
        a.updated_at,
        i64::from(a.reasoning),
    ])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Store;

    fn row(mode: &str) -> StoredAdaptations {
        StoredAdaptations {
            base_url: "http://127.0.0.1:8080/v1".into(),
            model: "m".into(),
            output_mode: mode.into(),
            token_param: "max_tokens".into(),
            send_temperature: true,
            send_seed: false,
            vision: None,
            vision_detail: None,
            updated_at: "2026-01-01T00:00:00Z".into(),
            reasoning: false,
        }
    }

    #[test]
    fn round_trip_and_replace() {
        let store = Store::in_memory().unwrap();
        store
            .with_conn(|c| {
                assert_eq!(get(c, "http://127.0.0.1:8080/v1", "m")?, None);
                put(c, &row("json_object+schema"))?;
                assert_eq!(
                    get(c, "http://127.0.0.1:8080/v1", "m")?,
                    Some(row("json_object+schema"))
                );
                let mut later = row("json_object");
                later.vision = Some(false);
                later.vision_detail = Some("answered 3 for 7".into());
                put(c, &later)?;
                assert_eq!(get(c, "http://127.0.0.1:8080/v1", "m")?, Some(later));
                assert_eq!(get(c, "http://127.0.0.1:8080/v1", "other")?, None);
                Ok(())
            })
            .unwrap();
    }

    #[test]
    fn overflows_round_trip_and_are_forgotten_with_the_adaptations() {
        let store = Store::in_memory().unwrap();
        store
            .with_conn(|c| {
                let o = StoredOverflow {
                    base_url: "http://127.0.0.1:8080/v1".into(),
                    model: "m".into(),
                    key: "k1".into(),
                    prompt_tokens: Some(19516),
                    context_window: Some(16384),
                    reason: "too long".into(),
                    updated_at: "2026-01-01T00:00:00Z".into(),
                };
                put_overflow(c, &o)?;
                put(c, &row("json_object"))?;
                assert_eq!(
                    get_overflow(c, "http://127.0.0.1:8080/v1", "m", "k1")?,
                    Some(o.clone())
                );
                assert_eq!(
                    get_overflow(c, "http://127.0.0.1:8080/v1", "m2", "k1")?,
                    None
                );
                assert_eq!(
                    get_overflow(c, "http://127.0.0.1:8080/v1", "m", "k2")?,
                    None
                );
                // The window an earlier run learnt: the smallest one named.
                let mut wider = o.clone();
                wider.key = "k3".into();
                wider.context_window = Some(32768);
                put_overflow(c, &wider)?;
                assert_eq!(
                    known_window(c, "http://127.0.0.1:8080/v1", "m")?,
                    Some(16384)
                );
                assert_eq!(known_window(c, "http://127.0.0.1:8080/v1", "m2")?, None);
                forget(c, "http://127.0.0.1:8080/v1", "m")?;
                assert_eq!(
                    get_overflow(c, "http://127.0.0.1:8080/v1", "m", "k1")?,
                    None
                );
                assert_eq!(known_window(c, "http://127.0.0.1:8080/v1", "m")?, None);
                assert_eq!(get(c, "http://127.0.0.1:8080/v1", "m")?, None);
                Ok(())
            })
            .unwrap();
    }

    #[test]
    fn a_store_written_before_the_table_existed_opens_and_keeps_its_rows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.sqlite");
        {
            // The schema of a store from before this table: the judge cache only.
            let conn = Connection::open(&path).unwrap();
            crate::judge_cache::init_schema(&conn).unwrap();
            conn.execute(
                "INSERT INTO judge_cache (key, model, metric, sample, answer, raw, prompt_tokens,
                    completion_tokens, cached_tokens, latency_ms, server_model, created_at)
                 VALUES ('k', 'm', 'writing_quality', 0, '{}', '{}',
                 1, 2, 0, 5, 'm', '2025-01-01T00:00:00Z')",
                [],
            )
            .unwrap();
        }
        let store = Store::open(&path).unwrap();
        store
            .with_conn(|c| {
                let old = crate::judge_cache::get(c, "k")?.expect("old row kept");
                assert_eq!(old.metric, "writing_quality");
                put(c, &row("json_schema"))?;
                assert!(get(c, "http://127.0.0.1:8080/v1", "m")?.is_some());
                Ok(())
            })
            .unwrap();
    }
}
