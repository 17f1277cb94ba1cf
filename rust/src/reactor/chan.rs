//! A channel between the tasks of one loop: a FIFO of fixed-size items,
//! copied in and out, bounded or unbounded, that can be closed.
//!
//! The channel itself never waits. Its two signals (keys of the loop's
//! scheduler, addresses inside it) are where waiters park: receivers on
//! [`Chan::recv_key`] until an item comes, senders on [`Chan::send_key`]
//! until there is room. A send or receive that succeeds notifies the other
//! side's key, a close notifies both; a woken waiter tries again (another
//! may have been first) and parks again if it must. Notifying moves the
//! whole queue of a key in O(1); nothing is scanned.
//!
//! Closing keeps the items: receivers drain them, then get `Error::Pipe`;
//! senders get `Error::Pipe` at once.
//!
//! The keys are addresses inside the channel, so it must not move while a
//! task waits on it (the C ABI boxes it). It counts its waiters
//! ([`Chan::wait_begin`]) so that freeing a channel waited on can be refused.

use super::Loop;
use crate::error::{Error, Result};
use crate::sched::When;

/// A channel of items of one size. See the [module documentation](self).
#[derive(Debug)]
pub struct Chan {
    /// Bytes per item (> 0).
    size: usize,
    /// The most items it holds; 0: no limit.
    cap: usize,
    /// A ring of `buf.len() / size` item slots.
    buf: Vec<u8>,
    /// The slot of the oldest item.
    head: usize,
    /// Items in it.
    len: usize,
    closed: bool,
    /// Tasks parked on its keys.
    waiters: u32,
    /// Their addresses are the keys: receivers at 0, senders at 1.
    keys: [u8; 2],
}

impl Chan {
    /// A channel of items of `size` bytes holding at most `cap` of them (0:
    /// unbounded). `Error::Inval` for a size of 0 or a capacity whose bytes
    /// overflow. Its ring grows as items come, up to the capacity.
    pub fn new(size: usize, cap: usize) -> Result<Chan> {
        if size == 0 || cap.checked_mul(size).is_none_or(|b| b > isize::MAX as usize) {
            return Err(Error::Inval);
        }
        Ok(Chan { size, cap, buf: Vec::new(), head: 0, len: 0, closed: false, waiters: 0, keys: [0; 2] })
    }

    /// Bytes per item.
    pub fn item_size(&self) -> usize {
        self.size
    }

    /// The capacity it was made with (0: unbounded).
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Items in it.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Is it empty?
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Was it closed?
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// The key receivers wait on for an item (or the close).
    pub fn recv_key(&self) -> usize {
        &self.keys[0] as *const u8 as usize
    }

    /// The key senders wait on for room (or the close).
    pub fn send_key(&self) -> usize {
        &self.keys[1] as *const u8 as usize
    }

    /// A task parks on one of its keys.
    pub fn wait_begin(&mut self) {
        self.waiters += 1;
    }

    /// A task parked by [`Chan::wait_begin`] runs again.
    pub fn wait_end(&mut self) {
        self.waiters = self.waiters.saturating_sub(1);
    }

    /// Do tasks wait on it?
    pub fn is_waited(&self) -> bool {
        self.waiters > 0
    }

    fn slots(&self) -> usize {
        self.buf.len() / self.size
    }

    /// Wakes the waiters of `key` (they try again in their turn).
    fn wake(&self, l: &mut Loop, key: usize) -> Result<()> {
        if self.waiters > 0 {
            l.task_notify(key, When::Later)?;
        }
        Ok(())
    }

    /// Copies `item` in if there is room: `Ok(true)`, or `Ok(false)` when
    /// full. `Error::Pipe` once closed, `Error::Inval` for an item of another
    /// size, `Error::NoMem` if the ring cannot grow.
    pub fn try_send(&mut self, l: &mut Loop, item: &[u8]) -> Result<bool> {
        if item.len() != self.size {
            return Err(Error::Inval);
        }
        if self.closed {
            return Err(Error::Pipe);
        }
        if self.cap > 0 && self.len == self.cap {
            return Ok(false);
        }
        if self.len == self.slots() {
            self.grow()?;
        }
        let at = (self.head + self.len) % self.slots() * self.size;
        self.buf[at..at + self.size].copy_from_slice(item);
        self.len += 1;
        self.wake(l, self.recv_key())?;
        Ok(true)
    }

    /// Copies the oldest item out into `out`: `Ok(true)`, or `Ok(false)`
    /// when empty. `Error::Pipe` when empty and closed, `Error::Inval` for a
    /// buffer of another size.
    pub fn try_recv(&mut self, l: &mut Loop, out: &mut [u8]) -> Result<bool> {
        if out.len() != self.size {
            return Err(Error::Inval);
        }
        if self.len == 0 {
            return if self.closed { Err(Error::Pipe) } else { Ok(false) };
        }
        let at = self.head * self.size;
        out.copy_from_slice(&self.buf[at..at + self.size]);
        self.head = (self.head + 1) % self.slots();
        self.len -= 1;
        self.wake(l, self.send_key())?;
        Ok(true)
    }

    /// Closes it: senders fail from now on, receivers once it is empty; its
    /// waiters are woken to see it. Returns `false` if it was closed already.
    pub fn close(&mut self, l: &mut Loop) -> Result<bool> {
        if self.closed {
            return Ok(false);
        }
        self.closed = true;
        self.wake(l, self.recv_key())?;
        self.wake(l, self.send_key())?;
        Ok(true)
    }

    /// Doubles the ring (4 slots at first, never past the capacity), the
    /// items moved to its start, in order.
    fn grow(&mut self) -> Result<()> {
        let old = self.slots();
        let mut slots = old.saturating_mul(2).max(4);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn send(c: &mut Chan, l: &mut Loop, v: u32) -> Result<bool> {
        c.try_send(l, &v.to_ne_bytes())
    }

    fn recv(c: &mut Chan, l: &mut Loop) -> Result<Option<u32>> {
        let mut b = [0u8; 4];
        Ok(c.try_recv(l, &mut b)?.then(|| u32::from_ne_bytes(b)))
    }

    #[test]
    fn bad_sizes_are_refused() {
        assert_eq!(Chan::new(0, 4).err(), Some(Error::Inval));
        assert_eq!(Chan::new(2, usize::MAX).err(), Some(Error::Inval));
        let mut l = Loop::new().unwrap();
        let mut c = Chan::new(4, 1).unwrap();
        assert_eq!(c.try_send(&mut l, &[1, 2, 3]), Err(Error::Inval));
        assert_eq!(c.try_recv(&mut l, &mut [0; 5]), Err(Error::Inval));
        assert!(c.is_empty());
    }

    #[test]
    fn bounded_refuses_past_its_capacity_and_keeps_order_across_the_ring() {
        let mut l = Loop::new().unwrap();
        let mut c = Chan::new(4, 3).unwrap();
        let mut next = 0;
        for round in 0..10 {
            while send(&mut c, &mut l, next).unwrap() {
                next += 1;
            }
            assert_eq!(c.len(), 3, "round {round}");
            for k in 0..2 {
                assert_eq!(recv(&mut c, &mut l).unwrap(), Some(next - 3 + k));
            }
        }
        assert_eq!(c.slots(), 3, "the ring never grows past the capacity");
    }

    #[test]
    fn unbounded_grows_and_keeps_order() {
        let mut l = Loop::new().unwrap();
        let mut c = Chan::new(4, 0).unwrap();
        for v in 0..3 {
            send(&mut c, &mut l, v).unwrap();
        }
        assert_eq!(recv(&mut c, &mut l).unwrap(), Some(0)); // head moves off slot 0
        for v in 3..1000 {
            assert!(send(&mut c, &mut l, v).unwrap());
        }
        assert_eq!(c.len(), 999);
        for v in 1..1000 {
            assert_eq!(recv(&mut c, &mut l).unwrap(), Some(v));
        }
        assert_eq!(recv(&mut c, &mut l).unwrap(), None);
    }

    #[test]
    fn close_lets_receivers_drain_then_fails() {
        let mut l = Loop::new().unwrap();
        let mut c = Chan::new(4, 0).unwrap();
        send(&mut c, &mut l, 7).unwrap();
        assert!(c.close(&mut l).unwrap());
        assert!(!c.close(&mut l).unwrap(), "once");
        assert_eq!(send(&mut c, &mut l, 8), Err(Error::Pipe));
        assert_eq!(recv(&mut c, &mut l).unwrap(), Some(7));
        assert_eq!(recv(&mut c, &mut l), Err(Error::Pipe));
    }

    /// A loop task parked on a key of `c` (its senders' if `sender`) that
    /// counts its runs.
    fn parked(l: &mut Loop, c: &mut Chan, sender: bool) -> std::rc::Rc<std::cell::Cell<u32>> {
        let key = if sender { c.send_key() } else { c.recv_key() };
        let runs = std::rc::Rc::new(std::cell::Cell::new(0));
        let r = runs.clone();
        let t = l.task_init(0, Box::new(move |_, _, _| r.set(r.get() + 1)));
        l.task_schedule(t, When::Wait(key)).unwrap();
        c.wait_begin();
        runs
    }

    #[test]
    fn each_side_wakes_the_other_and_close_wakes_both() {
        use crate::reactor::RunMode;
        let mut l = Loop::new().unwrap();
        let mut c = Box::new(Chan::new(4, 1).unwrap());
        let rx = parked(&mut l, &mut c, false);
        l.run(RunMode::NoWait).unwrap();
        assert_eq!(rx.get(), 0, "parked until an item comes");
        send(&mut c, &mut l, 1).unwrap();
        l.run(RunMode::NoWait).unwrap();
        assert_eq!(rx.get(), 1);
        c.wait_end();
        let tx = parked(&mut l, &mut c, true);
        assert_eq!(send(&mut c, &mut l, 2), Ok(false), "full");
        l.run(RunMode::NoWait).unwrap();
        assert_eq!(tx.get(), 0, "parked until there is room");
        assert_eq!(recv(&mut c, &mut l), Ok(Some(1)));
        l.run(RunMode::NoWait).unwrap();
        assert_eq!(tx.get(), 1);
        c.wait_end();
        let (rx, tx) = (parked(&mut l, &mut c, false), parked(&mut l, &mut c, true));
        assert!(c.is_waited());
        c.close(&mut l).unwrap();
        l.run(RunMode::NoWait).unwrap();
        assert_eq!((rx.get(), tx.get()), (1, 1));
    }

    #[test]
    fn keys_are_distinct_and_nonzero() {
        let c = Chan::new(1, 0).unwrap();
        assert_ne!(c.recv_key(), c.send_key());
        assert_ne!(c.recv_key(), 0);
    }
}
