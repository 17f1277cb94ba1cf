//! Where `lua/src` may hold unsafe code, how much, and whether each
//! `// SAFETY:` note argues its own block: issue 16's rules, checked.
//!
//! - Unsafe code (an `unsafe` block or function) stands only in the
//!   modules `ALLOWED` names: layer (1), `lua/`, the resume loop, and the
//!   few others the list says why of.
//! - The lines that mention `unsafe` at all (`grep -rnw unsafe lua/src`,
//!   the measure) are at most `MAX_UNSAFE_LINES`.
//! - No note's text stands more than `MAX_SAME_NOTE` times: a note that
//!   fits many blocks argues none of them.

use std::collections::BTreeMap;

use crate::lex::{self, Token};
use crate::refs::ModPath;

/// The modules (and their children) that may hold unsafe code, and why.
pub const ALLOWED: &[&str] = &[
    // Layer (1): the one layer over the Lua C API.
    "lua",
    // The resume loop: it resumes raw threads (`sched`), dispatches their
    // yields (`ops`), keeps the registered threads (`registry`), parks the
    // running one (`park`) and lends the engine its core (`state`).
    "sched",
    "ops",
    "registry",
    "park",
    "state",
    // The engine's small core: what it reaches by address (a host's loop,
    // an operation lent to its step), and its tests.
    "engine::link",
    "engine::step",
    "engine::tests",
    // Pointers a host hands in: a `cot_loop` (`attach`), futures
    // (`promise_of`, `future_of`).
    "host",
    "future",
];

/// Half of the 702 lines the issue started from, rounded down.
pub const MAX_UNSAFE_LINES: usize = 351;

pub const MAX_SAME_NOTE: usize = 3;

/// Whether module `m` is one of `ALLOWED` or inside one.
pub fn allowed(m: &ModPath) -> bool {
    ALLOWED.iter().any(|a| {
        let a: Vec<&str> = a.split("::").collect();
        m.len() >= a.len() && m.iter().zip(&a).all(|(x, y)| x == y)
    })
}

/// Does the code of `text` (comments and strings aside) hold unsafe code:
/// an `unsafe` block or an `unsafe fn` (`unsafe extern` too)? An `unsafe
/// impl` (a type's promise, made where the type is) and an `unsafe(..)`
/// attribute are not code.
pub fn uses_unsafe(text: &str) -> bool {
    let word = |t: &Token, w: &str| matches!(t, Token::Ident(x) if x == w);
    lex::tokens(text)
        .windows(2)
        .any(|w| word(&w[0], "unsafe") && (w[1] == Token::Open || word(&w[1], "fn") || word(&w[1], "extern")))
}

/// Lines of `text` with the word `unsafe`, as `grep -w` counts them.
pub fn unsafe_lines(text: &str) -> usize {
    text.lines()
        .filter(|l| {
            l.match_indices("unsafe").any(|(i, w)| {
                let word = |c: char| c.is_alphanumeric() || c == '_';
                !l[..i].ends_with(word) && !l[i + w.len()..].starts_with(word)
            })
        })
        .count()
}

/// Each `// SAFETY:` note of `text` (its following `//` lines joined,
/// white space folded).
pub fn notes(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut lines = text.lines().map(str::trim).peekable();
    while let Some(line) = lines.next() {
        let Some(first) = line.strip_prefix("// SAFETY:") else { continue };
        let mut note = first.trim().to_string();
        while let Some(more) = lines.peek().and_then(|l| l.strip_prefix("//")) {
            if more.trim_start().starts_with("SAFETY:") {
                break;
            }
            note.push(' ');
            note.push_str(more.trim());
            lines.next();
        }
        out.push(note.split_whitespace().collect::<Vec<_>>().join(" "));
    }
    out
}

/// The notes that stand more than `MAX_SAME_NOTE` times, with their count.
pub fn repeated_notes<'a>(texts: impl IntoIterator<Item = &'a str>) -> Vec<(String, usize)> {
    let mut count = BTreeMap::new();
    for n in texts.into_iter().flat_map(notes) {
        *count.entry(n).or_insert(0) += 1;
    }
    count.into_iter().filter(|&(_, c)| c > MAX_SAME_NOTE).collect()
}
