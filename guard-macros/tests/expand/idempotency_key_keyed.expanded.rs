use std::sync::Arc;
use rmcp::{handler::server::wrapper::Parameters, tool, tool_router};
use rmcp_guard::{Guard, Guarded, ToolArgs, ToolError, idempotent, ops::Keyed};
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
#[derive(Serialize, Deserialize, JsonSchema, ToolArgs)]
struct OpenArgs {
    request_id: String,
    subject: String,
}
impl ::rmcp_guard::__private::ToolArgsDerived for OpenArgs {
    const CHECKED_NAMES: &'static [&'static str] = &["request_id", "subject"];
    const DEFAULTED: &'static [&'static str] = &[];
    const SKIPPED: &'static [&'static str] = &[];
    const UNHASHED: &'static [&'static str] = &[];
    const FIELDS: &'static [&'static str] = &["request_id", "subject"];
}
impl ::rmcp_guard::ToolArgs for OpenArgs {}
impl ::rmcp_guard::__private::ToolArgField for OpenArgs {}
const _: () = {
    ::rmcp_guard::__private::assert_tool_arg_field::<String>();
    ::rmcp_guard::__private::assert_tool_arg_field::<String>();
};
#[derive(Serialize)]
struct Opened {
    ticket_id: i64,
}
#[tool_router(server_handler)]
impl S {
    #[doc(hidden)]
    async fn __guard_open_ticket(
        &self,
        keyed: &mut Keyed,
        Parameters(args): Parameters<OpenArgs>,
    ) -> Result<Opened, ToolError> {
        let _ = (keyed.caller().user.clone(), keyed.remote_key(), args.subject);
        let _ = keyed.tx();
        Ok(Opened { ticket_id: 1 })
    }
    #[tool(
        description = "Open a ticket once per request_id.",
        annotations(read_only_hint = false, idempotent_hint = true),
        input_schema = ::rmcp_guard::__private::claim_parameters::<::rmcp_guard::__private::rmcp::handler::server::wrapper::Parameters<OpenArgs>>(

        )
    )]
    async fn open_ticket(
        &self,
        __guard_call: ::rmcp_guard::__private::GuardCall,
        __guard_p2: ::rmcp_guard::__private::GuardArguments<OpenArgs>,
    ) -> ::core::result::Result<
        ::rmcp_guard::__private::rmcp::model::CallToolResponse,
        ::rmcp_guard::__private::rmcp::ErrorData,
    > {
        const __GUARD_SPEC: &::rmcp_guard::__private::KeyedSpec = &::rmcp_guard::__private::KeyedSpec {
            tool: "open_ticket",
            key_field: "request_id",
            ttl: ::core::time::Duration::from_secs(86400u64),
        };
        ::rmcp_guard::__private::assert_guarded::<Self>();
        ::rmcp_guard::__private::assert_parameters::<Parameters<OpenArgs>, OpenArgs>();
        ::rmcp_guard::__private::assert_keyed_return::<Result<Opened, ToolError>>();
        const _: () = ::rmcp_guard::__private::assert_key_hashed(
            <OpenArgs as ::rmcp_guard::__private::ToolArgsDerived>::SKIPPED,
            <OpenArgs as ::rmcp_guard::__private::ToolArgsDerived>::UNHASHED,
            "request_id",
        );
        let __guard_p2 = ::rmcp_guard::__private::rmcp::handler::server::wrapper::Parameters(
            match ::rmcp_guard::__private::arguments(
                    ::rmcp_guard::Guarded::guard(self),
                    &__guard_call,
                    __GUARD_SPEC.tool,
                    __GUARD_SPEC.tool,
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
        let mut __guard_keyed = match ::rmcp_guard::ops::Keyed::begin(
                ::rmcp_guard::Guarded::guard(self),
                &__guard_call,
                __GUARD_SPEC,
                ::rmcp_guard::__private::key_field(&(__guard_p2).0.request_id),
                &(__guard_p2).0,
            )
            .await
        {
            ::core::result::Result::Ok(keyed) => keyed,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        let __guard_outcome = Self::__guard_open_ticket(
                self,
                &mut __guard_keyed,
                __guard_p2,
            )
            .await;
        __guard_keyed.finish(__guard_outcome).await
    }
}
fn main() {
    let router = S::tool_router();
    let tool = router.get("open_ticket").expect("open_ticket is routed");
    let hints = tool.annotations.as_ref().expect("annotations");
    assert_eq!(hints.idempotent_hint, Some(true));
}
