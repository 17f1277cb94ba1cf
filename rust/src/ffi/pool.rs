//! `cot_pool`: a thread pool for plain jobs, which loops may share for their
//! work requests (`cot_loop_set_pool`).

use std::ffi::c_void;
use std::os::raw::{c_int, c_uint};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::sync::{JOB_WORDS, Job, Pool, Words};

/// A thread pool (opaque). Made by `cot_pool_new`, freed by `cot_pool_free`.
/// Every `cot_pool_*` function is safe from any thread, pool threads
/// included.
pub struct cot_pool {
    pub(crate) pool: Arc<Pool>,
}

/// A job of a pool: `status` is 0 when it runs on a pool thread, or
/// `COT_ECANCELED` when `cot_pool_stop` cancelled it before it started (then
/// it runs on the thread that called `cot_pool_stop`, to free `data`).
pub type cot_pool_fn = Option<unsafe extern "C" fn(data: *mut c_void, status: c_int)>;

/// The most bytes `cot_pool_submit_copy` copies into the pool's queue.
pub const COT_POOL_COPY_MAX: usize = 48;
const _: () = assert!(COT_POOL_COPY_MAX <= JOB_WORDS * std::mem::size_of::<usize>());

/// The C function a plain job stored as its first word.
fn c_fn(f: usize) -> unsafe extern "C" fn(*mut c_void, c_int) {
    // SAFETY: `f` is the `cot_pool_fn` that `submit` stored as a word (same
    // size as a function pointer), never 0 (NULL was refused there).
    unsafe { std::mem::transmute::<usize, unsafe extern "C" fn(*mut c_void, c_int)>(f) }
}

/// Runs a job of `cot_pool_submit`: its data pointer is the first word.
fn call_c_job(f: usize, words: &mut Words, status: Result<()>) {
    let code = status.err().map_or(0, Error::code);
    // SAFETY: the submitter allowed `f(data, status)` on this thread.
    unsafe { c_fn(f)(words[0] as *mut c_void, code) }
}

/// Runs a job of `cot_pool_submit_copy`: its data is the words themselves.
fn call_c_copy(f: usize, words: &mut Words, status: Result<()>) {
    let code = status.err().map_or(0, Error::code);
    // SAFETY: the submitter allowed `f(copy, status)` on this thread; the
    // copy is these words, alive and ours until `f` returns.
    unsafe { c_fn(f)(words.as_mut_ptr().cast(), code) }
}

/// Queues the plain job `call(f, words)` on the pool behind `p`.
///
/// # Safety
/// `p` is NULL or a live pool.
unsafe fn submit(p: *mut cot_pool, f: cot_pool_fn, call: fn(usize, &mut Words, Result<()>), words: Words) -> c_int {
    let Some(f) = f else { return Error::Inval.code() };
    // SAFETY: `p` is NULL or a live pool (`submit`'s contract), which `pool` needs.
    let pool = match unsafe { pool(p) } {
        Ok(pool) => pool,
        Err(e) => return e.code(),
    };
    match pool.submit(Job::Plain { call, a: f as usize, words }) {
        Ok(_) => 0,
        Err(refused) => refused.error.code(), // dropped uncalled
    }
}

/// The pool behind `p`.
///
/// # Safety
/// `p` is NULL or a live pool.
unsafe fn pool<'a>(p: *const cot_pool) -> Result<&'a Pool> {
    // SAFETY: NULL or live (the caller's contract); only shared references
    // are made, and `Pool` is thread-safe.
    unsafe { p.as_ref() }.map(|p| &*p.pool).ok_or(Error::Inval)
}

/// Creates a pool of `threads` threads (0: the number of cores). Its threads
/// start lazily, one per job submitted while none is idle. Returns NULL on
/// failure. Free it with `cot_pool_free`.
#[unsafe(no_mangle)]
pub extern "C" fn cot_pool_new(threads: c_uint) -> *mut cot_pool {
    let size = if threads == 0 { Pool::default_size() } else { threads as usize };
    Box::into_raw(Box::new(cot_pool { pool: Pool::new(size) }))
}

/// Queues `fn(data, 0)` to run on a thread of the pool; jobs start in
/// submission order. Safe from any thread, pool threads included. Returns 0,
/// `COT_ECANCELED` if the pool is stopped (`fn` is not called), `COT_ENOMEM`
/// if no thread could be started (`fn` is not called), `COT_EINVAL` for NULL
/// `p` or `fn`. A job cancelled by `cot_pool_stop` is called once with
/// `COT_ECANCELED` instead.
///
/// # Safety
/// `p` is NULL or a live pool; `fn(data, status)` may run on another thread,
/// concurrently with the caller.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_pool_submit(p: *mut cot_pool, r#fn: cot_pool_fn, data: *mut c_void) -> c_int {
    // The function and its data go into the queue as words: no allocation
    // per job.
    let mut words: Words = [0; JOB_WORDS];
    words[0] = data as usize;
    // SAFETY: `p` is NULL or live and `fn(data, status)` may run on a pool thread:
    // `cot_pool_submit`'s contract, which is `submit`'s.
    unsafe { submit(p, r#fn, call_c_job, words) }
}

/// Like `cot_pool_submit`, but the job's data is a copy of the `size` bytes
/// at `data`, made now in the pool's queue: the caller allocates nothing and
/// may reuse `data` at once. The job runs as `fn(copy, status)`, `copy`
/// pointer-aligned and alive until `fn` returns (`fn` destroys what it must
/// in it). For small objects that a byte copy may move: a C struct, a C++
/// trivially copyable lambda. Returns what `cot_pool_submit` returns, and
/// `COT_EINVAL` (nothing queued) if `size` exceeds `COT_POOL_COPY_MAX` or
/// `data` is NULL with a nonzero `size`.
///
/// # Safety
/// `p` is NULL or a live pool; `data` is NULL or readable for `size` bytes;
/// `fn(copy, status)` may run on another thread, concurrently with the
/// caller.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_pool_submit_copy(
    p: *mut cot_pool,
    r#fn: cot_pool_fn,
    data: *const c_void,
    size: usize,
) -> c_int {
    if size > COT_POOL_COPY_MAX || (data.is_null() && size != 0) {
        return Error::Inval.code();
    }
    let mut words: Words = [0; JOB_WORDS];
    if size != 0 {
        // SAFETY: `data` is readable for `size` bytes (the caller's
        // contract), `words` holds COT_POOL_COPY_MAX >= `size` bytes, and a
        // local cannot overlap the caller's memory.
        unsafe { std::ptr::copy_nonoverlapping(data.cast::<u8>(), words.as_mut_ptr().cast::<u8>(), size) };
    }
    // SAFETY: `submit` needs `p` NULL or live; the copy of `data`, readable for `size`
    // bytes (the contract), is made above.
    unsafe { submit(p, r#fn, call_c_copy, words) }
}

/// Whether jobs of the pool wait to start (false for NULL). A snapshot.
///
/// # Safety
/// `p` is NULL or a live pool.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_pool_any_enqueued(p: *const cot_pool) -> bool {
    // SAFETY: `pool` on `p`, NULL or live by `cot_pool_any_enqueued`'s contract.
    unsafe { pool(p) }.is_ok_and(Pool::any_enqueued)
}

/// Whether the calling thread is one of the pool's threads (false for NULL).
///
/// # Safety
/// `p` is NULL or a live pool.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_pool_is_current(p: *const cot_pool) -> bool {
    // SAFETY: `p` is NULL or a live pool (the contract): what `pool` needs to ask
    // about the calling thread.
    unsafe { pool(p) }.is_ok_and(Pool::is_current)
}

/// The number of threads the pool runs at most (0 for NULL).
///
/// # Safety
/// `p` is NULL or a live pool.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_pool_size(p: *const cot_pool) -> c_uint {
    // SAFETY: the contract makes `p` NULL or live, which `pool` asks before its size
    // is read.
    unsafe { pool(p) }.map_or(0, |p| p.size().min(c_uint::MAX as usize) as c_uint)
}

/// Stops the pool: refuses new jobs (`COT_ECANCELED`), calls each queued job
/// that has not started with `COT_ECANCELED`, in order, on the calling
/// thread, waits for the running jobs and joins the threads. Called from a
/// job (one of the pool's threads), it does the same except joining its own
/// thread, which ends once that job returns. Work requests of loops sharing
/// the pool (`cot_loop_set_pool`) that were queued, or come later, complete
/// with `COT_ECANCELED` on their loop. A second call cancels nothing more; it
/// waits for the threads again unless made from a pool thread. Returns 0 or
/// `COT_EINVAL` for NULL.
///
/// # Safety
/// `p` is NULL or a live pool.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_pool_stop(p: *mut cot_pool) -> c_int {
    // SAFETY: `pool` needs `p` NULL or live, this function's contract; stopping
    // keeps the handle, which the caller still frees.
    match unsafe { pool(p) } {
        Ok(pool) => {
            pool.stop();
            0
        }
        Err(e) => e.code(),
    }
}

/// Stops the pool as `cot_pool_stop` does, then frees `p`. Loops given the
/// pool with `cot_loop_set_pool` keep the pool's state alive themselves (it
/// is reference counted), so freeing `p` while they use it is safe: it is
/// released when the last of them is closed, and their work requests get
/// `COT_ECANCELED` from then on. May be called from one of the pool's jobs
/// (its thread ends once the job returns). NULL is ignored.
///
/// # Safety
/// `p` is NULL or a live pool, not used by anyone after this call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_pool_free(p: *mut cot_pool) {
    if p.is_null() {
        return;
    }
    // SAFETY: a live pool, nobody else uses `p` now (the caller's contract).
    let p = unsafe { Box::from_raw(p) };
    p.pool.stop();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    static RAN: AtomicUsize = AtomicUsize::new(0);

    unsafe extern "C" fn count(data: *mut c_void, status: c_int) {
        assert_eq!(status, 0);
        // SAFETY: the pool the test passed, alive while jobs run.
        assert!(unsafe { cot_pool_is_current(data.cast()) });
        RAN.fetch_add(1, Ordering::Relaxed);
    }

    #[test]
    fn jobs_from_several_threads_run_on_the_pool() {
        let p = cot_pool_new(2);
        let addr = p as usize;
        // SAFETY: (every call) `p` is live until freed at the end.
        unsafe {
            assert_eq!(cot_pool_size(p), 2);
            assert!(!cot_pool_is_current(p));
            std::thread::scope(|s| {
                for _ in 0..4 {
                    s.spawn(move || {
                        let p = addr as *mut cot_pool;
                        for _ in 0..100 {
                            assert_eq!(cot_pool_submit(p, Some(count), p.cast()), 0);
                        }
                    });
                }
            });
            while RAN.load(Ordering::Relaxed) < 400 {
                std::thread::yield_now();
            }
            assert!(!cot_pool_any_enqueued(p));
            cot_pool_free(p);
            let d = cot_pool_new(0);
            assert_eq!(cot_pool_size(d) as usize, Pool::default_size());
            cot_pool_free(d);
        }
    }

    static STARTED: AtomicBool = AtomicBool::new(false);
    static RELEASE: AtomicBool = AtomicBool::new(false);
    static LOG: Mutex<Vec<(usize, c_int)>> = Mutex::new(Vec::new());

    unsafe extern "C" fn blocker(_: *mut c_void, status: c_int) {
        assert_eq!(status, 0);
        STARTED.store(true, Ordering::Release);
        while !RELEASE.load(Ordering::Acquire) {
            std::thread::yield_now();
        }
    }

    unsafe extern "C" fn logged(data: *mut c_void, status: c_int) {
        LOG.lock().unwrap().push((data as usize, status));
    }

    #[test]
    fn stop_cancels_queued_jobs_and_refuses_new_ones() {
        let p = cot_pool_new(1);
        // SAFETY: (every call) `p` is live until freed.
        unsafe {
            assert_eq!(cot_pool_submit(p, Some(blocker), std::ptr::null_mut()), 0);
            while !STARTED.load(Ordering::Acquire) {
                std::thread::yield_now();
            }
            for i in 1..=3 {
                assert_eq!(cot_pool_submit(p, Some(logged), i as *mut c_void), 0);
            }
            assert!(cot_pool_any_enqueued(p));
            let addr = p as usize;
            let stopper = std::thread::spawn(move || cot_pool_stop(addr as *mut cot_pool));
            while cot_pool_any_enqueued(p) {
                std::thread::yield_now();
            }
            RELEASE.store(true, Ordering::Release);
            assert_eq!(stopper.join().unwrap(), 0);
            let ecanceled = Error::Canceled.code();
            assert_eq!(*LOG.lock().unwrap(), [(1, ecanceled), (2, ecanceled), (3, ecanceled)]);
            assert_eq!(cot_pool_submit(p, Some(logged), 9 as *mut c_void), ecanceled);
            assert_eq!(cot_pool_stop(p), 0, "idempotent");
            assert_eq!(LOG.lock().unwrap().len(), 3);
            cot_pool_free(p);
            let inval = Error::Inval.code();
            assert_eq!(cot_pool_submit(std::ptr::null_mut(), Some(logged), std::ptr::null_mut()), inval);
            let q = cot_pool_new(1);
            assert_eq!(cot_pool_submit(q, None, std::ptr::null_mut()), inval);
            cot_pool_free(q);
            assert_eq!(cot_pool_stop(std::ptr::null_mut()), inval);
            assert!(!cot_pool_any_enqueued(std::ptr::null()));
            assert!(!cot_pool_is_current(std::ptr::null()));
            assert_eq!(cot_pool_size(std::ptr::null()), 0);
            cot_pool_free(std::ptr::null_mut());
        }
    }

    static FREED_FROM_JOB: AtomicBool = AtomicBool::new(false);

    unsafe extern "C" fn free_own_pool(data: *mut c_void, _: c_int) {
        // SAFETY: the pool made by the test, used by nobody else now.
        unsafe { cot_pool_free(data.cast()) };
        FREED_FROM_JOB.store(true, Ordering::Release);
    }

    #[test]
    fn a_job_may_free_its_own_pool() {
        let p = cot_pool_new(2);
        // SAFETY: `p` is live; the job frees it.
        assert_eq!(unsafe { cot_pool_submit(p, Some(free_own_pool), p.cast()) }, 0);
        while !FREED_FROM_JOB.load(Ordering::Acquire) {
            std::thread::yield_now();
        }
    }
}
