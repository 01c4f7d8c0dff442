//! Canonical JSON (RFC 8785) and the digests guard keeps, from the log format's crate: the
//! arguments a request state is sealed over and the entries of the audit log are written
//! the same way.

#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) use rmcp_guard_log::canonical::canonical_payload;
pub(crate) use rmcp_guard_log::canonical::hex;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) use rmcp_guard_log::canonical::sha256_hex;
pub use rmcp_guard_log::canonical::{NotCanonical, canonical_json};
