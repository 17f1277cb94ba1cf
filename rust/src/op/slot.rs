//! The per-task operation slot: the request / handle machine. See the
//! [module documentation](super) for the states and the table.

use super::action::{Action, Actions};
use super::{HandleType, Kind, OpError};

/// The state of a [`Slot`]. "Memory" is the slot's request or handle.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum State {
    /// Nothing started; the memory is the driver's.
    Freed = 0,
    /// A request runs and the task waits for its callback.
    ReqAwaiting = 1,
    /// The callback resumed the task; the backend is done with the memory.
    ReqCompleted = 2,
    /// The task left a running request; its callback is due, to be dropped.
    ReqCancelled = 3,
    /// As `ReqCancelled`, and the task waits for a new operation, which
    /// starts when the old callback comes.
    ReqResetting = 4,
    /// A handle is active and the task waits for its callback.
    HdlAwaiting = 5,
    /// The callback resumed the task; the handle is open (maybe active).
    HdlCompleted = 6,
    /// The task left an active handle whose callback the cancel hook keeps
    /// for cleanup; the handle closes after that callback.
    HdlCancelled = 7,
    /// As `HdlCancelled`, and the task waits for a new operation, which
    /// starts after the cleanup callback, the close and its close callback.
    HdlResettingAfterCancel = 8,
    /// The handle is closing; its close callback is due.
    HdlClosing = 9,
    /// As `HdlClosing`, and the task waits for a new operation, which starts
    /// when the close callback comes.
    HdlResettingAfterClose = 10,
}

/// Every state, in discriminant order.
const STATES: [State; 11] = [
    State::Freed,
    State::ReqAwaiting,
    State::ReqCompleted,
    State::ReqCancelled,
    State::ReqResetting,
    State::HdlAwaiting,
    State::HdlCompleted,
    State::HdlCancelled,
    State::HdlResettingAfterCancel,
    State::HdlClosing,
    State::HdlResettingAfterClose,
];

impl State {
    /// The state with discriminant `n` (stable, for the C ABI).
    #[inline]
    pub fn from_index(n: u8) -> Option<State> {
        STATES.get(n as usize).copied()
    }

    /// The state's name, as in the spec's table.
    pub fn name(self) -> &'static str {
        match self {
            State::Freed => "Freed",
            State::ReqAwaiting => "Req Awaiting",
            State::ReqCompleted => "Req Completed",
            State::ReqCancelled => "Req Cancelled",
            State::ReqResetting => "Req Resetting",
            State::HdlAwaiting => "Hdl Awaiting",
            State::HdlCompleted => "Hdl Completed",
            State::HdlCancelled => "Hdl Cancelled",
            State::HdlResettingAfterCancel => "Resetting-after-cancel",
            State::HdlClosing => "Hdl Closing",
            State::HdlResettingAfterClose => "Resetting-after-close",
        }
    }

    /// Whether the task is suspended on the slot (awaiting or resetting).
    #[inline]
    pub fn is_waiting(self) -> bool {
        matches!(
            self,
            State::ReqAwaiting
                | State::ReqResetting
                | State::HdlAwaiting
                | State::HdlResettingAfterCancel
                | State::HdlResettingAfterClose
        )
    }

    /// Whether the memory is an open handle (initialized, close callback not
    /// yet come).
    #[inline]
    pub fn has_handle(self) -> bool {
        self as u8 >= State::HdlAwaiting as u8
    }
}

/// An event of a [`Slot`]; [`Slot::apply`] takes one, the named methods
/// build them.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Event {
    /// O: the task awaits an operation of this kind.
    Await(Kind),
    /// C: the request's or handle's callback came.
    Callback,
    /// F: the handle's close callback came.
    CloseCallback,
    /// R: the task is resumed from outside; `keep` is the answer of its
    /// cancel hook, see [`Slot::outside_resume`].
    OutsideResume {
        /// The cancel hook keeps the callback for cleanup.
        keep: bool,
    },
    /// Y: the task suspends on something else, or ends.
    TaskLeft,
    /// The start just asked for failed synchronously; `open` tells whether
    /// a handle is open (see [`Slot::start_failed`]).
    StartFailed {
        /// The handle is initialized and must be closed one day.
        open: bool,
    },
}

impl Event {
    /// The event's name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Event::Await(_) => "await",
            Event::Callback => "callback",
            Event::CloseCallback => "close callback",
            Event::OutsideResume { .. } => "outside resume",
            Event::TaskLeft => "task left",
            Event::StartFailed { .. } => "start failed",
        }
    }
}

/// A task's operation slot: the state of the one request or handle the
/// task's memory holds. See the [module documentation](super).
///
/// ```
/// use cothread::op::{Action, Actions, HandleType, Kind, Slot, State};
/// let timer = HandleType(1);
/// let mut slot = Slot::new();
/// assert_eq!(slot.await_op(Kind::Handle(timer)), Ok(Actions::of(&[Action::StartHandle])));
/// assert_eq!(slot.callback(), Ok(Actions::of(&[Action::Resume])));
/// // Awaited again from its resumption: re-armed, no close.
/// assert_eq!(slot.await_op(Kind::Handle(timer)), Ok(Actions::of(&[Action::RearmHandle])));
/// // Resumed from outside; no cancel hook wants the callback: closed.
/// assert_eq!(slot.outside_resume(false), Ok(Actions::of(&[Action::CloseHandle])));
/// assert_eq!(slot.close_callback(), Ok(Actions::of(&[Action::Release])));
/// assert_eq!(slot.state(), State::Freed);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Slot {
    state: State,
    /// The open handle's type (`Hdl*` states).
    handle: HandleType,
    /// The deferred operation (resetting states).
    next: Kind,
    /// The last start was deferred: the task is already suspended (awaiting
    /// states; tells `start_failed` whether to resume).
    deferred: bool,
}

/// Marks the words of a slot in C memory ("C07E").
const WORD_TAG: u64 = 0xc07e_0005;

impl Default for Slot {
    fn default() -> Slot {
        Slot::new()
    }
}

impl Slot {
    /// A `Freed` slot.
    pub const fn new() -> Slot {
        Slot { state: State::Freed, handle: HandleType(0), next: Kind::Request, deferred: false }
    }

    /// The slot as two words, for C memory (`cot_op`): a tag, the state and
    /// flags in the first, the handle types in the second.
    pub fn to_words(&self) -> [u64; 2] {
        let (next_handle, next_type) = match self.next {
            Kind::Request => (0u64, 0u64),
            Kind::Handle(t) => (1, t.0 as u64),
        };
        let w0 = WORD_TAG << 16 | next_handle << 9 | (self.deferred as u64) << 8 | self.state as u64;
        [w0, next_type << 32 | self.handle.0 as u64]
    }

    /// The slot stored by `to_words`; `None` for anything else (memory never
    /// initialized, or overwritten).
    pub fn from_words(w: [u64; 2]) -> Option<Slot> {
        if w[0] >> 16 != WORD_TAG || w[0] & 0xfc00 != 0 {
            return None;
        }
        let state = State::from_index((w[0] & 0xff) as u8)?;
        let next_type = HandleType((w[1] >> 32) as u32);
        let next = if w[0] >> 9 & 1 == 1 { Kind::Handle(next_type) } else { Kind::Request };
        Some(Slot { state, handle: HandleType(w[1] as u32), next, deferred: w[0] >> 8 & 1 == 1 })
    }

    /// The current state.
    #[inline]
    pub fn state(&self) -> State {
        self.state
    }

    /// Whether the slot is `Freed`: nothing refers to its memory.
    #[inline]
    pub fn is_freed(&self) -> bool {
        self.state == State::Freed
    }

    /// Whether the task is suspended on the slot: an outside resume of the
    /// task makes its await return as cancelled.
    #[inline]
    pub fn is_waiting(&self) -> bool {
        self.state.is_waiting()
    }

    /// The type of the open handle in the memory: the one to init and start
    /// on [`Action::StartHandle`], or to re-arm, stop, close. `None` unless
    /// [`State::has_handle`]. In the resetting states this is still the old
    /// handle; see [`Slot::deferred`] for the next operation.
    #[inline]
    pub fn handle_type(&self) -> Option<HandleType> {
        self.state.has_handle().then_some(self.handle)
    }

    /// The operation the task waits to start, in the resetting states.
    #[inline]
    pub fn deferred(&self) -> Option<Kind> {
        matches!(self.state, State::ReqResetting | State::HdlResettingAfterCancel | State::HdlResettingAfterClose)
            .then_some(self.next)
    }

    /// O: the task awaits an operation of kind `op`. It starts at once if the
    /// memory is free (or is re-armed, for the same handle type right after
    /// completing); otherwise it is deferred until the old callback or close
    /// callback. Either way the task suspends (unless a start at once fails).
    /// `Err` if the task is already suspended on the slot.
    #[inline]
    pub fn await_op(&mut self, op: Kind) -> Result<Actions, OpError> {
        self.apply(Event::Await(op))
    }

    /// C: the callback of the request, or of the handle, came. The answer
    /// holds [`Action::Resume`] or [`Action::DropResults`], which says where
    /// its values go. `Err` if the backend cannot call back now (a driver
    /// bug; drop the values).
    #[inline]
    pub fn callback(&mut self) -> Result<Actions, OpError> {
        self.apply(Event::Callback)
    }

    /// F: the handle's close callback came. `Err` if no close was asked for.
    #[inline]
    pub fn close_callback(&mut self) -> Result<Actions, OpError> {
        self.apply(Event::CloseCallback)
    }

    /// R: the task is resumed for another reason than the slot's callback (an
    /// outside resume, a timeout, being unscheduled). The driver resumes it
    /// itself; if [`Slot::is_waiting`] was true, its await returns as
    /// cancelled. A no-op when the task is not suspended on the slot.
    ///
    /// `keep` is the answer of the operation's cancel hook (CoUtil's
    /// `cancancel` returning 0; no hook = `false`): the callback is still
    /// wanted, for cleanup. A request is then left to complete, instead of
    /// [`Action::CancelRequest`]; a handle is left active until its next
    /// callback, instead of [`Action::CloseHandle`]. Either way the late
    /// callback comes as [`Action::DropResults`].
    #[inline]
    pub fn outside_resume(&mut self, keep: bool) -> Result<Actions, OpError> {
        self.apply(Event::OutsideResume { keep })
    }

    /// Y: the task suspends on something else, or ends. A completed request
    /// releases the memory, a completed handle closes (not re-armed). A no-op
    /// in the states the task already left. `Err` if the task is suspended on
    /// the slot: resume it from outside first.
    ///
    /// A task that ends leaves the slot, with its memory, to the driver
    /// until [`Action::Release`].
    #[inline]
    pub fn task_left(&mut self) -> Result<Actions, OpError> {
        self.apply(Event::TaskLeft)
    }

    /// The start or re-arm just asked for failed synchronously, so no
    /// callback will come for it (libuv: a failed call never calls back).
    /// `open` tells whether a handle is initialized anyway (its start failed
    /// after a successful init, or a re-arm failed): it stays in the memory
    /// as `HdlCompleted` until the task leaves. A request, or a handle whose
    /// init failed, ends as `ReqCompleted` or `Freed` (with
    /// [`Action::Release`]). If the start was deferred, the task is
    /// suspended: the answer holds [`Action::ResumeFailed`]; otherwise the
    /// driver returns the error from the await. `Err` unless awaiting.
    #[inline]
    pub fn start_failed(&mut self, open: bool) -> Result<Actions, OpError> {
        self.apply(Event::StartFailed { open })
    }

    /// Applies one event: the transition table. On `Err` nothing changes.
    pub fn apply(&mut self, event: Event) -> Result<Actions, OpError> {
        use Action::*;
        use State::*;
        let none = Actions::none();
        let mut s = *self;
        let actions = match (self.state, event) {
            // ===== O: the task awaits =====
            (Freed | ReqCompleted, Event::Await(op)) => s.start(op, false),
            (HdlCompleted, Event::Await(Kind::Handle(t))) if t == self.handle => {
                s.deferred = false;
                s.go(HdlAwaiting, Actions::of(&[RearmHandle]))
            }
            (HdlCompleted, Event::Await(op)) => s.defer(HdlResettingAfterClose, op).with(CloseHandle),
            (ReqCancelled, Event::Await(op)) => s.defer(ReqResetting, op),
            (HdlCancelled, Event::Await(op)) => s.defer(HdlResettingAfterCancel, op),
            (HdlClosing, Event::Await(op)) => s.defer(HdlResettingAfterClose, op),

            // ===== C: the callback =====
            (ReqAwaiting, Event::Callback) => s.go(ReqCompleted, Actions::of(&[Resume])),
            (ReqCancelled, Event::Callback) => s.go(Freed, Actions::of(&[DropResults, Release])),
            (ReqResetting, Event::Callback) => s.start(self.next, true).with(DropResults),
            (HdlAwaiting, Event::Callback) => s.go(HdlCompleted, Actions::of(&[Resume])),
            // An event between the resumption and the next await: nobody waits.
            (HdlCompleted, Event::Callback) => Actions::of(&[DropResults]),
            (HdlCancelled, Event::Callback) => s.go(HdlClosing, Actions::of(&[DropResults, CloseHandle])),
            (HdlResettingAfterCancel, Event::Callback) => {
                s.go(HdlResettingAfterClose, Actions::of(&[DropResults, CloseHandle]))
            }

            // ===== F: the close callback =====
            (HdlClosing, Event::CloseCallback) => s.go(Freed, Actions::of(&[Release])),
            (HdlResettingAfterClose, Event::CloseCallback) => s.start(self.next, true),

            // ===== R: outside resume =====
            (ReqAwaiting, Event::OutsideResume { keep }) => {
                s.go(ReqCancelled, if keep { none } else { Actions::of(&[CancelRequest]) })
            }
            (ReqResetting, Event::OutsideResume { .. }) => s.go(ReqCancelled, none),
            (HdlAwaiting, Event::OutsideResume { keep: true }) => s.go(HdlCancelled, none),
            (HdlAwaiting, Event::OutsideResume { keep: false }) => s.go(HdlClosing, Actions::of(&[CloseHandle])),
            (HdlResettingAfterCancel, Event::OutsideResume { .. }) => s.go(HdlCancelled, none),
            (HdlResettingAfterClose, Event::OutsideResume { .. }) => s.go(HdlClosing, none),
            // The task is not suspended on the slot: not the slot's business.
            (
                Freed | ReqCompleted | ReqCancelled | HdlCompleted | HdlCancelled | HdlClosing,
                Event::OutsideResume { .. },
            ) => none,

            // ===== Y: the task leaves =====
            (ReqCompleted, Event::TaskLeft) => s.go(Freed, Actions::of(&[Release])),
            (HdlCompleted, Event::TaskLeft) => s.go(HdlClosing, Actions::of(&[CloseHandle])),
            (Freed | ReqCancelled | HdlCancelled | HdlClosing, Event::TaskLeft) => none,

            // ===== a start failed synchronously =====
            (ReqAwaiting, Event::StartFailed { .. }) => s.go(ReqCompleted, self.failed(none)),
            (HdlAwaiting, Event::StartFailed { open: true }) => s.go(HdlCompleted, self.failed(none)),
            (HdlAwaiting, Event::StartFailed { open: false }) => s.go(Freed, self.failed(Actions::of(&[Release]))),

            (state, event) => return Err(OpError::Unexpected { state: state.name(), event: event.name() }),
        };
        *self = s;
        Ok(actions)
    }

    #[inline]
    fn go(&mut self, state: State, actions: Actions) -> Actions {
        self.state = state;
        actions
    }

    /// Starts `op` in the free memory.
    #[inline]
    fn start(&mut self, op: Kind, deferred: bool) -> Actions {
        self.deferred = deferred;
        match op {
            Kind::Request => self.go(State::ReqAwaiting, Actions::of(&[Action::StartRequest])),
            Kind::Handle(t) => {
                self.handle = t;
                self.go(State::HdlAwaiting, Actions::of(&[Action::StartHandle]))
            }
        }
    }

    /// Waits in `state` to start `op` later.
    #[inline]
    fn defer(&mut self, state: State, op: Kind) -> Actions {
        self.next = op;
        self.go(state, Actions::none())
    }

    /// `actions`, and the resume a deferred start owes the suspended task.
    #[inline]
    fn failed(&self, actions: Actions) -> Actions {
        if self.deferred { actions.with(Action::ResumeFailed) } else { actions }
    }
}
