//! A directory a tool may change, opened once and acted on only through that handle.
//!
//! A path string is walked again on every `std::fs` call, so a check on a path and an effect
//! on the same path can land on two different files: a local process that swaps a directory
//! for a symlink between the two gets the effect applied outside the root. [`Sandbox`] closes
//! that gap. It holds the root as an open directory; every lookup goes beneath it with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` (a component-by-component `openat` with
//! `O_NOFOLLOW` where `openat2` is missing), and the effect is an `unlinkat` relative to the
//! parent directory that was just opened, after an `fstatat` of the entry (without following
//! symlinks) found the very file the human was shown.
//!
//! The API keeps the two halves together: [`Sandbox::resolve`] returns an [`Entry`] with the
//! file's [`Identity`] (device, inode, size, modification and change times, link count), and
//! [`Sandbox::remove`] takes the [`Pin`] of such an entry and removes the file only while it
//! is still that identity. A pin's text is a preview's target, so it travels through the
//! confirmation unchanged and any swap between question and effect changes the fingerprint.
//!
//! Messages name paths relative to the root only; the root's own location never appears. A
//! caller may name a file by its absolute path when that path begins with the root's name;
//! the file is then reached through the handle by the rest, and shown by that rest.
//!
//! ```no_run
//! use rmcp_guard::sandbox::{Lookup, Sandbox};
//!
//! let files = Sandbox::create("/srv/files")?;
//! if let Lookup::File(entry) = files.resolve("reports/old.log")? {
//!     // Show `entry` to the human, carry `entry.pin()` as the preview's target, then:
//!     files.remove(&entry.pin())?;
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// One role per file: `root` holds the root open and reaches paths beneath it through
// directory handles; `path` checks the paths a caller names; `identity` tells one file from
// another and pins it for the re-check; `remove` removes a pinned file; `read` reads a file's contents through its directory's handle; `find` lists the
// files a glob names; `trash` keeps files an undo may restore; `error` says why something was refused or failed.
mod error;
mod find;
mod identity;
mod path;
mod read;
mod remove;
mod root;
mod trash;
#[cfg(test)]
mod world;

pub use error::{ErrorKind, SandboxError};
pub use identity::{Entry, Identity, Pin};
pub use path::{RelativePath, TRASH};
pub use root::{Lookup, Sandbox};
pub use trash::Trashed;
