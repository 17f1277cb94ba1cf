//! `cot_mutex`: a lock-free mutex with strict FIFO handoff, embeddable.

use std::ffi::c_void;
use std::ptr;

use crate::sync::mutex::Mutex;
use crate::util::chain::{ListSlot, Node, Stack};

/// A mutex with FIFO handoff, two words, no heap: embed it anywhere and
/// zero-initialise it (`cot_mutex m = {0};`: unlocked). Its fields are
/// private to the core: use the `cot_mutex_*` functions. Waiters are
/// nodes (objects whose first member is `void *next`) that a later
/// `cot_mutex_unlock` hands the mutex to, in lock order. Move or free it only
/// while it is unlocked and nobody uses it.
///
/// A face may inline the two uncontended steps, and only these, as atomic
/// operations on `state` (the C++ header does): lock a free mutex with a
/// compare-exchange of `state` from NULL to the mutex's address (acquire),
/// which is all `cot_mutex_try_lock` does; and, as the owner, unlock when
/// `queue` is NULL with a compare-exchange of `state` from the mutex's
/// address to NULL (release). When that exchange fails, requests wait: call
/// `cot_mutex_unlock`.
#[repr(C)]
pub struct cot_mutex {
    /// Private: NULL (unlocked), the mutex's address (locked) or requests.
    state: *mut c_void,
    /// Private: the owner's queue of requests in lock order.
    queue: *mut c_void,
}

impl cot_mutex {
    /// An unlocked mutex (all zero).
    pub const fn new() -> cot_mutex {
        cot_mutex { state: ptr::null_mut(), queue: ptr::null_mut() }
    }
}

impl Default for cot_mutex {
    fn default() -> Self {
        cot_mutex::new()
    }
}

/// The core's view of the mutex at `m`; `None` for NULL.
///
/// # Safety
/// `m` is NULL or a live `cot_mutex` whose fields are only accessed through
/// these functions.
unsafe fn view<'a>(m: *const cot_mutex) -> Option<Mutex<'a>> {
    if m.is_null() {
        return None;
    }
    let marker = m.cast::<c_void>();
    // SAFETY: `m` is live and pointer-aligned and its fields are only
    // accessed atomically, by these functions (the caller's contract).
    // `state` holds NULL, `m` (the marker, no node's address) or requests
    // pushed by `cot_mutex_lock` onto it; `queue` NULL or the list the owner
    // stored: the invariants both views require.
    unsafe {
        let state = Stack::from_ptr((&raw const (*m).state).cast_mut(), [marker, marker])?;
        let queue = ListSlot::from_ptr((&raw const (*m).queue).cast_mut())?;
        Some(Mutex::new(state, queue, marker))
    }
}

/// Locks `m` or queues the request `node`, from any thread, lock-free.
/// Returns true if the mutex was free and the caller owns it now (`node` is
/// not used). Returns false if `node` was queued: the mutex is not the
/// caller's yet; a later `cot_mutex_unlock` returns `node`, and whoever
/// called it hands the mutex to the node's owner (e.g. resumes the coroutine
/// it stands for). Owners follow the order of the lock calls (strict FIFO).
/// NULL `m` or `node`: false and nothing done (test for NULL first if it can
/// happen). A node is an object whose first member is `void *next`; it must
/// stay alive and untouched until returned.
///
/// # Safety
/// `m` is NULL or a live `cot_mutex`; `node` is NULL or a pointer-aligned
/// object starting with `void *next`, in no other chain or mutex.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_mutex_lock(m: *mut cot_mutex, node: *mut c_void) -> bool {
    // SAFETY: `view` needs `m` NULL or a live mutex and `Node::from_raw` a NULL or
    // pointer-aligned node: both this function's contract.
    let (Some(mx), Some(node)) = (unsafe { view(m) }, unsafe { Node::from_raw(node) }) else { return false };
    match mx.lock(node) {
        Ok(unused) => {
            let _ = unused.into_raw();
            true
        }
        Err(()) => false,
    }
}

/// Locks `m` if it is free: true if the caller owns it now, false if it was
/// locked (nothing queued) or `m` is NULL. Any thread, lock-free.
///
/// # Safety
/// `m` is NULL or a live `cot_mutex`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_mutex_try_lock(m: *mut cot_mutex) -> bool {
    // SAFETY: `m` is NULL or a live `cot_mutex` (the contract), as `view` needs.
    unsafe { view(m) }.is_some_and(|mx| mx.try_lock())
}

/// Unlocks `m`, called by its owner (whichever thread it runs on): returns
/// the node of the request that owns the mutex now, the oldest queued one
/// (its `next` set to NULL; the mutex stays locked, handed over to it), or
/// NULL if no request waited and the mutex is unlocked now. Hand the node to
/// its owner through something that synchronises (a queue, a pool, an
/// unpark), as one does anyway to wake it. Unlocking an unlocked mutex
/// returns NULL and changes nothing; NULL `m`: NULL. Lock-free; O(1)
/// amortised (the requests are reversed into lock order once).
///
/// # Safety
/// `m` is NULL or a live `cot_mutex`, locked by the caller (or unlocked).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_mutex_unlock(m: *mut cot_mutex) -> *mut c_void {
    // SAFETY: `view` on `m`, NULL or live and locked by the caller or unlocked, as
    // `cot_mutex_unlock`'s contract says.
    unsafe { view(m) }.and_then(|mx| mx.unlock()).map_or(ptr::null_mut(), Node::into_raw)
}

/// Whether `m` is locked (a snapshot, for assertions and statistics); false
/// for NULL. Any thread.
///
/// # Safety
/// `m` is NULL or a live `cot_mutex`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_mutex_is_locked(m: *const cot_mutex) -> bool {
    // SAFETY: a snapshot read through `view`: `m` is NULL or live by the contract.
    unsafe { view(m) }.is_some_and(|mx| mx.is_locked())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ffi::{cot_park, cot_unpark_one};
    use std::cell::UnsafeCell;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[repr(C)]
    struct Waiter {
        next: *mut c_void,
        id: usize,
        granted: AtomicU32,
    }

    impl Waiter {
        fn new(id: usize) -> Waiter {
            Waiter { next: ptr::null_mut(), id, granted: AtomicU32::new(0) }
        }
    }

    fn raw(w: &Waiter) -> *mut c_void {
        (w as *const Waiter).cast_mut().cast()
    }

    fn id(p: *mut c_void) -> Option<usize> {
        // SAFETY: a `Waiter` of the test, alive.
        (!p.is_null()).then(|| unsafe { (*p.cast::<Waiter>()).id })
    }

    #[test]
    fn owners_follow_lock_order() {
        let mut m = cot_mutex::new();
        let w: Vec<Waiter> = (0..5).map(Waiter::new).collect();
        let m = &raw mut m;
        // SAFETY: (every call) `m` and the waiters outlive the calls.
        unsafe {
            assert!(!cot_mutex_is_locked(m));
            assert!(cot_mutex_unlock(m).is_null(), "unlocking an unlocked mutex");
            assert!(!cot_mutex_is_locked(m));
            assert!(cot_mutex_lock(m, raw(&w[0])), "free: acquired at once");
            assert!(cot_mutex_is_locked(m));
            assert!(!cot_mutex_try_lock(m));
            for x in &w[1..4] {
                assert!(!cot_mutex_lock(m, raw(x)), "queued");
            }
            assert_eq!(id(cot_mutex_unlock(m)), Some(1));
            assert_eq!(id(cot_mutex_unlock(m)), Some(2));
            assert!(!cot_mutex_lock(m, raw(&w[4])));
            assert_eq!(id(cot_mutex_unlock(m)), Some(3));
            assert!(w[3].next.is_null(), "a returned node's next is NULL");
            assert_eq!(id(cot_mutex_unlock(m)), Some(4));
            assert!(cot_mutex_is_locked(m), "handed over to 4");
            assert!(cot_mutex_unlock(m).is_null());
            assert!(!cot_mutex_is_locked(m));
            assert!(cot_mutex_try_lock(m));
            assert!(cot_mutex_unlock(m).is_null());
            assert!(cot_mutex_unlock(m).is_null());
            assert!(!cot_mutex_lock(ptr::null_mut(), raw(&w[0])));
            assert!(!cot_mutex_lock(m, ptr::null_mut()));
            assert!(!cot_mutex_is_locked(m), "a NULL node changes nothing");
            assert!(!cot_mutex_try_lock(ptr::null_mut()));
            assert!(cot_mutex_unlock(ptr::null_mut()).is_null());
            assert!(!cot_mutex_is_locked(ptr::null()));
        }
    }

    struct Shared {
        m: UnsafeCell<cot_mutex>,
        /// Protected by `m`: plain, unsynchronised data.
        counter: UnsafeCell<u64>,
    }

    // SAFETY: `m` is only used through the C functions (atomics); `counter`
    // only by the mutex's owner.
    unsafe impl Sync for Shared {}

    /// Hands the mutex to the node `unlock` returned, if any.
    fn hand_over(next: *mut c_void) {
        if next.is_null() {
            return;
        }
        // SAFETY: a queued `Waiter`, alive until it sees `granted`.
        let granted = unsafe { &raw const (*next.cast::<Waiter>()).granted };
        // SAFETY: as above; after the store the waiter may go on and free
        // it, so only its address is used afterwards.
        unsafe { (*granted).store(1, Ordering::Release) };
        cot_unpark_one(granted.cast());
    }

    #[test]
    fn four_threads_hand_the_mutex_over_without_losing_anything() {
        const ROUNDS: usize = 5000;
        let s = Shared { m: UnsafeCell::new(cot_mutex::new()), counter: UnsafeCell::new(0) };
        std::thread::scope(|scope| {
            for t in 0..4 {
                let s = &s;
                scope.spawn(move || {
                    for i in 0..ROUNDS {
                        let me = Waiter::new(t * ROUNDS + i);
                        // SAFETY: the mutex and `me` outlive the request:
                        // `me` waits until it was handed the mutex.
                        if !unsafe { cot_mutex_lock(s.m.get(), raw(&me)) } {
                            while me.granted.load(Ordering::Acquire) == 0 {
                                // SAFETY: a live atomic.
                                unsafe { cot_park(me.granted.as_ptr(), 0, crate::ffi::COT_FOREVER) };
                            }
                        }
                        // SAFETY: the mutex is ours: nobody else touches
                        // the protected data.
                        unsafe { *s.counter.get() += 1 };
                        // SAFETY: we own the mutex.
                        hand_over(unsafe { cot_mutex_unlock(s.m.get()) });
                    }
                });
            }
        });
        // SAFETY: all threads ended.
        assert!(!unsafe { cot_mutex_is_locked(s.m.get()) });
        assert_eq!(s.counter.into_inner(), 4 * ROUNDS as u64, "every increment under the lock");
    }
}
