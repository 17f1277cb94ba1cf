//! The modules one file names: every `use` tree (braces nested to any depth,
//! `self`, globs, `as`) and every path written inline that starts with
//! `crate::`, `super::`, `self::` or the name of a child module. `mod x;`
//! declares a child and is not a reference; `mod x { ... }` opens an inline
//! module, the scope of the `super::` inside it.

use std::collections::{BTreeMap, BTreeSet};

use crate::lex::Token;

/// A module's path from the crate root (`[]` is the root, `lib.rs`).
pub type ModPath = Vec<String>;

/// What paths resolve against: the crate's modules, and the macros exported
/// at its root (`#[macro_export]`: `crate::name` names them) by the module
/// that defines them.
pub struct Names {
    pub modules: BTreeSet<ModPath>,
    pub macros: BTreeMap<String, ModPath>,
}

/// The modules the file of module `module` names, as paths from the root,
/// each cut at its last segment that is a module (an item's name ends a path;
/// an exported macro stands for its module). Paths outside the crate
/// (`std::`, `cothread::`) are left out.
pub fn references(module: &[String], toks: &[Token], names: &Names) -> BTreeSet<ModPath> {
    let mut scope: ModPath = module.to_vec();
    let mut inline_opened_at: Vec<usize> = Vec::new();
    let mut depth = 0;
    let mut found = BTreeSet::new();
    let mut i = 0;
    while i < toks.len() {
        match &toks[i] {
            Token::Ident(w) if w == "use" => {
                let (paths, end) = use_tree(toks, i + 1, Vec::new());
                found.extend(paths.iter().filter_map(|p| resolve(&scope, p, names)));
                i = end;
            }
            Token::Ident(w) if w == "mod" => match (toks.get(i + 1), toks.get(i + 2)) {
                (Some(Token::Ident(name)), Some(Token::Open)) => {
                    scope.push(name.clone());
                    depth += 1;
                    inline_opened_at.push(depth);
                    i += 3;
                }
                _ => i += 2,
            },
            Token::Open => {
                depth += 1;
                i += 1;
            }
            Token::Close => {
                if inline_opened_at.last() == Some(&depth) {
                    inline_opened_at.pop();
                    scope.pop();
                }
                depth -= 1;
                i += 1;
            }
            Token::Ident(_) if starts_path(toks, i) => {
                let (path, end) = inline_path(toks, i);
                found.extend(resolve(&scope, &path, names));
                i = end;
            }
            _ => i += 1,
        }
    }
    found
}

/// A path starts at `i`: an identifier followed by `::`, not preceded by one.
fn starts_path(toks: &[Token], i: usize) -> bool {
    toks.get(i + 1) == Some(&Token::PathSep) && (i == 0 || toks[i - 1] != Token::PathSep)
}

/// The segments of the inline path at `i` (`a::b::c`), and the index after it.
fn inline_path(toks: &[Token], mut i: usize) -> (ModPath, usize) {
    let mut path = Vec::new();
    while let Some(Token::Ident(s)) = toks.get(i) {
        path.push(s.clone());
        i += 1;
        if toks.get(i) != Some(&Token::PathSep) {
            break;
        }
        i += 1;
    }
    (path, i)
}

/// The paths of the use tree at `i`, each after `prefix`, and the index after
/// the tree. A `self` in braces stays a segment; `resolve` reads it as "here".
fn use_tree(toks: &[Token], mut i: usize, prefix: ModPath) -> (Vec<ModPath>, usize) {
    let mut path = prefix;
    if toks.get(i) == Some(&Token::PathSep) {
        // `use ::name`: an outside crate.
        path.push("::".to_string());
        i += 1;
    }
    loop {
        match toks.get(i) {
            Some(Token::Ident(s)) => {
                path.push(s.clone());
                i += 1;
                if toks.get(i) == Some(&Token::PathSep) {
                    i += 1;
                    continue;
                }
                if matches!(toks.get(i), Some(Token::Ident(a)) if a == "as") {
                    i += 2;
                }
                return (vec![path], i);
            }
            Some(Token::Star) => return (vec![path], i + 1),
            Some(Token::Open) => return use_group(toks, i + 1, path),
            _ => return (vec![path], i),
        }
    }
}

/// The trees of a `{a, b::c, ...}` group whose first tree is at `i`, and the
/// index after its `}`.
fn use_group(toks: &[Token], mut i: usize, prefix: ModPath) -> (Vec<ModPath>, usize) {
    let mut paths = Vec::new();
    while i < toks.len() {
        match toks[i] {
            Token::Close => return (paths, i + 1),
            Token::Comma => i += 1,
            _ => {
                let (more, end) = use_tree(toks, i, prefix.clone());
                paths.extend(more);
                // A token no tree takes (bad input) is stepped over.
                i = end.max(i + 1);
            }
        }
    }
    (paths, i)
}

/// The module that `path`, written in module `scope`, names: `None` for a path
/// outside the crate or not starting at a module.
fn resolve(scope: &[String], path: &[String], names: &Names) -> Option<ModPath> {
    let (first, rest) = path.split_first()?;
    let mut at: ModPath = match first.as_str() {
        "crate" => Vec::new(),
        "super" => parent(scope)?,
        "self" => scope.to_vec(),
        name => {
            let child = child(scope, name);
            if !names.modules.contains(&child) {
                return None;
            }
            child
        }
    };
    for seg in rest {
        match seg.as_str() {
            "super" => at = parent(&at)?,
            "self" => {}
            name => {
                let next = child(&at, name);
                if names.modules.contains(&next) {
                    at = next;
                    continue;
                }
                if at.is_empty() {
                    if let Some(m) = names.macros.get(name) {
                        return Some(m.clone());
                    }
                }
                break;
            }
        }
    }
    Some(at)
}

fn parent(m: &[String]) -> Option<ModPath> {
    m.split_last().map(|(_, up)| up.to_vec())
}

fn child(m: &[String], name: &str) -> ModPath {
    let mut c = m.to_vec();
    c.push(name.to_string());
    c
}

/// The macros the file of `module` exports at the crate root: each
/// `macro_rules! name` after a `#[macro_export]`.
pub fn exported_macros(module: &[String], toks: &[Token]) -> Vec<(String, ModPath)> {
    let mut found = Vec::new();
    let mut exported = false;
    for (i, t) in toks.iter().enumerate() {
        match t {
            Token::Ident(w) if w == "macro_export" => exported = true,
            Token::Ident(w) if w == "macro_rules" => {
                if let (true, Some(Token::Ident(name))) = (exported, toks.get(i + 2)) {
                    found.push((name.clone(), module.to_vec()));
                }
                exported = false;
            }
            _ => {}
        }
    }
    found
}
