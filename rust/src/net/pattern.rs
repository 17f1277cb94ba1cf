//! LuaSocket's receive patterns over a read [`Buffer`]: a line, a count of
//! bytes, or everything up to the end of the stream. Pure logic: the caller
//! appends what it reads to the buffer and asks again.

use crate::util::buffer::Buffer;

/// What a read takes from a byte stream.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Pattern {
    /// A line (`"*l"`): the bytes up to the next LF, which is consumed but not
    /// returned; every CR in the line is dropped. At the end of the stream an
    /// unterminated line is not a match: the read fails, the bytes stay.
    Line,
    /// Everything up to the end of the stream (`"*a"`). Nothing at all before
    /// the end is not a match: the read fails.
    All,
    /// Exactly `n` bytes. `Count(0)` waits for at least one byte, returns
    /// nothing and leaves the byte unread (LuaSocket's `receive(0)`: a test
    /// that the stream has data and has not ended).
    Count(usize),
    /// What is there, at most `n` bytes: a read into a caller's buffer of
    /// that size (the C face). Waits for at least one byte; the rest stays
    /// buffered for the next read.
    Upto(usize),
    /// Nothing: a read that ends when reading would not block (bytes
    /// buffered or in the socket, the end of the stream, an error), moving
    /// no byte and allocating nothing. The caller then takes the bytes
    /// straight into its own memory (`Socket::try_read_into`).
    Ready,
}

impl Pattern {
    /// Whether [`Pattern::take`] would match now.
    pub fn matches(self, buf: &mut Buffer) -> bool {
        match self {
            Pattern::Line => buf.newline().is_some(),
            Pattern::All => false,
            Pattern::Count(n) => buf.unread().len() >= n.max(1),
            Pattern::Upto(_) | Pattern::Ready => !buf.unread().is_empty(),
        }
    }

    /// Takes a match from the unread bytes, or `None` (nothing consumed) if
    /// more bytes are needed.
    pub fn take(self, buf: &mut Buffer) -> Option<Vec<u8>> {
        match self {
            Pattern::Line => {
                let i = buf.newline()?;
                let line = without_cr(&buf.unread()[..i]);
                buf.consume(i + 1);
                Some(line)
            }
            Pattern::All => None,
            Pattern::Count(n) => {
                if !self.matches(buf) {
                    return None;
                }
                let bytes = buf.unread()[..n].to_vec();
                buf.consume(n);
                Some(bytes)
            }
            Pattern::Upto(n) => {
                let k = n.min(buf.unread().len());
                if k == 0 {
                    return None;
                }
                let bytes = buf.unread()[..k].to_vec();
                buf.consume(k);
                Some(bytes)
            }
            // An empty Vec allocates nothing.
            Pattern::Ready => self.matches(buf).then(Vec::new),
        }
    }

    /// Takes a match at the end of the stream (no more bytes will come):
    /// `All` takes the rest if there is any; the others match as `take` does.
    /// `None` is a failed read, the unread bytes are its partial result.
    pub fn take_at_end(self, buf: &mut Buffer) -> Option<Vec<u8>> {
        match self {
            Pattern::All if !buf.unread().is_empty() => {
                let rest = buf.unread().to_vec();
                buf.consume(rest.len());
                Some(rest)
            }
            _ => self.take(buf),
        }
    }

    /// Takes every unread byte, as LuaSocket hands out the partial result of
    /// a failed read (for a line, without its CRs).
    pub fn take_partial(self, buf: &mut Buffer) -> Vec<u8> {
        let n = buf.unread().len();
        let bytes = if self == Pattern::Line { without_cr(buf.unread()) } else { buf.unread().to_vec() };
        buf.consume(n);
        bytes
    }
}

/// Is the line at the front of the unread bytes longer than `max` bytes
/// (its CRs counted, its LF not)? Then a reader with that limit fails
/// instead of buffering more of it: the unread bytes hold no LF within their
/// first `max + 1`. LuaSocket has no limit; a face may set one (the Lua
/// face's `maxline` option).
pub fn line_too_long(buf: &mut Buffer, max: usize) -> bool {
    match buf.newline() {
        Some(i) => i > max,
        None => buf.unread().len() > max,
    }
}

fn without_cr(s: &[u8]) -> Vec<u8> {
    s.iter().copied().filter(|&c| c != b'\r').collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a reader gets from `stream` arriving in `pieces` (split points),
    /// asking `p` after each piece and once more at the end: the matches,
    /// then the partial result left.
    fn read_all(stream: &[u8], cuts: &[usize], p: Pattern) -> (Vec<Vec<u8>>, Vec<u8>) {
        let mut buf = Buffer::default();
        let mut got = Vec::new();
        let mut from = 0;
        for &to in cuts.iter().chain([&stream.len()]) {
            buf.buf.extend_from_slice(&stream[from..to]);
            from = to;
            while let Some(m) = p.take(&mut buf) {
                got.push(m);
            }
        }
        while let Some(m) = p.take_at_end(&mut buf) {
            got.push(m);
        }
        (got, p.take_partial(&mut buf))
    }

    #[test]
    fn upto_takes_what_is_there_never_more_than_asked() {
        let (got, rest) = read_all(b"abcdefg", &[2], Pattern::Upto(3));
        assert_eq!(got, [&b"ab"[..], b"cde", b"fg"]);
        assert!(rest.is_empty());
        let mut buf = Buffer::default();
        assert!(!Pattern::Upto(4).matches(&mut buf), "nothing there: it waits");
        assert_eq!(Pattern::Upto(4).take_at_end(&mut buf), None, "the end with nothing: no match");
    }

    #[test]
    fn ready_matches_buffered_bytes_and_takes_none_of_them() {
        let mut buf = Buffer::default();
        assert!(!Pattern::Ready.matches(&mut buf));
        assert_eq!(Pattern::Ready.take(&mut buf), None, "nothing there: it waits");
        buf.buf.extend_from_slice(b"ab");
        assert!(Pattern::Ready.matches(&mut buf));
        assert_eq!(Pattern::Ready.take(&mut buf), Some(Vec::new()));
        assert_eq!(buf.unread(), b"ab", "the bytes stay for the caller");
    }

    #[test]
    fn lines_split_at_every_position_read_the_same() {
        let stream = b"one\r\ntwo\n\nth\rree\r\nlast";
        let whole = read_all(stream, &[], Pattern::Line);
        assert_eq!(whole.0, [&b"one"[..], b"two", b"", b"three"]);
        assert_eq!(whole.1, b"last", "an unterminated line is the partial result");
        for i in 0..=stream.len() {
            assert_eq!(read_all(stream, &[i], Pattern::Line), whole, "split at {i}");
            for j in i..=stream.len() {
                assert_eq!(read_all(stream, &[i, j], Pattern::Line), whole, "split at {i} and {j}");
            }
        }
    }

    #[test]
    fn counts_split_at_every_position_read_the_same() {
        let stream = b"abcdefghij";
        let whole = read_all(stream, &[], Pattern::Count(3));
        assert_eq!(whole.0, [&b"abc"[..], b"def", b"ghi"]);
        assert_eq!(whole.1, b"j");
        for i in 0..=stream.len() {
            for j in i..=stream.len() {
                assert_eq!(read_all(stream, &[i, j], Pattern::Count(3)), whole, "split at {i} and {j}");
            }
        }
    }

    #[test]
    fn all_takes_the_rest_at_the_end_only() {
        let stream = b"a\r\nb";
        for i in 0..=stream.len() {
            let (got, partial) = read_all(stream, &[i], Pattern::All);
            assert_eq!(got, [b"a\r\nb".to_vec()], "CRs stay, split at {i}");
            assert!(partial.is_empty());
        }
        let mut empty = Buffer::default();
        assert_eq!(Pattern::All.take_at_end(&mut empty), None, "nothing before the end fails");
    }

    #[test]
    fn count_zero_needs_one_byte_and_keeps_it() {
        let mut buf = Buffer::default();
        assert!(!Pattern::Count(0).matches(&mut buf));
        assert_eq!(Pattern::Count(0).take_at_end(&mut buf), None, "an ended, empty stream fails");
        buf.buf.push(b'x');
        assert_eq!(Pattern::Count(0).take(&mut buf), Some(Vec::new()));
        assert_eq!(buf.unread(), b"x");
    }

    #[test]
    fn a_line_is_too_long_once_more_than_max_bytes_hold_no_lf() {
        let max = 4;
        for (unread, long) in [
            (&b""[..], false),
            (b"abcd", false),
            (b"abcd\nrest of it", false),
            (b"abc\r\n", false),
            (b"abcde", true),
            (b"abcd\r\n", true),
            (b"abcde\n", true),
            (b"\nabcdefgh", false),
        ] {
            assert_eq!(line_too_long(&mut Buffer::with(unread), max), long, "{:?}", String::from_utf8_lossy(unread));
        }
        // A line arriving in pieces is judged on what came so far.
        let mut buf = Buffer::with(b"ab");
        assert!(!line_too_long(&mut buf, max));
        buf.buf.extend_from_slice(b"cde");
        assert!(line_too_long(&mut buf, max));
        assert!(line_too_long(&mut Buffer::with(b"a"), 0), "max 0: a byte before the LF is too many");
        assert!(!line_too_long(&mut Buffer::with(b"\n"), 0));
    }

    #[test]
    fn a_line_at_the_end_is_a_failure_with_its_bytes_as_partial() {
        let mut buf = Buffer::with(b"no end\r");
        assert_eq!(Pattern::Line.take_at_end(&mut buf), None);
        assert_eq!(Pattern::Line.take_partial(&mut buf), b"no end");
        assert!(buf.unread().is_empty());
    }
}
