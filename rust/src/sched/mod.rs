//! The scheduler: where tasks wait, and in which order they run.
//!
//! # Queues
//! - The **ready queue**: the tasks to run, head first. `When::Next` inserts at
//!   the head, `When::Later` at the tail.
//! - One **signal queue** per signal key that has waiters. A key is any
//!   non-zero `usize` chosen by the face (an address it owns, typically). The
//!   queue, and the scheduler's interest in the key, exist only while it has
//!   waiters; an optional hook hears when that starts and ends.
//! - The **postponed queue**: groups of tasks with a wake time, in a heap
//!   ordered by (time, order of postponing). `schedule` makes a group of one;
//!   `notify` turns a whole signal queue into one group.
//!
//! A task is in at most one queue. Every queue is an intrusive ring in the
//! node arena (see `arena`), so `notify` moves a signal queue of any length in
//! O(1) to the ready queue or to another signal, and in O(log n) to the
//! postponed queue. Nothing scans all tasks.
//!
//! # Combined signals
//! `combine` makes a signal that fires once all (`Mode::All`) or any
//! (`Mode::Any`) of its parts were notified while it had waiters; see
//! `combined` for the rules. They are implemented in the scheduler itself,
//! without helper tasks, and without recursion: chains of any depth need no
//! deep native stack (a work stack in the scheduler holds what is pending).
//!
//! # Running
//! The core never runs tasks: a face takes [`Sched::ready_head`], resumes it
//! as it sees fit, and places it again. [`Sched::take_due`] moves the tasks
//! whose wake time came to the ready tail; [`Sched::next_wake`] tells how long
//! a face may sleep.
//!
//! A scheduler is single-threaded and owns no global state.

mod arena;
mod combined;
mod task;

use crate::error::{Error, Result};
use crate::time::Clock;
use crate::time::heap::{Entry, TimerHeap};
use arena::{Arena, NIL, Role};
use combined::{Combo, Step, Watch};
use rustc_hash::FxHashMap;

pub use task::{Mode, Task, When};

/// How many operations a task may complete at once (without suspending) in
/// one turn: from when its loop resumes it until it suspends. An operation
/// that would be number `BUDGET + 1` first yields to the tail of the ready
/// queue, then tries; the count starts again at every real suspension. So a
/// task whose data is always there (a client flooding a server) still lets
/// timers, I/O and the other tasks run. The stackful C calls
/// (`ffi::coro_net`, `ffi::chan`, `ffi::coro`) and the C++ awaitables
/// (through `COT_BUDGET` of the C header) use this one; the Lua face has
/// its own, larger figure for its cheaper calls (`state::BUDGET` there).
///
/// Tokio's rule, not its number (128). A loop runs each ready task once per
/// iteration and its due timers after them, so a timer is late by about
/// (busy tasks) x `BUDGET` operations. Measured (doc/benchmarks.md,
/// "Fairness: a flooded proxy"): 256 clients flooding a proxy, against asio
/// (one operation per turn): at 128 the proxy's timers were 14 to 25 times
/// later than asio's, and on one loop with its clients it closed
/// connections as idle (16 still did); at 8 no idle close, 3 to 4 times;
/// at 4, 1.6 to 4.2 times; at 2 within 2x, the target. 2 is an echo's turn
/// (the write, then the read that finds nothing and waits), so a
/// request-reply task still never yields for it; a proxy's pump yields
/// once per chunk.
pub const BUDGET: u32 = 2;

/// Called with `(key, true)` when a signal queue gets its first waiter and
/// `(key, false)` when it loses its last one. It must not call the scheduler.
pub type SignalHook = Box<dyn FnMut(usize, bool)>;

/// What the scheduler knows of one signal key.
struct Signal {
    /// Sentinel of the key's queue, or `NIL` while nobody waits.
    queue: u32,
    /// Armed combined signals that count a notification of this key.
    watchers: Vec<Watch>,
    /// Set when the key is a combined signal made by this scheduler.
    combo: Option<Box<Combo>>,
}

impl Default for Signal {
    fn default() -> Signal {
        Signal { queue: NIL, watchers: Vec::new(), combo: None }
    }
}

/// A scheduler instance. See the [module documentation](self).
pub struct Sched {
    arena: Arena,
    ready: u32,
    /// Keyed by the program's own addresses or ids, so FxHash: SipHash's
    /// resistance to chosen collisions buys nothing, and `notify` is hot.
    signals: FxHashMap<usize, Signal>,
    timers: TimerHeap,
    seq: u64,
    clock: Clock,
    hook: Option<SignalHook>,
    /// Combined-signal work in progress (see `combined`): empty between calls.
    steps: Vec<Step>,
    /// The watches a `Step::Count` goes through, saved when counting began.
    watch_buf: Vec<Watch>,
}

impl Default for Sched {
    fn default() -> Self {
        Sched::new()
    }
}

impl Sched {
    /// A scheduler on the monotonic clock.
    pub fn new() -> Sched {
        Sched::with_clock(Clock::Monotonic)
    }

    /// A scheduler reading the given clock.
    pub fn with_clock(clock: Clock) -> Sched {
        let mut arena = Arena::new(crate::util::os::generation_seed());
        let ready = arena.alloc(Role::Ready, 0);
        Sched {
            arena,
            ready,
            signals: FxHashMap::default(),
            timers: TimerHeap::default(),
            seq: 0,
            clock,
            hook: None,
            steps: Vec::new(),
            watch_buf: Vec::new(),
        }
    }

    /// Replaces the clock. Wake times already set keep their values.
    pub fn set_clock(&mut self, clock: Clock) {
        self.clock = clock;
    }

    /// The current time of the scheduler's clock, in nanoseconds.
    pub fn now(&mut self) -> u64 {
        self.clock.now()
    }

    /// Sets (or clears) the hook told when a signal queue starts and stops
    /// having waiters.
    pub fn set_signal_hook(&mut self, hook: Option<SignalHook>) {
        self.hook = hook;
    }

    // ===== tasks =====

    /// A new task, in no queue, carrying the user value `data`.
    pub fn task_new(&mut self, data: usize) -> Task {
        let i = self.arena.alloc(Role::Task, data);
        Task::new(i, self.arena.node(i).generation)
    }

    /// Unschedules and frees a task; its handle becomes invalid.
    pub fn task_free(&mut self, t: Task) -> Result<()> {
        let i = self.index(t)?;
        self.unlink_task(i);
        self.arena.release(i);
        Ok(())
    }

    /// The user value of a task.
    #[inline]
    pub fn data(&self, t: Task) -> Result<usize> {
        Ok(self.arena.node(self.index(t)?).data)
    }

    /// Replaces the user value of a task.
    pub fn set_data(&mut self, t: Task, data: usize) -> Result<()> {
        let i = self.index(t)?;
        self.arena.node_mut(i).data = data;
        Ok(())
    }

    #[inline]
    fn index(&self, t: Task) -> Result<u32> {
        match self.arena.lookup(t.index(), Role::Task, t.generation()) {
            Some(_) => Ok(t.index()),
            None => Err(Error::Inval),
        }
    }

    #[inline]
    fn task_at(&self, i: u32) -> Option<Task> {
        let n = self.arena.node(i);
        (n.role == Role::Task).then(|| Task::new(i, n.generation))
    }

    // ===== scheduling =====

    /// Places a task that is in no queue. Returns `false`, changing nothing,
    /// if it is already in one.
    #[inline]
    pub fn schedule(&mut self, t: Task, when: When) -> Result<bool> {
        let i = self.index(t)?;
        check_when(when)?;
        if self.arena.is_linked(i) {
            return Ok(false);
        }
        self.place(i, when);
        Ok(true)
    }

    /// Takes `t` out of its queue, if any, and places it as `when` says: what
    /// a face does with a task it has just resumed, in one call.
    #[inline]
    pub fn reschedule(&mut self, t: Task, when: When) -> Result<()> {
        let i = self.index(t)?;
        check_when(when)?;
        self.unlink_task(i);
        self.place(i, when);
        Ok(())
    }

    /// Places task `i`, which is in no queue.
    #[inline]
    fn place(&mut self, i: u32, when: When) {
        match when {
            When::Next => self.arena.push_front(self.ready, i),
            When::Later => self.arena.push_back(self.ready, i),
            When::Wait(key) => self.wait_on(key, i),
            When::Postpone(_) | When::Delay(_) => {
                let s = self.new_group(when);
                self.arena.push_back(s, i);
            }
        }
    }

    /// A yield in one call, for a face's hot path: `t` goes to the ready tail
    /// (unless it is in a queue already), then the head of the ready queue
    /// leaves the queue and is returned with its user value, unless it is
    /// `t` itself or `stop`. With `pass_stop`, a `stop` at the head moves to
    /// the tail first (behind `t`) and the next head is taken. `Error::Inval`
    /// for a bad `t`.
    #[inline]
    pub fn requeue_take_head(&mut self, t: Task, stop: Task, pass_stop: bool) -> Result<Option<(Task, usize)>> {
        let i = self.index(t)?;
        if !self.arena.is_linked(i) {
            self.arena.push_back(self.ready, i);
        }
        let mut head = self.arena.node(self.ready).next;
        let mut n = *self.arena.node(head);
        if head == stop.index() && n.generation == stop.generation() && n.role == Role::Task {
            if !pass_stop {
                return Ok(None);
            }
            self.arena.unlink(head); // `t` is in the ring: it stays non-empty
            self.arena.push_back(self.ready, head);
            head = self.arena.node(self.ready).next;
            n = *self.arena.node(head);
        }
        if head == i || n.role != Role::Task {
            return Ok(None);
        }
        self.arena.unlink(head);
        Ok(Some((Task::new(head, n.generation), n.data)))
    }

    /// Takes a task out of its queue. Returns `false` if it was in none.
    #[inline]
    pub fn unschedule(&mut self, t: Task) -> Result<bool> {
        let i = self.index(t)?;
        Ok(self.unlink_task(i))
    }

    /// Is the task in a queue?
    #[inline]
    pub fn is_scheduled(&self, t: Task) -> Result<bool> {
        Ok(self.arena.is_linked(self.index(t)?))
    }

    /// Moves every waiter of `key`, in order, as `when` says (to the ready
    /// queue or another signal: O(1); to the postponed queue: O(log n), one
    /// wake time for all). The notification also counts for the combined
    /// signals waiting for `key`. Returns `true` if a task moved or a combined
    /// signal counted it.
    pub fn notify(&mut self, key: usize, when: When) -> Result<bool> {
        check_key(key)?;
        check_when(when)?;
        let moved = self.take_queue(key);
        if let Some(s) = moved {
            match when {
                When::Next | When::Later => self.release_into_ready(s, when == When::Next),
                When::Wait(target) => self.append_ring(target, s),
                When::Postpone(_) | When::Delay(_) => {
                    let group = self.new_group(when);
                    self.arena.splice(group, s, false);
                    self.arena.release(s);
                }
            }
        }
        let counted = self.count(key);
        self.run_steps();
        if let When::Wait(target) = when {
            self.settle(target);
        }
        self.settle(key);
        Ok(moved.is_some() || counted)
    }

    /// Does `key` have waiters?
    pub fn waiting(&self, key: usize) -> Result<bool> {
        check_key(key)?;
        Ok(self.signals.get(&key).is_some_and(|s| s.queue != NIL))
    }

    // ===== iteration =====

    /// The head of the ready queue.
    #[inline]
    pub fn ready_head(&self) -> Option<Task> {
        self.task_at(self.arena.node(self.ready).next)
    }

    /// The head of the ready queue with its user value (one lookup: this is a
    /// face's hot path).
    #[inline]
    pub fn ready_head_data(&self) -> Option<(Task, usize)> {
        let i = self.arena.node(self.ready).next;
        let n = self.arena.node(i);
        (n.role == Role::Task).then(|| (Task::new(i, n.generation), n.data))
    }

    /// The first waiter of `key`.
    pub fn signal_head(&self, key: usize) -> Result<Option<Task>> {
        check_key(key)?;
        Ok(match self.signals.get(&key) {
            Some(s) if s.queue != NIL => self.task_at(self.arena.node(s.queue).next),
            _ => None,
        })
    }

    /// The task after `t` in the queue `t` is in; `None` at the end or if `t`
    /// is in no queue.
    #[inline]
    pub fn next(&self, t: Task) -> Result<Option<Task>> {
        let n = self.arena.node(self.index(t)?);
        Ok(if n.next == NIL { None } else { self.task_at(n.next) })
    }

    /// The ready queue, head first.
    pub fn ready(&self) -> impl Iterator<Item = Task> + '_ {
        std::iter::successors(self.ready_head(), |&t| self.next(t).ok().flatten())
    }

    /// The waiters of `key`, first first.
    pub fn waiters(&self, key: usize) -> impl Iterator<Item = Task> + '_ {
        std::iter::successors(self.signal_head(key).ok().flatten(), |&t| self.next(t).ok().flatten())
    }

    // ===== time =====

    /// Moves every postponed task whose wake time has come (`now >= wake`) to
    /// the ready tail, in (wake time, order of postponing) order. Returns
    /// whether any moved. Reads the clock only if something is postponed.
    pub fn take_due(&mut self) -> bool {
        if self.timers.peek().is_none() {
            return false;
        }
        let now = self.clock.now();
        self.take_due_at(now)
    }

    /// [`Sched::take_due`] at a time the caller read (a face with its own
    /// clock, e.g. Lua's `cothread.time`).
    pub fn take_due_at(&mut self, now: u64) -> bool {
        let mut moved = false;
        while let Some(e) = self.timers.pop_due(now, |e| timer_live(&self.arena, e)) {
            self.release_into_ready(e.id, false);
            moved = true;
        }
        moved
    }

    /// The earliest wake time in the postponed queue.
    pub fn next_wake(&self) -> Option<u64> {
        self.timers.peek().map(|e| e.when)
    }

    /// How many groups (postpone calls still pending) the postponed queue has.
    pub fn postponed_groups(&self) -> usize {
        self.timers.len()
    }

    // ===== internals =====

    /// Appends task `i` (in no queue) to the queue of `key`.
    fn wait_on(&mut self, key: usize, i: u32) {
        let sig = self.signals.entry(key).or_default();
        if sig.queue != NIL {
            self.arena.push_back(sig.queue, i);
            return;
        }
        let s = self.arena.alloc(Role::Signal, key);
        sig.queue = s;
        self.arena.push_back(s, i);
        self.call_hook(key, true);
        self.settle(key);
    }

    /// A new, empty postponed group for `when` (`Postpone` or `Delay`).
    fn new_group(&mut self, when: When) -> u32 {
        let time = match when {
            When::Postpone(t) => t,
            When::Delay(d) => self.clock.now().saturating_add(d),
            _ => unreachable!("new_group needs a time"),
        };
        let s = self.arena.alloc(Role::Timer, 0);
        self.seq += 1;
        let generation = self.arena.node(s).generation;
        self.timers.push(Entry { when: time, seq: self.seq, id: s, generation });
        s
    }

    /// Unlinks task `i`, dropping the queue it leaves empty. Returns whether it
    /// was linked.
    #[inline]
    fn unlink_task(&mut self, i: u32) -> bool {
        if !self.arena.is_linked(i) {
            return false;
        }
        if let Some(s) = self.arena.unlink(i) {
            let n = *self.arena.node(s);
            match n.role {
                Role::Signal => {
                    self.take_queue(n.data);
                    self.arena.release(s);
                    self.settle(n.data);
                }
                Role::Timer => {
                    self.arena.release(s);
                    self.timers.cancelled(|e| timer_live(&self.arena, e));
                }
                _ => {}
            }
        }
        true
    }

    /// Splices the ring of sentinel `s` into the ready queue and frees `s`.
    #[inline]
    fn release_into_ready(&mut self, s: u32, front: bool) {
        self.arena.splice(self.ready, s, front);
        self.arena.release(s);
    }

    /// Detaches the queue of `key`, if any, and returns its sentinel. The key's
    /// entry stays until `settle`.
    fn take_queue(&mut self, key: usize) -> Option<u32> {
        let sig = self.signals.get_mut(&key)?;
        if sig.queue == NIL {
            return None;
        }
        let s = std::mem::replace(&mut sig.queue, NIL);
        self.call_hook(key, false);
        Some(s)
    }

    /// Appends the ring of the detached sentinel `s` to the queue of `key`
    /// (reusing `s` as that queue if it had none). No `settle`.
    fn append_ring(&mut self, key: usize, s: u32) {
        let sig = self.signals.entry(key).or_default();
        if sig.queue != NIL {
            self.arena.splice(sig.queue, s, false);
            self.arena.release(s);
        } else {
            sig.queue = s;
            self.arena.node_mut(s).data = key;
            self.call_hook(key, true);
        }
    }

    /// Brings the key's entry up to date after its queue or watchers changed:
    /// arms or disarms a combined signal (and what that spreads to), forgets
    /// a plain key nobody needs.
    fn settle(&mut self, key: usize) {
        let Some(sig) = self.signals.get(&key) else {
            return;
        };
        if sig.combo.is_some() {
            self.settle_step(key);
            self.run_steps();
        } else if sig.queue == NIL && sig.watchers.is_empty() {
            self.signals.remove(&key);
        }
    }

    fn call_hook(&mut self, key: usize, active: bool) {
        if let Some(h) = self.hook.as_mut() {
            h(key, active);
        }
    }
}

impl std::fmt::Debug for Sched {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sched")
            .field("signals", &self.signals.len())
            .field("postponed_groups", &self.timers.len())
            .field("clock", &self.clock)
            .finish_non_exhaustive()
    }
}

/// Is the timer entry's group still there (not emptied and freed)?
#[inline]
fn timer_live(arena: &Arena, e: &Entry) -> bool {
    arena.lookup(e.id, Role::Timer, e.generation).is_some()
}

fn check_key(key: usize) -> Result<()> {
    if key == 0 { Err(Error::Inval) } else { Ok(()) }
}

fn check_when(when: When) -> Result<()> {
    match when {
        When::Wait(key) => check_key(key),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod model_tests;
#[cfg(test)]
pub(crate) mod tests;
