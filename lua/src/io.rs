//! The event loop of a scheduler: cothreads waiting for I/O or a timeout.
//!
//! Each scheduler gets a reactor [`Loop`] the first time one of its cothreads
//! waits for I/O (`Io`, in `State::io`). A socket is *attached* to the loop of
//! the scheduler whose cothread first waits on it: it gets a poll handle there
//! (`Sock`), kept until the socket is closed or collected.
//!
//! # A wait
//! A cothread that must wait (a socket would block) calls `begin`, which
//! records a `Wait` (the task, the sockets and directions, an optional
//! deadline as a loop timer) and registers the wait on each socket; then the
//! cothread yields the hidden operation `cothread.io`, whose dispatch puts it
//! in the queue of the private signal `Io::key`: it is registered (it keeps
//! `run` going, `scheduled` says true) but no `notify` can reach it.
//!
//! The wait ends in exactly one way, and its record says which:
//! - readiness of one of its sockets (`Outcome::Ready`), its deadline's timer
//!   (`Timeout`), or the close of one of its sockets (`Closed`): the loop's
//!   callbacks only queue events (`Io::events`); `poll` then drains them,
//!   sets the outcome, takes the wait off every socket and timer, and makes
//!   the task ready;
//! - the cothread is unscheduled (or otherwise forgotten) while waiting:
//!   `cancel` drops the record and its registrations at once, so a late
//!   readiness finds nothing and resumes nobody. If the cothread is scheduled
//!   again later, its call finds no record and returns `Cancelled`.
//!
//! When the cothread runs again, its C continuation calls `end`, which takes
//! the record and returns the outcome.
//!
//! A wait may also end by an *outside event* (`begin_external`): a loop
//! callback (a child's exit, a signal) calls `Notifier::done`, or a job on
//! the loop's thread pool completes (`begin_job`, whose job owns everything it
//! touches and whose result is kept for `take_result`). Its `on_end` cleanup
//! (closing the handles it made) runs however the wait ends, cancel included;
//! a late event finds no record and resumes nobody.
//!
//! Poll handles stay registered after their waiter left (a re-wait for the
//! same direction then costs no system call); one that fires with nobody
//! waiting is narrowed or stopped then.
//!
//! # Virtual sources
//! A channel's receiver is attached like a socket but without a descriptor
//! (`attach_virtual`): waits register on it the same way, and `fire` ends
//! them when a value is sent or the channel closes. A wait on virtual
//! sources only, without a deadline, does not keep `run` going (only another
//! cothread could end it, as with a signal).

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::os::fd::RawFd;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use cothread::reactor::{DISCONNECT, Handle, Loop, READABLE, RunMode, WRITABLE};
use cothread::{Task, When};
use rustc_hash::FxHashMap;

use crate::state::State;

/// Direction of a wait on a socket.
pub const READ: u32 = READABLE;
pub const WRITE: u32 = WRITABLE;

thread_local! {
    /// The scheduler resuming a cothread on this thread, innermost first (set
    /// around `lua_resume` by `sched::resume_head`).
    pub static CURRENT: Cell<*mut State> = const { Cell::new(std::ptr::null_mut()) };
    /// Source of socket and wait identifiers (never reused, never 0).
    static NEXT_ID: Cell<u64> = const { Cell::new(1) };
}

/// A new identifier, unique on this thread.
pub fn new_id() -> u64 {
    NEXT_ID.with(|c| {
        let id = c.get();
        c.set(id + 1);
        id
    })
}

/// How a wait ended.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Outcome {
    /// A socket it waited on is ready (or a sleep without sockets ended).
    Ready,
    /// Its deadline passed.
    Timeout,
    /// A socket it waited on was closed.
    Closed,
    /// The cothread was rescheduled from outside: the wait was dropped.
    Cancelled,
}

/// What a pool job gives back (it owns its resources: dropped unread if its
/// cothread left the wait, it frees them).
pub type JobResult = Box<dyn Any + Send>;
/// Work for the thread pool (it must not touch Lua).
pub type Job = Box<dyn FnOnce() -> JobResult + Send>;

/// Where a pool job leaves its result for the loop.
#[derive(Default)]
struct JobSlot {
    result: Option<JobResult>,
    /// The wait ended (its cothread left): the job drops its result itself.
    left: bool,
}

/// A loop cleanup run when an external wait ends (however it ends).
pub type OnEnd = Box<dyn FnOnce(&mut Loop)>;

/// What the loop's callbacks report.
enum Event {
    Poll(u64, u32),
    Timer(u64),
    /// An outside event ended wait `id`, maybe with a result.
    Done(u64, Option<JobResult>),
}

/// Ends external waits from the loop's callbacks (see `Io::begin_external`).
#[derive(Clone)]
pub struct Notifier(Rc<RefCell<Vec<Event>>>);

impl Notifier {
    /// Ends wait `id` (at the next `poll`; nothing if it is gone by then).
    pub fn done(&self, id: u64) {
        self.0.borrow_mut().push(Event::Done(id, None));
    }

    /// Ends wait `id` with a result for `take_result` (dropped if the wait
    /// is gone or ended already).
    pub fn done_with(&self, id: u64, r: JobResult) {
        self.0.borrow_mut().push(Event::Done(id, Some(r)));
    }
}

/// A socket attached to the loop (or a virtual source: no poll handle).
struct Sock {
    poll: Option<Handle>,
    /// Waits for reading and for writing (usually one or none).
    readers: Vec<u64>,
    writers: Vec<u64>,
    /// The events the poll handle is started for (0: stopped).
    watching: u32,
}

struct Wait {
    task: Task,
    socks: Vec<(u64, u32)>,
    timer: Option<Handle>,
    /// Counted in `Io::armed` while pending (an external wait always is).
    armed: bool,
    /// Its deadline (monotonic ns), for `wait_info`.
    deadline: Option<u64>,
    on_end: Option<OnEnd>,
    outcome: Option<Outcome>,
}

/// A task's last wake by the loop (`Io::last_wake`, `Io::wait_info`).
#[derive(Clone, Copy)]
struct Wake {
    /// Wall-clock seconds.
    time: i64,
    /// Sources the ended wait waited on for reading and for writing.
    readers: usize,
    writers: usize,
}

/// What a pending wait waits for (`Io::wait_info`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct WaitInfo {
    /// Sources waited on for reading, and for writing.
    pub readers: usize,
    pub writers: usize,
    /// The deadline, monotonic ns.
    pub deadline: Option<u64>,
}

/// The event loop of a scheduler: its own, or one a host made and handed
/// over (`cothread.attach`), which the host keeps alive while the scheduler
/// lives and uses on the same thread.
pub enum LoopRef {
    Own(Box<Loop>),
    Host(*mut cothread::ffi::cot_loop),
}

impl std::ops::Deref for LoopRef {
    type Target = Loop;
    fn deref(&self) -> &Loop {
        match self {
            LoopRef::Own(l) => l,
            // SAFETY: the host's loop outlives the scheduler and is used on
            // this thread (the contract of `cothread.attach`); its API is
            // only called from the callbacks this loop runs.
            LoopRef::Host(p) => unsafe { cothread::ffi::cot_loop::loop_mut(*p) },
        }
    }
}

impl std::ops::DerefMut for LoopRef {
    fn deref_mut(&mut self) -> &mut Loop {
        match self {
            LoopRef::Own(l) => l,
            // SAFETY: as in `deref`.
            LoopRef::Host(p) => unsafe { cothread::ffi::cot_loop::loop_mut(*p) },
        }
    }
}

/// The I/O side of a scheduler.
///
/// Its maps are keyed by identifiers and raw task handles: unique integers
/// that need no protection against chosen collisions, so FxHash (one multiply
/// per key) instead of SipHash, several times dearer on every wait.
pub struct Io {
    lp: LoopRef,
    events: Rc<RefCell<Vec<Event>>>,
    socks: FxHashMap<u64, Sock>,
    waits: FxHashMap<u64, Wait>,
    by_task: FxHashMap<u64, u64>,
    /// Results of finished jobs, until `take_result`.
    results: FxHashMap<u64, JobResult>,
    /// Pending waits that can end by themselves (a socket or a deadline).
    armed: usize,
    /// The private signal key waiting cothreads are parked on.
    pub key: usize,
    /// Timers for deadlines, stopped, ready for reuse.
    spare_timers: Vec<Handle>,
    /// Bounds the loop's blocking wait in `poll(Until)`.
    idle_timer: Handle,
    /// Each task's last wake by this loop: the wall-clock second, and what
    /// the wait it ended had waited on (kept for `get_thread_metadata`;
    /// dropped by `forget`).
    wakes: FxHashMap<u64, Wake>,
    /// Emptied vectors kept for reuse (no allocation per event): the event
    /// queue's other half, and the waits a readiness ends.
    spare_events: Vec<Event>,
    woken: Vec<u64>,
}

impl Drop for Io {
    /// On a host's loop, which lives on, leaves it: every wait ends (its
    /// cleanup cancels what it started), every handle made here closes. An
    /// own loop goes with everything on it.
    fn drop(&mut self) {
        if let LoopRef::Own(_) = self.lp {
            return;
        }
        let ids: Vec<u64> = self.waits.keys().copied().collect();
        for id in ids {
            self.disarm(id);
        }
        let polls: Vec<Handle> = self.socks.drain().filter_map(|(_, s)| s.poll).collect();
        let timers = std::mem::take(&mut self.spare_timers);
        for h in polls.into_iter().chain(timers).chain([self.idle_timer]) {
            let _ = self.lp.close(h, None);
        }
    }
}

/// How long `poll` may block.
#[derive(Clone, Copy, Debug)]
pub enum Block {
    /// Not at all.
    No,
    /// Until this monotonic time (ns), or an event.
    Until(u64),
    /// Until an event.
    Forever,
}

impl Io {
    /// A new loop; `key` is the private signal waiting cothreads are parked on.
    pub fn new(key: usize) -> std::io::Result<Io> {
        Ok(Io::on(key, LoopRef::Own(Box::new(Loop::new()?))))
    }

    /// The I/O side on loop `lp`.
    pub fn on(key: usize, mut lp: LoopRef) -> Io {
        let idle_timer = lp.timer_init(0);
        Io {
            lp,
            events: Rc::new(RefCell::new(Vec::new())),
            socks: FxHashMap::default(),
            waits: FxHashMap::default(),
            by_task: FxHashMap::default(),
            results: FxHashMap::default(),
            armed: 0,
            key,
            spare_timers: Vec::new(),
            idle_timer,
            wakes: FxHashMap::default(),
            spare_events: Vec::new(),
            woken: Vec::new(),
        }
    }

    /// Waits that can end by themselves: they keep `run` going.
    pub fn armed(&self) -> usize {
        self.armed
    }

    /// Is the socket `id` attached here?
    pub fn attached(&self, id: u64) -> bool {
        self.socks.contains_key(&id)
    }

    /// Does anything wait on the socket `id`?
    pub fn busy(&self, id: u64) -> bool {
        self.socks.get(&id).is_some_and(|s| !s.readers.is_empty() || !s.writers.is_empty())
    }

    /// Attaches socket `id` (descriptor `fd`).
    pub fn attach(&mut self, id: u64, fd: RawFd) -> cothread::error::Result<()> {
        let poll = self.lp.poll_init(fd, id as usize)?;
        self.socks.insert(id, Sock { poll: Some(poll), readers: Vec::new(), writers: Vec::new(), watching: 0 });
        Ok(())
    }

    /// Attaches the virtual source `id` (a channel: no descriptor).
    pub fn attach_virtual(&mut self, id: u64) {
        self.socks.insert(id, Sock { poll: None, readers: Vec::new(), writers: Vec::new(), watching: 0 });
    }

    /// Ends the waits for reading on virtual source `id` with `Ready` (a value
    /// was sent, or the channel closed); returns their tasks, to make ready.
    pub fn fire(&mut self, id: u64) -> Vec<Task> {
        let Some(sock) = self.socks.get(&id) else { return Vec::new() };
        let waiters = sock.readers.clone();
        waiters.into_iter().filter_map(|w| self.finish(w, Outcome::Ready)).collect()
    }

    /// What the pending wait of `task` waits for; if it has none, what the
    /// last wait the loop ended for it had waited on (no deadline), as
    /// cosock keeps a thread's last wait until its next one.
    pub fn wait_info(&self, task: Task) -> Option<WaitInfo> {
        let pending = self.by_task.get(&task.to_raw()).and_then(|id| self.waits.get(id));
        match pending {
            Some(w) if w.outcome.is_none() => {
                let readers = w.socks.iter().filter(|s| s.1 == READ).count();
                Some(WaitInfo { readers, writers: w.socks.len() - readers, deadline: w.deadline })
            }
            _ => {
                let k = self.wakes.get(&task.to_raw())?;
                Some(WaitInfo { readers: k.readers, writers: k.writers, deadline: None })
            }
        }
    }

    /// Wall-clock seconds of the last wake of `task` by this loop.
    pub fn last_wake(&self, task: Task) -> Option<i64> {
        self.wakes.get(&task.to_raw()).map(|k| k.time)
    }

    /// Forgets what is kept about `task` (it ended or was unregistered).
    pub fn forget(&mut self, task: Task) {
        if !self.wakes.is_empty() {
            self.wakes.remove(&task.to_raw());
        }
    }

    /// Records a wait of `task` on `socks` (id, `READ`/`WRITE`) until
    /// `deadline` (monotonic ns). The sockets must be attached. On an error
    /// (the descriptor cannot be polled) nothing is recorded.
    pub fn begin(&mut self, task: Task, socks: Vec<(u64, u32)>, deadline: Option<u64>) -> cothread::error::Result<u64> {
        let id = new_id();
        for (i, &(s, dir)) in socks.iter().enumerate() {
            if let Err(e) = self.watch(s, dir) {
                for &(s, _) in &socks[..i] {
                    self.unlist(s, id);
                }
                return Err(e);
            }
            let sock = self.socks.get_mut(&s).expect("attached");
            if dir == READ { sock.readers.push(id) } else { sock.writers.push(id) }
        }
        let timer = deadline.map(|d| self.start_timer(id, d));
        let real = socks.iter().any(|(s, _)| self.socks.get(s).is_some_and(|s| s.poll.is_some()));
        let armed = timer.is_some() || real;
        if armed {
            self.armed += 1;
        }
        self.waits.insert(id, Wait { task, socks, timer, armed, deadline, on_end: None, outcome: None });
        self.by_task.insert(task.to_raw(), id);
        Ok(id)
    }

    /// Records a wait of `task` that ends when a loop callback calls
    /// `notifier().done(id)`, or at `deadline` (monotonic ns). It keeps `run`
    /// going. Handles made for it (with `lp()`) are closed by an `on_end`.
    pub fn begin_external(&mut self, task: Task, deadline: Option<u64>) -> u64 {
        let id = new_id();
        let timer = deadline.map(|d| self.start_timer(id, d));
        self.armed += 1;
        self.waits
            .insert(id, Wait { task, socks: Vec::new(), timer, armed: true, deadline, on_end: None, outcome: None });
        self.by_task.insert(task.to_raw(), id);
        id
    }

    /// Sets the cleanup of pending external wait `id`: it runs on the loop
    /// once the wait ends, is cancelled or its cothread resumes.
    pub fn on_end(&mut self, id: u64, f: OnEnd) {
        match self.waits.get_mut(&id) {
            Some(w) if w.outcome.is_none() => w.on_end = Some(f),
            _ => f(&mut self.lp),
        }
    }

    /// Runs `job` on the loop's thread pool for `task`: an external wait that
    /// ends when the job completed (`take_result` then gives what it returned)
    /// or the pool refused it (no result).
    pub fn begin_job(&mut self, task: Task, job: impl FnOnce() -> JobResult + Send + 'static) -> u64 {
        let id = self.begin_external(task, None);
        let slot: Arc<Mutex<JobSlot>> = Arc::default();
        let (out, left) = (slot.clone(), slot.clone());
        let q = self.events.clone();
        let work = Box::new(move || {
            let r = job();
            let mut s = out.lock().unwrap_or_else(|e| e.into_inner());
            if !s.left {
                s.result = Some(r);
            } // else `r` is dropped here, in the pool thread, at once
        });
        let after = Box::new(move |_: &mut Loop, _, _| {
            let r = slot.lock().unwrap_or_else(|e| e.into_inner()).result.take();
            q.borrow_mut().push(Event::Done(id, r));
        });
        let req = self.lp.work_submit(work, after);
        // A cothread that leaves the wait cancels the job if it has not
        // started, drops the result now, or makes the job drop it when it
        // ends (the loop may not run again soon).
        self.on_end(
            id,
            Box::new(move |lp| {
                let _ = lp.request_cancel(req); // done or running: nothing to cancel

                let mut s = left.lock().unwrap_or_else(|e| e.into_inner());
                s.left = true;
                let r = s.result.take();
                drop(s);
                drop(r);
            }),
        );
        id
    }

    /// Takes the result of the job of wait `id` (after `end` said `Ready`).
    pub fn take_result(&mut self, id: u64) -> Option<JobResult> {
        self.results.remove(&id)
    }

    /// Ends external waits from the loop's callbacks.
    pub fn notifier(&self) -> Notifier {
        Notifier(self.events.clone())
    }

    /// The event loop, to make handles for an external wait.
    pub fn lp(&mut self) -> &mut Loop {
        &mut self.lp
    }

    /// Where the dispatch of `cothread.io` puts `task`: in the private queue
    /// while its wait is pending, in the ready queue if it already ended.
    /// `None` if the task has no wait (a bogus yield).
    pub fn placement(&self, task: Task) -> Option<When> {
        let w = self.waits.get(self.by_task.get(&task.to_raw())?)?;
        Some(if w.outcome.is_some() { When::Later } else { When::Wait(self.key) })
    }

    /// Ends wait `id` as its cothread resumes: its outcome. `Cancelled` if
    /// the record was dropped (the cothread left the wait), or if it is still
    /// pending (the coroutine was resumed by something else than this loop:
    /// its deadline would have ended it with `Timeout`).
    pub fn end(&mut self, id: u64) -> Outcome {
        let Some(outcome) = self.waits.get(&id).map(|w| w.outcome) else { return Outcome::Cancelled };
        if outcome.is_none() {
            self.disarm(id);
        }
        let w = self.waits.remove(&id).expect("present");
        if self.by_task.get(&w.task.to_raw()) == Some(&id) {
            self.by_task.remove(&w.task.to_raw());
        }
        outcome.unwrap_or(Outcome::Cancelled)
    }

    /// The cothread of `task` left its wait (unscheduled, forgotten): drops
    /// the wait and its registrations. Nothing resumes it later.
    pub fn cancel(&mut self, task: Task) {
        let Some(id) = self.by_task.remove(&task.to_raw()) else { return };
        if self.waits.get(&id).is_some_and(|w| w.outcome.is_none()) {
            self.disarm(id);
        }
        self.waits.remove(&id);
        self.results.remove(&id);
    }

    /// Has any task a wait recorded?
    pub fn has_wait(&self) -> bool {
        !self.by_task.is_empty()
    }

    /// Detaches socket `id` before its descriptor closes: its waiters end
    /// with `Closed` (their tasks are returned, to make ready), its poll
    /// handle is closed.
    pub fn detach(&mut self, id: u64) -> Vec<Task> {
        let Some(sock) = self.socks.get(&id) else { return Vec::new() };
        let waiters: Vec<u64> = sock.readers.iter().chain(sock.writers.iter()).copied().collect();
        let mut tasks = Vec::new();
        for w in waiters {
            if let Some(t) = self.finish(w, Outcome::Closed) {
                tasks.push(t);
            }
        }
        if let Some(poll) = self.socks.remove(&id).and_then(|s| s.poll) {
            let _ = self.lp.close(poll, None);
        }
        tasks
    }

    /// Runs the loop once, blocking as `block` says, and ends the waits whose
    /// events came. Returns the tasks to make ready, in event order.
    pub fn poll(&mut self, block: Block) -> Vec<Task> {
        let mode = match block {
            Block::No => RunMode::NoWait,
            Block::Forever => RunMode::Once,
            Block::Until(t) => {
                self.lp.update_time();
                let now = self.lp.now().max(cothread::time::monotonic_ns());
                if t <= now {
                    RunMode::NoWait
                } else {
                    let cb = || -> cothread::reactor::Callback { Box::new(|_, _| {}) };
                    let ns = t - self.lp.now();
                    let _ = self.lp.timer_start_with(self.idle_timer, ns, 0, 1, cb);
                    RunMode::Once
                }
            }
        };
        let _ = self.lp.run(mode);
        let _ = self.lp.timer_stop(self.idle_timer);
        let spare = std::mem::take(&mut self.spare_events);
        let mut events = std::mem::replace(&mut *self.events.borrow_mut(), spare);
        let mut ready = Vec::new();
        for e in events.drain(..) {
            match e {
                Event::Timer(id) => {
                    if let Some(t) = self.finish(id, Outcome::Timeout) {
                        ready.push(t);
                    }
                }
                Event::Poll(s, bits) => self.ready(s, bits, &mut ready),
                Event::Done(id, r) => {
                    if let Some(t) = self.finish(id, Outcome::Ready) {
                        if let Some(r) = r {
                            self.results.insert(id, r);
                        }
                        ready.push(t);
                    }
                }
            }
        }
        self.spare_events = events;
        ready
    }

    /// Readiness `bits` of socket `s`: ends its waits in those directions. A
    /// direction that fired with nobody waiting is no longer watched (a
    /// direction whose waiters just left stays watched: they usually wait
    /// again soon, and then no system call is needed).
    fn ready(&mut self, s: u64, bits: u32, out: &mut Vec<Task>) {
        let Some(sock) = self.socks.get(&s) else { return };
        let mut woken = std::mem::take(&mut self.woken);
        woken.clear();
        let mut stale = 0;
        if bits & (READABLE | DISCONNECT) != 0 {
            if sock.readers.is_empty() {
                stale |= READ;
            }
            woken.extend_from_slice(&sock.readers);
        }
        if bits & WRITABLE != 0 {
            if sock.writers.is_empty() {
                stale |= WRITE;
            }
            woken.extend_from_slice(&sock.writers);
        }
        for &w in &woken {
            if let Some(t) = self.finish(w, Outcome::Ready) {
                out.push(t);
            }
        }
        self.woken = woken;
        let Some(sock) = self.socks.get_mut(&s) else { return };
        if let (true, Some(poll)) = (stale & sock.watching != 0, sock.poll) {
            let wanted = sock.watching & !stale;
            sock.watching = 0;
            if wanted == 0 {
                let _ = self.lp.poll_stop(poll);
            } else {
                let _ = self.start_poll(s, wanted);
            }
        }
    }

    /// Ends pending wait `id` with `outcome`; returns its task.
    fn finish(&mut self, id: u64, outcome: Outcome) -> Option<Task> {
        if self.waits.get(&id)?.outcome.is_some() {
            return None;
        }
        let w = self.waits.get(&id)?;
        let readers = w.socks.iter().filter(|s| s.1 == READ).count();
        let writers = w.socks.len() - readers;
        self.disarm(id);
        let w = self.waits.get_mut(&id)?;
        w.outcome = Some(outcome);
        let task = w.task;
        // SAFETY: `time` with a null argument only returns the time.
        let time = unsafe { libc::time(std::ptr::null_mut()) };
        self.wakes.insert(task.to_raw(), Wake { time, readers, writers });
        Some(task)
    }

    /// Takes pending wait `id` off its sockets and timer.
    fn disarm(&mut self, id: u64) {
        let Some(w) = self.waits.get_mut(&id) else { return };
        let socks = std::mem::take(&mut w.socks);
        let timer = w.timer.take();
        let on_end = w.on_end.take();
        if std::mem::take(&mut w.armed) {
            self.armed -= 1;
        }
        if let Some(f) = on_end {
            f(&mut self.lp);
        }
        for (s, _) in socks {
            self.unlist(s, id);
        }
        if let Some(t) = timer {
            let _ = self.lp.timer_stop(t);
            self.spare_timers.push(t);
        }
    }

    fn unlist(&mut self, s: u64, id: u64) {
        if let Some(sock) = self.socks.get_mut(&s) {
            sock.readers.retain(|&w| w != id);
            sock.writers.retain(|&w| w != id);
        }
    }

    /// Makes socket `s`'s poll handle watch `dir` too.
    fn watch(&mut self, s: u64, dir: u32) -> cothread::error::Result<()> {
        let sock = self.socks.get(&s).ok_or(cothread::Error::Inval)?;
        if sock.watching & dir == dir || sock.poll.is_none() {
            return Ok(());
        }
        let events = sock.watching | dir;
        self.start_poll(s, events)
    }

    fn start_poll(&mut self, s: u64, events: u32) -> cothread::error::Result<()> {
        let sock = self.socks.get_mut(&s).ok_or(cothread::Error::Inval)?;
        let poll = sock.poll.ok_or(cothread::Error::Inval)?;
        let q = self.events.clone();
        let cb = Box::new(move |_: &mut Loop, _, bits| q.borrow_mut().push(Event::Poll(s, bits)));
        self.lp.poll_start(poll, events, cb)?;
        if let Some(sock) = self.socks.get_mut(&s) {
            sock.watching = events;
        }
        Ok(())
    }

    /// A timer firing at `deadline` (monotonic ns) for wait `id`.
    fn start_timer(&mut self, id: u64, deadline: u64) -> Handle {
        let t = match self.spare_timers.pop() {
            Some(t) => t,
            None => self.lp.timer_init(0),
        };
        let _ = self.lp.set_data(t, id as usize);
        self.lp.update_time();
        let after = deadline.saturating_sub(self.lp.now());
        let q = self.events.clone();
        let make = move || -> cothread::reactor::Callback {
            Box::new(move |lp: &mut Loop, h| {
                if let Ok(id) = lp.data(h) {
                    q.borrow_mut().push(Event::Timer(id as u64));
                }
            })
        };
        // Tag 2: a reused timer keeps its callback (it reads the wait from the data).
        let _ = self.lp.timer_start_with(t, after, 0, 2, make);
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connected pair of non-blocking stream sockets.
    fn socketpair() -> (RawFd, RawFd) {
        let mut fds = [0; 2];
        // SAFETY: `fds` is valid for two ints.
        let r =
            unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_NONBLOCK, 0, fds.as_mut_ptr()) };
        assert_eq!(r, 0);
        (fds[0], fds[1])
    }

    fn write(fd: RawFd) {
        // SAFETY: writes one byte from a valid buffer.
        assert_eq!(unsafe { libc::write(fd, b"x".as_ptr().cast(), 1) }, 1);
    }

    fn close(a: RawFd, b: RawFd) {
        // SAFETY: the test owns both descriptors.
        unsafe {
            libc::close(a);
            libc::close(b);
        }
    }

    #[test]
    fn readiness_ends_a_wait_once() {
        let mut sched = cothread::Sched::new();
        let task = sched.task_new(0);
        let mut io = Io::new(1).unwrap();
        let (a, b) = socketpair();
        io.attach(7, a).unwrap();
        let id = io.begin(task, vec![(7, READ)], None).unwrap();
        assert_eq!(io.armed(), 1);
        assert_eq!(io.placement(task), Some(When::Wait(1)));
        assert!(io.poll(Block::No).is_empty());
        write(b);
        assert_eq!(io.poll(Block::Forever), vec![task]);
        assert_eq!(io.armed(), 0);
        assert!(io.poll(Block::No).is_empty(), "a level-triggered event resumes once");
        assert_eq!(io.end(id), Outcome::Ready);
        assert_eq!(io.end(id), Outcome::Cancelled, "the record is gone");
        close(a, b);
    }

    #[test]
    fn a_cancelled_wait_is_never_resumed() {
        let mut sched = cothread::Sched::new();
        let task = sched.task_new(0);
        let mut io = Io::new(1).unwrap();
        let (a, b) = socketpair();
        io.attach(7, a).unwrap();
        let id = io.begin(task, vec![(7, READ)], Some(cothread::time::monotonic_ns() + 1_000_000)).unwrap();
        io.cancel(task);
        assert_eq!(io.armed(), 0);
        assert!(!io.has_wait());
        write(b);
        std::thread::sleep(std::time::Duration::from_millis(5));
        assert!(io.poll(Block::No).is_empty(), "neither the readiness nor the timer resumes it");
        assert_eq!(io.end(id), Outcome::Cancelled);
        close(a, b);
    }

    #[test]
    fn a_deadline_ends_a_wait_with_timeout() {
        let mut sched = cothread::Sched::new();
        let task = sched.task_new(0);
        let mut io = Io::new(1).unwrap();
        let (a, b) = socketpair();
        io.attach(7, a).unwrap();
        let t0 = cothread::time::monotonic_ns();
        let id = io.begin(task, vec![(7, READ)], Some(t0 + 20_000_000)).unwrap();
        assert_eq!(io.poll(Block::Forever), vec![task]);
        assert!(cothread::time::monotonic_ns() - t0 >= 20_000_000);
        assert_eq!(io.end(id), Outcome::Timeout);
        write(b);
        assert!(io.poll(Block::No).is_empty(), "the late readiness finds no waiter");
        close(a, b);
    }

    #[test]
    fn detaching_a_socket_ends_its_waits_with_closed() {
        let mut sched = cothread::Sched::new();
        let (reader, writer) = (sched.task_new(0), sched.task_new(0));
        let mut io = Io::new(1).unwrap();
        let (a, b) = socketpair();
        io.attach(7, a).unwrap();
        let r = io.begin(reader, vec![(7, READ)], None).unwrap();
        let w = io.begin(writer, vec![(7, READ), (7, WRITE)], None).unwrap();
        assert_eq!(io.detach(7), vec![reader, writer]);
        assert!(!io.attached(7));
        assert_eq!(io.armed(), 0);
        assert_eq!(io.end(r), Outcome::Closed);
        assert_eq!(io.end(w), Outcome::Closed);
        close(a, b);
    }

    /// Polls until a task is ready (bounded).
    fn poll_some(io: &mut Io) -> Vec<Task> {
        for _ in 0..200 {
            let v = io.poll(Block::Until(cothread::time::monotonic_ns() + 10_000_000));
            if !v.is_empty() {
                return v;
            }
        }
        Vec::new()
    }

    #[test]
    fn a_job_ends_its_wait_with_its_result() {
        let mut sched = cothread::Sched::new();
        let task = sched.task_new(0);
        let mut io = Io::new(1).unwrap();
        let id = io.begin_job(task, || Box::new(42u32));
        assert_eq!(io.armed(), 1);
        assert_eq!(poll_some(&mut io), vec![task]);
        assert_eq!(io.armed(), 0);
        assert_eq!(io.end(id), Outcome::Ready);
        assert_eq!(io.take_result(id).and_then(|r| r.downcast::<u32>().ok()).map(|b| *b), Some(42));
    }

    #[test]
    fn a_cancelled_job_drops_its_result_and_resumes_nobody() {
        let mut sched = cothread::Sched::new();
        let task = sched.task_new(0);
        let mut io = Io::new(1).unwrap();
        let owned = Arc::new(());
        let mine = owned.clone();
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let id = io.begin_job(task, move || {
            let _ = rx.recv();
            Box::new(mine)
        });
        io.cancel(task); // cancels the job if it has not started (then `rx` goes with it)
        assert_eq!(io.armed(), 0);
        let _ = tx.send(());
        for _ in 0..100 {
            assert!(io.poll(Block::Until(cothread::time::monotonic_ns() + 5_000_000)).is_empty());
            if Arc::strong_count(&owned) == 1 {
                break;
            }
        }
        assert_eq!(Arc::strong_count(&owned), 1, "the late result was dropped");
        assert_eq!(io.end(id), Outcome::Cancelled);
        assert!(io.take_result(id).is_none());
    }

    #[test]
    fn an_external_wait_runs_its_cleanup_however_it_ends() {
        let mut sched = cothread::Sched::new();
        let (a, b) = (sched.task_new(0), sched.task_new(0));
        let mut io = Io::new(1).unwrap();
        let ran = Rc::new(Cell::new(0));
        let id = io.begin_external(a, None);
        let r = ran.clone();
        io.on_end(id, Box::new(move |_| r.set(r.get() + 1)));
        io.notifier().done(id);
        assert_eq!(io.poll(Block::No), vec![a]);
        assert_eq!(ran.get(), 1);
        assert_eq!(io.end(id), Outcome::Ready);
        let id = io.begin_external(b, Some(cothread::time::monotonic_ns() + 1_000_000_000));
        let r = ran.clone();
        io.on_end(id, Box::new(move |_| r.set(r.get() + 1)));
        io.cancel(b);
        assert_eq!(ran.get(), 2);
        io.notifier().done(id);
        assert!(io.poll(Block::No).is_empty(), "a late event resumes nobody");
        assert_eq!(io.armed(), 0);
    }

    #[test]
    fn a_virtual_source_is_fired_and_forgets_cancelled_waits() {
        let mut sched = cothread::Sched::new();
        let (a, b) = (sched.task_new(0), sched.task_new(0));
        let mut io = Io::new(1).unwrap();
        io.attach_virtual(9);
        let wa = io.begin(a, vec![(9, READ)], None).unwrap();
        assert_eq!(io.armed(), 0, "only a send can end it: it does not keep run going");
        assert_eq!(io.wait_info(a), Some(WaitInfo { readers: 1, writers: 0, deadline: None }));
        let wb = io.begin(b, vec![(9, READ)], Some(u64::MAX)).unwrap();
        assert_eq!(io.armed(), 1, "a deadline, even one that never comes, keeps run going");
        io.cancel(b);
        assert_eq!(io.armed(), 0);
        assert_eq!(io.fire(9), vec![a], "the cancelled wait is not resumed");
        assert!(io.fire(9).is_empty(), "a wait ends once");
        assert_eq!(
            io.wait_info(a),
            Some(WaitInfo { readers: 1, writers: 0, deadline: None }),
            "after the wake: what the ended wait waited on, as cosock keeps it"
        );
        assert!(io.last_wake(a).is_some());
        assert_eq!(io.end(wa), Outcome::Ready);
        assert_eq!(io.end(wb), Outcome::Cancelled);
        io.forget(a);
        assert!(io.last_wake(a).is_none());
        assert!(io.wait_info(a).is_none());
        assert!(io.detach(9).is_empty());
        assert!(!io.attached(9));
    }

    #[test]
    fn poll_until_sleeps_without_events() {
        let mut io = Io::new(1).unwrap();
        let t0 = cothread::time::monotonic_ns();
        assert!(io.poll(Block::Until(t0 + 15_000_000)).is_empty());
        assert!(cothread::time::monotonic_ns() - t0 >= 15_000_000);
    }

    #[test]
    fn on_a_host_loop_the_host_handles_run_and_a_dropped_io_leaves_nothing_behind() {
        use cothread::ffi::*;
        use std::sync::atomic::{AtomicUsize, Ordering};
        static FIRED: AtomicUsize = AtomicUsize::new(0);
        unsafe extern "C" fn fired(_: *mut cot_loop, _: cot_handle, _: *mut std::ffi::c_void) {
            FIRED.fetch_add(1, Ordering::SeqCst);
        }
        let host = cot_loop_new();
        assert!(!host.is_null());
        let mut timer: cot_handle = 0;
        // SAFETY: a live loop, used on this thread only; `timer` is writable.
        unsafe {
            assert_eq!(cot_timer_init(host, std::ptr::null_mut(), &mut timer), 0);
            assert_eq!(cot_timer_start(host, timer, Some(fired), 1, 0), 0);
        }
        let mut sched = cothread::Sched::new();
        let task = sched.task_new(0);
        let mut io = Io::on(1, LoopRef::Host(host));
        let (a, b) = socketpair();
        io.attach(7, a).unwrap();
        let deadline = cothread::time::monotonic_ns() + 5_000_000_000;
        io.begin(task, vec![(7, READ)], Some(deadline)).unwrap();
        // The scheduler's poll runs the host's loop: the host's timer fires there.
        while FIRED.load(Ordering::SeqCst) == 0 {
            assert!(io.poll(Block::Until(cothread::time::monotonic_ns() + 10_000_000)).is_empty());
        }
        drop(io); // pending wait, poll handle, timers: all left on the host's loop
        // SAFETY: the loop is live and no reference into it is held.
        unsafe {
            assert_eq!(cot_close(host, timer, None), 0);
            assert_eq!(cot_loop_run(host, COT_RUN_DEFAULT), 0, "nothing of the scheduler keeps it alive");
            assert_eq!(cot_loop_close(host), 0, "every handle closed");
        }
        close(a, b);
    }
}
