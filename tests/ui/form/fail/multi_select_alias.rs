// guard reads a field's kind from its type as written, and cannot see through a type
// alias: a multi-select, a text or a number behind an alias would be published as a single
// choice. Each is refused with the type to write in the field instead.

use rmcp_guard::{Form, FormEnum};

#[derive(FormEnum)]
enum Seat {
    Window,
    Aisle,
}

type Seats = Vec<Seat>;
type Note = String;
type Count = u32;

#[derive(Form)]
struct Booking {
    seats: Seats,
    note: Note,
    travellers: Option<Count>,
}

fn main() {}
