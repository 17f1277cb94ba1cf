//! A read buffer, for sockets (`net`) and for the faces' files and pipes:
//! the unread bytes are `buf[first..]`, consumed from the front (the consumed
//! part is dropped when it empties the buffer or grows past `COMPACT`), and a
//! search for a newline remembers how far it looked, so a line that arrives
//! in pieces is scanned once. Plain bytes, no system call: whoever reads
//! appends to `buf`.

/// Consumed bytes kept before they are dropped from the front.
#[cfg(not(fuzzing))]
pub const COMPACT: usize = 256 * 1024;
/// Under `cargo fuzz` (`--cfg fuzzing`) a small one, so that inputs of a few
/// KiB reach the compaction and the fuzzer runs them fast.
#[cfg(fuzzing)]
pub const COMPACT: usize = 4 * 1024;
/// The largest allocation an emptied buffer keeps (16 KiB; scaled with
/// `COMPACT` so a fuzzed stream can outgrow it too).
const KEEP: usize = COMPACT / 16;

/// A read buffer; see the [module documentation](self).
#[derive(Default, Debug)]
pub struct Buffer {
    /// The bytes: consumed ones, then unread ones. A reader appends here.
    pub buf: Vec<u8>,
    /// Where the unread bytes start.
    pub first: usize,
    /// How many unread bytes are known to hold no newline.
    scanned: usize,
}

impl Buffer {
    /// A buffer holding `data`, unread.
    pub fn with(data: &[u8]) -> Buffer {
        Buffer { buf: data.to_vec(), first: 0, scanned: 0 }
    }

    /// The bytes not consumed yet.
    pub fn unread(&self) -> &[u8] {
        &self.buf[self.first..]
    }

    /// Consumes `n` unread bytes.
    pub fn consume(&mut self, n: usize) {
        self.first += n;
        self.scanned = 0;
        if self.first >= self.buf.len() {
            // Emptied: keep a small allocation for the next bytes, give a
            // large one back (an idle connection holds no big buffer).
            if self.buf.capacity() > KEEP {
                self.buf = Vec::new();
            } else {
                self.buf.clear();
            }
            self.first = 0;
        } else if self.first > COMPACT {
            self.buf.drain(..self.first);
            self.first = 0;
        }
    }

    /// Where the first newline is in the unread bytes.
    pub fn newline(&mut self) -> Option<usize> {
        let u = &self.buf[self.first..];
        let from = self.scanned.min(u.len());
        match u[from..].iter().position(|&c| c == b'\n') {
            Some(i) => Some(from + i),
            None => {
                self.scanned = u.len();
                None
            }
        }
    }

    /// Empties it and gives its memory back.
    pub fn release(&mut self) {
        *self = Buffer::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_emptied_buffer_gives_a_large_allocation_back() {
        let mut b = Buffer::with(&[b'a'; 100 * 1024]);
        b.consume(100 * 1024);
        assert_eq!(b.buf.capacity(), 0, "a large allocation goes when emptied");
        b.buf.extend_from_slice(b"abc");
        let small = b.buf.capacity();
        b.consume(3);
        assert_eq!(b.buf.capacity(), small, "a small one is kept for the next bytes");
    }

    #[test]
    fn a_line_in_pieces_is_found_and_consumed() {
        let mut b = Buffer::with(b"ab");
        assert_eq!(b.newline(), None);
        b.buf.extend_from_slice(b"c\nd");
        assert_eq!(b.newline(), Some(3));
        b.consume(4);
        assert_eq!(b.unread(), b"d");
        assert_eq!(b.newline(), None);
        b.consume(1);
        assert!(b.buf.is_empty() && b.first == 0, "emptied: back to the start");
    }

    #[test]
    fn a_large_consumed_prefix_is_dropped() {
        let mut b = Buffer::with(&vec![b'x'; COMPACT + 10]);
        b.consume(COMPACT + 1);
        assert_eq!(b.first, 0);
        assert_eq!(b.unread().len(), 9);
        b.release();
        assert_eq!(b.buf.capacity(), 0);
    }
}
