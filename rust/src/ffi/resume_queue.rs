//! `cot_resume_queue`: the per-thread resume queue ("coro mode").

use std::ffi::c_void;
use std::os::raw::c_int;

use crate::error::Error;
use crate::sync::resume_queue::{self as rq, ResumeQueue};

/// A thread's resume queue and coro-mode flag. Each thread has one;
/// `cot_resume_queue_current` gives its address, valid until the thread
/// exits. Only its own thread may use it: no locking, no allocation until
/// the first push. Items still queued when the thread exits are dropped,
/// never resumed.
///
/// The fields are public for inline fast paths (the C++ headers yield, push
/// and pop on them without a call) and are part of this version's ABI. Read
/// them; write them only as those paths do. A push that finds the ring
/// full (`len == mask + 1`, or `slots` NULL) must call
/// `cot_resume_queue_push`, the only function that allocates.
#[repr(C)]
pub struct cot_resume_queue {
    /// The ring: `mask + 1` slots, NULL before the first push.
    pub slots: *mut *mut c_void,
    /// The ring's size minus one (a power of two minus one; 0 without slots).
    pub mask: usize,
    /// The slot of the oldest item.
    pub head: usize,
    /// Items queued, from `head` on (wrapping at `mask`).
    pub len: usize,
    /// Whether the thread is in coro mode.
    pub active: bool,
}

// The header's struct is the core's queue, word for word.
const _: () = {
    use std::mem::{align_of, size_of};
    assert!(size_of::<cot_resume_queue>() == size_of::<ResumeQueue>());
    assert!(align_of::<cot_resume_queue>() == align_of::<ResumeQueue>());
    let mirror = [
        std::mem::offset_of!(cot_resume_queue, slots),
        std::mem::offset_of!(cot_resume_queue, mask),
        std::mem::offset_of!(cot_resume_queue, head),
        std::mem::offset_of!(cot_resume_queue, len),
        std::mem::offset_of!(cot_resume_queue, active),
    ];
    let mut i = 0;
    while i < mirror.len() {
        assert!(mirror[i] == ResumeQueue::LAYOUT[i]);
        i += 1;
    }
};

/// The queue behind `q`.
///
/// # Safety
/// `q` is NULL or the calling thread's queue, from `cot_resume_queue_current`.
unsafe fn queue<'a>(q: *mut cot_resume_queue) -> Option<&'a ResumeQueue> {
    // SAFETY: a queue pointer is a `ResumeQueue` address (see
    // `cot_resume_queue_current`) that lives as long as its thread, and only
    // that thread uses it (the caller's contract); shared references only.
    unsafe { (q as *const ResumeQueue).as_ref() }
}

/// The calling thread's resume queue. Call it once per thread and keep the
/// pointer: every other function takes it, so no thread-local lookup is
/// repeated. Valid until the thread exits; NULL while the thread exits.
#[unsafe(no_mangle)]
pub extern "C" fn cot_resume_queue_current() -> *mut cot_resume_queue {
    rq::current().map_or(std::ptr::null_mut(), |q| q as *mut cot_resume_queue)
}

/// Enters coro mode: returns true if the thread was not in it (the caller
/// now drains the queue and calls `cot_resume_queue_leave`), false if it
/// already was (push instead of resuming), false for NULL. O(1).
///
/// # Safety
/// `q` is NULL or the calling thread's queue.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_resume_queue_enter(q: *mut cot_resume_queue) -> bool {
    // SAFETY: `q` is NULL or the calling thread's queue (the contract), as `queue`
    // needs.
    unsafe { queue(q) }.is_some_and(ResumeQueue::enter)
}

/// Leaves coro mode. Items stay queued. NULL is ignored.
///
/// # Safety
/// `q` is NULL or the calling thread's queue.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_resume_queue_leave(q: *mut cot_resume_queue) {
    // SAFETY: `queue` on `q`, NULL or this thread's own queue by the contract.
    if let Some(q) = unsafe { queue(q) } {
        q.leave()
    }
}

/// Whether the thread of `q` is in coro mode (false for NULL).
///
/// # Safety
/// `q` is NULL or the calling thread's queue.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_resume_queue_active(q: *mut cot_resume_queue) -> bool {
    // SAFETY: the contract makes `q` NULL or the calling thread's queue: `queue`'s
    // requirement for a read of its mode.
    unsafe { queue(q) }.is_some_and(ResumeQueue::active)
}

/// Appends `item` (an opaque pointer, e.g. a C++ coroutine handle's address)
/// at the tail. Returns 0, or `COT_EINVAL` for a NULL queue or item.
/// Amortised O(1); the queue allocates at its first push.
///
/// # Safety
/// `q` is NULL or the calling thread's queue.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_resume_queue_push(q: *mut cot_resume_queue, item: *mut c_void) -> c_int {
    // SAFETY: `queue` needs `q` NULL or the calling thread's: the contract of
    // `cot_resume_queue_push`.
    match unsafe { queue(q) } {
        Some(q) if !item.is_null() => {
            q.push(item);
            0
        }
        _ => Error::Inval.code(),
    }
}

/// Takes the head out; NULL if the queue is empty (or NULL).
///
/// # Safety
/// `q` is NULL or the calling thread's queue.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_resume_queue_pop(q: *mut cot_resume_queue) -> *mut c_void {
    // SAFETY: `q` is NULL or this thread's queue (the contract), which `queue` asks
    // before the head is taken.
    unsafe { queue(q) }.and_then(ResumeQueue::pop).unwrap_or(std::ptr::null_mut())
}

/// Pushes `item` (unless NULL) at the tail, then takes the head out and
/// returns it: `item` itself if the queue was empty, NULL if both were (or
/// for a NULL queue). One call for a cooperative pause: resume what it
/// returns.
///
/// # Safety
/// `q` is NULL or the calling thread's queue.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_resume_queue_yield(q: *mut cot_resume_queue, item: *mut c_void) -> *mut c_void {
    // SAFETY: `cot_resume_queue_yield`'s contract: `q` is NULL or the calling thread's
    // queue, as `queue` needs.
    unsafe { queue(q) }.and_then(|q| q.yield_now(item)).unwrap_or(std::ptr::null_mut())
}

/// Resumes `item` by the thread's mode, with `run(item)`: in coro mode
/// `item` is queued and 0 is returned; in normal mode the thread enters coro
/// mode, calls `run(item)`, then `run` on every item queued meanwhile, in
/// order, leaves coro mode and returns 1. One call for what would be
/// enter + push or enter + pop... + leave. `COT_EINVAL` for a NULL queue,
/// item or `run` (nothing run).
///
/// # Safety
/// `q` is NULL or the calling thread's queue; `run` may be called with any
/// item queued on this thread (it must not unwind).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_resume_queue_run(
    q: *mut cot_resume_queue,
    item: *mut c_void,
    run: Option<unsafe extern "C" fn(item: *mut c_void)>,
) -> c_int {
    // SAFETY: `q` is NULL or the calling thread's queue, `queue`'s need; `run` may be
    // called with any queued item, the contract says.
    let (Some(q), Some(run)) = (unsafe { queue(q) }, run) else { return Error::Inval.code() };
    if item.is_null() {
        return Error::Inval.code();
    }
    // SAFETY: `run` takes items of this queue (the caller's contract).
    c_int::from(q.run(item, |i| unsafe { run(i) }))
}

/// The number of items queued (0 for NULL).
///
/// # Safety
/// `q` is NULL or the calling thread's queue.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_resume_queue_len(q: *mut cot_resume_queue) -> usize {
    // SAFETY: `queue` reads `q`'s length: NULL or the calling thread's queue by
    // `cot_resume_queue_len`'s contract.
    unsafe { queue(q) }.map_or(0, ResumeQueue::len)
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        static RAN: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    unsafe extern "C" fn count(item: *mut c_void) {
        RAN.with(|r| r.set(r.get() + item as usize));
    }

    #[test]
    fn the_c_functions_drive_this_threads_queue() {
        std::thread::spawn(|| {
            let p = |n: usize| n as *mut c_void;
            let q = cot_resume_queue_current();
            assert!(!q.is_null());
            assert_eq!(q, cot_resume_queue_current(), "one queue per thread");
            // SAFETY: q is this thread's queue; NULL is allowed.
            unsafe {
                assert!(!cot_resume_queue_active(q));
                assert!(cot_resume_queue_enter(q));
                assert!(!cot_resume_queue_enter(q));
                assert_eq!(cot_resume_queue_push(q, std::ptr::null_mut()), Error::Inval.code());
                assert_eq!(cot_resume_queue_push(std::ptr::null_mut(), p(1)), Error::Inval.code());
                assert_eq!(cot_resume_queue_push(q, p(1)), 0);
                assert_eq!(cot_resume_queue_push(q, p(2)), 0);
                assert_eq!(cot_resume_queue_len(q), 2);
                assert_eq!(cot_resume_queue_yield(q, p(3)), p(1));
                assert_eq!(cot_resume_queue_pop(q), p(2));
                assert_eq!(cot_resume_queue_pop(q), p(3));
                assert!(cot_resume_queue_pop(q).is_null());
                assert_eq!(cot_resume_queue_yield(q, p(4)), p(4));
                assert!(cot_resume_queue_yield(q, std::ptr::null_mut()).is_null());
                cot_resume_queue_leave(q);
                assert!(!cot_resume_queue_active(q));
                assert!(!cot_resume_queue_enter(std::ptr::null_mut()));
                assert!(cot_resume_queue_pop(std::ptr::null_mut()).is_null());
                assert_eq!(cot_resume_queue_len(std::ptr::null_mut()), 0);
                assert_eq!(cot_resume_queue_run(q, p(1), None), Error::Inval.code());
                assert_eq!(cot_resume_queue_run(q, std::ptr::null_mut(), Some(count)), Error::Inval.code());
                assert_eq!(cot_resume_queue_run(q, p(5), Some(count)), 1);
                assert_eq!(RAN.with(|r| r.get()), 5);
            }
        })
        .join()
        .unwrap();
    }
}
