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
use crate::lua::{Lua, Ret};
use crate::park::drive;

/// Builds the job from the frame (its arguments, already checked).
pub type MakeJob = fn(&Frame) -> Job;

/// Pushes a call's results for the job's payload (or the message of a wait
/// that ended without one) above the frame, whose slot `i` is `base + i`;
/// returns how many. The payload stays the frame's while it pushes.
pub type Finish = fn(&mut Lua, c_int, Result<&mut Payload, &'static CStr>) -> c_int;

#[derive(Clone, Copy)]
struct JobOp {
    make: MakeJob,
    finish: Finish,
}

impl Operation for JobOp {
    fn step(&mut self, f: &mut Frame, why: Why) -> Next {
        let base = f.base;
        let (lua, payload) = f.parts();
        let r = match why {
            Why::Start => return Next::Job,
            Why::Done => payload.ok_or(c"cancelled"),
            Why::Failed(m) => Err(m),
            Why::Timeout => Err(c"timeout"),
            Why::Ready | Why::Closed | Why::Cancelled => Err(c"cancelled"),
        };
        Next::Done((self.finish)(lua, base, r))
    }

    fn job(&mut self, f: &Frame) -> Job {
        (self.make)(f)
    }
}

/// Runs the job `make` builds and finishes the calling C function with
/// `finish`, whose results it answers. The stack is the job's frame.
pub fn call(lua: &mut Lua, make: MakeJob, finish: Finish) -> Ret {
    drive(lua, JobOp { make, finish })
}
