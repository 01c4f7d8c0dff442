// An `#[ask]` tool collects input through a guard form: with a question built from the
// arguments, with a fixed message, with `validate` rules, and beside rmcp's own extractors
// and a guard read handle.

use std::sync::Arc;

use rmcp::{
    RoleServer,
    handler::server::wrapper::Parameters,
    service::RequestContext,
    tool, tool_router,
};
use rmcp_guard::{
    Answered, Form, FormEnum, Guard, Guarded, ToolArgs, ToolError, ask, db::ReadDb, forms,
};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Clone)]
struct S {
    guard: Arc<Guard>,
}

impl Guarded for S {
    fn guard(&self) -> &Guard {
        &self.guard
    }
}

#[derive(Deserialize, JsonSchema, ToolArgs)]
struct TripArgs {
    city: String,
}

#[derive(Debug, FormEnum)]
enum Seat {
    Window,
    Aisle,
}

#[derive(Debug, Form)]
struct Trip {
    #[form(format = "date")]
    day: String,
    seats: Vec<Seat>,
    #[form(default = 1, minimum = 1, maximum = 9)]
    travellers: u8,
}

impl S {
    fn question(&self, args: &TripArgs) -> String {
        format!("When do you go to {}?", args.city)
    }

    fn no_crowds(trip: &Trip) -> Result<(), String> {
        if trip.travellers > 8 {
            return Err("at most eight travellers".into());
        }
        Ok(())
    }
}

#[tool_router(server_handler)]
impl S {
    /// Plan a trip.
    #[ask(question = Self::question, message = "Trip planner", validate = Self::no_crowds, timeout = "2m")]
    #[tool]
    async fn plan_trip(
        &self,
        Parameters(args): Parameters<TripArgs>,
        trip: Answered<Trip>,
    ) -> Result<String, ToolError> {
        Ok(format!("{} on {} ({})", args.city, trip.day, trip.trace_id()))
    }

    /// Ask for seats, with the request's context beside the answer.
    #[ask(message = "Pick your seats", on_decline = "No seats picked.")]
    #[tool]
    async fn pick_seats(
        &self,
        _context: RequestContext<RoleServer>,
        trip: Answered<Trip>,
    ) -> Result<String, ToolError> {
        Ok(format!("{} seats", trip.into_form().seats.len()))
    }

    /// Ask before counting, with read handles beside the answer.
    #[ask(message = "Count the orders?")]
    #[tool]
    async fn count_orders(
        &self,
        db: ReadDb,
        _tick: Answered<forms::Checkbox>,
    ) -> Result<String, ToolError> {
        let count: i64 = db.query_row("SELECT count(*) FROM orders", [], |r| r.get(0))?;
        Ok(count.to_string())
    }
}

fn main() {}
