//! Where a command reads the log: the store (`--db`, `--pg`) or an export (`--file`), read
//! once into memory. A pipe or a FIFO gives its bytes once, and a file read twice could
//! change between the reads, so every check of an export looks at the same bytes.

use rmcp_guard_log::{merkle::Hash, split_line};

use crate::{Args, store, store::Log};

/// The log a command reads.
pub(crate) enum Source {
    /// The operation store, opened read-only.
    Store(Log),
    /// The bytes of an export, as `export` writes them.
    Export(Vec<u8>),
}

impl Source {
    /// The export of `--file`, read now and only now, else the store of `--db` or `--pg`.
    pub(crate) async fn open(args: &Args<'_>) -> Result<Self, String> {
        match args.get("file") {
            Some(path) => std::fs::read(path)
                .map(Self::Export)
                .map_err(|e| format!("cannot read the export {path}: {e}")),
            None => store(args).await.map(Self::Store),
        }
    }

    /// The store, when the log is read from one.
    pub(crate) fn log(&self) -> Option<&Log> {
        match self {
            Self::Store(log) => Some(log),
            Self::Export(_) => None,
        }
    }

    /// The leaf hashes and entries, in order: check the log before trusting them.
    pub(crate) async fn entries(&self) -> Result<Vec<(Hash, String)>, String> {
        let split = |line: &[u8]| {
            split_line(line)
                .map(|(hash, entry)| (hash, String::from_utf8_lossy(&entry).into_owned()))
        };
        match self {
            Self::Export(bytes) => Ok(bytes
                .split(|&b| b == b'\n')
                .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
                .filter_map(split)
                .collect()),
            Self::Store(log) => Ok(log
                .records()
                .await?
                .iter()
                .filter_map(|r| split(r.line().as_bytes()))
                .collect()),
        }
    }
}
