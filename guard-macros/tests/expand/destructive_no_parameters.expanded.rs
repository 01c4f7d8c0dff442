use std::sync::Arc;
use rmcp_guard::forms::Checkbox;
use rmcp_guard::{Confirmed, Guard, Guarded, Preview, ToolError, destructive};
use rmcp::{tool, tool_router};
#[derive(Clone)]
struct S {
    guard: Arc<Guard>,
}
impl Guarded for S {
    fn guard(&self) -> &Guard {
        &self.guard
    }
}
impl S {
    async fn preview_purge(&self) -> Result<Preview, ToolError> {
        Ok(Preview::effect("cache", "Purge the whole cache"))
    }
}
#[tool_router(server_handler)]
impl S {
    /// Purge the cache.
    #[tool(
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false
        ),
        input_schema = ::rmcp_guard::__private::claim_no_parameters()
    )]
    async fn purge_cache(
        &self,
        __guard_call: ::rmcp_guard::__private::GuardCall,
    ) -> ::core::result::Result<
        ::rmcp_guard::__private::rmcp::model::CallToolResponse,
        ::rmcp_guard::__private::rmcp::ErrorData,
    > {
        const __GUARD_SPEC: &::rmcp_guard::__private::ToolSpec = &::rmcp_guard::__private::ToolSpec {
            name: "purge_cache",
            confirm: ::rmcp_guard::__private::ConfirmKind::Checkbox,
            message: ::core::option::Option::None,
            timeout: ::core::option::Option::None,
            on_decline: ::core::option::Option::None,
            on_cancel: ::core::option::Option::None,
            approval: ::core::option::Option::None,
            undo_within: ::core::option::Option::None,
            defer: ::core::option::Option::None,
            grant: ::core::option::Option::None,
        };
        const _: () = <Checkbox as ::rmcp_guard::__private::CheckboxForm>::ROLES;
        ::rmcp_guard::__private::assert_guarded::<Self>();
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
                ::rmcp_guard::__private::preview_no_args(Self::preview_purge, self).await,
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
                ::rmcp_guard::__private::preview_no_args(Self::preview_purge, self).await,
            )
            .await
        {
            ::core::result::Result::Ok(rechecked) => rechecked.confirmed(),
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        __guard_flow
            .finish(
                (async move || -> Result<String, ToolError> {
                    let confirmed: Confirmed<Checkbox> = __guard_confirmed;
                    Ok(format!("Purged ({})", confirmed.trace_id()))
                })()
                    .await,
            )
    }
    #[doc(hidden)]
    #[allow(dead_code)]
    fn __guard_own_purge_cache<R>(router: R) -> R {
        router
    }
}
fn main() {
    let router = S::tool_router();
    let tool = router.get("purge_cache").expect("the tool is routed");
    assert_eq!(tool.annotations.as_ref().unwrap().destructive_hint, Some(true));
    let properties = tool.input_schema.get("properties");
    assert!(
        properties.is_none_or(| p | p.as_object().is_some_and(| p | p.is_empty())),
        "no model-visible arguments: {properties:?}"
    );
}
