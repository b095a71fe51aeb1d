//! Judge answer cache (owned by the judge client).

use rusqlite::Connection;

pub(crate) fn init_schema(_conn: &Connection) -> rusqlite::Result<()> {
    Ok(())
}
