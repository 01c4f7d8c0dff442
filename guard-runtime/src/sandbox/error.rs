//! Why the sandbox refused or failed, and how that reaches the model: a refusal is bad
//! input, a change since the human confirmed is `STATE_CHANGED`, and an operating-system
//! failure goes to the log.

use rustix::io::Errno;

use crate::error::{Code, ToolError};

/// Why the sandbox refused or failed. The message names paths relative to the root only.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SandboxError {
    kind: ErrorKind,
    message: String,
}

/// The kind of a [`SandboxError`], for mapping to the model's error codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The path is not acceptable (absolute, `..`, a symlink, not a regular file, …).
    Refused,
    /// The file is no longer the one that was resolved.
    Changed,
    /// What a restore would bring back changed or went away for good: no later restore
    /// can succeed.
    Lost,
    /// The operating system refused the operation (permissions, I/O).
    Failed,
}

impl SandboxError {
    pub(super) fn refused(message: impl Into<String>) -> Self {
        Self {
            kind: ErrorKind::Refused,
            message: message.into(),
        }
    }

    pub(super) fn changed(message: impl Into<String>) -> Self {
        Self {
            kind: ErrorKind::Changed,
            message: message.into(),
        }
    }

    pub(super) fn lost(message: impl Into<String>) -> Self {
        Self {
            kind: ErrorKind::Lost,
            message: message.into(),
        }
    }

    /// `action` on `path` (a path below the root, as the human read it) failed with `errno`.
    pub(super) fn failed(path: &dyn std::fmt::Display, action: &str, errno: Errno) -> Self {
        Self {
            kind: ErrorKind::Failed,
            message: format!("could not {action} `{path}`: {errno}"),
        }
    }

    /// What kind of refusal or failure.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// What happened, with the path relative to the root.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// `Refused` is bad input (`INVALID_INPUT`), `Changed` is `STATE_CHANGED`, `Lost` is
/// `UNDO_EXPIRED` (an undo that can never succeed ends its window); an operating system
/// failure is logged and the model gets a trace id.
impl From<SandboxError> for ToolError {
    fn from(error: SandboxError) -> Self {
        match error.kind {
            ErrorKind::Refused => ToolError::invalid_input(error.message),
            ErrorKind::Changed => ToolError::new(Code::StateChanged, error.message),
            ErrorKind::Lost => ToolError::new(Code::UndoExpired, error.message),
            ErrorKind::Failed => ToolError::internal(error.message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::path::RelativePath;

    #[test]
    fn errors_map_to_stable_codes() {
        let refused: ToolError = SandboxError::refused("x").into();
        assert_eq!(refused.code(), Code::InvalidInput);
        let changed: ToolError = SandboxError::changed("x").into();
        assert_eq!(changed.code(), Code::StateChanged);
        let lost: ToolError = SandboxError::lost("x").into();
        assert_eq!(lost.code(), Code::UndoExpired);
        let path = RelativePath::parse("a").expect("parses");
        let failed: ToolError = SandboxError::failed(&path, "delete", Errno::ACCESS).into();
        assert_eq!(failed.code(), Code::Internal);
        assert!(
            !failed.message().contains("`a`"),
            "the detail goes to the log"
        );
    }
}
