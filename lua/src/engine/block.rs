//! Waiting outside cothreads (the main chunk, a plain coroutine, a
//! finalizer): the calling thread blocks, as LuaSocket does. A `Wait` polls
//! the operation's descriptors with `poll(2)` until one is ready or the
//! deadline passes; a `Job` runs in this thread, its payload kept by a
//! userdata on the stack (so a raised error leaks nothing).

use std::ffi::{CStr, c_int};

use super::op::{Frame, Next, Operation, Payload, Why, cannot_block};
use crate::raw::{self, L, ffi};
use crate::sys;

/// The default `Operation::block`.
///
/// # Safety
/// `f.l` is the caller's thread, in a C function; `f` is `op`'s frame.
pub unsafe fn block<O: Operation + ?Sized>(op: &mut O, f: &mut Frame, next: Next) -> Why {
    // SAFETY: as the contract says; `poll` runs only Rust code, and `run_job`
    // keeps the payload in a userdata.
    unsafe {
        match next {
            Next::Wait(deadline) => poll(op, f, deadline),
            Next::Job => run_job(op, f),
            Next::Event(_) | Next::Done(_) => cannot_block(),
        }
    }
}

/// Blocks until a descriptor of `op` is ready or `deadline` (monotonic ns).
unsafe fn poll<O: Operation + ?Sized>(op: &mut O, f: &Frame, deadline: Option<u64>) -> Why {
    let mut fds: Vec<libc::pollfd> = Vec::new();
    // SAFETY: `sources` reads the frame without raising (its contract).
    unsafe {
        op.sources(f, &mut |_, fd, dir| {
            if fd >= 0 {
                fds.push(sys::pollfd(fd, if dir == super::READ { sys::POLL_IN } else { sys::POLL_OUT }));
            }
        });
    }
    loop {
        let ms = match deadline {
            None => -1,
            Some(d) => {
                let now = cothread::time::monotonic_ns();
                if d <= now {
                    return Why::Timeout;
                }
                (d - now).div_ceil(1_000_000).min(c_int::MAX as u64) as c_int
            }
        };
        match sys::poll(&mut fds, ms) {
            Ok(0) => continue,
            Ok(_) => return Why::Ready,
            Err(e) => return Why::Failed(sys::strerror(e)),
        }
    }
}

/// Metatable name of the userdata holding an inline job's payload.
const HOLDER: &CStr = c"cothread.payload";

unsafe extern "C-unwind" fn holder_gc(l: L) -> c_int {
    // SAFETY: Lua calls this once with a holder, whose block holds an
    // `Option<Payload>` written by `run_job`.
    unsafe {
        let h = ffi::lua_touserdata(l, 1) as *mut Option<Payload>;
        if !h.is_null() {
            std::ptr::drop_in_place(h);
            h.write(None);
        }
    }
    0
}

/// Runs `op`'s job here; its payload stays in a userdata pushed above the
/// frame (the step's results go above it).
unsafe fn run_job<O: Operation + ?Sized>(op: &mut O, f: &mut Frame) -> Why {
    // SAFETY: valid state with the step's slots; the holder is made (and may
    // raise) before the job exists, and is written before its metatable
    // makes `__gc` reach it.
    unsafe {
        raw::check_stack(f.l, 3);
        let h = ffi::lua_newuserdatauv(f.l, std::mem::size_of::<Option<Payload>>(), 0) as *mut Option<Payload>;
        h.write(None);
        if ffi::luaL_newmetatable(f.l, HOLDER.as_ptr()) != 0 {
            ffi::lua_pushcfunction(f.l, holder_gc);
            ffi::lua_setfield(f.l, -2, c"__gc".as_ptr());
        }
        ffi::lua_setmetatable(f.l, -2);
        let job = op.job(f);
        *h = Some(job());
        f.payload = h;
        Why::Done
    }
}
