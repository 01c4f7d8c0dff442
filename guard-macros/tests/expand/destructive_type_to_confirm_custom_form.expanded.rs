use std::sync::Arc;
use rmcp_guard::{
    Confirmed, Form, Guard, Guarded, Preview, ToolArgs, ToolError, destructive,
    form::FieldRole,
};
use rmcp::{handler::server::wrapper::Parameters, tool, tool_router};
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
struct DropTableArgs {
    /// Name of the table to drop.
    table: String,
}
impl ::rmcp_guard::__private::ToolArgsDerived for DropTableArgs {
    const CHECKED_NAMES: &'static [&'static str] = &["table"];
    const DEFAULTED: &'static [&'static str] = &[];
    const SKIPPED: &'static [&'static str] = &[];
    const UNHASHED: &'static [&'static str] = &[];
    const FIELDS: &'static [&'static str] = &["table"];
}
impl ::rmcp_guard::ToolArgs for DropTableArgs {}
impl ::rmcp_guard::__private::ToolArgField for DropTableArgs {}
const _: () = {
    ::rmcp_guard::__private::assert_tool_arg_field::<String>();
};
#[derive(Debug, Form)]
struct DropTableConfirmation {
    /// Type the table name exactly to confirm.
    #[form(confirm_text, title = "Table name")]
    typed_name: String,
    #[form(title = "Approver", min_length = 1, max_length = 100)]
    approver: String,
}
impl ::rmcp_guard::__private::TypeToConfirmForm for DropTableConfirmation {}
impl ::rmcp_guard::__private::FormDerived for DropTableConfirmation {}
impl ::rmcp_guard::Form for DropTableConfirmation {
    const SPEC: &'static ::rmcp_guard::form::FormSpec = &::rmcp_guard::form::FormSpec {
        name: "DropTableConfirmation",
        fields: &[
            ::rmcp_guard::form::FieldSpec {
                name: "typed_name",
                title: ::core::option::Option::Some("Table name"),
                description: ::core::option::Option::Some(
                    "Type the table name exactly to confirm.",
                ),
                kind: ::rmcp_guard::form::FieldKind::String {
                    min_length: ::core::option::Option::None,
                    max_length: ::core::option::Option::None,
                    format: ::core::option::Option::None,
                },
                optional: false,
                default: ::core::option::Option::None,
                role: ::rmcp_guard::form::FieldRole::ConfirmText,
                redact: false,
            },
            ::rmcp_guard::form::FieldSpec {
                name: "approver",
                title: ::core::option::Option::Some("Approver"),
                description: ::core::option::Option::None,
                kind: ::rmcp_guard::form::FieldKind::String {
                    min_length: ::core::option::Option::Some(1u32),
                    max_length: ::core::option::Option::Some(100u32),
                    format: ::core::option::Option::None,
                },
                optional: false,
                default: ::core::option::Option::None,
                role: ::rmcp_guard::form::FieldRole::Plain,
                redact: true,
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
            typed_name: <String as ::rmcp_guard::form::FieldValue>::from_field(
                content.get("typed_name"),
                &fields[0usize],
            )?,
            approver: <String as ::rmcp_guard::form::FieldValue>::from_field(
                content.get("approver"),
                &fields[1usize],
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
                <::std::string::String as ::core::convert::From<
                    &str,
                >>::from("typed_name"),
                <String as ::rmcp_guard::form::FieldValue>::to_json(&self.typed_name),
            );
        content
            .insert(
                <::std::string::String as ::core::convert::From<&str>>::from("approver"),
                <String as ::rmcp_guard::form::FieldValue>::to_json(&self.approver),
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
/// The typed-name role is read from the form's description.
fn is_type_to_confirm<F: Form>() -> bool {
    F::SPEC.field_with_role(FieldRole::ConfirmText).is_some()
}
impl S {
    async fn preview_drop(&self, args: &DropTableArgs) -> Result<Preview, ToolError> {
        Ok(Preview::effect(args.table.clone(), format!("Drop table {}", args.table)))
    }
}
#[tool_router(server_handler)]
impl S {
    /// Drop a table.
    #[tool(
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true
        ),
        input_schema = ::rmcp_guard::__private::claim_parameters::<::rmcp_guard::__private::rmcp::handler::server::wrapper::Parameters<DropTableArgs>>(

        )
    )]
    async fn drop_table(
        &self,
        __guard_call: ::rmcp_guard::__private::GuardCall,
        __guard_p1: ::rmcp_guard::__private::GuardArguments<DropTableArgs>,
    ) -> ::core::result::Result<
        ::rmcp_guard::__private::rmcp::model::CallToolResponse,
        ::rmcp_guard::__private::rmcp::ErrorData,
    > {
        const __GUARD_SPEC: &::rmcp_guard::__private::ToolSpec = &::rmcp_guard::__private::ToolSpec {
            name: "drop_table",
            confirm: ::rmcp_guard::__private::ConfirmKind::TypeToConfirm,
            message: ::core::option::Option::None,
            timeout: ::core::option::Option::None,
            on_decline: ::core::option::Option::None,
            on_cancel: ::core::option::Option::None,
            approval: ::core::option::Option::None,
            undo_within: ::core::option::Option::None,
            defer: ::core::option::Option::None,
            grant: ::core::option::Option::None,
        };
        const _: () = <DropTableConfirmation as ::rmcp_guard::__private::TypeToConfirmForm>::ROLES;
        ::rmcp_guard::__private::assert_guarded::<Self>();
        ::rmcp_guard::__private::assert_parameters::<
            Parameters<DropTableArgs>,
            DropTableArgs,
        >();
        const _: () = ::rmcp_guard::__private::assert_target_required(
            <DropTableArgs as ::rmcp_guard::__private::ToolArgsDerived>::DEFAULTED,
            "table",
        );
        ::rmcp_guard::__private::assert_form::<DropTableConfirmation>();
        let __guard_flow = ::rmcp_guard::__private::Flow::<
            DropTableConfirmation,
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
                ::rmcp_guard::__private::preview(Self::preview_drop, self, &__guard_args)
                    .await,
            )
        {
            ::core::result::Result::Ok(shown) => shown,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        let __guard_expected = ::core::option::Option::Some(
            ::rmcp_guard::__private::TargetText::target_text(&__guard_args.table),
        );
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
        let (__guard_confirmed, __guard_owner) = match __guard_flow
            .recheck(
                __guard_accepted,
                ::rmcp_guard::__private::preview(Self::preview_drop, self, &__guard_args)
                    .await,
            )
            .await
        {
            ::core::result::Result::Ok(rechecked) => rechecked.confirmed(),
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        __guard_flow
            .finish(
                (async move || -> Result<String, ToolError> {
                    let Parameters(args): Parameters<DropTableArgs> = ::rmcp_guard::__private::rmcp::handler::server::wrapper::Parameters(
                        __guard_args,
                    );
                    let confirmed: Confirmed<DropTableConfirmation> = __guard_confirmed;
                    assert_eq!(confirmed.typed_name, args.table);
                    Ok(format!("Dropped {} ({})", args.table, confirmed.approver))
                })()
                    .await,
            )
    }
    #[doc(hidden)]
    #[allow(dead_code)]
    fn __guard_own_drop_table<R>(router: R) -> R {
        router
    }
}
fn main() {
    assert!(is_type_to_confirm::< DropTableConfirmation > ());
    let router = S::tool_router();
    let tool = router.get("drop_table").expect("the tool is routed");
    let hints = tool.annotations.as_ref().unwrap();
    assert_eq!(hints.destructive_hint, Some(true));
    assert_eq!(hints.idempotent_hint, Some(true));
    let names: Vec<_> = DropTableConfirmation::SPEC
        .fields
        .iter()
        .map(|f| f.name)
        .collect();
    assert_eq!(names, ["typed_name", "approver"]);
}
