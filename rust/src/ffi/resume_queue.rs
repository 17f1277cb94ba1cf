//! The per-thread resume queue ("coro mode").

use std::ffi::c_void;
use std::os::raw::c_int;

use crate::error::Error;
use crate::sync::resume_queue as rq;

/// Enters "coro mode" on the calling thread: returns true if the thread was
/// not in it (the caller now drains the resume queue and calls
/// `cot_resume_queue_leave`), false if it already was (push instead of
/// resuming). The mode and the queue are per thread: these functions only
/// ever touch the calling thread's. O(1), no locking, no allocation.
#[unsafe(no_mangle)]
pub extern "C" fn cot_resume_queue_enter() -> bool {
    rq::enter()
}

/// Leaves coro mode on the calling thread. Items stay queued.
#[unsafe(no_mangle)]
pub extern "C" fn cot_resume_queue_leave() {
    rq::leave()
}

/// Whether the calling thread is in coro mode.
#[unsafe(no_mangle)]
pub extern "C" fn cot_resume_queue_active() -> bool {
    rq::active()
}

/// Appends `item` (an opaque pointer, e.g. a C++ coroutine handle's address)
/// at the tail of the calling thread's resume queue. Returns 0, or
/// `COT_EINVAL` for NULL (and while the thread exits). The queue allocates
/// at its first push; items still queued when the thread exits are dropped,
/// never resumed. Amortised O(1).
#[unsafe(no_mangle)]
pub extern "C" fn cot_resume_queue_push(item: *mut c_void) -> c_int {
    if item.is_null() || !rq::push(item) {
        return Error::Inval.code();
    }
    0
}

/// Takes the head of the calling thread's resume queue out; NULL if empty.
#[unsafe(no_mangle)]
pub extern "C" fn cot_resume_queue_pop() -> *mut c_void {
    rq::pop().unwrap_or(std::ptr::null_mut())
}

/// Pushes `item` (unless NULL) at the tail of the calling thread's resume
/// queue, then takes the head out and returns it: `item` itself if the queue
/// was empty, NULL if both were. One call for a cooperative pause: resume
/// what it returns.
#[unsafe(no_mangle)]
pub extern "C" fn cot_resume_queue_yield(item: *mut c_void) -> *mut c_void {
    rq::yield_now(item).unwrap_or(std::ptr::null_mut())
}

/// The number of items in the calling thread's resume queue.
#[unsafe(no_mangle)]
pub extern "C" fn cot_resume_queue_len() -> usize {
    rq::len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_c_functions_drive_this_threads_queue() {
        std::thread::spawn(|| {
            let p = |n: usize| n as *mut c_void;
            assert!(!cot_resume_queue_active());
            assert!(cot_resume_queue_enter());
            assert!(!cot_resume_queue_enter());
            assert_eq!(cot_resume_queue_push(std::ptr::null_mut()), Error::Inval.code());
            assert_eq!(cot_resume_queue_push(p(1)), 0);
            assert_eq!(cot_resume_queue_push(p(2)), 0);
            assert_eq!(cot_resume_queue_len(), 2);
            assert_eq!(cot_resume_queue_yield(p(3)), p(1));
            assert_eq!(cot_resume_queue_pop(), p(2));
            assert_eq!(cot_resume_queue_pop(), p(3));
            assert!(cot_resume_queue_pop().is_null());
            assert_eq!(cot_resume_queue_yield(p(4)), p(4));
            assert!(cot_resume_queue_yield(std::ptr::null_mut()).is_null());
            cot_resume_queue_leave();
            assert!(!cot_resume_queue_active());
        })
        .join()
        .unwrap();
    }
}
