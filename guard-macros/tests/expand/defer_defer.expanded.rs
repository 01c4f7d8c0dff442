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
struct AccountArgs {
    /// The account to close.
    account: String,
}
impl ::rmcp_guard::__private::ToolArgsDerived for AccountArgs {
    const CHECKED_NAMES: &'static [&'static str] = &["account"];
    const DEFAULTED: &'static [&'static str] = &[];
    const SKIPPED: &'static [&'static str] = &[];
    const UNHASHED: &'static [&'static str] = &[];
    const FIELDS: &'static [&'static str] = &["account"];
}
impl ::rmcp_guard::ToolArgs for AccountArgs {}
impl ::rmcp_guard::__private::ToolArgField for AccountArgs {}
const _: () = {
    ::rmcp_guard::__private::assert_tool_arg_field::<String>();
};
#[derive(Form)]
struct Closing {
    /// Why the account closes.
    reason: String,
}
impl ::rmcp_guard::__private::FormDerived for Closing {}
impl ::rmcp_guard::Form for Closing {
    const SPEC: &'static ::rmcp_guard::form::FormSpec = &::rmcp_guard::form::FormSpec {
        name: "Closing",
        fields: &[
            ::rmcp_guard::form::FieldSpec {
                name: "reason",
                title: ::core::option::Option::None,
                description: ::core::option::Option::Some("Why the account closes."),
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
    async fn preview_close(&self, args: &AccountArgs) -> Result<Preview, ToolError> {
        Ok(Preview::effect(&args.account, format!("Close {}", args.account)))
    }
    async fn preview_reset(&self) -> Result<Preview, ToolError> {
        Ok(Preview::effect("cache", "Empty the cache"))
    }
}
#[tool_router(server_handler)]
impl S {
    /// Close an account, two minutes after the user confirms.
    #[tool(
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false
        ),
        input_schema = ::rmcp_guard::__private::claim_parameters::<::rmcp_guard::__private::rmcp::handler::server::wrapper::Parameters<AccountArgs>>(

        )
    )]
    async fn close_account(
        &self,
        __guard_call: ::rmcp_guard::__private::GuardCall,
        __guard_p1: ::rmcp_guard::__private::GuardArguments<AccountArgs>,
    ) -> ::core::result::Result<
        ::rmcp_guard::__private::rmcp::model::CallToolResponse,
        ::rmcp_guard::__private::rmcp::ErrorData,
    > {
        const __GUARD_SPEC: &::rmcp_guard::__private::ToolSpec = &::rmcp_guard::__private::ToolSpec {
            name: "close_account",
            confirm: ::rmcp_guard::__private::ConfirmKind::Form,
            message: ::core::option::Option::None,
            timeout: ::core::option::Option::None,
            on_decline: ::core::option::Option::None,
            on_cancel: ::core::option::Option::None,
            approval: ::core::option::Option::None,
            undo_within: ::core::option::Option::None,
            defer: ::core::option::Option::Some(
                ::core::time::Duration::from_secs(120u64),
            ),
            grant: ::core::option::Option::None,
        };
        const _: () = ::rmcp_guard::__private::assert_roles(
            <Closing as ::rmcp_guard::Form>::SPEC,
            ::rmcp_guard::__private::ConfirmKind::Form,
        );
        ::rmcp_guard::__private::assert_guarded::<Self>();
        ::rmcp_guard::__private::assert_parameters::<
            Parameters<AccountArgs>,
            AccountArgs,
        >();
        ::rmcp_guard::__private::assert_same_form::<Closing, Closing>();
        const _: () = ::rmcp_guard::__private::assert_defer_store();
        ::rmcp_guard::__private::assert_form::<Closing>();
        let __guard_flow = ::rmcp_guard::__private::Flow::<
            Closing,
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
                        Self::preview_close,
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
        return __guard_flow
            .defer(
                __guard_accepted,
                ::rmcp_guard::__private::preview(
                        Self::preview_close,
                        self,
                        &__guard_args,
                    )
                    .await,
            )
            .await;
    }
    #[doc(hidden)]
    fn __guard_run_close_account(
        &self,
        __guard_due: ::rmcp_guard::__private::Due,
    ) -> ::rmcp_guard::__private::RunFuture<'_> {
        ::std::boxed::Box::pin(async move {
            const __GUARD_SPEC: &::rmcp_guard::__private::ToolSpec = &::rmcp_guard::__private::ToolSpec {
                name: "close_account",
                confirm: ::rmcp_guard::__private::ConfirmKind::Form,
                message: ::core::option::Option::None,
                timeout: ::core::option::Option::None,
                on_decline: ::core::option::Option::None,
                on_cancel: ::core::option::Option::None,
                approval: ::core::option::Option::None,
                undo_within: ::core::option::Option::None,
                defer: ::core::option::Option::Some(
                    ::core::time::Duration::from_secs(120u64),
                ),
                grant: ::core::option::Option::None,
            };
            let __guard_flow = ::rmcp_guard::__private::RunFlow::<
                Closing,
            >::new(__guard_due, __GUARD_SPEC);
            let __guard_args: AccountArgs = match __guard_flow.arguments() {
                ::core::result::Result::Ok(args) => args,
                ::core::result::Result::Err(ended) => return ended,
            };
            let __guard_confirmed = match __guard_flow
                .confirm(
                    ::rmcp_guard::__private::preview(
                            Self::preview_close,
                            self,
                            &__guard_args,
                        )
                        .await,
                    ::core::option::Option::None,
                    ::core::option::Option::None,
                )
            {
                ::core::result::Result::Ok(confirmed) => confirmed,
                ::core::result::Result::Err(ended) => return ended,
            };
            __guard_flow
                .finish(
                    (async move || -> Result<String, ToolError> {
                        let Parameters(args): Parameters<AccountArgs> = ::rmcp_guard::__private::rmcp::handler::server::wrapper::Parameters(
                            __guard_args,
                        );
                        let confirmed: Confirmed<Closing> = __guard_confirmed;
                        Ok(
                            format!(
                                "Closed {} ({}).", args.account, confirmed.form().reason
                            ),
                        )
                    })()
                        .await,
                )
        })
    }
    #[doc(hidden)]
    #[allow(dead_code)]
    fn __guard_own_close_account(
        router: ::rmcp_guard::__private::rmcp::handler::server::router::tool::ToolRouter<
            Self,
        >,
    ) -> ::rmcp_guard::__private::rmcp::handler::server::router::tool::ToolRouter<Self> {
        let router = ::rmcp_guard::__private::deferred_route::<
            Self,
            _,
        >(router, "close_account", true, Self::__guard_run_close_account);
        router
    }
    /// Empty the cache, in an hour.
    #[tool(
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false
        ),
        input_schema = ::rmcp_guard::__private::claim_no_parameters()
    )]
    async fn reset_cache(
        &self,
        __guard_call: ::rmcp_guard::__private::GuardCall,
    ) -> ::core::result::Result<
        ::rmcp_guard::__private::rmcp::model::CallToolResponse,
        ::rmcp_guard::__private::rmcp::ErrorData,
    > {
        const __GUARD_SPEC: &::rmcp_guard::__private::ToolSpec = &::rmcp_guard::__private::ToolSpec {
            name: "reset_cache",
            confirm: ::rmcp_guard::__private::ConfirmKind::Checkbox,
            message: ::core::option::Option::None,
            timeout: ::core::option::Option::None,
            on_decline: ::core::option::Option::None,
            on_cancel: ::core::option::Option::None,
            approval: ::core::option::Option::None,
            undo_within: ::core::option::Option::None,
            defer: ::core::option::Option::Some(
                ::core::time::Duration::from_secs(3600u64),
            ),
            grant: ::core::option::Option::None,
        };
        const _: () = <Checkbox as ::rmcp_guard::__private::CheckboxForm>::ROLES;
        ::rmcp_guard::__private::assert_guarded::<Self>();
        const _: () = ::rmcp_guard::__private::assert_defer_store();
        ::rmcp_guard::__private::assert_form::<Checkbox>();
        let __guard_flow = ::rmcp_guard::__private::Flow::<
            Checkbox,
        >::new(::rmcp_guard::Guarded::guard(self), __guard_call, __GUARD_SPEC);
        let __guard_incoming = match __guard_flow.dispatched() {
            ::core::result::Result::Ok(incoming) => incoming,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        let __guard_shown = match __guard_flow
            .begin(
                __guard_incoming,
                ::rmcp_guard::__private::preview_no_args(Self::preview_reset, self).await,
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
        return __guard_flow
            .defer(
                __guard_accepted,
                ::rmcp_guard::__private::preview_no_args(Self::preview_reset, self).await,
            )
            .await;
    }
    #[doc(hidden)]
    fn __guard_run_reset_cache(
        &self,
        __guard_due: ::rmcp_guard::__private::Due,
    ) -> ::rmcp_guard::__private::RunFuture<'_> {
        ::std::boxed::Box::pin(async move {
            const __GUARD_SPEC: &::rmcp_guard::__private::ToolSpec = &::rmcp_guard::__private::ToolSpec {
                name: "reset_cache",
                confirm: ::rmcp_guard::__private::ConfirmKind::Checkbox,
                message: ::core::option::Option::None,
                timeout: ::core::option::Option::None,
                on_decline: ::core::option::Option::None,
                on_cancel: ::core::option::Option::None,
                approval: ::core::option::Option::None,
                undo_within: ::core::option::Option::None,
                defer: ::core::option::Option::Some(
                    ::core::time::Duration::from_secs(3600u64),
                ),
                grant: ::core::option::Option::None,
            };
            let __guard_flow = ::rmcp_guard::__private::RunFlow::<
                Checkbox,
            >::new(__guard_due, __GUARD_SPEC);
            let __guard_confirmed = match __guard_flow
                .confirm(
                    ::rmcp_guard::__private::preview_no_args(Self::preview_reset, self)
                        .await,
                    ::core::option::Option::None,
                    ::core::option::Option::None,
                )
            {
                ::core::result::Result::Ok(confirmed) => confirmed,
                ::core::result::Result::Err(ended) => return ended,
            };
            __guard_flow
                .finish(
                    (async move || -> Result<String, ToolError> {
                        let _confirmed: Confirmed<Checkbox> = __guard_confirmed;
                        Ok("Emptied.".into())
                    })()
                        .await,
                )
        })
    }
    #[doc(hidden)]
    #[allow(dead_code)]
    fn __guard_own_reset_cache(
        router: ::rmcp_guard::__private::rmcp::handler::server::router::tool::ToolRouter<
            Self,
        >,
    ) -> ::rmcp_guard::__private::rmcp::handler::server::router::tool::ToolRouter<Self> {
        let router = ::rmcp_guard::__private::deferred_route::<
            Self,
            _,
        >(router, "reset_cache", true, Self::__guard_run_reset_cache);
        router
    }
}
fn main() {
    let router = S::tool_router();
    assert!(router.has_route("close_account"));
    assert!(router.has_route("reset_cache"));
}
