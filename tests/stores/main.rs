//! What the stores guarantee: two-phase operations and idempotency keys on SQLite and
//! PostgreSQL (in process and as several server processes), the store's schema and
//! transactions, the database roles, and the audit log. The PostgreSQL tests need
//! `GUARD_TEST_PG_URL`; without it they say loudly that they were skipped, and under `CI`
//! they fail. `tests/README.md` maps each guarantee to its tests.

// Shared by the three test binaries, each of which uses only part of it.
#[allow(dead_code, unused_macros)]
#[macro_use]
#[path = "../support/mod.rs"]
mod support;

mod approvals_hold_in_the_database;
mod audit_entries_are_sequenced_after_commit;
mod audit_log_detects_tampering;
mod confirms_hold_across_processes;
mod database_refuses_a_compromised_server;
mod deferred_calls_run_once;
mod deferred_confirms_run_once;
mod every_outcome_is_audited;
mod grants_hold_in_the_database;
mod intents_confirm_once_for_their_owner;
mod keyed_calls_run_once;
mod postgres_read_handles_cannot_write;
mod servers_have_their_logs_witnessed;
mod spent_states_and_approval_rows_hold;
mod stores_migrate_and_never_block;
mod two_phase_pairs_take_pinned_trips;
mod undo_windows_hold;
mod worlds_leave_no_schema_behind;
