//! Which tool names a router's guarded tools hold. rmcp's router keeps one route per name,
//! and adding a route, or adding two routers (`+`, `merge`), silently replaces an earlier
//! route of the same name: a plain `#[tool(name = "delete_file")]` in another
//! `#[tool_router]` would publish an unguarded `delete_file` in the guarded one's place.
//!
//! Every guarded tool (`#[destructive]`, `#[ask]`, a disclosing `#[read_only]`, a keyed
//! `#[idempotent]`, `#[prepare]`, `#[confirm]` and `get_operation_result`) builds its input
//! schema through [`claim`], which marks it. guard's `#[tool_router]` builds the router
//! through [`claimed`]: each marked route gets its schema back unmarked, in an allocation of
//! its own, and beside it a claim, a disabled route under a reserved name that holds that
//! same allocation. The claims are routes, so they travel with the router: a clone, `+` and
//! `merge` carry them as they carry the tools, and no other route can hold the allocation.
//! Before a router is published, [`vouched`] finds every claim whose name another route
//! now serves, and every marked route no claim vouches for (one rmcp's own `#[tool_router]`
//! built), and the exposure then publishes no tool at all: a guarded name is served by its
//! guarded tool or not at all. The hidden routes of the tools' undos and deferred runs (see
//! `hidden`) are disabled routes under reserved names too, and travel the same way.

use std::{borrow::Cow, sync::Arc};

use rmcp::{
    handler::server::router::tool::{ToolRoute, ToolRouter},
    model::{JsonObject, Tool},
};

/// The key a guarded tool's schema carries until its router claims it.
const MARK: &str = "x-rmcp-guard-claim";

/// How a claim's route is named: this, then the guarded tool's name. Not a name a client
/// can call: the route is disabled, and the exposure takes it out before publishing.
const CLAIM: &str = "rmcp-guard:claim/";

/// `schema`, marked as a guarded tool's (the expansion builds every guarded tool's input
/// schema through it).
pub fn claim(schema: Arc<JsonObject>) -> Arc<JsonObject> {
    let mut schema = Arc::unwrap_or_clone(schema);
    schema.insert(MARK.into(), serde_json::Value::Bool(true));
    Arc::new(schema)
}

fn marked(schema: &JsonObject) -> bool {
    schema.contains_key(MARK)
}

/// `router` (what rmcp's `#[tool_router]` built for one impl) with every guarded route
/// claimed: its schema unmarked in a new allocation, and a disabled claim route holding
/// that allocation. guard's `#[tool_router]` calls it where the router is built.
pub fn claimed<S: Send + Sync + 'static>(mut router: ToolRouter<S>) -> ToolRouter<S> {
    let guarded: Vec<Cow<'static, str>> = router
        .map
        .iter()
        .filter(|(_, route)| marked(&route.attr.input_schema))
        .map(|(name, _)| name.clone())
        .collect();
    for name in guarded {
        let Some(route) = router.map.get_mut(&name) else {
            continue;
        };
        let mut schema = JsonObject::clone(&route.attr.input_schema);
        schema.remove(MARK);
        let schema = Arc::new(schema);
        route.attr.input_schema = Arc::clone(&schema);
        let claim: Cow<'static, str> = format!("{CLAIM}{name}").into();
        let tool = Tool::new(claim.clone(), "", schema);
        // Disabled, so rmcp neither lists nor calls it; inserted past rmcp's name check,
        // which would warn about a name no client is meant to see.
        let route = ToolRoute::new_dyn(tool, |_| {
            Box::pin(async { Err(rmcp::ErrorData::invalid_params("tool not found", None)) })
        });
        router.map.insert(claim.clone(), route);
        router.disable_route(claim);
    }
    router
}

/// `router` without its claims, if every claimed name is still served by the route that
/// claimed it and every guarded route is claimed; otherwise the reason to publish nothing.
pub(crate) fn vouched<S: Send + Sync + 'static>(
    mut router: ToolRouter<S>,
) -> Result<ToolRouter<S>, String> {
    let claims: Vec<(String, Arc<JsonObject>)> = router
        .map
        .iter()
        .filter_map(|(name, route)| {
            let tool = name.strip_prefix(CLAIM)?;
            Some((tool.to_owned(), Arc::clone(&route.attr.input_schema)))
        })
        .collect();
    let mut taken: Vec<&str> = claims
        .iter()
        .filter(|(tool, schema)| {
            router
                .map
                .get(tool.as_str())
                .is_some_and(|route| !Arc::ptr_eq(&route.attr.input_schema, schema))
        })
        .map(|(tool, _)| tool.as_str())
        .collect();
    if !taken.is_empty() {
        taken.sort_unstable();
        let names = taken.join(", ");
        return Err(format!(
            "{names}: a guarded tool of this server and another tool are published under the same name, and rmcp's router keeps only the route added last, so the other tool would run unguarded in its place; rename one of them (a plain `#[tool(name = \"...\")]` in another `#[tool_router]` added with `+` or `merge` is the usual cause)"
        ));
    }
    let mut unclaimed: Vec<&str> = router
        .map
        .iter()
        .filter(|(_, route)| marked(&route.attr.input_schema))
        .map(|(name, _)| name.as_ref())
        .collect();
    if !unclaimed.is_empty() {
        unclaimed.sort_unstable();
        let names = unclaimed.join(", ");
        return Err(format!(
            "{names}: these guarded tools are in a router rmcp's own `#[tool_router]` built, so guard cannot tell whether another tool takes their names; put `rmcp_guard::tool_router` on their impl in place of rmcp's (`use rmcp_guard::tool_router;`)"
        ));
    }
    for (tool, _) in claims {
        let claim = format!("{CLAIM}{tool}");
        router.map.remove(claim.as_str());
        router.enable_route(&claim);
    }
    Ok(router)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Server;

    fn route(name: &'static str, schema: Arc<JsonObject>) -> ToolRoute<Server> {
        ToolRoute::new_dyn(Tool::new(name, "", schema), |_| {
            Box::pin(async { Err(rmcp::ErrorData::internal_error("not called", None)) })
        })
    }

    fn guarded() -> ToolRouter<Server> {
        let schema = claim(Arc::new(JsonObject::new()));
        claimed(ToolRouter::new().with_route(route("delete_file", schema)))
    }

    fn plain() -> ToolRouter<Server> {
        ToolRouter::new().with_route(route("delete_file", Arc::new(JsonObject::new())))
    }

    #[test]
    fn a_claimed_router_is_published_unmarked_and_without_its_claims() {
        let router = vouched(guarded().clone()).expect("vouched");
        let names: Vec<_> = router.map.keys().map(|n| n.to_string()).collect();
        assert_eq!(names, ["delete_file"]);
        assert!(!marked(&router.map["delete_file"].attr.input_schema));
        assert_eq!(guarded().list_all().len(), 1, "the claim is never listed");
    }

    #[test]
    fn a_plain_route_added_after_a_guarded_one_is_refused() {
        let reason = vouched(guarded() + plain()).expect_err("refused");
        assert!(reason.starts_with("delete_file: "), "{reason}");
        assert!(vouched(plain() + guarded()).is_ok());
        let mut replaced = guarded();
        replaced.remove_route("delete_file");
        replaced.add_route(route("delete_file", Arc::new(JsonObject::new())));
        assert!(vouched(replaced).is_err(), "a route replaced by hand");
    }

    #[test]
    fn a_guarded_route_rmcps_router_built_is_refused() {
        let schema = claim(Arc::new(JsonObject::new()));
        let unclaimed = ToolRouter::new().with_route(route("delete_file", schema));
        let reason = vouched(unclaimed).expect_err("refused");
        assert!(reason.contains("rmcp_guard::tool_router"), "{reason}");
    }
}
