//! The approvals' rules as ledger declarations: an approval, its links, its decisions, its
//! use and its task are each a row that says who may do what to which approval until when,
//! whose status only moves forward. The ledger creates their triggers on both engines
//! (schema step "approval rules", in `crate::schema`); what is the approvals' own (a
//! decision names a listed approver other than the requester and the link it came through;
//! an approval's status matches the decisions counted) is written here, in the ledger's
//! words. Refusals are constraint failures on PostgreSQL too: guard meets one when another
//! replica decided or ended the approval first, and answers that the approval changed.

use crate::store::ledger::{Event, Kept, Ledger, Opens, Refusal, Rule, Status, When};

/// `guard_approvals`: opened pending, listing enough approvers and never its requester;
/// decided only before its deadline, `APPROVED` only with its required counted approvals,
/// `REJECTED` only with a counted rejection; ended once; what it asks never changes.
pub(crate) const APPROVALS: Ledger = Ledger {
    table: "guard_approvals",
    row: "approval",
    key: &["approval_id"],
    owner: &["tenant", "user_id"],
    status: Status::Column {
        column: "status",
        initial: "PENDING",
        ends: &["APPROVED", "REJECTED", "EXPIRED", "WITHDRAWN"],
        ended: "ended",
        hint: "Ask for the action again.",
    },
    opens: Some(Opens {
        values: &[],
        empty: &["ended_at", "ended_by", "typed"],
        words: "PENDING and undecided",
    }),
    fixed: &[
        "tool",
        "message",
        "target",
        "summary",
        "trace_id",
        "bound_sha256",
        "expected",
        "secret_label",
        "required",
        "created_at",
        "expires_at",
        "approvers",
        "fingerprint",
    ],
    fixed_words: "request, approvers and deadline",
    rules: &[
        Rule {
            name: "lists_approvers",
            on: Event::Insert,
            when: When::Each {
                sqlite: "CASE WHEN json_valid(NEW.approvers) AND json_type(NEW.approvers) = 'array' \
                         THEN EXISTS (SELECT 1 FROM json_each(NEW.approvers) e \
                                      WHERE e.type <> 'text' OR e.value = NEW.user_id) \
                           OR (NEW.required > 1 \
                               AND json_array_length(NEW.approvers) < NEW.required) \
                         ELSE 1 END",
                postgres: "CASE WHEN pg_catalog.jsonb_typeof(NEW.approvers::pg_catalog.jsonb) = 'array' \
                           THEN EXISTS (SELECT 1 FROM pg_catalog.jsonb_array_elements( \
                                            NEW.approvers::pg_catalog.jsonb) e \
                                        WHERE pg_catalog.jsonb_typeof(e.value) <> 'string' \
                                           OR e.value = pg_catalog.to_jsonb(NEW.user_id)) \
                             OR (NEW.required > 1 AND pg_catalog.jsonb_array_length( \
                                     NEW.approvers::pg_catalog.jsonb) < NEW.required) \
                           ELSE true END",
            },
            words: "the {row} lists enough approvers as a JSON array of names, never its requester",
        },
        Rule {
            name: "decided_in_time",
            on: Event::Update,
            when: When::Both("NEW.status IN ('APPROVED', 'REJECTED') AND OLD.expires_at <= {now}"),
            words: "the {row} is past its deadline and is not decided",
        },
        Rule {
            name: "approved_by_counted",
            on: Event::Update,
            when: When::Both(
                "NEW.status = 'APPROVED' AND (SELECT count(*) FROM {table:guard_approval_decisions} d \
                 WHERE d.decision = 'APPROVE' AND d.approval_id = NEW.approval_id \
                 AND d.seal IS NOT NULL AND d.link_sha256 IS NOT NULL) < NEW.required",
            ),
            words: "the {row} is APPROVED only with its required approvals, each through its link",
        },
        Rule {
            name: "rejected_by_counted",
            on: Event::Update,
            when: When::Both(
                "NEW.status = 'REJECTED' AND NOT EXISTS (SELECT 1 FROM {table:guard_approval_decisions} d \
                 WHERE d.decision = 'REJECT' AND d.approval_id = NEW.approval_id \
                 AND d.seal IS NOT NULL AND d.link_sha256 IS NOT NULL)",
            ),
            words: "the {row} is REJECTED only with a rejection through its link",
        },
    ],
    kept: Kept::WhileLive {
        column: "expires_at",
        words: "its deadline passed",
    },
    refusal: Refusal::Constraint,
};

/// `guard_approval_links`: issued unused, only by a pending approval, to its requester or
/// to an approver it lists; a link speaks for one person and is used once.
pub(crate) const LINKS: Ledger = Ledger {
    table: "guard_approval_links",
    row: "approval link",
    key: &["token_sha256"],
    owner: &["tenant", "user_id"],
    status: Status::Renewed,
    opens: Some(Opens {
        values: &[("refusals", "0")],
        empty: &["viewed_at", "used_at"],
        words: "unviewed and unused",
    }),
    fixed: &["approval_id", "role", "csrf", "seal"],
    fixed_words: "approval, person, role and seal",
    rules: &[
        Rule {
            name: "issued",
            on: Event::Insert,
            when: When::Both(
                "NEW.seal IS NULL OR NOT EXISTS (SELECT 1 FROM {table:guard_approvals} a \
                 WHERE a.approval_id = NEW.approval_id AND a.status = 'PENDING' \
                   AND a.tenant = NEW.tenant \
                   AND CASE NEW.role \
                       WHEN 'REQUESTER' THEN a.user_id = NEW.user_id \
                       ELSE a.required > 1 AND a.user_id <> NEW.user_id \
                           AND EXISTS (SELECT 1 FROM {json_texts}(a.approvers{as_json}) e \
                                       WHERE e.value = NEW.user_id) \
                       END)",
            ),
            words: "the {row} is issued by a pending approval to its requester or an approver it lists, sealed",
        },
        Rule {
            name: "used_once",
            on: Event::Update,
            when: When::Both("OLD.used_at IS NOT NULL AND NEW.used_at {ne} OLD.used_at"),
            words: "the {row} decides once",
        },
    ],
    kept: Kept::WithParent {
        parent: "guard_approvals",
        column: "approval_id",
        words: "approval",
    },
    refusal: Refusal::Constraint,
};

/// `guard_approval_decisions`: taken only on a pending approval before its deadline by the
/// database's clock, through the decider's own unused link, from an approver the approval
/// lists (the requester approves only what needs no one else); never changed.
pub(crate) const DECISIONS: Ledger = Ledger {
    table: "guard_approval_decisions",
    row: "approval decision",
    key: &["approval_id", "tenant", "user_id"],
    owner: &["tenant", "user_id"],
    status: Status::Final {
        ended: "history",
        hint: "Ask for the action again.",
    },
    opens: None,
    fixed: &[],
    fixed_words: "",
    rules: &[
        Rule {
            name: "in_time",
            on: Event::Insert,
            // Locked, so a decision and a change of the approval's status take turns.
            when: When::Both(
                "NOT EXISTS (SELECT 1 FROM {table:guard_approvals} a \
                 WHERE a.approval_id = NEW.approval_id AND a.status = 'PENDING' \
                   AND a.expires_at > {now}{lock})",
            ),
            words: "the {row} is on an approval that is not pending or whose deadline passed",
        },
        Rule {
            name: "through_its_link",
            on: Event::Insert,
            when: When::Both(
                "NEW.seal IS NULL OR NOT EXISTS (SELECT 1 FROM {table:guard_approval_links} l \
                     JOIN {table:guard_approvals} a ON a.approval_id = l.approval_id \
                 WHERE l.token_sha256 = NEW.link_sha256 AND l.approval_id = NEW.approval_id \
                   AND l.tenant = NEW.tenant AND l.user_id = NEW.user_id AND l.used_at IS NULL \
                   AND a.tenant = NEW.tenant \
                   AND CASE l.role \
                       WHEN 'REQUESTER' THEN a.user_id = NEW.user_id \
                           AND (a.required = 1 OR NEW.decision = 'REJECT') \
                       ELSE a.required > 1 AND a.user_id <> NEW.user_id \
                           AND EXISTS (SELECT 1 FROM {json_texts}(a.approvers{as_json}) e \
                                       WHERE e.value = NEW.user_id) \
                       END)",
            ),
            words: "the {row} comes through its own unused link, from an approver the approval lists (the requester approves only what needs no one else)",
        },
    ],
    kept: Kept::WithParent {
        parent: "guard_approvals",
        column: "approval_id",
        words: "approval",
    },
    refusal: Refusal::Constraint,
};

/// `guard_approval_uses`: only an approved approval lets its effect run, once (the primary
/// key), and a use stays.
pub(crate) const USES: Ledger = Ledger {
    table: "guard_approval_uses",
    row: "approval use",
    key: &["approval_id"],
    owner: &[],
    status: Status::Final {
        ended: "spent",
        hint: "An approval lets its effect run once.",
    },
    opens: None,
    fixed: &[],
    fixed_words: "",
    rules: &[Rule {
        name: "approved",
        on: Event::Insert,
        when: When::Both(
            "NOT EXISTS (SELECT 1 FROM {table:guard_approvals} a \
             WHERE a.approval_id = NEW.approval_id AND a.status = 'APPROVED'{lock})",
        ),
        words: "the {row} is of an approval that is not approved, so no effect runs",
    }],
    kept: Kept::WithParent {
        parent: "guard_approvals",
        column: "approval_id",
        words: "approval",
    },
    refusal: Refusal::Constraint,
};

/// `guard_approval_tasks`: a task opens not yet run, runs the call it was opened for, and
/// ends once.
pub(crate) const TASKS: Ledger = Ledger {
    table: "guard_approval_tasks",
    row: "approval task",
    key: &["approval_id"],
    owner: &[],
    status: Status::Until {
        column: "result",
        ended: "over",
        hint: "A task ends once.",
    },
    opens: Some(Opens {
        values: &[],
        empty: &["runner", "run_at", "ended", "result"],
        words: "not yet run",
    }),
    fixed: &["arguments"],
    fixed_words: "approval and arguments",
    rules: &[],
    kept: Kept::WithParent {
        parent: "guard_approvals",
        column: "approval_id",
        words: "approval",
    },
    refusal: Refusal::Constraint,
};

/// The approvals' tables, parents first.
pub(crate) const LEDGERS: [&Ledger; 5] = [&APPROVALS, &LINKS, &DECISIONS, &USES, &TASKS];
