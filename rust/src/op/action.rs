//! What a machine asks its driver to do: [`Action`]s, and the small set of
//! them one event yields ([`Actions`]).

use std::fmt;

/// One thing the driver must do. The discriminants are the execution order
/// and the bit numbers of [`Actions::bits`] (stable, for the C ABI).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Action {
    /// The callback's values are not for the task: drop them, after running
    /// whatever cleanup they need (close an fd a late open returned, free
    /// buffers). Only answers a callback.
    DropResults = 0,
    /// `uv_cancel` the started request. It may fail (the request already
    /// runs, or is not a thread-pool one): harmless, the callback comes anyway.
    CancelRequest = 1,
    /// Stop the handle (`uv_<handle>_stop`, `uv_read_stop`): it no longer
    /// calls back until started again. Objects only.
    StopHandle = 2,
    /// `uv_close` the handle. Its close callback comes later, never inside.
    CloseHandle = 3,
    /// Start the request in the slot's memory (`uv_<request>(...)`). If that
    /// fails synchronously, report it with `start_failed`.
    StartRequest = 4,
    /// Slot: init and start a fresh handle of [`Slot::handle_type`] in the
    /// slot's memory. Object: start the object's operation (`uv_read_start`).
    /// If that fails synchronously, report it with `start_failed`.
    ///
    /// [`Slot::handle_type`]: super::Slot::handle_type
    StartHandle = 5,
    /// Re-arm the open handle for the new await (stop and start again if
    /// its parameters changed; nothing if it is still active and unchanged).
    /// If that fails, report it with `start_failed`.
    RearmHandle = 6,
    /// Nothing of the backend refers to the memory any more: the driver may
    /// free or reuse it. Comes with every transition to `Freed`.
    Release = 7,
    /// Resume the task, delivering the callback's values.
    Resume = 8,
    /// Resume the task with the error of the deferred start that just failed.
    ResumeFailed = 9,
    /// Resume the object's waiter with "closed".
    ResumeClosed = 10,
}

/// Every action, in execution order.
const ORDER: [Action; 11] = [
    Action::DropResults,
    Action::CancelRequest,
    Action::StopHandle,
    Action::CloseHandle,
    Action::StartRequest,
    Action::StartHandle,
    Action::RearmHandle,
    Action::Release,
    Action::Resume,
    Action::ResumeFailed,
    Action::ResumeClosed,
];

impl Action {
    /// The action with discriminant `n`.
    #[inline]
    pub fn from_index(n: u8) -> Option<Action> {
        ORDER.get(n as usize).copied()
    }

    /// Whether the action resumes a task (always last in its [`Actions`]).
    #[inline]
    pub fn resumes(self) -> bool {
        matches!(self, Action::Resume | Action::ResumeFailed | Action::ResumeClosed)
    }

    #[inline]
    const fn bit(self) -> u16 {
        1 << self as u8
    }
}

/// The actions one event asks for: a set, performed in [`Action`] order
/// (cleanup, cancel/stop/close, start, release, then resume). A resume is
/// always last, so a driver may run the task right inside it, as CoUtil
/// does: the machine is already in its new state, and events the task
/// causes meanwhile are ordinary events.
#[must_use = "the driver must perform every action"]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Actions(u16);

impl Actions {
    /// Nothing to do.
    #[inline]
    pub const fn none() -> Actions {
        Actions(0)
    }

    /// The set of the given actions.
    #[inline]
    pub const fn of(list: &[Action]) -> Actions {
        let mut bits = 0;
        let mut i = 0;
        while i < list.len() {
            bits |= list[i].bit();
            i += 1;
        }
        Actions(bits)
    }

    /// This set plus `a`.
    #[inline]
    pub const fn with(self, a: Action) -> Actions {
        Actions(self.0 | a.bit())
    }

    /// Whether `a` is in the set.
    #[inline]
    pub const fn contains(self, a: Action) -> bool {
        self.0 & a.bit() != 0
    }

    /// Whether there is nothing to do.
    #[inline]
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// How many actions there are.
    #[inline]
    pub const fn len(self) -> usize {
        self.0.count_ones() as usize
    }

    /// The set as bits, bit `n` for the action with discriminant `n`.
    #[inline]
    pub const fn bits(self) -> u16 {
        self.0
    }

    /// The actions in execution order.
    #[inline]
    pub fn iter(self) -> Iter {
        Iter(self.0)
    }
}

impl IntoIterator for Actions {
    type Item = Action;
    type IntoIter = Iter;

    fn into_iter(self) -> Iter {
        self.iter()
    }
}

impl fmt::Debug for Actions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Iterator over [`Actions`], in execution order.
#[derive(Clone, Debug)]
pub struct Iter(u16);

impl Iterator for Iter {
    type Item = Action;

    #[inline]
    fn next(&mut self) -> Option<Action> {
        if self.0 == 0 {
            return None;
        }
        let n = self.0.trailing_zeros() as usize;
        self.0 &= self.0 - 1;
        Some(ORDER[n])
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.0.count_ones() as usize;
        (n, Some(n))
    }
}

impl ExactSizeIterator for Iter {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discriminants_are_the_execution_order() {
        for (i, a) in ORDER.iter().enumerate() {
            assert_eq!(*a as usize, i);
            assert_eq!(Action::from_index(i as u8), Some(*a));
        }
        assert_eq!(Action::from_index(11), None);
        // Resumes come last.
        let first_resume = ORDER.iter().position(|a| a.resumes()).unwrap();
        assert!(ORDER[first_resume..].iter().all(|a| a.resumes()));
    }

    #[test]
    fn a_set_iterates_in_order_whatever_the_insertion_order() {
        let s = Actions::of(&[Action::Resume, Action::Release, Action::DropResults]);
        assert_eq!(s.iter().collect::<Vec<_>>(), [Action::DropResults, Action::Release, Action::Resume]);
        assert_eq!(s.len(), 3);
        assert_eq!(s.iter().len(), 3);
        assert!(s.contains(Action::Release) && !s.contains(Action::StopHandle));
        assert_eq!(s.bits(), 1 | 1 << 7 | 1 << 8);
        assert_eq!(Actions::none().with(Action::CloseHandle), Actions::of(&[Action::CloseHandle]));
        assert!(Actions::none().is_empty() && Actions::none().iter().next().is_none());
        assert_eq!(format!("{s:?}"), "[DropResults, Release, Resume]");
    }
}
