//! A secret the human typed on the approval page (a password, a token), kept out of the model.
//!
//! [`Secret`] has no `Serialize` impl, so it cannot be written into a tool result, an MRTR
//! state or an audit record by accident: that is a compile error. `Debug` and `Display`
//! print `[redacted]`, so a log line that formats it shows nothing.

use std::fmt;

/// A value the human gave on the approval page for the handler alone. Read it with
/// [`Secret::expose`] where it is used (a deploy token handed to the deploy), and nowhere else.
pub struct Secret(String);

impl Secret {
    /// Only the approval page makes one, from what the human typed there.
    #[cfg_attr(not(feature = "approval"), allow(dead_code))]
    pub(crate) fn new(value: String) -> Self {
        Self(value)
    }

    /// The secret itself. Every call site is a place the secret leaves guard: keep them few.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

#[cfg(test)]
mod tests {
    use super::Secret;

    #[test]
    fn debug_and_display_redact() {
        let secret = Secret::new("hunter2-token".into());
        assert_eq!(format!("{secret:?}"), "Secret([redacted])");
        assert_eq!(format!("{secret}"), "[redacted]");
        assert_eq!(
            format!("{:#?}", Some(&secret)),
            "Some(\n    Secret([redacted]),\n)"
        );
        assert_eq!(secret.expose(), "hunter2-token");
    }
}
