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
mod options;
mod read_handle;
mod read_only;
mod stand_in;
mod tool_args;
mod tool_attr;
mod tool_router;
mod ty;

#[cfg(test)]
mod snapshots;

use proc_macro::TokenStream;
use syn::{DeriveInput, ImplItemFn, ItemImpl, parse_macro_input};

/// Guards a destructive rmcp tool method. Put it directly above `#[tool]`.
///
/// Options (the guide's `destructive` page tells more, and links each feature's page):
///
/// <!-- the options of #[destructive], rendered from guard-macros/src/options -->
/// | option | takes | default | with others | what it does |
/// |---|---|---|---|---|
/// | `confirm` | `"checkbox"` or `"type_to_confirm"` | none: give `confirm` or `form` |  | how the human confirms: ticking a box, or retyping the `target` |
/// | `form` | a path, e.g. `YourForm` | none: give `confirm` or `form` |  | a `#[derive(Form)]` form the human fills in; the handler takes `Confirmed<YourForm>` |
/// | `target` | an argument's field, e.g. `table` | none |  | the `String` argument the human retypes, with `confirm = "type_to_confirm"` |
/// | `preview` | a path, e.g. `Self::preview_fn` | required |  | the concrete effect the human reads, `async fn(&self, &Args) -> Result<Preview, ToolError>`; run again before the handler |
/// | `validate` | a path, e.g. `Self::rules_fn` | none |  | rules on the accepted form, `fn(&Form) -> Result<(), String>`, checked on the server |
/// | `message` | a string, e.g. `"Delete for good?"` | none |  | the text the human reads above the question |
/// | `timeout` | a duration, e.g. `"10m"`, at most `1h` | `Guard::answer_timeout` (5 minutes) |  | how long the human has to answer |
/// | `on_decline` | a string, e.g. `"Kept the table."` | guard's text |  | what the model reads when the human declines |
/// | `on_cancel` | a string, e.g. `"Nobody answered."` | guard's text |  | what the model reads when the human cancels or does not answer |
/// | `idempotent` | a flag | off |  | claims an identical repeat changes nothing (`idempotentHint: true`) |
/// | `approve` | `"url"` | the client's form | not with `form` | the human approves on guard's approval page instead of in the client |
/// | `approvers` | a whole number from 1 to 5 | 1 | needs `approve` | how many people approve on the page; above 1, none of them the requester |
/// | `secret` | a string, e.g. `"Deploy token"` | none | needs `approve`; not with `defer` | the label of a password the page asks for; the handler reads it as `confirmed.secret()` |
/// | `batch` | a flag | off | not with `confirm`, `form`, `target`, `validate`, `approve`, `approvers`, `secret` | the human picks which of the preview's `Batch` items the effect touches; the handler takes `Picked` |
/// | `max_items` | a whole number from 1 to 100 | 20 | needs `batch` | the most items one batch question offers |
/// | `undo` | a path, e.g. `Self::undo_fn` | none: the effect is final | needs `undo_within`; not with `batch` | lets the effect's owner undo it while the window is open |
/// | `undo_within` | a duration, e.g. `"10m"`, at most `7d` | none | needs `undo` | how long the undo window stays open |
/// | `purge` | a path, e.g. `Self::purge_fn` | none | needs `undo` | makes the undoable effect final when its window closes |
/// | `defer` | a duration, e.g. `"10m"`, at most `1d` | none: the effect runs at once | not with `batch`, `undo` | the confirmed effect waits this long, and can be withdrawn until it runs |
/// | `grant` | a duration, e.g. `"10m"`, at most `8h` | none | needs `grant_calls`; not with `approve`, `batch`, `defer` | how long a grant the human opens lasts: their answer covers later calls on the scope the preview states |
/// | `grant_calls` | a whole number from 1 to 100 | none | needs `grant` | how many more calls a grant covers |
/// | `unknown_arguments` | `"refuse"` or `"ignore"` | `"refuse"` |  | an argument the tool does not take (`dryrun` for `dry_run`): refused with `INVALID_INPUT` before anything is asked or run, or dropped unread as serde does |
/// | `crate` | a string, e.g. `"my_crate::guard"` | `rmcp_guard` |  | where rmcp_guard is when the crate reaches it through a re-export (a renamed dependency is found in Cargo.toml) |
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
/// use rmcp::{handler::server::wrapper::Parameters, tool};
/// use rmcp_guard::tool_router;
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
/// (and checked by `validate = Self::rules_fn`, if given) before the handler runs.
///
/// Options (see the guide's `ask` page):
///
/// <!-- the options of #[ask], rendered from guard-macros/src/options -->
/// | option | takes | default | with others | what it does |
/// |---|---|---|---|---|
/// | `form` | a path, e.g. `YourForm` | the `F` of the handler's `Answered<F>` |  | the `#[derive(Form)]` form the human fills in |
/// | `message` | a string, e.g. `"Delete for good?"` | none: give `message` or `question` |  | the text the human reads above the question |
/// | `question` | a path, e.g. `Self::question_fn` | none: give `message` or `question` |  | builds the text from the arguments, `fn(&self, &Args) -> String`; with `message`, that is the header |
/// | `validate` | a path, e.g. `Self::rules_fn` | none |  | rules on the accepted form, `fn(&Form) -> Result<(), String>`, checked on the server |
/// | `timeout` | a duration, e.g. `"10m"`, at most `1h` | `Guard::answer_timeout` (5 minutes) |  | how long the human has to answer |
/// | `on_decline` | a string, e.g. `"Kept the table."` | guard's text |  | what the model reads when the human declines |
/// | `on_cancel` | a string, e.g. `"Nobody answered."` | guard's text |  | what the model reads when the human cancels or does not answer |
/// | `unknown_arguments` | `"refuse"` or `"ignore"` | `"refuse"` |  | an argument the tool does not take (`dryrun` for `dry_run`): refused with `INVALID_INPUT` before anything is asked or run, or dropped unread as serde does |
/// | `crate` | a string, e.g. `"my_crate::guard"` | `rmcp_guard` |  | where rmcp_guard is when the crate reaches it through a re-export (a renamed dependency is found in Cargo.toml) |
///
/// ```
/// use rmcp::tool;
/// use rmcp_guard::tool_router;
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
/// A tool that changes nothing but may expose what it reads declares it with options. It
/// then asks the human with the data boundary stated, in the client's form or on guard's
/// page, or under a grant the human opened (over the scope the boundary states); see the
/// `disclosure` guide.
///
/// <!-- the options of #[read_only], rendered from guard-macros/src/options -->
/// | option | takes | default | with others | what it does |
/// |---|---|---|---|---|
/// | `discloses` | `"sensitive"` or `"credentials"` or `"bulk"` or `"capability"` | required with options |  | what the tool may expose; a bare `#[read_only]` discloses nothing |
/// | `boundary` | a path, e.g. `Self::boundary_fn` | required |  | the data boundary the human reads, `async fn(&self, &Args) -> Result<Boundary, ToolError>` |
/// | `max_items` | a whole number from 1 | no cap (a `bulk` tool needs it or `max_bytes`) |  | the most items one call shows |
/// | `max_bytes` | a whole number from 1 | no cap |  | the most bytes one call shows |
/// | `session_max_items` | a whole number from 1 | no cap |  | the most items one session is shown, at least `max_items` |
/// | `session_max_bytes` | a whole number from 1 | no cap |  | the most bytes one session is shown, at least `max_bytes` |
/// | `grant` | a duration, e.g. `"10m"`, at most `8h` | none | needs `grant_calls`; not with `approve` | how long a grant the human opens lasts: their answer covers later calls on the scope the preview states |
/// | `grant_calls` | a whole number from 1 to 100 | none | needs `grant` | how many more calls a grant covers |
/// | `approve` | `"url"` | the client's form |  | the human approves on guard's approval page instead of in the client |
/// | `approvers` | a whole number from 1 to 5 | 1 | needs `approve` | how many people approve on the page; above 1, none of them the requester |
/// | `message` | a string, e.g. `"Delete for good?"` | none |  | the text the human reads above the question |
/// | `timeout` | a duration, e.g. `"10m"`, at most `1h` | `Guard::answer_timeout` (5 minutes) |  | how long the human has to answer |
/// | `on_decline` | a string, e.g. `"Kept the table."` | guard's text |  | what the model reads when the human declines |
/// | `on_cancel` | a string, e.g. `"Nobody answered."` | guard's text |  | what the model reads when the human cancels or does not answer |
/// | `unknown_arguments` | `"refuse"` or `"ignore"` | `"refuse"` |  | an argument the tool does not take (`dryrun` for `dry_run`): refused with `INVALID_INPUT` before anything is asked or run, or dropped unread as serde does |
/// | `crate` | a string, e.g. `"my_crate::guard"` | `rmcp_guard` |  | where rmcp_guard is when the crate reaches it through a re-export (a renamed dependency is found in Cargo.toml) |
///
/// ```
/// use rmcp::tool;
/// use rmcp_guard::tool_router;
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
/// With options it makes a creating tool idempotent by key. The handler takes
/// `&mut rmcp_guard::ops::Keyed` and its `Parameters<Args>` and returns
/// `Result<T, ToolError>`; a repeat with the key gets the stored `T`, the key with other
/// arguments is refused (see the guide's `idempotency` page).
///
/// <!-- the options of #[idempotent], rendered from guard-macros/src/options -->
/// | option | takes | default | with others | what it does |
/// |---|---|---|---|---|
/// | `key` | an argument's field, e.g. `request_id` | required with options |  | the `String` argument that carries the caller's idempotency key |
/// | `ttl` | a duration, e.g. `"10m"`, at most `30d` | required |  | how long a key answers with its stored result |
/// | `unknown_arguments` | `"refuse"` or `"ignore"` | `"refuse"` |  | an argument the tool does not take (`dryrun` for `dry_run`): refused with `INVALID_INPUT` before anything is asked or run, or dropped unread as serde does |
/// | `crate` | a string, e.g. `"my_crate::guard"` | `rmcp_guard` |  | where rmcp_guard is when the crate reaches it through a re-export (a renamed dependency is found in Cargo.toml) |
///
/// ```
/// use rmcp::tool;
/// use rmcp_guard::tool_router;
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

/// A flat elicitation form. Field options go in `#[form(...)]` (see the guide's `forms`
/// page):
///
/// <!-- the options of #[form], rendered from guard-macros/src/options -->
/// | option | takes | default | with others | what it does |
/// |---|---|---|---|---|
/// | `title` | a string, e.g. `"Table name"` | none |  | the field's label |
/// | `description` | a string, e.g. `"Type the table name to confirm."` | the doc comment |  | the text under the label |
/// | `min_length` | a whole number | none |  | the fewest characters a `String` answer has |
/// | `max_length` | a whole number | none |  | the most characters a `String` answer has |
/// | `minimum` | a number | the type's |  | the smallest number answer |
/// | `maximum` | a number | the type's |  | the largest number answer |
/// | `format` | `"email"` or `"uri"` or `"date"` or `"date-time"` | none |  | the format a `String` answer has |
/// | `default` | a string, number or bool | none | not with `confirm_text` | the answer the client fills in first; never `true` on a checkbox |
/// | `checkbox` | a flag | off | not with `confirm_text` | the plain `bool` the human must tick to confirm (one a form) |
/// | `confirm_text` | a flag | off |  | the plain `String` in which the human retypes the target (one a form) |
/// | `redact` | a flag | on for free text |  | whether the audit record leaves the answer out |
/// | `enum_names` | a flag | off |  | spells a single choice as the legacy `enum` + `enumNames` |
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
/// <!-- the options of #[form] on a variant, rendered from guard-macros/src/options -->
/// | option | takes | default | with others | what it does |
/// |---|---|---|---|---|
/// | `value` | a string, e.g. `"urgent"` | the variant's name in snake_case |  | the value on the wire |
/// | `title` | a string, e.g. `"Urgent (pages the on-call)"` | none: the value |  | what the human sees |
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
/// passed, in one store transaction with the effect and its audit record (see the guide's
/// `two_phase` page).
///
/// <!-- the options of #[operations], rendered from guard-macros/src/options -->
/// | option | takes | default | with others | what it does |
/// |---|---|---|---|---|
/// | `crate` | a string, e.g. `"my_crate::guard"` | `rmcp_guard` |  | where rmcp_guard is when the crate reaches it through a re-export |
///
/// ```
/// use rmcp::{handler::server::wrapper::Parameters, tool};
/// use rmcp_guard::tool_router;
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

/// rmcp's `#[tool_router]`, for an impl with guarded tools: use it in rmcp's place
/// (`use rmcp_guard::tool_router;`), with the same options (`router = name`, `vis = "pub"`,
/// `server_handler`, `allow_empty`).
///
/// The router function it generates claims the impl's guarded tools' names in the router
/// itself, so `rmcp_guard::exposed` can refuse a router in which another route (a plain
/// `#[tool]` of the same name in a router added with `+` or `merge`) took a guarded tool's
/// place. A guarded tool in a router rmcp's own
/// `#[tool_router]` built is refused the same way: the exposure publishes no tool and says
/// which attribute to use. `#[operations]` goes above it.
#[proc_macro_attribute]
pub fn tool_router(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item = parse_macro_input!(item as ItemImpl);
    tool_router::expand(attr.into(), item).into()
}

/// Freezes an intent for a later confirm. Read by `#[operations]` on the impl.
///
/// <!-- the options of #[prepare], rendered from guard-macros/src/options -->
/// | option | takes | default | with others | what it does |
/// |---|---|---|---|---|
/// | `op` | a string, e.g. `"order_cancel"` | required |  | the snake_case operation name the prepare and its confirm share, in the store and the audit log |
/// | `ttl` | a duration, e.g. `"10m"`, at most `7d` | required |  | how long the intent waits for its confirm before it expires |
/// | `scope` | a string, e.g. `"orders.cancel"` | none |  | the scopes the caller needs, separated by commas or spaces; checked at both phases |
/// | `rate` | calls per period, e.g. `"5/min"`, the period at most `7d` | no limit |  | how many prepares one user may make per period |
/// | `unknown_arguments` | `"refuse"` or `"ignore"` | `"refuse"` |  | an argument the tool does not take (`dryrun` for `dry_run`): refused with `INVALID_INPUT` before anything is asked or run, or dropped unread as serde does |
#[proc_macro_attribute]
pub fn prepare(_attr: TokenStream, item: TokenStream) -> TokenStream {
    let f = parse_macro_input!(item as ImplItemFn);
    operations::standalone("prepare", f).into()
}

/// Carries out a prepared intent once. Read by `#[operations]` on the impl.
///
/// <!-- the options of #[confirm], rendered from guard-macros/src/options -->
/// | option | takes | default | with others | what it does |
/// |---|---|---|---|---|
/// | `op` | a string, e.g. `"order_cancel"` | required |  | the snake_case operation name the prepare and its confirm share, in the store and the audit log |
/// | `recheck` | a path, e.g. `Self::recheck_fn` | required |  | checks the locked target is unchanged, `async fn(&self, &mut Locked<P>) -> Result<Recheck, ToolError>` |
/// | `defer` | a duration, e.g. `"10m"`, at most `1d` | none: the effect runs at once |  | the confirmed effect waits this long, and can be withdrawn until it runs |
#[proc_macro_attribute]
pub fn confirm(_attr: TokenStream, item: TokenStream) -> TokenStream {
    let f = parse_macro_input!(item as ImplItemFn);
    operations::standalone("confirm", f).into()
}
