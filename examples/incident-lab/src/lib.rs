//! The incident lab: a naive `run_sql` MCP server drops `orders`, a backup taken before
//! brings it back, an incident record names the cause, and the same attack is then stopped
//! at each of three layers (a read-only connection, an allowlist, a narrow confirmed tool).

pub mod backup;
pub mod client;
pub mod lab;
pub mod layers;
pub mod naive;
pub mod record;
pub mod shop;
pub mod transcript;

pub use lab::Lab;

/// The attack of the story.
pub const ATTACK: &str = "DROP TABLE orders";
/// What the user asked for when the model sent it.
pub const REQUEST: &str = "Clean up last month's test orders";
