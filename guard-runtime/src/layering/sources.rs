//! What both checks read: a crate's source files by module path, and the paths each file
//! writes outside its tests, with the inline modules around each.

use std::{
    fs,
    path::{Path, PathBuf},
};

use syn::visit::Visit;

/// Every source file under `src`, by its module path (empty for the crate root; the
/// runtime mounts `private/` as `__private`).
pub(super) fn files(src: &Path) -> Vec<(Vec<String>, PathBuf)> {
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
                Some("private") => module[0] = "__private".to_owned(),
                _ => {}
            }
            (module, path)
        })
        .collect()
}

/// Whether an item is compiled only in the crate's own tests: `#[cfg(test)]`, or an
/// `all(...)` that requires `test` (a test that needs a feature too).
pub(super) fn is_test(attrs: &[syn::Attribute]) -> bool {
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

/// The paths one file writes outside test items (`use` trees flattened, `foo::{self}` as
/// `foo`), each with the inline modules it stands in.
#[derive(Default)]
pub(super) struct Written {
    inline: Vec<String>,
    pub paths: Vec<(Vec<String>, Vec<String>)>,
}

impl Written {
    /// The paths `file` writes.
    pub(super) fn of(file: &Path) -> Self {
        let text = fs::read_to_string(file).expect("a readable source");
        let parsed = syn::parse_file(&text)
            .unwrap_or_else(|e| panic!("{} does not parse: {e}", file.display()));
        let mut written = Self::default();
        written.visit_file(&parsed);
        written
    }

    fn push(&mut self, path: Vec<String>) {
        self.paths.push((self.inline.clone(), path));
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
            syn::UseTree::Glob(_) => self.push(prefix.clone()),
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| self.tree(prefix, t)),
        }
    }

    fn name(&mut self, prefix: &[String], last: &syn::Ident) {
        let mut path = prefix.to_vec();
        if last != "self" {
            path.push(last.to_string());
        }
        self.push(path);
    }
}

impl<'ast> Visit<'ast> for Written {
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
        self.push(path.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, path);
    }
}
