// guard's expansions name everything by absolute path: they compile in a module without the
// prelude, in a crate that forbids unsafe code.

#![forbid(unsafe_code)]

mod server {
    #![no_implicit_prelude]

    // rmcp's `#[tool_router]`/`#[tool]` expansions name these without a path, and schemars'
    // derive names `schemars`; guard's own expansions need none of them.
    use ::rmcp;
    use ::schemars;
    use ::std;
    use ::std::boxed::Box;
    use ::std::convert::Into;
    use ::std::marker::Send;
    use ::std::option::Option::{self, None, Some};
    use ::std::result::Result::Ok;

    use ::rmcp_guard::forms::Checkbox;
    use ::rmcp_guard::{
        Answered, Confirmed, Form, FormEnum, Guard, Guarded, Preview, ToolArgs, ToolError, ask,
        destructive, read_only,
    };
    use ::rmcp::{handler::server::wrapper::Parameters, tool, tool_router};
    use ::rmcp_guard::batch::{Batch, Item, Picked, Report};
    use ::schemars::JsonSchema;
    use ::serde::Deserialize;
    use ::std::result::Result;
    use ::std::string::String;
    use ::std::sync::Arc;

    #[derive(Clone)]
    pub struct S {
        pub guard: Arc<Guard>,
    }

    impl Guarded for S {
        fn guard(&self) -> &Guard {
            &self.guard
        }
    }

    #[derive(Deserialize, JsonSchema, ToolArgs)]
    pub struct DeployArgs {
        pub service: String,
    }

    #[derive(Debug, Clone, Copy, PartialEq, Eq, FormEnum)]
    pub enum Level {
        #[form(title = "Standard")]
        Standard,
        Urgent,
    }

    #[derive(Debug, Form)]
    pub struct DeployConfig {
        #[form(checkbox)]
        pub confirm: bool,
        #[form(default = "standard")]
        pub level: Level,
        #[form(min_length = 1, max_length = 200, format = "email")]
        pub contact: ::std::option::Option<String>,
        #[form(minimum = 1, maximum = 10, default = 1)]
        pub replicas: u8,
        #[form(minimum = 0.5, default = 1.0)]
        pub ratio: f64,
    }

    #[derive(Debug, Form)]
    pub struct LevelPick {
        pub levels: ::std::vec::Vec<Level>,
        #[form(enum_names)]
        pub main: Option<Level>,
    }

    fn some_levels(form: &LevelPick) -> Result<(), String> {
        if form.levels.is_empty() {
            return Result::Err(::std::string::ToString::to_string("pick one"));
        }
        Result::Ok(())
    }

    fn rules(form: &DeployConfig) -> Result<(), String> {
        if form.level == Level::Urgent && form.contact.is_none() {
            return Result::Err(::std::string::ToString::to_string("urgent needs a contact"));
        }
        Result::Ok(())
    }

    impl S {
        async fn preview_deploy(&self, args: &DeployArgs) -> Result<Preview, ToolError> {
            Result::Ok(Preview::effect(
                ::std::clone::Clone::clone(&args.service),
                "Deploy",
            ))
        }

        fn which_levels(&self, args: &DeployArgs) -> String {
            ::std::format!("Levels for {}?", args.service)
        }

        async fn preview_purge(&self) -> Result<Preview, ToolError> {
            Result::Ok(Preview::effect("cache", "Purge"))
        }

        async fn preview_evict(&self) -> Result<Batch, ToolError> {
            Result::Ok(Batch::new("every entry", "Evict").item(Item::new("k", "Key k")))
        }
    }

    #[tool_router(server_handler, vis = "pub")]
    impl S {
        /// Deploy a service.
        #[destructive(
            confirm = "checkbox",
            form = DeployConfig,
            preview = Self::preview_deploy,
            validate = rules,
            message = "Deploy?",
            timeout = "5m",
            on_decline = "Not deployed.",
            on_cancel = "Cancelled.",
            idempotent
        )]
        #[tool]
        async fn deploy(
            &self,
            Parameters(args): Parameters<DeployArgs>,
            confirmed: Confirmed<DeployConfig>,
        ) -> Result<String, ToolError> {
            let _ = confirmed.level;
            Result::Ok(args.service)
        }

        /// Purge the cache.
        #[destructive(confirm = "checkbox", preview = Self::preview_purge)]
        #[tool]
        async fn purge(&self, confirmed: Confirmed<Checkbox>) -> Result<String, ToolError> {
            let _ = confirmed;
            Result::Ok(::std::string::ToString::to_string("purged"))
        }

        /// Evict picked entries.
        #[destructive(batch, max_items = 10, preview = Self::preview_evict)]
        #[tool]
        async fn evict(&self, picked: Picked) -> Report {
            picked
                .act(|item| async move {
                    Result::Ok(::std::string::ToString::to_string(item.key()))
                })
                .await
        }

        /// Ask which levels apply.
        #[ask(question = Self::which_levels, message = "Levels", validate = some_levels)]
        #[tool]
        async fn pick_levels(
            &self,
            Parameters(args): Parameters<DeployArgs>,
            answered: Answered<LevelPick>,
        ) -> Result<String, ToolError> {
            let _ = answered.levels.len();
            Result::Ok(args.service)
        }

        /// Count things.
        #[read_only]
        #[tool]
        async fn count(&self) -> String {
            ::std::string::ToString::to_string("3")
        }
    }
}

fn main() {
    let server = server::S {
        guard: std::sync::Arc::new(rmcp_guard::Guard::ephemeral().unwrap()),
    };
    let _ = server.guard.clone();
    let router = server::S::tool_router();
    let mut names: Vec<_> = router.list_all().into_iter().map(|t| t.name).collect();
    names.sort();
    assert_eq!(names, ["count", "deploy", "evict", "pick_levels", "purge"]);
}
