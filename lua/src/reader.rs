//! The read buffer of a stream and Lua's `io` read formats over it.
//!
//! One `Reader` serves files and pipes alike: `ready` says whether a format
//! can be answered from the buffer (enough bytes, or the end of the stream),
//! `take` answers it, and `fill` reads one more chunk from a descriptor
//! (blocking for a file, on a pool thread; non-blocking for a pipe, on the
//! loop's thread). So a line costs one system call per chunk, not per line.

use std::os::fd::RawFd;

use crate::buffer::Buffer;

/// Bytes asked of `read(2)` at a time.
const CHUNK: usize = 64 * 1024;
/// The longest numeral "n" reads (Lua's `L_MAXLENNUM`).
const MAX_NUMERAL: usize = 200;

/// A read format of `file:read`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Format {
    /// "l" (`keep`: false) or "L": a line, without or with its newline.
    Line { keep: bool },
    /// "a": everything up to the end of the stream.
    All,
    /// "n": a numeral (converted by the caller).
    Number,
    /// A byte count (0: a test for the end of the stream).
    Count(usize),
}

#[derive(Default)]
pub struct Reader {
    b: Buffer,
    /// The end of the stream was read.
    pub eof: bool,
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// The length of the numeral at the start of `s` as Lua's `read_number`
/// accepts it (sign, "0x", digits, point, exponent), or `None` if `s` ends
/// before the numeral does and more data may come (`!eof`).
fn numeral(s: &[u8], eof: bool) -> Option<usize> {
    struct Scan<'a> {
        s: &'a [u8],
        i: usize,
        eof: bool,
    }
    impl Scan<'_> {
        /// Accepts the next byte if it is in `set`; `Err` if more data is needed.
        fn test(&mut self, set: &[u8]) -> Result<bool, ()> {
            match self.s.get(self.i) {
                Some(c) if set.contains(c) => {
                    self.i += 1;
                    Ok(true)
                }
                Some(_) => Ok(false),
                None if self.eof || self.i > MAX_NUMERAL => Ok(false),
                None => Err(()),
            }
        }
        fn digits(&mut self, hex: bool) -> Result<usize, ()> {
            let mut n = 0;
            loop {
                match self.s.get(self.i) {
                    Some(c) if c.is_ascii_digit() || (hex && c.is_ascii_hexdigit()) => {
                        self.i += 1;
                        n += 1;
                    }
                    Some(_) => return Ok(n),
                    None if self.eof || self.i > MAX_NUMERAL => return Ok(n),
                    None => return Err(()),
                }
            }
        }
    }
    let mut sc = Scan { s, i: 0, eof };
    let run = |sc: &mut Scan| -> Result<(), ()> {
        sc.test(b"-+")?;
        let mut count = 0;
        let mut hex = false;
        if sc.test(b"0")? {
            if sc.test(b"xX")? { hex = true } else { count = 1 }
        }
        count += sc.digits(hex)?;
        if sc.test(b".")? {
            count += sc.digits(hex)?;
        }
        if count > 0 && sc.test(if hex { b"pP" } else { b"eE" })? {
            sc.test(b"-+")?;
            sc.digits(false)?;
        }
        Ok(())
    };
    run(&mut sc).ok().map(|()| sc.i.min(MAX_NUMERAL + 1))
}

impl Reader {
    pub fn unread(&self) -> &[u8] {
        self.b.unread()
    }

    fn consume(&mut self, n: usize) {
        self.b.consume(n)
    }

    /// Drops the unread data (a seek or a write moves the position); returns
    /// how many bytes it held.
    pub fn discard(&mut self) -> usize {
        let n = self.unread().len();
        self.consume(n);
        self.eof = false;
        n
    }

    fn newline(&mut self) -> Option<usize> {
        self.b.newline()
    }

    /// Leading white space before a numeral: consumed (Lua skips it too).
    fn skip_space(&mut self) {
        let n = self.unread().iter().take_while(|&&c| is_space(c)).count();
        self.consume(n);
    }

    /// Can `take(f)` answer now?
    pub fn ready(&mut self, f: Format) -> bool {
        if self.eof {
            return true;
        }
        match f {
            Format::Line { .. } => self.newline().is_some(),
            Format::All => false,
            Format::Count(n) => self.unread().len() >= n.max(1),
            Format::Number => {
                self.skip_space();
                !self.unread().is_empty() && numeral(self.unread(), false).is_some()
            }
        }
    }

    /// Answers `f` (which must be `ready`): appends its bytes to `out` and
    /// consumes them; false for Lua's fail (the end of the stream).
    pub fn take(&mut self, f: Format, out: &mut Vec<u8>) -> bool {
        let n = match f {
            Format::Line { keep } => match self.newline() {
                Some(i) => {
                    out.extend_from_slice(&self.unread()[..i + keep as usize]);
                    self.consume(i + 1);
                    return true;
                }
                None if self.unread().is_empty() => return false,
                None => self.unread().len(),
            },
            Format::All => self.unread().len(),
            Format::Count(_) if self.unread().is_empty() => return false,
            Format::Count(n) => n.min(self.unread().len()),
            Format::Number => {
                self.skip_space();
                let n = numeral(self.unread(), true).unwrap_or(0);
                if n > MAX_NUMERAL {
                    // Too long for Lua's `io`: it fails after that many.
                    self.consume(MAX_NUMERAL);
                    return false;
                }
                n
            }
        };
        out.extend_from_slice(&self.unread()[..n]);
        self.consume(n);
        true
    }

    /// Reads one chunk from `fd` into the buffer: the bytes read (0: the end
    /// of the stream, `eof` is set), or the errno (`EAGAIN` for a
    /// non-blocking descriptor with nothing to read).
    pub fn fill(&mut self, fd: RawFd) -> Result<usize, i32> {
        if self.b.first > 0 && self.b.first == self.b.buf.len() {
            self.b.buf.clear();
            self.b.first = 0;
        }
        let r = cothread::os::fd::read_into(fd, &mut self.b.buf, CHUNK);
        if r == Ok(0) {
            self.eof = true;
        }
        r
    }

    /// Fills from the blocking descriptor `fd` until `f` is `ready`.
    pub fn fill_for(&mut self, fd: RawFd, f: Format) -> Result<(), i32> {
        while !self.ready(f) {
            self.fill(fd)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reader(data: &[u8], eof: bool) -> Reader {
        Reader { b: Buffer::with(data), eof }
    }

    fn take(r: &mut Reader, f: Format) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        r.take(f, &mut out).then_some(out)
    }

    #[test]
    fn lines_wait_for_their_newline_or_the_end() {
        let mut r = reader(b"ab\ncd", false);
        assert!(r.ready(Format::Line { keep: false }));
        assert_eq!(take(&mut r, Format::Line { keep: false }).unwrap(), b"ab");
        assert!(!r.ready(Format::Line { keep: true }));
        r.eof = true;
        assert_eq!(take(&mut r, Format::Line { keep: true }).unwrap(), b"cd");
        assert_eq!(take(&mut r, Format::Line { keep: false }), None);
        assert_eq!(take(&mut r, Format::All).unwrap(), b"");
    }

    #[test]
    fn counts_take_at_most_what_is_there() {
        let mut r = reader(b"hello", false);
        assert!(!r.ready(Format::Count(6)));
        assert!(r.ready(Format::Count(0)));
        assert_eq!(take(&mut r, Format::Count(0)).unwrap(), b"");
        r.eof = true;
        assert_eq!(take(&mut r, Format::Count(6)).unwrap(), b"hello");
        assert_eq!(take(&mut r, Format::Count(0)), None);
        assert_eq!(take(&mut r, Format::Count(3)), None);
    }

    #[test]
    fn numerals_follow_lua() {
        assert_eq!(numeral(b"12 ", false), Some(2));
        assert_eq!(numeral(b"12", false), None);
        assert_eq!(numeral(b"12", true), Some(2));
        assert_eq!(numeral(b"-0x1Fp2,", false), Some(7));
        assert_eq!(numeral(b"3.5e-2x", false), Some(6));
        assert_eq!(numeral(b"abc", false), Some(0));
        let mut r = reader(b"  \n 42 7", false);
        assert!(r.ready(Format::Number));
        assert_eq!(take(&mut r, Format::Number).unwrap(), b"42");
        assert!(!r.ready(Format::Number), "7 may go on");
    }

    #[test]
    fn a_numeral_over_200_characters_fails_as_in_lua() {
        let digits = [b'7'; 250];
        let mut r = reader(&digits[..200], false);
        assert!(!r.ready(Format::Number), "a 201st digit may come");
        let mut r = reader(&digits[..201], false);
        assert!(r.ready(Format::Number), "201 digits are too many already");
        assert_eq!(take(&mut r, Format::Number), None);
        assert_eq!(r.unread(), b"7", "Lua's io consumes 200 of them");
        let mut r = reader(&digits[..200], true);
        assert_eq!(take(&mut r, Format::Number).map(|v| v.len()), Some(200));
    }
}
