//! Each attribute's options, declared once: name, what the value takes, the default, what
//! the option needs and cannot go with, and one line of docs. The parser reads the names
//! and reports the pairs from here, and the option tables in the crate's rustdoc are
//! rendered from here (a test keeps them equal, and checks the guide names every option).

mod form;
mod parse;
#[cfg(test)]
mod rustdoc;
mod tool;
mod two_phase;

pub use form::{FORM_FIELD, FORM_VARIANT};
pub use parse::{check_rules, parse};
pub use tool::{
    ASK, DESTRUCTIVE, IDEMPOTENT, MAX_APPROVERS, MAX_BATCH_ITEMS, MAX_GRANT_CALLS, READ_ONLY,
};
pub use two_phase::{CONFIRM, OPERATIONS, PREPARE};

use crate::attr::Limit;

/// Every attribute, in the order of the crate's docs.
#[cfg(test)]
pub const ALL: [&Attribute; 9] = [
    &DESTRUCTIVE,
    &ASK,
    &READ_ONLY,
    &IDEMPOTENT,
    &FORM_FIELD,
    &FORM_VARIANT,
    &OPERATIONS,
    &PREPARE,
    &CONFIRM,
];

/// An attribute and its options.
#[cfg_attr(
    not(test),
    expect(dead_code, reason = "the guide page is read by the docs test")
)]
pub struct Attribute {
    /// As messages and docs name it: `#[destructive]`.
    pub name: &'static str,
    /// The guide page (in `guard-runtime/docs/`) that names every option.
    pub guide: &'static str,
    pub options: &'static [Declared],
}

impl Attribute {
    /// The option called `name`, if the attribute has one.
    pub fn get(&self, name: &str) -> Option<&'static Declared> {
        self.options.iter().find(|o| o.name == name)
    }

    /// Every option's name, as the errors list them.
    pub fn names(&self) -> String {
        let names: Vec<&str> = self.options.iter().map(|o| o.name).collect();
        names.join(", ")
    }
}

/// One option. The parser reads its name and rules; the words are read by the test that
/// renders the rustdoc tables.
#[cfg_attr(
    not(test),
    expect(dead_code, reason = "the words are read by the docs test")
)]
pub struct Declared {
    pub name: &'static str,
    pub takes: Value,
    /// What holds when the option is left out, in words.
    pub default: &'static str,
    /// Options written beside it that it needs, each with the error when one is missing.
    pub needs: &'static [Rule],
    /// Options it cannot go with, each with the error when both are written.
    pub conflicts: &'static [Rule],
    /// What it does, in one line.
    pub doc: &'static str,
}

impl Declared {
    /// An option with no rules between it and the others; `needs` and `conflicts` are
    /// written with struct update syntax where there are some.
    pub const fn new(
        name: &'static str,
        takes: Value,
        default: &'static str,
        doc: &'static str,
    ) -> Self {
        Declared {
            name,
            takes,
            default,
            needs: &[],
            conflicts: &[],
            doc,
        }
    }
}

/// A rule between two options: the other option, and the error at this one.
pub struct Rule {
    pub option: &'static str,
    pub message: &'static str,
}

/// What an option's value takes, as the rustdoc tables say it; each option's parser reads
/// the value itself.
#[cfg_attr(not(test), expect(dead_code, reason = "read by the docs test"))]
pub enum Value {
    /// Nothing (`batch`), or `= true` / `= false`.
    Flag,
    /// A string literal, one of these.
    OneOf(&'static [&'static str]),
    /// A string literal, as in the example.
    Text(&'static str),
    /// A path written unquoted, as in the example.
    Path(&'static str),
    /// A field of the tool's arguments, unquoted, as in the example.
    Field(&'static str),
    /// A duration string, at most the limit.
    Duration(&'static Limit),
    /// A whole number from 1 to the maximum.
    Count(u64),
    /// A whole number from 0.
    Whole,
    /// A number literal, negative too.
    Number,
    /// A string, number or bool literal.
    Literal,
    /// Calls per period (`"5/min"`), the period at most the limit.
    Rate(&'static Limit),
}
