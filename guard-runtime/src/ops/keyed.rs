//! Idempotency keys, the step `#[idempotent(key = field, ttl = "...")]` expands into.
//!
//! A tool that creates something takes a model-visible key. Guard stores (tenant, user,
//! tool, key) with the SHA-256 of the canonical arguments, the status, the result and an
//! expiry in the operation store's `guard_idempotency` table, whose primary key is that
//! tuple. The row is inserted `RUNNING` inside the call's own transaction, the handler's
//! effect runs in that transaction, and the row commits only as `COMPLETED` with the result,
//! in the same commit as the effect. So:
//!
//! - same key, same arguments, completed: the stored result, `already_processed: true`, and
//!   the handler does not run;
//! - same key, other arguments: `IDEMPOTENCY_KEY_REUSED`, nothing runs;
//! - same key while the first call is still running: on PostgreSQL `IN_PROGRESS` (the first
//!   call holds a transaction-scoped advisory lock on the key); on SQLite, whose transactions
//!   take the write lock up front, the second call waits for the first and then gets its
//!   result. Either way the handler never runs twice;
//! - a call that fails, is cancelled or dies before its commit leaves no row: the key is free
//!   and a retry runs;
//! - another tenant's or user's key is another row: keys never cross identities;
//! - an expired key is never answered from: its own record is removed under the key's lock
//!   before the lookup, and the call runs again; other users' expired keys are purged
//!   in a short transaction of their own before the call's begins (`store::purge`), never
//!   inside it, so a slow call holds no row but its own key's and no other tenant waits on
//!   it. On SQLite, whose one writer serialises every transaction, a keyed call that is
//!   running still holds the whole store until it commits; that is the engine, not the
//!   purge.
//!
//! What guard cannot do: make a remote effect idempotent. A handler that calls another
//! system passes [`Keyed::remote_key`] to that system's own idempotency mechanism; without
//! one, a retry after a lost answer may repeat the remote effect, and the tool is not
//! idempotent whatever guard stores.

use std::time::Duration;

use rmcp::model::CallToolResponse;
use serde::Serialize;
use serde_json::{Value, json};

use super::{Configured, call::Caller, rfc3339};
use crate::canonical::sha256_hex;
use crate::entry::dispatch::GuardCall;
use crate::store::{
    SqlValue, Statement, StoreError, Tx,
    lock::{self, Lock},
    now_ms,
    purge::{self, Expiring},
};
use crate::{
    audit::Event,
    canonical::canonical_json,
    error::{Code, ToolError},
    identity::Identity,
    outcome::{Outcome, Step},
};

/// The longest key guard accepts.
const MAX_KEY_LEN: usize = 128;

/// A keyed tool's options, fixed at compile time by `#[idempotent(key = ..., ttl = ...)]`.
#[derive(Debug)]
pub struct KeyedSpec {
    /// The tool's name, as routed.
    pub tool: &'static str,
    /// The argument that carries the key, as the model sees it.
    pub key_field: &'static str,
    /// How long a completed key answers with its stored result.
    pub ttl: Duration,
}

/// A keyed call that owns its key, handed to the author's handler: the trusted caller, the
/// key, and the transaction the effect and the key's record commit in.
pub struct Keyed {
    caller: Caller,
    spec: &'static KeyedSpec,
    tx: Tx,
    key: String,
    now: i64,
}

impl Keyed {
    /// Who is calling, from the identity provider.
    pub fn caller(&self) -> &Identity {
        &self.caller.identity
    }

    /// The key as the model sent it.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The key to hand a remote system's own idempotency mechanism: the SHA-256 of the
    /// tenant, user, tool and key, so one user's key never matches another's over there.
    pub fn remote_key(&self) -> String {
        scoped_hash(&self.caller.identity, self.spec.tool, &self.key)
    }

    /// The transaction the effect commits in, with the key's record.
    pub fn tx(&mut self) -> &mut Tx {
        &mut self.tx
    }

    /// The call's trace id, as its audit records and its answer carry it.
    pub fn trace_id(&self) -> &str {
        &self.caller.trace_id
    }

    /// Identifies the caller, checks the key and either claims it (the handler runs next)
    /// or ends the call with the stored result or a refusal.
    #[doc(hidden)]
    pub async fn begin<A: KeyedArgs>(
        guard: &dyn Configured,
        call: &GuardCall,
        spec: &'static KeyedSpec,
        key: &str,
        args: &A,
    ) -> Step<Self> {
        let caller = Caller::start(guard, call, spec.tool, spec.tool, &[]).await?;
        if let Err(problem) = check_key(key, spec.key_field) {
            audit_alone(&caller, Outcome::Refused(Code::InvalidInput), None).await;
            return Err(caller.refuse(problem, None));
        }
        let body = match args.body() {
            Ok(body) => body,
            Err(e) => return Err(caller.refuse(ToolError::internal(e), None)),
        };
        let body = match canonical_json(&body) {
            Ok(canonical) => sha256_hex(canonical.as_bytes()),
            Err(e) => {
                audit_alone(&caller, Outcome::Refused(Code::InvalidInput), Some(key)).await;
                let refusal = ToolError::invalid_input(format!("Nothing was done: {e}."));
                return Err(caller.refuse(refusal, None));
            }
        };
        let now = now_ms();
        purge::expired_or_log(&*caller.ops.store, Expiring::IdempotencyKeys, now).await;
        let mut tx = match caller.ops.store.begin().await {
            Ok(tx) => tx,
            Err(e) => return Err(caller.unavailable(&e, "Call again with the same key")),
        };
        let claim = Claim {
            caller: &caller,
            spec,
            key,
            body: &body,
            now,
        };
        match claim.run(&mut tx).await {
            Ok(Claimed::Ours) => Ok(Self {
                caller,
                spec,
                tx,
                key: key.to_owned(),
                now,
            }),
            Ok(Claimed::Done(outcome, answer)) => {
                let committed = async {
                    audit(&caller, &mut tx, outcome, Some(key)).await?;
                    tx.commit().await?;
                    caller.committed();
                    Ok::<_, StoreError>(())
                }
                .await;
                match committed {
                    Ok(()) => Err(answer),
                    Err(e) => Err(caller.unavailable(&e, "Call again with the same key")),
                }
            }
            Err(e) if e.is_unique() => {
                drop(tx);
                Err(in_progress(&caller, spec, key).await)
            }
            Err(e) => {
                drop(tx);
                Err(caller.unavailable(&e, "Call again with the same key"))
            }
        }
    }

    /// Stores the handler's result under the key and commits it with the effect; a refusal
    /// rolls both back and frees the key.
    #[doc(hidden)]
    pub async fn finish<R: Serialize>(
        self,
        outcome: Result<R, ToolError>,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        let Self {
            caller,
            spec,
            mut tx,
            key,
            now,
        } = self;
        let result = match outcome
            .and_then(|r| serde_json::to_value(r).map_err(ToolError::internal))
        {
            Ok(result) => result,
            Err(refusal) => {
                if let Err(e) = tx.rollback().await {
                    tracing::warn!(trace_id = %caller.trace_id, error = %e, "rollback after a refused keyed call failed; the connection is discarded");
                }
                audit_alone(&caller, Outcome::Refused(refusal.code()), Some(&key)).await;
                return Ok(*caller.refuse(refusal, None));
            }
        };
        let stored = async {
            let who = &caller.identity;
            let changed = tx
                .execute(
                    "UPDATE guard_idempotency SET status = 'COMPLETED', result = $1, completed_at = $2
                     WHERE tenant = $3 AND user_id = $4 AND tool = $5 AND idem_key = $6
                       AND status = 'RUNNING'",
                    &[
                        result.to_string().into(),
                        now_ms().into(),
                        who.tenant.as_str().into(),
                        who.user.as_str().into(),
                        spec.tool.into(),
                        key.as_str().into(),
                    ],
                )
                .await?;
            if changed != 1 {
                return Err(StoreError::Other(format!(
                    "the RUNNING record of key {key} changed under its own transaction ({changed} rows)"
                )));
            }
            audit(&caller, &mut tx, Outcome::Completed, Some(&key)).await?;
            tx.commit().await?;
            caller.committed();
            Ok(())
        }
        .await;
        if let Err(e) = stored {
            tracing::error!(trace_id = %caller.trace_id, tool = spec.tool, error = %e, "storing a keyed call's result failed; it may or may not have committed");
            audit_alone(&caller, Outcome::Refused(Code::ResultUnknown), Some(&key)).await;
            return Ok(*caller.refuse(
                ToolError::new(
                    Code::ResultUnknown,
                    format!(
                        "The store failed while saving this call, so it may or may not have taken effect. Call {} again with the same {} and the same arguments: if it took effect you get its result, otherwise it runs once (trace_id {}).",
                        spec.tool, spec.key_field, caller.trace_id
                    ),
                ),
                None,
            ));
        }
        Ok(caller.answer_plain(
            Outcome::Completed,
            body(&key, false, result, now, now.saturating_add(ttl_ms(spec))),
        ))
    }
}

/// What looking the key up found.
enum Claimed {
    /// No record: this call inserted the `RUNNING` row and runs the handler.
    Ours,
    /// The call ends here with this outcome and answer.
    Done(Outcome, Box<CallToolResponse>),
}

/// One lookup-or-insert of a key, in the call's transaction.
struct Claim<'a> {
    caller: &'a Caller,
    spec: &'static KeyedSpec,
    key: &'a str,
    body: &'a str,
    now: i64,
}

impl Claim<'_> {
    async fn run(&self, tx: &mut Tx) -> Result<Claimed, StoreError> {
        let who = &self.caller.identity;
        // Held until this transaction ends: a second call with the key answers at once
        // instead of waiting on the first one's uncommitted row.
        let scoped = scoped_hash(who, self.spec.tool, self.key);
        if !lock::try_hold(tx, Lock::Key(&scoped)).await? {
            return Ok(Claimed::Done(
                Outcome::Refused(Code::InProgress),
                in_progress_answer(self.caller, self.spec, self.key),
            ));
        }
        // Keys are stored under the canonical names; one stored before names were canonical
        // is found under the spelling it was stored with.
        let (tenant, user) = &self.caller.spelled;
        let params: Vec<SqlValue> = vec![
            who.tenant.as_str().into(),
            who.user.as_str().into(),
            self.spec.tool.into(),
            self.key.into(),
            tenant.as_str().into(),
            user.as_str().into(),
        ];
        let mut expired = params.clone();
        expired.push(self.now.into());
        // Only this key's own expired record goes here, under the key's lock and before the
        // lookup, so an expired key never answers and the insert below finds its place free;
        // other users' expired keys are purged outside this transaction (`purge`), and this
        // one never holds their rows.
        let done = tx
            .pipeline(&[
                Statement::execute(
                    "DELETE FROM guard_idempotency
                     WHERE ((tenant = $1 AND user_id = $2) OR (tenant = $5 AND user_id = $6))
                       AND tool = $3 AND idem_key = $4 AND expires_at <= $7",
                    expired,
                ),
                Statement::query(
                    "SELECT body_sha256, status, result, completed_at, expires_at FROM guard_idempotency
                     WHERE ((tenant = $1 AND user_id = $2) OR (tenant = $5 AND user_id = $6))
                       AND tool = $3 AND idem_key = $4
                     ORDER BY tenant = $1 AND user_id = $2 DESC LIMIT 1",
                    params,
                ),
            ])
            .await?;
        let row = done
            .into_iter()
            .nth(1)
            .and_then(|d| d.rows.into_iter().next());
        let Some(row) = row else {
            let expires_at = self.now.saturating_add(ttl_ms(self.spec));
            tx.execute(
                "INSERT INTO guard_idempotency
                    (tenant, user_id, tool, idem_key, body_sha256, status, created_at, expires_at, trace_id)
                 VALUES ($1, $2, $3, $4, $5, 'RUNNING', $6, $7, $8)",
                &[
                    who.tenant.as_str().into(),
                    who.user.as_str().into(),
                    self.spec.tool.into(),
                    self.key.into(),
                    self.body.into(),
                    self.now.into(),
                    expires_at.into(),
                    self.caller.trace_id.as_str().into(),
                ],
            )
            .await?;
            return Ok(Claimed::Ours);
        };
        if row.text("body_sha256")? != self.body {
            return Ok(Claimed::Done(Outcome::Refused(Code::IdempotencyKeyReused),
                self.caller.refuse(
                    ToolError::new(
                        Code::IdempotencyKeyReused,
                        format!(
                            "{} `{}` was already used with other arguments, so nothing was done. Use a new {} for a new request; to learn what the first request did, call again with its exact arguments.",
                            self.spec.key_field, self.key, self.spec.key_field
                        ),
                    ),
                    None,
                ),
            ));
        }
        if row.text("status")? != "COMPLETED" {
            return Ok(Claimed::Done(
                Outcome::Refused(Code::InProgress),
                in_progress_answer(self.caller, self.spec, self.key),
            ));
        }
        let result: Value = serde_json::from_str(row.text("result")?)
            .map_err(|e| StoreError::Column(format!("stored result of a key: {e}")))?;
        let answer = self.caller.answer_plain(
            Outcome::AlreadyProcessed,
            body(
                self.key,
                true,
                result,
                row.int("completed_at")?,
                row.int("expires_at")?,
            ),
        );
        Ok(Claimed::Done(Outcome::AlreadyProcessed, Box::new(answer)))
    }
}

/// The answer to a keyed call: the result, whether it is a stored one, and until when the
/// key holds it.
fn body(key: &str, already_processed: bool, result: Value, at: i64, expires_at: i64) -> Value {
    json!({
        "idempotency_key": key,
        "already_processed": already_processed,
        "completed_at": rfc3339(at),
        "key_expires_at": rfc3339(expires_at),
        "result": result,
    })
}

fn in_progress_answer(caller: &Caller, spec: &KeyedSpec, key: &str) -> Box<CallToolResponse> {
    caller.refuse(
        ToolError::new(
            Code::InProgress,
            format!(
                "The first call with {} `{key}` is still running, so this one did nothing. Wait a moment and call {} again with the same {} and arguments to get its result.",
                spec.key_field, spec.tool, spec.key_field
            ),
        ),
        None,
    )
}

/// A unique-constraint refusal on insert: another transaction holds the key.
async fn in_progress(caller: &Caller, spec: &KeyedSpec, key: &str) -> Box<CallToolResponse> {
    audit_alone(caller, Outcome::Refused(Code::InProgress), Some(key)).await;
    in_progress_answer(caller, spec, key)
}

/// A key is 1 to 128 ASCII letters, digits, `-`, `_`, `.` or `:`: no spaces, no invisible
/// or look-alike characters that would make two keys the model thinks equal differ.
fn check_key(key: &str, field: &str) -> Result<(), ToolError> {
    let ok = !key.is_empty()
        && key.len() <= MAX_KEY_LEN
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'));
    if ok {
        return Ok(());
    }
    Err(ToolError::invalid_input(format!(
        "{field} must be 1 to {MAX_KEY_LEN} ASCII letters, digits, '-', '_', '.' or ':' (a new UUID per request is best); nothing was done. Call again with such a key."
    )))
}

fn scoped_hash(who: &Identity, tool: &str, key: &str) -> String {
    // An array of strings serializes one way only.
    let scoped = json!([who.tenant, who.user, tool, key]).to_string();
    sha256_hex(scoped.as_bytes())
}

fn ttl_ms(spec: &KeyedSpec) -> i64 {
    i64::try_from(spec.ttl.as_millis()).unwrap_or(i64::MAX)
}

/// Audits a keyed call's outcome inside `tx`: the one place keyed outcomes reach the
/// audit path.
async fn audit(
    caller: &Caller,
    tx: &mut Tx,
    outcome: Outcome,
    key: Option<&str>,
) -> Result<(), StoreError> {
    let record = record(caller, outcome, key);
    caller.audit(tx, &record).await
}

/// Like [`audit`], in a transaction of its own, for outcomes whose transaction rolled back.
async fn audit_alone(caller: &Caller, outcome: Outcome, key: Option<&str>) {
    let record = record(caller, outcome, key);
    caller.audit_alone(&record).await;
}

fn record(caller: &Caller, outcome: Outcome, key: Option<&str>) -> Event {
    caller
        .record(outcome, None, None, None)
        .field("idempotency_key", key)
}

/// A keyed tool's arguments as guard hashes them: serialized, then canonical JSON.
#[diagnostic::on_unimplemented(
    message = "the arguments `{Self}` of a keyed tool cannot be hashed",
    label = "needs `#[derive(serde::Serialize)]`",
    note = "guard binds an idempotency key to the SHA-256 of the canonical arguments, so a reused key with other arguments is refused: derive `Serialize` on `{Self}` next to `Deserialize`"
)]
pub trait KeyedArgs {
    /// The arguments as a JSON value, before canonical encoding.
    fn body(&self) -> Result<serde_json::Value, serde_json::Error>;
}
impl<A: serde::Serialize> KeyedArgs for A {
    fn body(&self) -> Result<serde_json::Value, serde_json::Error> {
        serde_json::to_value(self)
    }
}

#[cfg(test)]
mod tests {
    use super::check_key;

    #[test]
    fn keys_are_plain_ascii_tokens() {
        for good in ["a", "0b6f-41c2:retry_1.x", &"k".repeat(128)] {
            assert!(check_key(good, "request_id").is_ok(), "{good}");
        }
        for bad in [
            "",
            " a",
            "a b",
            "a\u{200b}",
            "ключ",
            "a\n",
            &"k".repeat(129),
        ] {
            let error = check_key(bad, "request_id").expect_err(bad);
            assert!(error.to_string().contains("request_id must be 1 to 128"));
        }
    }
}
