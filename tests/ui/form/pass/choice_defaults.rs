// A choice's `default` is any wire value its enum offers: a variant's snake_case name or its
// `#[form(value = "...")]`, on a required or an optional field.

use rmcp_guard::form::DefaultValue;
use rmcp_guard::{Form, FormEnum};

#[derive(Debug, FormEnum)]
enum Seat {
    Window,
    AisleSeat,
    #[form(value = "middle-seat")]
    Middle,
}

#[derive(Debug, Form)]
struct Booking {
    #[form(default = "window")]
    seat: Seat,
    #[form(default = "aisle_seat")]
    return_seat: Option<Seat>,
    #[form(default = "middle-seat")]
    spare_seat: Seat,
}

fn main() {
    let defaults: Vec<Option<DefaultValue>> =
        Booking::SPEC.fields.iter().map(|f| f.default).collect();
    assert_eq!(
        defaults,
        [
            Some(DefaultValue::Str("window")),
            Some(DefaultValue::Str("aisle_seat")),
            Some(DefaultValue::Str("middle-seat")),
        ]
    );
}
