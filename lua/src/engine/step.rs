//! The engine's moves: parking an operation, stepping it on a runner's stack
//! when the resume loop takes its cothread (`finish`), delivering its
//! results; and the entry points that make operations due (`poll`, and
//! `detach` and `fire` in `source`, through the engine's `Owner`) or take
//! them out (`cancel`; `ticket::abandon_all`). The parent module has the
//! states.
//!
//! A step may raise (a memory error while pushing) and its allocations may
//! run finalizers that call back into the engine. So no borrow of the
//! engine's state is held while a step runs, and the operation is lent to
//! the step (`link::Lent`) but stays its record's: a raise leaks nothing.
//! The record stays in the engine (`stepping`), and events for it meanwhile
//! only set `deferred`.

use std::ffi::{CStr, c_int, c_void};

use cothread::Task;

use super::event::{Event, Fire};
use super::frame::{Frame, Next, STEP_SLOTS, Why};
use super::link::Lent;
use super::lp::Block;
use super::op::Operation;
use super::records::{Engine, Inner, Wake, delivered_marker, parked_here, parked_token};
use super::source::READ;
use super::ticket;
use crate::lua::{Error, L, Lua, Thread};

/// Parks the operation `op` of the running cothread `co` (task `task`),
/// whose frame `f` is its whole stack (`base` 0), after a step answered
/// `next` (a wait): attaches its sources, starts its timer, job or outside
/// event, and pushes the sentinel (the caller made room for it). The caller
/// then yields with `lua_yield(l, 0)`. On a failure nothing is recorded and
/// the stack is as it was. `owner` is the task's thread: `co` itself, or
/// the cothread `co` stands in for (`cothread.pcall` on Lua 5.1).
pub fn park(
    f: &mut Frame,
    e: &Engine,
    (co, owner): (Thread, L),
    task: Task,
    op: Box<dyn Operation>,
    next: Option<Next>,
) -> Result<(), &'static CStr> {
    // Only reads of the frame run while the state is borrowed (no finalizer).
    let mut s = e.inner();
    let s = &mut *s;
    let stand_in = co.raw() != owner;
    let id = s.new_record(op, task, owner, co, f.lua.top());
    let Some(next) = next else {
        // Due at once, listed on nothing: its cothread goes to the ready
        // tail, and the operation steps from the start when it is taken.
        s.due_now(id);
        parked(s, f, id, stand_in);
        return Ok(());
    };
    let enlisted = match next {
        Next::Sleep(_) => {
            s.records.get_mut(id).expect("just made").asleep = true;
            Ok(false)
        }
        _ => with_op(s, id, |s, op| s.list(id, |each| op.sources(f, each))),
    };
    let real = match enlisted {
        Ok(real) => real,
        Err(m) => {
            drop_op(s, id);
            return Err(m);
        }
    };
    match next {
        Next::Wait(d) => s.set_deadline(id, d),
        Next::Sleep(until) => s.set_deadline(id, Some(until)),
        Next::Event(d) => {
            s.set_deadline(id, d);
            let fire = Fire { events: s.events.clone(), id };
            match with_op(s, id, |s, op| op.start(f, &mut s.lp, fire)) {
                Ok(on_end) => s.set_on_end(id, on_end),
                Err(m) => {
                    drop_op(s, id);
                    return Err(m);
                }
            }
        }
        Next::Job => {
            let job = with_op(s, id, |_, op| op.job(f));
            s.submit(id, job);
        }
        Next::Done(_) => {
            drop_op(s, id);
            return Err(c"nothing to wait for");
        }
    }
    s.rearm(id, real);
    parked(s, f, id, stand_in);
    Ok(())
}

/// The end of `park`: a stand-in's record is listed, and the sentinel
/// pushed.
fn parked(s: &mut Inner, f: &mut Frame, id: u64, stand_in: bool) {
    if stand_in {
        let Inner { stand_ins, records, .. } = s;
        stand_ins.retain(|&id| records.get(id).is_some());
        stand_ins.push(id);
    }
    f.lua.push_light(id as usize as *mut c_void);
}

/// Runs `go` with the operation of record `id` out of the record (so that
/// the engine's state may change meanwhile), then puts it back.
fn with_op<R>(s: &mut Inner, id: u64, go: impl FnOnce(&mut Inner, &mut dyn Operation) -> R) -> R {
    let mut op = s.records.get_mut(id).and_then(|r| r.op.take()).expect("a record holds its operation");
    let r = go(s, &mut *op);
    if let Some(rec) = s.records.get_mut(id) {
        rec.op = Some(op);
    }
    r
}

/// Ends operation `id` without results (it never stepped, or its cothread
/// left the yield some other way): takes it off everything and frees it.
fn drop_op(s: &mut Inner, id: u64) {
    s.disarm(id);
    s.remove(id);
}

/// What the resume loop does with a cothread whose task has `OPERATION_BIT`
/// (`finish`).
pub enum Finish {
    /// Resume it with the `n` values on its stack.
    Resume(c_int),
    /// Not now: its operation waits again (it is back in the private queue).
    Parked,
}

/// Before the resume loop resumes `co` (its task had `OPERATION_BIT`):
/// takes the results a ticket left, or steps its due operation on `runner`
/// (the thread in `run` or `step`). A step that ends moves its results
/// onto `co`'s stack, in place of the frame; one that waits again puts the
/// task back in the private queue. An error (a step that raised, a runner
/// without room for the frame) is the caller's to raise.
pub fn finish(runner: Lua, e: Option<&Engine>, co: &Thread) -> Result<Finish, Error> {
    if is_delivered(co) {
        co.pop(1); // the marker
        return Ok(Finish::Resume(co.top()));
    }
    let found = e.zip(parked_token(co)).filter(|(e, id)| e.inner().records.get(*id).is_some());
    match found {
        Some((e, id)) => step_one(runner, e, id),
        None => Ok(Finish::Resume(0)), // left its yield some other way: nothing of ours
    }
}

/// Steps due operation `id` on `runner`.
fn step_one(mut runner: Lua, e: &Engine, id: u64) -> Result<Finish, Error> {
    let (op, mut why, payload, height) = {
        let mut s = e.inner();
        let s = &mut *s;
        let r = s.records.get_mut(id).expect("checked by `finish`");
        r.queued = false;
        if r.stepping {
            return Ok(Finish::Resume(0)); // a step further out has its frame
        }
        if !parked_here(r, id) {
            // Its frame is not ours any more (resumed or closed by someone
            // else): resume with nothing.
            drop_op(s, id);
            return Ok(Finish::Resume(0));
        }
        let height = r.height;
        // The frame and its sentinel move to the runner (or nothing changes).
        runner.take_from(&r.co, height + 1, STEP_SLOTS - 1)?;
        runner.pop(1); // the sentinel
        let why = r.why.take().unwrap_or(Why::Ready);
        r.stepping = true;
        // Not armed while it steps: should the step raise, it keeps nothing going.
        let unarm = std::mem::take(&mut r.armed);
        let lent = Lent::new(r.op.take().expect("a record holds its operation"));
        let op = lent.op();
        r.lent = Some(lent);
        let payload = r.payload.take();
        s.stepping.push(id);
        if unarm {
            s.armed -= 1;
        }
        (op, why, payload, height)
    };
    // SAFETY: the record is `stepping` from here until its operation is
    // given back below: no path ends it or steps it meanwhile, so its lent
    // operation lives and is borrowed here only.
    let op = unsafe { op.get() };
    let base = runner.top() - height;
    let mut f = Frame::new(runner, base);
    f.set_payload(payload);
    loop {
        let Ok(mut next) = super::guard::step(op, &mut f, why) else {
            // The step raised (a memory error) holding a payload: it goes
            // with the frame, and the error on. The record keeps its
            // operation, stepping for good.
            return Err(Error::Value);
        };
        if matches!(why, Why::Cancelled | Why::Failed(_)) && !matches!(next, Next::Done(_)) {
            next = Next::Done(0); // it must end: with no results then
        }
        if let Next::Done(n) = next {
            let mut s = e.inner();
            drop(give_back(&mut s, id));
            end_stepping(&mut s, id);
            return Ok(Finish::Resume(deliver(&mut f, &mut s, id, base, n)));
        }
        let mut s = e.inner();
        let s = &mut *s;
        if let Some(d) = s.records.get_mut(id).and_then(|r| r.deferred.take()) {
            why = d;
            continue;
        }
        if let Err(m) = s.follow_sources(id, next, |each| op.sources(&f, each)) {
            why = Why::Failed(m);
            continue;
        }
        end_stepping(s, id);
        match next {
            Next::Job => {
                let job = op.job(&f); // reads the frame only
                s.submit(id, job);
                s.set_deadline(id, None);
            }
            // An outside event starts only when the operation parks.
            Next::Wait(d) | Next::Event(d) => s.set_deadline(id, d),
            Next::Sleep(until) => s.set_deadline(id, Some(until)),
            Next::Done(_) => unreachable!("delivered above"),
        }
        let real = s.has_real_source(id);
        s.rearm(id, real);
        // The frame (grown or shrunk by the step) goes back, under a new sentinel.
        let h = f.lua.top() - base;
        let op = give_back(s, id);
        let r = s.records.get_mut(id).expect("still there");
        if !(r.co.reserve(h + 1) && f.lua.give_to(&r.co, h) && r.co.push_light(id as usize as *mut c_void)) {
            f.lua.set_top(base);
            drop_op(s, id);
            return Ok(Finish::Resume(0));
        }
        r.height = h;
        r.op = op;
        s.core.wait(r.task, s.key);
        return Ok(Finish::Parked);
    }
}

/// The operation record `id` lent to its step, back in its box (the step's
/// borrow of it is over).
fn give_back(s: &mut Inner, id: u64) -> Option<Box<dyn Operation>> {
    s.records.get_mut(id).and_then(|r| r.lent.take()).map(Lent::back)
}

/// Record `id` stepped: it is no longer `stepping`.
fn end_stepping(s: &mut Inner, id: u64) {
    if let Some(r) = s.records.get_mut(id) {
        r.stepping = false;
    }
    s.stepping.retain(|&x| x != id);
}

/// Ends operation `id`, whose step left `n` results above its frame at
/// `base` of the runner: they go onto the cothread's (emptied) stack.
/// Returns how many made it there.
fn deliver(f: &mut Frame, s: &mut Inner, id: u64, base: c_int, n: c_int) -> c_int {
    let Some(r) = s.records.get(id) else {
        f.lua.set_top(base);
        return 0;
    };
    let readers = r.sources.iter().filter(|s| s.1 == READ).count();
    let writers = r.sources.len() - readers;
    let task = r.task;
    let n = if f.lua.give_to(&r.co, n) { n } else { 0 };
    f.lua.set_top(base);
    s.disarm(id);
    s.wakes.insert(task.to_raw(), Wake { time: s.wall, readers, writers });
    s.remove(id);
    n
}

/// Runs the loop of `e` once, blocking as `block` says; the cothreads whose
/// operations its events concern become ready (their steps run when they
/// are resumed: `finish`). Whether any did.
pub fn poll(e: &Engine, block: Block) -> bool {
    let mut s = e.inner();
    s.readied = 0;
    s.run_loop(block);
    s.readied > 0
}

/// The cothread `co` left its wait from outside (unregistered): its
/// operation, if it has one in `e`, leaves the engine at once and waits on
/// `co`'s stack in a ticket (`ticket`): if `co` is scheduled again, its call
/// ends then. Runs on `lua`.
pub fn cancel(lua: &mut Lua, e: &Engine, co: &Thread) {
    let mine = |s: &Inner, id: u64| s.records.get(id).is_some_and(|r| r.co.raw() == co.raw());
    if let Some(id) = parked_token(co).filter(|&id| mine(&e.inner(), id)) {
        let here = parked_here(e.inner().records.get(id).expect("checked"), id);
        if here {
            ticket::make(lua, e, id);
        } else {
            drop_op(&mut e.inner(), id);
        }
        return;
    }
    // Stepping right now (its frame is on a runner: a finalizer run by
    // the step unregisters it): it ends after the step, with "cancelled".
    let mut s = e.inner();
    if let Some(id) = s.stepping.iter().copied().find(|&id| mine(&s, id)) {
        s.records.get_mut(id).expect("checked").cancelled = true;
        s.mark(id, Why::Cancelled);
    }
}

/// Drops the operation parked by `co`, a thread that died behind the
/// scheduler's back (`coroutine.close` took its stack, and with it the
/// token `cancel` looks for): the record is found by its thread (only
/// compared).
pub fn drop_parked(e: &Engine, co: crate::lua::L) {
    let mut s = e.inner();
    let found = s.records.iter().find(|(_, r)| r.co.raw() == co && !r.stepping).map(|(id, _)| id);
    if let Some(id) = found {
        drop_op(&mut s, id);
    }
}

/// Does `co` hold an operation's results (a cothread unregistered after its
/// operation ended, scheduled again)? See also `ticket::settle`.
pub fn is_delivered(co: &Thread) -> bool {
    co.is_suspended() && co.light_on_top() == Some(delivered_marker())
}

/// Is `co` suspended in an operation's yield, its results due or not
/// (what `finish` looks at)?
pub fn is_parked(co: &Thread) -> bool {
    is_delivered(co) || parked_token(co).is_some()
}

impl Inner {
    /// Runs the loop once, blocking as `block` says, and makes due the
    /// operations its events concern.
    pub(super) fn run_loop(&mut self, block: Block) {
        self.timers.run(&mut self.lp, block);
        let spare = std::mem::take(&mut self.spare_events);
        let mut events = std::mem::replace(&mut *self.events.borrow_mut(), spare);
        if !events.is_empty() {
            self.stamp();
        }
        for e in events.drain(..) {
            match e {
                Event::Poll(s, bits) => {
                    let mut woken = std::mem::take(&mut self.woken);
                    self.sources.ready(&mut self.lp, s, bits, &mut woken);
                    for &op in &woken {
                        self.mark(op, Why::Ready);
                    }
                    self.woken = woken;
                }
                Event::Timer(id) => self.mark(id, Why::Timeout),
                Event::Done(id, p) => {
                    if let Some(r) = self.records.get_mut(id) {
                        // Its job or event is over.
                        r.payload = p;
                        r.outside = false;
                        self.mark(id, Why::Done);
                    }
                }
            }
        }
        self.spare_events = events;
    }
}
