//! The options of the attributes on a tool method: `#[destructive]`, `#[ask]`, a disclosing
//! `#[read_only]` and a keyed `#[idempotent]`.

use super::{Attribute, Declared, Rule, Value};
use crate::attr;

/// The most approvers a page approval may require.
pub const MAX_APPROVERS: u64 = 5;

/// The most items one batch question may offer (`rmcp_guard::batch::MAX_ITEMS_LIMIT`).
pub const MAX_BATCH_ITEMS: u64 = 100;

/// The most calls a grant may cover.
pub const MAX_GRANT_CALLS: u64 = 100;

const MESSAGE: Declared = Declared::new(
    "message",
    Value::Text("Delete for good?"),
    "none",
    "the text the human reads above the question",
);
const VALIDATE: Declared = Declared::new(
    "validate",
    Value::Path("Self::rules_fn"),
    "none",
    "rules on the accepted form, `fn(&Form) -> Result<(), String>`, checked on the server",
);
const TIMEOUT: Declared = Declared::new(
    "timeout",
    Value::Duration(&attr::TIMEOUT),
    "`Guard::answer_timeout` (5 minutes)",
    "how long the human has to answer",
);
const ON_DECLINE: Declared = Declared::new(
    "on_decline",
    Value::Text("Kept the table."),
    "guard's text",
    "what the model reads when the human declines",
);
const ON_CANCEL: Declared = Declared::new(
    "on_cancel",
    Value::Text("Nobody answered."),
    "guard's text",
    "what the model reads when the human cancels or does not answer",
);
/// Shared with `#[prepare]`.
pub(super) const UNKNOWN_ARGUMENTS: Declared = Declared::new(
    "unknown_arguments",
    Value::OneOf(&["refuse", "ignore"]),
    "`\"refuse\"`",
    "an argument the tool does not take (`dryrun` for `dry_run`): refused with `INVALID_INPUT` before anything is asked or run, or dropped unread as serde does",
);
const CRATE: Declared = Declared::new(
    "crate",
    Value::Text("my_crate::guard"),
    "`rmcp_guard`",
    "where rmcp_guard is when the crate reaches it through a re-export (a renamed dependency is found in Cargo.toml)",
);
const APPROVERS_NEEDS_APPROVE: Rule = Rule {
    option: "approve",
    message: "`approvers` counts the people who approve on guard's approval page, so it goes with `approve = \"url\"`",
};
const APPROVERS: Declared = Declared {
    needs: &[APPROVERS_NEEDS_APPROVE],
    ..Declared::new(
        "approvers",
        Value::Count(MAX_APPROVERS),
        "1",
        "how many people approve on the page; above 1, none of them the requester",
    )
};
const GRANT_NEEDS_CALLS: Rule = Rule {
    option: "grant_calls",
    message: "`grant` needs `grant_calls = N`: how many more calls the human's grant covers (at most 100), e.g. `grant = \"10m\", grant_calls = 20`",
};
const GRANT_CALLS: Declared = Declared {
    needs: &[Rule {
        option: "grant",
        message: "`grant_calls` counts the calls a grant covers, so it goes with `grant = \"<duration>\"`: how long the grant lasts, e.g. `grant = \"10m\"`",
    }],
    ..Declared::new(
        "grant_calls",
        Value::Count(MAX_GRANT_CALLS),
        "none",
        "how many more calls a grant covers",
    )
};
const GRANT_DOC: &str = "how long a grant the human opens lasts: their answer covers later calls on the scope the preview states";

/// `#[destructive(...)]`.
pub const DESTRUCTIVE: Attribute = Attribute {
    name: "#[destructive]",
    guide: "destructive.md",
    options: &[
        Declared::new(
            "confirm",
            Value::OneOf(&["checkbox", "type_to_confirm"]),
            "none: give `confirm` or `form`",
            "how the human confirms: ticking a box, or retyping the `target`",
        ),
        Declared::new(
            "form",
            Value::Path("YourForm"),
            "none: give `confirm` or `form`",
            "a `#[derive(Form)]` form the human fills in; the handler takes `Confirmed<YourForm>`",
        ),
        Declared::new(
            "target",
            Value::Field("table"),
            "none",
            "the `String` argument the human retypes, with `confirm = \"type_to_confirm\"`",
        ),
        Declared::new(
            "preview",
            Value::Path("Self::preview_fn"),
            "required",
            "the concrete effect the human reads, `async fn(&self, &Args) -> Result<Preview, ToolError>`; run again before the handler",
        ),
        VALIDATE,
        MESSAGE,
        TIMEOUT,
        ON_DECLINE,
        ON_CANCEL,
        Declared::new(
            "idempotent",
            Value::Flag,
            "off",
            "claims an identical repeat changes nothing (`idempotentHint: true`)",
        ),
        Declared {
            conflicts: &[Rule {
                option: "form",
                message: "`approve = \"url\"` approves with a button (and a typed name) on guard's page, which renders no custom form: use `confirm = \"checkbox\"` or `confirm = \"type_to_confirm\"` instead of `form = ...`",
            }],
            ..Declared::new(
                "approve",
                Value::OneOf(&["url"]),
                "the client's form",
                "the human approves on guard's approval page instead of in the client",
            )
        },
        APPROVERS,
        Declared {
            needs: &[Rule {
                option: "approve",
                message: "`secret` is asked on guard's approval page, never in a form the client renders: add `approve = \"url\"`",
            }],
            conflicts: &[Rule {
                option: "defer",
                message: "`defer` stores the confirmed call in the operation store, and a `secret` is never stored: remove `defer`, or have the handler fetch the secret itself when it runs",
            }],
            ..Declared::new(
                "secret",
                Value::Text("Deploy token"),
                "none",
                "the label of a password the page asks for; the handler reads it as `confirmed.secret()`",
            )
        },
        Declared {
            conflicts: &[
                Rule {
                    option: "confirm",
                    message: "`batch` asks the human to pick items from a list, so `confirm` (the picking is the confirmation) does not apply: remove it",
                },
                Rule {
                    option: "form",
                    message: "`batch` asks the human to pick items from a list, so `form` (the question is guard's list of the preview's items) does not apply: remove it",
                },
                Rule {
                    option: "target",
                    message: "`batch` asks the human to pick items from a list, so `target` (nothing is retyped) does not apply: remove it",
                },
                Rule {
                    option: "validate",
                    message: "`batch` asks the human to pick items from a list, so `validate` (guard checks the picks against the items it offered) does not apply: remove it",
                },
                Rule {
                    option: "approve",
                    message: "`batch` asks the human to pick items from a list, so `approve` (approval on guard's page) does not apply: remove it",
                },
                Rule {
                    option: "approvers",
                    message: "`batch` asks the human to pick items from a list, so `approvers` (approval on guard's page) does not apply: remove it",
                },
                Rule {
                    option: "secret",
                    message: "`batch` asks the human to pick items from a list, so `secret` (asked on guard's approval page) does not apply: remove it",
                },
            ],
            ..Declared::new(
                "batch",
                Value::Flag,
                "off",
                "the human picks which of the preview's `Batch` items the effect touches; the handler takes `Picked`",
            )
        },
        Declared {
            needs: &[Rule {
                option: "batch",
                message: "`max_items` caps how many items a batch question offers, so it goes with `batch`: add `batch` or remove `max_items`",
            }],
            ..Declared::new(
                "max_items",
                Value::Count(MAX_BATCH_ITEMS),
                "20",
                "the most items one batch question offers",
            )
        },
        Declared {
            needs: &[Rule {
                option: "undo_within",
                message: "`undo` needs `undo_within = \"<duration>\"`: how long the owner can undo the effect (the question tells the human until when), e.g. `undo_within = \"10m\"`, at most 7d",
            }],
            conflicts: &[Rule {
                option: "batch",
                message: "`undo` opens one window for one confirmed target, and a batch acts on many: remove `undo` (and `undo_within`, `purge`), or make the tool act on one target",
            }],
            ..Declared::new(
                "undo",
                Value::Path("Self::undo_fn"),
                "none: the effect is final",
                "lets the effect's owner undo it while the window is open",
            )
        },
        Declared {
            needs: &[Rule {
                option: "undo",
                message: "`undo_within` is the length of an undo window, so it goes with `undo = Self::undo_fn`: add the undo function, or remove `undo_within`",
            }],
            ..Declared::new(
                "undo_within",
                Value::Duration(&attr::UNDO_WITHIN),
                "none",
                "how long the undo window stays open",
            )
        },
        Declared {
            needs: &[Rule {
                option: "undo",
                message: "`purge` makes an undoable effect final when its undo window closes, so it goes with `undo = Self::undo_fn` and `undo_within`: add them, or remove `purge`",
            }],
            ..Declared::new(
                "purge",
                Value::Path("Self::purge_fn"),
                "none",
                "makes the undoable effect final when its window closes",
            )
        },
        Declared {
            conflicts: &[
                Rule {
                    option: "batch",
                    message: "`defer` stores one confirmed call for one target, and a batch acts on the items the human picks: remove `defer`, or make the tool act on one target",
                },
                Rule {
                    option: "undo",
                    message: "`defer` and `undo` cannot go together yet: the undo window would open when the deferred call runs, with nobody's request to answer; choose one (withdrawing a deferred call is its undo until it runs)",
                },
            ],
            ..Declared::new(
                "defer",
                Value::Duration(&attr::DEFER),
                "none: the effect runs at once",
                "the confirmed effect waits this long, and can be withdrawn until it runs",
            )
        },
        Declared {
            needs: &[GRANT_NEEDS_CALLS],
            conflicts: &[
                Rule {
                    option: "approve",
                    message: "`grant` cannot go with `approve = \"url\"`: a tool approved on guard's page needs its approvers (or a secret) for every call, and a grant would let the requester alone go on. Remove `grant`, or approve in the client's form instead",
                },
                Rule {
                    option: "batch",
                    message: "`grant` cannot go with `batch`: the human picks a batch's items each time, and a grant would pick them for calls nobody sees. Remove `grant`, or make the tool act on one target",
                },
                Rule {
                    option: "defer",
                    message: "`grant` cannot go with `defer` yet: a deferred call is confirmed now and runs later, and a grant would schedule calls nobody confirmed. Remove one of them",
                },
            ],
            ..Declared::new("grant", Value::Duration(&attr::GRANT), "none", GRANT_DOC)
        },
        GRANT_CALLS,
        UNKNOWN_ARGUMENTS,
        CRATE,
    ],
};

/// `#[ask(...)]`.
pub const ASK: Attribute = Attribute {
    name: "#[ask]",
    guide: "ask.md",
    options: &[
        Declared::new(
            "form",
            Value::Path("YourForm"),
            "the `F` of the handler's `Answered<F>`",
            "the `#[derive(Form)]` form the human fills in",
        ),
        Declared {
            default: "none: give `message` or `question`",
            ..MESSAGE
        },
        Declared::new(
            "question",
            Value::Path("Self::question_fn"),
            "none: give `message` or `question`",
            "builds the text from the arguments, `fn(&self, &Args) -> String`; with `message`, that is the header",
        ),
        VALIDATE,
        TIMEOUT,
        ON_DECLINE,
        ON_CANCEL,
        UNKNOWN_ARGUMENTS,
        CRATE,
    ],
};

/// `#[read_only(...)]` on a tool that discloses what it reads.
pub const READ_ONLY: Attribute = Attribute {
    name: "#[read_only]",
    guide: "disclosure.md",
    options: &[
        Declared::new(
            "discloses",
            Value::OneOf(&["sensitive", "credentials", "bulk", "capability"]),
            "required with options",
            "what the tool may expose; a bare `#[read_only]` discloses nothing",
        ),
        Declared::new(
            "boundary",
            Value::Path("Self::boundary_fn"),
            "required",
            "the data boundary the human reads, `async fn(&self, &Args) -> Result<Boundary, ToolError>`",
        ),
        Declared::new(
            "max_items",
            Value::Count(u64::MAX),
            "no cap (a `bulk` tool needs it or `max_bytes`)",
            "the most items one call shows",
        ),
        Declared::new(
            "max_bytes",
            Value::Count(u64::MAX),
            "no cap",
            "the most bytes one call shows",
        ),
        Declared::new(
            "session_max_items",
            Value::Count(u64::MAX),
            "no cap",
            "the most items one session is shown, at least `max_items`",
        ),
        Declared::new(
            "session_max_bytes",
            Value::Count(u64::MAX),
            "no cap",
            "the most bytes one session is shown, at least `max_bytes`",
        ),
        Declared {
            needs: &[GRANT_NEEDS_CALLS],
            conflicts: &[Rule {
                option: "approve",
                message: "`grant` cannot go with `approve = \"url\"`: a disclosure approved on guard's page needs its approvers for every call, and a grant would let the requester alone go on. Remove `grant`, or approve in the client's form instead",
            }],
            ..Declared::new("grant", Value::Duration(&attr::GRANT), "none", GRANT_DOC)
        },
        GRANT_CALLS,
        Declared::new(
            "approve",
            Value::OneOf(&["url"]),
            "the client's form",
            "the human approves on guard's approval page instead of in the client",
        ),
        APPROVERS,
        MESSAGE,
        TIMEOUT,
        ON_DECLINE,
        ON_CANCEL,
        UNKNOWN_ARGUMENTS,
        CRATE,
    ],
};

/// `#[idempotent(...)]` with options: a tool keyed by an idempotency key.
pub const IDEMPOTENT: Attribute = Attribute {
    name: "#[idempotent]",
    guide: "idempotency.md",
    options: &[
        Declared::new(
            "key",
            Value::Field("request_id"),
            "required with options",
            "the `String` argument that carries the caller's idempotency key",
        ),
        Declared::new(
            "ttl",
            Value::Duration(&attr::KEY_TTL),
            "required",
            "how long a key answers with its stored result",
        ),
        UNKNOWN_ARGUMENTS,
        CRATE,
    ],
};
