//! What the engine drives: a kind of operation ([`Operation`]). A kind is a
//! small struct (a socket receive, a select, a pool job, ...) with a step
//! function; see `frame` for where its step runs and what it is told.

use std::ffi::CStr;
use std::os::fd::RawFd;

use cothread::reactor::Loop;

use super::block;
use super::event::{Fire, OnEnd};
use super::frame::{Frame, Job, Next, Why, cannot_block};
use super::source::Source;

/// One kind of operation. Implementations are plain data (the driver keeps
/// one on the Rust stack while a step may raise, which skips destructors);
/// the engine boxes it while its cothread is parked.
pub trait Operation {
    /// Goes on after `why` (see the module documentation for where the
    /// frame is). Pushes the results and answers `Done(n)`, or says what to
    /// wait for. `Cancelled` and `Failed` must answer `Done`.
    fn step(&mut self, f: &mut Frame, why: Why) -> Next;

    /// Calls `each(source, descriptor, direction)` for every source it waits
    /// on (descriptor -1: a channel). The engine attaches them when the
    /// operation parks; outside cothreads `block` polls their descriptors.
    /// It must not raise.
    fn sources(&self, f: &Frame, each: &mut dyn FnMut(&Source, RawFd, u32)) {
        let _ = (f, each);
    }

    /// The job a step asked for with `Next::Job`, made when it can be handed
    /// over at once. It must not raise.
    fn job(&mut self, f: &Frame) -> Job {
        let _ = f;
        Box::new(|| Box::new(()))
    }

    /// Starts the outside event a step asked for with `Next::Event`: makes
    /// the loop handles whose callbacks end the wait with `fire`, and
    /// returns what closes them (it runs however the wait ends).
    fn start(&mut self, f: &Frame, lp: &mut Loop, fire: Fire) -> Result<OnEnd, &'static CStr> {
        let _ = (f, lp, fire);
        Err(c"nothing to wait for")
    }

    /// Outside cothreads: waits in this thread for what `next` asks, and
    /// says why the step runs again. By default it polls the sources'
    /// descriptors (`Wait`) or runs the job here (`Job`); an `Event` needs
    /// its own way.
    fn block(&mut self, f: &mut Frame, next: Next) -> Why {
        block_default(self, f, next)
    }
}

/// The default `Operation::block`, for `op` whose frame is `f` on the
/// caller's thread: polls the sources' descriptors (`Wait`) or runs the job
/// here (`Job`). A kind with its own blocking wait may call it for the
/// other cases.
pub fn block_default<O: Operation + ?Sized>(op: &mut O, f: &mut Frame, next: Next) -> Why {
    match next {
        Next::Wait(deadline) => block::poll(deadline, |each| op.sources(f, each)),
        Next::Sleep(until) => block::poll(Some(until), |_| {}),
        Next::Job => block::run_job(f, |f| op.job(f)),
        Next::Event(_) | Next::Done(_) => cannot_block(),
    }
}
