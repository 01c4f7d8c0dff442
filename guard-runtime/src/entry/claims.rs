//! Which tool names a server's guarded tools hold. rmcp's router keeps one route per name,
//! and adding a route, or adding two routers (`+`, `merge`), silently replaces an earlier
//! route of the same name: a plain `#[tool(name = "delete_file")]` in another
//! `#[tool_router]` would publish an unguarded `delete_file` in the guarded one's place.
//!
//! Every guarded tool (`#[destructive]`, a keyed `#[idempotent]`, `#[prepare]`,
//! `#[confirm]` and `get_operation_result`) builds its input schema through [`claim`], which
//! records that the server type's tool of that name is guarded and hands back the schema in
//! an allocation only that tool's route holds. Before a router is published, [`check`]
//! finds every claimed name whose route is another one, and the exposure then publishes no
//! tool at all: a guarded name is served by its guarded tool or not at all.

use std::{
    any::TypeId,
    collections::HashMap,
    sync::{Arc, LazyLock, Mutex},
};

use rmcp::{handler::server::router::tool::ToolRouter, model::JsonObject};

/// The schema each guarded tool's route carries, by server type and tool name.
type Claims = HashMap<(TypeId, &'static str), Arc<JsonObject>>;

static CLAIMS: LazyLock<Mutex<Claims>> = LazyLock::new(Mutex::default);

fn lock() -> std::sync::MutexGuard<'static, Claims> {
    CLAIMS.lock().unwrap_or_else(|p| p.into_inner())
}

/// `schema` for the guarded tool `tool` of the server `S`, in the allocation its routes share
/// (made on the first call; every router built later gets the same one).
pub fn claim<S: 'static>(tool: &'static str, schema: Arc<JsonObject>) -> Arc<JsonObject> {
    let mut claims = lock();
    let held = claims
        .entry((TypeId::of::<S>(), tool))
        .or_insert_with(|| Arc::new(JsonObject::clone(&schema)));
    Arc::clone(held)
}

/// The names a guarded tool of `S` claims whose route in `router` is another tool's, sorted;
/// the reason to publish nothing if any.
pub(crate) fn check<S: 'static>(router: &ToolRouter<S>) -> Result<(), String> {
    let server = TypeId::of::<S>();
    let mut taken: Vec<&str> = lock()
        .iter()
        .filter(|((of, _), _)| *of == server)
        .filter_map(|((_, tool), schema)| {
            let route = router.map.get(*tool)?;
            (!Arc::ptr_eq(&route.attr.input_schema, schema)).then_some(*tool)
        })
        .collect();
    if taken.is_empty() {
        return Ok(());
    }
    taken.sort_unstable();
    let names = taken.join(", ");
    Err(format!(
        "{names}: a guarded tool of this server and another tool are published under the same name, and rmcp's router keeps only the route added last, so the other tool would run unguarded in its place; rename one of them (a plain `#[tool(name = \"...\")]` in another `#[tool_router]` added with `+` or `merge` is the usual cause)"
    ))
}
