//! The incident record: what happened, the cause, the missing layers and the change.
//! Without these lines the next server starts from `run_sql` again.

use std::path::{Path, PathBuf};

/// The facts of one incident, as the lab observed them.
#[derive(Debug, Clone)]
pub struct Incident {
    /// What the user asked the model to do.
    pub request: String,
    /// The SQL the model sent through `run_sql`.
    pub sql: String,
    pub database: PathBuf,
    pub backup: PathBuf,
    /// Rows `orders` had before the attack.
    pub orders_lost: usize,
    /// Rows `orders` had after the restore.
    pub orders_restored: usize,
}

/// The section headings every record carries.
pub const SECTIONS: [&str; 4] = [
    "## What happened",
    "## Cause",
    "## Missing layers",
    "## Change",
];

impl Incident {
    /// The record as Markdown.
    pub fn markdown(&self) -> String {
        let Incident {
            request,
            sql,
            database,
            backup,
            orders_lost,
            orders_restored,
        } = self;
        let (database, backup) = (database.display(), backup.display());
        format!(
            "# Incident: the `orders` table was dropped through `run_sql`

## What happened

- **Request**: \"{request}\"
- **Call**: `run_sql` with `{sql}`, run on a read-write connection to `{database}`.
- **Lost**: the `orders` table and its {orders_lost} rows.
- **Restored**: from `{backup}`, a copy taken before the incident with SQLite's online
  backup API; `orders` is back with {orders_restored} of {orders_lost} rows.

## Cause

The tool design. `run_sql(sql)` accepts any SQL, so every statement the engine knows,
`DROP TABLE` included, was one call away. The model took the shortest path to the request;
the server put no gate on that path.

## Missing layers

- **Allowlist**: every tool the code defined was published. Nothing said which tools this
  deployment needs, so the all-powerful one was on.
- **Read-only connection**: the tool wrote through a read-write connection although the
  work it was built for only reads. Nothing in the engine refused the write.
- **Confirmation**: nothing destructive waited for a human. No one saw \"this drops
  `orders` and its {orders_lost} rows\" and no one could say no.

## Change

- **Narrow tools**: `run_sql` is replaced by `count_orders`, `list_customers` and
  `delete_order(id)`. The only argument of `delete_order` is an integer order number: a
  table drop cannot be expressed.
- **Allowlist**: the server publishes only the tools its allowlist file lists; `run_sql` is
  not listed, so `tools/list` omits it and `tools/call run_sql` gets the same -32602 as a
  name that never existed. A missing or broken file enables no tool.
- **Read-only connection**: read tools take a handle opened with `mode=ro` and
  `PRAGMA query_only`; the engine refuses any write, whatever the SQL says, and the model
  gets `READ_ONLY`.
- **Confirm round trip**: `delete_order` shows the human the order number, status and
  amount that would disappear and runs only after the human accepts; a decline, a cancel
  or a client that cannot ask deletes nothing.
"
        )
    }

    /// Writes the record to `dir/incident.md` and returns its path.
    pub fn write(&self, dir: &Path) -> std::io::Result<PathBuf> {
        let path = dir.join("incident.md");
        std::fs::write(&path, self.markdown())?;
        Ok(path)
    }
}
