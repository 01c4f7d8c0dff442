use std::sync::Arc;
use rmcp_guard::forms::Checkbox;
use rmcp_guard::{Confirmed, Guard, Guarded, Preview, ToolArgs, ToolError, destructive};
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
impl S {
    async fn preview_delete(&self, args: &DeleteArgs) -> Result<Preview, ToolError> {
        Ok(Preview::effect(&args.path, format!("Delete {}", args.path)))
    }
}
#[tool_router(server_handler)]
impl S {
    /// Delete a file.
    #[tool(
        annotations(
            title = "Delete file",
            open_world_hint = false,
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
            message: ::core::option::Option::Some("Delete this file?"),
            timeout: ::core::option::Option::Some(
                ::core::time::Duration::from_secs(90u64),
            ),
            on_decline: ::core::option::Option::Some("Nothing was deleted."),
            on_cancel: ::core::option::Option::Some("Cancelled; nothing was deleted."),
            approval: ::core::option::Option::None,
            undo_within: ::core::option::Option::None,
            defer: ::core::option::Option::None,
            grant: ::core::option::Option::None,
        };
        const _: () = <Checkbox as ::rmcp_guard::__private::CheckboxForm>::ROLES;
        ::rmcp_guard::__private::assert_guarded::<Self>();
        ::rmcp_guard::__private::assert_parameters::<
            Parameters<DeleteArgs>,
            DeleteArgs,
        >();
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
                    let confirmed: Confirmed<Checkbox> = __guard_confirmed;
                    assert!(confirmed.confirm);
                    Ok(format!("Deleted {} ({})", args.path, confirmed.trace_id()))
                })()
                    .await,
            )
    }
    #[doc(hidden)]
    #[allow(dead_code)]
    fn __guard_own_delete_file<R>(router: R) -> R {
        router
    }
}
fn main() {
    let router = S::tool_router();
    let tool = router.get("delete_file").expect("the tool is routed");
    let hints = tool.annotations.as_ref().expect("guard sets annotations");
    assert_eq!(hints.destructive_hint, Some(true));
    assert_eq!(hints.read_only_hint, Some(false));
    assert_eq!(hints.idempotent_hint, Some(false));
    assert_eq!(hints.title.as_deref(), Some("Delete file"));
    assert_eq!(hints.open_world_hint, Some(false));
    let properties = tool.input_schema["properties"].as_object().unwrap();
    assert_eq!(properties.keys().collect::< Vec < _ >> (), ["path"]);
}
