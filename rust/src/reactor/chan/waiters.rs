//! What a channel keeps under its lock: its items, whether it is closed,
//! and which loops have tasks parked on which of its keys. The rules of the
//! protocol (see the channel's module documentation) live here, apart from
//! any real loop, so that loom can run them (`loom_tests.rs`) with a model
//! of a loop in place of [`Remote`](super::super::Remote).

use super::ring::Ring;
use crate::error::{Error, Result};
#[cfg(all(test, loom))]
use loom::sync::{Mutex as Lock, MutexGuard as Guard};

#[cfg(not(all(test, loom)))]
use crate::util::spin::{SpinGuard as Guard, SpinLock as Lock};

/// A loop as a channel knows it: a handle to reach it from any thread.
pub(super) trait Home: Clone {
    /// Its identity: the same for every handle of one loop, never 0 (0 is
    /// "no loop"), and not taken by another loop while a handle lives.
    fn id(&self) -> usize;
}

/// Which key of a channel a task parks on.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Side {
    /// Receivers, waiting for an item (or the close).
    Recv,
    /// Senders, waiting for room (or the close).
    Send,
}

impl Side {
    /// Both sides, receivers first.
    pub(super) const BOTH: [Side; 2] = [Side::Recv, Side::Send];

    pub(super) fn index(self) -> usize {
        self as usize
    }

    /// Its bit in a set of sides (`Entry::pending`, [`Core::woken`]).
    pub(super) fn bit(self) -> u8 {
        1 << self.index()
    }
}

/// Entries of loops with no task parked kept for their next park; past
/// it, a new loop's entry drops them. (An idle entry holds its loop's
/// inbox, and so its eventfd, until then or until the channel goes.)
const KEEP_IDLE: usize = 4;

/// One loop with tasks parked on the channel (or, idle, that had some).
struct Entry<H> {
    home: H,
    id: usize,
    /// Tasks parked, per side.
    parked: [u32; 2],
    /// Sides whose wake was posted to the loop and not taken by it yet
    /// (bits of [`Side::bit`]): while any is set, a post is on its way and
    /// a further wake only adds its bit.
    pending: u8,
}

/// The wakes a change of the channel owes, to deliver once the lock is
/// released: on the caller's own loop (a notify), on other loops (a post).
pub(super) struct Wakes<H> {
    /// Sides to notify on the caller's loop.
    pub here: [bool; 2],
    /// Loops to post a wake to.
    pub posts: Vec<H>,
}

impl<H> Default for Wakes<H> {
    fn default() -> Self {
        Wakes { here: [false; 2], posts: Vec::new() }
    }
}

/// The channel's state under its lock: each call takes it once. The lock
/// is a spin lock (`util::spin`: the critical sections are a few loads and
/// an item's copy), loom's mutex in the model checks.
pub(super) struct Locked<H>(Lock<Core<H>>);

/// A task's place in a try of [`Locked::send_or_park`] or
/// [`Locked::recv_or_park`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Parked {
    /// It is not counted as parked on this side.
    No,
    /// It was counted by the previous try and runs again: the retry keeps
    /// the count if it must wait again, else drops it (one hold of the lock
    /// for both).
    Again,
}

impl Parked {
    /// Where a try that answered `r` leaves its task: counted if it must wait.
    pub fn after(r: &Result<bool>) -> Parked {
        if matches!(r, Ok(false)) { Parked::Again } else { Parked::No }
    }
}

impl<H: Home> Locked<H> {
    pub fn new(ring: Ring) -> Self {
        Locked(Lock::new(Core::new(ring)))
    }

    #[cfg(not(all(test, loom)))]
    pub fn lock(&self) -> Guard<'_, Core<H>> {
        self.0.lock()
    }

    #[cfg(all(test, loom))]
    pub fn lock(&self) -> Guard<'_, Core<H>> {
        self.0.lock().unwrap()
    }

    /// [`Core::send`]; when full, the caller's task of loop `id` is counted
    /// as parked on the senders' side, in the same hold of the lock.
    pub fn send_or_park(
        &self,
        item: &[u8],
        at: (usize, Parked),
        home: impl FnOnce() -> H,
        w: &mut Wakes<H>,
    ) -> Result<bool> {
        let mut core = self.lock();
        let r = core.send(item, at.0, w);
        core.count(Side::Send, at, &r, home);
        r
    }

    /// [`Core::recv`]; when empty, the caller's task of loop `id` is counted
    /// as parked on the receivers' side, in the same hold of the lock.
    pub fn recv_or_park(
        &self,
        out: &mut [u8],
        at: (usize, Parked),
        home: impl FnOnce() -> H,
        w: &mut Wakes<H>,
    ) -> Result<bool> {
        let mut core = self.lock();
        let r = core.recv(out, at.0, w);
        core.count(Side::Recv, at, &r, home);
        r
    }
}

/// The state under the channel's lock.
pub(super) struct Core<H> {
    pub ring: Ring,
    pub closed: bool,
    /// One entry per loop with parked tasks; a handful at most, so a list.
    waiters: Vec<Entry<H>>,
}

impl<H: Home> Core<H> {
    pub fn new(ring: Ring) -> Self {
        Core { ring, closed: false, waiters: Vec::new() }
    }

    /// Copies `item` in if there is room (`Ok(true)`; the receivers' wakes
    /// go to `w`) or says it is full (`Ok(false)`). `Error::Pipe` once
    /// closed, `Error::NoMem` if the ring cannot grow. `here` is the
    /// caller's loop (0: none).
    pub fn send(&mut self, item: &[u8], here: usize, w: &mut Wakes<H>) -> Result<bool> {
        if self.closed {
            return Err(Error::Pipe);
        }
        if self.ring.is_full() {
            return Ok(false);
        }
        self.ring.push(item)?;
        self.wake(Side::Recv, here, w);
        Ok(true)
    }

    /// Copies the oldest item out (`Ok(true)`; the senders' wakes go to
    /// `w`) or says it is empty (`Ok(false)`). `Error::Pipe` when empty and
    /// closed.
    pub fn recv(&mut self, out: &mut [u8], here: usize, w: &mut Wakes<H>) -> Result<bool> {
        if self.ring.len() == 0 {
            return if self.closed { Err(Error::Pipe) } else { Ok(false) };
        }
        self.ring.pop(out);
        self.wake(Side::Send, here, w);
        Ok(true)
    }

    /// Closes it, waking both sides: `false` if it was closed already.
    pub fn close(&mut self, here: usize, w: &mut Wakes<H>) -> bool {
        if self.closed {
            return false;
        }
        self.closed = true;
        self.wake(Side::Recv, here, w);
        self.wake(Side::Send, here, w);
        true
    }

    /// After a try `r` of a task at `(id, parked)` on `side`: counts it if
    /// it must wait and was not counted, uncounts it if it need not and was.
    fn count(&mut self, side: Side, (id, parked): (usize, Parked), r: &Result<bool>, home: impl FnOnce() -> H) {
        match (parked, Parked::after(r)) {
            (Parked::No, Parked::Again) => self.park(side, id, home),
            (Parked::Again, Parked::No) => drop(self.unpark(side, id)),
            _ => {}
        }
    }

    /// A task of loop `id` parks on `side` (`home` makes its handle, for
    /// the loop's first).
    pub fn park(&mut self, side: Side, id: usize, home: impl FnOnce() -> H) {
        let at = match self.waiters.iter().position(|e| e.id == id) {
            Some(at) => at,
            None => {
                if self.waiters.len() >= KEEP_IDLE {
                    self.waiters.retain(|e| e.parked != [0; 2]);
                }
                self.waiters.push(Entry { home: home(), id, parked: [0; 2], pending: 0 });
                self.waiters.len() - 1
            }
        };
        self.waiters[at].parked[side.index()] += 1;
    }

    /// A task of loop `id` parked on `side` runs again. The loop's entry
    /// stays, idle, for its next park (making a loop's handle is two atomic
    /// operations): up to [`KEEP_IDLE`] entries, then the idle ones go. A
    /// wake still on its way finds nobody to notify. `false` if no such task
    /// was counted.
    pub fn unpark(&mut self, side: Side, id: usize) -> bool {
        let Some(e) = self.waiters.iter_mut().find(|e| e.id == id) else { return false };
        let Some(n) = e.parked[side.index()].checked_sub(1) else { return false };
        e.parked[side.index()] = n;
        true
    }

    /// On loop `id`, a posted wake arrives: the sides to notify there (bits
    /// of [`Side::bit`]), taken, so that the next change posts again.
    pub fn woken(&mut self, id: usize) -> u8 {
        self.waiters.iter_mut().find(|e| e.id == id).map_or(0, |e| std::mem::take(&mut e.pending))
    }

    /// Loop `id` is gone (a post to it was refused): so are its tasks.
    pub fn forget(&mut self, id: usize) {
        self.waiters.retain(|e| e.id != id);
    }

    /// Are tasks parked on it, on any loop?
    pub fn is_waited(&self) -> bool {
        self.waiters.iter().any(|e| e.parked != [0; 2])
    }

    /// Owes a wake to every loop with tasks parked on `side`: a notify if
    /// it is the caller's, else a post, unless one is on its way already.
    fn wake(&mut self, side: Side, here: usize, w: &mut Wakes<H>) {
        for e in &mut self.waiters {
            if e.parked[side.index()] == 0 {
                continue;
            }
            if e.id == here {
                w.here[side.index()] = true;
                continue;
            }
            if e.pending == 0 {
                w.posts.push(e.home.clone());
            }
            e.pending |= side.bit();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[derive(Clone, Debug, PartialEq)]
    struct H(usize);

    impl Home for H {
        fn id(&self) -> usize {
            self.0
        }
    }

    fn core(cap: usize) -> Core<H> {
        Core::new(Ring::new(1, cap).unwrap())
    }

    #[test]
    fn a_change_posts_once_per_loop_until_the_loop_takes_it() {
        let mut c = core(0);
        c.park(Side::Recv, 7, || H(7));
        c.park(Side::Recv, 7, || unreachable!("one entry per loop"));
        let mut w = Wakes::default();
        assert!(c.send(b"a", 0, &mut w).unwrap());
        assert!(c.send(b"b", 0, &mut w).unwrap());
        assert_eq!(w.posts, [H(7)], "the second send finds a wake on its way");
        c.park(Side::Send, 7, || unreachable!());
        assert!(c.close(0, &mut w));
        assert_eq!(w.posts.len(), 1, "the close adds its sides to it");
        assert_eq!(c.woken(7), Side::Recv.bit() | Side::Send.bit());
        let mut w = Wakes::default();
        assert!(!c.close(0, &mut w), "once");
        let mut out = [0];
        assert!(c.recv(&mut out, 0, &mut w).unwrap());
        assert_eq!(w.posts, [H(7)], "taken: the next change posts again");
    }

    #[test]
    fn the_callers_own_loop_is_notified_not_posted_to() {
        let mut c = core(1);
        c.park(Side::Send, 3, || H(3));
        c.park(Side::Send, 4, || H(4));
        let mut w = Wakes::default();
        assert!(c.send(b"x", 3, &mut w).unwrap());
        assert_eq!((w.here, w.posts.len()), ([false; 2], 0), "nobody waits to receive");
        assert!(!c.send(b"y", 3, &mut w).unwrap(), "full");
        let mut out = [0];
        assert!(c.recv(&mut out, 3, &mut w).unwrap());
        assert_eq!(w.here, [false, true]);
        assert_eq!(w.posts, [H(4)]);
    }

    #[test]
    fn a_loops_entry_stays_idle_until_other_loops_crowd_it_out() {
        let mut c = core(0);
        c.park(Side::Recv, 1, || H(1));
        c.park(Side::Send, 1, || H(1));
        assert!(c.unpark(Side::Recv, 1));
        assert!(c.is_waited());
        assert!(!c.unpark(Side::Recv, 1), "one too many: ignored");
        assert!(c.unpark(Side::Send, 1));
        assert!(!c.unpark(Side::Send, 1));
        assert!(!c.is_waited());
        c.park(Side::Recv, 1, || unreachable!("its idle entry serves again"));
        assert!(c.unpark(Side::Recv, 1));
        for id in 2..=KEEP_IDLE + 1 {
            c.park(Side::Recv, id, || H(id));
        }
        c.park(Side::Recv, 1, || H(1)); // dropped meanwhile: made again
        c.forget(2);
        assert_eq!(c.woken(2), 0, "a gone loop's tasks are forgotten");
        assert!(c.is_waited());
    }
}
