//! Task handles and the ways to place a task.

use std::num::NonZeroU64;

/// A handle to a task of one scheduler: its arena slot and the slot's
/// generation. Handles are plain values; a handle of a freed task (or of
/// another scheduler) is rejected with [`Error::Inval`](crate::Error::Inval).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Task(NonZeroU64);

impl Task {
    #[inline]
    pub(crate) fn new(index: u32, generation: u32) -> Task {
        let raw = (generation as u64) << 32 | index as u64;
        Task(NonZeroU64::new(raw).expect("generations are never 0"))
    }

    #[inline]
    pub(crate) fn index(self) -> u32 {
        self.0.get() as u32
    }

    #[inline]
    pub(crate) fn generation(self) -> u32 {
        (self.0.get() >> 32) as u32
    }

    /// The handle as the C ABI's `cot_task` (never 0).
    #[inline]
    pub fn to_raw(self) -> u64 {
        self.0.get()
    }

    /// A handle from a `cot_task`; `None` for 0.
    #[inline]
    pub fn from_raw(raw: u64) -> Option<Task> {
        NonZeroU64::new(raw).map(Task)
    }
}

/// Where `schedule` puts a task, or where `notify` moves a signal's waiters.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum When {
    /// At the head of the ready queue.
    Next,
    /// At the tail of the ready queue.
    Later,
    /// At the tail of the queue of this signal key (never 0).
    Wait(usize),
    /// In the postponed queue until the clock reaches this time (ns).
    Postpone(u64),
    /// In the postponed queue for this many nanoseconds from now.
    Delay(u64),
}

/// How a combined signal fires.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Mode {
    /// Once every part was notified (`onall`).
    All,
    /// Once any part was notified (`onany`).
    Any,
}
