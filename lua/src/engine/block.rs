//! Waiting outside cothreads (the main chunk, a plain coroutine, a
//! finalizer): the calling thread blocks, as LuaSocket does. A `Wait` polls
//! the operation's descriptors with `poll(2)` until one is ready or the
//! deadline passes; a `Job` runs in this thread. `op::block_default`
//! chooses between them.

use std::ffi::c_int;
use std::os::fd::RawFd;

use super::frame::{Frame, Job, Why};
use super::source::{READ, Source};
use crate::sys;

/// Blocks until a descriptor that `sources` lists is ready or `deadline`
/// (monotonic ns).
pub fn poll(deadline: Option<u64>, sources: impl FnOnce(&mut dyn FnMut(&Source, RawFd, u32))) -> Why {
    let mut fds: Vec<libc::pollfd> = Vec::new();
    sources(&mut |_, fd, dir| {
        if fd >= 0 {
            fds.push(sys::pollfd(fd, if dir == READ { sys::POLL_IN } else { sys::POLL_OUT }));
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

/// Runs the job that `job` makes here; the step gets its payload.
pub fn run_job(f: &mut Frame, job: impl FnOnce(&Frame) -> Job) -> Why {
    let job = job(f);
    f.set_payload(Some(job()));
    Why::Done
}
