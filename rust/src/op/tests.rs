//! The spec's tables as data ([`SLOT_ROWS`], [`OBJ_ROWS`]), and table-driven
//! tests: every state, reached by real event paths, gets every event; what
//! the machine does must be a row of the table, or an error exactly when no
//! row applies. The randomized model tests (`model.rs`) check their
//! transitions against the same rows.

// Built without `test` only as fuzz targets, which use part of it.
#![cfg_attr(not(test), allow(dead_code, unused_imports))]

use super::*;
use Action::*;

pub(super) const A: HandleType = HandleType(1);
pub(super) const B: HandleType = HandleType(2);

// ===== the slot's table =====

/// Which events a slot row applies to. Handle types compare with the type
/// of the handle open before the event.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum On {
    /// Await of anything.
    O,
    /// Await of a request.
    OReq,
    /// Await of a handle, any type.
    OHdl,
    /// Await of a handle of the open handle's type.
    OSame,
    /// Await of a handle of another type.
    OOther,
    C,
    F,
    /// Outside resume, whatever the hook says.
    R,
    RKeep,
    RCancel,
    Y,
    /// Start failure, open or not.
    Fail,
    FailOpen,
    FailClosed,
}

impl On {
    pub(super) fn matches(self, before: &Slot, ev: Event) -> bool {
        let same = |t| before.handle_type() == Some(t);
        match (self, ev) {
            (On::O, Event::Await(_)) => true,
            (On::OReq, Event::Await(Kind::Request)) => true,
            (On::OHdl, Event::Await(Kind::Handle(_))) => true,
            (On::OSame, Event::Await(Kind::Handle(t))) => same(t),
            (On::OOther, Event::Await(Kind::Handle(t))) => !same(t),
            (On::C, Event::Callback) | (On::F, Event::CloseCallback) | (On::Y, Event::TaskLeft) => true,
            (On::R, Event::OutsideResume { .. }) => true,
            (On::RKeep, Event::OutsideResume { keep }) => keep,
            (On::RCancel, Event::OutsideResume { keep }) => !keep,
            (On::Fail, Event::StartFailed { .. }) => true,
            (On::FailOpen, Event::StartFailed { open }) => open,
            (On::FailClosed, Event::StartFailed { open }) => !open,
            _ => false,
        }
    }
}

/// One row: `spec` rows are (parts of) the spec's table, the others what
/// this module adds (start failures, events that are not the slot's
/// business).
pub(super) struct SlotRow {
    pub label: &'static str,
    pub spec: bool,
    pub from: State,
    pub on: On,
    pub to: State,
    pub acts: &'static [Action],
}

const fn row(label: &'static str, from: State, on: On, to: State, acts: &'static [Action]) -> SlotRow {
    SlotRow { label, spec: true, from, on, to, acts }
}

const fn ext(label: &'static str, from: State, on: On, to: State, acts: &'static [Action]) -> SlotRow {
    SlotRow { label, spec: false, from, on, to, acts }
}

use State::*;

#[rustfmt::skip]
pub(super) const SLOT_ROWS: &[SlotRow] = &[
    row("Freed O request", Freed, On::OReq, ReqAwaiting, &[StartRequest]),
    row("Freed O handle", Freed, On::OHdl, HdlAwaiting, &[StartHandle]),
    row("Req Completed O request", ReqCompleted, On::OReq, ReqAwaiting, &[StartRequest]),
    row("Req Completed O handle", ReqCompleted, On::OHdl, HdlAwaiting, &[StartHandle]),
    row("Req Cancelled O", ReqCancelled, On::O, ReqResetting, &[]),
    row("Hdl Completed O same type", HdlCompleted, On::OSame, HdlAwaiting, &[RearmHandle]),
    row("Hdl Completed O request", HdlCompleted, On::OReq, HdlResettingAfterClose, &[CloseHandle]),
    row("Hdl Completed O other type", HdlCompleted, On::OOther, HdlResettingAfterClose, &[CloseHandle]),
    row("Hdl Cancelled O", HdlCancelled, On::O, HdlResettingAfterCancel, &[]),
    row("Hdl Closing O", HdlClosing, On::O, HdlResettingAfterClose, &[]),
    row("Req Awaiting C", ReqAwaiting, On::C, ReqCompleted, &[Resume]),
    row("Req Cancelled C", ReqCancelled, On::C, Freed, &[DropResults, Release]),
    row("Req Resetting C -> request", ReqResetting, On::C, ReqAwaiting, &[DropResults, StartRequest]),
    row("Req Resetting C -> handle", ReqResetting, On::C, HdlAwaiting, &[DropResults, StartHandle]),
    row("Hdl Awaiting C", HdlAwaiting, On::C, HdlCompleted, &[Resume]),
    row("Hdl Cancelled C", HdlCancelled, On::C, HdlClosing, &[DropResults, CloseHandle]),
    row("Resetting-after-cancel C", HdlResettingAfterCancel, On::C, HdlResettingAfterClose, &[DropResults, CloseHandle]),
    row("Hdl Closing F", HdlClosing, On::F, Freed, &[Release]),
    row("Resetting-after-close F -> request", HdlResettingAfterClose, On::F, ReqAwaiting, &[StartRequest]),
    row("Resetting-after-close F -> handle", HdlResettingAfterClose, On::F, HdlAwaiting, &[StartHandle]),
    row("Req Awaiting R cancel", ReqAwaiting, On::RCancel, ReqCancelled, &[CancelRequest]),
    row("Req Awaiting R keep", ReqAwaiting, On::RKeep, ReqCancelled, &[]),
    row("Req Resetting R", ReqResetting, On::R, ReqCancelled, &[]),
    row("Hdl Awaiting R keep", HdlAwaiting, On::RKeep, HdlCancelled, &[]),
    row("Hdl Awaiting R close", HdlAwaiting, On::RCancel, HdlClosing, &[CloseHandle]),
    row("Resetting-after-cancel R", HdlResettingAfterCancel, On::R, HdlCancelled, &[]),
    row("Resetting-after-close R", HdlResettingAfterClose, On::R, HdlClosing, &[]),
    row("Req Completed Y", ReqCompleted, On::Y, Freed, &[Release]),
    row("Hdl Completed Y", HdlCompleted, On::Y, HdlClosing, &[CloseHandle]),
    // Beyond the spec.
    ext("Hdl Completed C dropped", HdlCompleted, On::C, HdlCompleted, &[DropResults]),
    ext("Req Awaiting start failed (now)", ReqAwaiting, On::Fail, ReqCompleted, &[]),
    ext("Req Awaiting start failed (deferred)", ReqAwaiting, On::Fail, ReqCompleted, &[ResumeFailed]),
    ext("Hdl Awaiting start failed, open (now)", HdlAwaiting, On::FailOpen, HdlCompleted, &[]),
    ext("Hdl Awaiting start failed, open (deferred)", HdlAwaiting, On::FailOpen, HdlCompleted, &[ResumeFailed]),
    ext("Hdl Awaiting init failed (now)", HdlAwaiting, On::FailClosed, Freed, &[Release]),
    ext("Hdl Awaiting init failed (deferred)", HdlAwaiting, On::FailClosed, Freed, &[Release, ResumeFailed]),
    ext("Freed R no-op", Freed, On::R, Freed, &[]),
    ext("Req Completed R no-op", ReqCompleted, On::R, ReqCompleted, &[]),
    ext("Req Cancelled R no-op", ReqCancelled, On::R, ReqCancelled, &[]),
    ext("Hdl Completed R no-op", HdlCompleted, On::R, HdlCompleted, &[]),
    ext("Hdl Cancelled R no-op", HdlCancelled, On::R, HdlCancelled, &[]),
    ext("Hdl Closing R no-op", HdlClosing, On::R, HdlClosing, &[]),
    ext("Freed Y no-op", Freed, On::Y, Freed, &[]),
    ext("Req Cancelled Y no-op", ReqCancelled, On::Y, ReqCancelled, &[]),
    ext("Hdl Cancelled Y no-op", HdlCancelled, On::Y, HdlCancelled, &[]),
    ext("Hdl Closing Y no-op", HdlClosing, On::Y, HdlClosing, &[]),
];

/// The rows that apply to `ev` in `before`'s state (none: it must be refused).
pub(super) fn slot_candidates(before: &Slot, ev: Event) -> impl Iterator<Item = (usize, &'static SlotRow)> + '_ {
    SLOT_ROWS.iter().enumerate().filter(move |(_, r)| r.from == before.state() && r.on.matches(before, ev))
}

/// The row `before --ev--> after` with `acts` took, if it is one.
pub(super) fn slot_row(before: &Slot, ev: Event, after: State, acts: Actions) -> Option<usize> {
    slot_candidates(before, ev).find(|(_, r)| r.to == after && Actions::of(r.acts) == acts).map(|(i, _)| i)
}

// ===== the object's table =====

/// Which events an object row applies to. "Its task" is the waiter
/// (`Awaiting`) or the holder (`Completed`), if any.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum ObjOn {
    Await,
    /// Await by its task.
    AwaitSame,
    /// Await by another task.
    AwaitOther,
    C,
    Close,
    F,
    /// Outside resume of its task.
    RMine,
    /// Outside resume of another task.
    ROther,
    /// Its task leaves.
    YMine,
    /// Another task leaves.
    YOther,
    /// Start failure right after a start.
    Fail,
}

impl ObjOn {
    /// `fresh`: the last event asked for a start.
    pub(super) fn matches(self, before: &Object, ev: ObjEvent, fresh: bool) -> bool {
        let mine = |t| before.waiter().or(before.holder()) == Some(t);
        match (self, ev) {
            (ObjOn::Await, ObjEvent::Await(_)) => true,
            (ObjOn::AwaitSame, ObjEvent::Await(t)) => mine(t),
            (ObjOn::AwaitOther, ObjEvent::Await(t)) => !mine(t),
            (ObjOn::C, ObjEvent::Callback) | (ObjOn::Close, ObjEvent::Close) => true,
            (ObjOn::F, ObjEvent::CloseCallback) => true,
            (ObjOn::RMine, ObjEvent::OutsideResume(t)) | (ObjOn::YMine, ObjEvent::TaskLeft(t)) => mine(t),
            (ObjOn::ROther, ObjEvent::OutsideResume(t)) | (ObjOn::YOther, ObjEvent::TaskLeft(t)) => !mine(t),
            (ObjOn::Fail, ObjEvent::StartFailed) => fresh,
            _ => false,
        }
    }
}

/// What an object row does.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Out {
    To(ObjState, &'static [Action]),
    Err(OpError),
}

pub(super) struct ObjRow {
    pub label: &'static str,
    pub spec: bool,
    pub from: ObjState,
    pub on: ObjOn,
    pub out: Out,
}

const fn orow(label: &'static str, from: ObjState, on: ObjOn, to: ObjState, acts: &'static [Action]) -> ObjRow {
    ObjRow { label, spec: true, from, on, out: Out::To(to, acts) }
}

const fn oext(label: &'static str, from: ObjState, on: ObjOn, out: Out) -> ObjRow {
    ObjRow { label, spec: false, from, on, out }
}

const CLOSED: Out = Out::Err(OpError::Closed);

#[rustfmt::skip]
pub(super) const OBJ_ROWS: &[ObjRow] = &[
    orow("Ready close", ObjState::Ready, ObjOn::Close, ObjState::Closing, &[CloseHandle]),
    orow("Ready await", ObjState::Ready, ObjOn::Await, ObjState::Awaiting, &[StartHandle]),
    orow("Closing F", ObjState::Closing, ObjOn::F, ObjState::Freed, &[Release]),
    orow("Awaiting R waiter", ObjState::Awaiting, ObjOn::RMine, ObjState::Ready, &[StopHandle]),
    orow("Awaiting close", ObjState::Awaiting, ObjOn::Close, ObjState::Closing, &[CloseHandle, ResumeClosed]),
    orow("Awaiting C", ObjState::Awaiting, ObjOn::C, ObjState::Completed, &[Resume]),
    orow("Completed Y holder", ObjState::Completed, ObjOn::YMine, ObjState::Ready, &[StopHandle]),
    orow("Completed close", ObjState::Completed, ObjOn::Close, ObjState::Closing, &[CloseHandle]),
    orow("Completed await by holder", ObjState::Completed, ObjOn::AwaitSame, ObjState::Awaiting, &[]),
    orow("Completed await by another", ObjState::Completed, ObjOn::AwaitOther, ObjState::Awaiting, &[]),
    oext("Awaiting await: busy", ObjState::Awaiting, ObjOn::Await, Out::Err(OpError::Busy)),
    oext("Closing await: closed", ObjState::Closing, ObjOn::Await, CLOSED),
    oext("Freed await: closed", ObjState::Freed, ObjOn::Await, CLOSED),
    oext("Closing close: closed", ObjState::Closing, ObjOn::Close, CLOSED),
    oext("Freed close: closed", ObjState::Freed, ObjOn::Close, CLOSED),
    oext("Awaiting start failed", ObjState::Awaiting, ObjOn::Fail, Out::To(ObjState::Ready, &[])),
    oext("Ready R no-op", ObjState::Ready, ObjOn::ROther, Out::To(ObjState::Ready, &[])),
    oext("Ready Y no-op", ObjState::Ready, ObjOn::YOther, Out::To(ObjState::Ready, &[])),
    oext("Awaiting R other no-op", ObjState::Awaiting, ObjOn::ROther, Out::To(ObjState::Awaiting, &[])),
    oext("Awaiting Y other no-op", ObjState::Awaiting, ObjOn::YOther, Out::To(ObjState::Awaiting, &[])),
    oext("Completed R holder no-op", ObjState::Completed, ObjOn::RMine, Out::To(ObjState::Completed, &[])),
    oext("Completed R other no-op", ObjState::Completed, ObjOn::ROther, Out::To(ObjState::Completed, &[])),
    oext("Completed Y other no-op", ObjState::Completed, ObjOn::YOther, Out::To(ObjState::Completed, &[])),
    oext("Closing R no-op", ObjState::Closing, ObjOn::ROther, Out::To(ObjState::Closing, &[])),
    oext("Closing Y no-op", ObjState::Closing, ObjOn::YOther, Out::To(ObjState::Closing, &[])),
    oext("Freed R no-op", ObjState::Freed, ObjOn::ROther, Out::To(ObjState::Freed, &[])),
    oext("Freed Y no-op", ObjState::Freed, ObjOn::YOther, Out::To(ObjState::Freed, &[])),
];

/// The object rows that apply to `ev` in `before`'s state.
pub(super) fn obj_candidates(
    before: &Object,
    ev: ObjEvent,
    fresh: bool,
) -> impl Iterator<Item = (usize, &'static ObjRow)> + '_ {
    OBJ_ROWS.iter().enumerate().filter(move |(_, r)| r.from == before.state() && r.on.matches(before, ev, fresh))
}

/// The row `before --ev--> result` took, if it is one.
pub(super) fn obj_row(
    before: &Object,
    ev: ObjEvent,
    fresh: bool,
    result: Result<(ObjState, Actions), OpError>,
) -> Option<usize> {
    obj_candidates(before, ev, fresh)
        .find(|(_, r)| match (r.out, result) {
            (Out::To(to, acts), Ok((s, a))) => to == s && Actions::of(acts) == a,
            (Out::Err(e), Err(f)) => e == f,
            _ => false,
        })
        .map(|(i, _)| i)
}

/// Panics listing the rows never reached, with every row's count.
pub(super) fn assert_all_reached(what: &str, labels: &[&str], counts: &[u64]) {
    let missing: Vec<_> = labels.iter().zip(counts).filter(|(_, n)| **n == 0).map(|(l, _)| *l).collect();
    if !missing.is_empty() || std::env::var_os("COT_OP_COUNTS").is_some() {
        for (l, n) in labels.iter().zip(counts) {
            eprintln!("{what}: {n:>8}  {l}");
        }
    }
    assert!(missing.is_empty(), "{what}: rows never reached: {missing:?}");
}

// ===== slot: table-driven =====

const REQ: Event = Event::Await(Kind::Request);
const OA: Event = Event::Await(Kind::Handle(A));
const OB: Event = Event::Await(Kind::Handle(B));
const C: Event = Event::Callback;
const F: Event = Event::CloseCallback;
const KEEP: Event = Event::OutsideResume { keep: true };
const CANCEL: Event = Event::OutsideResume { keep: false };
const Y: Event = Event::TaskLeft;

/// Paths from `Freed` to every state, several per state where the state's
/// hidden data differs (deferred start or not, what is deferred).
#[rustfmt::skip]
const SLOT_PATHS: &[&[Event]] = &[
    &[],
    &[REQ],
    &[REQ, CANCEL, REQ, C],
    &[REQ, C],
    &[REQ, CANCEL],
    &[REQ, KEEP],
    &[REQ, CANCEL, REQ],
    &[REQ, KEEP, OA],
    &[OA],
    &[OA, C, OA],
    &[REQ, CANCEL, OB, C],
    &[OA, C, OB, F],
    &[OA, C],
    &[OA, Event::StartFailed { open: true }],
    &[OA, KEEP],
    &[OA, KEEP, REQ],
    &[OA, KEEP, OA],
    &[OA, CANCEL],
    &[OA, C, Y],
    &[OA, C, OB],
    &[OA, C, REQ],
    &[OA, CANCEL, OA],
    &[REQ, C, Y],
    &[OA, Event::StartFailed { open: false }],
];

/// Every event, with both handle types.
const SLOT_EVENTS: &[Event] =
    &[REQ, OA, OB, C, F, KEEP, CANCEL, Y, Event::StartFailed { open: true }, Event::StartFailed { open: false }];

fn reach(path: &[Event]) -> Slot {
    let mut s = Slot::new();
    for &e in path {
        let _ = s.apply(e).unwrap_or_else(|err| panic!("path {path:?}: {err}"));
    }
    s
}

#[test]
fn every_state_and_event_follows_the_table() {
    let mut hits = vec![0u64; SLOT_ROWS.len()];
    let mut states = [false; 11];
    for path in SLOT_PATHS {
        let before = reach(path);
        states[before.state() as usize] = true;
        for &ev in SLOT_EVENTS {
            let mut s = before;
            let got = s.apply(ev);
            let rows: Vec<_> = slot_candidates(&before, ev).collect();
            let what = format!("{path:?} then {ev:?} in {:?}", before.state());
            if rows.is_empty() {
                assert!(matches!(got, Err(OpError::Unexpected { .. })), "{what}: {got:?}");
                assert_eq!(s, before, "{what}: a refused event changes nothing");
            } else {
                let acts = got.unwrap_or_else(|e| panic!("{what}: {e}"));
                let i = slot_row(&before, ev, s.state(), acts)
                    .unwrap_or_else(|| panic!("{what}: {:?} {acts:?} is no row", s.state()));
                hits[i] += 1;
                assert_eq!(s.is_waiting(), s.state().is_waiting());
            }
        }
    }
    assert!(states.iter().all(|&b| b), "every state is reached");
    let labels: Vec<_> = SLOT_ROWS.iter().map(|r| r.label).collect();
    assert_all_reached("slot table", &labels, &hits);
}

#[test]
fn the_table_has_every_spec_row() {
    // The spec's 22 rows, some split by what they start or what the hook says.
    assert_eq!(SLOT_ROWS.iter().filter(|r| r.spec).count(), 29);
    assert_eq!(OBJ_ROWS.iter().filter(|r| r.spec).count(), 10);
}

#[test]
fn a_deferred_operation_starts_with_its_own_kind_and_type() {
    let mut s = reach(&[OA, C]);
    assert_eq!(s.handle_type(), Some(A));
    assert_eq!(s.deferred(), None);
    assert_eq!(s.await_op(Kind::Handle(B)), Ok(Actions::of(&[CloseHandle])));
    assert_eq!(s.handle_type(), Some(A), "the old handle is still open");
    assert_eq!(s.deferred(), Some(Kind::Handle(B)));
    assert!(s.is_waiting());
    assert_eq!(s.close_callback(), Ok(Actions::of(&[StartHandle])));
    assert_eq!((s.state(), s.handle_type(), s.deferred()), (HdlAwaiting, Some(B), None));

    // A handle deferred behind a request, and the request behind a handle.
    let mut s = reach(&[REQ, KEEP, OB]);
    assert_eq!(s.handle_type(), None);
    assert_eq!(s.callback(), Ok(Actions::of(&[DropResults, StartHandle])));
    assert_eq!(s.handle_type(), Some(B));
    let mut s = reach(&[OA, KEEP, REQ]);
    assert_eq!(s.callback(), Ok(Actions::of(&[DropResults, CloseHandle])));
    assert_eq!(s.state(), HdlResettingAfterClose);
    assert_eq!(s.close_callback(), Ok(Actions::of(&[StartRequest])));
    assert_eq!((s.state(), s.handle_type()), (ReqAwaiting, None));
}

#[test]
fn a_start_failure_resumes_only_a_suspended_task() {
    // At once: the await returns the error itself.
    let mut s = reach(&[REQ]);
    assert_eq!(s.start_failed(false), Ok(Actions::none()));
    assert_eq!(s.task_left(), Ok(Actions::of(&[Release])));
    // Deferred: the task already suspended.
    let mut s = reach(&[OA, C, OB, F]);
    assert_eq!(s.start_failed(false), Ok(Actions::of(&[Release, ResumeFailed])));
    assert!(s.is_freed());
    // A failed re-arm keeps the handle, which closes when the task leaves.
    let mut s = reach(&[OA, C, OA]);
    assert_eq!(s.start_failed(true), Ok(Actions::none()));
    assert_eq!(s.task_left(), Ok(Actions::of(&[CloseHandle])));
    // No start to fail.
    let mut s = reach(&[REQ, C]);
    assert!(s.start_failed(true).is_err());
}

#[test]
fn a_completed_request_hands_its_memory_back_before_the_task_leaves() {
    let mut s = Slot::default();
    assert!(s.is_freed() && !s.is_waiting());
    assert_eq!(s.await_op(Kind::Request), Ok(Actions::of(&[StartRequest])));
    assert!(s.is_waiting());
    assert_eq!(s.callback(), Ok(Actions::of(&[Resume])));
    // The next await starts at once in the same memory.
    assert_eq!(s.await_op(Kind::Handle(A)), Ok(Actions::of(&[StartHandle])));
    assert_eq!(s.outside_resume(true), Ok(Actions::none()));
    assert_eq!(s.state(), HdlCancelled);
    assert_eq!(s.await_op(Kind::Handle(A)), Ok(Actions::none()), "same type, but the kept callback comes first");
    assert_eq!(s.state(), HdlResettingAfterCancel);
}

#[test]
fn refusals_name_the_state_and_event_and_map_to_c_errors() {
    let mut s = Slot::new();
    let e = s.callback().unwrap_err();
    assert_eq!(e, OpError::Unexpected { state: "Freed", event: "callback" });
    assert_eq!(e.to_string(), "unexpected callback in state Freed");
    assert_eq!(crate::Error::from(e), crate::Error::Inval);
    assert_eq!(crate::Error::from(OpError::Busy), crate::Error::Busy);
    assert_eq!(crate::Error::from(OpError::Closed), crate::Error::BadF);
    let mut s = reach(&[REQ]);
    assert_eq!(s.await_op(Kind::Request), Err(OpError::Unexpected { state: "Req Awaiting", event: "await" }));
    assert_eq!(s.task_left().unwrap_err().to_string(), "unexpected task left in state Req Awaiting");
}

#[test]
fn state_helpers_agree_with_the_table() {
    let all: Vec<_> = (0..).map_while(State::from_index).collect();
    assert_eq!(all.len(), 11);
    for (i, &s) in all.iter().enumerate() {
        assert_eq!(s as usize, i);
        assert!(!s.name().is_empty());
        let hdl = matches!(
            s,
            HdlAwaiting | HdlCompleted | HdlCancelled | HdlResettingAfterCancel | HdlClosing | HdlResettingAfterClose
        );
        assert_eq!(s.has_handle(), hdl, "{s:?}");
    }
    let all: Vec<_> = (0..).map_while(ObjState::from_index).collect();
    assert_eq!(all.len(), 5);
    for (i, &s) in all.iter().enumerate() {
        assert_eq!(s as usize, i);
        assert_eq!(s.is_closed(), matches!(s, ObjState::Closing | ObjState::Freed));
    }
}

// ===== object: table-driven =====

const OBJ_PATHS: &[&[ObjEvent]] = {
    use ObjEvent::*;
    &[
        &[],
        &[Await(1)],
        &[Await(1), Callback, Await(1)],
        &[Await(1), Callback, Await(2)],
        &[Await(1), Callback],
        &[Await(1), OutsideResume(1)],
        &[Await(1), Callback, TaskLeft(1)],
        &[Await(1), StartFailed],
        &[Close],
        &[Await(1), Close],
        &[Await(1), Callback, Close],
        &[Close, CloseCallback],
    ]
};

const OBJ_EVENTS: &[ObjEvent] = {
    use ObjEvent::*;
    &[
        Await(1),
        Await(2),
        Callback,
        Close,
        CloseCallback,
        OutsideResume(1),
        OutsideResume(2),
        TaskLeft(1),
        TaskLeft(2),
        StartFailed,
    ]
};

#[test]
fn every_object_state_and_event_follows_the_table() {
    let mut hits = vec![0u64; OBJ_ROWS.len()];
    for path in OBJ_PATHS {
        let mut before = Object::new();
        let mut fresh = false;
        for &e in *path {
            fresh = before.apply(e).unwrap().contains(StartHandle);
        }
        for &ev in OBJ_EVENTS {
            let mut ob = before;
            let got = ob.apply(ev);
            let what = format!("{path:?} then {ev:?} in {:?}", before.state());
            if obj_candidates(&before, ev, fresh).next().is_none() {
                assert!(matches!(got, Err(OpError::Unexpected { .. })), "{what}: {got:?}");
            } else {
                let i = obj_row(&before, ev, fresh, got.map(|a| (ob.state(), a)))
                    .unwrap_or_else(|| panic!("{what}: {got:?} is no row"));
                hits[i] += 1;
            }
            if got.is_err() {
                assert_eq!(ob, before, "{what}: a refused event changes nothing");
            }
        }
    }
    let labels: Vec<_> = OBJ_ROWS.iter().map(|r| r.label).collect();
    assert_all_reached("object table", &labels, &hits);
}

#[test]
fn an_object_waiter_is_resumed_by_the_callback_and_may_await_again() {
    let mut ob = Object::default();
    assert_eq!(ob.await_op(7), Ok(Actions::of(&[StartHandle])));
    assert_eq!((ob.waiter(), ob.holder()), (Some(7), None));
    assert_eq!(ob.await_op(8), Err(OpError::Busy));
    assert_eq!(ob.callback(), Ok(Actions::of(&[Resume])));
    assert_eq!((ob.waiter(), ob.holder()), (None, Some(7)));
    assert!(ob.callback().is_err(), "nobody waits: the driver keeps the values");
    assert_eq!(ob.await_op(7), Ok(Actions::none()), "still started");
    assert_eq!(ob.start_failed(), Err(OpError::Unexpected { state: "Awaiting", event: "start failed" }));
    assert_eq!(ob.task_left(7), Err(OpError::Unexpected { state: "Awaiting", event: "task left" }));
    assert_eq!(ob.outside_resume(8), Ok(Actions::none()));
    assert_eq!(ob.outside_resume(7), Ok(Actions::of(&[StopHandle])));
    assert_eq!(ob.state(), ObjState::Ready);
    assert_eq!(ob.close(), Ok(Actions::of(&[CloseHandle])));
    assert!(ob.is_closed());
    assert_eq!(ob.close(), Err(OpError::Closed));
    assert_eq!(ob.close_callback(), Ok(Actions::of(&[Release])));
    assert_eq!(ob.close_callback().unwrap_err().to_string(), "unexpected close callback in state Freed");
}

#[test]
fn slots_and_objects_round_trip_through_words_and_garbage_is_refused() {
    let mut slot = Slot::new();
    let mut seen = vec![slot];
    for ev in [
        Event::Await(Kind::Handle(HandleType(7))),
        Event::OutsideResume { keep: true },
        Event::Await(Kind::Request),
        Event::Callback,
    ] {
        let _ = slot.apply(ev);
        seen.push(slot);
    }
    for s in seen {
        assert_eq!(Slot::from_words(s.to_words()), Some(s));
    }
    assert_eq!(Slot::from_words([0, 0]), None, "zeroed memory");
    let mut w = Slot::new().to_words();
    w[0] = w[0] & !0xff | 0x7f;
    assert_eq!(Slot::from_words(w), None, "no such state");
    let mut obj = Object::new();
    let _ = obj.await_op(42);
    assert_eq!(Object::from_words(obj.to_words()), Some(obj));
    assert_eq!(Object::from_words([0, 0]), None);
    assert_eq!(Object::from_words(Slot::new().to_words()), None, "a slot is not an object");
}
