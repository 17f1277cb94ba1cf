//! Each `// SAFETY:` note of `rust/src` argues its own block: no note's text
//! stands more than `MAX_SAME_NOTE` times, since a note that fits many blocks
//! argues none of them. The Lua crate checks its own sources the same way
//! (`lua/tests/layers`); this reader is line-based, which notes need no more.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

const MAX_SAME_NOTE: usize = 3;

/// Files not checked yet: their notes are still being rewritten. Remove each
/// entry once its notes argue their blocks.
const SKIPPED: &[&str] = &["ffi/tcp.rs", "ffi/udp.rs", "ffi/socket.rs", "ffi/coro_net.rs", "ffi/resolve.rs"];

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

/// Each `// SAFETY:` note of `text`: its following `//` lines joined, white
/// space folded.
fn notes(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut lines = text.lines().map(str::trim).peekable();
    while let Some(line) = lines.next() {
        let Some(first) = line.strip_prefix("// SAFETY:") else { continue };
        let mut note = first.to_string();
        while let Some(more) = lines.peek().and_then(|l| l.strip_prefix("//")) {
            if more.trim_start().starts_with("SAFETY:") || more.starts_with('/') || more.starts_with('!') {
                break;
            }
            note.push(' ');
            note.push_str(more);
            lines.next();
        }
        out.push(note.split_whitespace().collect::<Vec<_>>().join(" "));
    }
    out
}

/// The notes of `texts` that stand more than `MAX_SAME_NOTE` times, with
/// their count.
fn repeated<'a>(texts: impl IntoIterator<Item = &'a str>) -> Vec<(String, usize)> {
    let mut count = BTreeMap::new();
    for n in texts.into_iter().flat_map(notes) {
        *count.entry(n).or_insert(0) += 1;
    }
    count.into_iter().filter(|&(_, c)| c > MAX_SAME_NOTE).collect()
}

#[test]
fn no_safety_note_stands_more_than_three_times() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let texts: Vec<String> = rust_files(&src)
        .into_iter()
        .filter(|f| {
            let rel = f.strip_prefix(&src).expect("under src").to_string_lossy().replace('\\', "/");
            !SKIPPED.contains(&rel.as_str())
        })
        .map(|f| fs::read_to_string(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display())))
        .collect();
    assert!(texts.len() > 50, "too few sources read from {}", src.display());
    let found = repeated(texts.iter().map(String::as_str));
    let shown: Vec<String> = found.iter().map(|(n, c)| format!("{c}x {n}")).collect();
    assert!(found.is_empty(), "SAFETY notes repeated more than {MAX_SAME_NOTE} times:\n  {}", shown.join("\n  "));
}

#[test]
fn skipped_files_exist() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for f in SKIPPED {
        assert!(src.join(f).is_file(), "{f} is skipped but gone: drop it from SKIPPED");
    }
}

#[test]
fn reads_notes_across_lines() {
    let text = "// SAFETY: a long\n//   note.\nunsafe { a() }\n    // SAFETY: short.\n    unsafe { b() }\n";
    assert_eq!(notes(text), ["a long note.", "short."]);
    // A note ends at the next note, at code, and at a doc comment.
    let text = "// SAFETY: one.\n// SAFETY: two.\nx\n// SAFETY: three.\n/// Docs.\n";
    assert_eq!(notes(text), ["one.", "two.", "three."]);
    assert!(notes("// safety: not a note\n/* SAFETY: nor this */").is_empty());
}

#[test]
fn counts_a_note_over_three_times_only() {
    let four = "// SAFETY: same.\n".repeat(4);
    assert_eq!(repeated([four.as_str()]), [("same.".to_string(), 4)]);
    let three = "// SAFETY: same.\n".repeat(3);
    assert!(repeated([three.as_str()]).is_empty());
    // Spread over files, folded white space alike.
    let a = "// SAFETY: a   formula.\n// SAFETY: a formula.\n";
    let b = "    // SAFETY: a\n    // formula.\n// SAFETY: a formula.\n";
    assert_eq!(repeated([a, b]), [("a formula.".to_string(), 4)]);
}
