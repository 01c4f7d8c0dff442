//! A shelf with two tools that offer short grants (`grant = "2s", grant_calls = 2`) over one
//! stated scope, on any operation store: for the grants' tests on both eras and both engines.

use std::sync::{Arc, Mutex};

use rmcp::{
    ServerHandler,
    handler::server::wrapper::Parameters,
    model::{ServerCapabilities, ServerConfig},
    tool, tool_handler,
};
use rmcp_guard::tool_router;
use rmcp_guard::{
    Confirmed, Exposure, Guard, Guarded, Preview, ToolArgs, ToolError, destructive, exposed,
    forms::Checkbox,
    ops::{OperationStore, Operations},
};

#[derive(Clone)]
pub struct Shelf {
    guard: Arc<Guard>,
    books: Arc<Mutex<Vec<String>>>,
}

impl Guarded for Shelf {
    fn guard(&self) -> &Guard {
        &self.guard
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema, ToolArgs)]
pub struct BookArgs {
    /// The book's title.
    title: String,
}

#[tool_router]
impl Shelf {
    /// Remove a book from the shelf.
    #[destructive(confirm = "checkbox", preview = Self::preview, grant = "2s", grant_calls = 2)]
    #[tool]
    async fn remove_book(
        &self,
        Parameters(args): Parameters<BookArgs>,
        _confirmed: Confirmed<Checkbox>,
    ) -> Result<String, ToolError> {
        self.books.lock().unwrap().retain(|b| *b != args.title);
        Ok(format!("removed {}", args.title))
    }

    /// Lend a book out.
    #[destructive(confirm = "checkbox", preview = Self::preview, grant = "2s", grant_calls = 2)]
    #[tool]
    async fn lend_book(
        &self,
        Parameters(args): Parameters<BookArgs>,
        _confirmed: Confirmed<Checkbox>,
    ) -> Result<String, ToolError> {
        Ok(format!("lent {}", args.title))
    }

    async fn preview(&self, args: &BookArgs) -> Result<Preview, ToolError> {
        Ok(Preview::effect(
            args.title.clone(),
            format!("Take {} off the shelf.", args.title),
        )
        .scope("books on the shelf"))
    }
}

#[tool_handler(router = exposed(self, Self::tool_router))]
impl ServerHandler for Shelf {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

/// A shelf whose grants live in `store`, called by `user` of tenant `local`: each call makes
/// a fresh guard, as another replica of the server would.
pub fn shelf(store: Arc<dyn OperationStore>, user: &str) -> Shelf {
    Shelf {
        guard: Arc::new(
            Guard::ephemeral()
                .expect("guard key")
                .with_operations(Operations::new(store, super::local_identity(user)))
                .with_exposure(Exposure::all_tools()),
        ),
        books: Arc::new(Mutex::new(vec!["a".into(), "b".into(), "c".into()])),
    }
}
