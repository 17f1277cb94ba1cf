//! The built-in operations of a scheduler, by name: the yield operations
//! (`halt`, `yield`, `suspend`, `wait`, `postpone`, `delay`) and the `when`s
//! (`next`, `later`, `wait`, `postpone`, `delay`). Plain data: the state
//! caches their names' addresses, `ops` dispatches on them.

use std::ffi::{CStr, c_int};

/// The built-in operations. `Wait`, `Postpone` and `Delay` are both yield
/// operations and `when`s.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Builtin {
    Halt,
    Yield,
    Suspend,
    Wait,
    Postpone,
    Delay,
    Next,
    Later,
}

impl Builtin {
    pub const COUNT: usize = 8;
    pub const ALL: [Builtin; Builtin::COUNT] = [
        Builtin::Halt,
        Builtin::Yield,
        Builtin::Suspend,
        Builtin::Wait,
        Builtin::Postpone,
        Builtin::Delay,
        Builtin::Next,
        Builtin::Later,
    ];

    pub fn name(self) -> &'static CStr {
        match self {
            Builtin::Halt => c"halt",
            Builtin::Yield => c"yield",
            Builtin::Suspend => c"suspend",
            Builtin::Wait => c"wait",
            Builtin::Postpone => c"postpone",
            Builtin::Delay => c"delay",
            Builtin::Next => c"next",
            Builtin::Later => c"later",
        }
    }

    pub fn nfixed(self) -> c_int {
        matches!(self, Builtin::Wait | Builtin::Postpone | Builtin::Delay) as c_int
    }

    pub fn is_yield(self) -> bool {
        !matches!(self, Builtin::Next | Builtin::Later)
    }

    pub fn is_when(self) -> bool {
        matches!(self, Builtin::Next | Builtin::Later | Builtin::Wait | Builtin::Postpone | Builtin::Delay)
    }
}
