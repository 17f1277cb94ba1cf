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
        Next::Wait(deadline) => poll(op, f, deadline),
        Next::Job => run_job(op, f),
        Next::Event(_) | Next::Done(_) => cannot_block(),
    }
}

/// Blocks until a descriptor of `op` is ready or `deadline` (monotonic ns).
fn poll<O: Operation + ?Sized>(op: &mut O, f: &Frame, deadline: Option<u64>) -> Why {
    let mut fds: Vec<libc::pollfd> = Vec::new();
    op.sources(f, &mut |_, fd, dir| {
        if fd >= 0 {
            fds.push(sys::pollfd(fd, if dir == super::READ { sys::POLL_IN } else { sys::POLL_OUT }));
        }
    });
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

/// Runs `op`'s job here; the step gets its payload.
fn run_job<O: Operation + ?Sized>(op: &mut O, f: &mut Frame) -> Why {
    let job = op.job(f);
    f.set_payload(Some(job()));
    Why::Done
}
