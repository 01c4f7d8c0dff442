//! What the suite checks beyond tools, served with plain rmcp so that it runs whole: prompts,
//! resources and their subscriptions, logging levels and completion. guard adds nothing here.

use std::{collections::BTreeSet, sync::Mutex};

use rmcp::{
    ErrorData,
    model::{
        CompleteRequestParams, CompleteResult, CompletionInfo, ContentBlock,
        GetPromptRequestParams, GetPromptResult, ListPromptsResult, ListResourceTemplatesResult,
        ListResourcesResult, Prompt, PromptArgument, PromptMessage, ReadResourceRequestParams,
        ReadResourceResult, Resource, ResourceContents, ResourceTemplate, Role,
    },
};
use serde_json::json;

use crate::tools::PNG;

/// The resource URIs a client subscribed to.
#[derive(Default)]
pub struct Subscriptions(Mutex<BTreeSet<String>>);

impl Subscriptions {
    pub fn subscribe(&self, uri: String) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).insert(uri);
    }

    pub fn unsubscribe(&self, uri: &str) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).remove(uri);
    }
}

pub fn prompts() -> ListPromptsResult {
    let required = |name: &str, description: &str| {
        PromptArgument::new(name)
            .with_description(description)
            .with_required(true)
    };
    ListPromptsResult::with_all_items(vec![
        Prompt::new(
            "test_simple_prompt",
            Some("A simple prompt without arguments"),
            None,
        ),
        Prompt::new(
            "test_prompt_with_arguments",
            Some("A prompt with two required arguments"),
            Some(vec![
                required("arg1", "First test argument"),
                required("arg2", "Second test argument"),
            ]),
        ),
        Prompt::new(
            "test_prompt_with_embedded_resource",
            Some("A prompt that embeds a resource"),
            Some(vec![required(
                "resourceUri",
                "URI of the resource to embed",
            )]),
        ),
        Prompt::new(
            "test_prompt_with_image",
            Some("A prompt with an image"),
            None,
        ),
    ])
}

pub fn prompt(request: GetPromptRequestParams) -> Result<GetPromptResult, ErrorData> {
    let argument = |name: &str| {
        request
            .arguments
            .as_ref()
            .and_then(|a| a.get(name))
            .and_then(|v| v.as_str())
            .map(str::to_owned)
            .ok_or_else(|| {
                ErrorData::invalid_params(
                    format!("the prompt needs the argument `{name}`; pass it in `arguments`"),
                    None,
                )
            })
    };
    let messages = match request.name.as_str() {
        "test_simple_prompt" => vec![PromptMessage::new_text(
            Role::User,
            "This is a simple prompt for testing.",
        )],
        "test_prompt_with_arguments" => vec![PromptMessage::new_text(
            Role::User,
            format!(
                "Prompt with arguments: arg1='{}', arg2='{}'",
                argument("arg1")?,
                argument("arg2")?
            ),
        )],
        "test_prompt_with_embedded_resource" => vec![
            PromptMessage::new_resource(
                Role::User,
                argument("resourceUri")?,
                Some("text/plain".into()),
                Some("Embedded resource content for testing.".into()),
                None,
                None,
                None,
            ),
            PromptMessage::new_text(Role::User, "Please process the embedded resource above."),
        ],
        "test_prompt_with_image" => vec![
            PromptMessage::new(Role::User, ContentBlock::image(PNG, "image/png")),
            PromptMessage::new_text(Role::User, "Please analyze the image above."),
        ],
        other => {
            return Err(ErrorData::invalid_params(
                format!("no prompt is named `{other}`; prompts/list names them"),
                None,
            ));
        }
    };
    Ok(GetPromptResult::new(messages))
}

pub fn resources() -> ListResourcesResult {
    let resource = |uri: &str, name: &str, description: &str, mime: &str| {
        Resource::new(uri, name)
            .with_description(description)
            .with_mime_type(mime)
    };
    ListResourcesResult::with_all_items(vec![
        resource(
            "test://static-text",
            "static-text",
            "A static text resource",
            "text/plain",
        ),
        resource(
            "test://static-binary",
            "static-binary",
            "A static PNG image",
            "image/png",
        ),
        resource(
            "test://watched-resource",
            "watched-resource",
            "A resource clients may subscribe to",
            "text/plain",
        ),
    ])
}

pub fn templates() -> ListResourceTemplatesResult {
    ListResourceTemplatesResult::with_all_items(vec![
        ResourceTemplate::new("test://template/{id}/data", "template-data")
            .with_description("Data for the id in the URI")
            .with_mime_type("application/json"),
    ])
}

pub fn read(request: ReadResourceRequestParams) -> Result<ReadResourceResult, ErrorData> {
    let uri = request.uri.as_str();
    let contents = match uri {
        "test://static-text" => {
            ResourceContents::text("This is the content of the static text resource.", uri)
                .with_mime_type("text/plain")
        }
        "test://static-binary" => ResourceContents::blob(PNG, uri).with_mime_type("image/png"),
        "test://watched-resource" => {
            ResourceContents::text("Watched resource content.", uri).with_mime_type("text/plain")
        }
        _ => match uri
            .strip_prefix("test://template/")
            .and_then(|rest| rest.strip_suffix("/data"))
        {
            Some(id) if !id.is_empty() && !id.contains('/') => ResourceContents::text(
                json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")})
                    .to_string(),
                uri,
            )
            .with_mime_type("application/json"),
            _ => {
                return Err(ErrorData::resource_not_found(
                    format!(
                        "no resource at `{uri}`; resources/list and resources/templates/list name them"
                    ),
                    None,
                ));
            }
        },
    };
    Ok(ReadResourceResult::new(vec![contents]))
}

pub fn complete(request: CompleteRequestParams) -> CompleteResult {
    let typed = request.argument.value.to_lowercase();
    let values: Vec<String> = ["paris", "park", "party"]
        .into_iter()
        .filter(|v| v.starts_with(&typed))
        .map(str::to_owned)
        .collect();
    let total = values.len() as u32;
    let mut info = CompletionInfo::default();
    info.values = values;
    info.total = Some(total);
    info.has_more = Some(false);
    CompleteResult::new(info)
}
