//! Items the macros expand to. Not a stable API, and nothing here can mint a proof: the
//! flow's steps only build [`Confirmed`](crate::Confirmed) after a real accept, the confirm
//! driver only builds `Approved` after the store lock and the author's re-check, and a
//! deferred run (`RunFlow`, `run_and_recheck`) only builds either from a `Due`, which
//! has no public constructor: only guard's runner makes one, for a call it claimed when
//! the database's clock said it was due, and hands it to the run the tool's hidden route
//! holds.

pub use crate::args::{GuardArguments, TargetText};
pub use crate::args::{ToolArgField, ToolArgsDerived, assert_tool_arg_field};
pub use crate::disclose::{Class as DisclosureClass, Spec as DisclosureSpec};
pub use crate::entry::claims::{claim, claimed};
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub use crate::entry::undo::{WindowFn, assert_purge, assert_undo, undo_route};
pub use crate::flow::{ApprovalSpec, ConfirmKind, Flow, GrantSpec, GuardCall, Rules, ToolSpec};
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub use crate::ops::{
    call::{ConfirmSpec, PrepareSpec, arguments},
    drive::{RecheckHook, lock_and_recheck, run_and_recheck},
    keyed::{KeyedArgs, KeyedSpec},
    lookup::get_operation_result,
};
pub use crate::read_handle::ask::AskHandle;
pub use crate::read_handle::seal::Sealed as ReadHandleSeal;
pub use crate::seal::{FormDerived, FormEnumDerived};
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub use crate::{
    defer::{Due, Ending},
    entry::withdraw::{RunFuture, deferred_route},
    flow::RunFlow,
};
pub use rmcp;
pub use serde_json;

/// The input schema rmcp's `#[tool]` builds for a tool taking `P` (`Parameters<Args>`),
/// claimed as a guarded tool's. It panics as rmcp's own does when the arguments have no
/// object schema (the router is being built, nothing has run).
pub fn claim_parameters<P: rmcp::schemars::JsonSchema + std::any::Any>()
-> std::sync::Arc<rmcp::model::JsonObject> {
    let schema = rmcp::handler::server::common::schema_for_input::<P>().unwrap_or_else(|e| {
        panic!(
            "Invalid input schema for `{}`: {}",
            std::any::type_name::<P>(),
            e
        )
    });
    claim(schema)
}

/// The empty input schema of a guarded tool without arguments, claimed like
/// [`claim_parameters`].
pub fn claim_no_parameters() -> std::sync::Arc<rmcp::model::JsonObject> {
    claim(rmcp::handler::server::common::schema_for_empty_input())
}

/// Pins `T` to [`ReadHandle`](crate::read_handle::ReadHandle); `#[read_only]` calls it at
/// each parameter's span.
pub const fn assert_read_handle<T: crate::read_handle::ReadHandle + ?Sized>() {}

/// Pins `T` to a read handle, as [`AskHandle`] words the refusal; `#[ask]` calls it at
/// the span of each parameter besides the arguments and the answer.
pub const fn assert_ask_handle<T: AskHandle + ?Sized>() {}

/// True when `value` is the wire value of one of `values`: a choice's `default` must be one
/// the human is offered. The derive evaluates it in a `const` item; an enum that reported
/// its own error (no values) is not refused again.
pub const fn offers(values: &[crate::form::EnumValue], value: &str) -> bool {
    if values.is_empty() {
        return true;
    }
    let mut i = 0;
    while i < values.len() {
        if crate::error::same(values[i].value, value) {
            return true;
        }
        i += 1;
    }
    false
}

/// Pins a handler's form to `Form`.
pub const fn assert_form<T: crate::form::Form>() {}

/// A tool with `defer` needs guard's operation store, so a store feature.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub const fn assert_defer_store() {}

/// A tool with `defer` needs guard's operation store, so a store feature.
#[cfg(not(any(feature = "sqlite", feature = "postgres")))]
pub const fn assert_defer_store() {
    panic!(
        "`defer` keeps the confirmed call in guard's operation store until it runs: enable rmcp-guard's `sqlite` or `postgres` feature, or remove `defer`"
    );
}
pub const fn assert_guarded<T: crate::guard::Guarded + ?Sized>() {}

/// Fails the build when `form`'s confirmation roles do not fit `kind`: evaluated in a
/// `const` item, so the form's static description, not a marker, decides.
pub const fn assert_roles(form: &crate::form::FormSpec, kind: ConfirmKind) {
    if form.fallback {
        return;
    }
    if let Some(problem) = crate::flow::roles_problem(form, kind) {
        panic!("{}", problem);
    }
}

/// A form with one box to tick (`#[form(checkbox)]`), as the derive counted: what
/// `confirm = "checkbox"` asks with. The derive implements it; the form's static
/// description still decides, in [`CheckboxForm::ROLES`].
#[diagnostic::on_unimplemented(
    message = "`confirm = \"checkbox\"` asks the human to tick a box, and `{Self}` has none",
    label = "not a form with a `#[form(checkbox)]` field",
    note = "take `Confirmed<rmcp_guard::forms::Checkbox>`, or mark one plain `bool` field of `{Self}` with `#[form(checkbox)]`; a form in which the human retypes the target goes with `confirm = \"type_to_confirm\"`"
)]
pub trait CheckboxForm: crate::form::Form {
    /// Fails the build when the form's description does not fit a checkbox question.
    const ROLES: () = assert_roles(Self::SPEC, ConfirmKind::Checkbox);
}

/// A form with one field where the human retypes the target (`#[form(confirm_text)]`), as
/// the derive counted: what `confirm = "type_to_confirm"` asks with. The form's static
/// description still decides, in [`TypeToConfirmForm::ROLES`].
#[diagnostic::on_unimplemented(
    message = "`confirm = \"type_to_confirm\"` asks the human to retype the target, and `{Self}` has no field for it",
    label = "not a form with a `#[form(confirm_text)]` field",
    note = "take `Confirmed<rmcp_guard::forms::TypeToConfirm>`, or mark one plain `String` field of `{Self}` with `#[form(confirm_text)]`; a form with a box to tick goes with `confirm = \"checkbox\"`"
)]
pub trait TypeToConfirmForm: crate::form::Form {
    /// Fails the build when the form's description does not fit a typed-name question.
    const ROLES: () = assert_roles(Self::SPEC, ConfirmKind::TypeToConfirm);
}

/// Fails the build when a form cannot go with `grant`: a retyped target (the human's
/// attention to one target, which a grant would skip), or a field named like the choice
/// guard adds to the question.
pub const fn assert_grant_form(form: &crate::form::FormSpec) {
    let mut i = 0;
    while i < form.fields.len() {
        if matches!(form.fields[i].role, crate::form::FieldRole::ConfirmText) {
            panic!(
                "a tool with `grant` cannot ask the human to retype its target (`#[form(confirm_text)]`): a grant would let later calls skip what the typed name is for. Remove `grant`, or the field"
            );
        }
        if crate::error::same(form.fields[i].name, GRANT_CHOICE) {
            panic!(
                "a tool with `grant` cannot have a form field named `guard_grant`: guard adds its own field of that name to the question, for the human's choice of a grant. Rename the field"
            );
        }
        i += 1;
    }
}

/// The field guard adds to a question that offers a grant (`flow::grant::GRANT_FIELD`).
const GRANT_CHOICE: &str = "guard_grant";

/// An `#[ask]` form's roles: no retyped target (there is none to compare it with), and the
/// checkbox rules every form keeps.
pub const fn assert_ask_roles(form: &crate::form::FormSpec) {
    let mut i = 0;
    while i < form.fields.len() {
        if matches!(form.fields[i].role, crate::form::FieldRole::ConfirmText) && !form.fallback {
            panic!(
                "an `#[ask]` form cannot have a `#[form(confirm_text)]` field: there is no target to compare what the human types with. Remove the field, or make the tool `#[destructive(confirm = \"type_to_confirm\", target = <argument>)]`"
            );
        }
        i += 1;
    }
    assert_roles(form, ConfirmKind::Form);
}

/// Fails the build when the `type_to_confirm` target `target` is a field the model may
/// leave out: serde would fill it with `""`, and an empty answer would then match it.
pub const fn assert_target_required(defaulted: &[&str], target: &str) {
    if contains(defaulted, target) {
        panic!(
            "the `type_to_confirm` target has `#[serde(default)]` in the tool's arguments, so the model could leave it out and an empty answer would match it: remove `default` from that field (and from the arguments struct) so the target is always sent"
        );
    }
}

/// Fails the build when a keyed tool's key or arguments escape the key's record: a key
/// field the model cannot send, or a field the hash of the serialized arguments leaves out.
pub const fn assert_key_hashed(skipped: &[&str], unhashed: &[&str], key: &str) {
    if contains(skipped, key) {
        panic!(
            "the idempotency key field has `#[serde(skip)]` or `skip_deserializing`, so the model cannot send it and every call would share one default key: remove the `skip` from the key field"
        );
    }
    if !unhashed.is_empty() {
        panic!(
            "a keyed tool's arguments have a field with `#[serde(skip)]`, `skip_serializing` or `skip_serializing_if`: guard binds the key to a hash of the serialized arguments, which would leave that field out, so the key reused with another value of it would pass. Remove the `skip...` attribute, or move the field out of the keyed tool's arguments"
        );
    }
}

/// `needle` is one of `names`, in a `const` context.
const fn contains(names: &[&str], needle: &str) -> bool {
    let mut i = 0;
    while i < names.len() {
        if crate::error::same(names[i], needle) {
            return true;
        }
        i += 1;
    }
    false
}

/// The author's `validate` rules, coerced to the one signature the flow calls.
pub const fn rules<F>(rules: Rules<F>) -> Rules<F> {
    rules
}

/// What calling the author's `preview` gives: the future of an `async fn` that returns
/// `Result<Preview, ToolError>`. A plain `fn` is refused here, in the author's words.
#[diagnostic::on_unimplemented(
    message = "the preview must be `async fn name(&self, args: &Args) -> Result<Preview, ToolError>`, and calling this one gives `{Self}`",
    label = "not an `async fn` that returns `Result<Preview, ToolError>`",
    note = "make the preview an `async fn` returning `Result<Preview, ToolError>` (for a tool without arguments, `async fn name(&self)`): guard awaits it before asking the human, and again before the effect runs"
)]
pub trait PreviewFuture:
    core::future::Future<Output = Result<crate::preview::Preview, crate::error::ToolError>>
{
}
impl<F> PreviewFuture for F where
    F: core::future::Future<Output = Result<crate::preview::Preview, crate::error::ToolError>>
{
}

/// What calling a batch tool's `preview` gives: the future of an `async fn` that returns
/// `Result<Batch, ToolError>`.
#[diagnostic::on_unimplemented(
    message = "a batch tool's preview must be `async fn name(&self, args: &Args) -> Result<Batch, ToolError>`, and calling this one gives `{Self}`",
    label = "not an `async fn` that returns `Result<rmcp_guard::batch::Batch, ToolError>`",
    note = "make the preview an `async fn` returning `Result<rmcp_guard::batch::Batch, ToolError>` (for a tool without arguments, `async fn name(&self)`): guard awaits it before asking the human, and again before the effect runs"
)]
pub trait BatchPreviewFuture:
    core::future::Future<Output = Result<crate::batch::Batch, crate::error::ToolError>>
{
}
impl<F> BatchPreviewFuture for F where
    F: core::future::Future<Output = Result<crate::batch::Batch, crate::error::ToolError>>
{
}

/// Calls the author's `preview`; its bounds are the signature the flow expects,
/// `async fn(&self, &Args) -> Result<Preview, ToolError>`. An `async fn` itself, so the
/// caller awaits a future whatever the author wrote and a wrong one is one error.
pub async fn preview<'a, S: ?Sized, A, P, F>(
    preview: P,
    server: &'a S,
    args: &'a A,
) -> Result<crate::preview::Preview, crate::error::ToolError>
where
    P: FnOnce(&'a S, &'a A) -> F,
    F: PreviewFuture,
{
    preview(server, args).await
}

/// Calls a disclosing tool's `boundary`: `async fn(&self, &Args) -> Result<Boundary, ToolError>`.
pub fn boundary<'a, S: ?Sized, A, P, F>(boundary: P, server: &'a S, args: &'a A) -> F
where
    P: FnOnce(&'a S, &'a A) -> F,
    F: core::future::Future<Output = Result<crate::disclose::Boundary, crate::error::ToolError>>,
{
    boundary(server, args)
}

/// Calls a disclosing tool's `boundary` when the tool takes no arguments:
/// `async fn(&self) -> Result<Boundary, ToolError>`.
pub fn boundary_no_args<'a, S: ?Sized, P, F>(boundary: P, server: &'a S) -> F
where
    P: FnOnce(&'a S) -> F,
    F: core::future::Future<Output = Result<crate::disclose::Boundary, crate::error::ToolError>>,
{
    boundary(server)
}

/// A disclosing tool's description: the author's, then what it discloses.
pub fn disclosed_description(
    spec: &crate::disclose::Spec,
    base: impl core::fmt::Display,
) -> String {
    let base = base.to_string();
    if base.is_empty() {
        return spec.description();
    }
    format!("{base}\n\n{}", spec.description())
}

/// A disclosing handler's return type must be `Disclosed<_>` or `Result<Disclosed<_>, _>`;
/// called at the return type's span.
pub const fn assert_disclosed<T: crate::disclose::IntoDisclosed>() {}

/// Calls a batch tool's `preview`: `async fn(&self, &Args) -> Result<Batch, ToolError>`.
pub async fn batch_preview<'a, S: ?Sized, A, P, F>(
    preview: P,
    server: &'a S,
    args: &'a A,
) -> Result<crate::batch::Batch, crate::error::ToolError>
where
    P: FnOnce(&'a S, &'a A) -> F,
    F: BatchPreviewFuture,
{
    preview(server, args).await
}

/// Calls the `preview` of a batch tool without arguments: `async fn(&self) ->
/// Result<Batch, ToolError>`.
pub async fn batch_preview_no_args<'a, S: ?Sized, P, F>(
    preview: P,
    server: &'a S,
) -> Result<crate::batch::Batch, crate::error::ToolError>
where
    P: FnOnce(&'a S) -> F,
    F: BatchPreviewFuture,
{
    preview(server).await
}

/// A batch handler's result: the report [`crate::batch::Picked::act`] built.
pub fn batch_report<R: BatchReport>(report: R) -> crate::batch::Report {
    report.into_report()
}

#[diagnostic::on_unimplemented(
    message = "a batch tool returns `rmcp_guard::batch::Report`, not `{Self}`",
    label = "not the report `picked.act(...)` builds",
    note = "end the handler with `picked.act(|item| async move {{ ... }}).await`: guard reports each picked item (done, skipped, failed) and audits it"
)]
pub trait BatchReport {
    fn into_report(self) -> crate::batch::Report;
}
impl BatchReport for crate::batch::Report {
    fn into_report(self) -> crate::batch::Report {
        self
    }
}

/// Calls the `preview` of a tool without arguments: `async fn(&self) -> Result<Preview,
/// ToolError>`.
pub async fn preview_no_args<'a, S: ?Sized, P, F>(
    preview: P,
    server: &'a S,
) -> Result<crate::preview::Preview, crate::error::ToolError>
where
    P: FnOnce(&'a S) -> F,
    F: PreviewFuture,
{
    preview(server).await
}

/// Calls an `#[ask]` tool's `question`: `fn(&self, &Args) -> String`, the text the human
/// reads above the form.
pub fn question<'a, S: ?Sized, A, Q>(question: Q, server: &'a S, args: &'a A) -> String
where
    Q: FnOnce(&'a S, &'a A) -> String,
{
    question(server, args)
}

/// Calls the `question` of an `#[ask]` tool without arguments: `fn(&self) -> String`.
pub fn question_no_args<'a, S: ?Sized, Q>(question: Q, server: &'a S) -> String
where
    Q: FnOnce(&'a S) -> String,
{
    question(server)
}

/// What an `#[ask]` tool shows the human: its question, as the effect the flow records.
pub fn asked(
    name: &'static str,
    question: String,
) -> Result<crate::preview::Preview, crate::error::ToolError> {
    Ok(crate::preview::Preview::question(name, question))
}

/// The key field of a keyed tool's arguments, as text.
pub fn key_field<K: KeyField + ?Sized>(key: &K) -> &str {
    key.as_key()
}

#[diagnostic::on_unimplemented(
    message = "an idempotency key field must be a `String`, not `{Self}`",
    label = "the field `key = ...` names",
    note = "the model sends a fresh key per request, a UUID as text: declare the field as `String`"
)]
pub trait KeyField {
    fn as_key(&self) -> &str;
}
impl KeyField for String {
    fn as_key(&self) -> &str {
        self
    }
}

/// Pins a prepare's payload to what guard can store and read back.
pub const fn assert_payload<P: Payload>() {}

#[diagnostic::on_unimplemented(
    message = "the payload `{Self}` cannot be frozen in an intent",
    label = "needs `#[derive(serde::Serialize, serde::Deserialize)]`",
    note = "guard stores the payload as canonical JSON with its SHA-256 at prepare time and reads it back in the confirm: derive `Serialize` and `Deserialize` on `{Self}`"
)]
pub trait Payload {}
impl<P: serde::Serialize + serde::de::DeserializeOwned> Payload for P {}

/// What a `#[prepare]` handler returns, read by type rather than by spelling, so an alias
/// of `Result` works: `Result<Intent<P>, ToolError>`, whose payload is `P`.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
#[diagnostic::on_unimplemented(
    message = "a `#[prepare]` handler returns `Result<Intent<Payload>, ToolError>`, not `{Self}`",
    label = "not `Result<Intent<_>, ToolError>`",
    note = "return the intent guard stores for the confirm, or the refusal the model sees: `Result<Intent<Payload>, ToolError>` (a type alias of it is fine)"
)]
pub trait PrepareReturn {
    type Payload;
}
#[cfg(any(feature = "sqlite", feature = "postgres"))]
impl<P> PrepareReturn for Result<crate::ops::Intent<P>, crate::error::ToolError> {
    type Payload = P;
}

/// Implemented by `#[operations]` for its server: one `get_operation_result` tool answers
/// for every two-phase tool, so a second `#[operations]` impl on the same server is a
/// conflicting implementation of this trait. Move its `#[prepare]`/`#[confirm]` tools into
/// the first one.
pub trait EveryTwoPhaseToolOfAServerGoesInOneOperationsImpl {}

/// What a keyed handler returns, read by type: `Result<T, ToolError>`.
#[diagnostic::on_unimplemented(
    message = "an `#[idempotent(key = ...)]` handler returns `Result<T, ToolError>`, not `{Self}`",
    label = "not `Result<_, ToolError>`",
    note = "guard stores `T` under the key and answers a repeat with it: return `Result<T, ToolError>` with `T: Serialize` (a type alias of it is fine)"
)]
pub trait KeyedReturn {}
impl<T> KeyedReturn for Result<T, crate::error::ToolError> {}
pub const fn assert_keyed_return<R: KeyedReturn>() {}

/// Pins `form = X` and the handler's `Confirmed<Y>` to one type (however each is spelled).
pub const fn assert_same_form<Declared: SameForm<Taken>, Taken>() {}

#[diagnostic::on_unimplemented(
    message = "`form = {Self}` but the handler takes `Confirmed<{T}>`",
    label = "not the form the handler takes",
    note = "the human fills in the form the handler receives: name the same form in both places, or drop `form = ...`"
)]
pub trait SameForm<T> {}
impl<T> SameForm<T> for T {}

/// Pins a guarded tool's arguments to rmcp's `Parameters<T>` (by type, not by spelling)
/// with `T: ToolArgs`.
pub const fn assert_parameters<P: IsParameters<T>, T: crate::args::ToolArgs>() {}

#[diagnostic::on_unimplemented(
    message = "`{Self}` is not rmcp's `Parameters<{T}>`",
    label = "a guarded tool's arguments must be rmcp's `Parameters<_>`",
    note = "take `rmcp::handler::server::wrapper::Parameters<YourArgs>` with `#[derive(rmcp_guard::ToolArgs)]` on `YourArgs`"
)]
pub trait IsParameters<T> {}
impl<T> IsParameters<T> for rmcp::handler::server::wrapper::Parameters<T> {}

/// Pins every other parameter of a guarded tool to server-side context.
pub const fn assert_extractor<T: Extractor>() {}

/// Server-side context a guarded tool may take besides its arguments and the proof.
/// Nothing here lets the model's raw arguments or guard's confirmation state in.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a parameter of a guarded tool",
    label = "not `Parameters<YourArgs>` written out, the `Confirmed<_>` proof, or server-side context",
    note = "a guarded tool takes `Parameters<YourArgs>` (spelled out, not behind an alias, so guard can check every argument), the `Confirmed<YourForm>` proof, and server-side context: `RequestContext<RoleServer>`, `Peer<RoleServer>`, `Extensions`, `Extension<T>`, `RequestId`, guard's database handles. Raw arguments (`JsonObject`) and the confirmation round's `RequestState`/`InputResponses` belong to guard"
)]
pub trait Extractor {}
impl Extractor for rmcp::service::RequestContext<rmcp::RoleServer> {}
impl Extractor for rmcp::Peer<rmcp::RoleServer> {}
impl Extractor for rmcp::model::Extensions {}
impl<T> Extractor for rmcp::handler::server::common::Extension<T> {}
impl Extractor for rmcp::model::RequestId {}
#[cfg(feature = "sqlite")]
impl Extractor for crate::db::ReadDb {}
#[cfg(feature = "sqlite")]
impl Extractor for crate::db::WriteDb {}
#[cfg(feature = "postgres")]
impl Extractor for crate::db::PgReadDb {}
/// Hands the proof, locked as the payload its prepare's `Intent<P>` froze, to a confirm
/// taking `Approved<P>`; pins the two payload types to be the same. The intent is locked
/// as the prepare's type, so a mismatch is this one error, not also the recheck's.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub fn same_payload<Prepared, Confirmed>(
    approved: &mut crate::ops::Approved<Prepared>,
) -> &mut crate::ops::Approved<Confirmed>
where
    Prepared: SamePayload<Confirmed>,
{
    Prepared::same(approved)
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
#[diagnostic::on_unimplemented(
    message = "the confirm takes `Approved<{T}>` but its prepare returns `Intent<{Self}>`",
    label = "not the payload the prepare froze",
    note = "a confirm acts on exactly what its prepare stored and the user saw: use the same payload type in both"
)]
pub trait SamePayload<T>: Sized {
    fn same(approved: &mut crate::ops::Approved<Self>) -> &mut crate::ops::Approved<T>;
}
#[cfg(any(feature = "sqlite", feature = "postgres"))]
impl<T> SamePayload<T> for T {
    fn same(approved: &mut crate::ops::Approved<T>) -> &mut crate::ops::Approved<T> {
        approved
    }
}

/// The purge of a tool that declares an undo but no purge: nothing to make final.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub type NoPurge<S> = fn(&S, crate::undo::Window) -> std::future::Ready<Result<(), String>>;

/// Pins a reversible tool's handler result to [`IntoReversible`](crate::undo::IntoReversible),
/// at the handler's return type, so a tool that declares an undo and returns no undo data
/// is one error there.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub fn reversible<T: crate::undo::IntoReversible>(ran: T) -> T {
    ran
}
