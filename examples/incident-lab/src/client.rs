//! An in-process rmcp client over `tokio::io::duplex`, and readers for what a result carries.

use rmcp::{
    RoleClient, RoleServer, Service, ServiceExt,
    model::{CallToolRequestParams, CallToolResult, ErrorData},
    service::{RunningService, ServiceError},
};
use rmcp_guard_test::testing::ScriptedHuman;
use serde_json::Value;

/// A client session with a scripted human at the keyboard.
pub type Client = RunningService<RoleClient, ScriptedHuman>;

/// Serves `server` in process and connects `human` to it.
pub async fn connect<S: Service<RoleServer>>(
    server: S,
    human: ScriptedHuman,
) -> Result<Client, String> {
    let (server_io, client_io) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    human
        .connect(client_io)
        .await
        .map_err(|e| format!("the client failed to connect: {e}"))
}

/// What a `tools/call` came back with: a result, or a JSON-RPC error.
pub type Reply = Result<CallToolResult, ErrorData>;

/// Calls `tool` with `args` (a JSON object), driving any MRTR rounds through the human.
pub async fn call(client: &Client, tool: &str, args: Value) -> Result<Reply, String> {
    let Value::Object(arguments) = args else {
        return Err(format!("arguments of {tool} must be a JSON object"));
    };
    match client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
        .await
    {
        Ok(result) => Ok(Ok(result)),
        Err(ServiceError::McpError(error)) => Ok(Err(error)),
        Err(other) => Err(format!("{tool}: the call failed in transport: {other}")),
    }
}

/// The names `tools/list` returns, sorted.
pub async fn tool_names(client: &Client) -> Result<Vec<String>, String> {
    let mut names: Vec<String> = client
        .list_all_tools()
        .await
        .map_err(|e| format!("tools/list failed: {e}"))?
        .into_iter()
        .map(|t| t.name.into_owned())
        .collect();
    names.sort();
    Ok(names)
}

/// The text blocks of a result, joined.
pub fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

pub fn is_error(result: &CallToolResult) -> bool {
    result.is_error == Some(true)
}

/// The stable code an `isError` text starts with (`[READ_ONLY] ...`).
pub fn code(result: &CallToolResult) -> Option<String> {
    let text = text(result);
    let rest = text.strip_prefix('[')?;
    rest.split_once(']').map(|(code, _)| code.to_owned())
}

/// One line for the transcript: what the model got back.
pub fn describe(reply: &Reply) -> String {
    match reply {
        Ok(result) if is_error(result) => format!("isError {}", text(result)),
        Ok(result) => text(result).replace('\n', " · "),
        Err(error) => format!(
            "JSON-RPC error {} {:?}{}",
            error.code.0,
            error.message,
            error
                .data
                .as_ref()
                .map(|d| format!(" data={d}"))
                .unwrap_or_default()
        ),
    }
}
