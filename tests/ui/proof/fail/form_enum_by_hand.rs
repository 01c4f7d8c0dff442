// `FormEnum` cannot be implemented by hand either: the derive is what checks that the enum
// is unit-only and its wire values distinct.

use rmcp_guard::FormEnum;

enum Level {
    Low,
    High(String),
}

impl FormEnum for Level {
    const VALUES: &'static [rmcp_guard::form::EnumValue] = &[];

    fn from_wire(_: &str) -> Option<Self> {
        Some(Level::High(String::new()))
    }

    fn as_wire(&self) -> &'static str {
        match self {
            Level::Low => "low",
            Level::High(_) => "high",
        }
    }
}

fn main() {}
