//! Fetched page cache (owned by the source fetcher).

use rusqlite::Connection;

pub(crate) fn init_schema(_conn: &Connection) -> rusqlite::Result<()> {
    Ok(())
}
