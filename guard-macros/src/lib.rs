//! Macros for guard. They parse, check and expand; the behaviour lives in `rmcp_guard`,
//! which re-exports everything here. Depend on `rmcp-guard`, not on this crate.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]

mod ask;
mod attr;
mod ctxt;
mod destructive;
mod disclose;
mod form;
mod form_enum;
mod grant;
mod handler;
mod keyed;
mod krate;
mod names;
mod operations;
mod read_handle;
mod read_only;
mod stand_in;
mod tool_args;
mod tool_attr;
mod ty;

#[cfg(test)]
mod snapshots;

use proc_macro::TokenStream;
use syn::{DeriveInput, ImplItemFn, ItemImpl, parse_macro_input};

/// Guards a destructive rmcp tool method. Put it directly above `#[tool]`.
///
/// Options: `confirm = "checkbox" | "type_to_confirm"`, `form = Type`, `target = field`,
/// `preview = path` (required), `validate = path`, `message = "..."`, `timeout = "5m"`,
/// `on_decline = "..."`, `on_cancel = "..."`, `idempotent`, `approve = "url"`,
/// `approvers = N`, `secret = "..."`, `batch`, `max_items = N`, `crate = "path"` (where
/// rmcp_guard is when the crate reaches it through a re-export; a renamed dependency is
/// found in the crate's Cargo.toml).
///
/// With `batch`, the preview returns a `rmcp_guard::batch::Batch`, the human picks items
/// from a multi-select of at most `max_items` (default 20, at most 100), and the handler
/// takes the `rmcp_guard::batch::Picked` proof instead of `Confirmed` and returns the
/// `Report` that `Picked::act` builds.
///
/// The handler takes rmcp's `Parameters<Args>` (with `#[derive(ToolArgs)]` on `Args`) and the
/// `Confirmed<Form>` proof; it runs only after the human accepted, the answer was revalidated
/// on the server and the preview came out the same a second time. The `#[tool]` gets
/// `destructiveHint: true`, `readOnlyHint: false` and `idempotentHint: false`.
///
/// ```
/// use rmcp::{handler::server::wrapper::Parameters, tool, tool_router};
/// use rmcp_guard::{Confirmed, Guard, Guarded, Preview, ToolArgs, ToolError, destructive};
/// use rmcp_guard::forms::TypeToConfirm;
///
/// struct Db {
///     guard: Guard,
/// }
///
/// impl Guarded for Db {
///     fn guard(&self) -> &Guard {
///         &self.guard
///     }
/// }
///
/// #[derive(serde::Deserialize, schemars::JsonSchema, ToolArgs)]
/// struct DropArgs {
///     /// The table to drop.
///     table: String,
/// }
///
/// #[tool_router]
/// impl Db {
///     /// Drop a table.
///     #[destructive(confirm = "type_to_confirm", target = table, preview = Self::preview_drop)]
///     #[tool]
///     async fn drop_table(
///         &self,
///         Parameters(args): Parameters<DropArgs>,
///         _typed: Confirmed<TypeToConfirm>,
///     ) -> Result<String, ToolError> {
///         Ok(format!("Dropped {}.", args.table))
///     }
///
///     async fn preview_drop(&self, args: &DropArgs) -> Result<Preview, ToolError> {
///         let summary = format!("Drop the table {} and every row in it.", args.table);
///         Ok(Preview::effect(&args.table, summary))
///     }
/// }
///
/// let tool = &Db::tool_router().list_all()[0];
/// let hints = tool.annotations.as_ref().unwrap();
/// assert_eq!(hints.destructive_hint, Some(true));
/// assert_eq!(hints.read_only_hint, Some(false));
/// ```
#[proc_macro_attribute]
pub fn destructive(attr: TokenStream, item: TokenStream) -> TokenStream {
    let f = parse_macro_input!(item as ImplItemFn);
    destructive::expand(attr.into(), f).into()
}

/// Collects input from the human through a guard form, for a tool without a destructive
/// effect. Put it above `#[tool]`; the handler takes `Answered<YourForm>`.
///
/// The form gets the same compile-time checks as a `#[destructive]` form (flat, no secrets),
/// the question goes out by push or MRTR as the client's protocol asks, decline and cancel
/// end the call with a natural result, and an accepted answer is revalidated on the server
/// (and checked by `validate = Self::rules_fn`, if given) before the handler runs. Options:
/// `message = "..."` (the text above the form) or `question = Self::question_fn` (a
/// `fn(&self, &Args) -> String`; with both, `message` is the header), `form`, `validate`,
/// `timeout`, `on_decline`, `on_cancel`, `crate`.
///
/// ```
/// use rmcp::{tool, tool_router};
/// use rmcp_guard::{Answered, Form, Guard, Guarded, ToolError, ask};
///
/// struct Survey {
///     guard: Guard,
/// }
///
/// impl Guarded for Survey {
///     fn guard(&self) -> &Guard {
///         &self.guard
///     }
/// }
///
/// #[derive(Form)]
/// struct Contact {
///     /// How we greet you.
///     name: String,
///     #[form(format = "email")]
///     email: String,
/// }
///
/// #[tool_router]
/// impl Survey {
///     /// Ask the user how to reach them.
///     #[ask(message = "How can we reach you?")]
///     #[tool]
///     async fn ask_contact(&self, answered: Answered<Contact>) -> Result<String, ToolError> {
///         Ok(format!("We will write to {}.", answered.email))
///     }
/// }
///
/// let tool = &Survey::tool_router().list_all()[0];
/// assert_eq!(tool.annotations.as_ref().unwrap().destructive_hint, Some(false));
/// ```
#[proc_macro_attribute]
pub fn ask(attr: TokenStream, item: TokenStream) -> TokenStream {
    let f = parse_macro_input!(item as ImplItemFn);
    ask::expand(attr.into(), f).into()
}

/// Marks an rmcp tool method as read-only (`readOnlyHint: true`). Put it above `#[tool]`.
///
/// Every parameter must be a read handle (`rmcp_guard::read_handle::ReadHandle`): rmcp's
/// request data or guard's read-only database handles. A write handle, however it is
/// spelled, does not compile, and in read-only mode only these tools stay published.
///
/// A tool that changes nothing but may expose what it reads declares it:
/// `#[read_only(discloses = "sensitive" | "credentials" | "bulk" | "capability", boundary =
/// Self::boundary_fn, max_items = N, max_bytes = N, session_max_items = N, session_max_bytes
/// = N)]`. It then asks the human with the data boundary stated, in the client's form or on
/// guard's page (`approve = "url"`, `approvers = N`), or under a grant the human opened
/// (`grant = "10m"`, `grant_calls = N`, over the scope the boundary states); see the
/// `disclosure` guide.
///
/// ```
/// use rmcp::{tool, tool_router};
/// use rmcp_guard::{ToolError, read_only};
///
/// struct Notes;
///
/// #[tool_router]
/// impl Notes {
///     /// Count the notes.
///     #[read_only]
///     #[tool]
///     async fn count_notes(&self) -> Result<String, ToolError> {
///         Ok("3 notes".into())
///     }
/// }
///
/// let tool = &Notes::tool_router().list_all()[0];
/// assert_eq!(tool.annotations.as_ref().unwrap().read_only_hint, Some(true));
/// ```
#[proc_macro_attribute]
pub fn read_only(attr: TokenStream, item: TokenStream) -> TokenStream {
    let f = parse_macro_input!(item as ImplItemFn);
    read_only::expand(attr.into(), f).into()
}

/// Claims that an identical repeat of this tool changes nothing (`idempotentHint: true`).
/// Put it above `#[tool]`; guard's testing kit fails a tool whose repeat changes state.
///
/// With options it makes a creating tool idempotent by key: `key = field` (a `String`
/// argument the model sends, one per request), `ttl = "24h"` (how long the key holds its
/// result), `crate = "path"`. The handler takes `&mut rmcp_guard::ops::Keyed` and its
/// `Parameters<Args>` and returns `Result<T, ToolError>`; a repeat with the key gets the
/// stored `T`, the key with other arguments is refused.
///
/// ```
/// use rmcp::{tool, tool_router};
/// use rmcp_guard::{ToolError, idempotent};
///
/// struct Flags;
///
/// #[tool_router]
/// impl Flags {
///     /// Turn maintenance mode on (again: no change).
///     #[idempotent]
///     #[tool]
///     async fn enable_maintenance(&self) -> Result<String, ToolError> {
///         Ok("maintenance mode is on".into())
///     }
/// }
///
/// let tool = &Flags::tool_router().list_all()[0];
/// assert_eq!(tool.annotations.as_ref().unwrap().idempotent_hint, Some(true));
/// ```
#[proc_macro_attribute]
pub fn idempotent(attr: TokenStream, item: TokenStream) -> TokenStream {
    let f = parse_macro_input!(item as ImplItemFn);
    read_only::expand_idempotent(attr.into(), f).into()
}

/// A flat elicitation form. Field options go in `#[form(...)]`: `title`, `description`,
/// `min_length`, `max_length`, `minimum`, `maximum`, `format`, `default`, `checkbox`,
/// `confirm_text`.
///
/// The derive emits the exact `requestedSchema` and the server-side validator from one
/// description. Nested structs, collections, maps, tuples, data-carrying enums, generics and
/// fields named like secrets (`password`, `api_key`, ...) do not compile.
///
/// ```
/// use rmcp_guard::Form;
///
/// #[derive(Form)]
/// struct Approval {
///     /// Type the table name exactly to confirm.
///     #[form(confirm_text, title = "Table name")]
///     typed_name: String,
///     #[form(title = "Approver", min_length = 1, max_length = 100)]
///     approver: String,
///     #[form(title = "Ticket", format = "uri")]
///     ticket: Option<String>,
/// }
///
/// let schema = serde_json::to_value(Approval::SPEC.requested_schema()).unwrap();
/// assert_eq!(schema["required"], serde_json::json!(["typed_name", "approver"]));
/// assert_eq!(schema["properties"]["ticket"]["format"], "uri");
/// ```
#[proc_macro_derive(Form, attributes(form))]
pub fn derive_form(input: TokenStream) -> TokenStream {
    form::derive(parse_macro_input!(input as DeriveInput)).into()
}

/// A unit-only enum offered as one choice; `#[form(title = "...", value = "...")]` per variant.
///
/// Values are the variant names in snake_case unless `value` says otherwise; the human sees
/// the titles.
///
/// ```
/// use rmcp_guard::{Form, FormEnum};
///
/// #[derive(Debug, PartialEq, FormEnum)]
/// enum Level {
///     #[form(title = "Standard")]
///     Standard,
///     #[form(title = "Urgent (pages the on-call)")]
///     Urgent,
/// }
///
/// #[derive(Form)]
/// struct Deploy {
///     #[form(title = "Approval level", default = "standard")]
///     level: Level,
/// }
///
/// let schema = serde_json::to_value(Deploy::SPEC.requested_schema()).unwrap();
/// assert_eq!(
///     schema["properties"]["level"]["oneOf"][1],
///     serde_json::json!({"const": "urgent", "title": "Urgent (pages the on-call)"})
/// );
/// ```
#[proc_macro_derive(FormEnum, attributes(form))]
pub fn derive_form_enum(input: TokenStream) -> TokenStream {
    form_enum::derive(parse_macro_input!(input as DeriveInput)).into()
}

/// Model-visible arguments of a guarded tool, checked for consent and identity fields.
///
/// Every name serde gives a field (its own, `rename`, `alias`, `rename_all`) is checked:
/// consent (`confirmed`, `force`, `yes`, ...) and identity (`user_id`, `tenant`, ...) names do
/// not compile, since the model would fill them in. Maps, `serde_json::Value` and `flatten`
/// are refused too, because they accept any name.
///
/// ```
/// use rmcp_guard::ToolArgs;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema, ToolArgs)]
/// struct CancelArgs {
///     /// The order to cancel.
///     order_no: String,
///     /// Why, in the customer's words.
///     reason: Option<String>,
/// }
/// ```
///
/// ```compile_fail
/// use rmcp_guard::ToolArgs;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema, ToolArgs)]
/// struct CancelArgs {
///     order_no: String,
///     #[serde(rename = "userId")] // identity comes from trusted context, never the model
///     customer: String,
/// }
/// ```
#[proc_macro_derive(ToolArgs)]
pub fn derive_tool_args(input: TokenStream) -> TokenStream {
    tool_args::derive(parse_macro_input!(input as DeriveInput)).into()
}

/// Two-phase operations on an rmcp tool impl. Put it above `#[tool_router]`. It pairs each
/// `#[prepare(op = ...)]` tool with the `#[confirm(op = ...)]` tool of the same op and adds
/// the read-only `get_operation_result` tool.
///
/// The prepare returns an `Intent<P>` (target, payload, preview) that guard stores with a
/// server-generated `operation_id`; the confirm takes only that id and gets
/// `&mut Approved<P>` after guard locked the caller's own unexpired intent and the `recheck`
/// passed, in one store transaction with the effect and its audit record.
///
/// ```
/// use rmcp::{handler::server::wrapper::Parameters, tool, tool_router};
/// use rmcp_guard::ops::{Approved, Intent, Locked, Prepare, Recheck};
/// use rmcp_guard::{Guard, Guarded, ToolArgs, ToolError, operations};
///
/// struct Orders {
///     guard: Guard,
/// }
///
/// impl Guarded for Orders {
///     fn guard(&self) -> &Guard {
///         &self.guard
///     }
/// }
///
/// #[derive(serde::Deserialize, schemars::JsonSchema, ToolArgs)]
/// struct CancelArgs {
///     order_no: String,
/// }
///
/// #[derive(serde::Serialize, serde::Deserialize)]
/// struct Cancel {
///     order_no: String,
/// }
///
/// #[operations]
/// #[tool_router]
/// impl Orders {
///     /// Check an order and prepare its cancellation; changes nothing.
///     #[prepare(op = "order_cancel", ttl = "10m")]
///     #[tool]
///     async fn prepare_cancel(
///         &self,
///         _prepare: &mut Prepare,
///         Parameters(args): Parameters<CancelArgs>,
///     ) -> Result<Intent<Cancel>, ToolError> {
///         let order_no = args.order_no.clone();
///         Ok(Intent::new(order_no.clone(), Cancel { order_no }))
///     }
///
///     /// Cancel the prepared order; call only after the user agreed.
///     #[confirm(op = "order_cancel", recheck = Self::still_open)]
///     #[tool]
///     async fn confirm_cancel(
///         &self,
///         approved: &mut Approved<Cancel>,
///     ) -> Result<String, ToolError> {
///         Ok(format!("Cancelled {}.", approved.payload().order_no))
///     }
/// }
///
/// impl Orders {
///     async fn still_open(&self, _locked: &mut Locked<Cancel>) -> Result<Recheck, ToolError> {
///         Ok(Recheck::Unchanged)
///     }
/// }
///
/// let mut names: Vec<_> = Orders::tool_router().list_all().into_iter().map(|t| t.name).collect();
/// names.sort();
/// assert_eq!(names, ["confirm_cancel", "get_operation_result", "prepare_cancel"]);
/// ```
#[proc_macro_attribute]
pub fn operations(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item = parse_macro_input!(item as ItemImpl);
    operations::expand(attr.into(), item).into()
}

/// Freezes an intent for a later confirm: `op = "..."`, `ttl = "10m"`, `scope = "..."`,
/// `rate = "5/min"`. Read by `#[operations]` on the impl.
#[proc_macro_attribute]
pub fn prepare(_attr: TokenStream, item: TokenStream) -> TokenStream {
    let f = parse_macro_input!(item as ImplItemFn);
    operations::standalone("prepare", f).into()
}

/// Carries out a prepared intent once: `op = "..."`, `recheck = Self::fn`. Read by
/// `#[operations]` on the impl.
#[proc_macro_attribute]
pub fn confirm(_attr: TokenStream, item: TokenStream) -> TokenStream {
    let f = parse_macro_input!(item as ImplItemFn);
    operations::standalone("confirm", f).into()
}
