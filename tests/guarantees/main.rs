//! The guarantees of a guarded call, tried in process: real rmcp clients and servers over an
//! in-memory duplex, on both protocol eras, with the disk and the database checked after each
//! call (and the safe-ops binary where a guarantee concerns its flags, environment or
//! signals). No database server, no browser, no third-party client: `cargo test -p
//! guard-tests --test guarantees` runs anywhere. `tests/README.md` maps each guarantee to its
//! tests.

// Shared by the three test binaries, each of which uses only part of it.
#[allow(dead_code, unused_macros)]
#[macro_use]
#[path = "../support/mod.rs"]
mod support;

mod annotations_are_honest;
mod answers_are_revalidated;
mod asked_input_is_revalidated_before_the_handler;
mod batches_run_only_picked_items;
mod deferred_calls_wait;
mod deletes_can_be_undone;
mod disclosure_grants_cover_only_what_was_seen;
mod disclosures_are_asked_and_bounded;
mod download_links_are_asked_and_signed;
mod effects_need_the_proof;
mod fails_closed_without_elicitation;
mod files_stay_in_the_sandbox;
mod forms_publish_exact_schemas;
mod grants_are_narrow_counted_and_recorded;
mod guarded_names_stay_guarded;
mod guarded_tools_run_only_their_dispatched_call;
mod honesty_kit_catches_lies;
mod identity_comes_from_trusted_context;
mod malformed_arguments_are_refused;
mod only_listed_tools_exist;
mod outcomes_match_effects;
mod own_routes_travel_with_the_router;
mod previews_run_as_pinned;
mod read_only_cannot_write;
mod request_states_are_sealed_and_spent_once;
mod unknown_arguments_are_refused;
