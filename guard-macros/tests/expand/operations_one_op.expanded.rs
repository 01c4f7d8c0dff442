use std::sync::Arc;
use rmcp_guard::{
    Guard, Guarded, ToolArgs, ToolError, operations,
    ops::{Approved, Intent, Locked, Prepare, Recheck},
};
use rmcp::{handler::server::wrapper::Parameters, tool, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
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
struct CancelArgs {
    order_no: String,
}
impl ::rmcp_guard::__private::ToolArgsDerived for CancelArgs {
    const CHECKED_NAMES: &'static [&'static str] = &["order_no"];
    const DEFAULTED: &'static [&'static str] = &[];
    const SKIPPED: &'static [&'static str] = &[];
    const UNHASHED: &'static [&'static str] = &[];
    const FIELDS: &'static [&'static str] = &["order_no"];
}
impl ::rmcp_guard::ToolArgs for CancelArgs {}
impl ::rmcp_guard::__private::ToolArgField for CancelArgs {}
const _: () = {
    ::rmcp_guard::__private::assert_tool_arg_field::<String>();
};
#[derive(Clone, Serialize, Deserialize)]
struct Cancel {
    order_no: String,
}
impl S {
    async fn still_open(
        &self,
        locked: &mut Locked<Cancel>,
    ) -> Result<Recheck, ToolError> {
        let _ = locked.payload();
        Ok(Recheck::Unchanged)
    }
}
#[tool_router(server_handler)]
impl S {
    #[doc(hidden)]
    async fn __guard_prepare_cancel(
        &self,
        prepare: &mut Prepare,
        Parameters(args): Parameters<CancelArgs>,
    ) -> Result<Intent<Cancel>, ToolError> {
        let _ = prepare.caller();
        Ok(Intent::new(args.order_no.clone(), Cancel { order_no: args.order_no }))
    }
    #[tool(
        description = "Prepare cancelling an order.",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false
        ),
        input_schema = ::rmcp_guard::__private::claim_parameters::<::rmcp_guard::__private::rmcp::handler::server::wrapper::Parameters<CancelArgs>>(

        )
    )]
    async fn prepare_cancel(
        &self,
        __guard_call: ::rmcp_guard::__private::GuardCall,
        __guard_p2: ::rmcp_guard::__private::GuardArguments<CancelArgs>,
    ) -> ::core::result::Result<
        ::rmcp_guard::__private::rmcp::model::CallToolResponse,
        ::rmcp_guard::__private::rmcp::ErrorData,
    > {
        const __GUARD_SPEC: &::rmcp_guard::__private::PrepareSpec = &::rmcp_guard::__private::PrepareSpec {
            tool: "prepare_cancel",
            op: "order_cancel",
            confirm_tool: "confirm_cancel",
            ttl: ::core::time::Duration::from_secs(600u64),
            scopes: &[],
            rate: ::core::option::Option::None,
        };
        ::rmcp_guard::__private::assert_guarded::<Self>();
        ::rmcp_guard::__private::assert_payload::<Cancel>();
        ::rmcp_guard::__private::assert_parameters::<
            Parameters<CancelArgs>,
            CancelArgs,
        >();
        let __guard_p2 = ::rmcp_guard::__private::rmcp::handler::server::wrapper::Parameters(
            match ::rmcp_guard::__private::arguments(
                    ::rmcp_guard::Guarded::guard(self),
                    &__guard_call,
                    __GUARD_SPEC.tool,
                    __GUARD_SPEC.op,
                    __guard_p2,
                )
                .await
            {
                ::core::result::Result::Ok(args) => args,
                ::core::result::Result::Err(done) => {
                    return ::core::result::Result::Ok(*done);
                }
            },
        );
        let mut __guard_prepare = match ::rmcp_guard::ops::Prepare::begin(
                ::rmcp_guard::Guarded::guard(self),
                &__guard_call,
                __GUARD_SPEC,
            )
            .await
        {
            ::core::result::Result::Ok(prepare) => prepare,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        let __guard_checked = Self::__guard_prepare_cancel(
                self,
                &mut __guard_prepare,
                __guard_p2,
            )
            .await;
        __guard_prepare.finish(__guard_checked).await
    }
    #[doc(hidden)]
    fn __guard_run_confirm_cancel(
        &self,
        __guard_due: ::rmcp_guard::__private::Due,
    ) -> ::rmcp_guard::__private::RunFuture<'_> {
        ::std::boxed::Box::pin(async move {
            const __GUARD_SPEC: &::rmcp_guard::__private::ConfirmSpec = &::rmcp_guard::__private::ConfirmSpec {
                tool: "confirm_cancel",
                op: "order_cancel",
                prepare_tool: "prepare_cancel",
                scopes: &[],
                defer: ::core::option::Option::None,
            };
            let mut __guard_approved = match ::rmcp_guard::__private::run_and_recheck::<
                Self,
                Cancel,
            >(
                    ::rmcp_guard::Guarded::guard(self),
                    __GUARD_SPEC,
                    __guard_due,
                    self,
                    |__guard_server, __guard_locked| ::std::boxed::Box::pin(
                        Self::still_open(__guard_server, __guard_locked),
                    ),
                )
                .await
            {
                ::core::result::Result::Ok(approved) => approved,
                ::core::result::Result::Err(ended) => return ended,
            };
            let __guard_effect = (async || -> Result<String, ToolError> {
                let approved: &mut Approved<Cancel> = ::rmcp_guard::__private::same_payload::<
                    Cancel,
                    Cancel,
                >(&mut __guard_approved);
                Ok(format!("cancelled {}", approved.payload().order_no))
            })()
                .await;
            __guard_approved.finish_due(__guard_effect).await
        })
    }
    #[doc(hidden)]
    #[allow(dead_code)]
    fn __guard_own_confirm_cancel(
        router: ::rmcp_guard::__private::rmcp::handler::server::router::tool::ToolRouter<
            Self,
        >,
    ) -> ::rmcp_guard::__private::rmcp::handler::server::router::tool::ToolRouter<Self> {
        let router = ::rmcp_guard::__private::deferred_route::<
            Self,
            _,
        >(router, "confirm_cancel", false, Self::__guard_run_confirm_cancel);
        router
    }
    #[tool(
        description = "Cancel the order prepared by prepare_cancel.",
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true
        ),
        input_schema = ::rmcp_guard::__private::claim_parameters::<::rmcp_guard::__private::rmcp::handler::server::wrapper::Parameters<::rmcp_guard::ops::OperationRef>>(

        )
    )]
    async fn confirm_cancel(
        &self,
        __guard_call: ::rmcp_guard::__private::GuardCall,
        __guard_operation: ::rmcp_guard::__private::GuardArguments<
            ::rmcp_guard::ops::OperationRef,
        >,
    ) -> ::core::result::Result<
        ::rmcp_guard::__private::rmcp::model::CallToolResponse,
        ::rmcp_guard::__private::rmcp::ErrorData,
    > {
        const __GUARD_SPEC: &::rmcp_guard::__private::ConfirmSpec = &::rmcp_guard::__private::ConfirmSpec {
            tool: "confirm_cancel",
            op: "order_cancel",
            prepare_tool: "prepare_cancel",
            scopes: &[],
            defer: ::core::option::Option::None,
        };
        ::rmcp_guard::__private::assert_guarded::<Self>();
        let __guard_operation = ::rmcp_guard::__private::rmcp::handler::server::wrapper::Parameters(
            match ::rmcp_guard::__private::arguments(
                    ::rmcp_guard::Guarded::guard(self),
                    &__guard_call,
                    __GUARD_SPEC.tool,
                    __GUARD_SPEC.op,
                    __guard_operation,
                )
                .await
            {
                ::core::result::Result::Ok(args) => args,
                ::core::result::Result::Err(done) => {
                    return ::core::result::Result::Ok(*done);
                }
            },
        );
        let mut __guard_approved = match ::rmcp_guard::__private::lock_and_recheck::<
            Self,
            Cancel,
        >(
                ::rmcp_guard::Guarded::guard(self),
                &__guard_call,
                __GUARD_SPEC,
                __guard_operation,
                self,
                |__guard_server, __guard_locked| ::std::boxed::Box::pin(
                    Self::still_open(__guard_server, __guard_locked),
                ),
            )
            .await
        {
            ::core::result::Result::Ok(approved) => approved,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        let __guard_effect = (async || -> Result<String, ToolError> {
            let approved: &mut Approved<Cancel> = ::rmcp_guard::__private::same_payload::<
                Cancel,
                Cancel,
            >(&mut __guard_approved);
            Ok(format!("cancelled {}", approved.payload().order_no))
        })()
            .await;
        __guard_approved.finish(__guard_effect).await
    }
    #[::rmcp_guard::__private::rmcp::tool(
        name = "get_operation_result",
        description = "Did a prepared operation happen? Returns its status (PREPARED, SUBMITTED, EXPIRED or REJECTED), its preview and, once submitted, its result. Call it after a confirm timed out or failed with an unknown result, before retrying.",
        annotations(read_only_hint = true, destructive_hint = false),
        input_schema = ::rmcp_guard::__private::claim_parameters::<::rmcp_guard::__private::rmcp::handler::server::wrapper::Parameters<::rmcp_guard::ops::OperationRef>>(

        )
    )]
    async fn __guard_get_operation_result_of_prepare_cancel(
        &self,
        __guard_call: ::rmcp_guard::__private::GuardCall,
        __guard_operation: ::rmcp_guard::__private::GuardArguments<
            ::rmcp_guard::ops::OperationRef,
        >,
    ) -> ::core::result::Result<
        ::rmcp_guard::__private::rmcp::model::CallToolResponse,
        ::rmcp_guard::__private::rmcp::ErrorData,
    > {
        ::rmcp_guard::__private::assert_guarded::<Self>();
        let __guard_operation = ::rmcp_guard::__private::rmcp::handler::server::wrapper::Parameters(
            match ::rmcp_guard::__private::arguments(
                    ::rmcp_guard::Guarded::guard(self),
                    &__guard_call,
                    "get_operation_result",
                    "",
                    __guard_operation,
                )
                .await
            {
                ::core::result::Result::Ok(args) => args,
                ::core::result::Result::Err(done) => {
                    return ::core::result::Result::Ok(*done);
                }
            },
        );
        ::rmcp_guard::__private::get_operation_result(
                ::rmcp_guard::Guarded::guard(self),
                &__guard_call,
                __guard_operation,
                &["prepare_cancel"],
            )
            .await
    }
}
impl ::rmcp_guard::__private::EveryTwoPhaseToolOfAServerGoesInOneOperationsImpl for S {}
fn main() {
    let router = S::tool_router();
    let mut names: Vec<String> = router
        .list_all()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    names.sort();
    assert_eq!(names, ["confirm_cancel", "get_operation_result", "prepare_cancel"]);
    let hints = |name: &str| {
        let a = router.get(name).unwrap().annotations.clone().unwrap();
        (a.read_only_hint, a.destructive_hint, a.idempotent_hint)
    };
    assert_eq!(hints("prepare_cancel"), (Some(false), Some(false), Some(false)));
    assert_eq!(hints("confirm_cancel"), (Some(false), Some(true), Some(true)));
    assert_eq!(hints("get_operation_result").0, Some(true));
    let schema = &router.get("confirm_cancel").unwrap().input_schema;
    let properties = schema["properties"].as_object().unwrap();
    assert_eq!(properties.keys().collect::< Vec < _ >> (), ["operation_id"]);
}
