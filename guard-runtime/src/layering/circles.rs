//! No import circle anywhere in the workspace's libraries: between the files of each crate,
//! modules inside one folder included, reading `crate::`, `super::` and `self::` paths
//! outside tests. A module and its own parts (`flow` and `flow::call`) are one piece, as in
//! the layering check; two files beside each other that import each other are a circle.
//! The circles found before this check existed are named in ARCHITECTURE.md, to be untied:
//! a new one fails, and so does a named one that is gone (its row must go too).

use std::{
    collections::BTreeSet,
    fs,
    path::{Path, PathBuf},
};

use syn::visit::Visit;

use super::is_test;

/// The crates whose files are checked, by their folder beside the runtime's.
const CRATES: [&str; 4] = ["guard-runtime", "guard-log", "guard-macros", "guard-audit"];

/// Every source file under `src`, by its module path (empty for the crate root).
fn files(src: &Path) -> Vec<(Vec<String>, PathBuf)> {
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
    let mut found = Vec::new();
    walk(src, &mut found);
    found
        .into_iter()
        .map(|path| {
            let relative = path.strip_prefix(src).expect("under src");
            let mut module: Vec<String> = relative
                .with_extension("")
                .components()
                .map(|c| c.as_os_str().to_str().expect("a UTF-8 name").to_owned())
                .collect();
            if module.last().is_some_and(|m| m == "mod") {
                module.pop();
            }
            match module.first().map(String::as_str) {
                Some("lib" | "main") if module.len() == 1 => module.clear(),
                // The runtime mounts `private/` as `__private` (`#[path]`).
                Some("private") => module[0] = "__private".to_owned(),
                _ => {}
            }
            (module, path)
        })
        .collect()
}

/// The module paths one file names through `crate::`, `super::` and `self::`, resolved
/// against the file's module and the inline modules around each path.
struct Uses {
    file: Vec<String>,
    inline: Vec<String>,
    found: Vec<Vec<String>>,
}

impl Uses {
    /// `path` as a path from the crate root, if it is written relative to this crate.
    fn resolve(&self, path: &[String]) -> Option<Vec<String>> {
        let mut here: Vec<String> = self.file.iter().chain(&self.inline).cloned().collect();
        let mut rest = path;
        match rest.first()?.as_str() {
            "crate" => {
                here.clear();
                rest = &rest[1..];
            }
            "self" => rest = &rest[1..],
            "super" => {
                while rest.first().is_some_and(|s| s == "super") {
                    here.pop()?;
                    rest = &rest[1..];
                }
            }
            _ => return None,
        }
        here.extend(rest.iter().cloned());
        Some(here)
    }

    fn record(&mut self, path: Vec<String>) {
        if let Some(resolved) = self.resolve(&path) {
            self.found.push(resolved);
        }
    }

    fn tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => self.name(prefix, &n.ident),
            syn::UseTree::Rename(r) => self.name(prefix, &r.ident),
            syn::UseTree::Glob(_) => self.record(prefix.clone()),
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| self.tree(prefix, t)),
        }
    }

    fn name(&mut self, prefix: &[String], last: &syn::Ident) {
        let mut path = prefix.to_vec();
        if last != "self" || path.is_empty() {
            path.push(last.to_string());
        }
        self.record(path);
    }
}

impl<'ast> Visit<'ast> for Uses {
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

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if item.content.is_some() {
            self.inline.push(item.ident.to_string());
            syn::visit::visit_item_mod(self, item);
            self.inline.pop();
        }
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        self.tree(&mut Vec::new(), &item.tree);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        self.record(path.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, path);
    }
}

/// Whether `a` is `b` or one of its parts, or the other way round.
fn one_piece(a: &[String], b: &[String]) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

/// The imports between the files of the crate whose sources are in `src`, as pairs of
/// module paths (`audit::store` → `audit::sequencer`), each file's own parts left out.
fn edges(src: &Path) -> BTreeSet<(String, String)> {
    let files = files(src);
    let modules: BTreeSet<&[String]> = files.iter().map(|(m, _)| m.as_slice()).collect();
    let mut edges = BTreeSet::new();
    for (module, file) in &files {
        let text = fs::read_to_string(file).expect("a readable source");
        let parsed = syn::parse_file(&text)
            .unwrap_or_else(|e| panic!("{} does not parse: {e}", file.display()));
        let mut uses = Uses {
            file: module.clone(),
            inline: Vec::new(),
            found: Vec::new(),
        };
        uses.visit_file(&parsed);
        for path in uses.found {
            let Some(to) = (0..=path.len())
                .rev()
                .map(|n| &path[..n])
                .find(|prefix| modules.contains(prefix))
            else {
                continue;
            };
            if !one_piece(module, to) {
                edges.insert((module.join("::"), to.join("::")));
            }
        }
    }
    edges
}

/// The groups of modules that all reach each other through imports (each group a circle or
/// several), sorted.
fn knots(edges: &BTreeSet<(String, String)>) -> Vec<Vec<String>> {
    let reach = |start: &str| {
        let mut seen = BTreeSet::new();
        let mut next = vec![start.to_owned()];
        while let Some(node) = next.pop() {
            for (_, to) in edges.iter().filter(|(from, _)| *from == node) {
                if seen.insert(to.clone()) {
                    next.push(to.clone());
                }
            }
        }
        seen
    };
    let nodes: BTreeSet<&String> = edges.iter().map(|(from, _)| from).collect();
    let reaches: Vec<(&String, BTreeSet<String>)> =
        nodes.into_iter().map(|n| (n, reach(n))).collect();
    let mut knots: BTreeSet<Vec<String>> = BTreeSet::new();
    for (node, reached) in &reaches {
        if !reached.contains(*node) {
            continue;
        }
        let knot: Vec<String> = reaches
            .iter()
            .filter(|(other, back)| reached.contains(*other) && back.contains(*node))
            .map(|(other, _)| (*other).clone())
            .collect();
        knots.insert(knot);
    }
    knots.into_iter().collect()
}

#[test]
fn no_files_import_each_other_in_a_circle_but_the_ones_architecture_md_names() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let found: BTreeSet<(String, String)> = CRATES
        .iter()
        .flat_map(|krate| {
            knots(&edges(&workspace.join(krate).join("src")))
                .into_iter()
                .map(move |knot| (krate.to_string(), knot.join(" ↔ ")))
        })
        .collect();
    let named: BTreeSet<(String, String)> =
        super::table(&super::architecture(), "### Circles still to untie")
            .into_iter()
            .map(|row| {
                let modules = super::names(&row[1]);
                (super::names(&row[0]).concat(), modules.join(" ↔ "))
            })
            .collect();
    let mut problems: Vec<String> = found
        .difference(&named)
        .map(|(krate, knot)| format!("{krate}: {knot} import each other in a circle; move what both need into a file of its own, or down to the one the other imports"))
        .collect();
    problems.extend(named.difference(&found).map(|(krate, knot)| {
        format!("{krate}: {knot} no longer import each other in a circle: remove the row from ARCHITECTURE.md's circles still to untie")
    }));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn knots_are_the_modules_that_reach_each_other() {
    let edges: BTreeSet<(String, String)> = [
        ("a", "b"),
        ("b", "a"),
        ("b", "c"),
        ("d", "e"),
        ("e", "f"),
        ("f", "d"),
    ]
    .into_iter()
    .map(|(x, y)| (x.to_owned(), y.to_owned()))
    .collect();
    assert_eq!(
        knots(&edges),
        vec![
            vec!["a".to_owned(), "b".to_owned()],
            vec!["d".to_owned(), "e".to_owned(), "f".to_owned()]
        ]
    );
}

#[test]
fn super_and_self_paths_resolve_from_the_file_and_its_inline_modules() {
    let mut uses = Uses {
        file: vec!["audit".into(), "store".into()],
        inline: Vec::new(),
        found: Vec::new(),
    };
    let file: syn::File = syn::parse_quote! {
        use super::{sequencer::Wait, Event};
        use self::rows::Row;
        fn f() { super::super::trace::new_id(); crate::person::Person::new(); }
        mod inner { use super::super::pipeline::Pipeline; }
        #[cfg(test)]
        mod tests { use super::super::checkpoint::Checkpoint; }
    };
    uses.visit_file(&file);
    let found: Vec<String> = uses.found.iter().map(|p| p.join("::")).collect();
    for expected in [
        "audit::sequencer::Wait",
        "audit::Event",
        "audit::store::rows::Row",
        "trace::new_id",
        "person::Person::new",
        "audit::pipeline::Pipeline",
    ] {
        assert!(
            found.iter().any(|f| f == expected),
            "{expected} in {found:?}"
        );
    }
    assert!(!found.iter().any(|f| f.contains("checkpoint")), "{found:?}");
}
