//! What each safe-ops tool would do, as the human is shown it before anything runs.

use rmcp_guard::{
    Preview, ToolError,
    batch::{Batch, Item},
    sandbox::Lookup,
};

use crate::sandbox::Sandbox;

/// What deleting `path` would do: nothing if it is missing, else the file, its size and how
/// many other names it has. The target is the file's pin (its path relative to the root and a
/// digest of its identity: device, inode, size, modification and change times, links), so a
/// file swapped or rewritten between the question and the effect refuses the delete as
/// `STATE_CHANGED`, and the handler can remove exactly the file the human confirmed.
pub fn preview_delete(sandbox: &Sandbox, path: &str) -> Result<Preview, ToolError> {
    match sandbox.resolve(path)? {
        Lookup::Missing(path) => Ok(Preview::nothing(format!(
            "File not found, nothing to delete: {path}"
        ))),
        Lookup::File(file) => {
            // Whether it can be undone guard says itself, from the tool's declaration.
            let consequence = match file.other_names() {
                0 => String::new(),
                1 => " This file has 1 other name; deleting this name keeps the data.".to_owned(),
                n => format!(" This file has {n} other names; deleting this name keeps the data."),
            };
            // A grant the human opens covers deletes in this folder only, never below it.
            let scope = match file.path().folder() {
                Some(folder) => format!("files directly in folder {folder}/"),
                None => "files directly in the sandbox's top folder".to_owned(),
            };
            Ok(Preview::effect(
                file.pin().to_string(),
                format!(
                    "Delete file {} ({} bytes).{consequence}",
                    file.path(),
                    file.size()
                ),
            )
            .scope(scope))
        }
    }
}

/// The files `pattern` matches, each keyed by its path and carrying its pin, so a file
/// swapped or rewritten after the human picked it is skipped rather than deleted.
pub fn preview_delete_files(sandbox: &Sandbox, pattern: &str) -> Result<Batch, ToolError> {
    let mut batch = Batch::new(format!("`{pattern}`"), "Each picked file is deleted.");
    for file in sandbox.find(pattern)? {
        let title = format!("{} ({} bytes)", file.path(), file.size());
        batch = batch
            .item(Item::new(file.path().to_string(), title).with_state(file.pin().to_string()));
    }
    Ok(batch)
}

/// `deploy` deploys to staging only: production, in any spelling, is named to the tool
/// that asks two other people; anything else is an unknown environment.
pub(super) fn staging_only(service: &str, environment: &str) -> Result<Preview, ToolError> {
    let folded: String = environment
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect();
    if folded.starts_with("prod") {
        return Ok(Preview::nothing(format!(
            "Nothing was deployed: deploy does not deploy to production. A production deploy \
             must be approved by two people other than the requester: call deploy_production \
             with service `{service}`."
        )));
    }
    Err(ToolError::invalid_input(format!(
        "environment {environment:?} is not one deploy knows: leave it out or use `staging`; \
         for production call deploy_production"
    )))
}
