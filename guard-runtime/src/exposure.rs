//! Which tools exist at all: an allowlist file that fails closed, and read-only mode.
//!
//! A server states its exposure explicitly: an allowlist file ([`Exposure::allowlist`],
//! or [`Exposure::from_env`], which is an error when no file is named), or every tool,
//! chosen in code ([`Exposure::all_tools`]). A guard with no exposure enables no tool.
//!
//! A tool that is not enabled is removed from the router, so `tools/list` omits it and
//! `tools/call` answers exactly as rmcp does for a name it never had (-32602). Both calls
//! leave a `guard::audit` event (`hidden_tool` or `unknown_tool`) with a trace id.
//!
//! The filtered router is built once per server type and allowlist generation and shared by
//! every call ([`exposed`](crate::exposed) with the router's function); a reload that changes
//! the listed tools starts a new generation, so the next call builds it again.
//!
//! The file is read without ever blocking or holding a lock: anything but a regular file
//! (a FIFO, a device, a directory) is refused as broken, at most [`MAX_ALLOWLIST_BYTES`] are
//! read, and a reload compares the content's SHA-256, so an edit that keeps the size and
//! restores the modification time is still seen.

pub use crate::allowlist::{
    ALLOWLIST_ENV, Exposure, ExposureError, MAX_ALLOWLIST_BYTES, READ_ONLY_ENV, read_only_from_env,
};
pub use crate::entry::{Exposed, Routes};
