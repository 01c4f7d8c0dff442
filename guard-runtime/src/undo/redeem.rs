//! Undoing one window: under the window's row lock, re-read it, check owner, status and
//! deadline, run the author's undo once, and store its result with the audit record.

use std::future::Future;

use serde_json::Value;

use super::{COLUMNS, Restored, Status, Stored, UndoWindows, Window};
use crate::{
    audit::Event,
    error::Code,
    outcome::Outcome,
    person::Person,
    store::{Dialect, StoreError, Tx},
};

/// What became of an undo.
#[derive(Debug, Clone, PartialEq)]
pub enum Undo {
    /// The author's undo ran now; its result.
    Undone {
        /// The window, now closed.
        window: Window,
        /// What the author's undo returned.
        result: Value,
    },
    /// The window was undone before: the first undo's result, when it ran.
    AlreadyUndone {
        /// The window.
        window: Window,
        /// What the first undo returned.
        result: Value,
        /// When it ran (ms since the Unix epoch).
        at: i64,
    },
    /// The deadline passed and the purge ran: the effect is final.
    Purged {
        /// The window.
        window: Window,
        /// When the purge ran (ms since the Unix epoch).
        at: i64,
    },
    /// The deadline passed (the purge is due or under way): the effect is final.
    Expired {
        /// The window.
        window: Window,
    },
    /// The author's undo can never succeed (it refused with `UNDO_EXPIRED`: what it would
    /// restore changed or went away), now or before: the window ended `LOST` with the reason.
    Lost {
        /// The window.
        window: Window,
        /// Why nothing can be restored, as the author's undo said.
        reason: String,
        /// When the window ended (ms since the Unix epoch).
        at: i64,
    },
    /// The author's undo refused or failed: nothing was restored, and the window stays open.
    Refused {
        /// The window.
        window: Window,
        /// The author's reason (`STATE_CHANGED` when the target was replaced).
        error: crate::error::ToolError,
    },
    /// No window of this owner has this id (anyone else's is not found either).
    NotFound,
}

impl Undo {
    /// How the audit log and the model's tag spell this ending.
    pub fn outcome(&self) -> Outcome {
        match self {
            Undo::Undone { .. } => Outcome::Undone,
            Undo::AlreadyUndone { .. } => Outcome::AlreadyUndone,
            Undo::Purged { .. } | Undo::Expired { .. } | Undo::Lost { .. } => {
                Outcome::Refused(Code::UndoExpired)
            }
            Undo::Refused { .. } => Outcome::UndoRefused,
            Undo::NotFound => Outcome::Refused(Code::OperationNotFound),
        }
    }
}

impl UndoWindows {
    /// Undoes `owner`'s window `operation_id` with the author's `undo`, which runs at most
    /// once per window however many undos and purges race: it runs under the window's row
    /// lock, after the status was read under it and the deadline compared with the
    /// database's clock. Every ending is audited under `trace_id`, in the transaction that
    /// closes the window if it closes.
    pub(crate) async fn undo<Fut>(
        &self,
        owner: &Person,
        operation_id: &str,
        trace_id: &str,
        undo: impl FnOnce(Window) -> Fut,
    ) -> Result<Undo, StoreError>
    where
        Fut: Future<Output = Restored>,
    {
        let mut tx = self.store.begin().await?;
        let stored = read_locked(&mut tx, operation_id)
            .await?
            .filter(|stored| stored.owned_by(owner));
        let now = crate::store::ledger::clock::now(&mut tx).await?;
        let answer = match stored {
            None => Undo::NotFound,
            Some(stored) => match (stored.status, stored.closed_at, stored.result) {
                (Status::Undone, Some(at), Some(result)) => Undo::AlreadyUndone {
                    window: stored.window,
                    result: serde_json::from_str(&result).map_err(|e| {
                        StoreError::Other(format!("a stored undo result is not JSON: {e}"))
                    })?,
                    at,
                },
                (Status::Lost, Some(at), Some(reason)) => Undo::Lost {
                    window: stored.window,
                    reason: lost_reason(&reason)?,
                    at,
                },
                (Status::Purged, Some(at), _) => Undo::Purged {
                    window: stored.window,
                    at,
                },
                (Status::Open, ..) if now >= stored.window.expires_at => Undo::Expired {
                    window: stored.window,
                },
                (Status::Open, ..) => match undo(stored.window.clone()).await {
                    Ok(result) => {
                        let text = crate::canonical::canonical_json(&result).map_err(|e| {
                            StoreError::Other(format!(
                                "the undo's result has no canonical JSON: {e}"
                            ))
                        })?;
                        let closed = tx
                            .execute(
                                "UPDATE guard_undo SET status = 'UNDONE', closed_at = $2, result = $3
                                 WHERE operation_id = $1 AND status = 'OPEN'",
                                &[operation_id.into(), now.into(), text.into()],
                            )
                            .await?;
                        if closed != 1 {
                            return Err(StoreError::Other(format!(
                                "undo window {operation_id} closed under its own lock"
                            )));
                        }
                        Undo::Undone {
                            window: stored.window,
                            result,
                        }
                    }
                    Err(error) if error.code() == Code::UndoExpired => {
                        let reason = error.message().to_owned();
                        let text = serde_json::json!({ "reason": reason }).to_string();
                        tx.execute(
                            "UPDATE guard_undo SET status = 'LOST', closed_at = $2, result = $3
                             WHERE operation_id = $1 AND status = 'OPEN'",
                            &[operation_id.into(), now.into(), text.into()],
                        )
                        .await?;
                        Undo::Lost {
                            window: stored.window,
                            reason,
                            at: now,
                        }
                    }
                    Err(error) => Undo::Refused {
                        window: stored.window,
                        error,
                    },
                },
                (status, ..) => {
                    return Err(StoreError::Other(format!(
                        "undo window {operation_id} is {status:?} without its closing time or result"
                    )));
                }
            },
        };
        let record = record(&answer, owner, operation_id, trace_id);
        self.commit(tx, Vec::new(), &record).await?;
        Ok(answer)
    }
}

/// The reason a `LOST` window keeps in its `result`.
fn lost_reason(stored: &str) -> Result<String, StoreError> {
    serde_json::from_str::<Value>(stored)
        .ok()
        .and_then(|v| v["reason"].as_str().map(str::to_owned))
        .ok_or_else(|| StoreError::Other("a lost undo window keeps no reason".into()))
}

/// The window `operation_id`, locked until `tx` ends (SQLite's transaction already holds
/// the one write lock).
async fn read_locked(tx: &mut Tx, operation_id: &str) -> Result<Option<Stored>, StoreError> {
    let lock = match tx.dialect() {
        Dialect::Postgres => " FOR UPDATE",
        Dialect::Sqlite => "",
    };
    let sql = format!("SELECT {COLUMNS} FROM guard_undo WHERE operation_id = $1{lock}");
    tx.query_opt(&sql, &[operation_id.into()])
        .await?
        .map(|row| Stored::from_row(&row))
        .transpose()
}

/// The undo call's audit record: who asked, which window, and how it ended.
fn record(answer: &Undo, owner: &Person, operation_id: &str, trace_id: &str) -> Event {
    let mut event = Event::new(super::TOOL, answer.outcome(), trace_id)
        .identity(owner.tenant(), owner.user())
        .field("operation_id", operation_id);
    let window = match answer {
        Undo::Undone { window, result } | Undo::AlreadyUndone { window, result, .. } => {
            event = event.digest("result_sha256", result);
            Some(window)
        }
        Undo::Purged { window, .. } | Undo::Expired { window } => Some(window),
        Undo::Lost { window, reason, .. } => {
            event = event.field("reason", reason.as_str());
            Some(window)
        }
        Undo::Refused { window, error } => {
            event = event.field("code", error.code().as_str());
            Some(window)
        }
        Undo::NotFound => None,
    };
    if let Some(window) = window {
        event = event
            .field("undoes", window.tool.as_str())
            .field("target", window.target.as_str());
    }
    event
}
