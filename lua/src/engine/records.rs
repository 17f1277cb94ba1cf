//! The engine of one scheduler and its records, one per parked operation:
//! making, arming and disarming a record, and making its operation due
//! (`mark`). The moves that use them (park, step, deliver, cancel) are in
//! `step`; the parent module describes the states.

use std::ffi::{CStr, c_int, c_void};
use std::os::fd::RawFd;
use std::ptr::NonNull;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use cothread::reactor::{Handle, Loop};
use cothread::{Sched, Task};
use rustc_hash::FxHashMap;

use super::event::{Event, Events, OnEnd};
use super::frame::{Frame, Job, Next, Payload, Why};
use super::lp::{LoopRef, Timers};
use super::op::{Operation, Spent};
use super::source::{Owner, READ, Source};
use super::watch::Sources;
use crate::lua::raw::{L, ffi};

/// Bit 0 of a task's user value (a thread pointer, aligned): before its
/// cothread resumes, the engine has something to do (`finish`): step its due
/// operation, or take the results a ticket left under the `DELIVERED`
/// marker.
pub const OPERATION_BIT: usize = 1;

/// The marker on top of the results a ticket left (`ticket::settle`): the
/// address of this static, as a light userdata.
static DELIVERED: u8 = 0;

pub(super) fn delivered_marker() -> *mut c_void {
    (&raw const DELIVERED).cast_mut().cast()
}

/// An operation while its cothread is parked.
pub(super) struct Record {
    /// The operation (from `Box::into_raw`; freed with the record).
    pub(super) op: *mut dyn Operation,
    pub(super) task: Task,
    /// The parked cothread, and its frame's height (without the sentinel).
    pub(super) co: L,
    pub(super) height: c_int,
    /// Sources waited on, with their directions.
    pub(super) sources: Vec<(u64, u32)>,
    /// It sleeps (`Next::Sleep`): listed on none of its operation's sources.
    pub(super) asleep: bool,
    pub(super) deadline: Option<u64>,
    pub(super) timer: Option<Handle>,
    /// Counted in `Engine::armed`: it can end by itself.
    pub(super) armed: bool,
    /// Its job or outside event is pending.
    pub(super) outside: bool,
    /// Its id is in `due` (at most once).
    pub(super) queued: bool,
    /// What it steps with next (Due).
    pub(super) why: Option<Why>,
    pub(super) stepping: bool,
    pub(super) deferred: Option<Why>,
    /// Its cothread was unregistered: the results are delivered, the task is
    /// not made ready.
    pub(super) cancelled: bool,
    pub(super) payload: Option<Payload>,
    pub(super) on_end: Option<OnEnd>,
}

/// A cothread's last wake by the engine, for cosock's thread metadata.
#[derive(Clone, Copy)]
pub(super) struct Wake {
    /// Wall-clock seconds.
    pub(super) time: i64,
    pub(super) readers: usize,
    pub(super) writers: usize,
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
    pub(super) lp: LoopRef,
    /// The scheduler's core, which outlives the engine (both belong to one
    /// scheduler state, the engine dropped first).
    pub(super) sched: *mut Sched,
    /// The private signal key parked cothreads wait on.
    pub(super) key: usize,
    pub(super) events: Events,
    pub(super) spare_events: Vec<Event>,
    pub(super) sources: Sources,
    /// Records, from `Box::into_raw` (a step keeps a pointer to its record
    /// while re-entered code may change the map).
    pub(super) ops: FxHashMap<u64, *mut Record>,
    /// Tasks made ready since `poll` began.
    pub(super) readied: usize,
    pub(super) armed: usize,
    pub(super) timers: Timers,
    pub(super) wakes: FxHashMap<u64, Wake>,
    /// Wall-clock second of the current poll, for `wakes`.
    pub(super) wall: i64,
    /// Emptied vector kept for reuse (the operations a readiness wakes).
    pub(super) woken: Vec<u64>,
    /// Operations stepping now, innermost last (steps nest when a step's
    /// finalizers close a source or send on a channel).
    pub(super) stepping: Vec<u64>,
    /// Operations left to move into tickets (`ticket::abandon_all`).
    pub(super) abandoning: Vec<u64>,
    /// Records kept for reuse, and the sources of the operation parking.
    pub(super) spare_records: Vec<*mut Record>,
    pub(super) sources_scratch: Vec<(*mut Source, RawFd, u32)>,
}

/// Records kept for reuse at most (one per cothread parked at once is
/// plenty: they are a few hundred bytes).
const SPARE_RECORDS: usize = 1024;

impl Engine {
    /// An engine on loop `lp` for the scheduler core `sched`, whose parked
    /// cothreads wait on the private key `key`.
    pub fn new(sched: *mut Sched, key: usize, mut lp: LoopRef) -> Engine {
        let events: Events = Rc::default();
        let timers = Timers::new(&mut lp, events.clone());
        Engine {
            lp,
            sched,
            key,
            spare_events: Vec::new(),
            sources: Sources::new(events.clone()),
            events,
            ops: FxHashMap::default(),
            readied: 0,
            armed: 0,
            timers,
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
    pub(super) fn new_record(&mut self, op: Box<dyn Operation>, task: Task, co: L, height: c_int) -> *mut Record {
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
    pub(super) unsafe fn recycle(&mut self, r: *mut Record) {
        // SAFETY: the caller took `r` out of `ops`: nothing else refers to
        // it; `op` comes from `Box::into_raw` (or is null after `take_op`).
        unsafe {
            if !(*r).op.is_null() {
                drop(Box::from_raw((*r).op));
            }
            (*r).op = std::ptr::null_mut::<Spent>();
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
    pub(super) unsafe fn enlist(
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
                let listed = self.attach(src, fd).and_then(|s| {
                    self.sources.listen(&mut self.lp, s, dir, id).map(|x| (s, x)).map_err(|e| e.c_message())
                });
                match listed {
                    Ok((s, x)) => {
                        real |= x;
                        (*r).sources.push((s, dir));
                    }
                    Err(m) => {
                        for (s, _) in std::mem::take(&mut (*r).sources) {
                            self.sources.unlisten(s, id);
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
    pub(super) unsafe fn list(&mut self, r: *mut Record, id: u64, f: &Frame) -> Result<bool, &'static CStr> {
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
    pub(super) unsafe fn unlist(&mut self, r: *mut Record, id: u64) {
        // SAFETY: `r` is a live record (caller's contract); Rust only.
        unsafe {
            for (s, _) in std::mem::take(&mut (*r).sources) {
                self.sources.unlisten(s, id);
            }
        }
    }

    /// After a step of record `r` (id `id`, frame `f`) answered `next`, a
    /// wait: a sleep leaves its sources, the first wait after a sleep lists
    /// it on them again.
    pub(super) unsafe fn follow_sources(
        &mut self,
        r: *mut Record,
        id: u64,
        f: &Frame,
        next: Next,
    ) -> Result<(), &'static CStr> {
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
    pub(super) fn mark(&mut self, id: u64, why: Why) {
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
    pub(super) unsafe fn set_deadline(&mut self, r: *mut Record, id: u64, deadline: Option<u64>) {
        // SAFETY: `r` is a live record (caller's contract); Rust only.
        unsafe {
            if (*r).deadline == deadline && ((*r).timer.is_some() == deadline.is_some()) {
                return;
            }
            if let Some(t) = (*r).timer.take() {
                self.timers.stop(&mut self.lp, t);
            }
            (*r).deadline = deadline;
            (*r).timer = deadline.map(|d| self.timers.start(&mut self.lp, id, d));
        }
    }

    /// Counts record `r` in `armed` if it can end by itself.
    pub(super) unsafe fn rearm(&mut self, r: *mut Record, real_source: bool) {
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
    pub(super) unsafe fn has_real_source(&self, r: *mut Record) -> bool {
        // SAFETY: `r` is a live record.
        unsafe { (*r).sources.iter().any(|&(s, _)| self.sources.has_poll(s)) }
    }

    /// Runs `job` on the loop's pool for operation `id`: it ends with
    /// `Event::Done` and the job's payload. If the operation ends first, the
    /// job is cancelled if it has not started, and its payload dropped on
    /// whichever thread has it.
    pub(super) unsafe fn submit(&mut self, r: *mut Record, id: u64, job: Job) {
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
    pub(super) unsafe fn set_on_end(&mut self, r: *mut Record, f: OnEnd) {
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
    pub(super) unsafe fn disarm(&mut self, r: *mut Record, id: u64) {
        // SAFETY: `r` is a live record; Rust only (the cleanup closes handles).
        unsafe {
            self.unlist(r, id);
            if let Some(t) = (*r).timer.take() {
                self.timers.stop(&mut self.lp, t);
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

    /// Attaches `src` (descriptor `fd`; -1: none) to this engine: see
    /// `Sources::attach`.
    ///
    /// # Safety
    /// `src` is a live object's `Source`; its owner, if any, is a live engine.
    pub(super) unsafe fn attach(&mut self, src: *mut Source, fd: RawFd) -> Result<u64, &'static CStr> {
        let me = NonNull::from(&mut *self as &mut dyn Owner);
        // SAFETY: as this function's contract.
        unsafe { self.sources.attach(&mut self.lp, me, src, fd) }
    }

    /// Notes the wall-clock second of this wake, for `wakes`.
    pub(super) fn stamp(&mut self) {
        // SAFETY: `time` with a null argument only returns the time.
        self.wall = unsafe { libc::time(std::ptr::null_mut()) };
    }
}

impl Owner for Engine {
    fn busy(&self, id: u64) -> bool {
        self.sources.busy(id)
    }

    fn forget_source(&mut self, id: u64) {
        self.sources.forget(&mut self.lp, id);
    }

    fn closed(&mut self, s: u64) {
        self.stamp();
        for op in self.sources.waiters(s, false) {
            if let Some(&r) = self.ops.get(&op) {
                // SAFETY: records in `ops` are live; only Rust runs.
                unsafe { (*r).sources.retain(|x| x.0 != s) };
            }
            self.mark(op, Why::Closed);
        }
        self.sources.forget(&mut self.lp, s);
    }

    fn fired(&mut self, s: u64) {
        self.stamp();
        for op in self.sources.waiters(s, true) {
            self.mark(op, Why::Ready);
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
        for id in self.sources.ids() {
            self.sources.forget(&mut self.lp, id);
        }
        if let LoopRef::Host(_) = self.lp {
            self.timers.close_all(&mut self.lp);
        }
    }
}

/// The id in the sentinel on top of `co`'s stack, if it is parked by an
/// engine (a suspended coroutine whose top is a light userdata other than
/// the `DELIVERED` marker).
///
/// # Safety
/// `co` is a live thread.
pub(super) unsafe fn parked_token(co: L) -> Option<u64> {
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
pub(super) unsafe fn parked_here(r: *mut Record, id: u64) -> bool {
    // SAFETY: `r` is live and its thread is kept alive by its scheduler.
    unsafe {
        let co = (*r).co;
        ffi::lua_status(co) == ffi::LUA_YIELD && ffi::lua_gettop(co) == (*r).height + 1 && parked_token(co) == Some(id)
    }
}
