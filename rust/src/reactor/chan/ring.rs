//! The items of a channel: a ring of fixed-size slots that grows, doubling,
//! up to the capacity. Plain data; the channel's lock guards it.

use crate::error::{Error, Result};

#[derive(Debug)]
pub(super) struct Ring {
    /// Bytes per item (> 0).
    size: usize,
    /// The most items it holds; 0: no limit.
    cap: usize,
    /// `buf.len() / size` item slots.
    buf: Vec<u8>,
    /// The slot of the oldest item.
    head: usize,
    /// Items in it.
    len: usize,
}

impl Ring {
    /// `Error::Inval` for a size of 0 or a capacity whose bytes overflow.
    pub fn new(size: usize, cap: usize) -> Result<Ring> {
        if size == 0 || cap.checked_mul(size).is_none_or(|b| b > isize::MAX as usize) {
            return Err(Error::Inval);
        }
        Ok(Ring { size, cap, buf: Vec::new(), head: 0, len: 0 })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_full(&self) -> bool {
        self.cap > 0 && self.len == self.cap
    }

    pub fn slots(&self) -> usize {
        self.buf.len() / self.size
    }

    /// Copies `item` (of the item size) in at the tail; the caller checked
    /// `is_full`. `Error::NoMem` if the ring cannot grow.
    pub fn push(&mut self, item: &[u8]) -> Result<()> {
        if self.len == self.slots() {
            self.grow()?;
        }
        let at = (self.head + self.len) % self.slots() * self.size;
        self.buf[at..at + self.size].copy_from_slice(item);
        self.len += 1;
        Ok(())
    }

    /// Copies the oldest item out into `out` (of the item size) and drops it;
    /// the caller checked that there is one.
    pub fn pop(&mut self, out: &mut [u8]) {
        let at = self.head * self.size;
        out.copy_from_slice(&self.buf[at..at + self.size]);
        self.head = (self.head + 1) % self.slots();
        self.len -= 1;
    }

    /// Doubles the ring (4 slots at first, never past the capacity), the
    /// items moved to its start, in order.
    fn grow(&mut self) -> Result<()> {
        let mut slots = self.slots().saturating_mul(2).max(4);
        if self.cap > 0 {
            slots = slots.min(self.cap);
        }
        let bytes = slots.checked_mul(self.size).ok_or(Error::NoMem)?;
        let mut buf = Vec::new();
        buf.try_reserve_exact(bytes).map_err(|_| Error::NoMem)?;
        let split = self.head * self.size;
        buf.extend_from_slice(&self.buf[split..]);
        buf.extend_from_slice(&self.buf[..split]);
        buf.resize(bytes, 0);
        self.buf = buf;
        self.head = 0;
        Ok(())
    }
}
