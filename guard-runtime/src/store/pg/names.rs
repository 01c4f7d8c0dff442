//! The names guard writes into the SQL it renders for an administrator to run: only names
//! and types that need no quoting pass, so nothing a deployment passes can end a statement
//! or start another.

use crate::store::sql::StoreError;

/// A name PostgreSQL reads the same quoted or not: a lowercase letter or `_`, then lowercase
/// letters, digits and `_`, at most 63 bytes.
pub(super) fn identifier<'a>(what: &str, name: &'a str) -> Result<&'a str, StoreError> {
    let mut chars = name.chars();
    let plain = matches!(chars.next(), Some('a'..='z' | '_'))
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && name.len() <= 63;
    if plain {
        Ok(name)
    } else {
        Err(StoreError::Other(format!(
            "{what} `{name}` is not a plain PostgreSQL name; use lowercase letters, digits and _ (starting with a letter or _), at most 63 characters"
        )))
    }
}

/// A type name as written in a signature: letters, digits, `_`, spaces, `.`, `,`, `(`, `)`,
/// `[` and `]` (so `TEXT`, `BIGINT`, `NUMERIC(12, 2)`, `TEXT[]`, `myschema.mytype`).
pub(super) fn type_name<'a>(what: &str, ty: &'a str) -> Result<&'a str, StoreError> {
    let ok = !ty.trim().is_empty()
        && ty
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || " _.,()[]".contains(c));
    if ok {
        Ok(ty)
    } else {
        Err(StoreError::Other(format!(
            "{what} `{ty}` is not a type name guard can write into SQL; use letters, digits, _, spaces, dots, commas, parentheses and []"
        )))
    }
}
