//! Model checks of how another thread moves a member on (`member.rs`): it
//! stores the new state, then posts a `stop` through the loop's inbox (the
//! real mailbox; the bell a counter); the member reads the state each time
//! its run returns, which a `stop` it takes makes it do. loom runs each body
//! through the interleavings of its threads (`RUSTFLAGS="--cfg loom" cargo
//! test --release --lib loom_`).

use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use loom::thread;

use super::member::{State, StateCell};
use crate::error::Result;
use crate::sync::mailbox::{Bell, Mailbox};

#[derive(Default)]
struct Count(AtomicUsize);

impl Bell for Count {
    fn ring(&self) {
        self.0.fetch_add(1, SeqCst);
    }
}

const STOP: u8 = 1;

/// The mover: the state first, then the `stop`, as `Member::advance`.
fn mover(cell: &Arc<StateCell>, mail: &Arc<Mailbox<Vec<u8>, Count>>, to: State) -> thread::JoinHandle<()> {
    let (cell, mail) = (cell.clone(), mail.clone());
    thread::spawn(move || {
        if cell.advance(to) {
            let r: Result<()> = mail.put(|q| {
                q.push(STOP);
                Ok(())
            });
            r.unwrap();
        }
    })
}

/// A member whose run takes a `stop` reads the new state after it: the
/// move is never missed, whichever way the two threads interleave.
#[test]
fn loom_a_stop_taken_shows_the_new_state() {
    loom::model(|| {
        let cell = Arc::new(StateCell::default());
        let mail = Arc::new(Mailbox::new(Vec::new(), Count::default()));
        let m = mover(&cell, &mail, State::Draining);
        let took = mail.own(std::mem::take);
        if took.contains(&STOP) {
            assert_eq!(cell.get(), State::Draining, "the state was stored before the stop was posted");
        }
        m.join().unwrap();
        let mut all = took;
        all.extend(mail.own(std::mem::take));
        assert_eq!(all, [STOP], "one stop, taken once");
        assert_eq!(cell.get(), State::Draining);
    });
}

/// Two movers at once (a shutdown's drain, and its cancel or a drop): the
/// state ends at the furthest, never goes back, and each move that
/// happened posted its own `stop`.
#[test]
fn loom_states_only_move_forward() {
    loom::model(|| {
        let cell = Arc::new(StateCell::default());
        let mail = Arc::new(Mailbox::new(Vec::new(), Count::default()));
        let a = mover(&cell, &mail, State::Draining);
        let b = mover(&cell, &mail, State::Cancelling);
        let seen = cell.get();
        a.join().unwrap();
        b.join().unwrap();
        assert_eq!(cell.get(), State::Cancelling);
        assert!(seen <= State::Cancelling);
        let stops = mail.own(std::mem::take).len();
        assert!((1..=2).contains(&stops), "the cancel moved it, at least: {stops}");
        assert!(!cell.advance(State::Draining), "no way back");
    });
}
