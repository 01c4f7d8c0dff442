//! No import circle anywhere in the workspace's libraries: between the files of each crate,
//! modules inside one folder included, reading `crate::`, `super::` and `self::` paths
//! outside tests. A module and its own parts (`flow` and `flow::call`) are one piece, as in
//! the layering check; two files beside each other that import each other are a circle.
//! The circles found before this check existed are named in ARCHITECTURE.md, to be untied:
//! a new one fails, and so does a named one that is gone (its row must go too).

use std::{collections::BTreeSet, path::Path};

use super::sources::{Written, files};

/// The crates whose files are checked, by their folder beside the runtime's.
const CRATES: [&str; 5] = [
    "guard-runtime",
    "guard-log",
    "guard-macros",
    "guard-audit",
    "guard-test",
];

/// `path`, written in the file of module `file` inside the inline modules `inline`, as a
/// path from the crate root, if it is written relative to this crate.
fn resolve(file: &[String], inline: &[String], path: &[String]) -> Option<Vec<String>> {
    let mut here: Vec<String> = file.iter().chain(inline).cloned().collect();
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

/// Whether `a` is `b` or one of its parts, or the other way round.
fn one_piece(a: &[String], b: &[String]) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

/// The imports between the files of the crate whose sources are in `src`, as pairs of
/// module paths (`audit::append` → `audit::sequencer`), each file's own parts left out.
fn edges(src: &Path) -> BTreeSet<(String, String)> {
    let files = files(src);
    let modules: BTreeSet<&[String]> = files.iter().map(|(m, _)| m.as_slice()).collect();
    let mut edges = BTreeSet::new();
    for (module, file) in &files {
        let written = Written::of(file);
        for (inline, path) in written.paths {
            let Some(path) = resolve(module, &inline, &path) else {
                continue;
            };
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
    let mut written = Written::default();
    let file: syn::File = syn::parse_quote! {
        use super::{sequencer::Wait, Event};
        use self::rows::Row;
        fn f() { super::super::trace::new_id(); crate::person::Person::new(); }
        mod inner { use super::super::pipeline::Pipeline; }
        #[cfg(test)]
        mod tests { use super::super::checkpoint::Checkpoint; }
    };
    syn::visit::Visit::visit_file(&mut written, &file);
    let here = ["audit".to_owned(), "store".to_owned()];
    let found: Vec<String> = written
        .paths
        .iter()
        .filter_map(|(inline, path)| resolve(&here, inline, path))
        .map(|p| p.join("::"))
        .collect();
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
