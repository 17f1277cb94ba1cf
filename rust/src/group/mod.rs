//! Loop groups: N event loops, each run by a thread of its own (optionally
//! pinned to a processor), share-nothing. What one loop owns (its sockets,
//! handles, tasks) never moves; work crosses between loops only as posts,
//! functions run on the target loop (`reactor::Remote`), and through what
//! the faces build on them (channels between loops, connection handoff,
//! calls that wait for another loop's result).
//!
//! A face (C, C++, Lua) says what one of its loops is ([`Face`]): it makes
//! it on the member's thread, hands the group the core [`Loop`] inside, and
//! is told when the group shuts down, so that its objects end in order.
//!
//! # A member's life
//! One member is one loop and its thread. Its state (`member::State`) only
//! moves forward:
//!
//! | state | entered when | the loop | posts through the group |
//! | --- | --- | --- | --- |
//! | `Running` | `start` made the loop | holds itself up (`Loop::hold`): runs while the group lives, with or without work | run |
//! | `Draining` | `shutdown` began | ran `Face::drain` (stop taking new work: close listeners) and gave its hold back: `run` ends once its open work is done | run (open work may need replies) |
//! | `Cancelling` | the grace period ended with the loop still alive | ran `Face::cancel` (close what remains: waiting operations end cancelled) and stopped; a few non-blocking passes run what that finished | refused (`Error::Pipe`) |
//! | `Ended` | its `run` returned and the face closed the loop (`Face::close`) | gone; its thread returns | refused (`Error::Pipe`) |
//!
//! Every post a member's loop accepted runs, once, on its thread: the
//! last of them after `Face::cancel`, as the loop closes its posts
//! (`Loop::close_posts`) before `Face::close`.
//!
//! A member never leaves `Running` by itself: a `stop` of its loop makes it
//! run again. `shutdown(grace)`, from a thread outside the group, moves
//! every member to `Draining`, waits until all have ended or the grace is
//! over, moves those left to `Cancelling`, waits for them, and joins every
//! thread. Dropping the group shuts it down with no grace.
//!
//! # Load
//! Each member has a load counter that its face keeps (the C face: its open
//! TCP connections), readable from any thread: [`Group::least_loaded`]
//! picks the loop a new connection should go to.

mod member;

use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::reactor::{Loop, Post};
use member::{Member, State};

/// What a face does with the loops of a group. The group calls each method
/// on the member's own thread.
pub trait Face: Send + Sync + 'static {
    /// The face's loop: made, run and closed on the member's thread.
    type Local;

    /// Makes member `index`'s loop. An error stops the group's start.
    fn open(&self, index: usize) -> Result<Self::Local>;

    /// The core loop inside `local`, to run it.
    fn with_loop<R>(&self, local: &mut Self::Local, f: impl FnOnce(&mut Loop) -> R) -> R;

    /// The member's load counter (the face keeps it; any thread reads it).
    fn load(&self, local: &Self::Local) -> Arc<AtomicUsize>;

    /// Shutdown began: stop taking new work. Runs between two runs of the
    /// loop, which then runs until its open work is done.
    fn drain(&self, _index: usize, _lp: &mut Loop) {}

    /// The grace period is over: end what remains (close sockets, cancel
    /// operations). Runs between two runs of the loop; a few non-blocking
    /// passes follow, then `close`.
    fn cancel(&self, _index: usize, _lp: &mut Loop) {}

    /// The loop has ended: free it (a last callback for the program).
    fn close(&self, _index: usize, _local: Self::Local) {}
}

/// How a group is made.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// Loops (threads); at least 1.
    pub loops: usize,
    /// Pin member `i`'s thread to the `i`-th processor the starting thread
    /// may use (modulo their count).
    pub pin: bool,
}

/// What the threads share: the members, and the count of those ended.
struct Shared {
    members: Vec<Member>,
    ended: Mutex<usize>,
    changed: Condvar,
}

impl Shared {
    fn end(&self) {
        *self.ended.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.changed.notify_all();
    }

    /// Waits until every member ended, or `until` (`None`: no limit).
    /// Returns whether they all did.
    fn wait_ended(&self, until: Option<Instant>) -> bool {
        let mut ended = self.ended.lock().unwrap_or_else(|e| e.into_inner());
        while *ended < self.members.len() {
            match until {
                None => ended = self.changed.wait(ended).unwrap_or_else(|e| e.into_inner()),
                Some(t) => {
                    let left = t.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return false;
                    }
                    ended = self.changed.wait_timeout(ended, left).unwrap_or_else(|e| e.into_inner()).0;
                }
            }
        }
        true
    }
}

std::thread_local! {
    /// The group and index of the member this thread runs, if any.
    static CURRENT: std::cell::Cell<(usize, usize)> = const { std::cell::Cell::new((0, 0)) };
}

/// A group of loops. See the [module documentation](self).
pub struct Group {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Group {
    /// Starts `opts.loops` loops of `face`, each on its own thread, and
    /// returns once every one runs. `Error::Inval` for 0 loops; the error of
    /// a loop that could not be made (the others are shut down then).
    pub fn start<F: Face>(opts: Options, face: F) -> Result<Group> {
        if opts.loops == 0 {
            return Err(Error::Inval);
        }
        let face = Arc::new(face);
        let cpus = if opts.pin { crate::util::cpu::allowed() } else { Vec::new() };
        let shared = Arc::new(Shared {
            members: (0..opts.loops).map(|_| Member::default()).collect(),
            ended: Mutex::new(0),
            changed: Condvar::new(),
        });
        let mut group = Group { shared, threads: Mutex::new(Vec::with_capacity(opts.loops)) };
        let (tx, rx) = std::sync::mpsc::channel();
        for index in 0..opts.loops {
            let cpu = (!cpus.is_empty()).then(|| cpus[index % cpus.len()]);
            let (face, shared, tx) = (face.clone(), group.shared.clone(), tx.clone());
            let spawned = std::thread::Builder::new()
                .name(format!("cothread-loop-{index}"))
                .spawn(move || member::run(&*face, &shared, index, cpu, tx));
            match spawned {
                Ok(t) => group.threads.get_mut().unwrap_or_else(|e| e.into_inner()).push(t),
                Err(_) => {
                    group.abandon_unstarted(index);
                    return Err(Error::NoMem);
                }
            }
        }
        drop(tx);
        let mut first_error = None;
        for _ in 0..opts.loops {
            if let Ok(Err(e)) | Err(e) = rx.recv().map_err(|_| Error::NoMem) {
                first_error.get_or_insert(e);
            }
        }
        match first_error {
            None => Ok(group),
            Some(e) => Err(e), // dropping the group shuts the others down
        }
    }

    /// Marks members `from..` as ended: their threads were never made.
    fn abandon_unstarted(&mut self, from: usize) {
        for m in &self.shared.members[from..] {
            m.abandon();
            self.shared.end();
        }
    }

    /// How many loops.
    pub fn len(&self) -> usize {
        self.shared.members.len()
    }

    /// Never: a group has at least one loop.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Runs `f` on loop `index`, once, from its next iteration (a post).
    /// `Error::Inval` for an index out of range; `Error::Pipe` once that
    /// loop is cancelling or ended (`f` is dropped unrun).
    pub fn post(&self, index: usize, f: impl FnOnce(&mut Loop) + Send + 'static) -> Result<()> {
        self.send(index, Post::Boxed(Box::new(f)))
    }

    /// Runs `f(loop, args)` on loop `index`, as [`Group::post`] does a
    /// closure, without allocating.
    pub fn post_call(&self, index: usize, f: fn(&mut Loop, [usize; 2]), args: [usize; 2]) -> Result<()> {
        self.send(index, Post::Call(f, args))
    }

    fn send(&self, index: usize, p: Post) -> Result<()> {
        self.shared.members.get(index).ok_or(Error::Inval)?.post(p)
    }

    /// Would a post to member `index` be taken now? `Error::Inval` out of
    /// range, `Error::Pipe` once it is cancelling or ended.
    pub fn accepts(&self, index: usize) -> Result<()> {
        match self.shared.members.get(index).ok_or(Error::Inval)?.state() {
            State::Running | State::Draining => Ok(()),
            _ => Err(Error::Pipe),
        }
    }

    /// Member `index`'s load counter itself (the face's), to count work on
    /// its way there. `None` out of range.
    pub fn load_counter(&self, index: usize) -> Option<Arc<AtomicUsize>> {
        self.shared.members.get(index)?.load_counter()
    }

    /// Member `index`'s load (its face's counter; 0 out of range).
    pub fn load(&self, index: usize) -> usize {
        self.shared.members.get(index).map_or(0, Member::load)
    }

    /// The running member with the least load (the first of equals), or
    /// `None` once none runs.
    pub fn least_loaded(&self) -> Option<usize> {
        let running = self.shared.members.iter().enumerate().filter(|(_, m)| m.state() == State::Running);
        running.min_by_key(|(_, m)| m.load()).map(|(i, _)| i)
    }

    /// The index of the member the calling thread runs, if it runs one of
    /// this group's.
    pub fn current_index(&self) -> Option<usize> {
        let (group, index) = CURRENT.get();
        (group == self.key()).then_some(index)
    }

    fn key(&self) -> usize {
        Arc::as_ptr(&self.shared) as usize
    }

    /// Shuts the group down (see the module documentation): every loop
    /// drains, those still alive after `grace` are cancelled, every thread
    /// is joined. `Error::Busy` from one of the group's own threads (it
    /// would wait for itself). Other threads may post meanwhile. A second
    /// call waits for the first to end.
    pub fn shutdown(&self, grace: Duration) -> Result<()> {
        if self.current_index().is_some() {
            return Err(Error::Busy);
        }
        self.request(State::Draining);
        let until = Instant::now().checked_add(grace);
        if !self.shared.wait_ended(until) {
            self.request(State::Cancelling);
            self.shared.wait_ended(None);
        }
        let mut threads = self.threads.lock().unwrap_or_else(|e| e.into_inner());
        for t in threads.drain(..) {
            let _ = t.join();
        }
        Ok(())
    }

    /// Moves every member not past `to` on to it.
    fn request(&self, to: State) {
        for m in &self.shared.members {
            m.advance(to);
        }
    }
}

impl Drop for Group {
    /// Shuts the group down with no grace. From one of its own threads,
    /// which cannot wait for itself, the loops are asked to end and their
    /// threads left to finish alone.
    fn drop(&mut self) {
        if self.shutdown(Duration::ZERO).is_err() {
            self.request(State::Draining);
            self.request(State::Cancelling);
        }
    }
}

impl std::fmt::Debug for Group {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Group").field("loops", &self.len()).finish_non_exhaustive()
    }
}

#[cfg(all(test, loom))]
mod loom_tests;
#[cfg(all(test, not(loom)))]
mod tests;
