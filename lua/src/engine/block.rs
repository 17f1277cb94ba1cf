//! Waiting outside cothreads (the main chunk, a plain coroutine, a
//! finalizer): the calling thread blocks, as LuaSocket does. A `Wait` polls
//! the operation's descriptors with `poll(2)` until one is ready or the
//! deadline passes; a `Job` runs in this thread.

use std::ffi::c_int;

use super::op::{Frame, Next, Operation, Why, cannot_block};
use crate::sys;

/// The default `Operation::block`, for `op` whose frame is `f` on the
/// caller's thread.
pub fn block<O: Operation + ?Sized>(op: &mut O, f: &mut Frame, next: Next) -> Why {
    match next {
        Next::Wait(deadline) => poll(&mut descriptors(op, f), deadline),
        Next::Sleep(until) => poll(&mut Vec::new(), Some(until)),
        Next::Job => run_job(op, f),
        Next::Event(_) | Next::Done(_) => cannot_block(),
    }
}

/// The descriptors of `op`'s sources, for `poll(2)`.
fn descriptors<O: Operation + ?Sized>(op: &mut O, f: &Frame) -> Vec<libc::pollfd> {
    let mut fds: Vec<libc::pollfd> = Vec::new();
    op.sources(f, &mut |_, fd, dir| {
        if fd >= 0 {
            fds.push(sys::pollfd(fd, if dir == super::READ { sys::POLL_IN } else { sys::POLL_OUT }));
        }
    });
    fds
}

/// Blocks until one of `fds` is ready (none: a sleep) or `deadline`
/// (monotonic ns).
fn poll(fds: &mut [libc::pollfd], deadline: Option<u64>) -> Why {
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
        match sys::poll(fds, ms) {
            Ok(0) => continue,
            Ok(_) => return Why::Ready,
            Err(e) => return Why::Failed(sys::strerror(e)),
        }
    }
}

/// Runs `op`'s job here; the step gets its payload.
fn run_job<O: Operation + ?Sized>(op: &mut O, f: &mut Frame) -> Why {
    let job = op.job(f);
    f.set_payload(Some(job()));
    Why::Done
}
