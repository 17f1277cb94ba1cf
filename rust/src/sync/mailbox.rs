//! A mailbox: items that any thread puts and one owner (a loop) takes, with a
//! bell (the loop's eventfd) that senders ring only while the owner sleeps.
//! It is the protocol of the loop's inbox (`reactor/inbox.rs`: async sends,
//! finished work, posted functions), kept apart from epoll so that loom can
//! check it (`--cfg loom`: the `loom_tests` at the end).
//!
//! # State
//! - `items`, with `closed`, under the mutex;
//! - `pending`: `items` is not empty. It changes only under the mutex, so it
//!   is exact whenever the mutex is free; the owner reads it without the
//!   mutex once per iteration, so a busy owner with no mail pays one load;
//! - `state`, where the owner is:
//!
//! | state    | the owner                                             | a sender that made `items` non-empty |
//! |----------|-------------------------------------------------------|--------------------------------------|
//! | `AWAKE`  | runs, and reads `pending` before it blocks            | rings nothing                        |
//! | `ASLEEP` | blocks on the bell, is about to, or is away (outside its loop's `run`, whose host may block on the bell's descriptor) | exchanges `ASLEEP` for `RUNG`; if it succeeded, rings |
//! | `RUNG`   | as `ASLEEP`; a sender rang for this sleep             | rings nothing                        |
//!
//! The owner's transitions, which alternate (a new mailbox is `ASLEEP`):
//! - `sleep`, before a wait that may block: store `ASLEEP`, then load
//!   `pending`; if set, the owner must not block (it waits with timeout 0);
//! - `wake`, after the wait: swap in `AWAKE`; `RUNG` means one ring is owed
//!   to the bell, to be read from its descriptor;
//! - `leave`, out of `run`: `sleep`, and if mail is pending, claim and ring
//!   the bell itself, so that a host blocking on the descriptor wakes.
//!
//! A sender puts under the mutex. Only if that made `items` non-empty does
//! it go on: store `pending`, release the mutex, load `state`, and if it is
//! `ASLEEP`, compare-exchange it to `RUNG` and ring if the exchange
//! succeeded. Of several senders one rings per sleep, and none while the
//! owner is awake.
//!
//! # Why no wakeup is lost
//! Each side stores, then loads the other's word: the owner `state` then
//! `pending`, the sender `pending` then `state`, all `SeqCst`, so the four
//! accesses fall in one total order that keeps each side's program order
//! (Dekker's argument). Take the owner's last store to `state` before the
//! sender's load of it:
//! - an `ASLEEP` (a sleep or a leave): the sender finds `ASLEEP` and rings,
//!   or `RUNG`, and another sender rings for this sleep;
//! - an `AWAKE` (a wake), or none: the owner's next `sleep` comes after the
//!   sender's load, so after its store of `pending`, and reads it set (or
//!   cleared by a later take of the owner's, which got the item): the owner
//!   does not block.
//!
//! Either way the owner does not block on an item without a ring to come.
//! Senders that found `items` non-empty already skip all this: their items
//! sit behind the first one's `pending` and go in the same batch, unless the
//! owner took that batch in between, and then they found `items` empty.
//!
//! # Why a busy owner takes its mail with no system call
//! An owner that does not block never stores `ASLEEP`: senders find `AWAKE`
//! and ring nothing, and the owner finds the mail by `pending` at its next
//! iteration. The bell costs a write (and the owner a read) only when mail
//! comes to an owner that blocks or is away.
//!
//! # Batches
//! The owner takes the items whole (`own`: swapped for empty ones under the
//! mutex) and runs them after releasing it. An item put while a batch runs
//! goes to the next batch, so a message that posts to its own loop cannot
//! starve it, and no user code runs under the mutex: nor a message's drop
//! (a refused `put`, `close`).
//!
//! # Close
//! `close` sets `closed` and takes the items. From then on `put` fails with
//! `Error::Pipe` and drops what it would have put, uncalled. Every `put` that
//! had the mutex before is in what `close` took or in an earlier batch:
//! nothing is lost, nothing runs after the close.

use std::sync::atomic::Ordering::SeqCst;

use super::shim::{AtomicBool, AtomicU8, Mutex, MutexGuard};
use crate::error::{Error, Result};

/// What a mailbox holds: the mail is pending while it is not empty.
pub(crate) trait Items {
    /// Nothing to deliver.
    fn is_empty(&self) -> bool;
}

/// What wakes the owner (the loop's eventfd). Safe from any thread.
pub(crate) trait Bell {
    /// Wakes the owner's wait (a write to the eventfd).
    fn ring(&self);
}

const AWAKE: u8 = 0;
const ASLEEP: u8 = 1;
const RUNG: u8 = 2;

struct Locked<Q> {
    items: Q,
    closed: bool,
}

/// See the [module documentation](self).
pub(crate) struct Mailbox<Q, B> {
    locked: Mutex<Locked<Q>>,
    pending: AtomicBool,
    state: AtomicU8,
    bell: B,
}

impl<Q: Items, B: Bell> Mailbox<Q, B> {
    /// A mailbox holding `items` (empty), its owner away.
    pub fn new(items: Q, bell: B) -> Self {
        Mailbox {
            pending: AtomicBool::new(!items.is_empty()),
            locked: Mutex::new(Locked { items, closed: false }),
            state: AtomicU8::new(ASLEEP),
            bell,
        }
    }

    pub fn bell(&self) -> &B {
        &self.bell
    }

    fn lock(&self) -> MutexGuard<'_, Locked<Q>> {
        // A panic while holding the lock leaves plain data behind: keep going.
        self.locked.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A sender's put: `put` adds to the items under the mutex, or refuses
    /// with an error and changes nothing. Rings the bell if this made the
    /// items non-empty while the owner sleeps. `Error::Pipe` once closed:
    /// `put` is dropped (after the mutex), not called.
    pub fn put(&self, put: impl FnOnce(&mut Q) -> Result<()>) -> Result<()> {
        let mut locked = self.lock();
        if locked.closed {
            drop(locked);
            drop(put);
            return Err(Error::Pipe);
        }
        let was_empty = locked.items.is_empty();
        put(&mut locked.items)?;
        if !was_empty || locked.items.is_empty() {
            return Ok(());
        }
        self.pending.store(true, SeqCst);
        drop(locked);
        self.ring_if_asleep();
        Ok(())
    }

    fn ring_if_asleep(&self) {
        if self.state.load(SeqCst) == ASLEEP && self.state.compare_exchange(ASLEEP, RUNG, SeqCst, SeqCst).is_ok() {
            self.bell.ring();
        }
    }

    /// The owner's access to the items under the mutex: to take a batch
    /// (swap them for empty ones), or to change them otherwise; `pending`
    /// follows. The owner reads `pending` before it blocks, so no ring is
    /// needed for what it adds here.
    pub fn own<R>(&self, f: impl FnOnce(&mut Q) -> R) -> R {
        let mut locked = self.lock();
        let r = f(&mut locked.items);
        self.pending.store(!locked.items.is_empty(), SeqCst);
        r
    }

    /// Is mail pending? Exact when the owner reads it after `sleep` (see the
    /// module documentation); a snapshot otherwise.
    pub fn pending(&self) -> bool {
        self.pending.load(SeqCst)
    }

    /// The owner is about to block: whether it may (no mail is pending).
    /// Follow it with `wake`, whether the owner blocked or not.
    pub fn sleep(&self) -> bool {
        self.state.store(ASLEEP, SeqCst);
        !self.pending.load(SeqCst)
    }

    /// The owner is awake: whether a sender rang during the sleep (one ring
    /// is owed to the bell, landed or about to).
    pub fn wake(&self) -> bool {
        self.state.swap(AWAKE, SeqCst) == RUNG
    }

    /// The owner goes away (returns from `run`): it sleeps, and rings the
    /// bell itself if mail is pending already. Follow it with `wake`.
    pub fn leave(&self) {
        if !self.sleep() {
            self.ring_if_asleep();
        }
    }

    /// Is the owner asleep or away (`ASLEEP` or `RUNG`)? For tests.
    #[cfg(test)]
    pub fn asleep(&self) -> bool {
        self.state.load(SeqCst) != AWAKE
    }

    /// Refuses further puts and takes the items, as `own` does. The caller
    /// drops what it took after this returns (outside the mutex).
    pub fn close<R>(&self, f: impl FnOnce(&mut Q) -> R) -> R {
        let mut locked = self.lock();
        locked.closed = true;
        let r = f(&mut locked.items);
        self.pending.store(!locked.items.is_empty(), SeqCst);
        r
    }
}

#[cfg(test)]
impl<T> Items for Vec<T> {
    fn is_empty(&self) -> bool {
        Vec::is_empty(self)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// A bell that counts its rings.
    #[derive(Default)]
    struct Count(AtomicUsize);

    impl Bell for Count {
        fn ring(&self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn rings(m: &Mailbox<Vec<u32>, Count>) -> usize {
        m.bell().0.load(Ordering::Relaxed)
    }

    fn push(v: u32) -> impl FnOnce(&mut Vec<u32>) -> Result<()> {
        move |q| {
            q.push(v);
            Ok(())
        }
    }

    #[test]
    fn senders_ring_once_per_sleep_and_never_an_awake_owner() {
        let m = Mailbox::new(Vec::new(), Count::default());
        m.put(push(1)).unwrap();
        assert_eq!(rings(&m), 1, "a new mailbox's owner is away: the first put rings");
        m.put(push(2)).unwrap();
        assert_eq!(rings(&m), 1, "one ring per sleep");
        assert!(m.wake(), "the ring is owed");
        assert_eq!(m.own(std::mem::take), [1, 2]);
        assert!(!m.pending());
        m.put(push(3)).unwrap();
        assert_eq!(rings(&m), 1, "the owner is awake: no ring");
        assert!(!m.sleep(), "mail is pending: do not block");
        assert!(!m.wake(), "nobody rang");
        assert_eq!(m.own(std::mem::take), [3]);
        assert!(m.sleep(), "nothing pending: may block");
        m.put(push(4)).unwrap();
        m.put(push(5)).unwrap();
        assert_eq!(rings(&m), 2, "the sleeping owner is rung, once");
        assert!(m.wake());
    }

    #[test]
    fn a_refused_put_changes_nothing_and_rings_nothing() {
        let m = Mailbox::new(Vec::new(), Count::default());
        assert_eq!(m.put(|_| Err(Error::Inval)), Err(Error::Inval));
        assert!(!m.pending() && rings(&m) == 0);
    }

    #[test]
    fn leaving_with_mail_pending_rings_the_bell() {
        let m = Mailbox::new(Vec::new(), Count::default());
        m.wake();
        m.put(push(1)).unwrap();
        m.leave();
        assert_eq!(rings(&m), 1, "a host blocking on the bell must wake");
        assert!(m.wake());
        m.own(std::mem::take);
        m.leave();
        assert_eq!(rings(&m), 1, "nothing pending: no ring");
    }

    #[test]
    fn a_closed_mailbox_drops_what_it_is_given_uncalled() {
        let m = Mailbox::new(Vec::new(), Count::default());
        m.put(push(1)).unwrap();
        assert_eq!(m.close(std::mem::take), [1]);
        assert!(!m.pending());
        let token = std::sync::Arc::new(());
        let held = token.clone();
        let put = move |q: &mut Vec<u32>| {
            let _ = &held;
            q.push(2);
            Ok(())
        };
        assert_eq!(m.put(put), Err(Error::Pipe));
        assert_eq!(std::sync::Arc::strong_count(&token), 1, "the closure was dropped");
        assert!(m.own(std::mem::take).is_empty());
    }
}

/// Model checks of the protocol: loom runs each body through the
/// interleavings of its threads (`RUSTFLAGS="--cfg loom" cargo test --release
/// --lib loom_`). The bell counts its rings (the eventfd's counter). The
/// owner's "blocking" is its decision, checked after the join: an owner that
/// decided to block must have a ring, since nothing else would wake it.
#[cfg(all(test, loom))]
mod loom_tests {
    use loom::sync::Arc;
    use loom::sync::atomic::AtomicUsize;
    use loom::thread;

    use super::*;

    #[derive(Default)]
    struct Count(AtomicUsize);

    impl Bell for Count {
        fn ring(&self) {
            self.0.fetch_add(1, SeqCst);
        }
    }

    type Mb = Mailbox<Vec<u32>, Count>;

    fn running() -> Arc<Mb> {
        let m = Arc::new(Mailbox::new(Vec::new(), Count::default()));
        assert!(!m.wake(), "the owner enters its run");
        m
    }

    fn send(m: &Arc<Mb>, v: u32) -> thread::JoinHandle<()> {
        let m = m.clone();
        thread::spawn(move || {
            m.put(move |q| {
                q.push(v);
                Ok(())
            })
            .unwrap()
        })
    }

    fn rings(m: &Mb) -> usize {
        m.bell().0.load(SeqCst)
    }

    /// (a) One sender, the owner taking a batch then going to sleep: if it
    /// decides to block while the message is not taken, a ring follows (it
    /// never sleeps forever); if it does not block, the message was pending.
    /// The message is taken once, never lost.
    #[test]
    fn loom_a_sleeping_owner_is_rung_or_sees_the_mail() {
        loom::model(|| {
            let m = running();
            let s = send(&m, 1);
            let first = m.own(std::mem::take);
            let blocks = m.sleep();
            s.join().unwrap();
            let rung = m.wake();
            let mut got = first.clone();
            got.extend(m.own(std::mem::take));
            assert_eq!(got, [1], "taken once");
            assert!(rings(&m) <= 1, "one ring per sleep");
            if !blocks {
                assert!(first.is_empty(), "it did not block: the mail was there, untaken");
            } else if first.is_empty() {
                assert!(rung && rings(&m) == 1, "an owner that blocks before the mail is taken is rung");
            }
        });
    }

    /// (a) A busy owner (it never sleeps) takes the mail with no ring.
    #[test]
    fn loom_a_busy_owner_is_never_rung() {
        loom::model(|| {
            let m = running();
            let s = send(&m, 1);
            let mut got = m.own(std::mem::take);
            got.extend(m.own(std::mem::take));
            s.join().unwrap();
            got.extend(m.own(std::mem::take));
            assert_eq!(got, [1]);
            assert_eq!(rings(&m), 0, "no ring while awake");
        });
    }

    /// (b) Two senders and a sleeping owner: at most one ring for the sleep,
    /// exactly one if the owner blocks before it took both; no message lost.
    #[test]
    fn loom_two_senders_ring_at_most_once_per_sleep() {
        loom::model(|| {
            let m = running();
            let (s1, s2) = (send(&m, 1), send(&m, 2));
            let first = m.own(std::mem::take);
            let blocks = m.sleep();
            s1.join().unwrap();
            s2.join().unwrap();
            let rung = m.wake();
            let mut got = first.clone();
            got.extend(m.own(std::mem::take));
            got.sort_unstable();
            assert_eq!(got, [1, 2], "each taken once");
            assert!(rings(&m) <= 1, "one ring per sleep");
            if blocks && first.len() < 2 {
                assert!(rung && rings(&m) == 1, "an owner that blocks with mail to come is rung");
            }
        });
    }

    /// An owner that leaves (returns from `run`) while a sender puts: if the
    /// message is left pending, the bell rang, once (by the sender, or by the
    /// owner itself), so that a host blocking on its descriptor wakes.
    #[test]
    fn loom_an_owner_that_leaves_mail_behind_is_rung() {
        loom::model(|| {
            let m = running();
            let s = send(&m, 1);
            let first = m.own(std::mem::take);
            m.leave();
            s.join().unwrap();
            assert!(rings(&m) <= 1, "one ring per absence");
            if first.is_empty() {
                assert_eq!(rings(&m), 1, "mail left pending: the bell rang");
            }
            assert!(m.wake() == (rings(&m) == 1), "a ring is owed exactly when one rang");
        });
    }

    /// A message that counts its drops (taken and run, or dropped unrun).
    struct Msg(Arc<AtomicUsize>);

    impl Drop for Msg {
        fn drop(&mut self) {
            self.0.fetch_add(1, SeqCst);
        }
    }

    /// (c) Close against a put: a put after the close fails and drops its
    /// message; one before is taken by the owner's batch (it runs) or by the
    /// close (dropped unrun); after the close nothing more is taken.
    #[test]
    fn loom_close_against_put() {
        loom::model(|| {
            let m = Arc::new(Mailbox::new(Vec::new(), Count::default()));
            m.wake();
            let drops = Arc::new(AtomicUsize::new(0));
            let s = {
                let (m, msg) = (m.clone(), Msg(drops.clone()));
                thread::spawn(move || {
                    m.put(move |q: &mut Vec<Msg>| {
                        q.push(msg);
                        Ok(())
                    })
                })
            };
            let ran = m.own(std::mem::take);
            let closed = m.close(std::mem::take);
            let put = s.join().unwrap();
            assert!(m.own(std::mem::take).is_empty(), "nothing after the close");
            match put {
                Ok(()) => assert_eq!(ran.len() + closed.len(), 1, "taken once: run, or dropped by the close"),
                Err(e) => {
                    assert_eq!(e, Error::Pipe);
                    assert!(ran.is_empty() && closed.is_empty(), "refused: never run");
                    assert_eq!(drops.load(SeqCst), 1, "the refused message was dropped");
                }
            }
            drop((ran, closed));
            assert_eq!(drops.load(SeqCst), 1, "dropped once: no leak");
            let late = Msg(drops.clone());
            let refused = m.put(move |q: &mut Vec<Msg>| {
                q.push(late);
                Ok(())
            });
            assert_eq!(refused, Err(Error::Pipe));
            assert_eq!(drops.load(SeqCst), 2, "a put after the close drops its message");
        });
    }
}
