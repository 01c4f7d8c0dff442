//! Intents: what a prepare freezes, and how guard reads one back.

use rmcp::schemars::{self, JsonSchema};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::outcome::Outcome;
use crate::store::{Dialect, Done, Row, Statement, StoreError, Tx};

/// Where an intent stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Status {
    /// Stored by a prepare, waiting for its confirm.
    Prepared,
    /// Confirmed: the effect committed and its result is stored.
    Submitted,
    /// Not confirmed in time.
    Expired,
    /// The target changed before the confirm, so the effect did not run.
    Rejected,
}

impl Status {
    /// The status as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Prepared => "PREPARED",
            Status::Submitted => "SUBMITTED",
            Status::Expired => "EXPIRED",
            Status::Rejected => "REJECTED",
        }
    }

    /// The outcome a lookup of an operation in this status reports.
    pub(crate) fn outcome(self) -> Outcome {
        match self {
            Status::Prepared => Outcome::Prepared,
            Status::Submitted => Outcome::Submitted,
            Status::Expired => Outcome::IntentExpired,
            Status::Rejected => Outcome::IntentRejected,
        }
    }

    fn parse(s: &str) -> Result<Self, StoreError> {
        Ok(match s {
            "PREPARED" => Status::Prepared,
            "SUBMITTED" => Status::Submitted,
            "EXPIRED" => Status::Expired,
            "REJECTED" => Status::Rejected,
            other => {
                return Err(StoreError::Column(format!(
                    "unknown intent status `{other}`"
                )));
            }
        })
    }
}

/// What a prepare handler returns: the target, the payload the confirm will act on, and the
/// preview the user is shown. Guard stores it; nothing runs yet.
#[derive(Debug, Clone)]
pub struct Intent<P> {
    pub(crate) target: String,
    pub(crate) payload: P,
    pub(crate) preview: Option<Value>,
    pub(crate) summary: Option<String>,
}

impl<P: Serialize> Intent<P> {
    /// An intent to act on `target` (the id the one-pending rule and the audit use) with
    /// `payload`. The preview defaults to the payload.
    pub fn new(target: impl Into<String>, payload: P) -> Self {
        Self {
            target: target.into(),
            payload,
            preview: None,
            summary: None,
        }
    }

    /// What the user is shown before confirming: the concrete effect, in the words of the
    /// business (order number, amount, reason, expiry).
    pub fn preview(mut self, preview: impl Serialize) -> Self {
        self.preview = Some(serde_json::to_value(preview).unwrap_or(Value::Null));
        self
    }

    /// A one-line parameter summary for the audit record. Leave out personal data.
    pub fn summary(mut self, summary: impl Into<String>) -> Self {
        self.summary = Some(summary.into());
        self
    }
}

/// The only argument a confirm tool and `get_operation_result` take.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OperationRef {
    /// The operation_id that the prepare tool returned.
    pub operation_id: String,
}

/// guard's own argument type: its one field is all the model may send
/// (`deny_unknown_fields` refuses any other name before this list is read).
impl crate::args::ToolArgsDerived for OperationRef {
    const CHECKED_NAMES: &'static [&'static str] = &["operation_id"];
    const FIELDS: &'static [&'static str] = &["operation_id"];
}

/// The canonical payload (RFC 8785) and its SHA-256 in hex.
/// An intent as stored.
#[derive(Debug, Clone)]
pub(crate) struct Stored {
    pub operation_id: String,
    pub tenant: String,
    pub user: String,
    pub op: String,
    pub target: String,
    pub payload: String,
    pub payload_sha256: String,
    pub preview: String,
    pub status: Status,
    pub expires_at: i64,
    pub result: Option<String>,
    pub created_at: i64,
    pub confirmed_at: Option<i64>,
    /// Its confirm, if the confirm was deferred (`#[confirm(defer = ...)]`).
    pub deferred: Option<Deferral>,
}

/// A deferred confirm of an intent, as `guard_deferred` keeps it under the intent's id.
#[derive(Debug, Clone)]
pub(crate) struct Deferral {
    pub status: crate::defer::Status,
    pub due_at: i64,
    pub closed_at: Option<i64>,
    /// The reason it did not run, for `STATE_CHANGED` and `FAILED`.
    pub result: Option<String>,
}

impl Stored {
    /// Reads one intent of `owner` (tenant, user); another owner's intent reads as missing.
    /// With `lock` the row is held until the transaction ends (on PostgreSQL; SQLite's
    /// `BEGIN IMMEDIATE` already holds the whole database). The owner is checked after the
    /// row is read, so a caller that must never wait on another owner's id reads unlocked
    /// first and locks only once the intent proved to be its own.
    pub async fn read(
        tx: &mut Tx,
        operation_id: &str,
        owner: (&str, &str),
        lock: bool,
    ) -> Result<Option<Self>, StoreError> {
        let select = Self::select(tx.dialect(), operation_id, lock);
        let done = tx.pipeline(&[select]).await?;
        Self::owned(done.into_iter().next(), owner)
    }

    /// The statement that reads one intent, locking its row with `lock` on PostgreSQL; to
    /// send with others, and read with [`owned`](Self::owned).
    pub fn select(dialect: Dialect, operation_id: &str, lock: bool) -> Statement {
        macro_rules! select {
            ($($tail:literal)?) => {
                concat!(
                    "SELECT operation_id, tenant, user_id, op, target, payload, payload_sha256,
                            preview, status, expires_at, result, created_at, confirmed_at,
                            (SELECT d.status FROM guard_deferred d
                             WHERE d.operation_id = guard_operations.operation_id) AS deferred_status,
                            (SELECT d.due_at FROM guard_deferred d
                             WHERE d.operation_id = guard_operations.operation_id) AS deferred_due_at,
                            (SELECT d.closed_at FROM guard_deferred d
                             WHERE d.operation_id = guard_operations.operation_id) AS deferred_closed_at,
                            (SELECT d.result FROM guard_deferred d
                             WHERE d.operation_id = guard_operations.operation_id) AS deferred_result
                     FROM guard_operations WHERE operation_id = $1"
                    $(, $tail)?
                )
            };
        }
        let sql = if lock && dialect == Dialect::Postgres {
            select!(" FOR UPDATE")
        } else {
            select!()
        };
        Statement::query(sql, vec![operation_id.into()])
    }

    /// The intent a [`select`](Self::select) answered, if it belongs to `owner`.
    pub fn owned(
        done: Option<Done>,
        (tenant, user): (&str, &str),
    ) -> Result<Option<Self>, StoreError> {
        let intent = done
            .and_then(|done| done.rows.into_iter().next())
            .map(|row| Self::from_row(&row))
            .transpose()?;
        Ok(intent.filter(|intent| intent.owned_by(tenant, user, None)))
    }

    fn from_row(row: &Row) -> Result<Self, StoreError> {
        Ok(Self {
            operation_id: row.text("operation_id")?.to_owned(),
            tenant: row.text("tenant")?.to_owned(),
            user: row.text("user_id")?.to_owned(),
            op: row.text("op")?.to_owned(),
            target: row.text("target")?.to_owned(),
            payload: row.text("payload")?.to_owned(),
            payload_sha256: row.text("payload_sha256")?.to_owned(),
            preview: row.text("preview")?.to_owned(),
            status: Status::parse(row.text("status")?)?,
            expires_at: row.int("expires_at")?,
            result: row.opt_text("result")?.map(str::to_owned),
            created_at: row.int("created_at")?,
            confirmed_at: row.opt_int("confirmed_at")?,
            deferred: match row.opt_text("deferred_status")? {
                None => None,
                Some(status) => Some(Deferral {
                    status: crate::defer::Status::parse(status)?,
                    due_at: row.int("deferred_due_at")?,
                    closed_at: row.opt_int("deferred_closed_at")?,
                    result: row.opt_text("deferred_result")?.map(str::to_owned),
                }),
            },
        })
    }

    /// Whether `tenant`/`user` (canonical) may see or confirm this intent of `op`. The
    /// stored owner is compared in canonical form too, so an intent stored before names were
    /// canonical (as `Alice`) still belongs to `alice`.
    pub fn owned_by(&self, tenant: &str, user: &str, op: Option<&str>) -> bool {
        let same = |stored: &str, given: &str| {
            stored == given || crate::person::canonical(stored).is_ok_and(|c| c == given)
        };
        same(&self.tenant, tenant) && same(&self.user, user) && op.is_none_or(|op| self.op == op)
    }

    /// The status a reader should see: a `PREPARED` intent past its expiry is expired, even
    /// before a confirm marks it so.
    pub fn effective_status(&self, now: i64) -> Status {
        match self.status {
            Status::Prepared if self.expires_at <= now => Status::Expired,
            status => status,
        }
    }

    pub fn json(text: Option<&str>) -> Value {
        text.and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or(Value::Null)
    }
}
