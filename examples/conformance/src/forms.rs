//! The forms the suite's elicitation scenarios expect, as guard forms: the derives check them
//! at compile time and guard revalidates every answer against them on the server.

use rmcp_guard::{Form, FormEnum};

/// `tools-call-elicitation`: two required text fields.
#[derive(Debug, Form)]
pub struct Contact {
    /// User's response
    pub username: String,
    /// User's email address
    pub email: String,
}

/// `elicitation-sep1034-defaults`: a default on every primitive kind.
#[derive(Debug, Form)]
pub struct Defaults {
    /// User name
    #[form(default = "John Doe")]
    pub name: String,
    /// User age
    #[form(default = 30)]
    pub age: i64,
    /// User score
    #[form(default = 95.5)]
    pub score: f64,
    /// User status
    #[form(default = "active")]
    pub status: Status,
    /// Verification status
    #[form(default = true)]
    pub verified: bool,
}

/// An untitled single choice (`enum`).
#[derive(Debug, FormEnum)]
pub enum Status {
    Active,
    Inactive,
    Pending,
}

/// `elicitation-sep1330-enums`: the five spellings of a choice. The property names are the
/// suite's, in camel case.
#[derive(Debug, Form)]
#[allow(non_snake_case)]
pub struct Enums {
    /// An untitled single choice: `enum`.
    pub untitledSingle: Option<Untitled>,
    /// A titled single choice: `oneOf` of `const`/`title`.
    pub titledSingle: Option<Titled>,
    /// The legacy titled single choice: `enum` with `enumNames`.
    #[form(enum_names)]
    pub legacyEnum: Option<Legacy>,
    /// An untitled multi-select: `items.enum`.
    pub untitledMulti: Option<Vec<Untitled>>,
    /// A titled multi-select: `items.anyOf` of `const`/`title`.
    pub titledMulti: Option<Vec<TitledChoice>>,
}

/// Choices without titles.
#[derive(Debug, FormEnum)]
pub enum Untitled {
    #[form(value = "option1")]
    Option1,
    #[form(value = "option2")]
    Option2,
    #[form(value = "option3")]
    Option3,
}

/// Titled choices for a single select.
#[derive(Debug, FormEnum)]
pub enum Titled {
    #[form(value = "value1", title = "First Option")]
    Value1,
    #[form(value = "value2", title = "Second Option")]
    Value2,
    #[form(value = "value3", title = "Third Option")]
    Value3,
}

/// Titled choices for the legacy `enumNames` spelling.
#[derive(Debug, FormEnum)]
pub enum Legacy {
    #[form(value = "opt1", title = "Option One")]
    Opt1,
    #[form(value = "opt2", title = "Option Two")]
    Opt2,
    #[form(value = "opt3", title = "Option Three")]
    Opt3,
}

/// Titled choices for a multi-select.
#[derive(Debug, FormEnum)]
pub enum TitledChoice {
    #[form(value = "value1", title = "First Choice")]
    Value1,
    #[form(value = "value2", title = "Second Choice")]
    Value2,
    #[form(value = "value3", title = "Third Choice")]
    Value3,
}
