//! [`Sandbox::find`]: the regular files a glob names, found through the root handle one
//! directory at a time, never following a symlink and never leaving the root.

use std::os::fd::{AsFd, OwnedFd};

use rustix::{
    fs::{self, AtFlags, Dir, Mode, OFlags},
    io::Errno,
};

use super::{
    error::SandboxError,
    identity::{Entry, regular_file},
    path::{RelativePath, hidden},
    root::Sandbox,
};

impl Sandbox {
    /// The regular files `pattern` (relative to the root) matches, sorted by path. In each
    /// component `*` matches any run of characters and `?` one character, neither matching
    /// a leading `.`; other characters match themselves. The pattern is checked like a path
    /// (an absolute start only within the root, no `..`, no invisible characters). Symlinks are never followed,
    /// neither to directories on the way nor as matches; directories and other non-regular
    /// entries are not matches.
    pub fn find(&self, pattern: &str) -> Result<Vec<Entry>, SandboxError> {
        let pattern = RelativePath::parse_in(pattern, &self.names)?;
        if pattern.parts.iter().any(|p| p.contains("**")) {
            return Err(SandboxError::refused(format!(
                "`{pattern}` uses `**`, which is not supported; write one `*` per directory \
                 level (for example `logs/*/*.log`)."
            )));
        }
        let root = fs::openat(self.root.as_fd(), ".", list_flags(), Mode::empty())
            .map_err(|errno| SandboxError::failed(&pattern, "open the sandbox root for", errno))?;
        let mut found = Vec::new();
        walk(&root, &[], &pattern.parts, &pattern, &mut found)?;
        found.sort_by_key(|e: &Entry| e.path.to_string());
        Ok(found)
    }
}

/// Matches `rest` beneath `dir`, which is the directory `at` (components below the root).
fn walk(
    dir: &OwnedFd,
    at: &[String],
    rest: &[String],
    pattern: &RelativePath,
    found: &mut Vec<Entry>,
) -> Result<(), SandboxError> {
    let (part, below) = rest.split_first().expect("a pattern has a last component");
    let names = if is_wild(part) {
        list(dir, pattern)?
            .into_iter()
            // The trash at the root is no match, whatever the glob.
            .filter(|name| !(at.is_empty() && name == super::path::TRASH))
            .filter(|name| matches(part, name))
            .collect()
    } else {
        vec![part.clone()]
    };
    for name in names {
        let mut path = at.to_vec();
        path.push(name.clone());
        if below.is_empty() {
            let stat = match fs::statat(dir, name.as_str(), AtFlags::SYMLINK_NOFOLLOW) {
                Ok(stat) => stat,
                Err(Errno::NOENT) => continue,
                Err(errno) => {
                    return Err(SandboxError::failed(pattern, "look up a match of", errno));
                }
            };
            let path = RelativePath { parts: path };
            // A symlink, a directory or a device is not a match.
            if let Ok(identity) = regular_file(&path, &stat) {
                found.push(Entry { path, identity });
            }
            continue;
        }
        // `O_NOFOLLOW | O_DIRECTORY`: a symlink or a file on the way is no way down.
        match fs::openat(dir, name.as_str(), list_flags(), Mode::empty()) {
            Ok(next) => walk(&next, &path, below, pattern, found)?,
            Err(Errno::NOENT | Errno::NOTDIR | Errno::LOOP) => {}
            Err(errno) => {
                return Err(SandboxError::failed(pattern, "open a directory for", errno));
            }
        }
    }
    Ok(())
}

/// Directories opened to be listed: readable, never through a symlink.
fn list_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

/// The names in `dir`, without `.` and `..`; names that are not UTF-8 or hold invisible
/// characters cannot be shown to the human as they are, so they are left out.
fn list(dir: &OwnedFd, pattern: &RelativePath) -> Result<Vec<String>, SandboxError> {
    let failed = |errno| SandboxError::failed(pattern, "list a directory for", errno);
    let mut names = Vec::new();
    for entry in Dir::read_from(dir).map_err(failed)? {
        let entry = entry.map_err(failed)?;
        let Ok(name) = entry.file_name().to_str() else {
            continue;
        };
        if name != "." && name != ".." && !name.chars().any(hidden) {
            names.push(name.to_owned());
        }
    }
    Ok(names)
}

fn is_wild(part: &str) -> bool {
    part.contains(['*', '?'])
}

/// Whether `name` matches the component `pattern` (`*`, `?`, literal characters); a
/// leading `.` in `name` is matched only by a literal `.`.
fn matches(pattern: &str, name: &str) -> bool {
    if name.starts_with('.') && !pattern.starts_with('.') {
        return false;
    }
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    // Classic wildcard matching with one backtrack point for the last `*`.
    let (mut pi, mut ni, mut star, mut mark) = (0, 0, None, 0);
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ni;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    #[test]
    fn components_match_with_star_and_question_mark() {
        for (pattern, name) in [
            ("*.log", "a.log"),
            ("*", "a"),
            ("a*b*c", "abc"),
            ("a*b*c", "aXbYbZc"),
            ("?.txt", "é.txt"),
            (".*", ".hidden"),
            ("exact", "exact"),
        ] {
            assert!(matches(pattern, name), "{pattern} ~ {name}");
        }
        for (pattern, name) in [
            ("*.log", "a.log.gz"),
            ("*", ".hidden"),
            ("?", ".h"),
            ("?.txt", "ab.txt"),
            ("a*b*c", "acb"),
            ("exact", "Exact"),
        ] {
            assert!(!matches(pattern, name), "{pattern} !~ {name}");
        }
    }

    /// `root/logs/{a,b}.log`, `root/logs/.hidden.log`, `root/logs/keep.txt`,
    /// `root/logs/sub/c.log`, a symlinked file and a symlinked directory pointing outside.
    fn world() -> (tempfile::TempDir, Sandbox) {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().join("root");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(root.join("logs/sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        for file in [
            "logs/a.log",
            "logs/b.log",
            "logs/.hidden.log",
            "logs/keep.txt",
            "logs/sub/c.log",
        ] {
            std::fs::write(root.join(file), file).unwrap();
        }
        std::fs::write(outside.join("x.log"), "outside").unwrap();
        symlink(outside.join("x.log"), root.join("logs/link.log")).unwrap();
        symlink(&outside, root.join("away")).unwrap();
        std::fs::create_dir(root.join("logs/dir.log")).unwrap();
        let sandbox = Sandbox::open(&root).unwrap();
        (dir, sandbox)
    }

    fn paths(found: &[Entry]) -> Vec<String> {
        found.iter().map(|e| e.path().to_string()).collect()
    }

    #[test]
    fn finds_regular_files_only_never_through_symlinks() {
        let (_dir, sandbox) = world();
        assert_eq!(
            paths(&sandbox.find("logs/*.log").unwrap()),
            ["logs/a.log", "logs/b.log"]
        );
        assert_eq!(
            paths(&sandbox.find("*/*.log").unwrap()),
            ["logs/a.log", "logs/b.log"]
        );
        assert_eq!(
            paths(&sandbox.find("logs/*/*.log").unwrap()),
            ["logs/sub/c.log"]
        );
        assert_eq!(
            paths(&sandbox.find("away/*.log").unwrap()),
            Vec::<String>::new()
        );
        assert_eq!(
            paths(&sandbox.find("logs/link.log").unwrap()),
            Vec::<String>::new()
        );
        assert_eq!(
            paths(&sandbox.find("logs/.*.log").unwrap()),
            ["logs/.hidden.log"]
        );
        assert_eq!(
            paths(&sandbox.find("nowhere/*.log").unwrap()),
            Vec::<String>::new()
        );
    }

    #[test]
    fn found_entries_carry_pins_the_remover_accepts() {
        let (_dir, sandbox) = world();
        let found = sandbox.find("logs/a.log").unwrap();
        assert_eq!(paths(&found), ["logs/a.log"]);
        sandbox.remove(&found[0].pin()).unwrap();
        assert!(sandbox.find("logs/a.log").unwrap().is_empty());
    }

    #[test]
    fn patterns_are_checked_like_paths() {
        let (_dir, sandbox) = world();
        for (pattern, needle) in [
            ("../*", "`..`"),
            ("/etc/*", "not inside the sandbox"),
            ("logs/**/*.log", "`**`"),
            ("logs/\u{200B}*.log", "invisible"),
            ("", "empty"),
        ] {
            let error = sandbox.find(pattern).unwrap_err();
            assert!(error.message().contains(needle), "{pattern:?}: {error}");
        }
    }
}
