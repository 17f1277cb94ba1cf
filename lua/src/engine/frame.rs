//! The words of a step: what it is told ([`Why`]) and answers ([`Next`]),
//! where it finds its frame ([`Frame`]), what a job or an outside event
//! hands it ([`Payload`]), and the time helpers its deadlines use.
//!
//! A step runs in three places, always with its frame (the call's arguments
//! and state slots) at `base + 1 ..= base + height` of the stack it pushes
//! on:
//! - in the C function itself, first (`base` 0: the function's own stack);
//! - in the engine, for a parked cothread that the resume loop takes: the
//!   frame moves from the cothread's stack onto the stack of the thread in
//!   `run` or `step`, then the results (or the frame, to wait again) move
//!   back;
//! - outside cothreads, after `block` waited in this thread.
//!
//! So one step function serves every context. Its results are the top `n`
//! values when it answers `Done(n)`.

use std::any::Any;
use std::ffi::{CStr, c_int};

use crate::lua::Lua;

/// A value a pool job or an outside event hands to its operation.
pub type Payload = Box<dyn Any + Send>;
/// Work for the thread pool (it must not touch Lua); what it returns is the
/// operation's payload.
pub type Job = Box<dyn FnOnce() -> Payload + Send>;

/// Why a step runs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Why {
    /// The call begins.
    Start,
    /// A source it waits on is ready (or was closed: a step reading it
    /// finds out).
    Ready,
    /// Its job, or the outside event it waited for, is done: the payload,
    /// if any, is in the frame.
    Done,
    /// A source it waits on was closed (by another cothread, or collected).
    Closed,
    /// Its deadline passed.
    Timeout,
    /// Its cothread left the wait (unscheduled, suspended, or its wait could
    /// not go on). The step must answer `Done`.
    Cancelled,
    /// The wait could not start or failed (the message says why). The step
    /// must answer `Done`.
    Failed(&'static CStr),
}

impl Why {
    /// The stronger of two events that came for one operation before it
    /// could step: a cancel beats everything, a deadline loses to anything
    /// (what became ready in the same loop turn is not thrown away).
    pub fn merge(old: Option<Why>, new: Why) -> Why {
        let rank = |w: Why| match w {
            Why::Timeout => 0,
            Why::Start | Why::Ready => 1,
            Why::Done => 2,
            Why::Closed => 3,
            Why::Failed(_) => 4,
            Why::Cancelled => 5,
        };
        match old {
            Some(o) if rank(o) >= rank(new) => o,
            _ => new,
        }
    }
}

/// What a step asks for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Next {
    /// Done: its `n` results are on the top of the stack.
    Done(c_int),
    /// Wait until one of its sources is ready, or the deadline (monotonic
    /// ns; `None`: none).
    Wait(Option<u64>),
    /// Run its job (`Operation::job`) on the thread pool, then step with
    /// `Why::Done` and the job's payload.
    Job,
    /// Wait for its outside event (`Operation::start`), or the deadline.
    Event(Option<u64>),
    /// Wait for nothing but this time (monotonic ns), its sources unwatched
    /// (an accept out of descriptors, whose listener stays readable); it
    /// steps then with `Why::Timeout`. A later wait watches them again.
    Sleep(u64),
}

/// Where a step finds its frame and pushes its results.
pub struct Frame {
    /// The thread whose stack holds the frame; results go above it.
    pub lua: Lua,
    /// The slot below the frame's first (0 in the C function itself).
    pub base: c_int,
    /// The payload of a `Why::Done`, until the step takes it. A step that
    /// pushes while it reads the payload leaves it here (`parts`): the
    /// step then runs protected (`guard`), and the payload is dropped with
    /// the frame even if a push raises.
    payload: Option<Payload>,
}

impl Frame {
    /// The frame above slot `base` of the thread `lua`.
    pub fn new(lua: Lua, base: c_int) -> Frame {
        Frame { lua, base, payload: None }
    }

    /// The absolute index of frame slot `i` (1-based).
    #[inline]
    pub fn at(&self, i: c_int) -> c_int {
        self.base + i
    }

    /// Gives the step a `Why::Done` payload.
    pub fn set_payload(&mut self, p: Option<Payload>) {
        self.payload = p;
    }

    /// Takes the payload of a `Why::Done`, if any.
    pub fn take_payload(&mut self) -> Option<Payload> {
        self.payload.take()
    }

    /// Whether it holds a payload.
    pub fn has_payload(&self) -> bool {
        self.payload.is_some()
    }

    /// The thread and the payload (left in the frame), for a step that
    /// pushes what it reads there.
    pub fn parts(&mut self) -> (&mut Lua, Option<&mut Payload>) {
        (&mut self.lua, self.payload.as_mut())
    }
}

/// The frame's thread, for what takes a handle by `Borrow`
/// (`state::with_resuming`, which finds the cothread parking).
impl std::borrow::Borrow<Lua> for &mut Frame {
    fn borrow(&self) -> &Lua {
        &self.lua
    }
}

/// Free stack slots a step may use above its frame (results included); a
/// step that pushes more checks for them itself. Small enough that a frame
/// of a few slots fits in a C function's `LUA_MINSTACK`: stepping on the
/// thread in `run` then does not grow its stack (which the collector shrinks
/// again, and the allocator's heap with it, at every cycle).
pub const STEP_SLOTS: c_int = 12;

/// What `Operation::block` of a kind without its own blocking wait answers
/// to an `Event`.
pub fn cannot_block() -> Why {
    Why::Failed(c"only a cothread can wait for this")
}

/// Seconds (a Lua number) as nanoseconds, rounded up; negative and NaN
/// count as 0, and a time beyond `u64` as its largest value (a deadline
/// that never comes). Each face maps its own convention for "no limit"
/// (LuaSocket's nil or negative timeout) before calling it.
pub fn ns_of(secs: f64) -> u64 {
    if secs.is_nan() || secs <= 0.0 {
        return 0;
    }
    let ns = (secs * 1e9).ceil();
    if ns >= u64::MAX as f64 { u64::MAX } else { ns as u64 }
}

/// The deadline `ns` from now (monotonic ns), saturating.
pub fn deadline_in(ns: u64) -> u64 {
    cothread::time::monotonic_ns().saturating_add(ns)
}

/// LuaSocket's timeout in seconds as nanoseconds: NaN or negative means no
/// limit (None).
pub fn timeout_ns(secs: f64) -> Option<u64> {
    (secs >= 0.0).then(|| ns_of(secs))
}

/// The deadline of a call with LuaSocket's total timeout `total` (seconds;
/// negative: none).
pub fn call_deadline(total: f64) -> Option<u64> {
    timeout_ns(total).map(deadline_in)
}

/// The deadline of the next wait of a call whose deadline is `call`, on an
/// object whose timeout per wait is `block` (LuaSocket's seconds): the
/// nearer of the two; `Err` if it has passed already (the call fails
/// without waiting, as LuaSocket's with timeout 0).
pub fn next_deadline(block: f64, call: Option<u64>) -> Result<Option<u64>, ()> {
    let block = timeout_ns(block);
    if call.is_none() && block.is_none() {
        return Ok(None); // no timeout: no need to read the clock
    }
    let now = cothread::time::monotonic_ns();
    let each = block.map(|ns| now.saturating_add(ns));
    let d = match (call, each) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    match d {
        Some(d) if d <= now => Err(()),
        d => Ok(d),
    }
}

/// A payload downcast to `T`, if it is one.
pub fn payload_as<T: Any>(p: Option<Payload>) -> Option<T> {
    p?.downcast::<T>().ok().map(|b| *b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_keeps_the_strongest_event() {
        assert_eq!(Why::merge(None, Why::Timeout), Why::Timeout);
        assert_eq!(Why::merge(Some(Why::Timeout), Why::Ready), Why::Ready, "readiness beats the deadline");
        assert_eq!(Why::merge(Some(Why::Ready), Why::Timeout), Why::Ready);
        assert_eq!(Why::merge(Some(Why::Done), Why::Cancelled), Why::Cancelled);
        assert_eq!(Why::merge(Some(Why::Cancelled), Why::Ready), Why::Cancelled);
        assert_eq!(Why::merge(Some(Why::Ready), Why::Closed), Why::Closed);
    }

    #[test]
    fn seconds_become_nanoseconds_rounded_up() {
        assert_eq!(ns_of(1.5), 1_500_000_000);
        assert_eq!(ns_of(1e-10), 1);
        assert_eq!(ns_of(-1.0), 0);
        assert_eq!(ns_of(f64::NAN), 0);
        assert_eq!(ns_of(f64::INFINITY), u64::MAX);
        assert_eq!(ns_of(1e300), u64::MAX);
    }

    #[test]
    fn a_wait_ends_at_the_nearer_deadline() {
        assert_eq!(next_deadline(-1.0, None), Ok(None), "no timeout at all");
        assert_eq!(next_deadline(0.0, None), Err(()), "timeout 0 never waits");
        assert_eq!(next_deadline(-1.0, Some(1)), Err(()), "a call deadline passed");
        let far = deadline_in(3_600_000_000_000);
        let d = next_deadline(1.0, Some(far)).unwrap().unwrap();
        assert!(d < far, "the block timeout is nearer than the call's");
        assert_eq!(next_deadline(7200.0, Some(far)), Ok(Some(far)));
        assert_eq!(timeout_ns(f64::NAN), None);
    }
}
