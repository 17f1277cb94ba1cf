//! Model checks of the channel's protocol between loops (`waiters.rs`):
//! loom runs each body through the interleavings of its threads
//! (`RUSTFLAGS="--cfg loom" cargo test --release --lib loom_`). A loop is
//! modelled by its inbox alone: a post is a count under a mutex with a
//! condition variable, and its one task "parks" by sleeping until a post
//! comes. A wake-up lost leaves that task asleep for ever, which loom
//! reports as a deadlock; a wake-up doubled shows as a second post on its
//! way to one loop, which the inbox refuses.

use loom::sync::{Arc, Condvar, Mutex};
use loom::thread;

use super::ring::Ring;
use super::waiters::{Home, Locked, Parked, Side, Wakes};
use crate::error::{Error, Result};

struct Inbox {
    id: usize,
    posts: Mutex<u32>,
    bell: Condvar,
}

/// A model of a loop, as a channel holds it (the `Remote` of the real one).
#[derive(Clone)]
struct ModelLoop(Arc<Inbox>);

impl Home for ModelLoop {
    fn id(&self) -> usize {
        self.0.id
    }
}

impl ModelLoop {
    fn new(id: usize) -> Self {
        ModelLoop(Arc::new(Inbox { id, posts: Mutex::new(0), bell: Condvar::new() }))
    }

    /// `Remote::post` of a wake: queued, the sleeping loop woken.
    fn post(&self) {
        let mut n = self.0.posts.lock().unwrap();
        assert_eq!(*n, 0, "one wake on its way per loop");
        *n += 1;
        self.0.bell.notify_one();
    }

    /// The loop sleeps until a post comes, and takes it.
    fn next_post(&self) {
        let mut n = self.0.posts.lock().unwrap();
        while *n == 0 {
            n = self.0.bell.wait(n).unwrap();
        }
        *n -= 1;
    }
}

type Chan = Arc<Locked<ModelLoop>>;

/// Runs `f` as `loom::model` does, at most 5 preemptions per interleaving
/// unless `LOOM_MAX_PREEMPTIONS` says otherwise: the three-thread models
/// take minutes unbounded, and each mutation of the protocol tried
/// (`chan.rs` lists them) fails within 3.
fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = b.preemption_bound.or(Some(5));
    b.check(f);
}

fn chan(cap: usize) -> Chan {
    Arc::new(Locked::new(Ring::new(1, cap).unwrap()))
}

/// What `Chan::deliver` does with the wakes owed to other loops (in these
/// models no task of the caller's own loop is parked).
fn deliver(w: Wakes<ModelLoop>) {
    assert_eq!(w.here, [false; 2]);
    w.posts.iter().for_each(ModelLoop::post);
}

/// The parked task's loop runs the posts that come (each takes its
/// pending sides, as `Chan::post_wake` does) until one notifies `side`; the
/// task then runs (and retries, still counted).
fn sleep_until_woken(c: &Chan, me: &ModelLoop, side: Side) {
    loop {
        me.next_post();
        if c.lock().woken(me.id()) & side.bit() != 0 {
            return;
        }
    }
}

/// A task of `me` receiving one item, parking while the channel is empty.
fn recv(c: &Chan, me: &ModelLoop) -> Result<u8> {
    let mut parked = Parked::No;
    loop {
        let (mut w, mut out) = (Wakes::default(), [0]);
        let got = c.recv_or_park(&mut out, (me.id(), parked), || me.clone(), &mut w);
        deliver(w);
        if got? {
            return Ok(out[0]);
        }
        parked = Parked::Again;
        sleep_until_woken(c, me, Side::Recv);
    }
}

/// A task of `me` sending `v`, parking while the channel is full.
fn send(c: &Chan, me: &ModelLoop, v: u8) -> Result<()> {
    let mut parked = Parked::No;
    loop {
        let mut w = Wakes::default();
        let sent = c.send_or_park(&[v], (me.id(), parked), || me.clone(), &mut w);
        deliver(w);
        if sent? {
            return Ok(());
        }
        parked = Parked::Again;
        sleep_until_woken(c, me, Side::Send);
    }
}

/// A thread with no loop: one try.
fn try_send(c: &Chan, v: u8) -> Result<bool> {
    let mut w = Wakes::default();
    let sent = c.lock().send(&[v], 0, &mut w);
    deliver(w);
    sent
}

fn close(c: &Chan) -> bool {
    let mut w = Wakes::default();
    let closed = c.lock().close(0, &mut w);
    deliver(w);
    closed
}

/// A receiver on loop 1 parks while a sender on loop 2 sends two items:
/// it gets both, in order, and nothing waits at the end.
#[test]
fn loom_a_receiver_parks_while_another_loop_sends() {
    model(|| {
        let c = chan(0);
        let rx = {
            let c = c.clone();
            thread::spawn(move || {
                let me = ModelLoop::new(1);
                [recv(&c, &me).unwrap(), recv(&c, &me).unwrap()]
            })
        };
        let me = ModelLoop::new(2);
        send(&c, &me, 7).unwrap();
        send(&c, &me, 8).unwrap();
        assert_eq!(rx.join().unwrap(), [7, 8]);
        assert!(!c.lock().is_waited());
    });
}

/// A bounded channel, full: a sender on loop 1 parks for room while a
/// receiver on loop 2 takes the item that filled it.
#[test]
fn loom_a_bounded_sender_waits_for_room() {
    model(|| {
        let c = chan(1);
        assert!(try_send(&c, 1).unwrap());
        let tx = {
            let c = c.clone();
            thread::spawn(move || send(&c, &ModelLoop::new(1), 2))
        };
        let me = ModelLoop::new(2);
        assert_eq!(recv(&c, &me).unwrap(), 1);
        tx.join().unwrap().unwrap();
        assert_eq!(recv(&c, &me).unwrap(), 2);
        assert!(!c.lock().is_waited());
    });
}

/// Receivers on loops 1 and 2 wait while a thread with no loop closes the
/// channel: each wakes with `Error::Pipe`.
#[test]
fn loom_close_wakes_the_waiters_of_two_loops() {
    model(|| {
        let c = chan(0);
        let spawn_rx = |id| {
            let c = c.clone();
            thread::spawn(move || recv(&c, &ModelLoop::new(id)))
        };
        let (a, b) = (spawn_rx(1), spawn_rx(2));
        assert!(close(&c));
        assert_eq!(a.join().unwrap(), Err(Error::Pipe));
        assert_eq!(b.join().unwrap(), Err(Error::Pipe));
        assert!(!c.lock().is_waited());
    });
}

/// A close races with a send to a receiver already woken for an item (a
/// post on its way): the close adds its side to that post rather than
/// posting again, and the receiver gets the item, then `Error::Pipe`.
#[test]
fn loom_close_racing_a_send_to_a_parked_receiver() {
    model(|| {
        let c = chan(0);
        let rx = {
            let c = c.clone();
            thread::spawn(move || {
                let me = ModelLoop::new(1);
                [recv(&c, &me), recv(&c, &me)]
            })
        };
        let tx = {
            let c = c.clone();
            thread::spawn(move || try_send(&c, 5))
        };
        let closed = close(&c);
        let sent = tx.join().unwrap();
        let got = rx.join().unwrap();
        assert!(closed);
        match sent {
            Ok(true) => assert_eq!(got, [Ok(5), Err(Error::Pipe)]),
            _ => assert_eq!((sent, got), (Err(Error::Pipe), [Err(Error::Pipe), Err(Error::Pipe)])),
        }
    });
}

/// A sender on loop 1 parked on a full channel while a thread with no loop
/// closes it: it wakes with `Error::Pipe`; the item stays for receivers.
#[test]
fn loom_close_wakes_a_parked_sender() {
    model(|| {
        let c = chan(1);
        assert!(try_send(&c, 1).unwrap());
        let tx = {
            let c = c.clone();
            thread::spawn(move || send(&c, &ModelLoop::new(1), 2))
        };
        assert!(close(&c));
        assert_eq!(tx.join().unwrap(), Err(Error::Pipe));
        assert_eq!(recv(&c, &ModelLoop::new(2)), Ok(1));
        assert!(!c.lock().is_waited());
    });
}

/// Receivers on loops 1 and 2 race for two items sent by a thread with no
/// loop: the first item may wake both, and the loser, still counted, parks
/// again; the second item must wake it (a post after the first one's was
/// taken).
#[test]
fn loom_the_loser_of_a_race_is_woken_again() {
    model(|| {
        let c = chan(0);
        let spawn_rx = |id| {
            let c = c.clone();
            thread::spawn(move || recv(&c, &ModelLoop::new(id)))
        };
        let (a, b) = (spawn_rx(1), spawn_rx(2));
        assert!(try_send(&c, 1).unwrap());
        assert!(try_send(&c, 2).unwrap());
        let mut got = [a.join().unwrap().unwrap(), b.join().unwrap().unwrap()];
        got.sort_unstable();
        assert_eq!(got, [1, 2]);
        assert!(!c.lock().is_waited());
    });
}
