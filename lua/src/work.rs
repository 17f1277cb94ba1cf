//! Blocking work (name resolution, opening files) on a scheduler's thread
//! pool, as an engine operation: the C function's frame holds the job's
//! arguments; `make` builds the job from them, `finish` pushes the results
//! from its payload. In a cothread the job runs on the pool of the
//! cothread's scheduler while only that cothread waits; elsewhere it runs
//! in the calling thread. A cothread unscheduled meanwhile leaves the wait
//! at once (the job is cancelled if it has not started, its late payload
//! dropped) and, if scheduled again, its call returns `"cancelled"`.

use std::ffi::{CStr, c_int};

use crate::engine::{Frame, Job, Next, Operation, Payload, Why};
use crate::park::drive;

/// Builds the job from the frame (raw reads only: it must not raise).
pub type MakeJob = unsafe fn(&Frame) -> Job;

/// Pushes a call's results for the job's payload (or the message of a wait
/// that ended without one) above the frame; returns how many.
pub type Finish = unsafe fn(&Frame, Result<&mut Payload, &'static CStr>) -> c_int;

#[derive(Clone, Copy)]
struct JobOp {
    make: MakeJob,
    finish: Finish,
}

impl Operation for JobOp {
    unsafe fn step(&mut self, f: &mut Frame, why: Why) -> Next {
        // SAFETY: the frame of the C function that called `call`; the
        // payload stays in the engine's record or the holder while
        // `finish` pushes.
        unsafe {
            let r = match why {
                Why::Start => return Next::Job,
                Why::Done => f.payload().ok_or(c"cancelled"),
                Why::Failed(m) => Err(m),
                Why::Timeout => Err(c"timeout"),
                Why::Ready | Why::Closed | Why::Cancelled => Err(c"cancelled"),
            };
            Next::Done((self.finish)(f, r))
        }
    }

    unsafe fn job(&mut self, f: &Frame) -> Job {
        // SAFETY: as `step` (`make`'s contract: raw reads only).
        unsafe { (self.make)(f) }
    }
}

/// Runs the job `make` builds and finishes the calling C function with
/// `finish`; the function returns what `call` returns.
///
/// # Safety
/// Called from a C function of the module whose stack is the job's frame.
pub unsafe fn call(l: crate::raw::L, make: MakeJob, finish: Finish) -> c_int {
    // SAFETY: as the contract says.
    unsafe { drive(l, JobOp { make, finish }) }
}
