//! Randomized model tests: long random sequences of awaits, callbacks, close
//! callbacks, outside resumes and tasks leaving, against a simulated backend
//! that behaves as libuv does, checking the spec's four invariants:
//!
//! 1. every started request gets exactly one callback, every closed handle
//!    exactly one close callback, never re-entrantly;
//! 2. a task is resumed at most once per await, never by an operation it left;
//! 3. no memory is released before its callback or close callback, and
//!    nothing leaks once every task ended and the backend went quiet;
//! 4. a deferred start happens exactly when the old callback or close
//!    callback frees the memory, and not at all if the task left meanwhile.
//!
//! Every transition must also be a row of the tables in `tests.rs`, and
//! every row must be reached.

// Built without `test` only as fuzz targets, which use part of it.
#![cfg_attr(not(test), allow(dead_code, unused_imports))]

use super::tests::{A, B, OBJ_ROWS, SLOT_ROWS, assert_all_reached, obj_row, slot_row};
use super::*;
use crate::util::rng::Rng;
use Action::*;

const SEEDS: u64 = 20;
const EVENTS: usize = 5_000;
/// One start in `FAIL` fails synchronously.
const FAIL: u64 = 12;

// ===== slots =====

/// Where the simulated task is. Await ids count a task's awaits.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Task {
    Running,
    Waiting(u64),
    Elsewhere,
    Ended,
}

/// A handle the backend has initialized in the slot's memory.
#[derive(Clone, Copy, Debug)]
struct Hdl {
    ty: HandleType,
    /// The await it was last started for.
    armed_for: Option<u64>,
    active: bool,
    closing: bool,
}

/// The event being handled, for the driver's checks.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Ctx {
    Await(u64),
    /// A callback, from the operation started for this await.
    Callback(Option<u64>),
    CloseCallback,
    Resume,
    Left,
    /// A start for this await failed; it was deferred.
    Failed(u64, bool),
}

/// One task, its slot, and what the backend holds of the slot's memory.
struct Sim {
    slot: Slot,
    task: Task,
    awaits: u64,
    /// What the task waits for (while `Waiting`).
    want: Kind,
    /// The await whose start waits for the memory.
    deferred: Option<u64>,
    /// A started request, with the await it was started for: its callback is due.
    req: Option<Option<u64>>,
    hdl: Option<Hdl>,
    /// The driver lent the memory to the backend and got no `Release` yet.
    held: bool,
}

#[derive(Default)]
struct Stats {
    rows: Vec<u64>,
    requests: u64,
    request_callbacks: u64,
    closes: u64,
    close_callbacks: u64,
    releases: u64,
    tasks: u64,
}

impl Sim {
    fn new() -> Sim {
        Sim {
            slot: Slot::new(),
            task: Task::Running,
            awaits: 0,
            want: Kind::Request,
            deferred: None,
            req: None,
            hdl: None,
            held: false,
        }
    }

    fn memory_free(&self) -> bool {
        self.req.is_none() && self.hdl.is_none()
    }

    /// Applies `ev` to the slot and records its row.
    fn apply(&mut self, ev: Event, st: &mut Stats) -> Actions {
        let before = self.slot;
        let acts = self.slot.apply(ev).unwrap_or_else(|e| panic!("{ev:?} in {before:?}: {e}"));
        let row = slot_row(&before, ev, self.slot.state(), acts)
            .unwrap_or_else(|| panic!("{before:?} --{ev:?}--> {:?} {acts:?} is no row", self.slot.state()));
        st.rows[row] += 1;
        acts
    }

    /// The driver: performs `acts`, checking the backend's rules.
    fn perform(&mut self, acts: Actions, ctx: Ctx, r: &mut Rng, st: &mut Stats) {
        for a in acts {
            match a {
                DropResults => {
                    let Ctx::Callback(armed) = ctx else { panic!("{a:?} outside a callback: {ctx:?}") };
                    assert!(
                        armed.is_none() || self.task != Task::Waiting(armed.unwrap()),
                        "results of the awaited op dropped"
                    );
                }
                Resume => {
                    let Ctx::Callback(Some(id)) = ctx else { panic!("{a:?} outside a callback: {ctx:?}") };
                    assert_eq!(self.task, Task::Waiting(id), "resumed by an op it left, or twice");
                    self.task = Task::Running;
                }
                ResumeFailed => {
                    assert!(matches!(ctx, Ctx::Failed(id, true) if self.task == Task::Waiting(id)), "{ctx:?}");
                    self.task = Task::Running;
                }
                CancelRequest => assert!(self.req.is_some(), "cancel of no request"),
                CloseHandle => {
                    let h = self.hdl.as_mut().expect("close of no handle");
                    assert!(!h.closing, "closed twice");
                    h.closing = true;
                    h.active = false;
                    st.closes += 1;
                }
                StartRequest | StartHandle | RearmHandle => {
                    self.held = true;
                    self.start(a, ctx, r, st)
                }
                Release => {
                    assert!(self.memory_free(), "released while the backend holds it: {:?} {:?}", self.req, self.hdl);
                    assert!(self.slot.is_freed());
                    assert!(self.held, "released twice");
                    self.held = false;
                    st.releases += 1;
                }
                StopHandle | ResumeClosed => panic!("{a:?} from a slot"),
            }
        }
    }

    fn start(&mut self, a: Action, ctx: Ctx, r: &mut Rng, st: &mut Stats) {
        let Task::Waiting(id) = self.task else { panic!("{a:?} for a task that left: {:?}", self.task) };
        let deferred = match ctx {
            Ctx::Await(i) => {
                assert_eq!(i, id);
                false
            }
            Ctx::Callback(_) | Ctx::CloseCallback => {
                assert_eq!(self.deferred.take(), Some(id), "a start nobody deferred");
                true
            }
            _ => panic!("{a:?} on {ctx:?}"),
        };
        let open = match a {
            StartRequest => {
                assert!(self.memory_free(), "request started in busy memory");
                assert_eq!(self.want, Kind::Request);
                if !r.one_in(FAIL) {
                    self.req = Some(Some(id));
                    st.requests += 1;
                    return;
                }
                r.one_in(2) // ignored for requests
            }
            StartHandle => {
                assert!(self.memory_free(), "handle started in busy memory");
                let ty = self.slot.handle_type().expect("a handle type");
                assert_eq!(self.want, Kind::Handle(ty));
                let init = !r.one_in(FAIL);
                let started = init && !r.one_in(FAIL);
                if init {
                    self.hdl = Some(Hdl { ty, armed_for: Some(id), active: started, closing: false });
                }
                if started {
                    return;
                }
                init
            }
            _ => {
                let h = self.hdl.as_mut().expect("re-arm of no handle");
                assert!(!h.closing, "re-arm of a closing handle");
                assert_eq!(self.want, Kind::Handle(h.ty));
                assert_eq!(self.slot.handle_type(), Some(h.ty));
                h.armed_for = Some(id);
                h.active = !r.one_in(FAIL);
                if h.active {
                    return;
                }
                true
            }
        };
        let acts = self.apply(Event::StartFailed { open }, st);
        assert_eq!(acts.contains(ResumeFailed), deferred);
        self.perform(acts, Ctx::Failed(id, deferred), r, st);
        self.task = Task::Running; // the await returned the error
    }

    fn await_op(&mut self, kind: Kind, r: &mut Rng, st: &mut Stats) {
        assert_eq!(self.task, Task::Running);
        let rearm = self.slot.state() == State::HdlCompleted && kind == Kind::Handle(self.slot.handle_type().unwrap());
        let free = self.memory_free();
        self.awaits += 1;
        let id = self.awaits;
        self.task = Task::Waiting(id);
        self.want = kind;
        let acts = self.apply(Event::Await(kind), st);
        let started = acts.contains(StartRequest) || acts.contains(StartHandle) || acts.contains(RearmHandle);
        assert_eq!(started, free || rearm, "starts at once exactly when the memory is free: {acts:?}");
        self.perform(acts, Ctx::Await(id), r, st);
        if !started {
            self.deferred = Some(id);
        }
    }

    /// Delivers the callback due, if any.
    fn callback(&mut self, r: &mut Rng, st: &mut Stats) {
        let armed = match (self.req, &self.hdl) {
            (Some(armed), None) => {
                self.req = None;
                st.request_callbacks += 1;
                armed
            }
            (None, Some(h)) if h.active => h.armed_for,
            _ => unreachable!("no callback due"),
        };
        let acts = self.apply(Event::Callback, st);
        assert_eq!(acts.contains(Resume) as u8 + acts.contains(DropResults) as u8, 1, "{acts:?}");
        self.perform(acts, Ctx::Callback(armed), r, st);
        self.check_deferred();
    }

    fn close_callback(&mut self, r: &mut Rng, st: &mut Stats) {
        assert!(self.hdl.take().expect("a handle").closing);
        st.close_callbacks += 1;
        let acts = self.apply(Event::CloseCallback, st);
        self.perform(acts, Ctx::CloseCallback, r, st);
        self.check_deferred();
    }

    /// Invariant 4: once the memory is free, nothing stays deferred.
    fn check_deferred(&self) {
        if self.memory_free() {
            assert_eq!(self.deferred, None, "the memory is free but the deferred start did not happen");
        }
    }

    fn outside_resume(&mut self, r: &mut Rng, st: &mut Stats) {
        let waiting = matches!(self.task, Task::Waiting(_));
        assert_ne!(self.task, Task::Ended);
        let acts = self.apply(Event::OutsideResume { keep: r.one_in(2) }, st);
        assert!(waiting || acts.is_empty(), "not the slot's business: {acts:?}");
        assert!(!acts.iter().any(Action::resumes));
        self.perform(acts, Ctx::Resume, r, st);
        self.deferred = None;
        self.task = Task::Running;
    }

    fn task_left(&mut self, end: bool, r: &mut Rng, st: &mut Stats) {
        assert_eq!(self.task, Task::Running);
        let acts = self.apply(Event::TaskLeft, st);
        self.perform(acts, Ctx::Left, r, st);
        self.task = if end { Task::Ended } else { Task::Elsewhere };
    }

    /// The slot's state agrees with the backend and the task.
    fn check(&self) {
        use State::*;
        let s = self.slot.state();
        assert_eq!(self.slot.is_waiting(), matches!(self.task, Task::Waiting(_)), "{s:?} {:?}", self.task);
        assert_eq!(self.deferred.is_some(), self.slot.deferred().is_some(), "{s:?}");
        assert_eq!(self.held, !self.slot.is_freed(), "{s:?}: memory lent but never released, or the reverse");
        let (req, h) = (self.req.is_some(), self.hdl);
        let ok = match s {
            Freed | ReqCompleted => !req && h.is_none(),
            ReqAwaiting | ReqCancelled | ReqResetting => req && h.is_none(),
            HdlAwaiting | HdlCancelled | HdlResettingAfterCancel => !req && h.is_some_and(|h| h.active && !h.closing),
            HdlCompleted => !req && h.is_some_and(|h| !h.closing),
            HdlClosing | HdlResettingAfterClose => !req && h.is_some_and(|h| h.closing),
        };
        assert!(ok, "{s:?} while the backend holds {:?} {h:?}", self.req);
        if let Some(h) = h {
            assert_eq!(self.slot.handle_type(), Some(h.ty));
        }
    }
}

fn random_kind(r: &mut Rng) -> Kind {
    match r.below(3) {
        0 => Kind::Request,
        1 => Kind::Handle(A),
        _ => Kind::Handle(B),
    }
}

#[test]
fn slots_keep_the_invariants_over_random_sequences() {
    let mut st = Stats { rows: vec![0; SLOT_ROWS.len()], ..Stats::default() };
    for seed in 1..=SEEDS {
        run_slots(&mut Rng::new(seed), EVENTS, &mut st);
    }
    assert_eq!(st.request_callbacks, st.requests, "one callback per started request");
    assert_eq!(st.close_callbacks, st.closes, "one close callback per close");
    assert!(st.tasks > 100 && st.releases > 1_000, "tasks {} releases {}", st.tasks, st.releases);
    let labels: Vec<_> = SLOT_ROWS.iter().map(|r| r.label).collect();
    assert_all_reached("slot model", &labels, &st.rows);
}

/// The slot fuzz target: the model, every choice read from `data`.
#[cfg(fuzzing)]
pub fn fuzz_slots(data: &[u8]) {
    let mut st = Stats { rows: vec![0; SLOT_ROWS.len()], ..Stats::default() };
    run_slots(&mut Rng::tape(data), data.len() / 2, &mut st);
    assert_eq!(st.request_callbacks, st.requests, "one callback per started request");
    assert_eq!(st.close_callbacks, st.closes, "one close callback per close");
}

/// Four tasks on their slots take up to `events` random steps (fewer if a
/// tape runs out), then everything drains; panics at a broken invariant.
fn run_slots(r: &mut Rng, events: usize, st: &mut Stats) {
    let mut sims: Vec<Sim> = (0..4).map(|_| Sim::new()).collect();
    for step in 0..events {
        if r.exhausted() {
            break;
        }
        let i = r.below(sims.len() as u64) as usize;
        let s = &mut sims[i];
        let running = s.task == Task::Running;
        let callback = s.req.is_some() || s.hdl.is_some_and(|h| h.active);
        let closing = s.hdl.is_some_and(|h| h.closing);
        // Running too: a spurious resume of a task already resumed (and
        // maybe not yet run), which is none of the slot's business.
        let resumable = s.task != Task::Ended;
        let w = |b: bool, w: u64| if b { w } else { 0 };
        let weights = [w(running, 3), w(callback, 4), w(closing, 2), w(resumable, 2), w(running, 2)];
        if weights.iter().sum::<u64>() == 0 {
            // An ended task whose slot is idle: only a freed slot is that.
            assert!(s.slot.is_freed(), "step {step}: stuck in {:?}", s.slot.state());
        } else {
            match r.pick(&weights) {
                0 => s.await_op(random_kind(r), r, st),
                1 => s.callback(r, st),
                2 => s.close_callback(r, st),
                3 => s.outside_resume(r, st),
                _ => s.task_left(r.one_in(6), r, st),
            }
        }
        s.check();
        // An ended task's slot lives until released; then a new task comes.
        if s.task == Task::Ended && s.slot.is_freed() {
            assert!(s.memory_free());
            *s = Sim::new();
            st.tasks += 1;
        }
    }
    drain(&mut sims, r, st);
}

/// Ends every task, then delivers callbacks and close callbacks until the
/// backend is quiet: every slot must be freed.
fn drain(sims: &mut [Sim], r: &mut Rng, st: &mut Stats) {
    for s in sims.iter_mut() {
        match s.task {
            Task::Waiting(_) => {
                s.outside_resume(r, st);
                s.task_left(true, r, st);
            }
            Task::Running => s.task_left(true, r, st),
            Task::Elsewhere | Task::Ended => s.task = Task::Ended,
        }
        s.check();
    }
    loop {
        let mut quiet = true;
        for s in sims.iter_mut() {
            if s.req.is_some() || s.hdl.is_some_and(|h| h.active) {
                s.callback(r, st);
            } else if s.hdl.is_some_and(|h| h.closing) {
                s.close_callback(r, st);
            } else {
                continue;
            }
            s.check();
            quiet = false;
        }
        if quiet {
            break;
        }
    }
    for s in sims.iter() {
        assert!(s.slot.is_freed() && s.memory_free() && !s.held, "leak: {:?} {:?} {:?}", s.slot, s.req, s.hdl);
    }
}

// ===== objects =====

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum OTask {
    Running,
    /// Waiting on object `.0`.
    Waiting(usize),
    Elsewhere,
}

/// One object and its handle as the backend sees it.
struct OSim {
    obj: Object,
    active: bool,
    closing: bool,
    /// The model's waiter and holder.
    waiter: Option<u64>,
    holder: Option<u64>,
    /// The driver got the object's `Release`.
    released: bool,
}

impl OSim {
    fn new() -> OSim {
        OSim { obj: Object::new(), active: false, closing: false, waiter: None, holder: None, released: false }
    }
}

struct World {
    objs: Vec<OSim>,
    tasks: Vec<OTask>,
    rows: Vec<u64>,
    closes: u64,
    close_callbacks: u64,
    resumes: u64,
}

fn tid(t: usize) -> u64 {
    t as u64 + 100
}

impl World {
    fn apply(&mut self, o: usize, ev: ObjEvent, fresh: bool) -> Result<Actions, OpError> {
        let before = self.objs[o].obj;
        let got = self.objs[o].obj.apply(ev);
        let row = obj_row(&before, ev, fresh, got.map(|a| (self.objs[o].obj.state(), a)))
            .unwrap_or_else(|| panic!("{before:?} --{ev:?}--> {got:?} is no row"));
        self.rows[row] += 1;
        got
    }

    /// The task model, resumed by object `o`'s action.
    fn resume(&mut self, o: usize) -> usize {
        let w = self.objs[o].waiter.take().expect("a waiter to resume");
        let t = (w - 100) as usize;
        assert_eq!(self.tasks[t], OTask::Waiting(o), "resumed by an object it left");
        self.tasks[t] = OTask::Running;
        self.resumes += 1;
        t
    }

    fn perform(&mut self, o: usize, acts: Actions, r: &mut Rng) {
        for a in acts {
            match a {
                StartHandle => {
                    assert!(!self.objs[o].active && !self.objs[o].closing, "start of an active or closing handle");
                    if r.one_in(FAIL) {
                        let acts = self.apply(o, ObjEvent::StartFailed, true).unwrap();
                        assert!(acts.is_empty());
                        // The await returns the error: the task never suspended.
                        let t = (self.objs[o].waiter.take().unwrap() - 100) as usize;
                        self.tasks[t] = OTask::Running;
                    } else {
                        self.objs[o].active = true;
                    }
                }
                StopHandle => {
                    let ob = &mut self.objs[o];
                    assert!(ob.active && !ob.closing, "stop of a stopped handle");
                    ob.active = false;
                }
                CloseHandle => {
                    let ob = &mut self.objs[o];
                    assert!(!ob.closing, "closed twice");
                    (ob.closing, ob.active, ob.holder) = (true, false, None);
                    self.closes += 1;
                }
                Resume => {
                    let t = self.resume(o);
                    self.objs[o].holder = Some(tid(t));
                }
                ResumeClosed => _ = self.resume(o),
                Release => {
                    let ob = &mut self.objs[o];
                    assert!(!ob.closing && !ob.active && ob.obj.state() == ObjState::Freed, "released too early");
                    assert!(!ob.released, "released twice");
                    ob.released = true;
                }
                _ => panic!("{a:?} from an object"),
            }
        }
    }

    fn check(&self) {
        for ob in &self.objs {
            assert_eq!(ob.obj.waiter(), ob.waiter);
            assert_eq!(ob.obj.holder(), ob.holder);
            let ok = match ob.obj.state() {
                ObjState::Ready => !ob.active && !ob.closing,
                ObjState::Awaiting | ObjState::Completed => ob.active && !ob.closing,
                ObjState::Closing => ob.closing && !ob.active,
                ObjState::Freed => !ob.closing && !ob.active,
            };
            assert!(ok, "{:?} with active {} closing {}", ob.obj.state(), ob.active, ob.closing);
            assert_eq!(ob.released, ob.obj.state() == ObjState::Freed, "freed without release, or the reverse");
        }
    }

    fn close(&mut self, o: usize, r: &mut Rng) {
        let had_waiter = self.objs[o].waiter.is_some();
        match self.apply(o, ObjEvent::Close, false) {
            Ok(acts) => {
                assert_eq!(acts.contains(ResumeClosed), had_waiter);
                self.perform(o, acts, r);
            }
            Err(e) => assert!(e == OpError::Closed && self.objs[o].obj.is_closed()),
        }
    }

    fn close_callback(&mut self, o: usize, r: &mut Rng) {
        self.objs[o].closing = false;
        self.close_callbacks += 1;
        let acts = self.apply(o, ObjEvent::CloseCallback, false).unwrap();
        self.perform(o, acts, r);
    }
}

#[test]
fn objects_keep_the_invariants_over_random_sequences() {
    let mut rows = vec![0; OBJ_ROWS.len()];
    let (mut closes, mut close_callbacks, mut resumes) = (0, 0, 0);
    for seed in 1..=SEEDS {
        let w = run_objects(&mut Rng::new(seed + 1_000), EVENTS);
        rows.iter_mut().zip(&w.rows).for_each(|(a, b)| *a += b);
        (closes, close_callbacks, resumes) =
            (closes + w.closes, close_callbacks + w.close_callbacks, resumes + w.resumes);
    }
    assert_eq!(closes, close_callbacks);
    assert!(resumes > 1_000, "resumes {resumes}");
    let labels: Vec<_> = OBJ_ROWS.iter().map(|r| r.label).collect();
    assert_all_reached("object model", &labels, &rows);
}

/// The object fuzz target: the model, every choice read from `data`.
#[cfg(fuzzing)]
pub fn fuzz_objects(data: &[u8]) {
    run_objects(&mut Rng::tape(data), data.len() / 2);
}

/// Three tasks and two objects take up to `events` random steps (fewer if a
/// tape runs out), then every object closes; panics at a broken invariant.
fn run_objects(r: &mut Rng, events: usize) -> World {
    let mut w = World {
        objs: (0..2).map(|_| OSim::new()).collect(),
        tasks: vec![OTask::Running; 3],
        rows: vec![0; OBJ_ROWS.len()],
        closes: 0,
        close_callbacks: 0,
        resumes: 0,
    };
    for _ in 0..events {
        if r.exhausted() {
            break;
        }
        let t = r.below(w.tasks.len() as u64) as usize;
        let o = r.below(w.objs.len() as u64) as usize;
        match r.pick(&[4, 4, 1, 2, 2, 2]) {
            0 if w.tasks[t] == OTask::Running => {
                let ob = &w.objs[o];
                let expect = if ob.obj.is_closed() {
                    Err(OpError::Closed)
                } else if ob.waiter.is_some() {
                    Err(OpError::Busy)
                } else {
                    Ok(Actions::of(if ob.active { &[] } else { &[StartHandle] }))
                };
                let got = w.apply(o, ObjEvent::Await(tid(t)), false);
                assert_eq!(got, expect);
                if let Ok(acts) = got {
                    (w.objs[o].waiter, w.objs[o].holder) = (Some(tid(t)), None);
                    w.tasks[t] = OTask::Waiting(o);
                    w.perform(o, acts, r);
                }
            }
            // Callbacks come only to a waiter: the driver runs the resumed
            // task before the backend calls back again.
            1 if w.objs[o].active && w.objs[o].waiter.is_some() => {
                let acts = w.apply(o, ObjEvent::Callback, false).unwrap();
                assert_eq!(acts, Actions::of(&[Resume]));
                w.perform(o, acts, r);
            }
            2 => w.close(o, r),
            3 if w.objs[o].closing => w.close_callback(o, r),
            // A freed object stays a while (its face may still be used), then a new one comes.
            3 if w.objs[o].obj.state() == ObjState::Freed => w.objs[o] = OSim::new(),
            4 if w.tasks[t] != OTask::Running => {
                for o in 0..w.objs.len() {
                    let mine = w.tasks[t] == OTask::Waiting(o);
                    let acts = w.apply(o, ObjEvent::OutsideResume(tid(t)), false).unwrap();
                    assert_eq!(acts, if mine { Actions::of(&[StopHandle]) } else { Actions::none() });
                    if mine {
                        w.objs[o].waiter = None;
                    }
                    w.perform(o, acts, r);
                }
                w.tasks[t] = OTask::Running;
            }
            5 if w.tasks[t] == OTask::Running => {
                for o in 0..w.objs.len() {
                    let mine = w.objs[o].holder == Some(tid(t));
                    let acts = w.apply(o, ObjEvent::TaskLeft(tid(t)), false).unwrap();
                    assert_eq!(acts, if mine { Actions::of(&[StopHandle]) } else { Actions::none() });
                    if mine {
                        w.objs[o].holder = None;
                    }
                    w.perform(o, acts, r);
                }
                w.tasks[t] = OTask::Elsewhere;
            }
            _ => {}
        }
        w.check();
    }
    // Drain: close everything, deliver the close callbacks.
    for o in 0..w.objs.len() {
        w.close(o, r);
        if w.objs[o].closing {
            w.close_callback(o, r);
        }
        assert_eq!(w.objs[o].obj.state(), ObjState::Freed);
    }
    w.check();
    assert!(w.tasks.iter().all(|t| !matches!(t, OTask::Waiting(_))), "a waiter was never resumed");
    assert_eq!(w.closes, w.close_callbacks);
    w
}
