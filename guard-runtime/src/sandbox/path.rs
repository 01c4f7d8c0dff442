//! The paths a caller names: checked and normalised before any file is touched, so a
//! message can quote them and a walk never meets `..`, an absolute start or a character the
//! human could not see.

use std::fmt;

use super::error::SandboxError;

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
        if let Some((index, c)) = requested.char_indices().find(|&(_, c)| hidden(c)) {
            let at = requested[..index].chars().count() + 1;
            let what = if c == '\0' {
                "a NUL character".to_owned()
            } else {
                format!("an invisible or control character (U+{:04X})", c as u32)
            };
            return Err(SandboxError::refused(format!(
                "the path contains {what} at character {at}; name the file with visible \
                 characters only."
            )));
        }
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
        if parts[0] == super::trash::TRASH {
            return Err(SandboxError::refused(format!(
                "`{}` is the sandbox's trash: it keeps deleted files while they can be undone, and no tool reads, lists or deletes in it. Restore a deleted file with undo.",
                super::trash::TRASH
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
        world.refused(&absolute, "absolute");
        let inside_absolute = world.root.join("top.txt").display().to_string();
        world.refused(&inside_absolute, "absolute");
        world.refused("//top.txt", "absolute");
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
}
