use std::sync::Arc;
use rmcp_guard::batch::{Batch, Item, Picked, Report};
use rmcp_guard::{Guard, Guarded, ToolArgs, ToolError, destructive};
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
struct PruneArgs {
    /// Which branches, as a glob.
    pattern: String,
}
impl ::rmcp_guard::__private::ToolArgsDerived for PruneArgs {
    const CHECKED_NAMES: &'static [&'static str] = &["pattern"];
    const DEFAULTED: &'static [&'static str] = &[];
    const SKIPPED: &'static [&'static str] = &[];
    const UNHASHED: &'static [&'static str] = &[];
    const FIELDS: &'static [&'static str] = &["pattern"];
}
impl ::rmcp_guard::ToolArgs for PruneArgs {}
impl ::rmcp_guard::__private::ToolArgField for PruneArgs {}
const _: () = {
    ::rmcp_guard::__private::assert_tool_arg_field::<String>();
};
impl S {
    async fn preview_prune(&self, args: &PruneArgs) -> Result<Batch, ToolError> {
        Ok(
            Batch::new(format!("`{}`", args.pattern), "Each picked branch is deleted.")
                .item(
                    Item::new("feature/a", "feature/a (3 days old)").with_state("c0ffee"),
                ),
        )
    }
    async fn preview_all(&self) -> Result<Batch, ToolError> {
        Ok(Batch::new("every cache entry", "Each picked entry is evicted."))
    }
}
#[tool_router(server_handler)]
impl S {
    /// Delete branches.
    #[tool(
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false
        ),
        input_schema = ::rmcp_guard::__private::claim_parameters::<::rmcp_guard::__private::rmcp::handler::server::wrapper::Parameters<PruneArgs>>(

        )
    )]
    async fn prune_branches(
        &self,
        __guard_call: ::rmcp_guard::__private::GuardCall,
        __guard_p1: ::rmcp_guard::__private::GuardArguments<PruneArgs>,
    ) -> ::core::result::Result<
        ::rmcp_guard::__private::rmcp::model::CallToolResponse,
        ::rmcp_guard::__private::rmcp::ErrorData,
    > {
        const __GUARD_SPEC: &::rmcp_guard::__private::ToolSpec = &::rmcp_guard::__private::ToolSpec {
            name: "prune_branches",
            confirm: ::rmcp_guard::__private::ConfirmKind::Pick,
            message: ::core::option::Option::Some("Prune branches?"),
            timeout: ::core::option::Option::Some(
                ::core::time::Duration::from_secs(120u64),
            ),
            on_decline: ::core::option::Option::Some("Nothing was pruned."),
            on_cancel: ::core::option::Option::None,
            approval: ::core::option::Option::None,
            undo_within: ::core::option::Option::None,
            defer: ::core::option::Option::None,
            grant: ::core::option::Option::None,
        };
        ::rmcp_guard::__private::assert_guarded::<Self>();
        ::rmcp_guard::__private::assert_parameters::<Parameters<PruneArgs>, PruneArgs>();
        let __guard_flow = ::rmcp_guard::__private::Flow::<
            ::rmcp_guard::batch::Picked,
        >::batch(::rmcp_guard::Guarded::guard(self), __guard_call, __GUARD_SPEC);
        let __guard_incoming = match __guard_flow.dispatched() {
            ::core::result::Result::Ok(incoming) => incoming,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        let __guard_args = match __guard_flow.arguments(&__guard_incoming, __guard_p1) {
            ::core::result::Result::Ok(args) => args,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        let __guard_shown = match __guard_flow
            .begin_batch(
                __guard_incoming,
                ::rmcp_guard::__private::batch_preview(
                        Self::preview_prune,
                        self,
                        &__guard_args,
                    )
                    .await,
                50usize,
            )
        {
            ::core::result::Result::Ok(shown) => shown,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        let __guard_chosen = match __guard_flow.ask_batch(__guard_shown).await {
            ::core::result::Result::Ok(chosen) => chosen,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        let __guard_confirmed = match __guard_flow
            .recheck_batch(
                __guard_chosen,
                ::rmcp_guard::__private::batch_preview(
                        Self::preview_prune,
                        self,
                        &__guard_args,
                    )
                    .await,
            )
            .await
        {
            ::core::result::Result::Ok(picked) => picked,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        let __guard_report = (async move || -> Report {
            let Parameters(_args): Parameters<PruneArgs> = ::rmcp_guard::__private::rmcp::handler::server::wrapper::Parameters(
                __guard_args,
            );
            let picked: Picked = __guard_confirmed;
            let trace = picked.trace_id().to_owned();
            picked
                .act(|item| {
                    let trace = trace.clone();
                    async move {
                        Ok(
                            format!(
                                "Deleted {} at {} ({trace})", item.key(), item.state()
                            ),
                        )
                    }
                })
                .await
        })()
            .await;
        __guard_flow.finish_batch(::rmcp_guard::__private::batch_report(__guard_report))
    }
    #[doc(hidden)]
    #[allow(dead_code)]
    fn __guard_own_prune_branches<R>(router: R) -> R {
        router
    }
    /// Evict cache entries: no arguments, the default cap.
    #[tool(
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false
        ),
        input_schema = ::rmcp_guard::__private::claim_no_parameters()
    )]
    async fn evict(
        &self,
        __guard_call: ::rmcp_guard::__private::GuardCall,
    ) -> ::core::result::Result<
        ::rmcp_guard::__private::rmcp::model::CallToolResponse,
        ::rmcp_guard::__private::rmcp::ErrorData,
    > {
        const __GUARD_SPEC: &::rmcp_guard::__private::ToolSpec = &::rmcp_guard::__private::ToolSpec {
            name: "evict",
            confirm: ::rmcp_guard::__private::ConfirmKind::Pick,
            message: ::core::option::Option::None,
            timeout: ::core::option::Option::None,
            on_decline: ::core::option::Option::None,
            on_cancel: ::core::option::Option::None,
            approval: ::core::option::Option::None,
            undo_within: ::core::option::Option::None,
            defer: ::core::option::Option::None,
            grant: ::core::option::Option::None,
        };
        ::rmcp_guard::__private::assert_guarded::<Self>();
        let __guard_flow = ::rmcp_guard::__private::Flow::<
            ::rmcp_guard::batch::Picked,
        >::batch(::rmcp_guard::Guarded::guard(self), __guard_call, __GUARD_SPEC);
        let __guard_incoming = match __guard_flow.dispatched() {
            ::core::result::Result::Ok(incoming) => incoming,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        let __guard_shown = match __guard_flow
            .begin_batch(
                __guard_incoming,
                ::rmcp_guard::__private::batch_preview_no_args(Self::preview_all, self)
                    .await,
                ::rmcp_guard::batch::DEFAULT_MAX_ITEMS,
            )
        {
            ::core::result::Result::Ok(shown) => shown,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        let __guard_chosen = match __guard_flow.ask_batch(__guard_shown).await {
            ::core::result::Result::Ok(chosen) => chosen,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        let __guard_confirmed = match __guard_flow
            .recheck_batch(
                __guard_chosen,
                ::rmcp_guard::__private::batch_preview_no_args(Self::preview_all, self)
                    .await,
            )
            .await
        {
            ::core::result::Result::Ok(picked) => picked,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        let __guard_report = (async move || -> Report {
            let picked: Picked = __guard_confirmed;
            picked.act(|item| async move { Ok(item.title().to_owned()) }).await
        })()
            .await;
        __guard_flow.finish_batch(::rmcp_guard::__private::batch_report(__guard_report))
    }
    #[doc(hidden)]
    #[allow(dead_code)]
    fn __guard_own_evict<R>(router: R) -> R {
        router
    }
}
fn main() {
    let router = S::tool_router();
    for name in ["prune_branches", "evict"] {
        let tool = router.get(name).expect("the tool is routed");
        let hints = tool.annotations.as_ref().expect("guard sets annotations");
        assert_eq!(hints.destructive_hint, Some(true));
        assert_eq!(hints.read_only_hint, Some(false));
    }
    let tool = router.get("prune_branches").unwrap();
    let properties = tool.input_schema["properties"].as_object().unwrap();
    assert_eq!(properties.keys().collect::< Vec < _ >> (), ["pattern"]);
}
