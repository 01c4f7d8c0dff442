//! The layering of ARCHITECTURE.md, checked: every `crate::` path in the runtime's sources
//! (outside tests) is read with `syn` and judged against the tables there.

use std::{
    collections::{BTreeMap, BTreeSet},
    fs,
    path::{Path, PathBuf},
};

use syn::visit::Visit;

mod circles;

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
/// `entry::dispatch` for entry/dispatch.rs).
fn sources() -> Vec<(Vec<String>, PathBuf)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in fs::read_dir(dir).expect("the source folder is readable") {
            let path = entry.expect("a readable entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&root, &mut files);
    files
        .into_iter()
        .filter_map(|path| {
            let relative = path.strip_prefix(&root).expect("under src");
            let mut module: Vec<String> = relative
                .with_extension("")
                .components()
                .map(|c| c.as_os_str().to_str().expect("a UTF-8 name").to_owned())
                .collect();
            if module.last().is_some_and(|m| m == "mod") {
                module.pop();
            }
            match module[0].as_str() {
                // This checker is a test, not a layer.
                "layering" => return None,
                "lib" => module = vec!["crate".to_owned()],
                "private" => module[0] = "__private".to_owned(),
                _ => {}
            }
            Some((module, path))
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

/// The `crate::` paths of one file, outside `#[cfg(test)]` items.
#[derive(Default)]
struct Paths(Vec<Vec<String>>);

/// Whether an item is compiled only in the crate's own tests: `#[cfg(test)]`, or an
/// `all(...)` that requires `test` (a test that needs a feature too).
fn is_test(attrs: &[syn::Attribute]) -> bool {
    fn requires_test(meta: &syn::Meta) -> bool {
        match meta {
            syn::Meta::Path(path) => path.is_ident("test"),
            syn::Meta::List(list) if list.path.is_ident("all") => list
                .parse_args_with(
                    syn::punctuated::Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated,
                )
                .is_ok_and(|all| all.iter().any(requires_test)),
            _ => false,
        }
    }
    attrs.iter().any(|a| {
        a.path().is_ident("cfg") && a.parse_args::<syn::Meta>().is_ok_and(|m| requires_test(&m))
    })
}

impl Paths {
    fn tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => self.push(prefix, &n.ident),
            syn::UseTree::Rename(r) => self.push(prefix, &r.ident),
            syn::UseTree::Glob(_) => self.0.push(prefix.clone()),
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| self.tree(prefix, t)),
        }
    }

    fn push(&mut self, prefix: &[String], last: &syn::Ident) {
        let mut path = prefix.to_vec();
        if last != "self" {
            path.push(last.to_string());
        }
        self.0.push(path);
    }
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = match item {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Use(u) => &u.attrs,
            _ => return syn::visit::visit_item(self, item),
        };
        if !is_test(attrs) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        let mut prefix = Vec::new();
        self.tree(&mut prefix, &item.tree);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        self.0
            .push(path.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, path);
    }
}

/// The `crate::` paths of `file`, without their leading `crate`.
fn imports(file: &Path) -> Vec<Vec<String>> {
    let text = fs::read_to_string(file).expect("a readable source");
    let parsed =
        syn::parse_file(&text).unwrap_or_else(|e| panic!("{} does not parse: {e}", file.display()));
    let mut paths = Paths::default();
    paths.visit_file(&parsed);
    paths
        .0
        .into_iter()
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
    let mut paths = Paths::default();
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
    let found: Vec<String> = paths.0.iter().map(|p| p.join("::")).collect();
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
