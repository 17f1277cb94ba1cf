//! The event loop: timers, descriptor readiness and cross-thread wakeups, run
//! the way libuv runs them.
//!
//! # Iteration
//! `run` repeats, while the loop is alive (an active handle, or a close
//! callback still to run) and not stopped:
//! 1. update the cached time (`now`), if anything is postponed (a timer, a
//!    sleep, a timeout); otherwise it is read when first needed (`now_fresh`:
//!    starting a timer, a sleep);
//! 2. timers: the due ones fire, in (due time, start order) order; a repeating
//!    timer is re-armed before its callback; timers started by these callbacks
//!    fire on a later iteration, never in this one;
//! 3. poll for I/O, blocking at most until the next timer (not at all in
//!    `RunMode::NoWait`, nor when a close callback or mail is pending); then
//!    the inbox, if mail is pending (`inbox.rs`): finished work, async
//!    wakeups, posts, in the order they came; then the callbacks of what is
//!    ready, in the order epoll reports it: poll handles, signals, child
//!    exits. When the poll is skipped, the inbox alone. Mail that comes
//!    meanwhile waits for the next iteration, which then does not block;
//! 4. close callbacks of the handles closed so far.
//!
//! `RunMode::Once` runs one iteration, blocking for I/O only if nothing ran
//! before the poll (no due timer, no ready task); `NoWait` polls without blocking, and
//! `Default` runs until nothing is alive or `stop` is called.
//!
//! # Handles
//! One file per type: `timer`, `poll` (fd readiness, level-triggered),
//! `async_` (wakeups sent from any thread), `signal` (signals, via a
//! signalfd) and `child` (a child's exit, via a pidfd). Requests: `pool` (work on a thread
//! pool, cancellable before it starts; its `after` callback always runs once). A handle lives in a generational
//! slab, so a closed handle's id is refused, not confused with a new one.
//! `close` stops it at once; its close callback comes later, from `run`,
//! never from `close` itself; then the id is invalid.
//!
//! Timers are tasks of the core scheduler, postponed to their due time: the
//! loop shares the scheduler's timer heap rather than keeping its own.
//!
//! A loop is single-threaded. Other threads reach it through its inbox
//! (`inbox.rs`): an [`AsyncSender`], a [`Remote`] (posts: functions run on
//! the loop), a pool thread that finished work. The inbox is one mutex-
//! protected queue and an eventfd that a sender writes only while the loop
//! sleeps or is away (`sync::mailbox` has the protocol).

mod async_;
mod chan;
mod child;
mod handle;
mod inbox;
mod poll;
mod pool;
mod remote;
mod request;
mod signal;
mod sys;
mod task;
mod timer;

use std::io;
use std::os::fd::RawFd;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::sched::{Sched, Task, When};
use crate::util::slab::Slab;
use handle::{Kind, Slot};
pub(crate) use inbox::Inbox;
use sys::Fd;

pub use crate::sync::Pool;
pub use async_::AsyncSender;
pub use chan::{Chan, Parked, Side};
pub use child::ChildCallback;
pub use handle::Handle;
pub use poll::{DISCONNECT, PollCallback, READABLE, WRITABLE};
pub use pool::Work;
pub use remote::{Post, Remote};
pub use request::{After, Request};
pub use signal::SignalCallback;
pub use signal::{raise, wait_in_thread};
pub use sys::Exit;
pub use task::{Outcome, TaskCallback, TaskFn, Wake};

/// How `run` runs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RunMode {
    /// Until nothing is alive, or `stop`.
    Default,
    /// One iteration, blocking for I/O if nothing is due.
    Once,
    /// One iteration, without blocking.
    NoWait,
}

/// A callback of a timer or async handle.
pub type Callback = Box<dyn FnMut(&mut Loop, Handle)>;
/// A close callback.
pub type CloseCallback = Box<dyn FnOnce(&mut Loop, Handle)>;

/// The epoll token of the inbox's eventfd (handle ids are never 0).
const INBOX_TOKEN: u64 = 0;
const EVENTS_PER_POLL: usize = 256;

/// An event loop. See the [module documentation](self).
pub struct Loop {
    sched: Sched,
    /// Marks the end of the batch of ready tasks `run_ready` runs.
    batch_end: Task,
    handles: Slab<Slot>,
    /// Work requests waiting for their `after` callback.
    requests: Slab<request::Pending>,
    pool: Option<Arc<Pool>>,
    signals: signal::Signals,
    epoll: Fd,
    inbox: Arc<Inbox>,
    /// Rings of the inbox's eventfd claimed by senders while the loop slept
    /// and not read yet: the poll is not skipped until they are.
    owed_rings: u64,
    /// The inbox's last batch, emptied: its memory serves the next.
    batch: inbox::Batch,
    /// Handles whose close callback is due, in order of closing.
    closing: Vec<Handle>,
    /// Active handles and pending work requests: they keep `run` going.
    active: usize,
    /// The active timers among them (when they are all, no I/O can come).
    active_timers: usize,
    /// Holds taken by `hold`: they keep `run` going as an active handle
    /// does, for work another thread may send (a group's loop holds itself;
    /// each task parked on a channel holds its loop, `chan.rs`).
    holds: usize,
    now: u64,
    stopped: bool,
    running: bool,
    /// Tasks may hand the CPU on (`task_pass`): inside `run_ready`'s batch.
    passing: bool,
    /// `run` runs in `RunMode::Default` (hand-offs may then go on past the
    /// batch's end when nothing else is alive, see `task_pass`).
    continuous: bool,
    /// `now` was not read at the start of this iteration (nothing was
    /// postponed): `now_fresh` reads the clock.
    time_stale: bool,
    events: Vec<libc::epoll_event>,
}

impl Loop {
    /// A new loop, with its epoll instance and inbox.
    pub fn new() -> io::Result<Loop> {
        let epoll = sys::epoll_create()?;
        let inbox = Arc::new(Inbox::new()?);
        sys::epoll_ctl(&epoll, libc::EPOLL_CTL_ADD, inbox.fd(), libc::EPOLLIN as u32, INBOX_TOKEN)?;
        let mut sched = Sched::new();
        let batch_end = sched.task_new(0);
        let mut l = Loop {
            sched,
            batch_end,
            handles: Slab::default(),
            requests: Slab::default(),
            pool: None,
            signals: signal::Signals::default(),
            epoll,
            inbox,
            owed_rings: 0,
            batch: inbox::Batch::default(),
            closing: Vec::new(),
            active: 0,
            active_timers: 0,
            holds: 0,
            now: 0,
            stopped: false,
            running: false,
            passing: false,
            continuous: false,
            time_stale: false,
            events: vec![libc::epoll_event { events: 0, u64: 0 }; EVENTS_PER_POLL],
        };
        l.update_time();
        Ok(l)
    }

    /// The loop's cached time (ns, monotonic), updated at each iteration
    /// that has something postponed; see [`Loop::now_fresh`].
    pub fn now(&self) -> u64 {
        self.now
    }

    /// The cached time, read from the clock first if this iteration did not
    /// (it had nothing postponed): what timers and sleeps count from.
    pub fn now_fresh(&mut self) -> u64 {
        if self.time_stale {
            self.update_time();
        }
        self.now
    }

    /// The time a wait starts from: the clock read now (and cached), not the
    /// iteration's start, so a wait of `ns` lasts at least `ns` from its call.
    pub fn wait_start(&mut self) -> u64 {
        self.update_time();
        self.now
    }

    /// Updates the cached time.
    pub fn update_time(&mut self) {
        self.now = self.sched.now();
        self.time_stale = false;
    }

    /// The time at the start of an iteration: read only if something is
    /// postponed (a clock read costs about 30 ns on a VM, which is most of an
    /// iteration that only runs ready tasks).
    fn tick_time(&mut self) {
        if self.sched.next_wake().is_some() {
            self.update_time();
        } else {
            self.time_stale = true;
        }
    }

    /// Could an iteration do anything besides running ready tasks? No when
    /// nothing is active, closing, postponed or in the inbox, `run` runs by
    /// default and was not stopped: then a batch's end may be passed without
    /// one.
    pub(crate) fn only_ready_alive(&self) -> bool {
        self.continuous
            && !self.stopped
            && self.active == 0
            && self.holds == 0
            && self.closing.is_empty()
            && self.sched.next_wake().is_none()
            && !self.inbox.pending()
    }

    /// Is anything keeping `run` going: an active handle, a pending close, a
    /// loop task that is ready, postponed or parked on a channel, or mail in
    /// the inbox (a post)?
    pub fn alive(&self) -> bool {
        self.active > 0
            || self.holds > 0
            || !self.closing.is_empty()
            || self.sched.ready_head().is_some()
            || self.sched.next_wake().is_some()
            || self.inbox.pending()
    }

    /// Keeps `run` going, with nothing else alive, until [`Loop::unhold`]:
    /// for work that comes from other threads (a group's loop waits for
    /// posts so; a task parked on a channel, for another loop's send).
    pub fn hold(&mut self) {
        self.holds += 1;
    }

    /// Gives back a hold taken by [`Loop::hold`] (none left: nothing).
    pub fn unhold(&mut self) {
        self.holds = self.holds.saturating_sub(1);
    }

    /// Makes `run` return after the current iteration.
    pub fn stop(&mut self) {
        self.stopped = true;
    }

    /// The epoll descriptor: readable when the loop has I/O or wakeups to
    /// process. A host loop polls it, then runs this loop with `NoWait`.
    pub fn backend_fd(&self) -> RawFd {
        self.epoll.raw()
    }

    /// How long (ms, rounded up, from now) a host may block on `backend_fd`
    /// before running this loop: -1 for no timer, 0 if something is due now
    /// (mail in the inbox too). Between two runs the loop counts as asleep:
    /// other threads' mail makes `backend_fd` readable.
    pub fn backend_timeout(&self) -> i32 {
        if self.stopped
            || !self.closing.is_empty()
            || !self.alive()
            || self.sched.ready_head().is_some()
            || self.inbox.pending()
        {
            return 0;
        }
        match self.sched.next_wake() {
            None => -1,
            Some(wake) if wake <= self.now => 0,
            Some(wake) => {
                let ns = wake.saturating_sub(crate::time::monotonic_ns().max(self.now));
                ns.div_ceil(1_000_000).min(i32::MAX as u64) as i32
            }
        }
    }

    /// Runs the loop (see the module documentation). Returns whether it is
    /// still alive. `Error::Busy` when called from one of its callbacks.
    pub fn run(&mut self, mode: RunMode) -> Result<bool> {
        if self.running {
            return Err(Error::Busy);
        }
        self.running = true;
        self.continuous = mode == RunMode::Default;
        // Awake: senders stop ringing the eventfd until we sleep or leave.
        self.inbox_woke();
        let r = self.iterate(mode);
        self.inbox_leave();
        self.continuous = false;
        self.running = false;
        self.stopped = false;
        r
    }

    fn iterate(&mut self, mode: RunMode) -> Result<bool> {
        let mut alive = self.alive();
        if !alive {
            self.update_time();
        }
        while alive && !self.stopped {
            self.tick_time();
            let ran = self.run_ready();
            // `Once` blocks only if nothing ran before the poll, as libuv's
            // UV_RUN_ONCE: a timer that fell due here is the iteration's work.
            // (Blocking then waited for I/O alone: forever, with a poll or an
            // async active and no other timer.)
            let timeout = match mode {
                RunMode::NoWait => 0,
                RunMode::Once if ran => 0,
                _ => self.backend_timeout(),
            };
            // With only timers alive nothing can arrive on the descriptors, so a
            // poll that would not block is skipped (it is the costly part of a
            // busy timer loop), unless the inbox's eventfd owes a read.
            if timeout != 0 || self.active != self.active_timers || self.owed_rings > 0 {
                self.poll_io(timeout)?; // runs the inbox too
            } else if self.inbox.pending() {
                self.run_inbox();
            }
            if mode == RunMode::Once {
                self.tick_time();
                self.run_ready();
            }
            self.run_closing();
            alive = self.alive();
            if mode != RunMode::Default {
                break;
            }
        }
        Ok(alive)
    }

    /// Waits for I/O up to `timeout_ms` and dispatches what came. A wait
    /// that may block is a sleep for the inbox (other threads' mail then
    /// writes the eventfd), and does not block if mail is pending.
    fn poll_io(&mut self, timeout_ms: i32) -> Result<()> {
        let mut events = std::mem::take(&mut self.events);
        let n = sys::epoll_wait(&self.epoll, &mut events, self.inbox_sleep(timeout_ms));
        if timeout_ms != 0 {
            self.inbox_woke();
        }
        // Mail first: what other threads (and this one) sent before the poll
        // runs before the I/O the poll found, in the order it was sent.
        if self.inbox.pending() {
            self.run_inbox();
        }
        let r = n.map_err(|e| Error::from_io(&e)).map(|n| {
            for ev in &events[..n] {
                let (token, bits) = (ev.u64, ev.events);
                if token == INBOX_TOKEN {
                    self.inbox_read();
                } else if token == signal::SIGNAL_TOKEN {
                    self.run_signals();
                } else if let Some(h) = Handle::from_raw(token) {
                    match self.handles.get(h.0).map(|s| s.kind.tag()) {
                        Some(handle::Tag::Child) => self.dispatch_child(h),
                        _ => self.dispatch_poll(h, bits),
                    }
                }
            }
        });
        self.events = events;
        r
    }

    // ===== handles =====

    fn insert(&mut self, kind: Kind, data: usize) -> Handle {
        Handle(self.handles.insert(Slot::new(kind, data)))
    }

    fn slot(&self, h: Handle) -> Result<&Slot> {
        self.handles.get(h.0).filter(|s| !s.closing).ok_or(Error::Inval)
    }

    fn slot_mut(&mut self, h: Handle) -> Result<&mut Slot> {
        self.handles.get_mut(h.0).filter(|s| !s.closing).ok_or(Error::Inval)
    }

    fn set_active(&mut self, h: Handle, active: bool) {
        if let Some(s) = self.handles.get_mut(h.0) {
            if s.active != active {
                s.active = active;
                let timer = s.kind.tag() == handle::Tag::Timer;
                let n = if active { 1 } else { usize::MAX }; // +1 or -1, wrapping
                self.active = self.active.wrapping_add(n);
                if timer {
                    self.active_timers = self.active_timers.wrapping_add(n);
                }
            }
        }
    }

    /// Runs the callback of handle `h`, which `field` finds in its kind. The
    /// callback is taken out while it runs (it gets the loop), then put back
    /// unless it replaced itself (restarted with another) or closed its handle.
    fn call_back<C>(
        &mut self,
        h: Handle,
        field: fn(&mut Kind) -> Option<&mut Option<C>>,
        run: impl FnOnce(&mut Loop, &mut C),
    ) {
        let Some(mut cb) = self.slot_mut(h).ok().and_then(|s| field(&mut s.kind)).and_then(Option::take) else {
            return;
        };
        run(self, &mut cb);
        if let Some(slot) = self.slot_mut(h).ok().and_then(|s| field(&mut s.kind)) {
            if slot.is_none() {
                *slot = Some(cb);
            }
        }
    }

    /// Fires the due timers and runs the ready loop tasks: the batch ready at
    /// the start, each once; what becomes ready meanwhile runs next iteration.
    /// False if there was none.
    fn run_ready(&mut self) -> bool {
        self.sched.take_due_at(self.now);
        if self.sched.ready_head().is_none() {
            return false;
        }
        // A marker at the tail ends the batch: O(1), no signal group.
        let _ = self.sched.schedule(self.batch_end, When::Later);
        while let Some((task, raw)) = self.sched.ready_head_data() {
            let _ = self.sched.unschedule(task);
            if task == self.batch_end {
                break;
            }
            let Some(h) = Handle::from_raw(raw as u64) else { continue };
            match self.handles.get(h.0).map(|s| s.kind.tag()) {
                Some(handle::Tag::Timer) => self.fire_timer(h, task),
                Some(handle::Tag::Task) => {
                    self.passing = true;
                    self.run_task(h, task);
                    self.passing = false;
                }
                _ => {}
            }
        }
        true
    }

    /// The user value of a handle.
    pub fn data(&self, h: Handle) -> Result<usize> {
        Ok(self.slot(h)?.data)
    }

    /// Replaces the user value of a handle.
    pub fn set_data(&mut self, h: Handle, data: usize) -> Result<()> {
        self.slot_mut(h)?.data = data;
        Ok(())
    }

    /// Is the handle active (a started timer or poll, an async)?
    pub fn is_active(&self, h: Handle) -> Result<bool> {
        Ok(self.slot(h)?.active)
    }

    /// Closes a handle: stops it now; `cb`, if any, runs later from `run`, and
    /// then the handle's id is invalid. `Error::Inval` for an unknown or
    /// closing handle.
    pub fn close(&mut self, h: Handle, cb: Option<CloseCallback>) -> Result<()> {
        self.slot(h)?;
        match self.handles.get(h.0).map(|s| s.kind.tag()) {
            Some(handle::Tag::Timer) => self.timer_stop(h)?,
            Some(handle::Tag::Poll) => self.poll_close(h)?,
            Some(handle::Tag::Async) => self.async_stop(h),
            Some(handle::Tag::Signal) => self.signal_stop(h)?,
            Some(handle::Tag::Child) => self.child_stop(h)?,
            Some(handle::Tag::Task) => self.task_stop(h)?,
            None => return Err(Error::Inval),
        }
        self.set_active(h, false);
        let s = self.slot_mut(h)?;
        s.closing = true;
        s.close_cb = cb;
        self.closing.push(h);
        Ok(())
    }

    /// Runs the close callbacks due, freeing their handles first.
    fn run_closing(&mut self) {
        for h in std::mem::take(&mut self.closing) {
            if let Some(cb) = self.free_closed(h) {
                cb(self, h);
            }
        }
    }

    /// Frees closed handle `h`; returns its close callback, if any.
    fn free_closed(&mut self, h: Handle) -> Option<CloseCallback> {
        let slot = self.handles.remove(h.0)?;
        match &slot.kind {
            Kind::Timer(t) => drop(self.sched.task_free(t.task)),
            Kind::Task(t) => {
                for &w in &t.watches {
                    let _ = self.sched.task_free(w);
                }
                let _ = self.sched.task_free(t.task);
            }
            _ => {}
        }
        slot.close_cb
    }

    /// Frees now the handles closed without a close callback: nothing waits
    /// for them, so closing the loop need not wait for a `run` (a coroutine
    /// freed unfinished closes its task so). `Error::Busy` inside `run`,
    /// which owns the closing list meanwhile.
    pub fn free_quietly_closed(&mut self) -> Result<()> {
        if self.running {
            return Err(Error::Busy);
        }
        let (told, quiet): (Vec<Handle>, Vec<Handle>) = std::mem::take(&mut self.closing)
            .into_iter()
            .partition(|&h| self.handles.get(h.0).is_some_and(|s| s.close_cb.is_some()));
        for h in quiet {
            self.free_closed(h);
        }
        self.closing = told;
        Ok(())
    }

    /// `Error::Busy` while handles or work requests remain (close them and run
    /// the loop until their callbacks ran); then it may be dropped cleanly.
    pub fn check_close(&self) -> Result<()> {
        if self.handles.len() > 0 || self.requests.len() > 0 { Err(Error::Busy) } else { Ok(()) }
    }

    /// How many handles exist (open or closing).
    pub fn handle_count(&self) -> usize {
        self.handles.len()
    }
}

impl Drop for Loop {
    /// Closes the inbox: the posts still queued are dropped unrun, later
    /// posts and sends are refused.
    fn drop(&mut self) {
        drop(self.inbox.close());
    }
}

impl std::fmt::Debug for Loop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loop")
            .field("handles", &self.handles.len())
            .field("active", &self.active)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod remote_tests;
#[cfg(test)]
mod task_tests;
#[cfg(test)]
mod tests;
