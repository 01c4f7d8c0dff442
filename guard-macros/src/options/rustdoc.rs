//! The option table of an attribute as the crate's rustdoc shows it, rendered from the
//! declaration; the tests keep `lib.rs` equal to it and the guide naming every option.

use super::{Attribute, Declared, Value};

/// The line above an attribute's table in `lib.rs`, which the tests find it by.
fn marker(attr: &Attribute) -> String {
    format!(
        "<!-- the options of {}, rendered from guard-macros/src/options -->",
        attr.name
    )
}

/// The attribute's table in Markdown, the marker line first.
pub fn table(attr: &Attribute) -> Vec<String> {
    let mut lines = vec![
        marker(attr),
        "| option | takes | default | with others | what it does |".to_owned(),
        "|---|---|---|---|---|".to_owned(),
    ];
    lines.extend(attr.options.iter().map(|o| {
        format!(
            "| `{}` | {} | {} | {} | {} |",
            o.name,
            takes(&o.takes),
            o.default,
            rules(o),
            o.doc
        )
    }));
    lines
}

fn takes(value: &Value) -> String {
    match value {
        Value::Flag => "a flag".to_owned(),
        Value::OneOf(values) => {
            let values: Vec<String> = values.iter().map(|v| format!("`\"{v}\"`")).collect();
            values.join(" or ")
        }
        Value::Text(example) => format!("a string, e.g. `\"{example}\"`"),
        Value::Path(example) => format!("a path, e.g. `{example}`"),
        Value::Field(example) => format!("an argument's field, e.g. `{example}`"),
        Value::Duration(limit) => format!("a duration, e.g. `\"10m\"`, at most `{}`", limit.max),
        Value::Count(u64::MAX) => "a whole number from 1".to_owned(),
        Value::Count(max) => format!("a whole number from 1 to {max}"),
        Value::Whole => "a whole number".to_owned(),
        Value::Number => "a number".to_owned(),
        Value::Literal => "a string, number or bool".to_owned(),
        Value::Rate(limit) => format!(
            "calls per period, e.g. `\"5/min\"`, the period at most `{}`",
            limit.max
        ),
    }
}

/// What the option needs and cannot go with, in words.
fn rules(o: &Declared) -> String {
    let names = |rules: &[super::Rule]| {
        let names: Vec<String> = rules.iter().map(|r| format!("`{}`", r.option)).collect();
        names.join(", ")
    };
    let mut parts = Vec::new();
    if !o.needs.is_empty() {
        parts.push(format!("needs {}", names(o.needs)));
    }
    if !o.conflicts.is_empty() {
        parts.push(format!("not with {}", names(o.conflicts)));
    }
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::{super::ALL, marker, table};

    fn crate_file(path: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(path)
    }

    /// `source` with each attribute's table (its marker line and the `/// |` lines after it)
    /// replaced by the one rendered from the declaration, or which attribute's marker is
    /// missing.
    fn with_rendered_tables(source: &str) -> Result<String, String> {
        let mut lines: Vec<String> = source.lines().map(str::to_owned).collect();
        for attr in ALL {
            let marker = format!("/// {}", marker(attr));
            let Some(start) = lines.iter().position(|l| l.trim_start() == marker) else {
                return Err(format!(
                    "lib.rs has no table of {}: put the line `{marker}` in its rustdoc",
                    attr.name
                ));
            };
            let indent = &lines[start][..lines[start].len() - lines[start].trim_start().len()];
            let end = lines[start + 1..]
                .iter()
                .position(|l| !l.trim_start().starts_with("/// |"))
                .map_or(lines.len(), |n| start + 1 + n);
            let rendered: Vec<String> = table(attr)
                .iter()
                .map(|l| format!("{indent}/// {l}"))
                .collect();
            lines.splice(start..end, rendered);
        }
        Ok(lines.join("\n") + "\n")
    }

    #[test]
    fn the_rustdoc_tables_are_the_declarations() {
        let path = crate_file("src/lib.rs");
        let source = std::fs::read_to_string(&path).unwrap();
        let rendered = with_rendered_tables(&source).unwrap_or_else(|e| panic!("{e}"));
        if std::env::var_os("GUARD_BLESS").is_some() {
            std::fs::write(&path, &rendered).unwrap();
            return;
        }
        let tables = source
            .matches("rendered from guard-macros/src/options")
            .count();
        assert_eq!(
            tables,
            ALL.len(),
            "lib.rs has a table for an attribute that has none"
        );
        assert!(
            source == rendered,
            "an option table in lib.rs differs from its declaration in guard-macros/src/options; \
             rewrite the tables with `GUARD_BLESS=1 cargo test -p rmcp-guard-macros --lib options`"
        );
    }

    /// Whether the page names `option` as code: `` `name` ``, `(name, ..`, `name = ..`.
    fn names(page: &str, option: &str) -> bool {
        page.match_indices(option).any(|(at, _)| {
            let before = page[..at].chars().next_back();
            let rest = &page[at + option.len()..];
            let quoted = matches!(before, Some('`' | '(' | ','))
                && rest.starts_with(['`', ' ', '=', ',', ')']);
            let set = before.is_some_and(char::is_whitespace) && rest.starts_with(" =");
            quoted || set
        })
    }

    #[test]
    fn the_guide_names_every_option() {
        let mut missing = Vec::new();
        for attr in ALL {
            let path = crate_file(&format!("../guard-runtime/docs/{}", attr.guide));
            let page = std::fs::read_to_string(&path).unwrap();
            for option in attr.options {
                if !names(&page, option.name) {
                    missing.push(format!("{} `{}` in {}", attr.name, option.name, attr.guide));
                }
            }
        }
        assert!(
            missing.is_empty(),
            "the guide pages do not name these options as code; describe each on its attribute's page (guard-runtime/docs/):\n{}",
            missing.join("\n")
        );
    }
}
