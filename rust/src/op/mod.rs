//! Operation state machines: what happens to a task's await on a backend
//! operation (a libuv request or handle, or the built-in reactor's
//! equivalent) as callbacks, close callbacks and outside resumes come, so
//! that every callback fires exactly once and memory dies only after its
//! close callback (doc/c.md, "Operations awaited by a task"; after CoUtil's `loperaux.c`).
//!
//! The machines are sans-IO. Each event is a method that changes the state
//! and returns the [`Actions`] the driver must then perform, in [`Action`]
//! order; they never call the backend, never allocate, and do not know what
//! a task is. A driver owns the memory of the operations and the tasks,
//! performs the actions, and reports what the backend does: the built-in
//! reactor, or a libuv driver in C through the ABI.
//!
//! # Kinds of operation
//! - A **request** ([`Kind::Request`]; libuv's fs, getaddrinfo, work,
//!   connect, write): started once; its callback comes exactly once, also
//!   after a successful cancel. Its memory is the backend's until then.
//! - A **handle** ([`Kind::Handle`]; a timer, idle, signal, async): started,
//!   it calls back until stopped; it is released only by a close, whose close
//!   callback always comes later, never inside the close. Its memory is the
//!   backend's from init to the close callback. A [`HandleType`] is an
//!   opaque small number the driver chooses per handle type, so that the
//!   machine sees "the same type awaited again".
//! - An **object** ([`Object`]; a socket's read, a listener's accept): a
//!   handle bound to a system object, so it cannot be copied per task; one
//!   task waits on it at a time.
//!
//! # The slot
//! Each task owns one [`Slot`]: memory for one request or handle (in C, a
//! union of the `uv_req_t`s and `uv_handle_t`s the task may await) and this
//! machine's state. Since there is one memory, a new await must wait until
//! the backend gives the memory back: it is *deferred*, and starts in the
//! very callback or close callback that frees the memory.
//!
//! | state                     | the task                                  | the backend holds the memory until |
//! |---------------------------|-------------------------------------------|------------------------------------|
//! | `Freed`                   | anywhere                                  | -- (it is the driver's)            |
//! | `ReqAwaiting`             | suspended on the request                  | its callback                       |
//! | `ReqCompleted`            | resumed with the results                  | -- (the results may sit in it)     |
//! | `ReqCancelled`            | left it (resumed from outside)            | its callback, to be dropped        |
//! | `ReqResetting`            | suspended on a new, deferred operation    | the old callback; then it starts   |
//! | `HdlAwaiting`             | suspended on the handle                   | the close callback                 |
//! | `HdlCompleted`            | resumed with the event                    | the close callback                 |
//! | `HdlCancelled`            | left it; the cleanup callback is wanted   | callback, then close callback      |
//! | `HdlResettingAfterCancel` | suspended on a new, deferred operation    | same; then it starts               |
//! | `HdlClosing`              | anywhere, not on the slot                 | the close callback                 |
//! | `HdlResettingAfterClose`  | suspended on a new, deferred operation    | the close callback; then it starts |
//!
//! Events: **O** the task awaits ([`Slot::await_op`]), **C** the callback
//! ([`Slot::callback`]), **F** the close callback ([`Slot::close_callback`]),
//! **R** an outside resume ([`Slot::outside_resume`]), **Y** the task yields
//! elsewhere or ends ([`Slot::task_left`]), and one the spec leaves out: a
//! start failed synchronously ([`Slot::start_failed`]). The transitions
//! ("start" is [`Action::StartRequest`], or [`Action::StartHandle`]: init and
//! start a handle of the awaited type):
//!
//! | from                    | event          | to                      | actions                                 |
//! |-------------------------|----------------|-------------------------|-----------------------------------------|
//! | Freed, ReqCompleted     | O              | ReqAwaiting/HdlAwaiting | start                                   |
//! | ReqCancelled            | O              | ReqResetting            | -- (wait for the callback)              |
//! | HdlCompleted            | O same type    | HdlAwaiting             | `RearmHandle` (no close)                |
//! | HdlCompleted            | O other        | HdlResettingAfterClose  | `CloseHandle`                           |
//! | HdlCancelled            | O              | HdlResettingAfterCancel | -- (wait for the callback)              |
//! | HdlClosing              | O              | HdlResettingAfterClose  | -- (wait for the close callback)        |
//! | ReqAwaiting             | C              | ReqCompleted            | `Resume`                                |
//! | ReqCancelled            | C              | Freed                   | `DropResults`, `Release`                |
//! | ReqResetting            | C              | ReqAwaiting/HdlAwaiting | `DropResults`, start the deferred one   |
//! | HdlAwaiting             | C              | HdlCompleted            | `Resume`                                |
//! | HdlCancelled            | C              | HdlClosing              | `DropResults`, `CloseHandle`            |
//! | HdlResettingAfterCancel | C              | HdlResettingAfterClose  | `DropResults`, `CloseHandle`            |
//! | HdlClosing              | F              | Freed                   | `Release`                               |
//! | HdlResettingAfterClose  | F              | ReqAwaiting/HdlAwaiting | start the deferred one                  |
//! | ReqAwaiting             | R              | ReqCancelled            | `CancelRequest` unless `keep`           |
//! | ReqResetting            | R              | ReqCancelled            | -- (the deferred start is given up)     |
//! | HdlAwaiting             | R `keep`       | HdlCancelled            | --                                      |
//! | HdlAwaiting             | R, no `keep`   | HdlClosing              | `CloseHandle`                           |
//! | HdlResettingAfterCancel | R              | HdlCancelled            | -- (given up)                           |
//! | HdlResettingAfterClose  | R              | HdlClosing              | -- (given up)                           |
//! | ReqCompleted            | Y              | Freed                   | `Release`                               |
//! | HdlCompleted            | Y              | HdlClosing              | `CloseHandle` (not re-armed)            |
//! | *beyond the spec:*      |                |                         |                                         |
//! | HdlCompleted            | C              | HdlCompleted            | `DropResults`                           |
//! | ReqAwaiting             | start failed   | ReqCompleted            | `ResumeFailed` if deferred              |
//! | HdlAwaiting             | failed, open   | HdlCompleted            | `ResumeFailed` if deferred              |
//! | HdlAwaiting             | failed, closed | Freed                   | `Release`, `ResumeFailed` if deferred   |
//! | not waiting on the slot | R              | unchanged               | --                                      |
//! | Freed, Req/HdlCancelled | Y              | unchanged               | --                                      |
//! | HdlClosing              | Y              | unchanged               | --                                      |
//!
//! Anything else is impossible when the driver follows the rules (the task
//! awaits or leaves while suspended; a callback the backend cannot produce)
//! and returns [`OpError::Unexpected`], changing nothing. Nothing panics.
//!
//! **Who frees memory when.** The slot's memory belongs to the backend from
//! a start (or init) until the state is `Freed` again, which comes with
//! [`Action::Release`]: after the request's callback, or the handle's close
//! callback. A slot can outlive its task: a task that ends calls
//! [`Slot::task_left`] and leaves the slot and the memory to the driver until
//! the `Release`; the driver must keep delivering its callbacks.
//!
//! # Objects
//! An [`Object`] is `Ready` (stopped) when made. An await starts it
//! (`Awaiting`; a second task gets [`OpError::Busy`]); its callback resumes
//! the waiter (`Completed`, still started); the resumed task may await again
//! right away (`Awaiting`, no restart), else when it leaves the object stops
//! (`Ready`). An outside resume of the waiter stops it and the await returns
//! as cancelled. Closing (or collecting) it resumes the waiter, if any, with
//! "closed" ([`Action::ResumeClosed`]) and closes the handle; it is `Freed`,
//! with [`Action::Release`], after the close callback. Awaiting or closing a
//! closed object is [`OpError::Closed`].
//!
//! # libuv rules respected
//! - A request's callback runs exactly once, also after `uv_cancel` (with
//!   `UV_ECANCELED`), and `uv_cancel` may fail (not a thread-pool request,
//!   or already running): the machine only ever waits for the callback and
//!   never assumes the cancel worked.
//! - A handle is `uv_close`d at most once, and its memory reused or freed
//!   only after the close callback, which comes on a later iteration.
//!   Closing a stream runs its pending requests' callbacks (with
//!   `UV_ECANCELED`) before its close callback: for the slot of a task
//!   writing on it they are ordinary callbacks.
//! - A failed call never calls back: hence [`Slot::start_failed`].
//! - A start function may call back into the driver (an alloc callback):
//!   the machine has reached its new state before the driver performs any
//!   action, so re-entrant events are ordinary events. Likewise a driver may
//!   run the task inside a resume action, which always comes last.
//!
//! # Where the spec left room
//! - `keep` (the cancel hook's answer, CoUtil's `cancancel` returning 0)
//!   means "the callback is still wanted for cleanup". A request is then not
//!   cancelled but left to complete; without it, it is cancelled. In both
//!   cases its late callback comes as `DropResults` (the driver's cleanup:
//!   e.g. closing the fd of an open that completed anyway).
//! - `HdlCancelled` + O of the same type waits like any other await (spec),
//!   where CoUtil re-arms (its transition 19): the kept callback is thus
//!   always a cleanup callback, never results for the new await.
//! - A handle callback while `HdlCompleted` (a second signal or tick before
//!   the resumed task awaits again) is dropped: the task was resumed once
//!   for this await already. Handle events carry nothing to lose.
//! - R ignores `keep` in the resetting states: the old operation was
//!   already left, the new one never started.
//! - An object remembers its task by a `u64` token: R and Y name a task, so
//!   those of other tasks are no-ops. While `Completed`, any task may await
//!   (CoUtil: only a suspended waiter makes the object busy); the holder
//!   losing it then just leaves.

// Nothing here has a `repr` or is a public constant: cbindgen reads the
// whole crate and would put such items into `cothread.h`. The C ABI names
// these machines itself, in `ffi/`.
mod action;
mod object;
mod slot;

// The model tests run as tests and, under `cargo fuzz` (which sets
// `--cfg fuzzing`), as fuzz targets reading every choice from the input.
#[cfg(any(test, fuzzing))]
mod model;
#[cfg(any(test, fuzzing))]
mod tests;
#[cfg(fuzzing)]
#[doc(hidden)]
pub use model::{fuzz_objects, fuzz_slots};

use std::fmt;

pub use action::{Action, Actions, Iter};
pub use object::{ObjEvent, ObjState, Object};
pub use slot::{Event, Slot, State};

/// The type of a handle, as the driver numbers them (a libuv `uv_handle_type`,
/// a reactor's kind of timer): only compared for equality.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct HandleType(pub u32);

/// What a task awaits in its slot.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Kind {
    /// A request: one callback.
    Request,
    /// A handle of this type: callbacks until stopped or closed.
    Handle(HandleType),
}

/// Why a machine refused an event. It changed nothing.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum OpError {
    /// The event cannot happen in this state when the driver follows the
    /// rules (a callback for a freed slot, an await by a suspended task).
    Unexpected {
        /// The name of the machine's state.
        state: &'static str,
        /// The name of the event.
        event: &'static str,
    },
    /// Another task waits on the object.
    Busy,
    /// The object is closed.
    Closed,
}

impl fmt::Display for OpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpError::Unexpected { state, event } => write!(f, "unexpected {event} in state {state}"),
            OpError::Busy => f.write_str("another task waits on the object"),
            OpError::Closed => f.write_str("the object is closed"),
        }
    }
}

impl std::error::Error for OpError {}

impl From<OpError> for crate::Error {
    /// `Busy` is `COT_EBUSY`, `Closed` `COT_EBADF` (as libuv answers for a
    /// closed stream), a driver's unexpected event `COT_EINVAL`.
    fn from(e: OpError) -> crate::Error {
        match e {
            OpError::Busy => crate::Error::Busy,
            OpError::Closed => crate::Error::BadF,
            OpError::Unexpected { .. } => crate::Error::Inval,
        }
    }
}
