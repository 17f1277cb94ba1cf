//! Operations awaited by a task: the state machines of `op`, for C drivers.
//!
//! A driver (a C program driving libuv, say) keeps a `cot_op` next to the
//! memory a task awaits a request or handle in, and a `cot_object` next to a
//! stream; it reports what happens (the task awaits, a callback came, ...)
//! and performs the actions returned, in bit order (lowest first; a resume,
//! if any, is always last).

use std::os::raw::{c_int, c_uint};

use crate::error::{Error, Result};
use crate::op::{Actions, HandleType, Kind, Object, Slot};

/// A task's operation slot, embedded in the driver's memory (16 bytes). Set
/// it up with `cot_op_init`; the other functions refuse anything else with
/// `COT_EINVAL`.
#[repr(C)]
pub struct cot_op {
    private_: [u64; 2],
}

/// An object's waiter state (a stream's read, a listener's accept), embedded
/// in the driver's memory. Set it up with `cot_object_init`.
#[repr(C)]
pub struct cot_object {
    private_: [u64; 2],
}

/// Action: drop the results of the late callback (clean them up).
pub const COT_ACT_DROP_RESULTS: c_uint = 1 << 0;
/// Action: cancel the request (`uv_cancel`; its callback still comes).
pub const COT_ACT_CANCEL_REQUEST: c_uint = 1 << 1;
/// Action: stop the handle (`uv_*_stop`, `uv_read_stop`).
pub const COT_ACT_STOP_HANDLE: c_uint = 1 << 2;
/// Action: close the handle (`uv_close`; the close callback comes later).
pub const COT_ACT_CLOSE_HANDLE: c_uint = 1 << 3;
/// Action: start the request awaited (or deferred).
pub const COT_ACT_START_REQUEST: c_uint = 1 << 4;
/// Action: init and start a handle of the awaited type (for an object: start it).
pub const COT_ACT_START_HANDLE: c_uint = 1 << 5;
/// Action: re-arm the handle of the same type (stop/start as needed), no close.
pub const COT_ACT_REARM_HANDLE: c_uint = 1 << 6;
/// Action: the memory is the driver's again (free or reuse it).
pub const COT_ACT_RELEASE: c_uint = 1 << 7;
/// Action: resume the task with the results.
pub const COT_ACT_RESUME: c_uint = 1 << 8;
/// Action: resume the task with the error of a deferred start that failed.
pub const COT_ACT_RESUME_FAILED: c_uint = 1 << 9;
/// Action: resume the object's waiter with "closed".
pub const COT_ACT_RESUME_CLOSED: c_uint = 1 << 10;

/// `cot_op_await` kind: a request. A kind `n > 0` is a handle of type `n` (the
/// driver numbers its handle types).
pub const COT_OP_REQUEST: c_uint = 0;

/// What `cot_op` and `cot_object` hold: a machine stored as tagged words.
trait Words: Sized {
    fn decode(w: [u64; 2]) -> Option<Self>;
    fn encode(&self) -> [u64; 2];
}

impl Words for Slot {
    fn decode(w: [u64; 2]) -> Option<Slot> {
        Slot::from_words(w)
    }
    fn encode(&self) -> [u64; 2] {
        self.to_words()
    }
}

impl Words for Object {
    fn decode(w: [u64; 2]) -> Option<Object> {
        Object::from_words(w)
    }
    fn encode(&self) -> [u64; 2] {
        self.to_words()
    }
}

/// Decodes the machine in `words`, applies the event `f`, stores it back and
/// writes the actions; a failed event changes nothing.
///
/// # Safety
/// `words` is NULL or valid for reads and writes; `actions` is NULL or writable.
unsafe fn event<M: Words>(
    words: *mut [u64; 2],
    actions: *mut c_uint,
    f: impl FnOnce(&mut M) -> Result<Actions>,
) -> c_int {
    // SAFETY: `words` is NULL or an op's or object's words, valid (`event`'s contract).
    let Some(words) = (unsafe { words.as_mut() }) else { return Error::Inval.code() };
    let (Some(mut m), false) = (M::decode(*words), actions.is_null()) else { return Error::Inval.code() };
    match f(&mut m) {
        Ok(a) => {
            *words = m.encode();
            // SAFETY: non-null; writable by the caller's contract.
            unsafe { actions.write(a.bits() as c_uint) };
            0
        }
        Err(e) => e.code(),
    }
}

/// The words of a `cot_op` (NULL stays NULL): a `#[repr(C)]` struct whose
/// only field is the words.
fn op_words(op: *mut cot_op) -> *mut [u64; 2] {
    op.cast()
}

/// The words of a `cot_object` (NULL stays NULL).
fn object_words(obj: *mut cot_object) -> *mut [u64; 2] {
    obj.cast()
}

/// Sets up a freed slot. Returns 0 or `COT_EINVAL` (NULL).
///
/// # Safety
/// `op` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_op_init(op: *mut cot_op) -> c_int {
    // SAFETY: `op` is NULL or valid, as `cot_op_init`'s contract says.
    match unsafe { op.as_mut() } {
        Some(op) => {
            op.private_ = Slot::new().to_words();
            0
        }
        None => Error::Inval.code(),
    }
}

/// The slot's state: 0 freed, 1-4 request awaiting / completed / cancelled /
/// resetting, 5-10 handle awaiting / completed / cancelled /
/// resetting-after-cancel / closing / resetting-after-close (doc/c.md); or
/// `COT_EINVAL`.
///
/// # Safety
/// `op` is NULL or valid for reads.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_op_state(op: *const cot_op) -> c_int {
    // SAFETY: a read of `op`, NULL or valid by this function's contract.
    match unsafe { op.as_ref() }.and_then(|op| Slot::from_words(op.private_)) {
        Some(s) => s.state() as c_int,
        None => Error::Inval.code(),
    }
}

/// The task awaits a request (`kind` = `COT_OP_REQUEST`) or a handle of type
/// `kind` in its slot. Stores the actions in `*actions`. Returns 0,
/// `COT_EINVAL` (bad slot or NULL `actions`, or the task is already
/// suspended on the slot).
///
/// # Safety
/// `op` is NULL or valid; `actions` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_op_await(op: *mut cot_op, kind: c_uint, actions: *mut c_uint) -> c_int {
    let kind = if kind == COT_OP_REQUEST { Kind::Request } else { Kind::Handle(HandleType(kind)) };
    // SAFETY: `op` is NULL or valid and `actions` NULL or writable (this function's
    // contract): `event` needs exactly that of the op's words.
    unsafe { event::<Slot>(op_words(op), actions, |s| Ok(s.await_op(kind)?)) }
}

/// The request's or handle's callback came. Returns 0 or `COT_EINVAL` (also
/// for a callback the backend cannot send in this state).
///
/// # Safety
/// `op` is NULL or valid; `actions` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_op_callback(op: *mut cot_op, actions: *mut c_uint) -> c_int {
    // SAFETY: `event` reads the op's words and writes `actions`: `op` is NULL or valid
    // and `actions` NULL or writable, as the contract says.
    unsafe { event::<Slot>(op_words(op), actions, |s| Ok(s.callback()?)) }
}

/// The handle's close callback came. Returns 0 or `COT_EINVAL`.
///
/// # Safety
/// `op` is NULL or valid; `actions` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_op_close_callback(op: *mut cot_op, actions: *mut c_uint) -> c_int {
    // SAFETY: the contract gives `op` NULL or valid and `actions` NULL or writable,
    // what `event` requires for a close callback's step.
    unsafe { event::<Slot>(op_words(op), actions, |s| Ok(s.close_callback()?)) }
}

/// The task was resumed from outside (a timeout, a notify, unschedule +
/// schedule): it left the operation. `keep` is the cancel hook's answer:
/// nonzero keeps the request running / the handle open until its callback,
/// for cleanup. No-op (0 actions) if the task was not suspended on the slot.
/// Returns 0 or `COT_EINVAL`.
///
/// # Safety
/// `op` is NULL or valid; `actions` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_op_outside_resume(op: *mut cot_op, keep: c_int, actions: *mut c_uint) -> c_int {
    // SAFETY: `event` needs `op` NULL or valid and `actions` NULL or writable; the
    // contract of `cot_op_outside_resume` gives both.
    unsafe { event::<Slot>(op_words(op), actions, |s| Ok(s.outside_resume(keep != 0)?)) }
}

/// The task yields elsewhere or ends while the slot holds a completed
/// operation. Returns 0 or `COT_EINVAL` (the task is still suspended on it).
///
/// # Safety
/// `op` is NULL or valid; `actions` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_op_task_left(op: *mut cot_op, actions: *mut c_uint) -> c_int {
    // SAFETY: `op` NULL or valid, `actions` NULL or writable: this contract, `event`'s
    // need when the task leaves the slot.
    unsafe { event::<Slot>(op_words(op), actions, |s| Ok(s.task_left()?)) }
}

/// The start the driver just performed failed synchronously (libuv never calls
/// back then); `open` says whether a handle stayed open (init succeeded).
/// Returns 0 or `COT_EINVAL`.
///
/// # Safety
/// `op` is NULL or valid; `actions` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_op_start_failed(op: *mut cot_op, open: c_int, actions: *mut c_uint) -> c_int {
    // SAFETY: as `event` asks, `op` is NULL or valid and `actions` NULL or writable
    // (the contract) for a failed start.
    unsafe { event::<Slot>(op_words(op), actions, |s| Ok(s.start_failed(open != 0)?)) }
}

/// Sets up an object whose handle is initialized and stopped. Returns 0 or
/// `COT_EINVAL`.
///
/// # Safety
/// `obj` is NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_object_init(obj: *mut cot_object) -> c_int {
    // SAFETY: `obj` is NULL or valid, as `cot_object_init`'s contract says.
    match unsafe { obj.as_mut() } {
        Some(obj) => {
            obj.private_ = Object::new().to_words();
            0
        }
        None => Error::Inval.code(),
    }
}

/// The object's state: 0 ready, 1 awaiting, 2 completed, 3 closing, 4 freed;
/// or `COT_EINVAL`.
///
/// # Safety
/// `obj` is NULL or valid for reads.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_object_state(obj: *const cot_object) -> c_int {
    // SAFETY: a read of `obj`, NULL or valid by this function's contract.
    match unsafe { obj.as_ref() }.and_then(|o| Object::from_words(o.private_)) {
        Some(o) => o.state() as c_int,
        None => Error::Inval.code(),
    }
}

/// `task` (any nonzero token, e.g. a `cot_task`) awaits the object. Returns
/// 0, `COT_EBUSY` while another task waits on it, `COT_EBADF` once it is
/// closed, or `COT_EINVAL`.
///
/// # Safety
/// `obj` is NULL or valid; `actions` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_object_await(obj: *mut cot_object, task: u64, actions: *mut c_uint) -> c_int {
    // SAFETY: `obj` is NULL or valid and `actions` NULL or writable (this function's
    // contract): what `event` needs of the object's words.
    unsafe { event::<Object>(object_words(obj), actions, |o| Ok(o.await_op(task)?)) }
}

/// The object's callback came (data read, a connection accepted). Returns 0
/// or `COT_EINVAL`.
///
/// # Safety
/// `obj` is NULL or valid; `actions` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_object_callback(obj: *mut cot_object, actions: *mut c_uint) -> c_int {
    // SAFETY: `event` steps the object's words and writes `actions`: `obj` is NULL or
    // valid and `actions` NULL or writable, the contract says.
    unsafe { event::<Object>(object_words(obj), actions, |o| Ok(o.callback()?)) }
}

/// The object is being closed: its waiter, if any, is resumed with "closed".
/// Returns 0 or `COT_EBADF` (closed already).
///
/// # Safety
/// `obj` is NULL or valid; `actions` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_object_close(obj: *mut cot_object, actions: *mut c_uint) -> c_int {
    // SAFETY: closing steps `obj`, NULL or valid by the contract, and writes
    // `actions`, NULL or writable: `event`'s requirement.
    unsafe { event::<Object>(object_words(obj), actions, |o| Ok(o.close()?)) }
}

/// The object's close callback came. Returns 0 or `COT_EINVAL`.
///
/// # Safety
/// `obj` is NULL or valid; `actions` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_object_close_callback(obj: *mut cot_object, actions: *mut c_uint) -> c_int {
    // SAFETY: the contract gives `obj` NULL or valid and `actions` NULL or writable,
    // what `event` needs for a close callback.
    unsafe { event::<Object>(object_words(obj), actions, |o| Ok(o.close_callback()?)) }
}

/// `task` was resumed from outside while waiting on the object (no-op for
/// another task). Returns 0 or `COT_EINVAL`.
///
/// # Safety
/// `obj` is NULL or valid; `actions` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_object_outside_resume(obj: *mut cot_object, task: u64, actions: *mut c_uint) -> c_int {
    // SAFETY: `event` needs `obj` NULL or valid and `actions` NULL or writable; the
    // contract of `cot_object_outside_resume` gives both.
    unsafe { event::<Object>(object_words(obj), actions, |o| Ok(o.outside_resume(task)?)) }
}

/// `task`, resumed by the object, went on without awaiting it again. Returns
/// 0 or `COT_EINVAL`.
///
/// # Safety
/// `obj` is NULL or valid; `actions` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_object_task_left(obj: *mut cot_object, task: u64, actions: *mut c_uint) -> c_int {
    // SAFETY: `obj` NULL or valid, `actions` NULL or writable: this contract, which is
    // `event`'s need when `task` goes on.
    unsafe { event::<Object>(object_words(obj), actions, |o| Ok(o.task_left(task)?)) }
}

/// The start just performed for the object failed synchronously. Returns 0
/// or `COT_EINVAL`.
///
/// # Safety
/// `obj` is NULL or valid; `actions` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_object_start_failed(obj: *mut cot_object, actions: *mut c_uint) -> c_int {
    // SAFETY: as `event` asks, `obj` is NULL or valid and `actions` NULL or writable
    // (the contract) for a failed start of the object.
    unsafe { event::<Object>(object_words(obj), actions, |o| Ok(o.start_failed()?)) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::{Action, ObjState, State};

    #[test]
    fn constants_match_the_machines() {
        let bits = [
            (COT_ACT_DROP_RESULTS, Action::DropResults),
            (COT_ACT_CANCEL_REQUEST, Action::CancelRequest),
            (COT_ACT_STOP_HANDLE, Action::StopHandle),
            (COT_ACT_CLOSE_HANDLE, Action::CloseHandle),
            (COT_ACT_START_REQUEST, Action::StartRequest),
            (COT_ACT_START_HANDLE, Action::StartHandle),
            (COT_ACT_REARM_HANDLE, Action::RearmHandle),
            (COT_ACT_RELEASE, Action::Release),
            (COT_ACT_RESUME, Action::Resume),
            (COT_ACT_RESUME_FAILED, Action::ResumeFailed),
            (COT_ACT_RESUME_CLOSED, Action::ResumeClosed),
        ];
        for (c, a) in bits {
            assert_eq!(c, Actions::of(&[a]).bits() as c_uint, "{a:?}");
        }
        assert_eq!(State::HdlResettingAfterClose as c_int, 10);
        assert_eq!(ObjState::Freed as c_int, 4);
        assert_eq!(std::mem::size_of::<cot_op>(), 16);
    }
}
