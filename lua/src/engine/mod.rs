//! The waiting engine: every blocking call of the module (sockets, UDP,
//! `select`, `sleep`, channels, pool jobs, pipes, processes, OS signals,
//! futures, loop signals) is an *operation* that the event loop drives to its
//! end; the cothread is then resumed once, with the call's results already on
//! its stack. No C continuation is involved: a parked C function yields with
//! a plain `lua_yield(l, 0)` and, when resumed, returns the values it is
//! resumed with, which are the operation's results.
//!
//! # One operation, from the call to its results
//! A C function builds the operation (a plain struct implementing
//! [`Operation`]) over its frame (its stack slots) and steps it
//! (`park::drive`). If the step cannot finish and the caller is a cothread,
//! [`park`] records it here (attaches its sources, starts its timer, job or
//! outside event), pushes a *sentinel* (a light userdata: the operation's
//! id) on top of the frame, and the function yields; the resume loop puts
//! the task in the private queue `key`, which no `notify` reaches.
//!
//! The loop's callbacks only queue [`Event`]s. `poll` runs the loop and
//! turns them into *due* operations (`mark`): the event's `Why` is kept in
//! the record and the task goes to the ready tail with `OPERATION_BIT` set in
//! its user value. When the resume loop takes it, it calls [`finish`]: the
//! step runs there, on the stack of the thread in `run` or `step` (the
//! *runner*: the frame moves there from the cothread, so a step that raises,
//! a memory error, never touches the suspended cothread). `Done(n)` moves the
//! `n` results onto the cothread's stack in place of the frame and the
//! cothread is resumed with them; a step that must wait again (a spurious
//! readiness, a read that needs more) moves the frame back and the task goes
//! back to the private queue without being resumed.
//!
//! # The states of an operation
//! | state    | where                                        | its task                              |
//! |----------|----------------------------------------------|---------------------------------------|
//! | Waiting  | in `ops`, listed on its sources, its timer   | in the private queue `key`            |
//! | Due      | Waiting, with `why` and `queued`             | in the ready queue, `OPERATION_BIT`   |
//! | Stepping | `stepping`; its frame on the runner          | at the ready head, being resumed      |
//! | (ended)  | gone from `ops`                              | resumed with its results              |
//!
//! A Waiting operation whose step answered `Next::Sleep` (an accept out of
//! descriptors) is `asleep`: listed on none of its sources, it waits for its
//! timer only; its next `Wait` lists it on them again (`follow_sources`).
//!
//! Who moves it:
//! - `park` (the C function): Waiting.
//! - `mark`, from `poll` (readiness of a source, its deadline, its job or
//!   outside event done), `detach` (a source closed or collected: `Closed`)
//!   or `fire` (a channel got a value or closed): Due. More events before
//!   the step merge (`Why::merge`): a cancel wins, a deadline loses to what
//!   became ready in the same turn.
//! - `finish` (the resume loop): Stepping, then ended (`deliver`), or
//!   Waiting again.
//! - `cancel` (its cothread unregistered: `unschedule`, a plugin's yield)
//!   and `abandon` (its scheduler collected): it leaves at once, its
//!   operation moved into a ticket on the cothread's stack (`ticket`).
//! - Events that come while it is Stepping (a finalizer run by the step's
//!   allocations closes its socket, or unschedules its cothread) are kept in
//!   `deferred` and stepped right after.
//!
//! How it ends exactly once: the record leaves `ops` in `deliver`,
//! `drop_op` or `ticket::make` and nowhere else, none of them while it is
//! Stepping. Every event names the operation by its id (never reused); a
//! late event finds no record and resumes nobody.
//!
//! If the cothread left its yield some other way (resumed by
//! `coroutine.resume`, closed), the sentinel is gone (`parked_here`): the
//! operation is dropped without results and the cothread resumed with none.
//!
//! # Why not the core's `op` machines
//! `cothread::op` keeps a task's request or handle alive until its libuv
//! callback gives the memory back, and lets one task at a time await an
//! object. Here no backend holds memory of ours: the reactor's handles are
//! generation-checked ids and a late callback finds no operation, so a
//! cancel ends an operation at once, with nothing to wait for. And one
//! operation waits on many things at once (a `select` on many sources, a
//! read and its deadline) while many operations wait on one source (a
//! reader and a writer; several `select`s), which neither `Slot` (one
//! request or handle per task) nor `Object` (one waiter) models.

mod block;
mod lp;
mod op;
mod source;
mod step;
#[cfg(test)]
mod tests;
mod ticket;

use std::cell::{Cell, RefCell};
use std::ffi::{CStr, c_int, c_void};
use std::os::fd::RawFd;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use cothread::reactor::{Handle, Loop};
use cothread::{Sched, Task};
use rustc_hash::FxHashMap;

use crate::raw::{L, ffi};

pub use block::block as block_default;
pub use lp::{Block, LoopRef};
pub use op::{Frame, Job, Next, Operation, Payload, STEP_SLOTS, Why, deadline_in, ns_of, payload_as};
use source::SourceRec;
pub use source::{READ, SELECTABLE, Selectable, Source, SourceKind, WRITE, selectable_at};
pub use step::{Finish, abandon, cancel, detach, finish, fire, is_delivered, park, poll};
pub use ticket::settle;

thread_local! {
    /// Source of operation and source identifiers (never reused, never 0).
    static NEXT_ID: Cell<u64> = const { Cell::new(1) };
}

fn new_id() -> u64 {
    NEXT_ID.with(|c| {
        let id = c.get();
        c.set(id + 1);
        id
    })
}

/// Bit 0 of a task's user value (a thread pointer, aligned): before its
/// cothread resumes, the engine has something to do (`finish`): step its due
/// operation, or take the results a ticket left under the `DELIVERED`
/// marker.
pub const OPERATION_BIT: usize = 1;

/// The marker on top of the results a ticket left (`ticket::settle`): the
/// address of this static, as a light userdata.
static DELIVERED: u8 = 0;

fn delivered_marker() -> *mut c_void {
    (&raw const DELIVERED).cast_mut().cast()
}

/// What the loop's callbacks report (they never call Lua).
pub(crate) enum Event {
    Poll(u64, u32),
    Timer(u64),
    /// An operation's job or outside event is done, maybe with a payload.
    Done(u64, Option<Payload>),
}

/// Ends an operation's wait for an outside event, from a loop callback.
#[derive(Clone)]
pub struct Fire {
    events: Rc<RefCell<Vec<Event>>>,
    id: u64,
}

impl Fire {
    /// The event came (the operation steps at the next `poll`).
    pub fn fire(&self) {
        self.events.borrow_mut().push(Event::Done(self.id, None));
    }

    /// The event came with `p`.
    pub fn fire_with(&self, p: Payload) {
        self.events.borrow_mut().push(Event::Done(self.id, Some(p)));
    }
}

/// A loop cleanup run when an operation ends, however it ends.
pub type OnEnd = Box<dyn FnOnce(&mut Loop)>;

/// An operation while its cothread is parked.
struct Record {
    /// The operation (from `Box::into_raw`; freed with the record).
    op: *mut dyn Operation,
    task: Task,
    /// The parked cothread, and its frame's height (without the sentinel).
    co: L,
    height: c_int,
    /// Sources waited on, with their directions.
    sources: Vec<(u64, u32)>,
    /// It sleeps (`Next::Sleep`): listed on none of its operation's sources.
    asleep: bool,
    deadline: Option<u64>,
    timer: Option<Handle>,
    /// Counted in `Engine::armed`: it can end by itself.
    armed: bool,
    /// Its job or outside event is pending.
    outside: bool,
    /// Its id is in `due` (at most once).
    queued: bool,
    /// What it steps with next (Due).
    why: Option<Why>,
    stepping: bool,
    deferred: Option<Why>,
    /// Its cothread was unregistered: the results are delivered, the task is
    /// not made ready.
    cancelled: bool,
    payload: Option<Payload>,
    on_end: Option<OnEnd>,
}

/// A cothread's last wake by the engine, for cosock's thread metadata.
#[derive(Clone, Copy)]
struct Wake {
    /// Wall-clock seconds.
    time: i64,
    readers: usize,
    writers: usize,
}

/// What a parked cothread waits for (`wait_info`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct WaitInfo {
    /// Sources waited on for reading, and for writing.
    pub readers: usize,
    pub writers: usize,
    /// The deadline, monotonic ns.
    pub deadline: Option<u64>,
}

/// The waiting engine of one scheduler.
///
/// Maps are keyed by identifiers and raw task handles, integers the program
/// makes: FxHash, not SipHash (no chosen keys to defend against).
pub struct Engine {
    lp: LoopRef,
    /// The scheduler's core, which outlives the engine (both belong to one
    /// scheduler state, the engine dropped first).
    sched: *mut Sched,
    /// The private signal key parked cothreads wait on.
    key: usize,
    events: Rc<RefCell<Vec<Event>>>,
    spare_events: Vec<Event>,
    sources: FxHashMap<u64, SourceRec>,
    /// Records, from `Box::into_raw` (a step keeps a pointer to its record
    /// while re-entered code may change the map).
    ops: FxHashMap<u64, *mut Record>,
    /// Tasks made ready since `poll` began.
    readied: usize,
    armed: usize,
    spare_timers: Vec<Handle>,
    /// Bounds the loop's blocking wait in `poll(Until)`.
    idle_timer: Handle,
    wakes: FxHashMap<u64, Wake>,
    /// Wall-clock second of the current poll, for `wakes`.
    wall: i64,
    /// Emptied vector kept for reuse (the operations a readiness wakes).
    woken: Vec<u64>,
    /// Operations stepping now, innermost last (steps nest when a step's
    /// finalizers close a source or send on a channel).
    stepping: Vec<u64>,
    /// Operations left to move into tickets (`ticket::abandon_all`).
    abandoning: Vec<u64>,
    /// Records kept for reuse, and the sources of the operation parking.
    spare_records: Vec<*mut Record>,
    sources_scratch: Vec<(*mut Source, RawFd, u32)>,
}

/// Records kept for reuse at most (one per cothread parked at once is
/// plenty: they are a few hundred bytes).
const SPARE_RECORDS: usize = 1024;

impl Engine {
    /// An engine on loop `lp` for the scheduler core `sched`, whose parked
    /// cothreads wait on the private key `key`.
    pub fn new(sched: *mut Sched, key: usize, mut lp: LoopRef) -> Engine {
        let idle_timer = lp.timer_init(0);
        Engine {
            lp,
            sched,
            key,
            events: Rc::new(RefCell::new(Vec::new())),
            spare_events: Vec::new(),
            sources: FxHashMap::default(),
            ops: FxHashMap::default(),
            readied: 0,
            armed: 0,
            spare_timers: Vec::new(),
            idle_timer,
            wakes: FxHashMap::default(),
            wall: 0,
            woken: Vec::new(),
            stepping: Vec::new(),
            abandoning: Vec::new(),
            spare_records: Vec::new(),
            sources_scratch: Vec::new(),
        }
    }

    /// An engine on a loop of its own.
    pub fn with_own_loop(sched: *mut Sched, key: usize) -> std::io::Result<Engine> {
        Ok(Engine::new(sched, key, LoopRef::Own(Box::new(Loop::new()?))))
    }

    /// The private key parked cothreads wait on.
    #[inline]
    pub fn key(&self) -> usize {
        self.key
    }

    /// Operations that can end by themselves: they keep `run` going.
    #[inline]
    pub fn armed(&self) -> usize {
        self.armed
    }

    /// A record (from `Box::into_raw`, or a recycled one: parking allocates
    /// nothing once the engine warmed up) for `op` of `task`, parked in `co`
    /// over a frame of `height` slots.
    fn new_record(&mut self, op: Box<dyn Operation>, task: Task, co: L, height: c_int) -> *mut Record {
        let op = Box::into_raw(op);
        if let Some(r) = self.spare_records.pop() {
            // SAFETY: a recycled record is ours alone, emptied by `recycle`
            // (its `op` freed, its vector kept for its capacity).
            unsafe {
                (*r).op = op;
                (*r).task = task;
                (*r).co = co;
                (*r).height = height;
            }
            return r;
        }
        Box::into_raw(Box::new(Record {
            op,
            task,
            co,
            height,
            sources: Vec::new(),
            asleep: false,
            deadline: None,
            timer: None,
            armed: false,
            outside: false,
            queued: false,
            why: None,
            stepping: false,
            deferred: None,
            cancelled: false,
            payload: None,
            on_end: None,
        }))
    }

    /// Frees the operation of record `r` (taken out of `ops` and disarmed)
    /// and keeps the record for reuse.
    unsafe fn recycle(&mut self, r: *mut Record) {
        // SAFETY: the caller took `r` out of `ops`: nothing else refers to
        // it; `op` comes from `Box::into_raw` (or is null after `take_op`).
        unsafe {
            if !(*r).op.is_null() {
                drop(Box::from_raw((*r).op));
            }
            (*r).op = std::ptr::null_mut::<op::Spent>();
            (*r).sources.clear();
            (*r).asleep = false;
            (*r).queued = false;
            (*r).why = None;
            (*r).stepping = false;
            (*r).deferred = None;
            (*r).cancelled = false;
            (*r).payload = None;
            if self.spare_records.len() < SPARE_RECORDS {
                self.spare_records.push(r);
            } else {
                drop(Box::from_raw(r));
            }
        }
    }

    /// Attaches the sources of record `r` (id `id`) and lists it on them:
    /// whether one has a descriptor. On a failure the record is on none.
    unsafe fn enlist(
        &mut self,
        r: *mut Record,
        id: u64,
        sources: &[(*mut Source, RawFd, u32)],
    ) -> Result<bool, &'static CStr> {
        // SAFETY: `r` is live and the sources' objects too (caller's
        // contract); Rust only.
        unsafe {
            let mut real = false;
            for &(src, fd, dir) in sources {
                let listed = self
                    .attach(src, fd)
                    .and_then(|s| self.listen(s, dir, id).map(|x| (s, x)).map_err(|e| e.c_message()));
                match listed {
                    Ok((s, x)) => {
                        real |= x;
                        (*r).sources.push((s, dir));
                    }
                    Err(m) => {
                        for (s, _) in std::mem::take(&mut (*r).sources) {
                            self.unlisten(s, id);
                        }
                        return Err(m);
                    }
                }
            }
            Ok(real)
        }
    }

    /// Lists record `r` (id `id`) on the sources its operation names now
    /// (its frame is `f`): whether one has a descriptor. On a failure the
    /// record is on none.
    unsafe fn list(&mut self, r: *mut Record, id: u64, f: &Frame) -> Result<bool, &'static CStr> {
        // SAFETY: `r` is live and `f` its operation's frame (caller's
        // contract); `sources` does not raise.
        unsafe {
            let mut sources = std::mem::take(&mut self.sources_scratch);
            sources.clear();
            (*(*r).op).sources(f, &mut |src: *mut Source, fd, dir| sources.push((src, fd, dir)));
            let listed = self.enlist(r, id, &sources);
            self.sources_scratch = sources;
            listed
        }
    }

    /// Takes record `r` (id `id`) off its sources.
    unsafe fn unlist(&mut self, r: *mut Record, id: u64) {
        // SAFETY: `r` is a live record; Rust only.
        unsafe {
            for (s, _) in std::mem::take(&mut (*r).sources) {
                self.unlisten(s, id);
            }
        }
    }

    /// After a step of record `r` (id `id`, frame `f`) answered `next`, a
    /// wait: a sleep leaves its sources, the first wait after a sleep lists
    /// it on them again.
    unsafe fn follow_sources(&mut self, r: *mut Record, id: u64, f: &Frame, next: Next) -> Result<(), &'static CStr> {
        // SAFETY: `r` is a live record and `f` its frame (this function's
        // contract, which is also what `list` and `unlist` ask).
        unsafe {
            match next {
                Next::Sleep(_) => {
                    self.unlist(r, id);
                    (*r).asleep = true;
                }
                _ if (*r).asleep => {
                    self.list(r, id, f)?;
                    (*r).asleep = false;
                }
                _ => {}
            }
            Ok(())
        }
    }

    /// Makes operation `id` due with `why` (merged with an earlier event):
    /// its task goes to the ready tail, marked (`OPERATION_BIT`), and the
    /// step runs when the resume loop takes it (`finish`).
    fn mark(&mut self, id: u64, why: Why) {
        let Some(&r) = self.ops.get(&id) else { return };
        // SAFETY: records in `ops` are live; this is Rust only, and a step in
        // progress reads `why` and `queued` only between its Lua calls. The
        // core outlives the engine.
        unsafe {
            if (*r).stepping {
                (*r).deferred = Some(Why::merge((*r).deferred, why));
                return;
            }
            (*r).why = Some(Why::merge((*r).why, why));
            if !(*r).queued {
                (*r).queued = true;
                let (task, co) = ((*r).task, (*r).co);
                if (*self.sched).set_data(task, co as usize | OPERATION_BIT).is_ok() {
                    let _ = (*self.sched).reschedule(task, cothread::When::Later);
                    self.readied += 1;
                }
            }
        }
    }

    /// Sets the deadline of record `r` (id `id`): its timer follows.
    unsafe fn set_deadline(&mut self, r: *mut Record, id: u64, deadline: Option<u64>) {
        // SAFETY: `r` is a live record (caller's contract); Rust only.
        unsafe {
            if (*r).deadline == deadline && ((*r).timer.is_some() == deadline.is_some()) {
                return;
            }
            if let Some(t) = (*r).timer.take() {
                self.stop_timer(t);
            }
            (*r).deadline = deadline;
            (*r).timer = deadline.map(|d| self.start_timer(id, d));
        }
    }

    /// Counts record `r` in `armed` if it can end by itself.
    unsafe fn rearm(&mut self, r: *mut Record, real_source: bool) {
        // SAFETY: `r` is a live record; Rust only.
        unsafe {
            let armed = real_source || (*r).deadline.is_some() || (*r).outside;
            if armed != (*r).armed {
                (*r).armed = armed;
                if armed { self.armed += 1 } else { self.armed -= 1 }
            }
        }
    }

    /// Does record `r` wait on a source with a descriptor?
    unsafe fn has_real_source(&self, r: *mut Record) -> bool {
        // SAFETY: `r` is a live record.
        unsafe { (*r).sources.iter().any(|(s, _)| self.sources.get(s).is_some_and(|s| s.poll.is_some())) }
    }

    /// Runs `job` on the loop's pool for operation `id`: it ends with
    /// `Event::Done` and the job's payload. If the operation ends first, the
    /// job is cancelled if it has not started, and its payload dropped on
    /// whichever thread has it.
    unsafe fn submit(&mut self, r: *mut Record, id: u64, job: Job) {
        #[derive(Default)]
        struct Slot {
            payload: Option<Payload>,
            /// The operation ended: the job drops its payload itself.
            left: bool,
        }
        let slot: Arc<Mutex<Slot>> = Arc::default();
        let (out, left) = (slot.clone(), slot.clone());
        let q = self.events.clone();
        let work = Box::new(move || {
            let p = job();
            let mut s = out.lock().unwrap_or_else(|e| e.into_inner());
            if !s.left {
                s.payload = Some(p);
            } // else `p` is dropped here, in the pool thread
        });
        let after = Box::new(move |_: &mut Loop, _, _| {
            let p = slot.lock().unwrap_or_else(|e| e.into_inner()).payload.take();
            q.borrow_mut().push(Event::Done(id, p));
        });
        let req = self.lp.work_submit(work, after);
        let on_end: OnEnd = Box::new(move |lp| {
            let _ = lp.request_cancel(req); // done or running: nothing to cancel
            let mut s = left.lock().unwrap_or_else(|e| e.into_inner());
            s.left = true;
            let p = s.payload.take();
            drop(s);
            drop(p);
        });
        // SAFETY: `r` is a live record; Rust only.
        unsafe { self.set_on_end(r, on_end) };
    }

    /// Sets the cleanup of record `r`'s job or event (running the previous
    /// one, whose job or event is over).
    unsafe fn set_on_end(&mut self, r: *mut Record, f: OnEnd) {
        // SAFETY: `r` is a live record; Rust only.
        unsafe {
            if let Some(old) = (*r).on_end.replace(f) {
                old(&mut self.lp);
            }
            (*r).outside = true;
        }
    }

    /// Takes record `r` (id `id`) off its sources and timer and runs its
    /// cleanup: nothing of the loop refers to it any more.
    unsafe fn disarm(&mut self, r: *mut Record, id: u64) {
        // SAFETY: `r` is a live record; Rust only (the cleanup closes handles).
        unsafe {
            self.unlist(r, id);
            if let Some(t) = (*r).timer.take() {
                self.stop_timer(t);
            }
            if let Some(f) = (*r).on_end.take() {
                f(&mut self.lp);
            }
            (*r).outside = false;
            (*r).deadline = None;
            if std::mem::take(&mut (*r).armed) {
                self.armed -= 1;
            }
        }
    }

    /// What the operation of `co` (a parked cothread) waits for; if it has
    /// none, what the last operation the engine ended for `task` waited on
    /// (no deadline), as cosock keeps a thread's last wait until its next.
    ///
    /// # Safety
    /// `co` is a live thread.
    pub unsafe fn wait_info(&self, co: L, task: Task) -> Option<WaitInfo> {
        // SAFETY: `co` is live (contract); records in `ops` are live.
        unsafe {
            if let Some(&r) = parked_token(co).and_then(|id| self.ops.get(&id)).filter(|&&r| (*r).co == co) {
                let readers = (*r).sources.iter().filter(|s| s.1 == READ).count();
                return Some(WaitInfo { readers, writers: (*r).sources.len() - readers, deadline: (*r).deadline });
            }
        }
        let k = self.wakes.get(&task.to_raw())?;
        Some(WaitInfo { readers: k.readers, writers: k.writers, deadline: None })
    }

    /// Wall-clock seconds of the last wake of `task` by this engine.
    pub fn last_wake(&self, task: Task) -> Option<i64> {
        self.wakes.get(&task.to_raw()).map(|k| k.time)
    }

    /// Forgets what is kept about `task` (it ended or was unregistered).
    pub fn forget(&mut self, task: Task) {
        if !self.wakes.is_empty() {
            self.wakes.remove(&task.to_raw());
        }
    }
}

impl Drop for Engine {
    /// Forgets every parked operation (its cothread simply stays suspended:
    /// nothing resumes it), running their cleanups, and lets go of every
    /// source. On a host's loop, which lives on, every handle made here is
    /// closed; an own loop goes with everything on it.
    fn drop(&mut self) {
        let ids: Vec<u64> = self.ops.keys().copied().collect();
        for id in ids {
            if let Some(r) = self.ops.remove(&id) {
                // SAFETY: records are from `Box::into_raw`, freed once (here,
                // out of the map).
                unsafe {
                    self.disarm(r, id);
                    self.recycle(r);
                }
            }
        }
        for r in std::mem::take(&mut self.spare_records) {
            // SAFETY: spare records are ours alone, from `Box::into_raw`.
            drop(unsafe { Box::from_raw(r) });
        }
        let ids: Vec<u64> = self.sources.keys().copied().collect();
        for id in ids {
            self.forget_source(id);
        }
        if let LoopRef::Host(_) = self.lp {
            let timers = std::mem::take(&mut self.spare_timers);
            for h in timers.into_iter().chain([self.idle_timer]) {
                let _ = self.lp.close(h, None);
            }
        }
    }
}

/// The id in the sentinel on top of `co`'s stack, if it is parked by an
/// engine (a suspended coroutine whose top is a light userdata other than
/// the `DELIVERED` marker).
///
/// # Safety
/// `co` is a live thread.
unsafe fn parked_token(co: L) -> Option<u64> {
    // SAFETY: reads of a live thread's status and top slot; a suspended
    // coroutine's stack may be read by index.
    unsafe {
        if ffi::lua_status(co) != ffi::LUA_YIELD || ffi::lua_gettop(co) == 0 {
            return None;
        }
        if ffi::lua_type(co, -1) != ffi::LUA_TLIGHTUSERDATA {
            return None;
        }
        let p = ffi::lua_touserdata(co, -1);
        (p != delivered_marker()).then_some(p as u64)
    }
}

/// Is record `r`'s cothread still suspended in the yield of its park (its
/// frame and sentinel as the engine left them)?
unsafe fn parked_here(r: *mut Record, id: u64) -> bool {
    // SAFETY: `r` is live and its thread is kept alive by its scheduler.
    unsafe {
        let co = (*r).co;
        ffi::lua_status(co) == ffi::LUA_YIELD && ffi::lua_gettop(co) == (*r).height + 1 && parked_token(co) == Some(id)
    }
}
