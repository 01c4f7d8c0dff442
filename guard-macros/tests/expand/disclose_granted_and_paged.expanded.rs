use rmcp::{handler::server::wrapper::Parameters, tool, tool_router};
use rmcp_guard::{Boundary, Disclosed, Guard, Guarded, ToolArgs, ToolError, read_only};
#[derive(Clone)]
struct S {
    guard: std::sync::Arc<Guard>,
}
impl Guarded for S {
    fn guard(&self) -> &Guard {
        &self.guard
    }
}
#[derive(serde::Deserialize, schemars::JsonSchema, ToolArgs)]
struct JobArgs {
    /// The build job.
    job: u32,
}
impl ::rmcp_guard::__private::ToolArgsDerived for JobArgs {
    const CHECKED_NAMES: &'static [&'static str] = &["job"];
    const DEFAULTED: &'static [&'static str] = &[];
    const SKIPPED: &'static [&'static str] = &[];
    const UNHASHED: &'static [&'static str] = &[];
    const FIELDS: &'static [&'static str] = &["job"];
}
impl ::rmcp_guard::ToolArgs for JobArgs {}
impl ::rmcp_guard::__private::ToolArgField for JobArgs {}
const _: () = {
    ::rmcp_guard::__private::assert_tool_arg_field::<u32>();
};
#[tool_router(server_handler)]
impl S {
    /// Show the build log of a job; a grant may cover the next few.
    #[tool(
        annotations(read_only_hint = true, destructive_hint = false),
        description = ::rmcp_guard::__private::disclosed_description(
            &(
                ::rmcp_guard::__private::DisclosureSpec{class:::rmcp_guard::__private::DisclosureClass::Credentials,
                max_items:::core::option::Option::Some(2000u64),
                max_bytes:::core::option::Option::None,
                session_max_items:::core::option::Option::None,
                session_max_bytes:::core::option::Option::None,
                }
            ),
            <[&str]>::join(
                &["Show the build log of a job; a grant may cover the next few."],
                "\n"
            )
        ),
        meta = (
            ::rmcp_guard::__private::DisclosureSpec{class:::rmcp_guard::__private::DisclosureClass::Credentials,
            max_items:::core::option::Option::Some(2000u64),
            max_bytes:::core::option::Option::None,
            session_max_items:::core::option::Option::None,
            session_max_bytes:::core::option::Option::None,
            }
        ).meta(),
        input_schema = ::rmcp_guard::__private::claim_parameters::<::rmcp_guard::__private::rmcp::handler::server::wrapper::Parameters<JobArgs>>(

        )
    )]
    async fn read_build_log(
        &self,
        __guard_call: ::rmcp_guard::__private::GuardCall,
        __guard_p1: ::rmcp_guard::__private::GuardArguments<JobArgs>,
    ) -> ::core::result::Result<
        ::rmcp_guard::__private::rmcp::model::CallToolResponse,
        ::rmcp_guard::__private::rmcp::ErrorData,
    > {
        const __GUARD_SPEC: &::rmcp_guard::__private::ToolSpec = &::rmcp_guard::__private::ToolSpec {
            name: "read_build_log",
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
                calls: 5u32,
            }),
        };
        const __GUARD_DISCLOSES: &::rmcp_guard::__private::DisclosureSpec = &::rmcp_guard::__private::DisclosureSpec {
            class: ::rmcp_guard::__private::DisclosureClass::Credentials,
            max_items: ::core::option::Option::Some(2000u64),
            max_bytes: ::core::option::Option::None,
            session_max_items: ::core::option::Option::None,
            session_max_bytes: ::core::option::Option::None,
        };
        ::rmcp_guard::__private::assert_guarded::<Self>();
        ::rmcp_guard::__private::assert_parameters::<Parameters<JobArgs>, JobArgs>();
        ::rmcp_guard::__private::assert_read_handle::<Parameters<JobArgs>>();
        ::rmcp_guard::__private::assert_disclosed::<
            Result<Disclosed<String>, ToolError>,
        >();
        let __guard_flow = ::rmcp_guard::__private::Flow::<
            ::rmcp_guard::forms::Checkbox,
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
            .bound(
                __GUARD_DISCLOSES,
                __guard_incoming,
                ::rmcp_guard::__private::boundary(
                        Self::log_boundary,
                        self,
                        &__guard_args,
                    )
                    .await,
            )
            .await
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
        let __guard_approved = match __guard_flow
            .rebound(
                __GUARD_DISCLOSES,
                __guard_accepted,
                ::rmcp_guard::__private::boundary(
                        Self::log_boundary,
                        self,
                        &__guard_args,
                    )
                    .await,
            )
            .await
        {
            ::core::result::Result::Ok(approved) => approved,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        let __guard_result = (async move || -> Result<Disclosed<String>, ToolError> {
            let Parameters(args): Parameters<JobArgs> = ::rmcp_guard::__private::rmcp::handler::server::wrapper::Parameters(
                __guard_args,
            );
            let _ = args.job;
            Ok(Disclosed::new(1, String::from("ok")))
        })()
            .await;
        let __guard_after = match __guard_flow.arguments_again() {
            ::core::result::Result::Ok(__guard_again) => {
                ::rmcp_guard::__private::boundary(
                        Self::log_boundary,
                        self,
                        &__guard_again,
                    )
                    .await
            }
            ::core::result::Result::Err(error) => ::core::result::Result::Err(error),
        };
        __guard_flow
            .finish_disclosed(
                __GUARD_DISCLOSES,
                __guard_approved,
                __guard_result,
                __guard_after,
            )
            .await
    }
    /// Show the variables of a job, once two other people approved on the page.
    #[tool(
        annotations(read_only_hint = true, destructive_hint = false),
        description = ::rmcp_guard::__private::disclosed_description(
            &(
                ::rmcp_guard::__private::DisclosureSpec{class:::rmcp_guard::__private::DisclosureClass::Credentials,
                max_items:::core::option::Option::None,
                max_bytes:::core::option::Option::None,
                session_max_items:::core::option::Option::None,
                session_max_bytes:::core::option::Option::None,
                }
            ),
            <[&str]>::join(
                &["Show the variables of a job, once two other people approved on the page."],
                "\n"
            )
        ),
        meta = (
            ::rmcp_guard::__private::DisclosureSpec{class:::rmcp_guard::__private::DisclosureClass::Credentials,
            max_items:::core::option::Option::None,
            max_bytes:::core::option::Option::None,
            session_max_items:::core::option::Option::None,
            session_max_bytes:::core::option::Option::None,
            }
        ).meta(),
        input_schema = ::rmcp_guard::__private::claim_parameters::<::rmcp_guard::__private::rmcp::handler::server::wrapper::Parameters<JobArgs>>(

        )
    )]
    async fn read_variables(
        &self,
        __guard_call: ::rmcp_guard::__private::GuardCall,
        __guard_p1: ::rmcp_guard::__private::GuardArguments<JobArgs>,
    ) -> ::core::result::Result<
        ::rmcp_guard::__private::rmcp::model::CallToolResponse,
        ::rmcp_guard::__private::rmcp::ErrorData,
    > {
        const __GUARD_SPEC: &::rmcp_guard::__private::ToolSpec = &::rmcp_guard::__private::ToolSpec {
            name: "read_variables",
            confirm: ::rmcp_guard::__private::ConfirmKind::Checkbox,
            message: ::core::option::Option::None,
            timeout: ::core::option::Option::None,
            on_decline: ::core::option::Option::None,
            on_cancel: ::core::option::Option::None,
            approval: ::core::option::Option::Some(::rmcp_guard::__private::ApprovalSpec {
                approvers: 2u8,
                secret: ::core::option::Option::None,
            }),
            undo_within: ::core::option::Option::None,
            defer: ::core::option::Option::None,
            grant: ::core::option::Option::None,
        };
        const __GUARD_DISCLOSES: &::rmcp_guard::__private::DisclosureSpec = &::rmcp_guard::__private::DisclosureSpec {
            class: ::rmcp_guard::__private::DisclosureClass::Credentials,
            max_items: ::core::option::Option::None,
            max_bytes: ::core::option::Option::None,
            session_max_items: ::core::option::Option::None,
            session_max_bytes: ::core::option::Option::None,
        };
        ::rmcp_guard::__private::assert_guarded::<Self>();
        ::rmcp_guard::__private::assert_parameters::<Parameters<JobArgs>, JobArgs>();
        ::rmcp_guard::__private::assert_read_handle::<Parameters<JobArgs>>();
        ::rmcp_guard::__private::assert_disclosed::<
            Result<Disclosed<String>, ToolError>,
        >();
        let __guard_flow = ::rmcp_guard::__private::Flow::<
            ::rmcp_guard::forms::Checkbox,
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
            .bound(
                __GUARD_DISCLOSES,
                __guard_incoming,
                ::rmcp_guard::__private::boundary(
                        Self::log_boundary,
                        self,
                        &__guard_args,
                    )
                    .await,
            )
            .await
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
        let __guard_approved = match __guard_flow
            .rebound(
                __GUARD_DISCLOSES,
                __guard_accepted,
                ::rmcp_guard::__private::boundary(
                        Self::log_boundary,
                        self,
                        &__guard_args,
                    )
                    .await,
            )
            .await
        {
            ::core::result::Result::Ok(approved) => approved,
            ::core::result::Result::Err(done) => return ::core::result::Result::Ok(*done),
        };
        let __guard_result = (async move || -> Result<Disclosed<String>, ToolError> {
            let Parameters(args): Parameters<JobArgs> = ::rmcp_guard::__private::rmcp::handler::server::wrapper::Parameters(
                __guard_args,
            );
            let _ = args.job;
            Ok(Disclosed::new(1, String::from("ok")))
        })()
            .await;
        let __guard_after = match __guard_flow.arguments_again() {
            ::core::result::Result::Ok(__guard_again) => {
                ::rmcp_guard::__private::boundary(
                        Self::log_boundary,
                        self,
                        &__guard_again,
                    )
                    .await
            }
            ::core::result::Result::Err(error) => ::core::result::Result::Err(error),
        };
        __guard_flow
            .finish_disclosed(
                __GUARD_DISCLOSES,
                __guard_approved,
                __guard_result,
                __guard_after,
            )
            .await
    }
    async fn log_boundary(&self, args: &JobArgs) -> Result<Boundary, ToolError> {
        Ok(
            Boundary::new(format!("build job {}", args.job), "the full build log")
                .items(3, "log lines")
                .grant_scope("any build log"),
        )
    }
}
fn main() {}
