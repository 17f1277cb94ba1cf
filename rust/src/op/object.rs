//! The object machine: one handle bound to a system object (a socket's read,
//! a listener's accept), awaited by one task at a time. See the
//! [module documentation](super).

use super::OpError;
use super::action::{Action, Actions};

/// The state of an [`Object`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum ObjState {
    /// Open and stopped; nobody waits.
    Ready = 0,
    /// Started; a task waits for its callback.
    Awaiting = 1,
    /// The callback resumed the waiter; still started, so that it may await
    /// again from its resumption without a restart.
    Completed = 2,
    /// Closed (by `close` or collection); the close callback is due.
    Closing = 3,
    /// The close callback came; the memory may be freed.
    Freed = 4,
}

/// Every state, in discriminant order.
const STATES: [ObjState; 5] =
    [ObjState::Ready, ObjState::Awaiting, ObjState::Completed, ObjState::Closing, ObjState::Freed];

impl ObjState {
    /// The state with discriminant `n` (stable, for the C ABI).
    #[inline]
    pub fn from_index(n: u8) -> Option<ObjState> {
        STATES.get(n as usize).copied()
    }

    /// The state's name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            ObjState::Ready => "Ready",
            ObjState::Awaiting => "Awaiting",
            ObjState::Completed => "Completed",
            ObjState::Closing => "Closing",
            ObjState::Freed => "Freed",
        }
    }

    /// Whether the object was closed (`Closing` or `Freed`).
    #[inline]
    pub fn is_closed(self) -> bool {
        matches!(self, ObjState::Closing | ObjState::Freed)
    }
}

/// An event of an [`Object`]. Tasks are named by a `u64` token of the
/// driver's choice (e.g. [`Task::to_raw`](crate::Task::to_raw)).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum ObjEvent {
    /// The task awaits the object.
    Await(u64),
    /// The handle's callback came.
    Callback,
    /// The object is closed or collected.
    Close,
    /// The handle's close callback came.
    CloseCallback,
    /// The task is resumed from outside.
    OutsideResume(u64),
    /// The task suspends on something else, or ends.
    TaskLeft(u64),
    /// The start just asked for failed synchronously.
    StartFailed,
}

impl ObjEvent {
    /// The event's name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            ObjEvent::Await(_) => "await",
            ObjEvent::Callback => "callback",
            ObjEvent::Close => "close",
            ObjEvent::CloseCallback => "close callback",
            ObjEvent::OutsideResume(_) => "outside resume",
            ObjEvent::TaskLeft(_) => "task left",
            ObjEvent::StartFailed => "start failed",
        }
    }
}

/// The machine of one object. See the [module documentation](super).
///
/// ```
/// use cothread::op::{Action, Actions, ObjState, Object, OpError};
/// let mut sock = Object::new(); // the driver has just initialized the handle
/// assert_eq!(sock.await_op(1), Ok(Actions::of(&[Action::StartHandle])));
/// assert_eq!(sock.await_op(2), Err(OpError::Busy));
/// assert_eq!(sock.close(), Ok(Actions::of(&[Action::CloseHandle, Action::ResumeClosed])));
/// assert_eq!(sock.await_op(1), Err(OpError::Closed));
/// assert_eq!(sock.close_callback(), Ok(Actions::of(&[Action::Release])));
/// assert_eq!(sock.state(), ObjState::Freed);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Object {
    state: ObjState,
    /// The waiter (`Awaiting`) or the task it resumed (`Completed`).
    task: u64,
    /// The last event asked for a start (only then may it fail).
    starting: bool,
}

/// Marks the words of an object in C memory.
const WORD_TAG: u64 = 0xc07e_0b1e;

impl Default for Object {
    fn default() -> Object {
        Object::new()
    }
}

impl Object {
    /// A `Ready` object: its handle is initialized, and stopped.
    pub const fn new() -> Object {
        Object { state: ObjState::Ready, task: 0, starting: false }
    }

    /// The object as two words, for C memory (`cot_object`).
    pub fn to_words(&self) -> [u64; 2] {
        [WORD_TAG << 16 | (self.starting as u64) << 8 | self.state as u64, self.task]
    }

    /// The object stored by `to_words`; `None` for anything else.
    pub fn from_words(w: [u64; 2]) -> Option<Object> {
        if w[0] >> 16 != WORD_TAG || w[0] & 0xfe00 != 0 {
            return None;
        }
        let state = ObjState::from_index((w[0] & 0xff) as u8)?;
        Some(Object { state, task: w[1], starting: w[0] >> 8 & 1 == 1 })
    }

    /// The current state.
    #[inline]
    pub fn state(&self) -> ObjState {
        self.state
    }

    /// Whether the object was closed.
    #[inline]
    pub fn is_closed(&self) -> bool {
        self.state.is_closed()
    }

    /// The task suspended on the object (`Awaiting`).
    #[inline]
    pub fn waiter(&self) -> Option<u64> {
        (self.state == ObjState::Awaiting).then_some(self.task)
    }

    /// The task the callback resumed and that has not left yet (`Completed`).
    #[inline]
    pub fn holder(&self) -> Option<u64> {
        (self.state == ObjState::Completed).then_some(self.task)
    }

    /// Task `task` awaits the object: started if stopped, kept started if the
    /// task the callback resumed (or any other task) awaits right away.
    /// [`OpError::Busy`] if another task is suspended on it,
    /// [`OpError::Closed`] once closed.
    #[inline]
    pub fn await_op(&mut self, task: u64) -> Result<Actions, OpError> {
        self.apply(ObjEvent::Await(task))
    }

    /// The handle's callback came: resumes the waiter with its values. `Err`
    /// when nobody waits: also in `Completed`, where the resumed task has not
    /// run yet. A driver that does not run the task inside
    /// [`Action::Resume`] must keep such values (or stop the handle) itself:
    /// libuv's `uv_read` may call back several times in one go.
    #[inline]
    pub fn callback(&mut self) -> Result<Actions, OpError> {
        self.apply(ObjEvent::Callback)
    }

    /// The object is closed, or collected: the waiter, if any, is resumed
    /// with "closed", and the handle closed. [`OpError::Closed`] if it was.
    #[inline]
    pub fn close(&mut self) -> Result<Actions, OpError> {
        self.apply(ObjEvent::Close)
    }

    /// The handle's close callback came: the object is `Freed`.
    #[inline]
    pub fn close_callback(&mut self) -> Result<Actions, OpError> {
        self.apply(ObjEvent::CloseCallback)
    }

    /// Task `task` is resumed from outside: if it waits on the object, the
    /// object stops and the await returns as cancelled. A no-op otherwise.
    #[inline]
    pub fn outside_resume(&mut self, task: u64) -> Result<Actions, OpError> {
        self.apply(ObjEvent::OutsideResume(task))
    }

    /// Task `task` suspends on something else, or ends: if the callback
    /// resumed it and it did not await again, the object stops. A no-op for
    /// other tasks; `Err` for the suspended waiter itself.
    #[inline]
    pub fn task_left(&mut self, task: u64) -> Result<Actions, OpError> {
        self.apply(ObjEvent::TaskLeft(task))
    }

    /// The [`Action::StartHandle`] just asked for failed: back to `Ready`, and
    /// the driver returns the error from the await (the task never
    /// suspended). `Err` unless the last event asked for a start.
    #[inline]
    pub fn start_failed(&mut self) -> Result<Actions, OpError> {
        self.apply(ObjEvent::StartFailed)
    }

    /// Applies one event. On `Err` nothing changes.
    pub fn apply(&mut self, event: ObjEvent) -> Result<Actions, OpError> {
        use Action::*;
        use ObjEvent as E;
        use ObjState::*;
        let none = Actions::none();
        let mut o = Object { starting: false, ..*self };
        let actions = match (self.state, event) {
            (Ready, E::Await(t)) => {
                o.starting = true;
                o.go(Awaiting, t, Actions::of(&[StartHandle]))
            }
            (Awaiting, E::Await(_)) => return Err(OpError::Busy),
            (Completed, E::Await(t)) => o.go(Awaiting, t, none),
            (Closing | Freed, E::Await(_) | E::Close) => return Err(OpError::Closed),

            (Awaiting, E::Callback) => o.go(Completed, self.task, Actions::of(&[Resume])),

            (Ready | Completed, E::Close) => o.go(Closing, 0, Actions::of(&[CloseHandle])),
            (Awaiting, E::Close) => o.go(Closing, 0, Actions::of(&[CloseHandle, ResumeClosed])),
            (Closing, E::CloseCallback) => o.go(Freed, 0, Actions::of(&[Release])),

            (Awaiting, E::OutsideResume(t)) if t == self.task => o.go(Ready, 0, Actions::of(&[StopHandle])),
            (Completed, E::TaskLeft(t)) if t == self.task => o.go(Ready, 0, Actions::of(&[StopHandle])),
            (Awaiting, E::TaskLeft(t)) if t == self.task => {
                return Err(OpError::Unexpected { state: self.state.name(), event: event.name() });
            }
            (_, E::OutsideResume(_) | E::TaskLeft(_)) => none,

            (Awaiting, E::StartFailed) if self.starting => o.go(Ready, 0, none),

            (state, event) => return Err(OpError::Unexpected { state: state.name(), event: event.name() }),
        };
        *self = o;
        Ok(actions)
    }

    #[inline]
    fn go(&mut self, state: ObjState, task: u64, actions: Actions) -> Actions {
        self.state = state;
        self.task = task;
        actions
    }
}
