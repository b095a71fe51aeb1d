//! The one SQLite file for judge answers, fetched pages and figure facts (WAL, many
//! writers), behind [`Store`] (errors: [`StoreError`]). Each table's schema and
//! queries live beside their owner: [`judge_cache`] for the judge client,
//! [`adaptations`] for what the judge client learnt about each server, [`batch`] for
//! Batch API bookkeeping, [`pages`] for the source fetcher, [`figure_facts`] for the
//! eval pipeline's image analyses by content hash, [`resources`] for the raw bytes of
//! scripts, styles and fonts rendered pages load, [`renders`] for rendered charts, [`thumbnails`] for the
//! figure thumbnails of output folders by content hash.
//!
//! The bottom of the workspace: it must never depend on anything of the suite, so
//! every stage can use it. Rows are plain data; what they mean stays with their owners.

pub mod adaptations;
pub mod batch;
pub mod figure_facts;
pub mod judge_cache;
pub mod pages;
pub mod renders;
pub mod resources;
pub mod thumbnails;

use std::path::Path;
use std::sync::{Arc, Mutex};

use rusqlite::Connection;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cache {path}: {source}")]
    Sqlite {
        path: String,
        #[source]
        source: rusqlite::Error,
    },
}

/// Cheap to clone; all clones share one connection (rusqlite connections are not
/// `Sync`, so access is serialised through the mutex; WAL lets other processes read
/// and write the same file at once).
#[derive(Clone)]
pub struct Store {
    conn: Arc<Mutex<Connection>>,
    path: String,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

impl Store {
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let name = path.display().to_string();
        let wrap = |source| StoreError::Sqlite {
            path: name.clone(),
            source,
        };
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        let conn = Connection::open(path).map_err(wrap)?;
        conn.busy_timeout(std::time::Duration::from_secs(30))
            .map_err(wrap)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(wrap)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(wrap)?;
        Self::init(conn, name)
    }

    /// A private in-memory store (tests, `--no-cache`).
    pub fn in_memory() -> Result<Self, StoreError> {
        let conn = Connection::open_in_memory().map_err(|source| StoreError::Sqlite {
            path: ":memory:".into(),
            source,
        })?;
        Self::init(conn, ":memory:".into())
    }

    fn init(conn: Connection, path: String) -> Result<Self, StoreError> {
        let wrap = |source| StoreError::Sqlite {
            path: path.clone(),
            source,
        };
        judge_cache::init_schema(&conn).map_err(wrap)?;
        pages::init_schema(&conn).map_err(wrap)?;
        adaptations::init_schema(&conn).map_err(wrap)?;
        // Migrations: each step only adds (tables), so every older file opens.
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(wrap)?;
        if version < 1 {
            figure_facts::init_schema(&conn).map_err(wrap)?;
            conn.pragma_update(None, "user_version", 1).map_err(wrap)?;
        }
        batch::init_schema(&conn).map_err(wrap)?;
        resources::init_schema(&conn).map_err(wrap)?;
        renders::init_schema(&conn).map_err(wrap)?;
        thumbnails::init_schema(&conn).map_err(wrap)?;
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
            path,
        })
    }

    pub fn path(&self) -> &str {
        &self.path
    }

    /// Run `f` with the connection. Keep the closure short: it holds the lock.
    pub fn with_conn<T>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        let conn = self
            .conn
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        f(&conn).map_err(|source| StoreError::Sqlite {
            path: self.path.clone(),
            source,
        })
    }
}
