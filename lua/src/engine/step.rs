//! The engine's moves: parking an operation, stepping it on a runner's stack
//! when the resume loop takes its cothread (`finish`), delivering its
//! results; and the entry points that make operations due (`poll`, and
//! `detach` and `fire` in `source`, through the engine's `Owner`) or take
//! them out (`cancel`, `abandon`). See the parent module for the states.
//!
//! A step may raise (a memory error while pushing) and its allocations may
//! run finalizers that call back into the engine. So the engine is reached
//! through raw pointers in short expressions, never a reference held across
//! a step; a record stays in `ops` (at a fixed address) while it steps, and
//! events for it meanwhile only set `deferred`.

use std::ffi::{CStr, c_int, c_void};

use cothread::{Task, When};

use super::event::{Event, Fire, new_id};
use super::frame::{Frame, Next, STEP_SLOTS, Why};
use super::lp::Block;
use super::op::Operation;
use super::records::{Engine, Wake, delivered_marker, parked_here, parked_token};
use super::source::READ;
use super::ticket;
use crate::lua::raw::{self, L, ffi};

/// Parks the operation `op` of the running cothread `l` (task `task`), whose
/// whole stack is the operation's frame, after a step answered `next` (a
/// wait): attaches its sources, starts its timer, job or outside event, and
/// pushes the sentinel. The caller then yields with `lua_yield(l, 0)`. On a
/// failure nothing is recorded and the stack is as it was.
///
/// # Safety
/// `l` is the running cothread of `e`'s scheduler, in a C function, with a
/// free stack slot; `e` is live.
pub unsafe fn park(l: L, e: *mut Engine, task: Task, op: Box<dyn Operation>, next: Next) -> Result<(), &'static CStr> {
    // SAFETY: `e` is live; only Rust code runs, and Lua calls that do not
    // raise (the sources' raw reads, one light userdata pushed into the
    // checked slot). The boxes are owned by the record from here on.
    unsafe {
        let id = new_id();
        let r = (*e).new_record(op, task, l, ffi::lua_gettop(l));
        let f = Frame::new(l, 0);
        let enlisted = match next {
            Next::Sleep(_) => {
                (*r).asleep = true;
                Ok(false)
            }
            _ => (*e).list(r, id, &f),
        };
        (*e).ops.insert(id, r);
        let real = match enlisted {
            Ok(real) => real,
            Err(m) => {
                drop_op(e, id);
                return Err(m);
            }
        };
        match next {
            Next::Wait(d) => (*e).set_deadline(r, id, d),
            Next::Sleep(until) => (*e).set_deadline(r, id, Some(until)),
            Next::Event(d) => {
                (*e).set_deadline(r, id, d);
                let fire = Fire { events: (*e).events.clone(), id };
                match (*(*r).op).start(&f, &mut (*e).lp, fire) {
                    Ok(on_end) => (*e).set_on_end(r, on_end),
                    Err(m) => {
                        drop_op(e, id);
                        return Err(m);
                    }
                }
            }
            Next::Job => {
                let job = (*(*r).op).job(&f);
                (*e).submit(r, id, job);
            }
            Next::Done(_) => {
                drop_op(e, id);
                return Err(c"nothing to wait for");
            }
        }
        (*e).rearm(r, real);
        ffi::lua_pushlightuserdata(l, id as usize as *mut c_void);
        Ok(())
    }
}

/// Ends operation `id` without results (it never stepped, or its cothread
/// left the yield some other way): takes it off everything and frees it.
unsafe fn drop_op(e: *mut Engine, id: u64) {
    // SAFETY: `e` is live; the record leaves `ops` here, once.
    unsafe {
        if let Some(r) = (*e).ops.remove(&id) {
            (*e).disarm(r, id);
            (*e).recycle(r);
        }
    }
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
/// takes the results a ticket left, or steps its due operation on runner
/// `l` (the thread in `run` or `step`). A step that ends moves its results
/// onto `co`'s stack, in place of the frame; one that waits again puts the
/// task back in the private queue.
///
/// # Safety
/// `l` is a thread in a C function (it may raise); `e` is null or live;
/// `co` is the live thread of the ready head.
pub unsafe fn finish(l: L, e: *mut Engine, co: L) -> Finish {
    // SAFETY: as the contract says; records in `ops` are live.
    unsafe {
        if is_delivered(co) {
            ffi::lua_settop(co, -2); // the marker
            return Finish::Resume(ffi::lua_gettop(co));
        }
        let found = if e.is_null() { None } else { parked_token(co).filter(|id| (*e).ops.contains_key(id)) };
        match found {
            Some(id) => step_one(l, e, id),
            None => Finish::Resume(0), // left its yield some other way: nothing of ours
        }
    }
}

/// Steps due operation `id` on runner `l`.
unsafe fn step_one(l: L, e: *mut Engine, id: u64) -> Finish {
    // SAFETY: `e` is live and `l` is a thread in a C function. The record
    // stays in `ops` while `stepping` (no one frees it then); the frame
    // moves between two threads of one state with checked stack space.
    unsafe {
        let r = *(*e).ops.get(&id).expect("checked by `finish`");
        (*r).queued = false;
        if !parked_here(r, id) || (*r).stepping {
            // Its frame is not ours any more (resumed or closed by someone
            // else), or a step further out has it: resume with nothing.
            if !(*r).stepping {
                drop_op(e, id);
            }
            return Finish::Resume(0);
        }
        raw::check_stack(l, (*r).height + STEP_SLOTS); // may raise: nothing changed yet
        let mut why = (*r).why.take().unwrap_or(Why::Ready);
        (*r).stepping = true;
        (*e).stepping.push(id);
        // Not armed while it steps: should the step raise, it keeps nothing going.
        if std::mem::take(&mut (*r).armed) {
            (*e).armed -= 1;
        }
        let co = (*r).co;
        ffi::lua_settop(co, -2); // the sentinel
        ffi::lua_xmove(co, l, (*r).height);
        let base = ffi::lua_gettop(l) - (*r).height;
        let mut f = Frame::new(l, base);
        f.set_payload((*r).payload.take());
        loop {
            let Ok(mut next) = super::guard::step(&mut *(*r).op, &mut f, why) else {
                // The step raised (a memory error) holding a payload: it
                // goes with the frame, and the error on.
                drop(f);
                ffi::lua_error(l);
            };
            if matches!(why, Why::Cancelled | Why::Failed(_)) && !matches!(next, Next::Done(_)) {
                next = Next::Done(0); // it must end: with no results then
            }
            if let Next::Done(n) = next {
                (*r).stepping = false;
                (*e).stepping.retain(|&x| x != id);
                return Finish::Resume(deliver(l, e, id, base, n));
            }
            if let Some(d) = (*r).deferred.take() {
                why = d;
                continue;
            }
            if let Err(m) = (*e).follow_sources(r, id, &f, next) {
                why = Why::Failed(m);
                continue;
            }
            (*r).stepping = false;
            (*e).stepping.retain(|&x| x != id);
            match next {
                Next::Job => {
                    let job = (*(*r).op).job(&f);
                    (*e).submit(r, id, job);
                    (*e).set_deadline(r, id, None);
                }
                // An outside event starts only when the operation parks.
                Next::Wait(d) | Next::Event(d) => (*e).set_deadline(r, id, d),
                Next::Sleep(until) => (*e).set_deadline(r, id, Some(until)),
                Next::Done(_) => unreachable!("delivered above"),
            }
            let real = (*e).has_real_source(r);
            (*e).rearm(r, real);
            // The frame (grown or shrunk by the step) goes back, under a new sentinel.
            let h = ffi::lua_gettop(l) - base;
            if ffi::lua_checkstack(co, h + 1) == 0 {
                ffi::lua_settop(l, base);
                drop_op(e, id);
                return Finish::Resume(0);
            }
            ffi::lua_xmove(l, co, h);
            ffi::lua_pushlightuserdata(co, id as usize as *mut c_void);
            (*r).height = h;
            let _ = (*(*e).sched).reschedule((*r).task, When::Wait((*e).key));
            return Finish::Parked;
        }
    }
}

/// Ends operation `id`, whose step left `n` results above its frame at
/// `base` of runner `l`: they go onto the cothread's (emptied) stack.
/// Returns how many made it there.
unsafe fn deliver(l: L, e: *mut Engine, id: u64, base: c_int, n: c_int) -> c_int {
    // SAFETY: the record is live and leaves `ops` here, once; after that only
    // calls that do not raise (stack checks, moves).
    unsafe {
        let Some(r) = (*e).ops.remove(&id) else { return 0 };
        let readers = (*r).sources.iter().filter(|s| s.1 == READ).count();
        let writers = (*r).sources.len() - readers;
        (*e).disarm(r, id);
        let (co, task) = ((*r).co, (*r).task);
        let n = if ffi::lua_checkstack(co, n) == 0 { 0 } else { n };
        ffi::lua_xmove(l, co, n);
        ffi::lua_settop(l, base);
        (*e).wakes.insert(task.to_raw(), Wake { time: (*e).wall, readers, writers });
        (*e).recycle(r);
        n
    }
}

/// Runs the loop of `e` once, blocking as `block` says; the cothreads whose
/// operations its events concern become ready (their steps run when they
/// are resumed: `finish`). Whether any did.
///
/// # Safety
/// `e` is live.
pub unsafe fn poll(e: *mut Engine, block: Block) -> bool {
    // SAFETY: as the contract says; the loop runs only Rust callbacks.
    unsafe {
        (*e).readied = 0;
        (*e).run_loop(block);
        (*e).readied > 0
    }
}

/// The cothread `co` left its wait from outside (unregistered): its
/// operation, if it has one in `e`, leaves the engine at once and waits on
/// `co`'s stack in a ticket (`ticket`): if `co` is scheduled again, its call
/// ends then. Runs on `l`.
///
/// # Safety
/// As `poll`; `co` is a live thread.
pub unsafe fn cancel(l: L, e: *mut Engine, co: L) {
    // SAFETY: as the contract says.
    unsafe {
        let mine = |id: u64| (*e).ops.get(&id).copied().filter(|&r| (*r).co == co);
        if let Some(id) = parked_token(co).filter(|&id| mine(id).is_some()) {
            let r = mine(id).expect("checked");
            if parked_here(r, id) {
                ticket::make(l, e, id);
            } else {
                drop_op(e, id);
            }
            return;
        }
        // Stepping right now (its frame is on a runner: a finalizer run by
        // the step unregisters it): it ends after the step, with "cancelled".
        if let Some(id) = (*e).stepping.iter().copied().find(|&id| mine(id).is_some()) {
            let r = mine(id).expect("checked");
            (*r).cancelled = true;
            (*e).mark(id, Why::Cancelled);
        }
    }
}

/// Drops the operation parked by `co`, a thread that died behind the
/// scheduler's back (`coroutine.close` took its stack, and with it the
/// token `cancel` looks for): the record is found by its thread.
///
/// # Safety
/// `e` is live.
pub unsafe fn drop_parked(e: *mut Engine, co: L) {
    // SAFETY: `e` is live; records in `ops` are live; a record being stepped
    // is left to `cancel`'s path.
    unsafe {
        let found = (*e).ops.iter().find(|&(_, &r)| (*r).co == co && !(*r).stepping).map(|(&id, _)| id);
        if let Some(id) = found {
            drop_op(e, id);
        }
    }
}

/// `abandon(e)`, a C function called protected by a scheduler's `__gc`:
/// every operation parked in engine `e` (a light userdata) moves into a
/// ticket, so that a cothread scheduled again elsewhere ends its call.
///
/// # Safety
/// Called by Lua with a live engine's address as argument 1.
pub unsafe extern "C-unwind" fn abandon(l: L) -> c_int {
    // SAFETY: the argument is the engine of the scheduler being collected,
    // which frees it only after this call.
    unsafe {
        let e = ffi::lua_touserdata(l, 1) as *mut Engine;
        if !e.is_null() {
            ticket::abandon_all(l, e);
        }
    }
    0
}

/// Does `co` hold an operation's results (a cothread unregistered after its
/// operation ended, scheduled again)? See also `ticket::settle`.
///
/// # Safety
/// `co` is a live thread.
pub unsafe fn is_delivered(co: L) -> bool {
    // SAFETY: reads of a live thread's status and top slot.
    unsafe {
        ffi::lua_status(co) == ffi::LUA_YIELD
            && ffi::lua_gettop(co) > 0
            && ffi::lua_type(co, -1) == ffi::LUA_TLIGHTUSERDATA
            && ffi::lua_touserdata(co, -1) == delivered_marker()
    }
}

impl Engine {
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
                    if let Some(&r) = self.ops.get(&id) {
                        // SAFETY: a live record; its job or event is over.
                        unsafe {
                            (*r).payload = p;
                            (*r).outside = false;
                        }
                        self.mark(id, Why::Done);
                    }
                }
            }
        }
        self.spare_events = events;
    }
}
