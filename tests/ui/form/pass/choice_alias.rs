// A type alias of a `FormEnum` is still a single choice, and a multi-select written as
// `Vec<...>` in the field is published as one.

use rmcp_guard::form::FieldKind;
use rmcp_guard::{Form, FormEnum};

#[derive(Debug, FormEnum)]
enum Seat {
    Window,
    Aisle,
}

type Place = Seat;

#[derive(Debug, Form)]
struct Booking {
    seat: Place,
    return_seat: Option<Place>,
    seats: Vec<Seat>,
}

fn main() {
    let kinds: Vec<&str> = Booking::SPEC
        .fields
        .iter()
        .map(|f| match f.kind {
            FieldKind::Enum { values } if values.len() == 2 => "single",
            FieldKind::MultiEnum { values } if values.len() == 2 => "multi",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["single", "single", "multi"]);
}
