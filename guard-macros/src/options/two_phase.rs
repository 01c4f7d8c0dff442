//! The options of two-phase operations: `#[operations]` on the impl, `#[prepare]` and
//! `#[confirm]` on its tools.

use super::{Attribute, Declared, Value};
use crate::attr;

/// `#[operations(...)]`.
pub const OPERATIONS: Attribute = Attribute {
    name: "#[operations]",
    guide: "two_phase.md",
    options: &[Declared::new(
        "crate",
        Value::Text("my_crate::guard"),
        "`rmcp_guard`",
        "where rmcp_guard is when the crate reaches it through a re-export",
    )],
};

/// The operation name a prepare and its confirm share.
const OP: Declared = Declared::new(
    "op",
    Value::Text("order_cancel"),
    "required",
    "the snake_case operation name the prepare and its confirm share, in the store and the audit log",
);

/// `#[prepare(...)]`.
pub const PREPARE: Attribute = Attribute {
    name: "#[prepare]",
    guide: "two_phase.md",
    options: &[
        OP,
        Declared::new(
            "ttl",
            Value::Duration(&attr::TTL),
            "required",
            "how long the intent waits for its confirm before it expires",
        ),
        Declared::new(
            "scope",
            Value::Text("orders.cancel"),
            "none",
            "the scopes the caller needs, separated by commas or spaces; checked at both phases",
        ),
        Declared::new(
            "rate",
            Value::Rate(&attr::RATE_PERIOD),
            "no limit",
            "how many prepares one user may make per period",
        ),
        super::tool::UNKNOWN_ARGUMENTS,
    ],
};

/// `#[confirm(...)]`.
pub const CONFIRM: Attribute = Attribute {
    name: "#[confirm]",
    guide: "two_phase.md",
    options: &[
        OP,
        Declared::new(
            "recheck",
            Value::Path("Self::recheck_fn"),
            "required",
            "checks the locked target is unchanged, `async fn(&self, &mut Locked<P>) -> Result<Recheck, ToolError>`",
        ),
        Declared::new(
            "defer",
            Value::Duration(&attr::CONFIRM_DEFER),
            "none: the effect runs at once",
            "the confirmed effect waits this long, and can be withdrawn until it runs",
        ),
    ],
};
