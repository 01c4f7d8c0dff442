//! The tables of approvals on the approval page, so that an approval outlives the process
//! that opened it: a restart, or another replica on the same store, finds the request, its
//! links and its decisions.
//!
//! - `guard_approvals`: one row per approval: what was asked (tool, target, summary), by
//!   whom (the requester's canonical tenant and user), the call's trace id, the SHA-256 of
//!   what the call is bound to, how many approvals it needs, its deadline and its status.
//! - `guard_approval_links`: one row per one-time link, keyed by the SHA-256 of its token
//!   (the token itself is never stored), with the person it speaks for and its CSRF token.
//! - `guard_approval_decisions`: one row per decision, with the canonical approver, the
//!   confusable skeleton of their name, and when.
//!
//! What must never happen is refused by the database, on both engines and for every role,
//! the tables' owner included: two decisions by one person on one approval (the primary key
//! on the canonical approver, and a unique skeleton for a look-alike of that approver), and
//! the rules each table declares on the ledger ([`rules`]): a decision only on a pending
//! approval before its deadline by the database's own clock (so a replica whose clock runs
//! late cannot decide late), through the decider's own unused link, from an approver the
//! approval lists other than the requester; an approval that opens pending and listing
//! enough approvers, whose status only moves forward, never changes what it asks, and is
//! `APPROVED` or `REJECTED` only with the decisions guard counts; a link that speaks for one
//! person and decides once; a use only of an approved approval; a task that ends once; and
//! a pending approval kept until its deadline, its links, decisions, use and task deleted
//! only with it.
//!
//! A later step ([`take_over`](take_over::take_over)) adds what lets the requester's next call take up an
//! approval instead of opening another: `guard_approvals.fingerprint`, the effect the
//! approvers were shown (it never changes), and `guard_approval_uses`, one row
//! per approval whose effect was let run, its primary key the rule that an approval runs
//! its effect once whoever asks, and only an `APPROVED` approval in.
//!
//! A third ([`tasks`](tasks::tasks)) adds `guard_approval_tasks`: the approvals answered as an MCP Task on
//! protocol 2026-07-28, with the call's canonical arguments (so any replica can run it once
//! approved), which `tasks/get` claims the run (`runner`, `run_at`), and how the task ended
//! (`ended`, `result`: completed, failed or cancelled). What a task asks never changes, and
//! it ends once.
//!
//! A fourth ([`seals`](seals::seals)) adds `guard_approvals.approvers` (the canonical users an approval
//! asks, fixed), the seals of links and decisions (`guard_approval_links.seal`,
//! `guard_approval_decisions.link_sha256` and `.seal`; guard counts only decisions whose
//! seals verify, see `approval::decisions`), with the rules refusing an approval opened
//! decided, unlisted or listing its requester, a link or a decision for anyone it does not
//! list, `APPROVED` without enough sealed approvals, and a change of the list or a seal.
//!
//! Times are milliseconds since the Unix epoch, like every time guard stores.
//!
//! Each step is a file of its own and adds tables and columns only: their rules are
//! declared in [`rules`] and the ledger creates them (schema step 17, which also drops the
//! triggers these steps wrote by hand per engine before).

pub(crate) mod rules;
mod seals;
mod tables;
mod take_over;
mod tasks;

pub(crate) use seals::seals;
pub(crate) use tables::create;
pub(crate) use take_over::take_over;
pub(crate) use tasks::tasks;
