//! A scheduler's clock: nanoseconds, never decreasing.

/// Where a scheduler reads the time. Times are `u64` nanoseconds; only their
/// order and differences matter to the core.
#[derive(Default)]
pub enum Clock {
    /// `CLOCK_MONOTONIC` (see [`super::monotonic_ns`]).
    #[default]
    Monotonic,
    /// A function supplied by the user (tests, simulations, a host's clock).
    Custom(Box<dyn FnMut() -> u64>),
}

impl Clock {
    /// The current time.
    #[inline]
    pub fn now(&mut self) -> u64 {
        match self {
            Clock::Monotonic => super::monotonic_ns(),
            Clock::Custom(f) => f(),
        }
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Clock::Monotonic => "Clock::Monotonic",
            Clock::Custom(_) => "Clock::Custom",
        })
    }
}
