//! The server the official MCP conformance suite (`@modelcontextprotocol/conformance`) runs
//! against: `conformance --port 3000` serves streamable HTTP at `http://127.0.0.1:3000/mcp`
//! (or `CONFORMANCE_PORT`). Its tools and elicitation scenarios go through guard's code: the
//! content tools are `#[read_only]`, the elicitation tools `#[ask]` with guard forms, so the
//! suite checks guard's `requestedSchema`s and results. Prompts, resources, logging levels
//! and completion are plain rmcp, so the whole suite runs.
// The suite still checks logging and sampling, which rmcp marks deprecated (SEP-2577).
#![allow(deprecated)]

mod extras;
mod forms;
mod tools;

use std::net::{Ipv4Addr, SocketAddr};

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResponse,
        ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
        PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
        ServerCapabilities, ServerConfig, SetLevelRequestParams, SubscribeRequestParams,
        UnsubscribeRequestParams,
    },
    service::RequestContext,
    tool_handler,
    transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    },
};
use rmcp_guard::{Exposure, Guard, exposed};

use crate::tools::Conformance;

#[tool_handler(router = exposed(self, Self::tool_router))]
impl ServerHandler for Conformance {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_prompts()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_logging()
                .enable_completions()
                .build(),
        )
    }

    async fn list_prompts(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(extras::prompts())
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        extras::prompt(request).map(Into::into)
    }

    async fn list_resources(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(extras::resources())
    }

    async fn list_resource_templates(
        &self,
        _: Option<PaginatedRequestParams>,
        _: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(extras::templates())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        extras::read(request).map(Into::into)
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions.subscribe(request.uri);
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions.unsubscribe(&request.uri);
        Ok(())
    }

    async fn set_level(
        &self,
        _: SetLevelRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Ok(())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        Ok(extras::complete(request))
    }
}

/// The port from `--port N`, else `CONFORMANCE_PORT`, else 3000.
fn port() -> Result<u16, String> {
    let mut args = std::env::args().skip(1);
    let given = match (args.next().as_deref(), args.next()) {
        (Some("--port"), Some(port)) => Some(port),
        (None, _) => std::env::var("CONFORMANCE_PORT").ok(),
        _ => return Err("usage: conformance [--port N] (or set CONFORMANCE_PORT)".into()),
    };
    match given {
        None => Ok(3000),
        Some(port) => port
            .parse()
            .map_err(|_| format!("`{port}` is not a port number; pass --port 3000")),
    }
}

#[tokio::main]
async fn main() -> Result<(), String> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port()?));
    // Every tool is guarded (`#[read_only]` or `#[ask]`), so all of them are published.
    let guard = Guard::ephemeral()
        .map_err(|e| format!("cannot configure guard: {e}"))?
        .with_exposure(Exposure::all_tools());
    let server = Conformance::new(guard);
    // Host and Origin must be local: the suite's DNS-rebinding scenario checks it.
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(["localhost", "127.0.0.1", "::1"])
        .with_allowed_origins(["http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*"]);
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        LocalSessionManager::default().into(),
        config,
    );
    let app = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}; pass another --port"))?;
    println!("conformance: serving streamable HTTP at http://{addr}/mcp");
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
        .map_err(|e| format!("HTTP server failed: {e}"))
}
