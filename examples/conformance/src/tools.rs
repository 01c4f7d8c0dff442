//! The suite's test tools. Each is a guarded tool: the ones that only return content are
//! `#[read_only]`, the ones that collect input from the human are `#[ask]` with a guard form.

use std::{sync::Arc, time::Duration};

use rmcp::{
    RoleServer,
    handler::server::wrapper::Parameters,
    model::{
        CallToolResult, ContentBlock, CreateMessageRequestParams, LoggingLevel,
        LoggingMessageNotificationParam, ProgressNotificationParam, ResourceContents,
        SamplingMessage,
    },
    service::RequestContext,
    tool,
};
use rmcp_guard::tool_router;
use rmcp_guard::{Answered, Guard, Guarded, ToolArgs, ToolError, ask, read_only};
use serde_json::json;

use crate::{
    extras::Subscriptions,
    forms::{Contact, Defaults, Enums},
};

/// A 1x1 PNG.
pub const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A WAV of one silent sample.
const WAV: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQEAAACAAA==";
/// How long the logging and progress tools wait between their notifications.
const STEP: Duration = Duration::from_millis(50);

#[derive(Clone)]
pub struct Conformance {
    guard: Arc<Guard>,
    /// The resources clients subscribed to (plain rmcp, see `extras`).
    pub subscriptions: Arc<Subscriptions>,
}

impl Conformance {
    pub fn new(guard: Guard) -> Self {
        Self {
            guard: Arc::new(guard),
            subscriptions: Arc::default(),
        }
    }
}

impl Guarded for Conformance {
    fn guard(&self) -> &Guard {
        &self.guard
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema, ToolArgs)]
pub struct MessageArgs {
    /// The message to show the user
    message: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema, ToolArgs)]
pub struct PromptArgs {
    /// The prompt to send to the LLM
    prompt: String,
}

/// `json-schema-2020-12`: the input schema keeps `$schema`, `$defs` and
/// `additionalProperties: false` as schemars writes them.
#[derive(serde::Deserialize, schemars::JsonSchema, ToolArgs)]
#[serde(deny_unknown_fields)]
pub struct Person {
    name: Option<String>,
    address: Option<Address>,
}

#[derive(serde::Deserialize, schemars::JsonSchema, ToolArgs)]
#[schemars(rename = "address")]
pub struct Address {
    street: Option<String>,
    city: Option<String>,
}

fn text(text: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text)])
}

#[tool_router(vis = "pub")]
impl Conformance {
    /// Returns a simple text response.
    #[read_only]
    #[tool]
    async fn test_simple_text(&self) -> Result<CallToolResult, ToolError> {
        Ok(text("This is a simple text response for testing."))
    }

    /// Returns a PNG image.
    #[read_only]
    #[tool]
    async fn test_image_content(&self) -> Result<CallToolResult, ToolError> {
        Ok(CallToolResult::success(vec![ContentBlock::image(
            PNG,
            "image/png",
        )]))
    }

    /// Returns a WAV recording.
    #[read_only]
    #[tool]
    async fn test_audio_content(&self) -> Result<CallToolResult, ToolError> {
        Ok(CallToolResult::success(vec![ContentBlock::audio(
            WAV,
            "audio/wav",
        )]))
    }

    /// Returns an embedded text resource.
    #[read_only]
    #[tool]
    async fn test_embedded_resource(&self) -> Result<CallToolResult, ToolError> {
        Ok(CallToolResult::success(vec![ContentBlock::embedded_text(
            "test://embedded-resource",
            "This is an embedded resource content.",
        )]))
    }

    /// Returns text, an image and an embedded resource.
    #[read_only]
    #[tool]
    async fn test_multiple_content_types(&self) -> Result<CallToolResult, ToolError> {
        let resource = ResourceContents::text(
            json!({"test": "data", "value": 123}).to_string(),
            "test://mixed-content-resource",
        )
        .with_mime_type("application/json");
        Ok(CallToolResult::success(vec![
            ContentBlock::text("Multiple content types test:"),
            ContentBlock::image(PNG, "image/png"),
            ContentBlock::resource(resource),
        ]))
    }

    /// Sends three log messages while it runs.
    #[read_only]
    #[tool]
    async fn test_tool_with_logging(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ToolError> {
        let messages = [
            "Tool execution started",
            "Tool processing data",
            "Tool execution completed",
        ];
        for (i, message) in messages.into_iter().enumerate() {
            if i > 0 {
                tokio::time::sleep(STEP).await;
            }
            let note = LoggingMessageNotificationParam::new(LoggingLevel::Info, json!(message))
                .with_logger("conformance");
            if let Err(error) = context.peer.notify_logging_message(note).await {
                return Err(ToolError::internal(format!(
                    "could not send a log message: {error}"
                )));
            }
        }
        Ok(text("Tool with logging executed successfully"))
    }

    /// Always fails, with an error result.
    #[read_only]
    #[tool]
    async fn test_error_handling(&self) -> Result<CallToolResult, ToolError> {
        Ok(CallToolResult::error(vec![ContentBlock::text(
            "This tool intentionally returns an error for testing",
        )]))
    }

    /// Reports progress 0, 50 and 100 of 100 when the call carries a progress token.
    #[read_only]
    #[tool]
    async fn test_tool_with_progress(
        &self,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ToolError> {
        let token = context.meta.get_progress_token();
        for (i, progress) in [0.0, 50.0, 100.0].into_iter().enumerate() {
            if i > 0 {
                tokio::time::sleep(STEP).await;
            }
            if let Some(token) = &token {
                let note =
                    ProgressNotificationParam::new(token.clone(), progress).with_total(100.0);
                if let Err(error) = context.peer.notify_progress(note).await {
                    return Err(ToolError::internal(format!(
                        "could not send progress: {error}"
                    )));
                }
            }
        }
        Ok(text("Tool with progress executed successfully"))
    }

    /// Asks the client's model to answer the prompt.
    #[read_only]
    #[tool]
    async fn test_sampling(
        &self,
        Parameters(args): Parameters<PromptArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ToolError> {
        let request =
            CreateMessageRequestParams::new(vec![SamplingMessage::user_text(args.prompt)], 100);
        let answer = context
            .peer
            .create_message(request)
            .await
            .map_err(|e| ToolError::internal(format!("the client could not sample: {e}")))?;
        let reply = answer
            .message
            .content
            .first()
            .and_then(|c| c.as_text())
            .map(|t| t.text.clone())
            .unwrap_or_default();
        Ok(text(format!("LLM response: {reply}")))
    }

    /// Asks the user for a name and an email address.
    #[ask(question = Self::message_of)]
    #[tool]
    async fn test_elicitation(
        &self,
        Parameters(_args): Parameters<MessageArgs>,
        answered: Answered<Contact>,
    ) -> Result<CallToolResult, ToolError> {
        let content = json!({"username": answered.username, "email": answered.email});
        Ok(text(format!(
            "User response: <action: accept, content: {content}>"
        )))
    }

    fn message_of(&self, args: &MessageArgs) -> String {
        args.message.clone()
    }

    /// Asks the user with a default on every field.
    #[ask(message = "Test client default value handling - please accept with defaults")]
    #[tool]
    async fn test_elicitation_sep1034_defaults(
        &self,
        answered: Answered<Defaults>,
    ) -> Result<CallToolResult, ToolError> {
        let content = rmcp_guard::Form::to_content(answered.form());
        Ok(text(format!(
            "Elicitation completed: action=accept, content={}",
            serde_json::Value::Object(content)
        )))
    }

    /// Asks the user to pick from every spelling of a choice.
    #[ask(message = "Test enum schema improvements - please pick an option in each field")]
    #[tool]
    async fn test_elicitation_sep1330_enums(
        &self,
        answered: Answered<Enums>,
    ) -> Result<CallToolResult, ToolError> {
        let content = rmcp_guard::Form::to_content(answered.form());
        Ok(text(format!(
            "Elicitation completed: action=accept, content={}",
            serde_json::Value::Object(content)
        )))
    }

    /// Tool with JSON Schema 2020-12 features
    #[read_only]
    #[tool]
    async fn json_schema_2020_12_tool(
        &self,
        Parameters(person): Parameters<Person>,
    ) -> Result<CallToolResult, ToolError> {
        let city = person.address.and_then(|a| a.city.or(a.street));
        Ok(text(format!(
            "Received {} from {}",
            person.name.as_deref().unwrap_or("nobody"),
            city.as_deref().unwrap_or("nowhere")
        )))
    }

    /// Answers after a pause, for the suite's stream-reconnection checks.
    #[read_only]
    #[tool]
    async fn test_reconnection(&self) -> Result<CallToolResult, ToolError> {
        tokio::time::sleep(STEP).await;
        Ok(text("Reconnection test completed successfully"))
    }
}
