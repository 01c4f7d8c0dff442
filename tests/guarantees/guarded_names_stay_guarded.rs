//! A guarded tool's name is served by the guarded tool or by nothing. rmcp's router keeps
//! one route per name, and adding routers (`+`, `merge`) replaces an earlier route of the
//! same name without a word: a plain `#[tool(name = "delete_file")]` in a second
//! `#[tool_router]` would publish an unguarded, unannotated `delete_file`. guard's exposure
//! refuses such a router when it is built, publishes no tool at all, and says which name to
//! rename. (In one `#[operations]` impl the macro refuses it at compile time:
//! `tests/ui/operations/fail/plain_tool_takes_a_guarded_name.rs`.)

use std::sync::{Arc, Mutex};

use crate::support::{self, *};
use rmcp::{
    ServerHandler,
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::{ServerCapabilities, ServerConfig},
    tool, tool_handler,
};
use rmcp_guard::tool_router;
use rmcp_guard::{
    Confirmed, Exposure, Guard, Guarded, Preview, ToolArgs, ToolError, destructive, exposed,
    forms::Checkbox, outcome::Outcome, read_only,
};
use rmcp_guard_test::testing::{Answer, ScriptedHuman};
use serde_json::json;

/// How the server's two routers are combined.
#[derive(Clone, Copy)]
enum Order {
    /// `guarded + plain`: the plain route is added last and replaces the guarded one.
    PlainLast,
    /// `plain + guarded`: the guarded route is added last.
    GuardedLast,
    /// The guarded router alone.
    GuardedOnly,
    /// A guarded tool in a router rmcp's own `#[tool_router]` built, beside the guarded one.
    RmcpRouter,
}

#[derive(Clone)]
struct Files {
    guard: Arc<Guard>,
    order: Order,
    /// The paths the unguarded handler deleted.
    deleted_unasked: Arc<Mutex<Vec<String>>>,
}

impl Guarded for Files {
    fn guard(&self) -> &Guard {
        &self.guard
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema, ToolArgs)]
struct PathArgs {
    /// The file to delete.
    path: String,
}

#[tool_router(router = guarded_tools)]
impl Files {
    /// Delete a file, after the user ticks a box.
    #[destructive(confirm = "checkbox", preview = Self::preview_delete)]
    #[tool]
    async fn delete_file(
        &self,
        Parameters(args): Parameters<PathArgs>,
        _confirmed: Confirmed<Checkbox>,
    ) -> Result<String, ToolError> {
        Ok(format!("Deleted {}.", args.path))
    }

    /// List the files.
    #[read_only]
    #[tool]
    async fn list_files(&self) -> Result<String, ToolError> {
        Ok("old.log".into())
    }

    async fn preview_delete(&self, args: &PathArgs) -> Result<Preview, ToolError> {
        Ok(Preview::effect(&args.path, format!("Delete {}", args.path)))
    }
}

#[rmcp::tool_router(router = plain_tools)]
impl Files {
    /// Delete a file at once.
    #[tool(name = "delete_file")]
    async fn delete_now(&self, Parameters(args): Parameters<PathArgs>) -> String {
        self.deleted_unasked.lock().unwrap().push(args.path.clone());
        format!("Deleted {} without asking.", args.path)
    }
}

#[rmcp::tool_router(router = rmcp_tools)]
impl Files {
    /// Wipe a file, after the user ticks a box.
    #[destructive(confirm = "checkbox", preview = Self::preview_delete)]
    #[tool]
    async fn wipe_file(
        &self,
        Parameters(args): Parameters<PathArgs>,
        _confirmed: Confirmed<Checkbox>,
    ) -> Result<String, ToolError> {
        Ok(format!("Wiped {}.", args.path))
    }
}

impl Files {
    fn new(order: Order) -> Self {
        let guard = Guard::ephemeral()
            .expect("guard")
            .with_exposure(Exposure::all_tools());
        Self {
            guard: Arc::new(guard),
            order,
            deleted_unasked: Arc::default(),
        }
    }

    fn routes(&self) -> impl FnOnce() -> ToolRouter<Self> + 'static {
        let order = self.order;
        move || match order {
            Order::PlainLast => Self::guarded_tools() + Self::plain_tools(),
            Order::GuardedLast => Self::plain_tools() + Self::guarded_tools(),
            Order::GuardedOnly => Self::guarded_tools(),
            Order::RmcpRouter => Self::guarded_tools() + Self::rmcp_tools(),
        }
    }
}

#[tool_handler(router = exposed(self, self.routes()))]
impl ServerHandler for Files {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

/// The `error` events of this thread, as text.
#[derive(Clone, Default)]
struct Errors(Arc<Mutex<Vec<String>>>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Errors {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        struct Message<'a>(&'a mut String);
        impl tracing::field::Visit for Message<'_> {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    *self.0 = format!("{value:?}");
                }
            }
        }
        if *event.metadata().level() == tracing::Level::ERROR {
            let mut text = String::new();
            event.record(&mut Message(&mut text));
            self.0.lock().unwrap().push(text);
        }
    }
}

#[tokio::test]
async fn a_plain_tool_that_takes_a_guarded_name_publishes_nothing() {
    let errors = Errors::default();
    let _capture = support::events::capture(errors.clone());
    let server = Files::new(Order::PlainLast);
    let client = connect(server.clone(), ScriptedHuman::new(PUSH)).await;

    assert_eq!(
        tool_names(&client).await,
        Vec::<String>::new(),
        "no tool is published, the read-only one included"
    );
    let refused = call_error(&client, "delete_file", json!({"path": "old.log"})).await;
    let unknown = call_error(&client, "no_such_tool", json!({})).await;
    assert_eq!(
        refused.code, unknown.code,
        "answered as a name it never had"
    );
    assert!(
        server.deleted_unasked.lock().unwrap().is_empty(),
        "the unguarded handler never ran"
    );

    let errors = errors.0.lock().unwrap().clone();
    let refusals: Vec<&String> = errors
        .iter()
        .filter(|e| e.contains("no tool is enabled"))
        .collect();
    assert_eq!(refusals.len(), 1, "said once, not per request: {errors:?}");
    assert!(refusals[0].contains("delete_file"), "{}", refusals[0]);
    assert!(
        refusals[0].contains("rename one of them"),
        "{}",
        refusals[0]
    );
    let _ = client.cancel().await;
}

#[tokio::test]
async fn a_guarded_route_added_last_still_asks_first() {
    let server = Files::new(Order::GuardedLast);
    let human = ScriptedHuman::new(PUSH);
    human.will(Answer::Decline);
    let client = connect(server.clone(), human.clone()).await;
    assert_eq!(tool_names(&client).await, ["delete_file", "list_files"]);
    let result = call(&client, "delete_file", json!({"path": "old.log"})).await;
    assert_natural(&result, Outcome::Declined);
    assert_eq!(human.shown().len(), 1, "the human was asked");
    assert!(server.deleted_unasked.lock().unwrap().is_empty());
    let _ = client.cancel().await;
}

#[tokio::test]
async fn a_guarded_router_alone_publishes_its_tools() {
    let server = Files::new(Order::GuardedOnly);
    let human = ScriptedHuman::new(MRTR);
    human.will(Answer::Accept(json!({"confirm": true})));
    let client = connect(server.clone(), human).await;
    assert_eq!(tool_names(&client).await, ["delete_file", "list_files"]);
    let result = call(&client, "delete_file", json!({"path": "old.log"})).await;
    assert_natural(&result, Outcome::Executed);
    let _ = client.cancel().await;
}

#[tokio::test]
async fn a_guarded_tool_in_rmcps_own_router_publishes_nothing() {
    let errors = Errors::default();
    let _capture = support::events::capture(errors.clone());
    let server = Files::new(Order::RmcpRouter);
    let client = connect(server.clone(), ScriptedHuman::new(PUSH)).await;
    assert_eq!(
        tool_names(&client).await,
        Vec::<String>::new(),
        "no tool is published, the claimed ones included"
    );
    let errors = errors.0.lock().unwrap().clone();
    let refusals: Vec<&String> = errors
        .iter()
        .filter(|e| e.contains("no tool is enabled"))
        .collect();
    assert_eq!(refusals.len(), 1, "said once, not per request: {errors:?}");
    assert!(refusals[0].contains("wipe_file"), "{}", refusals[0]);
    assert!(
        refusals[0].contains("rmcp_guard::tool_router"),
        "{}",
        refusals[0]
    );
    let _ = client.cancel().await;
}
