//! One member of a group: its state, its address, its load, and the thread
//! that runs its loop through the states of the module documentation.
//!
//! Another thread moves a member on (`advance`): it stores the new state,
//! then posts a `stop` to the loop. The member's thread reads the state each
//! time its `run` returns, so it sees the change whether the post came
//! before its `run`, during it, or after; a `stop` from anyone else only
//! makes it run again.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, OnceLock};

use super::{CURRENT, Face, Shared};
use crate::error::{Error, Result};
use crate::reactor::{Loop, Post, Remote, RunMode};
use crate::sync::shim::AtomicU8;

/// Where a member is in its life, in order (see the module documentation).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
#[repr(u8)]
pub(super) enum State {
    Running = 0,
    Draining = 1,
    Cancelling = 2,
    Ended = 3,
}

impl State {
    fn from_u8(v: u8) -> State {
        match v {
            0 => State::Running,
            1 => State::Draining,
            2 => State::Cancelling,
            _ => State::Ended,
        }
    }
}

/// A member's state word, moved forward only. Its atomic comes through
/// `sync::shim`, so loom checks it with the inbox (`loom_tests.rs`).
#[derive(Default)]
pub(super) struct StateCell(AtomicU8);

impl StateCell {
    pub(super) fn get(&self) -> State {
        State::from_u8(self.0.load(Ordering::SeqCst))
    }

    /// Moves it on to `to` unless it is there or past it: whether it moved.
    pub(super) fn advance(&self, to: State) -> bool {
        self.0.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |s| (s < to as u8).then_some(to as u8)).is_ok()
    }
}

/// Non-blocking passes a cancelled loop gets to run what the cancel ended
/// (close callbacks, operations' completions) before it is closed.
const FLUSH_PASSES: usize = 4;

/// What the group knows of one loop, shared with its thread.
#[derive(Default)]
pub(super) struct Member {
    state: StateCell,
    remote: OnceLock<Remote>,
    load: OnceLock<Arc<AtomicUsize>>,
}

impl Member {
    pub(super) fn state(&self) -> State {
        self.state.get()
    }

    pub(super) fn load(&self) -> usize {
        self.load.get().map_or(0, |l| l.load(Ordering::Relaxed))
    }

    pub(super) fn load_counter(&self) -> Option<Arc<AtomicUsize>> {
        self.load.get().cloned()
    }

    /// Posts `f` to the loop unless it is cancelling or gone.
    pub(super) fn post(&self, f: Post) -> Result<()> {
        if self.state() >= State::Cancelling {
            return Err(Error::Pipe);
        }
        self.remote.get().ok_or(Error::Pipe)?.send(f)
    }

    /// Moves the member on to `to` if it is not there or past it, and
    /// stops its loop's run so that its thread sees it.
    pub(super) fn advance(&self, to: State) {
        if self.state.advance(to)
            && let Some(r) = self.remote.get()
        {
            let _ = r.post_call(|l, _| l.stop(), [0; 2]);
        }
    }

    /// Its thread never ran (or could not make its loop): ended.
    pub(super) fn abandon(&self) {
        self.state.advance(State::Ended);
    }
}

/// The body of member `index`'s thread: makes the loop, tells `started`,
/// runs it through its states, closes it.
pub(super) fn run<F: Face>(face: &F, shared: &Shared, index: usize, cpu: Option<usize>, started: Sender<Result<()>>) {
    let me = &shared.members[index];
    if let Some(cpu) = cpu {
        // Best effort: the processor came from this process's own mask.
        let _ = crate::util::cpu::pin(cpu);
    }
    let mut local = match face.open(index) {
        Ok(l) => l,
        Err(e) => {
            me.abandon();
            shared.end();
            let _ = started.send(Err(e));
            return;
        }
    };
    let _ = me.load.set(face.load(&local));
    face.with_loop(&mut local, |lp| {
        lp.hold();
        let _ = me.remote.set(lp.remote());
    });
    CURRENT.set((shared as *const Shared as usize, index));
    let _ = started.send(Ok(()));
    drop(started);
    let mut drained = false;
    while face.with_loop(&mut local, |lp| turn(face, me, index, lp, &mut drained)) {}
    // Posts it took still run: none is lost, and from now on they fail.
    face.with_loop(&mut local, Loop::close_posts);
    CURRENT.set((0, 0));
    face.close(index, local);
    me.abandon();
    shared.end();
}

/// Acts on the member's state, then runs the loop until its run returns:
/// whether the thread should go on.
fn turn<F: Face>(face: &F, me: &Member, index: usize, lp: &mut Loop, drained: &mut bool) -> bool {
    let state = me.state();
    if state >= State::Draining && !*drained {
        *drained = true;
        face.drain(index, lp);
        lp.unhold();
    }
    if state >= State::Cancelling {
        face.cancel(index, lp);
        for _ in 0..FLUSH_PASSES {
            if !matches!(lp.run(RunMode::NoWait), Ok(true)) {
                break;
            }
        }
        return false;
    }
    match lp.run(RunMode::Default) {
        // Not alive: only once the hold is given back.
        Ok(false) if *drained => false,
        Ok(_) => true,
        // The poll itself failed: nothing more can run.
        Err(_) => false,
    }
}
