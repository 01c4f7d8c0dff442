use std::sync::Arc;
use rmcp::{handler::server::wrapper::Parameters, tool, tool_router};
use rmcp_guard::forms::Checkbox;
use rmcp_guard::{
    Confirmed, Form, Guard, Guarded, Preview, ToolArgs, ToolError, destructive,
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
struct DeleteArgs {
    /// Path of the file.
    path: String,
}
impl ::rmcp_guard::__private::ToolArgsDerived for DeleteArgs {
    const CHECKED_NAMES: &'static [&'static str] = &["path"];
    const DEFAULTED: &'static [&'static str] = &[];
    const SKIPPED: &'static [&'static str] = &[];
    const UNHASHED: &'static [&'static str] = &[];
    const FIELDS: &'static [&'static str] = &["path"];
}
impl ::rmcp_guard::ToolArgs for DeleteArgs {}
impl ::rmcp_guard::__private::ToolArgField for DeleteArgs {}
const _: () = {
    ::rmcp_guard::__private::assert_tool_arg_field::<String>();
};
#[derive(Form)]
struct Why {
    /// Why the file goes.
    reason: String,
}
impl ::rmcp_guard::__private::FormDerived for Why {}
impl ::rmcp_guard::Form for Why {
    const SPEC: &'static ::rmcp_guard::form::FormSpec = &::rmcp_guard::form::FormSpec {
        name: "Why",
        fields: &[
            ::rmcp_guard::form::FieldSpec {
                name: "reason",
                title: ::core::option::Option::None,
                description: ::core::option::Option::Some("Why the file goes."),
                kind: ::rmcp_guard::form::FieldKind::String {
                    min_length: ::core::option::Option::None,
                    max_length: ::core::option::Option::None,
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
            reason: <String as ::rmcp_guard::form::FieldValue>::from_field(
                content.get("reason"),
                &fields[0usize],
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
                <::std::string::String as ::core::convert::From<&str>>::from("reason"),
                <String as ::rmcp_guard::form::FieldValue>::to_json(&self.reason),
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
    async fn preview_delete(&self, args: &DeleteArgs) -> Result<Preview, ToolError> {
        Ok(
            Preview::effect(&args.path, format!("Delete {}", args.path))
                .scope("files in logs/"),
        )
    }
}
#[tool_router(server_handler)]
impl S {
    /// Delete a file.
    #[tool(
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false
        ),
        input_schema = ::rmcp_guard::__private::claim_parameters::<::rmcp_guard::__private::rmcp::handler::server::wrapper::Parameters<DeleteArgs>>(

        )
    )]
    async fn delete_file(
        &self,
        __guard_call: ::rmcp_guard::__private::GuardCall,
        __guard_p1: ::rmcp_guard::__private::GuardArguments<DeleteArgs>,
    ) -> ::core::result::Result<
        ::rmcp_guard::__private::rmcp::model::CallToolResponse,
        ::rmcp_guard::__private::rmcp::ErrorData,
    > {
        const __GUARD_SPEC: &::rmcp_guard::__private::ToolSpec = &::rmcp_guard::__private::ToolSpec {
            name: "delete_file",
            confirm: ::rmcp_guard::__private::ConfirmKind::Checkbox,
            message: ::core::option::Option::None,
            timeout: ::core::option::Option::None,
            on_decline: ::core::option::Option::None,
            on_cancel: ::core::option::Option::None,
            approval: ::core::option::Option::None,
            undo_within: ::core::option::Option::None,
            defer: ::core::option::Option::None,
            grant: ::core::option::Option::Some(::rmcp_guard::__private::GrantSpec {
                within: ::core::time::Duration::from_secs(600u64),
                calls: 20u32,
            }),
        };
        const _: () = <Checkbox as ::rmcp_guard::__private::CheckboxForm>::ROLES;
        ::rmcp_guard::__private::assert_guarded::<Self>();
        ::rmcp_guard::__private::assert_parameters::<
            Parameters<DeleteArgs>,
            DeleteArgs,
        >();
        const _: () = ::rmcp_guard::__private::assert_grant_form(
            <Checkbox as ::rmcp_guard::Form>::SPEC,
        );
        ::rmcp_guard::__private::assert_form::<Checkbox>();
        let __guard_flow = ::rmcp_guard::__private::Flow::<
            Checkbox,
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
                ::rmcp_guard::__private::preview(
                        Self::preview_delete,
                        self,
                        &__guard_args,
                    )
                    .await,
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
        let (__guard_confirmed, __guard_owner) = match __guard_flow
            .recheck(
                __guard_accepted,
                ::rmcp_guard::__private::preview(
                        Self::preview_delete,
                        self,
                        &__guard_args,
                    )
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
                    let Parameters(args): Parameters<DeleteArgs> = ::rmcp_guard::__private::rmcp::handler::server::wrapper::Parameters(
                        __guard_args,
                    );
                    let _confirmed: Confirmed<Checkbox> = __guard_confirmed;
                    Ok(args.path)
                })()
                    .await,
            )
    }
    #[doc(hidden)]
    #[allow(dead_code)]
    fn __guard_own_delete_file<R>(router: R) -> R {
        router
    }
    /// Delete a file, saying why.
    #[tool(
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false
        ),
        input_schema = ::rmcp_guard::__private::claim_parameters::<::rmcp_guard::__private::rmcp::handler::server::wrapper::Parameters<DeleteArgs>>(

        )
    )]
    async fn delete_with_reason(
        &self,
        __guard_call: ::rmcp_guard::__private::GuardCall,
        __guard_p1: ::rmcp_guard::__private::GuardArguments<DeleteArgs>,
    ) -> ::core::result::Result<
        ::rmcp_guard::__private::rmcp::model::CallToolResponse,
        ::rmcp_guard::__private::rmcp::ErrorData,
    > {
        const __GUARD_SPEC: &::rmcp_guard::__private::ToolSpec = &::rmcp_guard::__private::ToolSpec {
            name: "delete_with_reason",
            confirm: ::rmcp_guard::__private::ConfirmKind::Form,
            message: ::core::option::Option::None,
            timeout: ::core::option::Option::None,
            on_decline: ::core::option::Option::None,
            on_cancel: ::core::option::Option::None,
            approval: ::core::option::Option::None,
            undo_within: ::core::option::Option::None,
            defer: ::core::option::Option::None,
            grant: ::core::option::Option::Some(::rmcp_guard::__private::GrantSpec {
                within: ::core::time::Duration::from_secs(28800u64),
                calls: 100u32,
            }),
        };
        const _: () = ::rmcp_guard::__private::assert_roles(
            <Why as ::rmcp_guard::Form>::SPEC,
            ::rmcp_guard::__private::ConfirmKind::Form,
        );
        ::rmcp_guard::__private::assert_guarded::<Self>();
        ::rmcp_guard::__private::assert_parameters::<
            Parameters<DeleteArgs>,
            DeleteArgs,
        >();
        ::rmcp_guard::__private::assert_same_form::<Why, Why>();
        const _: () = ::rmcp_guard::__private::assert_grant_form(
            <Why as ::rmcp_guard::Form>::SPEC,
        );
        ::rmcp_guard::__private::assert_form::<Why>();
        let __guard_flow = ::rmcp_guard::__private::Flow::<
            Why,
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
                ::rmcp_guard::__private::preview(
                        Self::preview_delete,
                        self,
                        &__guard_args,
                    )
                    .await,
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
        let (__guard_confirmed, __guard_owner) = match __guard_flow
            .recheck(
                __guard_accepted,
                ::rmcp_guard::__private::preview(
                        Self::preview_delete,
                        self,
                        &__guard_args,
                    )
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
                    let Parameters(args): Parameters<DeleteArgs> = ::rmcp_guard::__private::rmcp::handler::server::wrapper::Parameters(
                        __guard_args,
                    );
                    let confirmed: Confirmed<Why> = __guard_confirmed;
                    Ok(format!("{} ({})", args.path, confirmed.form().reason))
                })()
                    .await,
            )
    }
    #[doc(hidden)]
    #[allow(dead_code)]
    fn __guard_own_delete_with_reason<R>(router: R) -> R {
        router
    }
}
fn main() {}
