//! The witness's state file: per origin, the last checkpoint it cosigned, as JSON. It is
//! found by its canonical path, so a symlink to it or another spelling of its path is the
//! same state, and replaced atomically: a crash leaves the old state or the new one.
//!
//! Beside it, `<state>.cosigned` records the size the witness last cosigned per origin,
//! written after the state. A state older than the record (restored from a backup, replaced
//! by `{}`, copied from elsewhere) or missing is refused, so the witness never forgets what
//! it cosigned and cosigns a fork. The limit: whoever can replace both files together with
//! an older pair can roll the witness back; only storage the log's operator cannot write or
//! roll back closes that. A new state is made by [`init`] only, on the operator's word.

use std::{
    collections::BTreeMap,
    fs::File,
    io::Write,
    path::{Path, PathBuf},
};

use crate::{checkpoint::Checkpoint, note};

/// Per origin, the last checkpoint cosigned: its note, with the log's signature and the
/// witness's cosignature.
pub(super) type State = BTreeMap<String, String>;

/// Per origin, the size of the last checkpoint cosigned.
type Record = BTreeMap<String, u64>;

/// The canonical path of the state named `path`: the file itself with every symlink and
/// `..` resolved, or, when it does not exist yet, its canonical directory and its name.
pub(super) fn canonical(path: &Path) -> Result<PathBuf, String> {
    if let Ok(found) = std::fs::canonicalize(path) {
        return Ok(found);
    }
    let name = path.file_name().ok_or_else(|| {
        format!(
            "the witness state {} names no file: give a file path",
            path.display()
        )
    })?;
    let dir = match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(dir) => dir,
        None => Path::new("."),
    };
    let dir = std::fs::canonicalize(dir).map_err(|e| {
        format!(
            "cannot find the directory of the witness state {}: {e}; create it first",
            path.display()
        )
    })?;
    Ok(dir.join(name))
}

/// `<state>.cosigned`: the record beside the state at `canonical`.
fn record_path(canonical: &Path) -> PathBuf {
    let mut name = canonical.as_os_str().to_owned();
    name.push(".cosigned");
    PathBuf::from(name)
}

/// Creates an empty state at `canonical` (named `shown` by the operator) and its record,
/// refusing when either exists: a new state is a witness that has cosigned nothing.
pub(super) fn init(canonical: &Path, shown: &Path) -> Result<(), String> {
    let record = record_path(canonical);
    for existing in [shown, canonical, record.as_path()] {
        if existing.symlink_metadata().is_ok() {
            return Err(format!(
                "{} already exists: a witness's state is made once, and a new one would forget what it cosigned; start the witness on it, or give a new path for a new witness",
                existing.display()
            ));
        }
    }
    save(canonical, &State::new(), |_| Ok(()))?;
    save_record(canonical, &State::new())
}

/// Reads the state at `canonical` (named `shown` by the operator) and checks it against its
/// record: a state missing, unreadable, without its record or older than it is refused,
/// never taken as a fresh start, which would let the witness cosign a rolled-back log.
pub(super) fn load(canonical: &Path, shown: &Path) -> Result<State, String> {
    let record_at = record_path(canonical);
    let record: Option<Record> = match std::fs::read(&record_at) {
        Ok(bytes) => Some(serde_json::from_slice(&bytes).map_err(|e| {
            format!(
                "the witness's record {} is not readable ({e}); restore it with its state from the same backup",
                record_at.display()
            )
        })?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("cannot read {}: {e}", record_at.display())),
    };
    let state: State = match (std::fs::read(canonical), &record) {
        (Ok(bytes), _) => serde_json::from_slice(&bytes).map_err(|e| {
            format!(
                "the witness state {} is not readable ({e}); restore it from a backup: starting afresh would let this witness cosign a rolled-back log",
                shown.display()
            )
        })?,
        (Err(e), None) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!(
                "the witness state {} does not exist: for a new witness, create it with `guard-audit witness init --state {}`; for one that ran before, restore its state and {} from a backup",
                shown.display(),
                shown.display(),
                record_at.display()
            ));
        }
        (Err(e), Some(_)) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!(
                "the witness state {} is gone, but {} says this witness cosigned checkpoints: restore the state from a backup at least as new; a fresh state would let it cosign a fork of what it cosigned",
                shown.display(),
                record_at.display()
            ));
        }
        (Err(e), _) => return Err(format!("cannot read {}: {e}", shown.display())),
    };
    let Some(record) = record else {
        return Err(format!(
            "the witness state {} has no record beside it ({} is missing): it was copied or linked from elsewhere, or the record was deleted; run the witness on the state where it was initialised, or restore the record from the backup the state came from",
            shown.display(),
            record_at.display()
        ));
    };
    let held = sizes(&state);
    for (origin, size) in &record {
        let kept = held.get(origin).copied();
        if kept.is_none_or(|kept| kept < *size) {
            return Err(format!(
                "the witness state {} is older than what this witness cosigned: {} records of `{origin}`, per {}, but the state holds {}; it was replaced or restored from an older copy. Restore the newest state: this one would let the witness cosign a fork",
                shown.display(),
                size,
                record_at.display(),
                kept.map_or_else(|| "none".to_owned(), |k| format!("{k}"))
            ));
        }
    }
    Ok(state)
}

/// The size of each origin's checkpoint in `state` (one that does not parse counts as none,
/// and the caller refuses it).
fn sizes(state: &State) -> Record {
    state
        .iter()
        .filter_map(|(origin, text)| {
            let head = Checkpoint::parse_body(note::parse(text).ok()?.text).ok()?;
            Some((origin.clone(), head.size))
        })
        .collect()
}

/// Writes the record of `state` beside the state at `canonical`, after the state itself: a
/// crash between the two leaves a state newer than its record, which still starts.
pub(super) fn save_record(canonical: &Path, state: &State) -> Result<(), String> {
    let text = serde_json::to_string_pretty(&sizes(state)).map_err(|e| e.to_string())?;
    replace(&record_path(canonical), &text, |_| Ok(()))
}

/// Replaces the state file at `path` (canonical) with `state`, handing the new file to
/// `ready` (which locks it) before it is in place.
pub(super) fn save<R>(
    path: &Path,
    state: &State,
    ready: impl FnOnce(&File) -> Result<R, String>,
) -> Result<R, String> {
    let text = serde_json::to_string_pretty(state).map_err(|e| e.to_string())?;
    replace(path, &text, ready)
}

/// Replaces the file at `path` with `text`: written beside it, synced, handed to `ready`,
/// renamed over it, and the directory synced, so a crash leaves the old file or the new one.
fn replace<R>(
    path: &Path,
    text: &str,
    ready: impl FnOnce(&File) -> Result<R, String>,
) -> Result<R, String> {
    let dir = path.parent().unwrap_or(Path::new("/"));
    let temp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id()
    ));
    let placed = File::create(&temp)
        .and_then(|mut file| {
            file.write_all(text.as_bytes())?;
            file.sync_all()?;
            Ok(file)
        })
        .map_err(|e| e.to_string())
        .and_then(|file| ready(&file))
        .and_then(|r| {
            std::fs::rename(&temp, path)
                .map(|()| r)
                .map_err(|e| e.to_string())
        });
    let r = placed.map_err(|e| {
        let _ = std::fs::remove_file(&temp);
        format!("cannot save {}: {e}", path.display())
    })?;
    if let Ok(dir) = File::open(dir) {
        let _ = dir.sync_all();
    }
    Ok(r)
}
