//! The layer check of `lua/src`: no import circle between its files, no file
//! over 700 lines, unsafe code only where `safety.rs` allows it, with notes
//! that argue it. `cargo test` runs it, so `scripts/test` does.
//!
//! A node is a module, which is a file (`x.rs` or `x/mod.rs`; an inline
//! `mod tests { }` belongs to its file). An edge `a -> b` is any reference
//! in file `a` to module `b`: a `use` line or a path written inline
//! (`crate::x::y`, `super::`, `self::`, a child module's name). A child's
//! `super::` reference to its parent counts; a parent's `mod x;` does not.
//! Written in Rust, not as a script: a clean CI machine has no Python, and
//! nested `use` braces want a small parser, which wants tests of its own.

mod graph;
mod lex;
mod refs;
mod safety;

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use graph::Graph;
use refs::{ModPath, Names};

const MAX_LINES: usize = 700;

/// The module a file under `src` is (`engine/mod.rs` is `engine`; `lib.rs`
/// the root).
fn module_of(relative: &Path) -> ModPath {
    let mut parts: ModPath = relative.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let file = parts.pop().unwrap_or_default();
    let stem = file.trim_end_matches(".rs");
    if !(stem == "mod" || (parts.is_empty() && stem == "lib")) {
        parts.push(stem.to_string());
    }
    parts
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                todo.push(path);
            } else if path.extension().is_some_and(|x| x == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// `lua/src`'s files: each module with its text.
fn lua_sources() -> Vec<(ModPath, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    rust_files(&src)
        .into_iter()
        .map(|f| {
            let text = fs::read_to_string(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            (module_of(f.strip_prefix(&src).expect("under src")), text)
        })
        .collect()
}

fn name(m: &[String]) -> String {
    if m.is_empty() { "lib".to_string() } else { m.join("::") }
}

/// The graph of the files' references, each cut at the deepest file module.
fn graph_of(files: &[(ModPath, String)]) -> Graph {
    let tokens: Vec<_> = files.iter().map(|(_, text)| lex::tokens(text)).collect();
    let names = Names {
        modules: files.iter().map(|(m, _)| m.clone()).collect(),
        macros: files.iter().zip(&tokens).flat_map(|((m, _), t)| refs::exported_macros(m, t)).collect(),
    };
    let modules: Vec<&ModPath> = names.modules.iter().collect();
    let index = |m: &ModPath| modules.iter().position(|k| *k == m).expect("a known module");
    let mut edges = vec![BTreeSet::new(); modules.len()];
    for ((module, _), toks) in files.iter().zip(&tokens) {
        let from = index(module);
        for mut target in refs::references(module, toks, &names) {
            // An inline module (`tests` in a file) stands for its file.
            while !names.modules.contains(&target) {
                target.pop();
            }
            let to = index(&target);
            if to != from {
                edges[from].insert(to);
            }
        }
    }
    Graph { names: modules.iter().map(|m| name(m)).collect(), edges }
}

/// The circles of `files`, each as `a -> b -> a`.
fn circles_of(files: &[(ModPath, String)]) -> Vec<String> {
    let graph = graph_of(files);
    graph.circles().iter().map(|c| graph.show(c)).collect()
}

#[test]
fn lua_src_has_no_import_circle() {
    let circles = circles_of(&lua_sources());
    assert!(
        circles.is_empty(),
        "import circles in lua/src (one through each edge that lies on a circle):\n  {}",
        circles.join("\n  ")
    );
}

#[test]
fn lua_src_has_no_file_over_700_lines() {
    let long: Vec<String> = lua_sources()
        .iter()
        .map(|(m, text)| (m, text.lines().count()))
        .filter(|&(_, lines)| lines > MAX_LINES)
        .map(|(m, lines)| format!("{}: {lines} lines", name(m)))
        .collect();
    assert!(long.is_empty(), "files over {MAX_LINES} lines in lua/src:\n  {}", long.join("\n  "));
}

#[test]
fn unsafe_code_stays_in_its_layers() {
    let outside: Vec<String> = lua_sources()
        .iter()
        .filter(|(m, text)| !safety::allowed(m) && safety::uses_unsafe(text))
        .map(|(m, _)| name(m))
        .collect();
    assert!(outside.is_empty(), "unsafe code outside {:?}:\n  {}", safety::ALLOWED, outside.join("\n  "));
}

#[test]
fn unsafe_lines_are_at_most_half_of_702() {
    let lines: usize = lua_sources().iter().map(|(_, text)| safety::unsafe_lines(text)).sum();
    assert!(
        lines <= safety::MAX_UNSAFE_LINES,
        "{lines} lines mention unsafe in lua/src (at most {})",
        safety::MAX_UNSAFE_LINES
    );
}

#[test]
fn no_safety_note_stands_more_than_three_times() {
    let files = lua_sources();
    let repeated = safety::repeated_notes(files.iter().map(|(_, t)| t.as_str()));
    let shown: Vec<String> = repeated.iter().map(|(n, c)| format!("{c}x {n}")).collect();
    assert!(
        repeated.is_empty(),
        "SAFETY notes repeated more than {} times:\n  {}",
        safety::MAX_SAME_NOTE,
        shown.join("\n  ")
    );
}

// The checker's own tests: sources written here, as `(file under src, text)`.

fn sources(files: &[(&str, &str)]) -> Vec<(ModPath, String)> {
    files.iter().map(|(f, text)| (module_of(Path::new(f)), text.to_string())).collect()
}

/// The edges of `files`, as `a -> b` lines.
fn edges_of(files: &[(&str, &str)]) -> Vec<String> {
    let graph = graph_of(&sources(files));
    let mut lines = Vec::new();
    for (a, outs) in graph.edges.iter().enumerate() {
        lines.extend(outs.iter().map(|&b| format!("{} -> {}", graph.names[a], graph.names[b])));
    }
    lines
}

#[test]
fn finds_a_circle_of_three_through_use_inline_and_super() {
    let circles = circles_of(&sources(&[
        ("lib.rs", "mod state; mod ops; mod sched;"),
        ("state.rs", "use crate::ops::Builtin;"),
        ("ops.rs", "fn f() { crate::sched::run(1); }"),
        ("sched/mod.rs", "mod inner;\npub use inner::run;"),
        ("sched/inner.rs", "use super::super::state;"),
    ]));
    assert_eq!(circles, ["ops -> sched -> sched::inner -> state -> ops"]);
}

#[test]
fn finds_a_parent_and_child_circle_and_every_edge_on_circles() {
    let circles = circles_of(&sources(&[
        ("lib.rs", "mod engine; mod a; mod b;"),
        ("engine/mod.rs", "mod step;\npub use step::park;\npub struct Engine;"),
        ("engine/step.rs", "use super::Engine;"),
        ("a.rs", "fn f() { crate::b::g() }"),
        ("b.rs", "fn g() { super::a::f() }"),
    ]));
    assert_eq!(circles, ["a -> b -> a", "engine -> engine::step -> engine"]);
}

#[test]
fn parses_nested_braces_self_globs_and_renames() {
    let edges = edges_of(&[
        ("lib.rs", "mod a; mod b; mod c; mod d;"),
        ("a.rs", "pub(crate) use crate::{b::{self, x as y}, c::{*, z::{W, V}}};"),
        ("b.rs", "use crate::{\n    d::{\n        self,\n    },\n};"),
        ("c.rs", "use ::std::fmt; use std::io; use cothread::Sched;"),
        ("d.rs", ""),
    ]);
    assert_eq!(edges, ["a -> b", "a -> c", "b -> d"]);
}

#[test]
fn reads_inline_paths_super_super_and_self() {
    let edges = edges_of(&[
        ("lib.rs", "mod net; mod raw;"),
        ("raw.rs", "pub fn push() {}"),
        ("net/mod.rs", "mod tcp; mod udp; fn f() { self::udp::g(); }"),
        ("net/tcp.rs", "fn f() { super::super::raw::push(); let x: Vec<super::udp::Addr> = v; }"),
        ("net/udp.rs", "fn g() { let a = 1u8; }"),
    ]);
    assert_eq!(edges, ["net -> net::udp", "net::tcp -> net::udp", "net::tcp -> raw"]);
}

#[test]
fn a_parent_naming_a_child_counts_but_mod_does_not() {
    let edges = edges_of(&[
        ("lib.rs", "mod socket;"),
        ("socket/mod.rs", "mod tcp; mod udp; const F: &[fn()] = &[tcp::receive];"),
        ("socket/tcp.rs", "pub fn receive() {}"),
        ("socket/udp.rs", ""),
    ]);
    assert_eq!(edges, ["socket -> socket::tcp"]);
}

#[test]
fn comments_strings_and_chars_are_not_references() {
    let edges = edges_of(&[
        ("lib.rs", "mod a; mod b; mod c;"),
        (
            "a.rs",
            "// use crate::b;\n/* crate::b::f() /* nested */ crate::b */\n/// [`crate::b::f`]\n\
             const S: &str = \"crate::b::f\"; const R: &str = r#\"crate::b\"#;\n\
             const Q: char = '\\''; const C: char = ':'; fn f<'a>(x: &'a u8) {}\n\
             fn g() { crate::c::real() }",
        ),
        ("b.rs", ""),
        ("c.rs", ""),
    ]);
    assert_eq!(edges, ["a -> c"]);
}

#[test]
fn super_in_an_inline_module_is_its_file() {
    let edges = edges_of(&[
        ("lib.rs", "mod reader; mod buffer;"),
        ("reader.rs", "fn f() {}\n#[cfg(test)]\nmod tests {\n    use super::*;\n    use super::super::buffer;\n}"),
        ("buffer.rs", "fn g() { crate::reader::f() }"),
    ]);
    assert_eq!(edges, ["buffer -> reader", "reader -> buffer"]);
}

#[test]
fn an_exported_macro_stands_for_its_file() {
    let edges = edges_of(&[
        ("lib.rs", "mod lua; mod a; mod b;"),
        ("lua/mod.rs", "#[macro_export]\nmacro_rules! cfn { () => { $crate::lua::ret() } }\npub fn ret() {}"),
        ("a.rs", "use crate::cfn;\ncfn!();"),
        ("b.rs", "crate::cfn!(); fn f() { crate::g() }"),
    ]);
    assert_eq!(edges, ["a -> lua", "b -> lib", "b -> lua"]);
}

#[test]
fn a_reference_to_the_root_is_an_edge_to_lib() {
    let circles = circles_of(&sources(&[("lib.rs", "mod a; fn f() { a::g() }"), ("a.rs", "fn g() { crate::f() }")]));
    assert_eq!(circles, ["lib -> a -> lib"]);
}

#[test]
fn bad_input_is_read_without_a_panic() {
    let edges =
        edges_of(&[("lib.rs", "mod a;"), ("a.rs", "use crate::{a, , +; use super; use crate::{ \"unterminated")]);
    assert_eq!(edges, ["a -> lib"]);
}

#[test]
fn module_paths_of_files() {
    assert_eq!(module_of(Path::new("lib.rs")), Vec::<String>::new());
    assert_eq!(module_of(Path::new("engine/mod.rs")), ["engine"]);
    assert_eq!(module_of(Path::new("engine/step.rs")), ["engine", "step"]);
    assert_eq!(module_of(Path::new("lib/mod.rs")), ["lib"]);
}

#[test]
fn safety_reads_code_lines_and_notes() {
    assert!(safety::uses_unsafe("fn f() { unsafe { g() } }"));
    assert!(safety::uses_unsafe("pub unsafe fn f() {}"));
    assert!(safety::uses_unsafe("unsafe extern \"C\" fn f() {}"));
    assert!(!safety::uses_unsafe("unsafe impl Udata for S {}\n#[unsafe(no_mangle)]\nfn f() {}"));
    assert!(!safety::uses_unsafe("// unsafe in a comment\nfn f() { let s = \"unsafe\"; }"));
    assert_eq!(safety::unsafe_lines("unsafe {\n// not unsafe_x\n// unsafe, said\nx"), 2);
    let text = "// SAFETY: a long\n//   note.\nunsafe { a() }\n    // SAFETY: short.\n    unsafe { b() }\n";
    assert_eq!(safety::notes(text), ["a long note.", "short."]);
    let four = "// SAFETY: same.\n".repeat(4);
    assert_eq!(safety::repeated_notes([four.as_str()]), [("same.".to_string(), 4)]);
    assert!(safety::repeated_notes(["// SAFETY: same.\n".repeat(3).as_str()]).is_empty());
    assert!(safety::allowed(&vec!["lua".to_string(), "stack".to_string()]));
    assert!(!safety::allowed(&vec!["engine".to_string()]));
}
