//! A channel between tasks of any loops, on any threads: a FIFO of
//! fixed-size items, copied in and out, bounded or unbounded, that can be
//! closed.
//!
//! The channel itself never waits. Its two keys (addresses inside it) are
//! where tasks park, in their own loop's scheduler: receivers on
//! [`Chan::recv_key`] until an item comes, senders on [`Chan::send_key`]
//! until there is room. A send or receive that succeeds wakes the other
//! side's parked tasks, a close wakes both; a woken task tries again
//! (another may have been first, and a wake may be spurious) and parks again
//! if it must.
//!
//! Closing keeps the items: receivers drain them, then get `Error::Pipe`;
//! senders get `Error::Pipe` at once.
//!
//! # Sharing
//! A [`Chan`] is a handle: clones share one channel, which lives as long as
//! its last handle (a wake on its way holds one), so its keys stay its own
//! while anything may notify them. It is `Send` and `Sync`; every call may
//! come from any thread, on a loop (the caller passes it: `here`) or not.
//!
//! # State (under one lock, `waiters.rs`)
//! - the items and `closed`;
//! - the waiters: for each loop with tasks parked on the channel, its
//!   [`Remote`], its identity, the count of tasks parked per side, and
//!   `pending`, the sides whose wake was posted to it and not taken yet.
//!
//! # Protocol
//! - **Park.** A task of loop L that must wait tries and, if it fails,
//!   counts itself in L's entry *in the same hold of the lock*
//!   ([`Chan::recv_or_park`], [`Chan::send_or_park`]), then parks on the key
//!   in L's scheduler (`When::Wait(key)`) before it yields to L. When it
//!   runs again it tries again, still counted ([`Parked::Again`]): the try
//!   drops the count if it succeeds or fails for good, keeps it if the task
//!   must wait again. A task that gives up (a timeout, a wake of another
//!   kind, its coroutine freed) uncounts itself ([`Chan::unpark`]).
//! - **Change.** A send, receive or close, under the lock, owes a wake to
//!   each loop with tasks parked on the side it unblocks. After releasing
//!   the lock the caller delivers them: on its own loop, `task_notify(key,
//!   Later)` at once; on another loop, a post (`Remote::post`) that, there,
//!   takes the loop's `pending` sides under the lock and notifies their
//!   keys. A loop whose `pending` is set already gets no second post: the
//!   change only adds its side, which the post on its way will take.
//! - **Gone.** A post refused (the loop was dropped) forgets that loop's
//!   entry: nothing parks there any more.
//!
//! # Why no wake-up is lost
//! The lock orders every try, park and change. Take a task of L parked by
//! a failed try, and a later change that unblocks it:
//! - the change sees L's entry (it was counted in the failed try's hold)
//!   and owes L a wake: a notify (L is the caller's loop, and the task
//!   parked before the caller could run) or `pending` set;
//! - `pending` set: either this change posted, or a post is on its way that
//!   has not taken `pending` yet. That post takes it after the change, and
//!   notifies L after the task parked: the post runs on L's thread, which
//!   finished parking the task (the try, the count and `When::Wait` happen in
//!   one step of L) before it runs any post.
//!
//! A change before the failed try is seen by the try itself. A wake that
//! finds a task not parked in its scheduler (it timed out, was woken
//! otherwise, or is woken and waits for its turn) is spurious and harmless:
//! the task tries under the lock before it parks again. loom checks this
//! (`loom_tests.rs`).
//!
//! # Costs
//! A try with nobody parked takes the lock once (a spin lock: one atomic
//! exchange, `util/spin.rs`) and copies the item; a retry after a wake
//! takes it once too. Posts go out only to loops with parked tasks, at most
//! one on its way per loop: a flood of sends to a parked receiver costs its
//! loop one post.
//!
//! It counts its parked tasks ([`Chan::is_waited`]) so that freeing a
//! channel waited on can be refused. A loop counts its tasks parked on
//! channels too: they keep it alive, since another thread may wake them
//! (as an async handle does; a task waiting on a plain signal does not).

mod ring;
mod waiters;

use std::sync::Arc;

use super::{Loop, Remote};
use crate::error::{Error, Result};
use crate::sched::When;
use ring::Ring;
use waiters::{Home, Locked, Wakes};
pub use waiters::{Parked, Side};

/// A channel of items of one size. See the [module documentation](self).
#[derive(Clone)]
pub struct Chan(Arc<Shared>);

struct Shared {
    /// Bytes per item (> 0).
    size: usize,
    /// The capacity it was made with (0: unbounded).
    cap: usize,
    /// Their addresses are the keys: receivers at 0, senders at 1.
    keys: [u8; 2],
    state: Locked<Remote>,
}

impl Home for Remote {
    fn id(&self) -> usize {
        Arc::as_ptr(&self.inbox) as usize
    }
}

impl Loop {
    /// The identity a channel knows this loop by (its `Remote`'s).
    fn chan_id(&self) -> usize {
        Arc::as_ptr(&self.inbox) as usize
    }

    /// Follows a task's count in a channel (see `Core::count`): the tasks
    /// parked on channels keep the loop alive.
    fn chan_count(&mut self, before: Parked, r: &Result<bool>) {
        match (before, Parked::after(r)) {
            (Parked::No, Parked::Again) => self.hold(),
            (Parked::Again, Parked::No) => self.unhold(),
            _ => {}
        }
    }
}

impl Shared {
    fn key(&self, side: Side) -> usize {
        &self.keys[side.index()] as *const u8 as usize
    }
}

impl Chan {
    /// A channel of items of `size` bytes holding at most `cap` of them (0:
    /// unbounded). `Error::Inval` for a size of 0 or a capacity whose bytes
    /// overflow. Its ring grows as items come, up to the capacity.
    pub fn new(size: usize, cap: usize) -> Result<Chan> {
        let state = Locked::new(Ring::new(size, cap)?);
        Ok(Chan(Arc::new(Shared { size, cap, keys: [0; 2], state })))
    }

    /// Bytes per item.
    pub fn item_size(&self) -> usize {
        self.0.size
    }

    /// The capacity it was made with (0: unbounded).
    pub fn capacity(&self) -> usize {
        self.0.cap
    }

    /// Items in it (a snapshot, when other threads use it).
    pub fn len(&self) -> usize {
        self.0.state.lock().ring.len()
    }

    /// Is it empty (a snapshot)?
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Was it closed?
    pub fn is_closed(&self) -> bool {
        self.0.state.lock().closed
    }

    /// The key receivers park on for an item (or the close).
    pub fn recv_key(&self) -> usize {
        self.0.key(Side::Recv)
    }

    /// The key senders park on for room (or the close).
    pub fn send_key(&self) -> usize {
        self.0.key(Side::Send)
    }

    /// The key of `side`.
    pub fn key(&self, side: Side) -> usize {
        self.0.key(side)
    }

    /// Do tasks of any loop wait on it (parked, or woken and not run yet)?
    pub fn is_waited(&self) -> bool {
        self.0.state.lock().is_waited()
    }

    fn check(&self, len: usize) -> Result<()> {
        if len == self.0.size { Ok(()) } else { Err(Error::Inval) }
    }

    /// Copies `item` in if there is room: `Ok(true)`, or `Ok(false)` when
    /// full. `Error::Pipe` once closed, `Error::Inval` for an item of another
    /// size, `Error::NoMem` if the ring cannot grow. `here` is the loop the
    /// caller runs, if any: its parked receivers are notified at once, those
    /// of other loops through a post.
    pub fn try_send(&self, here: Option<&mut Loop>, item: &[u8]) -> Result<bool> {
        self.check(item.len())?;
        let mut w = Wakes::default();
        let id = here.as_ref().map_or(0, |l| l.chan_id());
        let sent = self.0.state.lock().send(item, id, &mut w)?;
        self.deliver(here, w)?;
        Ok(sent)
    }

    /// Copies the oldest item out into `out`: `Ok(true)`, or `Ok(false)`
    /// when empty. `Error::Pipe` when empty and closed, `Error::Inval` for a
    /// buffer of another size. `here` as for [`Chan::try_send`].
    pub fn try_recv(&self, here: Option<&mut Loop>, out: &mut [u8]) -> Result<bool> {
        self.check(out.len())?;
        let mut w = Wakes::default();
        let id = here.as_ref().map_or(0, |l| l.chan_id());
        let got = self.0.state.lock().recv(out, id, &mut w)?;
        self.deliver(here, w)?;
        Ok(got)
    }

    /// Closes it: senders fail from now on, receivers once it is empty; the
    /// tasks parked on it, on every loop, are woken to see it. Returns
    /// `false` if it was closed already. `here` as for [`Chan::try_send`].
    pub fn close(&self, here: Option<&mut Loop>) -> Result<bool> {
        let mut w = Wakes::default();
        let id = here.as_ref().map_or(0, |l| l.chan_id());
        let closed = self.0.state.lock().close(id, &mut w);
        self.deliver(here, w)?;
        Ok(closed)
    }

    /// [`Chan::try_send`] for a task of `l` that will wait: when full,
    /// `Ok(false)` also counts it as parked on [`Chan::send_key`] (in the
    /// same hold of the lock as the try). It then parks there with
    /// `When::Wait` before `l` runs anything else. When it runs again it
    /// retries with `parked` = [`Parked::Again`] (the count is kept if it
    /// must wait again, else dropped), or gives up with [`Chan::unpark`].
    pub fn send_or_park(&self, l: &mut Loop, item: &[u8], parked: Parked) -> Result<bool> {
        self.check(item.len())?;
        let mut w = Wakes::default();
        let r = self.0.state.send_or_park(item, (l.chan_id(), parked), || l.remote(), &mut w);
        l.chan_count(parked, &r);
        self.deliver(Some(l), w)?;
        r
    }

    /// [`Chan::try_recv`] for a task of `l` that will wait: when empty,
    /// `Ok(false)` also counts it as parked on [`Chan::recv_key`], as
    /// [`Chan::send_or_park`] does.
    pub fn recv_or_park(&self, l: &mut Loop, out: &mut [u8], parked: Parked) -> Result<bool> {
        self.check(out.len())?;
        let mut w = Wakes::default();
        let r = self.0.state.recv_or_park(out, (l.chan_id(), parked), || l.remote(), &mut w);
        l.chan_count(parked, &r);
        self.deliver(Some(l), w)?;
        r
    }

    /// A task of `l` counted as parked on `side` (by `send_or_park`,
    /// `recv_or_park`) gives up: its wait ended otherwise (a timeout, a
    /// wake of another kind), it failed to park, or it is freed.
    pub fn unpark(&self, l: &mut Loop, side: Side) {
        if self.0.state.lock().unpark(side, l.chan_id()) {
            l.unhold();
        }
    }

    /// Delivers the wakes a change owed, the lock released: notifies on the
    /// caller's loop, posts to the others.
    fn deliver(&self, here: Option<&mut Loop>, w: Wakes<Remote>) -> Result<()> {
        for r in w.posts {
            self.post_wake(r);
        }
        if let Some(l) = here {
            for side in Side::BOTH {
                if w.here[side.index()] {
                    l.task_notify(self.0.key(side), When::Later)?;
                }
            }
        }
        Ok(())
    }

    /// Posts a wake to the loop of `r`: there it takes the sides pending for
    /// that loop and notifies their keys. A refused post (the loop is gone)
    /// forgets the loop's waiters.
    fn post_wake(&self, r: Remote) {
        let (me, id) = (self.0.clone(), r.id());
        let posted = r.post(move |l| {
            let sides = me.state.lock().woken(id);
            for side in Side::BOTH.into_iter().filter(|s| sides & s.bit() != 0) {
                let _ = l.task_notify(me.key(side), When::Later); // keys are never 0
            }
        });
        if posted.is_err() {
            self.0.state.lock().forget(id);
        }
    }
}

impl std::fmt::Debug for Chan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chan").field("size", &self.0.size).field("cap", &self.0.cap).finish_non_exhaustive()
    }
}

#[cfg(all(test, loom))]
mod loom_tests;
#[cfg(all(test, not(loom)))]
mod tests;
