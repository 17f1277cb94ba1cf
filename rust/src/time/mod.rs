//! Time: the clock a scheduler reads (monotonic by default, injectable) and the
//! timer heap behind its postponed queue.

mod clock;
pub(crate) mod heap;

pub use clock::Clock;

/// The default clock: `CLOCK_MONOTONIC` in nanoseconds.
pub fn monotonic_ns() -> u64 {
    crate::util::os::monotonic_ns()
}
