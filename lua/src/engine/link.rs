//! What an engine reaches outside Rust's checks: by address, the core of
//! its scheduler and a host's loop (`cothread.attach`), which belong to
//! someone else and outlive the engine; and the system's wall clock. This
//! file is the one place of the engine with `unsafe` code: each address
//! comes through a constructor whose caller proves it good.

use std::cell::{RefCell, RefMut};

use cothread::ffi::cot_loop;
use cothread::reactor::Loop;
use cothread::{Sched, Task, When};

/// The scheduler core the engine makes tasks ready in, in its owner's
/// `RefCell` (each use borrows it for one call of the core).
pub struct CoreRef(*const RefCell<Sched>);

impl CoreRef {
    /// The core at `p`.
    ///
    /// # Safety
    /// `p` outlives the engine, on this thread.
    pub unsafe fn new(p: *const RefCell<Sched>) -> CoreRef {
        CoreRef(p)
    }

    /// The core, borrowed for one short use (its owner borrows it the
    /// same way, never across a call into the engine).
    fn core(&self) -> RefMut<'_, Sched> {
        // SAFETY: `new`'s contract: the cell is live; a shared reference to
        // it is all the `RefCell` needs to check its borrows.
        unsafe { &*self.0 }.borrow_mut()
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

    /// Puts `task` back in the private queue `key` (its operation waits
    /// again).
    pub(super) fn wait(&self, task: Task, key: usize) {
        let _ = self.core().reschedule(task, When::Wait(key));
    }
}

/// The wall-clock second now (`time(2)`: a cheap read, for cosock's
/// thread metadata).
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
