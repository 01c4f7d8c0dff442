//! The paths a caller names: checked and normalised before any file is touched, so a
//! message can quote them and a walk never meets `..`, an absolute start or a character the
//! human could not see.

use std::{
    fmt,
    path::{Component, Path},
};

use super::error::SandboxError;

/// The name of the trash directory at the root: no path may name it (see `trash`).
pub const TRASH: &str = ".guard-trash";

/// A path inside the root: plain names joined by `/`, with no `..`, no absolute start and no
/// invisible characters. `.` and empty components are dropped, so `./a//b` is `a/b`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RelativePath {
    pub(super) parts: Vec<String>,
}

/// The longest name and path the kernel accepts (`NAME_MAX`, `PATH_MAX` less the NUL).
const NAME_MAX: usize = 255;
const PATH_MAX: usize = 4095;

impl RelativePath {
    /// Checks and normalises a path the caller gave. The messages quote the caller's own
    /// text only when it is printable and relative.
    pub fn parse(requested: &str) -> Result<Self, SandboxError> {
        if requested.trim().is_empty() {
            return Err(SandboxError::refused(
                "the path is empty; name a file inside the sandbox, relative to its root (for \
                 example `reports/old.log`).",
            ));
        }
        visible(requested)?;
        if requested.starts_with('/') {
            return Err(SandboxError::refused(
                "absolute paths are not accepted; name the file relative to the sandbox root \
                 (for example `reports/old.log`).",
            ));
        }
        let mut parts = Vec::new();
        for part in requested.split('/') {
            match part {
                "" | "." => {}
                long if long.len() > NAME_MAX => {
                    return Err(SandboxError::refused(format!(
                        "a name in the path is {} bytes long; file names are at most {NAME_MAX} \
                         bytes.",
                        long.len()
                    )));
                }
                ".." => {
                    return Err(SandboxError::refused(format!(
                        "`{requested}` contains `..`; name the file by its path inside the \
                         sandbox root, without `..`."
                    )));
                }
                name => parts.push(name.to_owned()),
            }
        }
        if parts.is_empty() {
            return Err(SandboxError::refused(format!(
                "`{requested}` names the sandbox root itself, not a file in it."
            )));
        }
        if parts[0] == TRASH {
            return Err(SandboxError::refused(format!(
                "`{}` is the sandbox's trash: it keeps deleted files while they can be undone, and no tool reads, lists or deletes in it. Restore a deleted file with undo.",
                TRASH
            )));
        }
        let path = Self { parts };
        if path.to_string().len() > PATH_MAX {
            return Err(SandboxError::refused(format!(
                "the path is longer than {PATH_MAX} bytes; name a file with a shorter path."
            )));
        }
        Ok(path)
    }

    /// Like [`parse`](Self::parse), and an absolute path is taken too when it begins with one
    /// of the root's names: the rest is the path inside the root. One that does not is
    /// refused without saying where the root is.
    pub(super) fn parse_in(requested: &str, root: &RootNames) -> Result<Self, SandboxError> {
        if !requested.starts_with('/') {
            return Self::parse(requested);
        }
        visible(requested)?;
        match root.strip(requested) {
            Some(rest) if rest.is_empty() => Err(SandboxError::refused(
                "the absolute path names the sandbox root itself, not a file in it.",
            )),
            Some(rest) => Self::parse(&rest),
            None => Err(SandboxError::refused(
                "this absolute path is not inside the sandbox, so it is not accepted; name a \
                 file inside the sandbox, relative to its root (for example `reports/old.log`).",
            )),
        }
    }

    /// The folder the file is directly in, normalised as the path is (`reports/2026`), or
    /// `None` for a file at the root: what a grant's scope over one folder names.
    pub fn folder(&self) -> Option<String> {
        let dirs = self.dirs();
        (!dirs.is_empty()).then(|| dirs.join("/"))
    }

    pub(super) fn dirs(&self) -> &[String] {
        &self.parts[..self.parts.len() - 1]
    }

    pub(super) fn leaf(&self) -> &str {
        &self.parts[self.parts.len() - 1]
    }
}

impl fmt::Display for RelativePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.parts.join("/"))
    }
}

/// Refuses a path with a character the human could not see, saying where it is.
fn visible(requested: &str) -> Result<(), SandboxError> {
    match requested.char_indices().find(|&(_, c)| hidden(c)) {
        None => Ok(()),
        Some((index, c)) => {
            let at = requested[..index].chars().count() + 1;
            let what = if c == '\0' {
                "a NUL character".to_owned()
            } else {
                format!("an invisible or control character (U+{:04X})", c as u32)
            };
            Err(SandboxError::refused(format!(
                "the path contains {what} at character {at}; name the file with visible \
                 characters only."
            )))
        }
    }
}

/// The names the root had when it was opened, as absolute paths split into components: as
/// the operator spelled it and as the kernel resolved it (symlinks on the way followed
/// then, once). They only ever shorten an absolute path a caller gives to the part inside
/// the root, which is then reached through the root's handle like any relative path.
#[derive(Debug, Clone, Default)]
pub(super) struct RootNames(Vec<Vec<String>>);

impl RootNames {
    pub(super) fn of(root: &Path) -> Self {
        let mut names: Vec<Vec<String>> = Vec::new();
        let spelled = std::path::absolute(root).ok();
        let resolved = std::fs::canonicalize(root).ok();
        for name in [spelled, resolved].into_iter().flatten() {
            if let Some(parts) = plain_parts(&name)
                && !names.contains(&parts)
            {
                names.push(parts);
            }
        }
        Self(names)
    }

    /// The rest of `requested` after the longest root name it begins with, compared
    /// component by component (`/srv/files2` does not begin with `/srv/files`).
    fn strip(&self, requested: &str) -> Option<String> {
        let parts: Vec<&str> = requested
            .split('/')
            .filter(|p| !p.is_empty() && *p != ".")
            .collect();
        self.0
            .iter()
            .filter(|name| {
                name.len() <= parts.len() && name.iter().zip(&parts).all(|(a, b)| a == b)
            })
            .max_by_key(|name| name.len())
            .map(|name| parts[name.len()..].join("/"))
    }
}

/// An absolute path's names, or `None` if it has `..` or a name that is not UTF-8 (no
/// caller's string could match it).
fn plain_parts(path: &Path) -> Option<Vec<String>> {
    let mut parts = Vec::new();
    for component in path.components() {
        match component {
            Component::RootDir | Component::CurDir => {}
            Component::Normal(name) => parts.push(name.to_str()?.to_owned()),
            Component::ParentDir | Component::Prefix(_) => return None,
        }
    }
    Some(parts)
}

/// Characters a human cannot see in a path, or cannot tell from a plain one: controls
/// (NUL included), format characters (zero-width, bidirectional overrides, BOM, tags) and
/// spaces other than U+0020.
pub(super) fn hidden(c: char) -> bool {
    c.is_control()
        || (c.is_whitespace() && c != ' ')
        || matches!(
            c,
            '\u{00AD}'
                | '\u{034F}'
                | '\u{061C}'
                | '\u{115F}'
                | '\u{1160}'
                | '\u{17B4}'
                | '\u{17B5}'
                | '\u{180B}'..='\u{180F}'
                | '\u{200B}'..='\u{200F}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2060}'..='\u{206F}'
                | '\u{3164}'
                | '\u{FE00}'..='\u{FE0F}'
                | '\u{FEFF}'
                | '\u{FFA0}'
                | '\u{FFF9}'..='\u{FFFB}'
                | '\u{1D173}'..='\u{1D17A}'
                | '\u{E0000}'..='\u{E0FFF}'
        )
}

#[cfg(test)]
mod tests {
    use crate::sandbox::world::World;

    #[test]
    fn bad_spellings_are_refused_without_naming_the_root() {
        let world = World::new();
        world.refused("", "empty");
        world.refused("  ", "empty");
        world.refused(".", "root itself");
        world.refused("./", "root itself");
        world.refused("..", "`..`");
        world.refused("../outside/victim", "`..`");
        world.refused("dir/../../outside/victim", "`..`");
        world.refused("dir/..", "`..`");
        let absolute = world.outside.join("victim").display().to_string();
        world.refused(&absolute, "not inside the sandbox");
        world.refused("//top.txt", "not inside the sandbox");
        world.refused("/etc/passwd", "not inside the sandbox");
        world.refused("top.txt\0", "NUL character at character 8");
        world.refused("dir/victim\0/../../x", "NUL");
        world.refused("top\u{200B}.txt", "U+200B");
        world.refused("\u{202E}txt.pot", "U+202E");
        world.refused("top.txt\u{FEFF}", "U+FEFF");
        world.refused("top\u{00A0}txt", "U+00A0");
        world.refused("top\ntxt", "U+000A");
        world.refused("top\u{E0041}.txt", "U+E0041");
        world.refused(&"a".repeat(256), "at most 255");
        world.refused(&["d"; 2100].join("/"), "longer than 4095");
        world.outside_intact();
    }

    #[test]
    fn an_absolute_path_beneath_the_root_is_read_as_the_path_inside_it() {
        let world = World::new();
        let root = world.root.display().to_string();
        for spelled in [format!("{root}/top.txt"), format!("{root}//./top.txt")] {
            assert_eq!(world.entry(&spelled).path().to_string(), "top.txt");
        }
        assert_eq!(
            world
                .entry(&format!("{root}/dir/victim"))
                .path()
                .to_string(),
            "dir/victim"
        );
        let found = world.sandbox.find(&format!("{root}/dir/*")).expect("finds");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].path().to_string(), "dir/victim");
    }

    #[test]
    fn an_absolute_path_near_the_root_is_still_refused() {
        let world = World::new();
        let root = world.root.display().to_string();
        std::fs::create_dir(world.base.join("root2")).expect("sibling");
        std::fs::write(world.base.join("root2/top.txt"), "sibling\n").expect("sibling file");
        // A sibling whose name begins with the root's, the root itself, a way out after
        // the root's name, a way in before it, and a hidden character.
        world.refused(&format!("{root}2/top.txt"), "not inside the sandbox");
        world.refused(&root, "sandbox root itself");
        world.refused(&format!("{root}/"), "sandbox root itself");
        world.refused(&format!("{root}/../outside/victim"), "`..`");
        world.refused(&format!("{root}/dir/../../outside/victim"), "`..`");
        let around = format!("{}/outside/../root/top.txt", world.base.display());
        world.refused(&around, "not inside the sandbox");
        world.refused(&format!("{root}/top\u{200B}.txt"), "U+200B");
        world.refused(&format!("{root}\u{200B}/top.txt"), "U+200B");
        world.outside_intact();
    }

    #[test]
    fn the_root_opened_through_a_symlink_answers_to_both_names() {
        let world = World::new();
        let alias = world.base.join("alias");
        std::os::unix::fs::symlink(&world.root, &alias).expect("alias");
        let sandbox = crate::sandbox::Sandbox::open(&alias).expect("opens through the alias");
        for name in [&alias, &world.root] {
            let absolute = format!("{}/dir/victim", name.display());
            match sandbox.resolve(&absolute) {
                Ok(crate::sandbox::Lookup::File(entry)) => {
                    assert_eq!(entry.path().to_string(), "dir/victim")
                }
                other => panic!("{absolute}: {other:?}"),
            }
        }
        // A symlink inside the root is still a symlink, whatever the spelling.
        std::os::unix::fs::symlink(&world.outside, world.root.join("escape")).expect("escape");
        world.refused(
            &format!("{}/escape/victim", world.root.display()),
            "symbolic link",
        );
        world.outside_intact();
    }
}
