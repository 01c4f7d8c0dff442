//! The layering of ARCHITECTURE.md, checked: every `crate::` path in the runtime's sources
//! (outside tests) is read with `syn` and judged against the tables there.

use std::{
    collections::{BTreeMap, BTreeSet},
    fs,
    path::{Path, PathBuf},
};

use syn::visit::Visit;

mod circles;
mod sources;

/// The layers and allowed upward imports, as ARCHITECTURE.md states them.
struct Rules {
    layer: BTreeMap<String, usize>,
    upward: BTreeSet<(String, String)>,
}

fn architecture() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../ARCHITECTURE.md");
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The rows of the markdown table under `heading`, cells trimmed.
fn table(text: &str, heading: &str) -> Vec<Vec<String>> {
    let start = text
        .find(heading)
        .unwrap_or_else(|| panic!("ARCHITECTURE.md has no `{heading}` section"));
    text[start..]
        .lines()
        .skip_while(|line| !line.starts_with('|'))
        .take_while(|line| line.starts_with('|'))
        .skip(2)
        .map(|row| {
            row.trim_matches('|')
                .split('|')
                .map(|cell| cell.trim().to_owned())
                .collect()
        })
        .collect()
}

/// The backticked names in a cell.
fn names(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

fn rules(text: &str) -> Rules {
    let mut layer = BTreeMap::new();
    for row in table(text, "## Layers of `guard-runtime`") {
        let number: usize = row[0]
            .split_whitespace()
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("a layer row does not start with its number: {row:?}"));
        for module in names(&row[1]) {
            assert!(
                layer.insert(module.clone(), number).is_none(),
                "`{module}` is in two layers"
            );
        }
    }
    let upward = table(text, "### Imports that run upward")
        .into_iter()
        .map(|row| (names(&row[0]).concat(), names(&row[1]).concat()))
        .collect();
    Rules { layer, upward }
}

/// Every source file of the runtime, by its module path (`crate` for lib.rs,
/// `entry::dispatch` for entry/dispatch.rs); this checker is a test, not a layer.
fn sources() -> Vec<(Vec<String>, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    sources::files(&root)
        .into_iter()
        .filter(|(module, _)| module.first().is_none_or(|m| m != "layering"))
        .map(|(module, path)| match module.is_empty() {
            true => (vec!["crate".to_owned()], path),
            false => (module, path),
        })
        .collect()
}

/// The longest entry of the layer table that `path` lies in.
fn place<'a>(layer: &'a BTreeMap<String, usize>, path: &[String]) -> Option<&'a str> {
    (1..=path.len())
        .rev()
        .map(|n| path[..n].join("::"))
        .find_map(|key| layer.get_key_value(&key).map(|(k, _)| k.as_str()))
}

/// The `crate::` paths of `file`, without their leading `crate`.
fn imports(file: &Path) -> Vec<Vec<String>> {
    sources::Written::of(file)
        .paths
        .into_iter()
        .map(|(_, path)| path)
        .filter(|p| p.first().is_some_and(|s| s == "crate") && p.len() > 1)
        .map(|p| p[1..].to_vec())
        .collect()
}

#[test]
fn layering_follows_architecture_md() {
    let rules = rules(&architecture());
    let files = sources();
    let tops: BTreeSet<&str> = files.iter().map(|(m, _)| m[0].as_str()).collect();
    let root = rules.layer["crate"];
    let mut problems = Vec::new();
    let mut edges: BTreeSet<(String, String)> = BTreeSet::new();
    for (module, file) in &files {
        let shown = file.display();
        let Some(from_key) = place(&rules.layer, module) else {
            problems.push(format!(
                "`{}` is in no layer: add it to ARCHITECTURE.md",
                module.join("::")
            ));
            continue;
        };
        let from = rules.layer[from_key];
        for path in imports(file) {
            let written = format!("crate::{}", path.join("::"));
            if !tops.contains(path[0].as_str()) {
                if from != root {
                    problems.push(format!(
                        "{shown}: `{written}` goes through the crate root's re-exports; import it from its module"
                    ));
                }
                continue;
            }
            if path[0] == "__private" && from != root {
                problems.push(format!(
                    "{shown}: `{written}` imports `__private`, which only the macros' expansions may use"
                ));
                continue;
            }
            let Some(to_key) = place(&rules.layer, &path) else {
                continue;
            };
            if to_key == from_key {
                continue;
            }
            let to = rules.layer[to_key];
            let pair = (from_key.to_owned(), to_key.to_owned());
            if to > from && !rules.upward.contains(&pair) {
                problems.push(format!(
                    "{shown}: `{written}` runs up from `{from_key}` (layer {from}) to `{to_key}` (layer {to}); move the item down, or name the import with its reason in ARCHITECTURE.md"
                ));
            }
            // A module and its own parts (`entry` and `entry::dispatch`) are one piece.
            if !from_key.starts_with(&format!("{to_key}::"))
                && !to_key.starts_with(&format!("{from_key}::"))
            {
                edges.insert(pair);
            }
        }
    }
    for pair in &rules.upward {
        if !edges.contains(pair) {
            problems.push(format!(
                "ARCHITECTURE.md allows `{}` to import `{}`, which it no longer does: remove the row",
                pair.0, pair.1
            ));
        }
    }
    assert!(
        rules.upward.len() <= 5,
        "at most five upward imports, each with its reason"
    );
    if let Some(circle) = circle(&edges) {
        problems.push(format!("modules import each other in a circle: {circle:?}"));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// A circle among the modules' imports, if there is one.
fn circle(edges: &BTreeSet<(String, String)>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &BTreeSet<(String, String)>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            return Some(path[at..].to_vec());
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for (_, to) in edges.iter().filter(|(from, _)| from == node) {
            if let Some(found) = visit(to, edges, path, done) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    edges
        .iter()
        .find_map(|(from, _)| visit(from, edges, &mut Vec::new(), &mut done))
}

#[test]
fn the_checker_finds_a_circle_and_reads_nested_imports() {
    let edges: BTreeSet<(String, String)> = [("a", "b"), ("b", "c"), ("c", "a")]
        .into_iter()
        .map(|(x, y)| (x.to_owned(), y.to_owned()))
        .collect();
    assert_eq!(circle(&edges).map(|c| c.len()), Some(3));
    let mut paths = sources::Written::default();
    let file: syn::File = syn::parse_quote! {
        use crate::{store::{Tx, lock::{self, Lock}}, Secret};
        fn f() { crate::audit::digest(); }
        #[cfg(test)]
        mod tests { use crate::flow::Flow; }
        #[cfg(all(test, feature = "sqlite"))]
        mod sqlite_tests { use crate::testing::CountingStore; }
        #[cfg(any(test, feature = "testing"))]
        mod kit { use crate::honesty::Kit; }
    };
    paths.visit_file(&file);
    let found: Vec<String> = paths.paths.iter().map(|(_, p)| p.join("::")).collect();
    for expected in [
        "crate::store::Tx",
        "crate::store::lock",
        "crate::store::lock::Lock",
        "crate::Secret",
        "crate::audit::digest",
    ] {
        assert!(
            found.iter().any(|f| f == expected),
            "{expected} in {found:?}"
        );
    }
    assert!(!found.iter().any(|f| f.contains("flow")), "{found:?}");
    assert!(!found.iter().any(|f| f.contains("testing")), "{found:?}");
    assert!(
        found.iter().any(|f| f == "crate::honesty::Kit"),
        "an item built outside tests too counts: {found:?}"
    );
}
