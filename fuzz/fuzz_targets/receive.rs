//! LuaSocket's receive patterns (`net::Pattern`) over the read buffer
//! (`util::buffer::Buffer`), on a byte stream the input makes and cuts into
//! chunks as a socket would deliver them, against a model that looks at the
//! whole stream at once. Under `cargo fuzz` the buffer compacts at 4 KiB
//! (`COMPACT`), so a few KiB of input, or a few repeated runs, reach it.
#![no_main]

use cothread::net::Pattern;
use cothread::util::buffer::{Buffer, COMPACT};

/// One unit of a repeated run: 4 bytes for a 4 KiB `COMPACT`.
const RUN: usize = COMPACT / 1024;
/// The longest stream: a quarter past `COMPACT`, so it can be compacted.
const MAX: usize = COMPACT + COMPACT / 4;

/// The input: (pattern, chunk) steps. A pattern byte picks a line, all, or
/// a count; a chunk is up to 127 literal bytes, or up to 127 × `RUN` bytes of
/// one repeated byte; at most 64 steps and about `MAX` bytes.
fn parse(mut d: &[u8]) -> (Vec<Pattern>, Vec<Vec<u8>>) {
    let (mut pats, mut chunks) = (Vec::new(), Vec::new());
    let mut total = 0;
    while let [p, n, rest @ ..] = d {
        if total > MAX || pats.len() == 64 {
            break;
        }
        pats.push(match p % 4 {
            0 | 1 => Pattern::Line,
            2 => Pattern::All,
            _ => Pattern::Count(usize::from(p / 4) * 7),
        });
        let len = usize::from(n & 0x7f);
        if n & 0x80 != 0 {
            let byte = rest.first().copied().unwrap_or(b'\n');
            chunks.push(vec![byte; len * RUN]);
            total += len * RUN;
            d = rest.get(1..).unwrap_or(&[]);
        } else {
            let take = len.min(rest.len());
            chunks.push(rest[..take].to_vec());
            total += take;
            d = &rest[take..];
        }
    }
    (pats, chunks)
}

/// What a read gives: the match, or the failed read's partial result.
#[derive(Debug, PartialEq)]
enum Got {
    Match(Vec<u8>),
    Fail(Vec<u8>),
}

fn no_cr(s: &[u8]) -> Vec<u8> {
    s.iter().copied().filter(|&c| c != b'\r').collect()
}

/// The model: `p` on the whole remaining stream `s`, and the bytes consumed.
fn model(p: Pattern, s: &[u8]) -> (Got, usize) {
    match p {
        Pattern::Line => match s.iter().position(|&c| c == b'\n') {
            Some(i) => (Got::Match(no_cr(&s[..i])), i + 1),
            None => (Got::Fail(no_cr(s)), s.len()),
        },
        Pattern::All if s.is_empty() => (Got::Fail(Vec::new()), 0),
        Pattern::All => (Got::Match(s.to_vec()), s.len()),
        Pattern::Count(0) if s.is_empty() => (Got::Fail(Vec::new()), 0),
        Pattern::Count(0) => (Got::Match(Vec::new()), 0),
        Pattern::Count(n) if s.len() >= n => (Got::Match(s[..n].to_vec()), n),
        Pattern::Count(_) => (Got::Fail(s.to_vec()), s.len()),
        // What they take depends on where the chunks end (Upto) or is
        // nothing (Ready, a wait for readiness), not the stream alone;
        // `parse` makes neither (the C face's reads, tested in net).
        Pattern::Upto(_) | Pattern::Ready => unreachable!("parse makes no Upto or Ready"),
    }
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let (pats, chunks) = parse(data);
    let stream: Vec<u8> = chunks.concat();
    let mut pos = 0; // the model's place in the stream
    let mut buf = Buffer::default();
    let mut next = chunks.iter();
    for p in pats {
        let got = loop {
            if let Some(m) = p.take(&mut buf) {
                break Got::Match(m);
            }
            match next.next() {
                Some(c) => buf.buf.extend_from_slice(c),
                None => match p.take_at_end(&mut buf) {
                    Some(m) => break Got::Match(m),
                    None => break Got::Fail(p.take_partial(&mut buf)),
                },
            }
        };
        let (want, used) = model(p, &stream[pos..]);
        assert_eq!(got, want, "{p:?} at byte {pos}");
        pos += used;
        // What is buffered is exactly the stream delivered so far, after `pos`.
        let delivered = stream.len() - next.as_slice().iter().map(Vec::len).sum::<usize>();
        assert_eq!(buf.unread(), &stream[pos..delivered]);
        if matches!(got, Got::Fail(_)) {
            break; // a failed read at the end of the stream: nothing more comes
        }
    }
});
