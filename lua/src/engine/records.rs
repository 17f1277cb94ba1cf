//! The engine of one scheduler and its records, one per parked operation:
//! making, arming and disarming a record, and making its operation due
//! (`mark`). The moves that use them (park, step, deliver, cancel) are in
//! `step`; the parent module describes the states.
//!
//! An [`Engine`] is a handle on its state, [`Inner`], kept in a `RefCell`
//! behind an `Rc`: sources reach it through a weak link (`Owner`) when
//! their objects close or fire, which may happen while a step runs Lua
//! code. So no borrow of the state is held across a call into Lua that may
//! run finalizers (a step, a new ticket); between those the engine borrows
//! it for short stretches of Rust.

use std::cell::{RefCell, RefMut};
use std::ffi::{CStr, c_int, c_void};
use std::os::fd::RawFd;
use std::rc::{Rc, Weak};
use std::sync::{Arc, Mutex};

use cothread::Task;
use cothread::reactor::{Handle, Loop};
use rustc_hash::FxHashMap;

use super::event::{Event, Events, OnEnd};
use super::frame::{Job, Next, Payload, Why};
use super::link::{CoreRef, Lent, wall_seconds};
use super::lp::{LoopRef, Timers};
use super::op::Operation;
use super::slots::Slots;
use super::source::{Owner, READ, Source};
use super::watch::Sources;
use crate::lua::{L, Thread};

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
    /// The operation; lent to its step while it steps (`stepping`).
    pub(super) op: Option<Box<dyn Operation>>,
    pub(super) lent: Option<Lent>,
    pub(super) task: Task,
    /// The parked cothread (or its stand-in: `Inner::stand_ins`), and its
    /// frame's height (without the sentinel).
    pub(super) co: Thread,
    /// The task's user value once due: its thread with `OPERATION_BIT`.
    pub(super) due: usize,
    pub(super) height: c_int,
    /// Sources waited on, with their directions.
    pub(super) sources: Vec<(u64, u32)>,
    /// It sleeps (`Next::Sleep`): listed on none of its operation's sources.
    pub(super) asleep: bool,
    pub(super) deadline: Option<u64>,
    pub(super) timer: Option<Handle>,
    /// Counted in `Inner::armed`: it can end by itself.
    pub(super) armed: bool,
    /// Its job or outside event is pending.
    pub(super) outside: bool,
    /// Its task is in the ready queue for it (at most once).
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

/// What a record is made of: its operation, task, its user value once due,
/// the parked thread and its frame height.
type Parked = (Box<dyn Operation>, Task, usize, Thread, c_int);

impl Record {
    fn new((op, task, due, co, height): Parked) -> Record {
        Record {
            op: Some(op),
            lent: None,
            task,
            co,
            due,
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
        }
    }

    /// Refills an emptied record (`empty`; disarmed before: no deadline,
    /// timer, cleanup, nor arming).
    fn reuse(&mut self, (op, task, due, co, height): Parked) {
        self.op = Some(op);
        self.task = task;
        self.co = co;
        self.due = due;
        self.height = height;
        self.asleep = false;
        self.queued = false;
        self.stepping = false;
        self.cancelled = false;
    }

    /// Drops what an ended record holds, keeping its vector's capacity.
    fn empty(&mut self) {
        self.op = None;
        self.lent = None;
        self.sources.clear();
        self.why = None;
        self.deferred = None;
        self.payload = None;
        self.on_end = None;
    }
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

/// The waiting engine of one scheduler: a handle on its state.
pub struct Engine {
    pub(super) rc: Rc<RefCell<Inner>>,
    /// The private key parked cothreads wait on (also in `Inner`).
    key: usize,
}

/// The state of an engine.
///
/// Maps are keyed by identifiers and raw task handles, integers the program
/// makes: FxHash, not SipHash (no chosen keys to defend against).
pub(super) struct Inner {
    pub(super) lp: LoopRef,
    /// The scheduler's core, which outlives the engine.
    pub(super) core: CoreRef,
    /// The private signal key parked cothreads wait on.
    pub(super) key: usize,
    /// This engine, as its sources' owner.
    pub(super) me: Weak<dyn Owner>,
    pub(super) events: Events,
    pub(super) spare_events: Vec<Event>,
    pub(super) sources: Sources,
    pub(super) records: Slots<Record>,
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
    /// Operations parked by a coroutine standing in for its cothread
    /// (`cothread.pcall` on Lua 5.1), which `cancel` cannot find from the
    /// cothread: `forget` drops them (ids of ended ones are pruned there).
    pub(super) stand_ins: Vec<u64>,
}

impl Engine {
    /// An engine on loop `lp` for the scheduler core `core`, whose parked
    /// cothreads wait on the private key `key`.
    pub fn new(core: CoreRef, key: usize, mut lp: LoopRef) -> Engine {
        let events: Events = Rc::default();
        let timers = Timers::new(&mut lp, events.clone());
        let rc = Rc::new_cyclic(|me: &Weak<RefCell<Inner>>| {
            RefCell::new(Inner {
                lp,
                core,
                key,
                me: me.clone(),
                spare_events: Vec::new(),
                sources: Sources::new(events.clone()),
                events,
                records: Slots::new(),
                readied: 0,
                armed: 0,
                timers,
                wakes: FxHashMap::default(),
                wall: 0,
                woken: Vec::new(),
                stepping: Vec::new(),
                abandoning: Vec::new(),
                stand_ins: Vec::new(),
            })
        });
        Engine { rc, key }
    }

    /// An engine on a loop of its own.
    pub fn with_own_loop(core: CoreRef, key: usize) -> std::io::Result<Engine> {
        Ok(Engine::new(core, key, LoopRef::Own(Box::new(Loop::new()?))))
    }

    /// Its state, for a short stretch of Rust (no Lua call that may run a
    /// finalizer while it is borrowed).
    #[inline]
    pub(super) fn inner(&self) -> RefMut<'_, Inner> {
        self.rc.borrow_mut()
    }

    /// The private key parked cothreads wait on.
    #[inline]
    pub fn key(&self) -> usize {
        self.key
    }

    /// Operations that can end by themselves: they keep `run` going.
    #[inline]
    pub fn armed(&self) -> usize {
        // Read on every turn of the resume loop: no panic path (the state
        // is never borrowed there).
        self.rc.try_borrow().map_or(0, |e| e.armed)
    }

    /// What the operation of `co` (a parked cothread) waits for; if it has
    /// none, what the last operation the engine ended for `task` waited on
    /// (no deadline), as cosock keeps a thread's last wait until its next.
    pub fn wait_info(&self, co: &Thread, task: Task) -> Option<WaitInfo> {
        let e = self.rc.borrow();
        let parked = parked_token(co).and_then(|id| e.records.get(id)).filter(|r| r.co.raw() == co.raw());
        if let Some(r) = parked {
            let readers = r.sources.iter().filter(|s| s.1 == READ).count();
            return Some(WaitInfo { readers, writers: r.sources.len() - readers, deadline: r.deadline });
        }
        let k = e.wakes.get(&task.to_raw())?;
        Some(WaitInfo { readers: k.readers, writers: k.writers, deadline: None })
    }

    /// Wall-clock seconds of the last wake of `task` by this engine.
    pub fn last_wake(&self, task: Task) -> Option<i64> {
        self.rc.borrow().wakes.get(&task.to_raw()).map(|k| k.time)
    }

    /// Forgets what is kept about `task` (it ended or was unregistered),
    /// and drops the operations its stand-ins parked.
    pub fn forget(&self, task: Task) {
        let mut e = self.inner();
        if !e.wakes.is_empty() {
            e.wakes.remove(&task.to_raw());
        }
        if !e.stand_ins.is_empty() {
            let e = &mut *e;
            let mut ids = std::mem::take(&mut e.stand_ins);
            ids.retain(|&id| match e.records.get(id) {
                Some(r) if r.task == task && !r.stepping => {
                    e.disarm(id);
                    e.remove(id);
                    false
                }
                Some(_) => true,
                None => false,
            });
            e.stand_ins = ids;
        }
    }
}

impl Inner {
    /// Stores a record for `op` of `task` (whose thread is `owner`), parked
    /// in `co` over a frame of `height` slots: its id.
    pub(super) fn new_record(
        &mut self,
        op: Box<dyn Operation>,
        task: Task,
        owner: L,
        co: Thread,
        height: c_int,
    ) -> u64 {
        let due = owner as usize | OPERATION_BIT;
        self.records.insert((op, task, due, co, height), Record::new, Record::reuse)
    }

    /// Takes record `id` (disarmed) out and frees it.
    pub(super) fn remove(&mut self, id: u64) {
        if let Some(r) = self.records.remove(id) {
            r.empty();
        }
    }

    /// Lists record `id` on the sources `names` names (its operation's
    /// `sources`, for its frame now): whether one has a descriptor. On a
    /// failure the record is on none.
    pub(super) fn list(
        &mut self,
        id: u64,
        names: impl FnOnce(&mut dyn FnMut(&Source, RawFd, u32)),
    ) -> Result<bool, &'static CStr> {
        let Inner { lp, me, sources, records, .. } = self;
        let Some(r) = records.get_mut(id) else { return Ok(false) };
        let mut listed = Ok(false);
        names(&mut |src: &Source, fd: RawFd, dir: u32| {
            if listed.is_err() {
                return;
            }
            let on = sources
                .attach(lp, me, src, fd)
                .and_then(|s| sources.listen(lp, s, dir, id).map(|real| (s, real)).map_err(|e| e.c_message()));
            match on {
                Ok((s, real)) => {
                    r.sources.push((s, dir));
                    listed = listed.map(|any| any | real);
                }
                Err(m) => listed = Err(m),
            }
        });
        if listed.is_err() {
            for (s, _) in r.sources.drain(..) {
                sources.unlisten(s, id);
            }
        }
        listed
    }

    /// Takes record `id` off its sources.
    pub(super) fn unlist(&mut self, id: u64) {
        let Inner { sources, records, .. } = self;
        if let Some(r) = records.get_mut(id) {
            for (s, _) in r.sources.drain(..) {
                sources.unlisten(s, id);
            }
        }
    }

    /// After a step of record `id` answered `next`, a wait: a sleep leaves
    /// its sources, the first wait after a sleep lists it on the sources
    /// `names` names again.
    pub(super) fn follow_sources(
        &mut self,
        id: u64,
        next: Next,
        names: impl FnOnce(&mut dyn FnMut(&Source, RawFd, u32)),
    ) -> Result<(), &'static CStr> {
        let Some(asleep) = self.records.get(id).map(|r| r.asleep) else { return Ok(()) };
        match next {
            Next::Sleep(_) => {
                self.unlist(id);
                self.set_asleep(id, true);
            }
            _ if asleep => {
                self.list(id, names)?;
                self.set_asleep(id, false);
            }
            _ => {}
        }
        Ok(())
    }

    fn set_asleep(&mut self, id: u64, asleep: bool) {
        if let Some(r) = self.records.get_mut(id) {
            r.asleep = asleep;
        }
    }

    /// Makes operation `id` due with `why` (merged with an earlier event):
    /// its task goes to the ready tail, marked (`OPERATION_BIT`), and the
    /// step runs when the resume loop takes it (`finish`).
    pub(super) fn mark(&mut self, id: u64, why: Why) {
        let Some(r) = self.records.get_mut(id) else { return };
        if r.stepping {
            r.deferred = Some(Why::merge(r.deferred, why));
            return;
        }
        r.why = Some(Why::merge(r.why, why));
        if !r.queued {
            r.queued = true;
            if self.core.make_ready(r.task, r.due) {
                self.readied += 1;
            }
        }
    }

    /// Makes the record `id` just made due with `Start`, asleep (listed on
    /// no source until a step waits), its task's user value marked. The
    /// running task is not moved here: its resume loop puts it at the
    /// ready tail (`Quick::Yield`).
    pub(super) fn due_now(&mut self, id: u64) {
        let Some(r) = self.records.get_mut(id) else { return };
        r.asleep = true;
        r.why = Some(Why::Start);
        r.queued = true;
        self.core.mark_data(r.task, r.due);
    }

    /// Sets the deadline of record `id`: its timer follows.
    pub(super) fn set_deadline(&mut self, id: u64, deadline: Option<u64>) {
        let Inner { records, timers, lp, .. } = self;
        let Some(r) = records.get_mut(id) else { return };
        if r.deadline == deadline && (r.timer.is_some() == deadline.is_some()) {
            return;
        }
        if let Some(t) = r.timer.take() {
            timers.stop(lp, t);
        }
        r.deadline = deadline;
        r.timer = deadline.map(|d| timers.start(lp, id, d));
    }

    /// Counts record `id` in `armed` if it can end by itself.
    pub(super) fn rearm(&mut self, id: u64, real_source: bool) {
        let Some(r) = self.records.get_mut(id) else { return };
        let armed = real_source || r.deadline.is_some() || r.outside;
        if armed != r.armed {
            r.armed = armed;
            if armed { self.armed += 1 } else { self.armed -= 1 }
        }
    }

    /// Does record `id` wait on a source with a descriptor?
    pub(super) fn has_real_source(&self, id: u64) -> bool {
        self.records.get(id).is_some_and(|r| r.sources.iter().any(|&(s, _)| self.sources.has_poll(s)))
    }

    /// Runs `job` on the loop's pool for operation `id`: it ends with
    /// `Event::Done` and the job's payload. If the operation ends first, the
    /// job is cancelled if it has not started, and its payload dropped on
    /// whichever thread has it.
    pub(super) fn submit(&mut self, id: u64, job: Job) {
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
        self.set_on_end(id, on_end);
    }

    /// Sets the cleanup of record `id`'s job or event (running the previous
    /// one, whose job or event is over).
    pub(super) fn set_on_end(&mut self, id: u64, f: OnEnd) {
        let Inner { records, lp, .. } = self;
        let Some(r) = records.get_mut(id) else { return };
        if let Some(old) = r.on_end.replace(f) {
            old(lp);
        }
        r.outside = true;
    }

    /// Takes record `id` off its sources and timer and runs its cleanup:
    /// nothing of the loop refers to it any more.
    pub(super) fn disarm(&mut self, id: u64) {
        self.unlist(id);
        let Inner { records, timers, lp, armed, .. } = self;
        let Some(r) = records.get_mut(id) else { return };
        if let Some(t) = r.timer.take() {
            timers.stop(lp, t);
        }
        if let Some(f) = r.on_end.take() {
            f(lp);
        }
        r.outside = false;
        r.deadline = None;
        if std::mem::take(&mut r.armed) {
            *armed -= 1;
        }
    }

    /// Notes the wall-clock second of this wake, for `wakes`.
    pub(super) fn stamp(&mut self) {
        self.wall = wall_seconds();
    }

    /// Source `s` was closed or collected: its waiters are due.
    fn closed(&mut self, s: u64) {
        self.stamp();
        for op in self.sources.waiters(s, false) {
            if let Some(r) = self.records.get_mut(op) {
                r.sources.retain(|x| x.0 != s);
            }
            self.mark(op, Why::Closed);
        }
        self.sources.forget(&mut self.lp, s);
    }

    /// Source `s` (a channel's receiver) fired: its readers are due.
    fn fired(&mut self, s: u64) {
        self.stamp();
        for op in self.sources.waiters(s, true) {
            self.mark(op, Why::Ready);
        }
    }
}

/// The engine as its sources see it. A source calls while no method of the
/// engine runs (see the module's documentation), so the borrows succeed;
/// should one not, the call changes nothing rather than panic in a
/// finalizer.
impl Owner for RefCell<Inner> {
    fn busy(&self, id: u64) -> bool {
        self.try_borrow().map_or(true, |e| e.sources.busy(id))
    }

    fn forget_source(&self, id: u64) {
        if let Ok(mut e) = self.try_borrow_mut() {
            let e = &mut *e;
            e.sources.forget(&mut e.lp, id);
        }
    }

    fn closed(&self, id: u64) {
        if let Ok(mut e) = self.try_borrow_mut() {
            e.closed(id);
        }
    }

    fn fired(&self, id: u64) {
        if let Ok(mut e) = self.try_borrow_mut() {
            e.fired(id);
        }
    }
}

impl Drop for Inner {
    /// Forgets every parked operation (its cothread simply stays suspended:
    /// nothing resumes it), running their cleanups, and lets go of every
    /// source. On a host's loop, which lives on, every handle made here is
    /// closed; an own loop goes with everything on it.
    fn drop(&mut self) {
        for id in self.records.ids() {
            self.disarm(id);
            self.remove(id);
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
pub(super) fn parked_token(co: &Thread) -> Option<u64> {
    if !co.is_suspended() {
        return None;
    }
    co.light_on_top().filter(|&p| p != delivered_marker()).map(|p| p as u64)
}

/// Is record `r` (id `id`) still suspended in the yield of its park (its
/// frame and sentinel as the engine left them)?
pub(super) fn parked_here(r: &Record, id: u64) -> bool {
    r.co.is_suspended() && r.co.top() == r.height + 1 && parked_token(&r.co) == Some(id)
}
