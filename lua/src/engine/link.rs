//! What an engine reaches outside Rust's checks: by address, the core of
//! its scheduler and a host's loop (`cothread.attach`), which belong to
//! someone else and outlive the engine; and the system's wall clock. This
//! file is the one place of the engine with `unsafe` code: each address
//! comes through a constructor whose caller proves it good.

use cothread::ffi::cot_loop;
use cothread::reactor::Loop;
use cothread::{Sched, Task, When};

/// The scheduler core the engine makes tasks ready in.
pub struct CoreRef(*mut Sched);

impl CoreRef {
    /// The core at `p`.
    ///
    /// # Safety
    /// `p` outlives the engine, on this thread, and its owner reaches it only
    /// in short expressions that call neither the engine nor Lua: no other
    /// reference to it is live while the engine uses it.
    pub unsafe fn new(p: *mut Sched) -> CoreRef {
        CoreRef(p)
    }

    /// Sets the user value of `task` to `data` and moves it to the ready
    /// tail: whether the task is live.
    pub(super) fn make_ready(&self, task: Task, data: usize) -> bool {
        // SAFETY: `new`'s contract: the core is live and nothing else
        // borrows it now; the borrow ends in this block, which calls only
        // the core (no engine, no Lua).
        let core = unsafe { &mut *self.0 };
        let live = core.set_data(task, data).is_ok();
        if live {
            let _ = core.reschedule(task, When::Later);
        }
        live
    }

    /// Puts `task` back in the private queue `key` (its operation waits
    /// again).
    pub(super) fn wait(&self, task: Task, key: usize) {
        // SAFETY: as in `make_ready`.
        let _ = unsafe { &mut *self.0 }.reschedule(task, When::Wait(key));
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
