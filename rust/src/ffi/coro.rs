//! Stackful coroutines (`cot_coro_*`). Raw contexts: `context.rs`.
//!
//! A coroutine is a loop task whose callback (`run_task`, a plain function:
//! no allocation) switches into the coroutine's stack, lent the loop like
//! any callback, so the coroutine's own calls reach the loop through
//! `with_loop`. Its waiting calls arm the wait with the loop, release it,
//! then switch back to the loop.

use std::ffi::c_void;
use std::mem::MaybeUninit;
use std::os::raw::c_int;

use super::future::cot_future;
use super::guard::{boolean, status, write_out};
use super::loop_::{cot_handle, cot_loop, lend, to_handle, with_loop};
use super::timeout::{checked, timeout};
use super::work::{cot_work_cb, pool_work};
use crate::error::{Error, Result};
use crate::reactor::{Handle, Loop, Wake};
use crate::stack::coro::{self, Source};
use crate::stack::{Coro, Stack, State};

/// A stackful coroutine (opaque): a function running on its own stack as a
/// task of a loop. Made by `cot_coro_new` or `cot_coro_init`, freed by
/// `cot_coro_free`.
pub struct cot_coro {
    _opaque: [u8; 0],
}

/// Words of a `cot_coro_block`.
pub const COT_CORO_BLOCK_WORDS: usize = 32;

/// Bytes of a `cot_coro_block` (fixed for the ABI's lifetime).
pub const COT_CORO_BLOCK_SIZE: usize = COT_CORO_BLOCK_WORDS * 8;

/// Memory for a coroutine's control block, to embed or allocate statically
/// (`cot_coro_init`): 256 bytes, 8-byte aligned. Its content is private.
#[repr(C)]
pub struct cot_coro_block {
    /// Private.
    pub opaque: [u64; COT_CORO_BLOCK_WORDS],
}

const _: () = assert!(
    size_of::<Coro>() <= size_of::<cot_coro_block>() && align_of::<Coro>() <= align_of::<cot_coro_block>(),
    "a coroutine's control block must fit a cot_coro_block"
);

/// A coroutine's function: it runs on the coroutine's stack; what it returns
/// is the coroutine's result (`cot_coro_result`, `cot_coro_join`).
pub type cot_coro_fn = Option<unsafe extern "C" fn(arg: *mut c_void) -> *mut c_void>;

/// The stack size `cot_coro_new` maps when asked for 0 bytes: 256 KiB. Pages
/// are committed only when touched.
pub const COT_CORO_STACK_DEFAULT: usize = 256 * 1024;

/// The smallest stack `cot_coro_new`, `cot_coro_init` and
/// `cot_context_make` accept (smaller requests to `cot_coro_new` are raised
/// to it; `cot_coro_init` and `cot_context_make` refuse them): 4 KiB.
pub const COT_CORO_STACK_MIN: usize = 4096;

const _: () =
    assert!(COT_CORO_STACK_DEFAULT == crate::stack::DEFAULT_SIZE && COT_CORO_STACK_MIN == crate::stack::MIN_SIZE);

/// A timeout of the waiting calls: wait forever.
pub const COT_CORO_FOREVER: u64 = u64::MAX;

/// Fairness: how many waiting calls a coroutine may end without suspending
/// in one turn (from when its loop runs it until it suspends). The next one
/// first yields, as `cot_coro_yield` does, then tries, so nothing is lost.
/// It counts the calls that try first (the socket calls, the channel calls,
/// `cot_coro_await`, `cot_coro_join`, `cot_coro_wait_any`). C++ tasks
/// (`cothread::task`) keep the same count each.
pub const COT_BUDGET: u32 = 2;

const _: () = assert!(COT_BUDGET == crate::sched::BUDGET);

/// `cot_coro_status`: made, not started yet.
pub const COT_CORO_CREATED: c_int = 0;
/// `cot_coro_status`: in the loop's ready queue (started, yielded, or woken
/// from outside), waiting for its turn.
pub const COT_CORO_READY: c_int = 1;
/// `cot_coro_status`: running (the current coroutine, or one that resumed
/// the current one with `cot_coro_resume`).
pub const COT_CORO_RUNNING: c_int = 2;
/// `cot_coro_status`: suspended in a waiting call, until the loop runs it
/// again (also after what it waits for happened, until then).
pub const COT_CORO_WAITING: c_int = 3;
/// `cot_coro_status`: its function returned; its stack is released.
pub const COT_CORO_FINISHED: c_int = 4;

/// `cot_coro_source` type: a signal of the loop (`signal`), notified with
/// `cot_loop_notify`.
pub const COT_SOURCE_SIGNAL: c_int = 1;
/// `cot_coro_source` type: readiness of a poll handle (`poll`, for
/// `events`); at most one per wait.
pub const COT_SOURCE_POLL: c_int = 2;
/// `cot_coro_source` type: the end of another coroutine of the loop (`coro`).
pub const COT_SOURCE_CORO: c_int = 3;

/// One source of `cot_coro_wait_any`. Set `type` and the field it uses;
/// `revents` is written by the wait: the ready events for the poll source
/// that fired, 1 for another source that fired, 0 for the others.
#[repr(C)]
pub struct cot_coro_source {
    /// `COT_SOURCE_SIGNAL`, `COT_SOURCE_POLL` or `COT_SOURCE_CORO`.
    pub r#type: c_int,
    /// `COT_SOURCE_POLL`: the events to wait for (`COT_READABLE`, ...).
    pub events: c_int,
    /// Written by `cot_coro_wait_any` (see the type).
    pub revents: c_int,
    /// `COT_SOURCE_SIGNAL`: the signal key (any non-NULL address).
    pub signal: *const c_void,
    /// `COT_SOURCE_CORO`: the coroutine to wait for.
    pub coro: *mut cot_coro,
    /// `COT_SOURCE_POLL`: the poll handle (`cot_poll_init`).
    pub poll: cot_handle,
}

fn state_code(s: State) -> c_int {
    match s {
        State::Created => COT_CORO_CREATED,
        State::Ready => COT_CORO_READY,
        State::Running => COT_CORO_RUNNING,
        State::Waiting => COT_CORO_WAITING,
        State::Finished => COT_CORO_FINISHED,
    }
}

/// The coroutine behind a C pointer.
///
/// # Safety
/// `co` is NULL, a live coroutine, or a block given to `cot_coro_init`.
unsafe fn check<'a>(co: *const cot_coro) -> Result<&'a Coro> {
    // SAFETY: `Coro::check` accepts NULL, a live coroutine or a block given to
    // `cot_coro_init`: exactly this function's contract.
    unsafe { Coro::check(co.cast()) }
}

fn to_c(co: &Coro) -> *mut cot_coro {
    co as *const Coro as *mut cot_coro
}

/// The loop task's callback of every coroutine: runs it, lent the loop.
/// Returns the task of the coroutine that gave control back (it may have
/// handed the CPU on, see `cot_coro_yield`).
fn run_task(lp: &mut Loop, h: Handle, wake: Wake, data: usize) -> Handle {
    let co = data as *const Coro;
    // SAFETY: a coroutine's task carries its live block (freeing a coroutine
    // closes its task first, and a closing task never runs).
    let me = unsafe { (*co).owner() } as *mut cot_loop;
    // SAFETY: `me` is the wrapper of `lp` (recorded at creation); the
    // coroutine is not running (its task is run once at a time).
    let last = unsafe { lend(me, lp, || coro::run(co, wake)) };
    // SAFETY: the coroutine that switched back is live: running coroutines
    // cannot be freed.
    let last = unsafe { &*last };
    let task = last.task().unwrap_or(h);
    if last.state() == State::Finished {
        coro::reap(lp, last);
    }
    task
}

/// Makes the coroutine in `place` on `loop`.
///
/// # Safety
/// `loop` is NULL or live; `place` is valid for a `Coro` until it is freed.
unsafe fn make(
    r#loop: *mut cot_loop,
    place: *mut Coro,
    stack: Stack,
    f: unsafe extern "C" fn(*mut c_void) -> *mut c_void,
    arg: *mut c_void,
    boxed: bool,
) -> Result<*mut cot_coro> {
    let owner = r#loop as usize;
    // SAFETY: `loop` is NULL or live, as `with_loop` needs, and `place` valid for a
    // `Coro` until freed, as `Coro::init` needs: `make`'s contract.
    unsafe { with_loop(r#loop, |l| Ok(to_c(Coro::init(place, l, stack, f, arg, owner, run_task, boxed)))) }
}

/// Creates a coroutine that will run `fn(arg)` on `loop`, on a stack of
/// `stack_size` bytes (0: `COT_CORO_STACK_DEFAULT`; rounded up to whole
/// pages, at least `COT_CORO_STACK_MIN`) mapped with a guard page below it,
/// so an overflow faults (SIGSEGV) instead of corrupting memory. It is
/// created, not started (`cot_coro_start`). Stores it in `*co`. Returns 0,
/// `COT_EINVAL` (NULL `loop`, `fn` or `co`), `COT_ENOMEM` (the system
/// refused the mapping: see `vm.max_map_count` in doc/c.md), or `COT_EBUSY`
/// when nested in another call on the loop. On the loop's thread.
///
/// # Safety
/// `loop` is NULL or a live loop; `co` is NULL or writable; `fn(arg)` may run
/// on the loop's thread from `cot_loop_run`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_coro_new(
    r#loop: *mut cot_loop,
    r#fn: cot_coro_fn,
    arg: *mut c_void,
    stack_size: usize,
    co: *mut *mut cot_coro,
) -> c_int {
    let (Some(f), false, false) = (r#fn, co.is_null(), r#loop.is_null()) else { return Error::Inval.code() };
    let stack = match Stack::new(stack_size) {
        Ok(s) => s,
        Err(e) => return e.code(),
    };
    let place = Box::into_raw(Box::<MaybeUninit<Coro>>::new_uninit()).cast::<Coro>();
    // SAFETY: `loop` is NULL or live (the contract) and `place` a fresh box
    // sized for a `Coro`, valid until freed: `make`'s two duties.
    let r = unsafe { make(r#loop, place, stack, f, arg, true) };
    if r.is_err() {
        // SAFETY: not made: the box is still the uninitialised one above.
        drop(unsafe { Box::from_raw(place.cast::<MaybeUninit<Coro>>()) });
    }
    // SAFETY: `co` is non-NULL (checked at the top) and writable by the contract.
    unsafe { write_out(co, r) }
}

/// Creates a coroutine in caller-provided memory: its control block in
/// `*block` and its stack in `stack .. stack + stack_size` (at least
/// `COT_CORO_STACK_MIN` bytes; no guard page), so nothing is allocated for
/// it (the loop's own tables aside). A NULL `stack` maps one of `stack_size`
/// bytes with a guard page instead, as `cot_coro_new`. The memory stays the
/// caller's: the stack is unused once the coroutine finished, the block
/// once it is freed (`cot_coro_free`). The coroutine is `(cot_coro *)block`;
/// it is also stored in `*co` if `co` is not NULL. Returns 0, `COT_EINVAL`
/// (NULL `loop`, `block` or `fn`, a stack too small), `COT_EBUSY` (the block
/// holds a coroutine not freed yet, or nested in another call on the loop),
/// or `COT_ENOMEM` (mapping refused). On the loop's thread.
///
/// # Safety
/// `loop` is NULL or a live loop; `block` is NULL or writable and stays
/// valid, unmoved, until the coroutine is freed; `stack` is NULL or valid
/// for `stack_size` bytes, used by nothing else until the coroutine
/// finished or is freed; `fn(arg)` may run on the loop's thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_coro_init(
    r#loop: *mut cot_loop,
    block: *mut cot_coro_block,
    stack: *mut c_void,
    stack_size: usize,
    r#fn: cot_coro_fn,
    arg: *mut c_void,
    co: *mut *mut cot_coro,
) -> c_int {
    let (Some(f), false, false) = (r#fn, block.is_null(), r#loop.is_null()) else { return Error::Inval.code() };
    // SAFETY: `block` is writable, so readable for its size.
    if unsafe { check(block.cast()) }.is_ok() {
        return Error::Busy.code();
    }
    let stack = if stack.is_null() {
        Stack::new(stack_size)
    } else {
        // SAFETY: the caller lends `stack .. stack + stack_size`.
        unsafe { Stack::lent(stack.cast(), stack_size) }
    };
    let stack = match stack {
        Ok(s) => s,
        Err(e) => return e.code(),
    };
    // SAFETY: `block` is non-NULL (checked), fits a `Coro` (checked at compile
    // time above) and stays valid, unmoved (the contract); `loop` NULL or live.
    let r = unsafe { make(r#loop, block.cast(), stack, f, arg, false) };
    match r {
        // SAFETY: `co` is non-NULL (the guard) and, by the contract, writable.
        Ok(p) if !co.is_null() => unsafe { write_out(co, Ok(p)) },
        r => status(r.map(drop)),
    }
}

/// Starts a created coroutine: it goes to the tail of its loop's ready
/// queue and runs from `cot_loop_run`. Returns 0, `COT_EBUSY` (started
/// already), or `COT_EINVAL` (NULL, freed, finished). On the loop's thread,
/// from anywhere (a callback, another coroutine).
///
/// # Safety
/// `co` is NULL or a coroutine not freed (or its block).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_coro_start(co: *mut cot_coro) -> c_int {
    // SAFETY: `co` is NULL or not freed (the contract), as `check` needs; a
    // live coroutine's loop is live, which `with_loop` needs.
    status(unsafe { check(co).and_then(|c| with_loop(c.owner() as *mut cot_loop, |l| coro::start(l, c))) })
}

/// Makes the coroutine ready: a created one starts; a waiting one's waiting
/// call ends with `COT_ECANCELED` (unless what it waited for came first: the
/// first reason to run wins) when it runs, in turn, from the ready queue.
/// Returns 1, 0 if it was ready already (or woken already), `COT_EBUSY` while
/// it runs, `COT_EINVAL` (NULL, freed, finished). On the loop's thread.
///
/// # Safety
/// `co` is NULL or a coroutine not freed (or its block).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_coro_wake(co: *mut cot_coro) -> c_int {
    // SAFETY: `check` gets `co` NULL or not freed (the contract); the loop of a live
    // coroutine is live, so `with_loop` may use it.
    boolean(unsafe { check(co).and_then(|c| with_loop(c.owner() as *mut cot_loop, |l| coro::wake(l, c))) })
}

/// Runs a created or ready coroutine now, on the caller's stack, until it
/// suspends or finishes (it leaves the ready queue: its turn is now). From
/// outside coroutines or from another coroutine (which is suspended
/// meanwhile and continues when this one suspends). Returns its status then
/// (`COT_CORO_READY`, `COT_CORO_WAITING` or `COT_CORO_FINISHED`),
/// `COT_EBUSY` if it runs or waits (wake it with `cot_coro_wake` and let the
/// loop run it), or `COT_EINVAL` (NULL, freed, finished). On the loop's
/// thread.
///
/// # Safety
/// `co` is NULL or a coroutine not freed (or its block).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_coro_resume(co: *mut cot_coro) -> c_int {
    // SAFETY: `co` is NULL or a coroutine not freed: the contract, which `check`
    // needs; its loop outlives it, as `with_loop` needs.
    let r = unsafe {
        check(co).and_then(|c| {
            with_loop(c.owner() as *mut cot_loop, |l| coro::resume(l, c))?;
            Ok(state_code(c.state()))
        })
    };
    r.unwrap_or_else(|e| e.code())
}

/// Frees a coroutine that is not running: a waiting or ready one leaves
/// what it waited for and its queue (its frames are abandoned, without
/// running any cleanup), a mapped stack is unmapped, a block from
/// `cot_coro_new` is freed; `cot_coro_init`'s block and stack are the
/// caller's again. Returns 0, `COT_EBUSY` (it is running, e.g. freeing
/// itself, or coroutines are joining it), or `COT_EINVAL` (NULL, freed). A
/// finished coroutine may be freed after its loop was closed. On the loop's
/// thread.
///
/// # Safety
/// `co` is NULL or a coroutine not freed (or its block); after success it is
/// not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_coro_free(co: *mut cot_coro) -> c_int {
    // SAFETY: `co` is NULL or not freed (the contract), as `check` needs; an
    // unfinished coroutine has a task, so its loop cannot have been closed.
    status(unsafe {
        check(co).and_then(|c| {
            let p = c as *const Coro;
            match c.task() {
                Some(_) => with_loop(c.owner() as *mut cot_loop, |l| coro::free(Some(l), p)),
                None => coro::free(None, p),
            }
        })
    })
}

/// The coroutine's status: `COT_CORO_CREATED`, `COT_CORO_READY`,
/// `COT_CORO_RUNNING`, `COT_CORO_WAITING` or `COT_CORO_FINISHED`; or
/// `COT_EINVAL` (NULL, freed).
///
/// # Safety
/// `co` is NULL or a coroutine not freed (or its block).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_coro_status(co: *const cot_coro) -> c_int {
    // SAFETY: `check` reads `co`, NULL or not freed by `cot_coro_status`'s contract.
    unsafe { check(co) }.map(|c| state_code(c.state())).unwrap_or_else(|e| e.code())
}

/// Stores the value the finished coroutine's function returned in `*result`.
/// Returns 0, `COT_EBUSY` (not finished), or `COT_EINVAL` (NULL, freed).
///
/// # Safety
/// `co` is NULL or a coroutine not freed (or its block); `result` is NULL or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_coro_result(co: *const cot_coro, result: *mut *mut c_void) -> c_int {
    // SAFETY: the contract makes `co` NULL or not freed, which is what `check` needs.
    let r = unsafe { check(co) }.and_then(|c| c.result().ok_or(Error::Busy));
    // SAFETY: `result` is NULL or writable (the contract); `write_out` refuses NULL.
    unsafe { write_out(result, r) }
}

/// The coroutine running on this thread, NULL outside coroutines. Safe from
/// any thread.
#[unsafe(no_mangle)]
pub extern "C" fn cot_coro_current() -> *mut cot_coro {
    coro::current() as *mut cot_coro
}

/// The loop the coroutine runs on, NULL for NULL or a freed coroutine.
///
/// # Safety
/// `co` is NULL or a coroutine not freed (or its block).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_coro_loop(co: *const cot_coro) -> *mut cot_loop {
    // SAFETY: `co` is NULL or not freed (the contract), all `check` needs; the loop
    // pointer is returned, not used.
    unsafe { check(co) }.map_or(std::ptr::null_mut(), |c| c.owner() as *mut cot_loop)
}

/// The `arg` the coroutine was created with, NULL for NULL or a freed
/// coroutine.
///
/// # Safety
/// `co` is NULL or a coroutine not freed (or its block).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_coro_arg(co: *const cot_coro) -> *mut c_void {
    // SAFETY: `check` asks `co` to be NULL or not freed: `cot_coro_arg`'s contract.
    unsafe { check(co) }.map_or(std::ptr::null_mut(), |c| c.arg())
}

// ===== waiting calls, inside a coroutine =====

/// Arms a wait of the running coroutine with its loop, then suspends it in
/// `state`; returns why it runs again. `Error::Perm` outside coroutines.
fn wait(state: State, arm: impl FnOnce(&mut Loop, &Coro) -> Result<()>) -> Result<Wake> {
    wait_if(state, |l, co| arm(l, co).map(|()| ((), true))).map(|(_, w)| w.unwrap_or(Wake::Resumed))
}

/// [`wait`] where `arm` also says whether to suspend (`false`: what the
/// coroutine waits for is there already). Returns what `arm` returned and,
/// if it suspended, why it runs again.
pub(super) fn wait_if<T>(
    state: State,
    arm: impl FnOnce(&mut Loop, &Coro) -> Result<(T, bool)>,
) -> Result<(T, Option<Wake>)> {
    let co = coro::running()?;
    // SAFETY: a running coroutine's loop is live, and lent to it by its task's
    // callback: `with_loop` reborrows that loan.
    let (armed, suspend) = unsafe { with_loop(co.owner() as *mut cot_loop, |l| arm(l, co))? };
    if !suspend {
        return Ok((armed, None));
    }
    // SAFETY: `co` is the running coroutine; `with_loop` returned, so no
    // reference into the loop is held.
    let wake = unsafe { coro::suspend(co, state) };
    Ok((armed, Some(wake)))
}

/// Yields: the running coroutine goes to the tail of its loop's ready queue
/// and runs again in its turn (in the loop's next iteration: a coroutine
/// that keeps yielding does not starve I/O). When the next ready task is
/// another coroutine, the CPU goes straight to it, without a detour through
/// the loop's stack. Its turn's count of calls (`COT_BUDGET`) starts again.
/// Returns 0, or `COT_EPERM` outside coroutines.
#[unsafe(no_mangle)]
pub extern "C" fn cot_coro_yield() -> c_int {
    status(coro::running().and_then(yield_now))
}

/// Yields the running coroutine `co` (see `cot_coro_yield`).
fn yield_now(co: &Coro) -> Result<()> {
    // SAFETY: a running coroutine's loop is live, and lent to it by its task's
    // callback: `with_loop` reborrows that loan.
    let next = unsafe { with_loop(co.owner() as *mut cot_loop, |l| coro::arm_yield_pass(l, co, run_task)) }?;
    match next {
        // SAFETY: `co` runs; `next` is the ready coroutine the loop would run
        // next, taken out of its queue; no loop reference is held.
        Some(next) => unsafe { coro::hand_off(co, next) },
        // SAFETY: as in `wait_if`.
        None => unsafe { coro::suspend(co, State::Ready) },
    };
    Ok(())
}

/// Called by every waiting call that may end without suspending (a socket
/// call whose data is there, a channel's, an await of what has ended), before
/// it tries: counts the call in the running coroutine's turn and, past
/// `sched::BUDGET` calls, yields first, so a coroutine whose data never runs
/// out still lets its loop's timers, I/O and other tasks run. Nothing was
/// tried yet, so nothing is lost. Outside coroutines it does nothing (the
/// call answers `COT_EPERM` itself).
pub(super) fn fair() {
    if let Ok(co) = coro::running()
        && co.spend()
    {
        let _ = yield_now(co); // cannot fail for a running coroutine; if it did, the call goes on
        co.spend(); // the first call of the new turn
    }
}

/// Sleeps `ns` nanoseconds from the call (`COT_FOREVER`: until woken).
/// Returns 0 once slept, `COT_ECANCELED` if woken before (`cot_coro_wake`),
/// `COT_EINVAL` (a bad `ns`: see `COT_FOREVER`), or `COT_EPERM` outside
/// coroutines.
#[unsafe(no_mangle)]
pub extern "C" fn cot_coro_sleep(ns: u64) -> c_int {
    status(wait(State::Waiting, |l, co| coro::arm_sleep(l, co, checked(ns)?)).and_then(coro::sleep_result))
}

/// Waits until `signal` (any non-NULL address, a key of the loop's
/// scheduler) is notified with `cot_loop_notify`, or for at most
/// `timeout_ns` (`COT_CORO_FOREVER`: no limit). Returns 0 when notified,
/// `COT_ETIMEDOUT`, `COT_ECANCELED` (woken by `cot_coro_wake`), `COT_EINVAL`
/// (NULL signal), or `COT_EPERM` outside coroutines. A notification is not
/// remembered: only coroutines waiting when it comes are woken.
#[unsafe(no_mangle)]
pub extern "C" fn cot_coro_wait(signal: *const c_void, timeout_ns: u64) -> c_int {
    let key = signal as usize;
    let r = wait(State::Waiting, |l, co| coro::arm_wait(l, co, key, timeout(timeout_ns)?));
    status(r.and_then(coro::wait_result))
}

/// Waits until the descriptor of poll handle `poll` (`cot_poll_init`) is
/// ready for one of `events` (`COT_READABLE`, `COT_WRITABLE`,
/// `COT_DISCONNECT`), or for at most `timeout_ns`. Returns the ready events
/// (> 0), `COT_EBADF` (the handle was closed meanwhile), `COT_ETIMEDOUT`,
/// `COT_ECANCELED` (woken), `COT_EBUSY` (another task waits on the handle),
/// `COT_EINVAL` (bad handle or events), `COT_EPERM` outside coroutines, or
/// the system's refusal of the descriptor (as `cot_poll_start`). While a
/// coroutine waits on it, the handle's own callback is not used.
#[unsafe(no_mangle)]
pub extern "C" fn cot_coro_poll(poll: cot_handle, events: c_int, timeout_ns: u64) -> c_int {
    let (Ok(poll), Ok(events)) = (to_handle(poll), u32::try_from(events)) else { return Error::Inval.code() };
    let r = wait(State::Waiting, |l, co| coro::arm_poll(l, co, poll, events, timeout(timeout_ns)?));
    match r.and_then(coro::poll_result) {
        Ok(ev) => ev as c_int,
        Err(e) => e.code(),
    }
}

/// Runs `work(data)` on a thread of the loop's pool and waits until it ran.
/// Returns 0, `COT_ECANCELED` (woken before it ran: it is cancelled if it has
/// not started, and runs to its end otherwise, so `data` must outlive it;
/// or the pool was stopped), `COT_ENOMEM` (no pool thread could start: the
/// work did not run), `COT_EINVAL` (NULL `work`), or `COT_EPERM` outside
/// coroutines.
///
/// # Safety
/// `work(data)` may run on another thread, concurrently with the loop.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_coro_work(work: cot_work_cb, data: *mut c_void) -> c_int {
    let Some(work) = work else { return Error::Inval.code() };
    if coro::running().is_err() {
        return Error::Perm.code();
    }
    // SAFETY: the caller allowed `work(data)` on a pool thread.
    let run = unsafe { pool_work(work, data) };
    status(wait(State::Waiting, |l, co| coro::arm_work(l, co, run)).and_then(coro::work_result))
}

/// Waits until the future is settled (see `cot_promise_new`), or for at most
/// `timeout_ns` (`COT_CORO_FOREVER`: no limit); read the result with
/// `cot_future_result`. Returns 0 (at once if it is settled already),
/// `COT_ETIMEDOUT`, `COT_ECANCELED` (woken by `cot_coro_wake`), `COT_EINVAL`
/// (NULL), or `COT_EPERM` outside coroutines. The future may be settled on
/// any thread; leaving the wait early leaves the future untouched.
///
/// # Safety
/// `future` is NULL or a live future handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_coro_await(future: *const cot_future, timeout_ns: u64) -> c_int {
    // SAFETY: `future` is NULL or a live future handle (the contract): what
    // `future::future` needs.
    let Ok(f) = (unsafe { super::future::future(future) }) else { return Error::Inval.code() };
    fair();
    let r = wait_if(State::Waiting, |l, co| coro::arm_future(l, co, f, timeout(timeout_ns)?).map(|s| ((), s)));
    status(r.and_then(|(_, w)| w.map_or(Ok(()), coro::future_result)))
}

/// Waits until coroutine `other` (of the same loop) finished, or for at most
/// `timeout_ns`; stores its result in `*result` (if not NULL). Returns 0
/// (at once if it finished already), `COT_ETIMEDOUT`, `COT_ECANCELED`
/// (woken), `COT_EINVAL` (NULL, freed, the caller itself, a coroutine of
/// another loop), or `COT_EPERM` outside coroutines. `other` cannot be freed
/// while joined (`COT_EBUSY`).
///
/// # Safety
/// `other` is NULL or a coroutine not freed (or its block); `result` is NULL
/// or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_coro_join(other: *mut cot_coro, timeout_ns: u64, result: *mut *mut c_void) -> c_int {
    // SAFETY: `other` is NULL or not freed (the contract), as `check` needs; it stays
    // so while this coroutine waits on it.
    let r = unsafe { check(other) }.and_then(|o| {
        fair();
        loop {
            let to = timeout(timeout_ns)?;
            let (_, w) = wait_if(State::Waiting, |l, co| coro::arm_join(l, co, o, to).map(|armed| ((), armed)))?;
            let Some(w) = w else { break Ok(o) }; // finished already
            coro::join_done(o);
            coro::wait_result(w)?;
            if o.state() == State::Finished {
                break Ok(o);
            }
            // Notified otherwise than by its end: wait again.
        }
    });
    match r {
        Ok(o) if !result.is_null() => {
            // SAFETY: `result` is non-NULL (the match guard) and writable by the contract.
            unsafe { write_out(result, o.result().ok_or(Error::Busy)) }
        }
        r => status(r.map(drop)),
    }
}

/// Waits for the first of `n` sources (signals, a poll handle, the end of
/// other coroutines; see `cot_coro_source`), or for at most `timeout_ns`.
/// Returns the index of the source that fired (its `revents` says how; the
/// others' are 0), `COT_ETIMEDOUT`, `COT_ECANCELED` (woken), `COT_EBADF` (the
/// poll handle was closed meanwhile), `COT_EINVAL` (NULL `sources` with
/// `n` > 0, an unknown type, a NULL signal, a bad coroutine, a second poll
/// source, bad events), `COT_EBUSY` (another task waits on the poll handle),
/// or `COT_EPERM` outside coroutines. A coroutine source that finished
/// already fires at once. With `n` = 0 it is a sleep of `timeout_ns` that
/// returns `COT_ETIMEDOUT`.
///
/// # Safety
/// `sources` is NULL or valid for reads and writes of `n` sources; their
/// coroutines are NULL or not freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_coro_wait_any(sources: *mut cot_coro_source, n: usize, timeout_ns: u64) -> c_int {
    if sources.is_null() && n > 0 || n > c_int::MAX as usize {
        return Error::Inval.code();
    }
    if n == 0 && timeout_ns == COT_CORO_FOREVER && coro::running().is_ok() {
        return Error::Inval.code(); // would wait for nothing, forever
    }
    let srcs: &mut [cot_coro_source] =
        // SAFETY: valid for `n` sources (caller's contract); none when n = 0.
        if n == 0 { &mut [] } else { unsafe { std::slice::from_raw_parts_mut(sources, n) } };
    let mut list = Vec::new();
    let mut small = [Source::Signal(1); 8];
    for (i, s) in srcs.iter_mut().enumerate() {
        s.revents = 0;
        let src = match s.r#type {
            COT_SOURCE_SIGNAL => Source::Signal(s.signal as usize),
            COT_SOURCE_POLL => match (to_handle(s.poll), u32::try_from(s.events)) {
                (Ok(p), Ok(ev)) => Source::Poll(p, ev),
                _ => return Error::Inval.code(),
            },
            // SAFETY: NULL or not freed (caller's contract).
            COT_SOURCE_CORO => match unsafe { check(s.coro) } {
                Ok(c) => Source::Coro(c),
                Err(e) => return e.code(),
            },
            _ => return Error::Inval.code(),
        };
        if n <= small.len() {
            small[i] = src;
        } else {
            list.push(src);
        }
    }
    let list: &[Source<'_>] = if n <= small.len() { &small[..n] } else { &list };
    fair();
    let armed = wait_if(State::Waiting, |l, co| {
        let fired = coro::arm_any(l, co, list, timeout(timeout_ns)?)?;
        Ok((fired, fired.is_none()))
    });
    let r = match armed {
        Ok((Some(i), _)) => Ok((i, 1)), // a finished coroutine: no wait
        Ok((None, w)) => {
            coro::any_done(list);
            let w = w.unwrap_or(Wake::Resumed);
            coro::any_result(list, w).map(|(i, ev)| (i, if matches!(list[i], Source::Poll(..)) { ev } else { 1 }))
        }
        Err(e) => Err(e),
    };
    match r {
        Ok((i, revents)) => {
            srcs[i].revents = revents as c_int;
            i as c_int
        }
        Err(e) => e.code(),
    }
}
