//! Rust source text to the few tokens a module reference is made of.
//! Comments, strings, characters and lifetimes are dropped, so a path in a
//! doc comment or a string is never read as a reference.

/// A token of Rust code, as far as module paths care.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    Ident(String),
    /// `::`
    PathSep,
    Open,
    Close,
    Comma,
    Semi,
    Star,
    /// Any other punctuation: it ends a path.
    Other,
}

/// The tokens of `src`, in order.
pub fn tokens(src: &str) -> Vec<Token> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        i = match c {
            _ if c.is_whitespace() => i + 1,
            '/' if next == Some('/') => skip_line(&chars, i),
            '/' if next == Some('*') => skip_block_comment(&chars, i),
            '"' => skip_string(&chars, i + 1),
            '\'' => skip_quote(&chars, i),
            _ if is_ident_start(c) => {
                let end = ident_end(&chars, i);
                let word: String = chars[i..end].iter().collect();
                if let Some(after) = raw_string_end(&chars, &word, end) {
                    after
                } else {
                    out.push(Token::Ident(word));
                    end
                }
            }
            ':' if next == Some(':') => {
                out.push(Token::PathSep);
                i + 2
            }
            _ => {
                out.push(match c {
                    '{' => Token::Open,
                    '}' => Token::Close,
                    ',' => Token::Comma,
                    ';' => Token::Semi,
                    '*' => Token::Star,
                    _ => Token::Other,
                });
                i + 1
            }
        };
    }
    out
}

fn is_ident_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn ident_end(chars: &[char], start: usize) -> usize {
    let mut i = start;
    while i < chars.len() && (chars[i] == '_' || chars[i].is_alphanumeric()) {
        i += 1;
    }
    i
}

/// The index after the newline that ends a `//` comment.
fn skip_line(chars: &[char], start: usize) -> usize {
    let mut i = start;
    while i < chars.len() && chars[i] != '\n' {
        i += 1;
    }
    i + 1
}

/// The index after a `/* */` comment; these nest in Rust.
fn skip_block_comment(chars: &[char], start: usize) -> usize {
    let mut depth = 0;
    let mut i = start;
    while i < chars.len() {
        match (chars[i], chars.get(i + 1)) {
            ('/', Some('*')) => {
                depth += 1;
                i += 2;
            }
            ('*', Some('/')) => {
                depth -= 1;
                i += 2;
                if depth == 0 {
                    return i;
                }
            }
            _ => i += 1,
        }
    }
    i
}

/// The index after the closing quote of a string whose text starts at `start`
/// (the prefixes `b` and `c` were read as identifiers: harmless, no `::`
/// follows them).
fn skip_string(chars: &[char], start: usize) -> usize {
    let mut i = start;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            _ => i += 1,
        }
    }
    i
}

/// `r"..."`, `r#"..."#`, `br`, `cr`: the index after the raw string when
/// `word` ending at `end` starts one.
fn raw_string_end(chars: &[char], word: &str, end: usize) -> Option<usize> {
    if !matches!(word, "r" | "br" | "cr") {
        return None;
    }
    let mut i = end;
    while chars.get(i) == Some(&'#') {
        i += 1;
    }
    if chars.get(i) != Some(&'"') {
        return None;
    }
    let hashes = i - end;
    i += 1;
    while i < chars.len() {
        if chars[i] == '"' && (1..=hashes).all(|k| chars.get(i + k) == Some(&'#')) {
            return Some(i + 1 + hashes);
        }
        i += 1;
    }
    Some(i)
}

/// A character literal (`'a'`, `'\n'`, `'\u{1F600}'`) is skipped whole; a
/// lifetime (`'a`) only by its quote.
fn skip_quote(chars: &[char], start: usize) -> usize {
    match (chars.get(start + 1), chars.get(start + 2)) {
        (Some('\\'), _) => {
            // Past the escaped character, which may be a quote.
            let mut i = start + 3;
            while i < chars.len() && chars[i] != '\'' {
                i += 1;
            }
            i + 1
        }
        (Some(_), Some('\'')) => start + 3,
        _ => start + 1,
    }
}
