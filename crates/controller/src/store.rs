//! Durable state: one SQLite database in WAL mode with `synchronous = FULL`, so a change is on
//! disk before the controller acknowledges it, and a kill -9 or a power cut loses nothing that
//! was acknowledged. Each change is one transaction: it lands whole or not at all.
//!
//! The database holds the documents as clients sent them (re-resolved against the fabric at
//! start-up), the state version, and the latest route version.

use std::path::Path;

use rusqlite::{params, Connection, OptionalExtension};

/// The schema this build reads and writes.
const SCHEMA: i64 = 1;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database {path}: {error}")]
    Open {
        path: String,
        error: rusqlite::Error,
    },
    #[error("database {path}: {error}")]
    Create { path: String, error: String },
    #[error("database: {0}")]
    Sql(#[from] rusqlite::Error),
    #[error("database schema {found} is not the schema {SCHEMA} this fabricsim uses")]
    Schema { found: i64 },
    #[error("database is corrupt: {0}")]
    Corrupt(String),
}

/// What the database held at start-up.
#[derive(Debug, Default)]
pub struct Saved {
    pub state_version: u64,
    pub fabric: Option<String>,
    /// (sequence number, event document), in order.
    pub events: Vec<(u64, String)>,
    /// (id, document), by id.
    pub demands: Vec<(String, String)>,
    pub jobs: Vec<(String, String)>,
    /// The latest route version's document.
    pub routes: Option<String>,
}

/// One acknowledged change.
pub enum Change<'a> {
    /// A new fabric: the events, demands and jobs of the old one go with it.
    Fabric(&'a str),
    Event(u64, &'a str),
    PutDemands(&'a str, &'a str),
    DeleteDemands(&'a str),
    PutJob(&'a str, &'a str),
    DeleteJob(&'a str),
}

pub struct Store {
    conn: Connection,
}

impl Store {
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let open_err = |error| StoreError::Open {
            path: path.display().to_string(),
            error,
        };
        // A new database is created readable by its owner only: it holds the fabric and the
        // jobs' traffic (SQLite gives its WAL and shared-memory files the same mode).
        #[cfg(unix)]
        if !path.exists() {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(path)
                .map_err(|e| StoreError::Create {
                    path: path.display().to_string(),
                    error: e.to_string(),
                })?;
        }
        let conn = Connection::open(path).map_err(open_err)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(open_err)?;
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(open_err)?;
        // The state and route connections take turns at SQLite's one write lock; a route
        // version of a full cluster takes a fraction of a second to write.
        conn.busy_timeout(std::time::Duration::from_secs(30))
            .map_err(open_err)?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS events (seq INTEGER PRIMARY KEY, doc TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS demands (id TEXT PRIMARY KEY, doc TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS jobs (id TEXT PRIMARY KEY, doc TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS routes (one INTEGER PRIMARY KEY CHECK (one = 1),
                                                doc TEXT NOT NULL);
             INSERT OR IGNORE INTO meta VALUES ('schema', '1'), ('state_version', '0');",
        )
        .map_err(open_err)?;
        let store = Store { conn };
        let found: i64 = store
            .meta("schema")?
            .and_then(|s| s.parse().ok())
            .unwrap_or(-1);
        if found != SCHEMA {
            return Err(StoreError::Schema { found });
        }
        Ok(store)
    }

    fn meta(&self, key: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()?)
    }

    pub fn load(&self) -> Result<Saved, StoreError> {
        let pairs = |sql: &str| -> Result<Vec<(String, String)>, StoreError> {
            let mut stmt = self.conn.prepare(sql)?;
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
            Ok(rows.collect::<Result<_, _>>()?)
        };
        let mut stmt = self
            .conn
            .prepare("SELECT seq, doc FROM events ORDER BY seq")?;
        let events = stmt
            .query_map([], |r| Ok((r.get::<_, i64>(0)? as u64, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        let state_version = match self.meta("state_version")? {
            None => 0,
            Some(s) => s
                .parse()
                .map_err(|_| StoreError::Corrupt(format!("state_version `{s}` is not a number")))?,
        };
        Ok(Saved {
            state_version,
            fabric: self.meta("fabric")?,
            events,
            demands: pairs("SELECT id, doc FROM demands ORDER BY id")?,
            jobs: pairs("SELECT id, doc FROM jobs ORDER BY id")?,
            routes: self
                .conn
                .query_row("SELECT doc FROM routes", [], |r| r.get(0))
                .optional()?,
        })
    }

    /// Writes one change and the state version it makes, in one transaction.
    pub fn commit(&mut self, change: &Change<'_>, state_version: u64) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        match *change {
            Change::Fabric(doc) => {
                tx.execute_batch("DELETE FROM events; DELETE FROM demands; DELETE FROM jobs;")?;
                tx.execute(
                    "INSERT OR REPLACE INTO meta VALUES ('fabric', ?1)",
                    params![doc],
                )?;
            }
            Change::Event(seq, doc) => {
                tx.execute(
                    "INSERT INTO events VALUES (?1, ?2)",
                    params![seq as i64, doc],
                )?;
            }
            Change::PutDemands(id, doc) => {
                tx.execute(
                    "INSERT OR REPLACE INTO demands VALUES (?1, ?2)",
                    params![id, doc],
                )?;
            }
            Change::DeleteDemands(id) => {
                tx.execute("DELETE FROM demands WHERE id = ?1", params![id])?;
            }
            Change::PutJob(id, doc) => {
                tx.execute(
                    "INSERT OR REPLACE INTO jobs VALUES (?1, ?2)",
                    params![id, doc],
                )?;
            }
            Change::DeleteJob(id) => {
                tx.execute("DELETE FROM jobs WHERE id = ?1", params![id])?;
            }
        }
        tx.execute(
            "INSERT OR REPLACE INTO meta VALUES ('state_version', ?1)",
            params![state_version.to_string()],
        )?;
        tx.commit()?;
        Ok(())
    }

    pub fn save_routes(&mut self, doc: &str) -> Result<(), StoreError> {
        self.conn
            .execute("INSERT OR REPLACE INTO routes VALUES (1, ?1)", params![doc])?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A state version that is not a number stops the start (it used to reset to 0 silently).
    #[test]
    fn a_corrupt_state_version_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        let store = Store::open(&path).unwrap();
        assert_eq!(store.load().unwrap().state_version, 0);
        store
            .conn
            .execute(
                "UPDATE meta SET value = 'seven' WHERE key = 'state_version'",
                [],
            )
            .unwrap();
        let e = store.load().unwrap_err().to_string();
        assert!(e.contains("corrupt") && e.contains("seven"), "{e}");
    }
}
