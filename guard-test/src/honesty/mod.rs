//! The annotation-honesty kit: runs a tool of a real rmcp server through eight cases, each on
//! a fresh fixture, observes the state the tool can touch before and after, and checks
//! `readOnlyHint`, `idempotentHint` and `destructiveHint` against what really changed.
//!
//! 1. one call with a valid input, with its fixture's modification times
//!    ([`Observe::times`]) read before and after it;
//! 2. byte-identical repeats right after it ([`Kit::repeats`], default
//!    [`DEFAULT_REPEATS`]): the odd repeats on the first call's session (so the JSON-RPC
//!    request id moves on), the even ones each on a new session whose call carries another
//!    request id than a fresh session's first call, so a tool that deduplicates on the
//!    request id, on the session, or writes on every n-th call (n ≤ repeats + 1) is seen;
//!    the modification times are read before the first call and after the last repeat;
//! 3. nonexistent and invalid inputs, each also repeated [`Kit::repeats`] times (times read
//!    around each input's calls, as in case 2);
//! 4. the client's connection breaks after the server received the call, then a new client
//!    retries the same call;
//! 5. [`Kit::in_flight`] identical calls released together from as many clients, in up to
//!    [`Kit::races`] runs on fresh fixtures for an idempotent claim; the report names the run
//!    in which a race first showed;
//! 6. what the valid calls of cases 1 and 2 deleted or overwrote, against `destructiveHint`;
//! 7. what the answers of those calls disclosed (a credential such as a private key or a
//!    cloud token, a capability such as a signed link or a bearer token, bytes and items),
//!    against the tool's declared `discloses` class and caps in `_meta.guard`;
//! 8. whether the identical calls of case 2, on one fixture, of a read-only tool answered
//!    alike (a warning with the evidence if not: it reads or changes state the kit does not
//!    observe).
//!
//! A `readOnlyHint: true` tool fails if any case changed any observed state, or if the calls
//! of case 1, 2 or 3 moved a modification time on their fixture (a touch is a write). An
//! `idempotentHint: true` tool fails if any repeat of a valid or a failed call changed
//! anything, or if the retry or any concurrent run left a state different from one call. A
//! `destructiveHint: false` (or read-only) tool fails if a valid call deleted or overwrote an
//! observed item ([`Observe::items`]: a row, a file, a message); adding items is not
//! destructive. A read-only or disclosing tool fails if an answer shows a credential or a
//! capability its declared class does not cover, or more than its caps. Modification times
//! are never compared across fixtures, nor held against `idempotentHint` or
//! `destructiveHint`: writing the same bytes again moves them without changing anything.
//! Claims a tool does not make are reported, not judged. Annotations are
//! hints; this kit is how a server proves its hints.
//!
//! # What the kit sees, and what it cannot
//!
//! It sees **only what the fixture's observers read**, at the moments between calls:
//!
//! - [`SqliteObserver`]: every table's rows and schema, indexes, views, triggers,
//!   `sqlite_sequence`, `user_version` and `application_id` of one SQLite file (minus
//!   columns it was told to ignore). It does not see other pragmas (`journal_mode`, `page_size`, …), the file's
//!   modification time or size, its `-wal` and `-shm` files, or another database;
//! - [`DirObserver`]: every entry under one directory, with type, size, content digest and
//!   permissions, and its modification time, compared only before and after calls on one
//!   fixture (not for the directory a skipped path sits in); not access times, not anything
//!   outside the root, not what a symlink points at beyond its text;
//! - [`OutboxObserver`]: the messages sent through guard's outbox; not a message sent any
//!   other way;
//! - [`FnObserver`] or your own [`Observe`]: whatever you read.
//!
//! Everything else is **invisible** and passes unseen: a file elsewhere on disk, in-memory
//! state of the server (caches, counters, a `static`), an HTTP call to a remote API, a
//! message on a queue, a process spawned, a log line, time-dependent behaviour between
//! readings, and any state of another fixture. A tool that writes there lies undetected
//! unless you observe it. The kit also judges only the calls it makes: the inputs you give
//! in the [`Probe`], the number of repeats and runs you configure; a write on the
//! hundredth call, or a race rarer than the runs can show, is not seen. A modification time
//! is only as fine as the filesystem keeps it (a nanosecond on ext4, XFS, Btrfs and APFS,
//! 100 ns on NTFS, a second or two on some network filesystems and FAT): a touch within the
//! same tick as the file's last change, or one that sets the time it already had, is not
//! seen; nor is a touch in the retry or concurrent cases, which compare no times.
//!
//! # Observing state of your own
//!
//! Implement [`Observe`] (a label and a [`Snapshot`] of key → description; optionally
//! [`Observe::items`] item by item for the `destructiveHint` judgement) or wrap a closure in
//! [`FnObserver`], and add it with [`Fixture::observe`]. For a remote system, read its
//! records (or a recording fake's) in `snapshot`; for a counter, report its value; for a file
//! outside the fixture, its digest. Readings of fresh fixtures are compared with each other,
//! so describe state, never a timestamp or a temporary path; a time that must not move
//! within one fixture belongs in [`Observe::times`].
//!
//! ```no_run
//! # async fn run(db: std::path::PathBuf, server: impl rmcp::ServerHandler + Clone + Send + Sync + 'static) {
//! use rmcp_guard_test::honesty::{Fixture, Kit, Probe, SqliteObserver};
//! let kit = Kit::new(move || {
//!     let (db, server) = (db.clone(), server.clone());
//!     async move { Fixture::new(server).observe(SqliteObserver::new(db)) }
//! });
//! let report = kit.check(&Probe::new("list_tables", serde_json::json!({}))).await;
//! println!("{report}");
//! assert!(report.passed());
//! # }
//! ```

// One role per file: `kit` holds the kit, what it is given and the order of the cases;
// `cases` runs each case and `observed` keeps what it observed; `judging` decides from those
// observations whether a claim holds; `reporting` writes the report a test prints and
// asserts on. `session` connects the clients, `proxy` stands between them and the server,
// and `observe` holds the observers, one file each.
mod cases;
mod disclosed;
mod judging;
mod kit;
mod observe;
mod observed;
mod proxy;
mod reporting;
mod session;

pub use kit::{DEFAULT_IN_FLIGHT, DEFAULT_RACES, DEFAULT_REPEATS, Fixture, Kit, Probe};
#[cfg(feature = "sqlite")]
#[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
pub use observe::SqliteObserver;
pub use observe::{
    Change, DirObserver, FnObserver, Observe, OutboxObserver, Snapshot, items_all, snapshot_all,
};
pub use proxy::{Gate, Link, Reaction};
pub use reporting::{CaseReport, Claims, Declared, Report, Verdict};
