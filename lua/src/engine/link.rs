//! What an engine shares or reaches by address: the core of its scheduler
//! (shared, counted); a host's loop (`cothread.attach`), which belongs to
//! the host and outlives the engine; an operation lent to its step; and the
//! system's wall clock.
//! This file holds the engine's `unsafe` code: each address comes through
//! a constructor whose caller proves it good.

use std::cell::{RefCell, RefMut};
use std::ptr::NonNull;
use std::rc::Rc;

use cothread::ffi::cot_loop;
use cothread::reactor::Loop;
use cothread::{Sched, Task, When};

use super::op::Operation;

/// The scheduler core the engine makes tasks ready in, shared with the
/// scheduler's state (each use borrows it for one call of the core).
pub struct CoreRef(Rc<RefCell<Sched>>);

impl CoreRef {
    /// The core `core`, shared.
    pub fn new(core: Rc<RefCell<Sched>>) -> CoreRef {
        CoreRef(core)
    }

    /// The core, borrowed for one short use (its owner borrows it the
    /// same way, never across a call into the engine).
    fn core(&self) -> RefMut<'_, Sched> {
        self.0.borrow_mut()
    }

    /// Sets the user value of `task` to `data` and moves it to the ready
    /// tail: whether the task is live.
    pub(super) fn make_ready(&self, task: Task, data: usize) -> bool {
        let mut core = self.core();
        let live = core.set_data(task, data).is_ok();
        if live {
            let _ = core.reschedule(task, When::Later);
        }
        live
    }

    /// Sets the user value of `task` to `data`, leaving it where it is.
    pub(super) fn mark_data(&self, task: Task, data: usize) {
        let _ = self.core().set_data(task, data);
    }

    /// Puts `task` back in the private queue `key` (its operation waits
    /// again).
    pub(super) fn wait(&self, task: Task, key: usize) {
        let _ = self.core().reschedule(task, When::Wait(key));
    }
}

/// An operation lent to its step, owned by its record meanwhile.
///
/// A step may raise (a memory error in a push longjmps past the Rust frames
/// between it and Lua's protected call), so the operation cannot sit on the
/// step's Rust frame: it would leak. Out of its box, it stays the record's;
/// the step reaches it by address (`LentOp`). If the step raised, the record
/// keeps it (stepping for good) and frees it when it goes.
pub(super) struct Lent(NonNull<dyn Operation>);

/// The address a step reaches its lent operation by.
#[derive(Clone, Copy)]
pub(super) struct LentOp(NonNull<dyn Operation>);

impl Lent {
    pub(super) fn new(op: Box<dyn Operation>) -> Lent {
        Lent(NonNull::from(Box::leak(op)))
    }

    /// The address for the step.
    pub(super) fn op(&self) -> LentOp {
        LentOp(self.0)
    }

    /// The operation back in its box (its step is over).
    pub(super) fn back(self) -> Box<dyn Operation> {
        let p = self.0;
        std::mem::forget(self);
        // SAFETY: `p` comes from `Box::leak` in `new`; `self` is forgotten,
        // so this box is its one owner. The step's borrow (`LentOp::get`)
        // ended: giving back is the step's own last move.
        unsafe { Box::from_raw(p.as_ptr()) }
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        // SAFETY: as in `back`: the one owner, dropped by its record, which
        // no step uses any more (a record leaves the engine only when it
        // is not stepping; one that stays stepping goes with the engine).
        drop(unsafe { Box::from_raw(self.0.as_ptr()) });
    }
}

impl LentOp {
    /// The operation, for its step.
    ///
    /// # Safety
    /// Its `Lent` lives and is not given back while the borrow lasts, and
    /// nothing else borrows the operation: its record is `stepping`, which
    /// every path that ends or steps a record refuses (mod.rs: "How it ends
    /// exactly once").
    pub(super) unsafe fn get<'a>(self) -> &'a mut dyn Operation {
        // SAFETY: the contract; the address comes from `Box::leak`.
        unsafe { &mut *self.0.as_ptr() }
    }
}

/// The wall-clock second now (`time(2)`: a cheap read, for cosock's
/// thread metadata; std's `SystemTime` costs ten times more, on every batch
/// of events).
pub(super) fn wall_seconds() -> i64 {
    // SAFETY: `time` with a null argument writes nothing; it only answers.
    unsafe { libc::time(std::ptr::null_mut()) }
}

/// A loop a host made and handed over (`cothread.attach`).
pub struct HostLoop(*mut cot_loop);

impl HostLoop {
    /// The host's loop at `p`.
    ///
    /// # Safety
    /// `cothread.attach`'s contract: `p` is a live loop that outlives the
    /// scheduler and is used on this thread only, and no `cot_loop_*` call
    /// reaches it while the engine holds the reference `get` lends.
    pub unsafe fn new(p: *mut cot_loop) -> HostLoop {
        HostLoop(p)
    }

    /// The loop, lent while the `HostLoop` is borrowed.
    pub(super) fn get(&self) -> &Loop {
        // SAFETY: `new`'s contract; the loop is reached only through this
        // `HostLoop`, and `&self` admits no `&mut` from `get_mut` meanwhile.
        unsafe { cot_loop::loop_mut(self.0) }
    }

    /// The loop, lent mutably while the `HostLoop` is borrowed so.
    pub(super) fn get_mut(&mut self) -> &mut Loop {
        // SAFETY: as in `get`; `&mut self` makes this the only borrow.
        unsafe { cot_loop::loop_mut(self.0) }
    }
}
