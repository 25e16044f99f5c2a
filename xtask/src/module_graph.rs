//! The module graph of a crate, read from its sources, and the import cycles in it: a pure
//! function over the files' text ([`cycles`]) and a reader of a crate's `src/` ([`crate_cycles`]),
//! for a tidy test that no crate's modules import one another in a circle.
//!
//! Each file is a module (`lib.rs` the root, `a/mod.rs` and `a.rs` are `a`, `a/b.rs` is `a::b`),
//! and so is each inline `mod name { ... }`. Its edges are the paths it names: `use` trees and
//! any `crate::`, `super::` or `self::` path, each resolved to the deepest module it reaches.
//! A reference between a module and its own ancestor (a parent and its child) is no edge; any
//! other is lifted to the two children of their nearest common ancestor that hold them, so that
//! `model::capacity -> format::html` and `format::html::page -> model::matrix` make the cycle
//! `model <-> format`. Test code (`#[cfg(test)]` modules, inline or in their own file) and
//! comments are left out: a test may reach across layers, the library may not.

// Its callers are tests: this file's own, and the tidy tests.
#![cfg_attr(not(test), allow(dead_code))]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// A module's path inside its crate: no segments for the crate's root.
type ModulePath = Vec<String>;

/// Every strongly connected component of more than one module in the graph of `files` (each a
/// path relative to `src/`, with `/` separators, and its text), each as its modules' paths
/// (`model`, `format::html`) in order; the components in order too.
pub fn cycles(files: &[(String, String)]) -> Vec<Vec<String>> {
    let mut test_only: BTreeSet<ModulePath> = BTreeSet::new();
    let mut parsed = Vec::new();
    for (path, text) in files {
        let module = module_of(path);
        let code = strip_comments_and_strings(text);
        let (scopes, tests) = scopes(&code, &module);
        test_only.extend(tests);
        parsed.push((module, code, scopes));
    }
    let is_test = |m: &ModulePath| test_only.iter().any(|t| m.starts_with(t));
    let mut known: BTreeSet<ModulePath> = BTreeSet::new();
    for (module, _, scopes) in &parsed {
        known.insert(module.clone());
        known.extend(scopes.iter().map(|s| s.module.clone()));
    }
    let mut edges: BTreeSet<(ModulePath, ModulePath)> = BTreeSet::new();
    for (module, code, scopes) in &parsed {
        if is_test(module) {
            continue;
        }
        for (at, path) in references(code) {
            // The innermost inline module holding the reference, else the file's.
            let scope = scopes.iter().filter(|s| s.start <= at && at < s.end).max_by_key(|s| s.module.len());
            if scope.is_some_and(|s| s.test) {
                continue;
            }
            let from = scope.map_or(module, |s| &s.module);
            let Some(to) = resolve(from, &path, &known) else { continue };
            if let Some(edge) = lift(from, &to) {
                edges.insert(edge);
            }
        }
    }
    components(&edges)
        .into_iter()
        .filter(|c| c.len() > 1)
        .map(|c| c.into_iter().map(|m| display(&m)).collect())
        .collect()
}

/// [`cycles`] of the crate at `crate_dir`, from every `.rs` file under its `src/`.
pub fn crate_cycles(crate_dir: &Path) -> io::Result<Vec<Vec<String>>> {
    let src = crate_dir.join("src");
    let mut paths = Vec::new();
    rust_files(&src, &mut paths)?;
    let mut files = Vec::new();
    for path in paths {
        let relative = path.strip_prefix(&src).unwrap_or(&path);
        let name =
            relative.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/");
        files.push((name, fs::read_to_string(&path)?));
    }
    files.sort();
    Ok(cycles(&files))
}

/// An inline `mod name { ... }`: its module, its byte span in the file, and whether it is
/// test code.
struct Scope {
    module: ModulePath,
    start: usize,
    end: usize,
    test: bool,
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            rust_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// `lib.rs` is the root, `a/mod.rs` and `a.rs` are `a`, `a/b.rs` is `a::b`.
fn module_of(path: &str) -> ModulePath {
    let mut parts: Vec<String> = path.trim_end_matches(".rs").split('/').map(str::to_owned).collect();
    if parts.len() == 1 && (parts[0] == "lib" || parts[0] == "main") {
        return Vec::new();
    }
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

fn display(module: &ModulePath) -> String {
    if module.is_empty() {
        "crate".to_owned()
    } else {
        module.join("::")
    }
}

/// The code with comments removed and string and char literals emptied, byte offsets kept (each
/// removed byte becomes a space), so that a path in a doc comment or a message is not a use.
fn strip_comments_and_strings(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            let end = b[i..].iter().position(|&c| c == b'\n').map_or(b.len(), |n| i + n);
            blank(&mut out, i, end);
            i = end;
        } else if b[i..].starts_with(b"/*") {
            let (mut depth, mut j) = (0usize, i);
            while j < b.len() {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j.min(b.len()));
            i = j;
        } else if b[i] == b'r' && matches!(b.get(i + 1), Some(b'"' | b'#')) && (i == 0 || !is_ident(b[i - 1]))
        {
            // A raw string: r"..." or r#"..."#.
            let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
            if b.get(i + 1 + hashes) != Some(&b'"') {
                i += 1;
                continue;
            }
            let close: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat_n(b'#', hashes)).collect();
            let body = i + 2 + hashes;
            let end = b[body..].windows(close.len()).position(|w| w == close).map_or(b.len(), |n| body + n);
            blank(&mut out, body, end);
            i = end + close.len();
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i + 1, j.min(b.len()));
            i = j + 1;
        } else if b[i] == b'\'' {
            // A char literal ('a', '\n', '\''), not a lifetime ('a).
            let len = if b.get(i + 1) == Some(&b'\\') {
                b[i + 2..].iter().position(|&c| c == b'\'').map(|n| n + 3)
            } else {
                let ch = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                (b.get(i + 1 + ch) == Some(&b'\'')).then_some(ch + 2)
            };
            match len {
                Some(len) => {
                    blank(&mut out, i + 1, i + len - 1);
                    i += len;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The inline modules of a file at `module`, and the modules (inline or in files) it declares
/// under `#[cfg(test)]`.
fn scopes(code: &str, module: &ModulePath) -> (Vec<Scope>, Vec<ModulePath>) {
    let b = code.as_bytes();
    let mut found: Vec<(usize, String, bool, Option<usize>)> = Vec::new();
    let mut i = 0;
    while let Some(n) = code[i..].find("mod ") {
        let at = i + n;
        i = at + 4;
        if at > 0 && is_ident(b[at - 1]) {
            continue;
        }
        let name: String =
            code[i..].trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        if name.is_empty() {
            continue;
        }
        let after = code[i..].trim_start()[name.len()..].trim_start();
        let test = attributes_before(code, at).iter().any(|a| a.replace(' ', "") == "#[cfg(test)]");
        let open = after.starts_with('{').then(|| code.len() - after.len());
        found.push((at, name, test, open));
    }
    let mut scopes: Vec<Scope> = Vec::new();
    let mut tests = Vec::new();
    for (at, name, test, open) in found {
        let Some(open) = open else {
            if test {
                let mut m = parent_scope(&scopes, module, at);
                m.push(name);
                tests.push(m);
            }
            continue;
        };
        let mut depth = 0usize;
        let mut end = code.len();
        for (j, c) in code[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + j + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        let outer_test = scopes.iter().any(|s| s.test && s.start <= at && at < s.end);
        let mut m = parent_scope(&scopes, module, at);
        m.push(name);
        scopes.push(Scope { module: m, start: at, end, test: test || outer_test });
    }
    (scopes, tests)
}

/// The module a declaration at `at` is in: the innermost inline module around it, else the file's.
fn parent_scope(scopes: &[Scope], module: &ModulePath, at: usize) -> ModulePath {
    let inner = scopes.iter().filter(|s| s.start <= at && at < s.end).max_by_key(|s| s.module.len());
    inner.map_or_else(|| module.clone(), |s| s.module.clone())
}

/// The outer attributes (`#[...]`) just before `at`, skipping a visibility (`pub`, `pub(crate)`).
fn attributes_before(code: &str, at: usize) -> Vec<String> {
    let mut head = code[..at].trim_end();
    for vis in ["pub(crate)", "pub(super)", "pub"] {
        if let Some(rest) = head.strip_suffix(vis) {
            head = rest.trim_end();
            break;
        }
    }
    let mut out = Vec::new();
    while head.ends_with(']') {
        let Some(start) = head.rfind("#[") else { break };
        out.push(head[start..].to_owned());
        head = head[..start].trim_end();
    }
    out
}

/// Every path the code names that starts with `crate`, `super` or `self`, with its offset; a
/// `use` tree gives one path per leaf.
fn references(code: &str) -> Vec<(usize, Vec<String>)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !is_ident(b[i]) || (i > 0 && (is_ident(b[i - 1]) || b[i - 1] == b':')) {
            i += 1;
            continue;
        }
        let word_end = b[i..].iter().position(|&c| !is_ident(c)).map_or(b.len(), |n| i + n);
        let word = &code[i..word_end];
        if word == "use" {
            let end = code[word_end..].find(';').map_or(code.len(), |n| word_end + n);
            let mut leaves = Vec::new();
            use_tree(&code[word_end..end], Vec::new(), &mut leaves);
            out.extend(
                leaves
                    .into_iter()
                    .filter(|p| matches!(p.first().map(String::as_str), Some("crate" | "super" | "self")))
                    .map(|p| (i, p)),
            );
            i = end;
        } else if matches!(word, "crate" | "super" | "self") && code[word_end..].starts_with("::") {
            let mut path = vec![word.to_owned()];
            let mut j = word_end;
            while code[j..].starts_with("::") {
                let seg_start = j + 2;
                let seg_end =
                    b[seg_start..].iter().position(|&c| !is_ident(c)).map_or(b.len(), |n| seg_start + n);
                if seg_end == seg_start {
                    break;
                }
                path.push(code[seg_start..seg_end].to_owned());
                j = seg_end;
            }
            out.push((i, path));
            i = j;
        } else {
            i = word_end;
        }
    }
    out
}

/// The leaves of a `use` tree (`crate::a::{b, c::{d, e}}`), each as its full path.
fn use_tree(tree: &str, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let head: Vec<String> =
            tree[..open].split("::").map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect();
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let mut base = prefix;
        base.extend(head);
        let (mut depth, mut start) = (0usize, 0);
        for (j, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth = depth.saturating_sub(1),
                ',' if depth == 0 => {
                    use_tree(&inner[start..j], base.clone(), out);
                    start = j + 1;
                }
                _ => {}
            }
        }
        use_tree(&inner[start..], base, out);
    } else {
        let path = tree.split(" as ").next().unwrap_or_default();
        let mut full = prefix;
        full.extend(
            path.split("::").map(str::trim).filter(|s| !s.is_empty() && *s != "*").map(str::to_owned),
        );
        if !full.is_empty() {
            out.push(full);
        }
    }
}

/// The deepest known module `path` reaches from `from`.
fn resolve(from: &ModulePath, path: &[String], known: &BTreeSet<ModulePath>) -> Option<ModulePath> {
    let mut base: ModulePath = Vec::new();
    let mut rest = path;
    match path.first().map(String::as_str) {
        Some("crate") => rest = &path[1..],
        Some("self" | "super") => {
            base = from.clone();
            while let Some(seg) = rest.first() {
                match seg.as_str() {
                    "self" => {}
                    "super" => {
                        base.pop()?;
                    }
                    _ => break,
                }
                rest = &rest[1..];
            }
        }
        _ => return None,
    }
    let mut module = base;
    for seg in rest {
        let mut next = module.clone();
        next.push(seg.clone());
        if !known.contains(&next) {
            break;
        }
        module = next;
    }
    Some(module)
}

/// The edge between the two children of `from`'s and `to`'s nearest common ancestor that hold
/// them; none when one holds the other.
fn lift(from: &ModulePath, to: &ModulePath) -> Option<(ModulePath, ModulePath)> {
    let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
    if common == from.len() || common == to.len() {
        return None;
    }
    Some((from[..=common].to_vec(), to[..=common].to_vec()))
}

/// The strongly connected components of the graph (Tarjan's algorithm), each sorted.
fn components(edges: &BTreeSet<(ModulePath, ModulePath)>) -> Vec<Vec<ModulePath>> {
    let mut graph: BTreeMap<&ModulePath, Vec<&ModulePath>> = BTreeMap::new();
    for (a, b) in edges {
        graph.entry(a).or_default().push(b);
        graph.entry(b).or_default();
    }
    struct State<'a> {
        index: BTreeMap<&'a ModulePath, usize>,
        low: BTreeMap<&'a ModulePath, usize>,
        stack: Vec<&'a ModulePath>,
        on_stack: BTreeSet<&'a ModulePath>,
        out: Vec<Vec<ModulePath>>,
    }
    fn visit<'a>(
        v: &'a ModulePath,
        graph: &BTreeMap<&'a ModulePath, Vec<&'a ModulePath>>,
        s: &mut State<'a>,
    ) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for &w in graph.get(v).map(Vec::as_slice).unwrap_or_default() {
            if !s.index.contains_key(w) {
                visit(w, graph, s);
                let low = s.low[v].min(s.low[w]);
                s.low.insert(v, low);
            } else if s.on_stack.contains(w) {
                let low = s.low[v].min(s.index[w]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                component.push(w.clone());
                if w == v {
                    break;
                }
            }
            component.sort();
            s.out.push(component);
        }
    }
    let mut state = State {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for &v in graph.keys() {
        if !state.index.contains_key(v) {
            visit(v, &graph, &mut state);
        }
    }
    state.out.sort();
    state.out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(p, t)| (p.to_string(), t.to_string())).collect()
    }

    #[test]
    fn two_siblings_that_use_each_other_are_a_cycle() {
        let found = cycles(&files(&[
            ("lib.rs", "mod a;\nmod b;\nmod c;"),
            ("a.rs", "use crate::b::B;\npub struct A;"),
            ("b.rs", "use crate::a::A;\npub struct B;"),
            ("c.rs", "use crate::a::A;"),
        ]));
        assert_eq!(found, [["a", "b"]]);
    }

    #[test]
    fn layers_that_point_one_way_have_no_cycle() {
        let found = cycles(&files(&[
            ("lib.rs", "mod model;\nmod format;\npub use format::json;"),
            ("model/mod.rs", "pub mod report;\npub mod wire;"),
            ("model/report.rs", "pub struct Report;"),
            ("model/wire.rs", "use super::report::Report;"),
            ("format/mod.rs", "pub mod json;"),
            (
                "format/json.rs",
                "use crate::model::{report::Report, wire};\nfn f() { crate::model::wire::g(); }",
            ),
        ]));
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn a_parent_and_its_own_child_are_no_cycle() {
        let found = cycles(&files(&[
            ("lib.rs", "mod html;"),
            ("html/mod.rs", "mod page;\nuse self::page::escape;\npub fn f() {}"),
            ("html/page.rs", "use super::f;\nuse crate::html::f as g;\npub fn escape() {}"),
        ]));
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn a_cycle_between_folders_is_found_from_their_files() {
        // model::capacity -> format::html, format::html::page -> model::matrix: model <-> format.
        let found = cycles(&files(&[
            ("lib.rs", "mod model;\nmod format;"),
            ("model/mod.rs", "pub mod capacity;\npub mod matrix;"),
            ("model/capacity.rs", "fn r() { renderers.register(crate::format::html::Html); }"),
            ("model/matrix.rs", "pub struct Matrix;"),
            ("format/mod.rs", "pub mod html;"),
            ("format/html/mod.rs", "mod page;\npub struct Html;"),
            ("format/html/page.rs", "use crate::model::matrix::Matrix;"),
        ]));
        assert_eq!(found, [["format", "model"]]);
    }

    #[test]
    fn comments_strings_and_test_code_are_not_uses() {
        let found = cycles(&files(&[
            ("lib.rs", "mod a;\nmod b;\n#[cfg(test)]\nmod testutil;"),
            ("a.rs", "//! See [`crate::b`].\nconst S: &str = \"crate::b::x\";\n/* crate::b::y */\nuse crate::testutil::t;"),
            ("b.rs", "use crate::a;\n#[cfg(test)]\nmod tests {\n    use crate::testutil::t;\n}"),
            ("testutil.rs", "use crate::a;\nuse crate::b;"),
        ]));
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn inline_modules_and_super_paths_resolve_where_they_are() {
        // `super` inside the inline `mod inner` of a.rs is `a`; `super::super` is the root.
        let found = cycles(&files(&[
            ("lib.rs", "mod a;\nmod b;"),
            ("a.rs", "mod inner {\n    use super::super::b::B;\n    use super::A;\n}\npub struct A;"),
            ("b.rs", "use crate::a::A;\npub struct B;"),
        ]));
        assert_eq!(found, [["a", "b"]]);
    }

    #[test]
    fn use_trees_expand_to_every_leaf() {
        let mut leaves = Vec::new();
        use_tree(" crate::a::{b, c::{d, e as f}, self}", Vec::new(), &mut leaves);
        let joined: Vec<String> = leaves.iter().map(|p| p.join("::")).collect();
        assert_eq!(joined, ["crate::a::b", "crate::a::c::d", "crate::a::c::e", "crate::a::self"]);
    }

    #[test]
    fn files_map_to_module_paths() {
        assert_eq!(module_of("lib.rs"), Vec::<String>::new());
        assert_eq!(module_of("model/mod.rs"), ["model"]);
        assert_eq!(module_of("format/html/page.rs"), ["format", "html", "page"]);
    }

    /// The report crate is layered: models, renderer infrastructure, formats, one registry.
    #[test]
    fn the_report_crate_has_no_module_cycle() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("crates").join("playsim-report");
        let found = crate_cycles(&root).expect("reading crates/playsim-report/src");
        assert!(found.is_empty(), "module cycles in playsim-report: {found:?}");
    }

    #[test]
    fn no_crate_has_a_module_cycle() {
        let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("crates");
        let mut found = Vec::new();
        for entry in std::fs::read_dir(&crates).expect("reading crates/").flatten() {
            if entry.path().join("src").is_dir() {
                let cycles = crate_cycles(&entry.path()).expect("reading a crate's src");
                if !cycles.is_empty() {
                    found.push(format!("{}: {cycles:?}", entry.file_name().to_string_lossy()));
                }
            }
        }
        found.sort();
        assert!(
            found.is_empty(),
            "module cycles (modules that import each other, neither containing the other):\n{}",
            found.join("\n")
        );
    }
}
