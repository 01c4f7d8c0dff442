//! The guarantees as a user meets them: the example binaries driven by real third-party
//! clients (the Python and TypeScript MCP SDKs, the MCP Inspector CLI, the official MCP
//! conformance suite), over streamable HTTP, across restarts, through the approval page in
//! headless Chromium, and the README's quickstart and recipes. These tests need Python, Node
//! and Chromium (installed by `scripts/python-venv.sh`, `scripts/node-deps.sh`,
//! `scripts/inspector-deps.sh`, `scripts/conformance-deps.sh` and `scripts/chromium.sh`), and
//! fail, never skip, without them. `tests/README.md` maps each guarantee to its tests.

// Shared by the three test binaries, each of which uses only part of it.
#[allow(dead_code, unused_macros)]
#[macro_use]
#[path = "../support/mod.rs"]
mod support;

mod approval_continues_when_called_again;
mod approval_holds_across_mrtr_retries;
mod approval_needs_two_other_people;
mod approval_page_states_the_terms;
mod approval_runs_as_a_task;
mod approvals_count_only_decisions_taken_on_the_page;
mod approvers_are_who_they_say;
mod conformance_suite_passes;
mod disclosures_are_approved_on_the_page;
mod http_serves_only_local_origins;
mod production_deploys_need_two_approvals;
mod python_sdk_drives_the_examples;
mod readme_recipes_work_as_written;
mod the_demo_verifies_its_own_log;
mod typescript_sdk_drives_the_examples;
mod used_states_stay_spent_after_a_restart;
