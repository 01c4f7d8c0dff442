//! Who is calling, as guard's own tools and the flow's undo and grant steps ask it: a
//! canonical person, from the trusted context of the call rmcp dispatched, never from its
//! arguments.

use crate::{
    error::{Code, ToolError},
    guard::Guard,
    person::Person,
};

/// The caller as a canonical person, from trusted context only.
pub(crate) fn caller(
    guard: &Guard,
    request: &rmcp::service::RequestContext<rmcp::RoleServer>,
) -> Result<Person, ToolError> {
    let Some(operations) = guard.operations() else {
        return Err(ToolError::new(Code::Unavailable, no_store()));
    };
    let identity = operations.identity.identify(request)?;
    identity.person().map_err(|e| {
        ToolError::new(
            Code::PermissionDenied,
            format!("Nothing was changed: the caller's name is not usable ({e})."),
        )
    })
}

/// Why a server without an operation store cannot keep undo windows.
pub(crate) fn no_store() -> String {
    "Nothing was changed: this server keeps no undo windows (its guard has no operation store). The operator must configure Guard::with_operations.".into()
}
