//! The crate's source read as syntax (`syn`), for the tests that hold rules
//! about the code itself (tests/it/layout.rs, tests/it/docs.rs). Test code
//! is found by its attributes wherever it sits — an inline `#[cfg(test)] mod`,
//! a `#[test]` fn, a file declared `#[cfg(test)] mod x;` — not by where a
//! `#[cfg(test)]` line first appears, so production code after a test
//! module is still scanned.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use syn::spanned::Spanned;
use syn::visit::Visit;

pub fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn is_test_attr(a: &syn::Attribute) -> bool {
    let p = a.path();
    if p.is_ident("test") {
        return true;
    }
    // `#[cfg(test)]`, and `#[cfg(all(test, …))]` alike.
    p.is_ident("cfg")
        && a.meta
            .require_list()
            .is_ok_and(|l| l.tokens.to_string().split(|c: char| !c.is_alphanumeric() && c != '_').any(|w| w == "test"))
}

fn has_test_attr(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(is_test_attr)
}

fn attrs_of(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        _ => &[],
    }
}

/// Line ranges (1-based, inclusive) of test items anywhere in `items`, and
/// the names of child module files declared as test-only.
fn test_ranges(items: &[syn::Item], ranges: &mut Vec<(usize, usize)>, test_mods: &mut BTreeSet<String>) {
    for item in items {
        if has_test_attr(attrs_of(item)) {
            let s = item.span();
            ranges.push((s.start().line, s.end().line));
            if let syn::Item::Mod(m) = item {
                if m.content.is_none() {
                    test_mods.insert(m.ident.to_string());
                }
            }
            continue;
        }
        match item {
            syn::Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    test_ranges(inner, ranges, test_mods);
                }
            }
            syn::Item::Impl(i) => {
                for it in &i.items {
                    if let syn::ImplItem::Fn(f) = it {
                        if has_test_attr(&f.attrs) {
                            let s = f.span();
                            ranges.push((s.start().line, s.end().line));
                        }
                    }
                }
            }
            _ => {}
        }
    }
}

/// One source file: its path relative to `src/`, the parsed syntax, and its
/// production code as text (test items blanked line for line, so line
/// numbers stay true; line comments removed).
pub struct Source {
    pub rel: String,
    pub file: syn::File,
    pub code: String,
}

/// Every `.rs` file under `src/` that is production code, each with its test
/// items blanked. Files declared `#[cfg(test)] mod x;` are left out whole.
pub fn sources() -> Vec<Source> {
    let files = rs_files(vec![src()]);
    let mut test_files = BTreeSet::new();
    let mut out = Vec::new();
    for p in &files {
        let text = std::fs::read_to_string(p).unwrap();
        let file = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let mut ranges = Vec::new();
        let mut test_mods = BTreeSet::new();
        test_ranges(&file.items, &mut ranges, &mut test_mods);
        // `mod x;` in `a/mod.rs` or `a.rs` names `a/x.rs` or `a/x/mod.rs`.
        let dir = match p.file_name().and_then(|n| n.to_str()) {
            Some("mod.rs") | Some("lib.rs") | Some("main.rs") => p.parent().unwrap().to_path_buf(),
            _ => p.with_extension(""),
        };
        for m in test_mods {
            test_files.insert(dir.join(format!("{m}.rs")));
            test_files.insert(dir.join(&m).join("mod.rs"));
        }
        let code: Vec<String> = text
            .lines()
            .enumerate()
            .map(|(i, l)| {
                let n = i + 1;
                if ranges.iter().any(|(a, b)| (*a..=*b).contains(&n)) {
                    return String::new();
                }
                // A `//` inside a string ("http://") is rare in these files
                // and only hides text after it from the scan.
                match l.find("//") {
                    Some(i) => l[..i].to_string(),
                    None => l.to_string(),
                }
            })
            .collect();
        let rel = p.strip_prefix(src()).unwrap().to_string_lossy().replace('\\', "/");
        out.push((p.clone(), Source { rel, file, code: code.join("\n") }));
    }
    out.into_iter().filter(|(p, _)| !test_files.contains(p)).map(|(_, s)| s).collect()
}

/// Every production function (free, in impls, in traits with a body) with
/// its first line and length in lines.
pub fn functions(s: &Source) -> Vec<(String, usize, usize)> {
    struct V<'a> {
        out: &'a mut Vec<(String, usize, usize)>,
    }
    impl<'ast> Visit<'ast> for V<'_> {
        fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
            if !has_test_attr(&m.attrs) {
                syn::visit::visit_item_mod(self, m);
            }
        }
        fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
            if !has_test_attr(&f.attrs) {
                let sp = f.span();
                self.out.push((f.sig.ident.to_string(), sp.start().line, sp.end().line - sp.start().line + 1));
                syn::visit::visit_item_fn(self, f);
            }
        }
        fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
            if !has_test_attr(&f.attrs) {
                let sp = f.span();
                self.out.push((f.sig.ident.to_string(), sp.start().line, sp.end().line - sp.start().line + 1));
                syn::visit::visit_impl_item_fn(self, f);
            }
        }
    }
    let mut out = Vec::new();
    V { out: &mut out }.visit_file(&s.file);
    out
}

/// Test functions of a file: `#[test]` fns (at any depth) and the fns
/// written inside `proptest!` blocks, each with its body as text.
pub fn test_functions(file: &syn::File) -> Vec<(String, String)> {
    struct V {
        out: Vec<(String, String)>,
    }
    impl<'ast> Visit<'ast> for V {
        fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
            // `#[test]`, `#[tokio::test]`.
            if f.attrs.iter().any(|a| a.path().segments.last().is_some_and(|s| s.ident == "test")) {
                let body = &f.block;
                self.out.push((f.sig.ident.to_string(), quote_tokens(body)));
            }
            syn::visit::visit_item_fn(self, f);
        }
        fn visit_macro(&mut self, m: &'ast syn::Macro) {
            if m.path.segments.last().is_some_and(|s| s.ident == "proptest") {
                // `fn name(args in strategy) { body }` inside the macro.
                let toks: Vec<proc_macro2::TokenTree> = m.tokens.clone().into_iter().collect();
                for w in toks.windows(4) {
                    if let (
                        proc_macro2::TokenTree::Ident(kw),
                        proc_macro2::TokenTree::Ident(name),
                        proc_macro2::TokenTree::Group(_),
                        proc_macro2::TokenTree::Group(body),
                    ) = (&w[0], &w[1], &w[2], &w[3])
                    {
                        if kw == "fn" {
                            self.out.push((name.to_string(), body.stream().to_string()));
                        }
                    }
                }
            }
            syn::visit::visit_macro(self, m);
        }
    }
    let mut v = V { out: Vec::new() };
    v.visit_file(file);
    v.out
}

fn quote_tokens(b: &syn::Block) -> String {
    use quote::ToTokens;
    b.to_token_stream().to_string()
}

/// Every `.rs` file under the directories, sorted.
fn rs_files(mut stack: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut files = Vec::new();
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

/// Every `.rs` file under `dirs` (relative to the crate root), parsed whole.
pub fn all_files(dirs: &[&str]) -> Vec<(PathBuf, syn::File)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    rs_files(dirs.iter().map(|d| root.join(d)).collect())
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let file = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p, file)
        })
        .collect()
}

/// Each `proptest!` invocation in a file: its line and its tokens as text.
pub fn proptest_blocks(file: &syn::File) -> Vec<(usize, String)> {
    struct V {
        out: Vec<(usize, String)>,
    }
    impl<'ast> Visit<'ast> for V {
        fn visit_macro(&mut self, m: &'ast syn::Macro) {
            if m.path.segments.last().is_some_and(|s| s.ident == "proptest") {
                self.out.push((m.path.span().start().line, m.tokens.to_string()));
            }
            syn::visit::visit_macro(self, m);
        }
    }
    let mut v = V { out: Vec::new() };
    v.visit_file(file);
    v.out
}
