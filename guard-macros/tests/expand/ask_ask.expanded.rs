use std::sync::Arc;
use rmcp::{
    RoleServer, handler::server::wrapper::Parameters, service::RequestContext, tool,
    tool_router,
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
impl ::rmcp_guard::__private::ToolArgsDerived for TripArgs {
    const CHECKED_NAMES: &'static [&'static str] = &["city"];
    const DEFAULTED: &'static [&'static str] = &[];
    const SKIPPED: &'static [&'static str] = &[];
    const UNHASHED: &'static [&'static str] = &[];
    const FIELDS: &'static [&'static str] = &["city"];
}
impl ::rmcp_guard::ToolArgs for TripArgs {}
impl ::rmcp_guard::__private::ToolArgField for TripArgs {}
const _: () = {
    ::rmcp_guard::__private::assert_tool_arg_field::<String>();
};
#[derive(Debug, FormEnum)]
enum Seat {
    Window,
    Aisle,
}
impl ::rmcp_guard::__private::FormEnumDerived for Seat {}
impl ::rmcp_guard::FormEnum for Seat {
    const VALUES: &'static [::rmcp_guard::form::EnumValue] = &[
        ::rmcp_guard::form::EnumValue {
            value: "window",
            title: ::core::option::Option::None,
        },
        ::rmcp_guard::form::EnumValue {
            value: "aisle",
            title: ::core::option::Option::None,
        },
    ];
    fn from_wire(value: &str) -> ::core::option::Option<Self> {
        match value {
            "window" => ::core::option::Option::Some(Self::Window),
            "aisle" => ::core::option::Option::Some(Self::Aisle),
            _ => ::core::option::Option::None,
        }
    }
    fn as_wire(&self) -> &'static str {
        match self {
            Self::Window => "window",
            Self::Aisle => "aisle",
        }
    }
}
#[derive(Debug, Form)]
struct Trip {
    #[form(format = "date")]
    day: String,
    seats: Vec<Seat>,
    #[form(default = 1, minimum = 1, maximum = 9)]
    travellers: u8,
}
impl ::rmcp_guard::__private::FormDerived for Trip {}
impl ::rmcp_guard::Form for Trip {
    const SPEC: &'static ::rmcp_guard::form::FormSpec = &::rmcp_guard::form::FormSpec {
        name: "Trip",
        fields: &[
            ::rmcp_guard::form::FieldSpec {
                name: "day",
                title: ::core::option::Option::None,
                description: ::core::option::Option::None,
                kind: ::rmcp_guard::form::FieldKind::String {
                    min_length: ::core::option::Option::None,
                    max_length: ::core::option::Option::None,
                    format: ::core::option::Option::Some(
                        ::rmcp_guard::form::Format::Date,
                    ),
                },
                optional: false,
                default: ::core::option::Option::None,
                role: ::rmcp_guard::form::FieldRole::Plain,
                redact: false,
            },
            ::rmcp_guard::form::FieldSpec {
                name: "seats",
                title: ::core::option::Option::None,
                description: ::core::option::Option::None,
                kind: ::rmcp_guard::form::FieldKind::MultiEnum {
                    values: <Vec<Seat> as ::rmcp_guard::form::FieldValue>::CHOICES,
                },
                optional: false,
                default: ::core::option::Option::None,
                role: ::rmcp_guard::form::FieldRole::Plain,
                redact: false,
            },
            ::rmcp_guard::form::FieldSpec {
                name: "travellers",
                title: ::core::option::Option::None,
                description: ::core::option::Option::None,
                kind: ::rmcp_guard::form::FieldKind::Integer {
                    minimum: ::core::option::Option::Some(1i64),
                    maximum: ::core::option::Option::Some(9i64),
                    type_min: u8::MIN as i128,
                    type_max: u8::MAX as i128,
                    rust_type: "u8",
                },
                optional: false,
                default: ::core::option::Option::Some(
                    ::rmcp_guard::form::DefaultValue::Int(1i64),
                ),
                role: ::rmcp_guard::form::FieldRole::Plain,
                redact: false,
            },
        ],
        fallback: false,
    };
    fn from_valid(
        content: &::rmcp_guard::__private::serde_json::Map<
            ::std::string::String,
            ::rmcp_guard::__private::serde_json::Value,
        >,
    ) -> ::core::result::Result<Self, ::std::string::String> {
        let fields = <Self as ::rmcp_guard::Form>::SPEC.fields;
        ::core::result::Result::Ok(Self {
            day: <String as ::rmcp_guard::form::FieldValue>::from_field(
                content.get("day"),
                &fields[0usize],
            )?,
            seats: <Vec<
                Seat,
            > as ::rmcp_guard::form::FieldValue>::from_field(
                content.get("seats"),
                &fields[1usize],
            )?,
            travellers: <u8 as ::rmcp_guard::form::FieldValue>::from_field(
                content.get("travellers"),
                &fields[2usize],
            )?,
        })
    }
    fn to_content(
        &self,
    ) -> ::rmcp_guard::__private::serde_json::Map<
        ::std::string::String,
        ::rmcp_guard::__private::serde_json::Value,
    > {
        let mut content = ::rmcp_guard::__private::serde_json::Map::new();
        content
            .insert(
                <::std::string::String as ::core::convert::From<&str>>::from("day"),
                <String as ::rmcp_guard::form::FieldValue>::to_json(&self.day),
            );
        content
            .insert(
                <::std::string::String as ::core::convert::From<&str>>::from("seats"),
                <Vec<Seat> as ::rmcp_guard::form::FieldValue>::to_json(&self.seats),
            );
        content
            .insert(
                <::std::string::String as ::core::convert::From<
                    &str,
                >>::from("travellers"),
                <u8 as ::rmcp_guard::form::FieldValue>::to_json(&self.travellers),
            );
        content
    }
    fn requested_schema() -> ::rmcp_guard::__private::rmcp::model::ElicitationSchema {
        static SCHEMA: ::std::sync::OnceLock<
            ::rmcp_guard::__private::rmcp::model::ElicitationSchema,
        > = ::std::sync::OnceLock::new();
        ::core::clone::Clone::clone(
            SCHEMA.get_or_init(|| <Self as ::rmcp_guard::Form>::SPEC.requested_schema()),
        )
    }
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
    #[tool(
        annotations(read_only_hint = false, destructive_hint = false),
        input_schema = ::rmcp_guard::__private::claim_parameters::<::rmcp_guard::__private::rmcp::handler::server::wrapper::Parameters<TripArgs>>(

        )
    )]
    async fn plan_trip(
        &self,
        __guard_call: ::rmcp_guard::__private::GuardCall,
        __guard_p1: ::rmcp_guard::__private::GuardArguments<TripArgs>,
    ) -> ::core::result::Result<
        ::rmcp_guard::__private::rmcp::model::CallToolResponse,
        ::rmcp_guard::__private::rmcp::ErrorData,
    > {
        const __GUARD_SPEC: &::rmcp_guard::__private::ToolSpec = &::rmcp_guard::__private::ToolSpec {
            name: "plan_trip",
            confirm: ::rmcp_guard::__private::ConfirmKind::Form,
            message: ::core::option::Option::Some("Trip planner"),
            timeout: ::core::option::Option::Some(
                ::core::time::Duration::from_secs(120u64),
            ),
            on_decline: ::core::option::Option::None,
            on_cancel: ::core::option::Option::None,
            approval: ::core::option::Option::None,
            undo_within: ::core::option::Option::None,
            defer: ::core::option::Option::None,
            grant: ::core::option::Option::None,
        };
        const _: () = ::rmcp_guard::__private::assert_ask_roles(
            <Trip as ::rmcp_guard::Form>::SPEC,
        );
        ::rmcp_guard::__private::assert_guarded::<Self>();
        ::rmcp_guard::__private::assert_parameters::<Parameters<TripArgs>, TripArgs>();
        ::rmcp_guard::__private::assert_form::<Trip>();
        let __guard_flow = ::rmcp_guard::__private::Flow::<
            Trip,
        >::new(::rmcp_guard::Guarded::guard(self), __guard_call, __GUARD_SPEC);
        let __guard_incoming = match __guard_flow.dispatched() {
            ::core::result::Result::Ok(incoming) => incoming,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        let __guard_args = match __guard_flow.arguments(&__guard_incoming, __guard_p1) {
            ::core::result::Result::Ok(args) => args,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        let __guard_shown = match __guard_flow
            .begin(
                __guard_incoming,
                ::rmcp_guard::__private::asked(
                    "plan_trip",
                    ::rmcp_guard::__private::question(
                        Self::question,
                        self,
                        &__guard_args,
                    ),
                ),
            )
        {
            ::core::result::Result::Ok(shown) => shown,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        let __guard_expected = ::core::option::Option::None;
        let __guard_caller = match __guard_flow.identify(__guard_shown) {
            ::core::result::Result::Ok(caller) => caller,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        let __guard_asked = match __guard_flow
            .ask(__guard_caller, __guard_expected)
            .await
        {
            ::core::result::Result::Ok(asked) => asked,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        let __guard_accepted = match __guard_flow
            .answer(
                __guard_asked,
                __guard_expected,
                ::core::option::Option::Some(
                    ::rmcp_guard::__private::rules::<Trip>(Self::no_crowds),
                ),
            )
            .await
        {
            ::core::result::Result::Ok(accepted) => accepted,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        let __guard_answered = match __guard_flow.answered(__guard_accepted).await {
            ::core::result::Result::Ok(answered) => answered,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        __guard_flow
            .finish(
                (async move || -> Result<String, ToolError> {
                    let Parameters(args): Parameters<TripArgs> = ::rmcp_guard::__private::rmcp::handler::server::wrapper::Parameters(
                        __guard_args,
                    );
                    let trip: Answered<Trip> = __guard_answered;
                    Ok(format!("{} on {} ({})", args.city, trip.day, trip.trace_id()))
                })()
                    .await,
            )
    }
    /// Ask for seats, with the request's context beside the answer.
    #[tool(
        annotations(read_only_hint = false, destructive_hint = false),
        input_schema = ::rmcp_guard::__private::claim_no_parameters()
    )]
    async fn pick_seats(
        &self,
        __guard_call: ::rmcp_guard::__private::GuardCall,
        __guard_p1: RequestContext<RoleServer>,
    ) -> ::core::result::Result<
        ::rmcp_guard::__private::rmcp::model::CallToolResponse,
        ::rmcp_guard::__private::rmcp::ErrorData,
    > {
        const __GUARD_SPEC: &::rmcp_guard::__private::ToolSpec = &::rmcp_guard::__private::ToolSpec {
            name: "pick_seats",
            confirm: ::rmcp_guard::__private::ConfirmKind::Form,
            message: ::core::option::Option::None,
            timeout: ::core::option::Option::None,
            on_decline: ::core::option::Option::Some("No seats picked."),
            on_cancel: ::core::option::Option::None,
            approval: ::core::option::Option::None,
            undo_within: ::core::option::Option::None,
            defer: ::core::option::Option::None,
            grant: ::core::option::Option::None,
        };
        const _: () = ::rmcp_guard::__private::assert_ask_roles(
            <Trip as ::rmcp_guard::Form>::SPEC,
        );
        ::rmcp_guard::__private::assert_extractor::<RequestContext<RoleServer>>();
        ::rmcp_guard::__private::assert_guarded::<Self>();
        ::rmcp_guard::__private::assert_ask_handle::<RequestContext<RoleServer>>();
        ::rmcp_guard::__private::assert_form::<Trip>();
        let __guard_flow = ::rmcp_guard::__private::Flow::<
            Trip,
        >::new(::rmcp_guard::Guarded::guard(self), __guard_call, __GUARD_SPEC);
        let __guard_incoming = match __guard_flow.dispatched() {
            ::core::result::Result::Ok(incoming) => incoming,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        let __guard_shown = match __guard_flow
            .begin(
                __guard_incoming,
                ::rmcp_guard::__private::asked(
                    "pick_seats",
                    ::std::string::String::from("Pick your seats"),
                ),
            )
        {
            ::core::result::Result::Ok(shown) => shown,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        let __guard_expected = ::core::option::Option::None;
        let __guard_caller = match __guard_flow.identify(__guard_shown) {
            ::core::result::Result::Ok(caller) => caller,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        let __guard_asked = match __guard_flow
            .ask(__guard_caller, __guard_expected)
            .await
        {
            ::core::result::Result::Ok(asked) => asked,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        let __guard_accepted = match __guard_flow
            .answer(__guard_asked, __guard_expected, ::core::option::Option::None)
            .await
        {
            ::core::result::Result::Ok(accepted) => accepted,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        let __guard_answered = match __guard_flow.answered(__guard_accepted).await {
            ::core::result::Result::Ok(answered) => answered,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        __guard_flow
            .finish(
                (async move || -> Result<String, ToolError> {
                    let _context: RequestContext<RoleServer> = __guard_p1;
                    let trip: Answered<Trip> = __guard_answered;
                    Ok(format!("{} seats", trip.into_form().seats.len()))
                })()
                    .await,
            )
    }
    /// Ask before counting, with read handles beside the answer.
    #[tool(
        annotations(read_only_hint = false, destructive_hint = false),
        input_schema = ::rmcp_guard::__private::claim_no_parameters()
    )]
    async fn count_orders(
        &self,
        __guard_call: ::rmcp_guard::__private::GuardCall,
        __guard_p1: ReadDb,
    ) -> ::core::result::Result<
        ::rmcp_guard::__private::rmcp::model::CallToolResponse,
        ::rmcp_guard::__private::rmcp::ErrorData,
    > {
        const __GUARD_SPEC: &::rmcp_guard::__private::ToolSpec = &::rmcp_guard::__private::ToolSpec {
            name: "count_orders",
            confirm: ::rmcp_guard::__private::ConfirmKind::Form,
            message: ::core::option::Option::None,
            timeout: ::core::option::Option::None,
            on_decline: ::core::option::Option::None,
            on_cancel: ::core::option::Option::None,
            approval: ::core::option::Option::None,
            undo_within: ::core::option::Option::None,
            defer: ::core::option::Option::None,
            grant: ::core::option::Option::None,
        };
        const _: () = ::rmcp_guard::__private::assert_ask_roles(
            <forms::Checkbox as ::rmcp_guard::Form>::SPEC,
        );
        ::rmcp_guard::__private::assert_extractor::<ReadDb>();
        ::rmcp_guard::__private::assert_guarded::<Self>();
        ::rmcp_guard::__private::assert_ask_handle::<ReadDb>();
        ::rmcp_guard::__private::assert_form::<forms::Checkbox>();
        let __guard_flow = ::rmcp_guard::__private::Flow::<
            forms::Checkbox,
        >::new(::rmcp_guard::Guarded::guard(self), __guard_call, __GUARD_SPEC);
        let __guard_incoming = match __guard_flow.dispatched() {
            ::core::result::Result::Ok(incoming) => incoming,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        let __guard_shown = match __guard_flow
            .begin(
                __guard_incoming,
                ::rmcp_guard::__private::asked(
                    "count_orders",
                    ::std::string::String::from("Count the orders?"),
                ),
            )
        {
            ::core::result::Result::Ok(shown) => shown,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        let __guard_expected = ::core::option::Option::None;
        let __guard_caller = match __guard_flow.identify(__guard_shown) {
            ::core::result::Result::Ok(caller) => caller,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        let __guard_asked = match __guard_flow
            .ask(__guard_caller, __guard_expected)
            .await
        {
            ::core::result::Result::Ok(asked) => asked,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        let __guard_accepted = match __guard_flow
            .answer(__guard_asked, __guard_expected, ::core::option::Option::None)
            .await
        {
            ::core::result::Result::Ok(accepted) => accepted,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        let __guard_answered = match __guard_flow.answered(__guard_accepted).await {
            ::core::result::Result::Ok(answered) => answered,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        __guard_flow
            .finish(
                (async move || -> Result<String, ToolError> {
                    let db: ReadDb = __guard_p1;
                    let _tick: Answered<forms::Checkbox> = __guard_answered;
                    let count: i64 = db
                        .query_row("SELECT count(*) FROM orders", [], |r| r.get(0))?;
                    Ok(count.to_string())
                })()
                    .await,
            )
    }
}
fn main() {}
