// A choice's `default` must be one of the values its enum offers: the wire value of a
// variant (its snake_case name, or its `#[form(value = "...")]`), not its Rust name or a
// value it does not have.

use rmcp_guard::{Form, FormEnum};

#[derive(FormEnum)]
enum Seat {
    Window,
    Aisle,
    #[form(value = "middle-seat")]
    Middle,
}

#[derive(Form)]
struct Booking {
    #[form(default = "sonnet")]
    seat: Seat,
    #[form(default = "Window")]
    return_seat: Option<Seat>,
    #[form(default = "middle")]
    spare_seat: Seat,
}

fn main() {}
