//! `cot_loop`: an event loop, and the guard that lends it to callbacks.
//!
//! While the loop runs, it holds its `&mut Loop`; a C callback it calls may call
//! the C API on the same loop. Each callback therefore runs "lent" the loop:
//! the `&mut Loop` the callback received is stored in `current` and API calls
//! made meanwhile reborrow it, instead of making a second, aliasing reference
//! from the loop's storage. `busy` refuses calls that would nest inside an API
//! call (`COT_EBUSY`).

use std::cell::{Cell, RefCell, UnsafeCell};
use std::ffi::c_void;
use std::os::raw::c_int;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::guard::{boolean, status};
use crate::error::{Error, Result};
use crate::net::Socket;
use crate::reactor::{Handle, Loop, RunMode};
use crate::util::slab::Slab;

/// A socket of the C API (`cot_tcp`, `cot_udp`: its key in the loop's table).
pub(crate) struct CSocket {
    pub sock: Socket,
    /// A `cot_udp` (else a `cot_tcp`): each kind's functions refuse the other.
    pub udp: bool,
    /// A TCP connection, counted in its loop's `cot_loop_connections` until
    /// the entry leaves the table (close, release, export, the loop's end).
    pub counted: Option<Counted>,
}

/// One connection in a loop's count: added when made, taken back when
/// dropped, so every way out of the table uncounts it alike.
pub(crate) struct Counted(Arc<AtomicUsize>);

impl Counted {
    pub(crate) fn new(count: &Arc<AtomicUsize>) -> Counted {
        // Relaxed: the count is a hint for a balancer, ordering nothing else.
        count.fetch_add(1, Ordering::Relaxed);
        Counted(count.clone())
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The callback of a name lookup (`cot_getaddrinfo_cb`, non-NULL).
pub(crate) type LookupFn = unsafe extern "C" fn(*mut cot_loop, u64, c_int, *mut libc::addrinfo, *mut c_void);

/// A name lookup with a deadline (`cot_resolve_start`: its key in the loop's
/// table), until its first ending.
pub(crate) struct CResolve {
    /// Its deadline, or its cancel, due.
    pub timer: Option<Handle>,
    pub cancelled: bool,
    pub cb: LookupFn,
    pub data: *mut c_void,
}

/// The C API's objects of a loop beside its handles; dropped with it (an
/// open socket's descriptor is closed then).
#[derive(Default)]
pub(crate) struct Tables {
    pub sockets: RefCell<Slab<CSocket>>,
    pub resolves: RefCell<Slab<CResolve>>,
}

/// An event loop (opaque). Made by `cot_loop_new`, freed by `cot_loop_close`.
pub struct cot_loop {
    /// The thread-safe part, for `cot_async_send` from other threads.
    inbox: Arc<crate::reactor::Inbox>,
    /// How many of its `cot_tcp` are connections (`Counted`); read from any
    /// thread (`cot_loop_connections`, a loop group's balancer).
    connections: Arc<AtomicUsize>,
    current: Cell<*mut Loop>,
    busy: Cell<bool>,
    tables: Tables,
    inner: UnsafeCell<Loop>,
}

impl cot_loop {
    /// The loop behind a live handle, for a face written in Rust that drives
    /// it itself (the Lua module attached to a host's loop): the loop lent to
    /// a callback in progress, or the loop itself. Callbacks registered
    /// through the C API are lent the loop as under `cot_loop_run`.
    ///
    /// # Safety
    /// `p` is a live loop, used on its own thread; the reference is the only
    /// one in use until dropped (no `cot_loop_*` call on `p` meanwhile, except
    /// from the callbacks it runs, which reborrow it).
    pub unsafe fn loop_mut<'a>(p: *mut cot_loop) -> &'a mut Loop {
        // SAFETY: live (caller's contract); only its cells are read.
        let s = unsafe { &*p };
        let lent = s.current.get();
        // SAFETY: the lent loop of a callback in progress, or the inner loop
        // when none runs; the caller holds no other reference to it.
        unsafe { if lent.is_null() { &mut *s.inner.get() } else { &mut *lent } }
    }
}

/// `cot_loop_run` mode: until nothing is alive or `cot_loop_stop`.
pub const COT_RUN_DEFAULT: c_int = 0;
/// `cot_loop_run` mode: one iteration, blocking for I/O if nothing is due.
pub const COT_RUN_ONCE: c_int = 1;
/// `cot_loop_run` mode: one iteration, without blocking.
pub const COT_RUN_NOWAIT: c_int = 2;

/// Runs `f` on the loop behind `p`: `Error::Inval` for NULL, `Error::Busy`
/// when nested in another call on it.
///
/// # Safety
/// `p` is NULL or a live loop, used on its thread.
pub(crate) unsafe fn with_loop<R>(p: *mut cot_loop, f: impl FnOnce(&mut Loop) -> Result<R>) -> Result<R> {
    // SAFETY: NULL or live (caller's contract); a shared reference to the
    // wrapper only reads its cells.
    let Some(s) = (unsafe { p.as_ref() }) else { return Err(Error::Inval) };
    if s.busy.replace(true) {
        return Err(Error::Busy);
    }
    let lent = s.current.get();
    let lp = if lent.is_null() { s.inner.get() } else { lent };
    // SAFETY: not busy, so no reference made by this guard is alive; inside a
    // callback, `lent` is the reference the callback was given, reborrowed.
    let r = f(unsafe { &mut *lp });
    s.busy.set(false);
    r
}

/// The tables of the loop behind `p`, without touching the loop: a
/// completion reaches them while the loop runs. `None` for NULL.
///
/// # Safety
/// `p` is NULL or a live loop, used on its thread.
pub(crate) unsafe fn tables<'a>(p: *mut cot_loop) -> Option<&'a Tables> {
    // SAFETY: NULL or live (caller's contract); the tables are a field
    // apart from the `UnsafeCell` the running loop borrows, so a shared
    // reference to them aliases nothing.
    unsafe { p.as_ref() }.map(|s| &s.tables)
}

/// Calls `f` (a C callback) with the loop lent as `lp`: API calls it makes on
/// `me` reborrow `lp`.
///
/// # Safety
/// `me` is the live wrapper of the loop `lp` belongs to.
pub(crate) unsafe fn lend<R>(me: *mut cot_loop, lp: &mut Loop, f: impl FnOnce() -> R) -> R {
    // SAFETY: `me` is live (contract); only its cells are touched.
    let s = unsafe { &*me };
    let cur = s.current.replace(lp as *mut Loop);
    let busy = s.busy.replace(false);
    let r = f();
    s.current.set(cur);
    s.busy.set(busy);
    r
}

/// The callback of a timer or async handle: `cb(loop, handle, data)`, `data`
/// being the handle's user pointer.
pub type cot_handle_cb = Option<unsafe extern "C" fn(r#loop: *mut cot_loop, handle: cot_handle, data: *mut c_void)>;

/// A non-NULL `cot_handle_cb`.
pub(crate) type HandleFn = unsafe extern "C" fn(*mut cot_loop, cot_handle, *mut c_void);

/// Wraps a C handle callback for the reactor: it runs lent the loop, with the
/// handle's user pointer as it is when the callback fires.
pub(crate) fn handle_callback(me: *mut cot_loop, cb: HandleFn) -> crate::reactor::Callback {
    Box::new(move |lp, h| {
        let data = lp.data(h).unwrap_or(0) as *mut c_void;
        // SAFETY: `me` wraps `lp` and outlives its handles' callbacks; `cb`
        // may be called from the loop (the registering caller's contract).
        unsafe { lend(me, lp, || cb(me, h.to_raw(), data)) }
    })
}

/// A reactor callback with one argument beside the handle.
pub(crate) type ArgCallback<A> = Box<dyn FnMut(&mut Loop, Handle, A)>;

/// Wraps a C callback with one argument for the reactor (a poll's events, a
/// signal number, ...): `call(loop, handle, arg, data)` runs lent the loop,
/// with the handle's user pointer as it is when the callback fires.
pub(crate) fn lent_callback<A: 'static>(
    me: *mut cot_loop,
    call: impl Fn(*mut cot_loop, cot_handle, A, *mut c_void) + 'static,
) -> ArgCallback<A> {
    Box::new(move |lp, h, arg| {
        let data = lp.data(h).unwrap_or(0) as *mut c_void;
        // SAFETY: `me` wraps `lp` and outlives its handles' callbacks.
        unsafe { lend(me, lp, || call(me, h.to_raw(), arg, data)) }
    })
}

/// The handle as a C value.
pub(crate) fn to_handle(raw: u64) -> Result<Handle> {
    Handle::from_raw(raw).ok_or(Error::Inval)
}

/// Creates an event loop with its own scheduler for timers. Returns NULL if
/// the system refuses (no file descriptors left). Free it with
/// `cot_loop_close`. A loop is used from one thread, but `cot_async_send` may
/// be called from any.
#[unsafe(no_mangle)]
pub extern "C" fn cot_loop_new() -> *mut cot_loop {
    match Loop::new() {
        Ok(l) => Box::into_raw(Box::new(cot_loop {
            inbox: l.inbox().clone(),
            connections: Arc::default(),
            current: Cell::new(std::ptr::null_mut()),
            busy: Cell::new(false),
            tables: Tables::default(),
            inner: UnsafeCell::new(l),
        })),
        Err(_) => std::ptr::null_mut(),
    }
}

/// Frees a loop. Returns `COT_EBUSY` (freeing nothing) while handles remain
/// or when called from a callback; NULL is accepted (returns 0). A handle
/// closed with a close callback remains until a run called it; one closed
/// without (a coroutine freed unfinished closes its task so) does not.
///
/// # Safety
/// `loop` is NULL or a live loop.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_loop_close(r#loop: *mut cot_loop) -> c_int {
    if r#loop.is_null() {
        return 0;
    }
    // SAFETY: `loop` is non-NULL (checked) and live (the contract). Outside
    // any callback (`current` NULL), no reference into the loop is alive once
    // `with_loop` returned, so the box may be dropped.
    unsafe {
        let r = with_loop(r#loop, |l| l.free_quietly_closed().and_then(|()| l.check_close()));
        if r.is_ok() && (*r#loop).current.get().is_null() {
            drop(Box::from_raw(r#loop));
            return 0;
        }
        status(r.and(Err(Error::Busy)))
    }
}

/// Frees a loop whatever it still holds: its handles and sockets are
/// dropped (descriptors closed), its queued posts dropped unrun. For a
/// group's loop once it ended.
///
/// # Safety
/// `p` is a live loop made by `cot_loop_new`, not running and not lent to a
/// callback, and never used after.
pub(crate) unsafe fn free(p: *mut cot_loop) {
    // SAFETY: made by `cot_loop_new`'s `Box`, live, and no reference into it
    // is alive (the contract).
    drop(unsafe { Box::from_raw(p) });
}

/// Runs the loop: `COT_RUN_DEFAULT` until nothing is alive (no active handle,
/// no close callback due) or `cot_loop_stop`; `COT_RUN_ONCE` one iteration,
/// blocking for I/O if nothing is due; `COT_RUN_NOWAIT` one iteration without
/// blocking. Callbacks run from here. Returns 1 if the loop is still alive, 0
/// if not, `COT_EBUSY` when called from one of its callbacks, `COT_EINVAL`
/// for a bad mode, or the system error of the poll.
///
/// # Safety
/// `loop` is NULL or a live loop.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_loop_run(r#loop: *mut cot_loop, mode: c_int) -> c_int {
    let mode = match mode {
        COT_RUN_DEFAULT => RunMode::Default,
        COT_RUN_ONCE => RunMode::Once,
        COT_RUN_NOWAIT => RunMode::NoWait,
        _ => return Error::Inval.code(),
    };
    // SAFETY: `loop` is NULL or live (the contract). Not lent to a callback and not
    // busy, so no other reference to the inner loop exists while it runs.
    unsafe {
        let Some(s) = r#loop.as_ref() else { return Error::Inval.code() };
        if !s.current.get().is_null() || s.busy.get() {
            return Error::Busy.code();
        }
        let _running = Running::enter(r#loop);
        // Run without the busy flag: callbacks are lent the loop instead.
        boolean((*s.inner.get()).run(mode))
    }
}

thread_local! {
    /// The loop this thread runs now: inside `cot_loop_run`, or for the
    /// whole life of a group's thread. NULL elsewhere.
    static RUNNING: Cell<*mut cot_loop> = const { Cell::new(std::ptr::null_mut()) };
}

/// Marks a loop as the one this thread runs, until dropped (then the one it
/// ran before, for a loop run from another's callback).
pub(crate) struct Running(*mut cot_loop);

impl Running {
    pub(crate) fn enter(p: *mut cot_loop) -> Running {
        Running(RUNNING.replace(p))
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        RUNNING.set(self.0);
    }
}

/// The loop the calling thread runs now (see [`cot_loop_current`]).
pub(crate) fn running() -> *mut cot_loop {
    RUNNING.get()
}

/// The loop the calling thread runs: the one whose `cot_loop_run` is in
/// progress on this thread (its callbacks and coroutines see it), or, on a
/// thread of a loop group, that thread's loop. NULL on any other thread.
#[unsafe(no_mangle)]
pub extern "C" fn cot_loop_current() -> *mut cot_loop {
    running()
}

/// Makes `cot_loop_run` return after the current iteration. Returns 0 or
/// `COT_EINVAL`.
///
/// # Safety
/// `loop` is NULL or a live loop.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_loop_stop(r#loop: *mut cot_loop) -> c_int {
    // SAFETY: `with_loop` needs `loop` NULL or live, this function's contract; a stop
    // only sets a flag.
    status(unsafe {
        with_loop(r#loop, |l| {
            l.stop();
            Ok(())
        })
    })
}

/// Returns 1 if the loop has active handles or close callbacks due, 0 if
/// not, or `COT_EINVAL`.
///
/// # Safety
/// `loop` is NULL or a live loop.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_loop_alive(r#loop: *mut cot_loop) -> c_int {
    // SAFETY: `loop` is NULL or live by the contract, which is all `with_loop` asks
    // for a read.
    boolean(unsafe { with_loop(r#loop, |l| Ok(l.alive())) })
}

/// The loop's cached time: `CLOCK_MONOTONIC` nanoseconds, updated at the
/// start of each iteration (timers count from it; an iteration with nothing
/// postponed reads the clock only when the time is first needed, e.g. here).
/// 0 for a bad `loop`.
///
/// # Safety
/// `loop` is NULL or a live loop.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_loop_now(r#loop: *mut cot_loop) -> u64 {
    // SAFETY: reading the clock needs only the loop, NULL or live (the contract), as
    // `with_loop` requires.
    unsafe { with_loop(r#loop, |l| Ok(l.now_fresh())) }.unwrap_or(0)
}

/// Updates the loop's cached time.
///
/// # Safety
/// `loop` is NULL or a live loop.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_loop_update_time(r#loop: *mut cot_loop) -> c_int {
    // SAFETY: `with_loop` gets `loop` NULL or live from the contract; the update
    // writes the loop's cached time.
    status(unsafe {
        with_loop(r#loop, |l| {
            l.update_time();
            Ok(())
        })
    })
}

/// The loop's epoll descriptor, to embed the loop in another one (as
/// `uv_backend_fd`): when it is readable, or after `cot_loop_backend_timeout`
/// ms, run this loop with `COT_RUN_NOWAIT`. `COT_EINVAL` for a bad `loop`.
///
/// # Safety
/// `loop` is NULL or a live loop.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_loop_backend_fd(r#loop: *mut cot_loop) -> c_int {
    // SAFETY: the contract gives `loop` NULL or live, `with_loop`'s need; the
    // descriptor is returned by value.
    match unsafe { with_loop(r#loop, |l| Ok(l.backend_fd())) } {
        Ok(fd) => fd,
        Err(e) => e.code(),
    }
}

/// How long a host may block on the backend descriptor, in ms from now
/// (rounded up): -1 when no timer is pending, 0 when something is due (or on
/// a bad `loop`).
///
/// # Safety
/// `loop` is NULL or a live loop.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_loop_backend_timeout(r#loop: *mut cot_loop) -> c_int {
    // SAFETY: `loop` is NULL or live (the contract) for `with_loop`; the timeout is
    // computed from its timers alone.
    unsafe { with_loop(r#loop, |l| Ok(l.backend_timeout())) }.unwrap_or(0)
}

// ===== handles in general =====

/// A handle of a loop (timer, poll, async): a plain value, never 0, valid until
/// its close callback ran. A closed or unknown handle, or one of another type
/// than the function expects, is refused with `COT_EINVAL`.
pub type cot_handle = u64;

/// Runs after `cot_close`, later, from `cot_loop_run`; the handle is already
/// invalid then. `data` is the handle's user pointer.
pub type cot_close_cb = Option<unsafe extern "C" fn(r#loop: *mut cot_loop, handle: cot_handle, data: *mut c_void)>;

/// Closes a handle: stops it at once; `cb` (may be NULL) runs later from
/// `cot_loop_run`, never from `cot_close` itself, after which the handle is
/// invalid. May be called from the handle's own callback. Returns 0, or
/// `COT_EINVAL` for a bad, closed or closing handle.
///
/// # Safety
/// `loop` is NULL or a live loop; `cb`, if set, may be called from
/// `cot_loop_run`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_close(r#loop: *mut cot_loop, handle: cot_handle, cb: cot_close_cb) -> c_int {
    let me = r#loop;
    // SAFETY: `loop` is NULL or live (for `with_loop`); `close_callback` relies on
    // `cb` being callable from the loop: both this contract's.
    status(unsafe {
        with_loop(r#loop, |l| {
            let h = to_handle(handle)?;
            let data = l.data(h)? as *mut c_void;
            l.close(h, cb.map(|f| close_callback(me, f, data)))
        })
    })
}

/// Wraps a C close callback; `data` is the user pointer at the time of closing.
fn close_callback(me: *mut cot_loop, f: HandleFn, data: *mut c_void) -> crate::reactor::CloseCallback {
    Box::new(move |lp, h| {
        // SAFETY: as in `handle_callback`.
        unsafe { lend(me, lp, || f(me, h.to_raw(), data)) }
    })
}

/// Stores the handle's user pointer in `*data`. Returns 0 or `COT_EINVAL`.
///
/// # Safety
/// `loop` is NULL or a live loop; `data` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_handle_data(r#loop: *mut cot_loop, handle: cot_handle, data: *mut *mut c_void) -> c_int {
    // SAFETY: the contract makes `loop` NULL or live and `data` NULL or
    // writable: what `with_loop` and `write_out` need.
    unsafe { super::guard::write_out(data, with_loop(r#loop, |l| Ok(l.data(to_handle(handle)?)? as *mut c_void))) }
}

/// Replaces the handle's user pointer. Returns 0 or `COT_EINVAL`.
///
/// # Safety
/// `loop` is NULL or a live loop.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_handle_set_data(r#loop: *mut cot_loop, handle: cot_handle, data: *mut c_void) -> c_int {
    // SAFETY: `data` is stored as a number, never read through; `loop` is NULL or
    // live by the contract, as `with_loop` needs.
    status(unsafe { with_loop(r#loop, |l| l.set_data(to_handle(handle)?, data as usize)) })
}

/// Returns 1 if the handle is active (a started timer or poll, an async), 0
/// if not, or `COT_EINVAL`.
///
/// # Safety
/// `loop` is NULL or a live loop.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_handle_is_active(r#loop: *mut cot_loop, handle: cot_handle) -> c_int {
    // SAFETY: `with_loop` asks `loop` to be NULL or live: the contract. The handle
    // is a key the loop checks.
    boolean(unsafe { with_loop(r#loop, |l| l.is_active(to_handle(handle)?)) })
}

/// The inbox of a loop, for `cot_async_send`, without touching the loop.
///
/// # Safety
/// `p` is NULL or a live loop (possibly running on another thread).
pub(crate) unsafe fn inbox<'a>(p: *mut cot_loop) -> Option<&'a Arc<crate::reactor::Inbox>> {
    // SAFETY: a reference to the immutable, thread-safe `inbox` field only; no
    // reference to the whole wrapper (whose cells the loop thread uses) is made.
    unsafe { (!p.is_null()).then(|| &*std::ptr::addr_of!((*p).inbox)) }
}

/// The connection count of a loop, without touching the loop.
///
/// # Safety
/// `p` is NULL or a live loop (possibly running on another thread).
pub(crate) unsafe fn connections<'a>(p: *mut cot_loop) -> Option<&'a Arc<AtomicUsize>> {
    // SAFETY: as in `inbox`: a reference to the `connections` field alone,
    // which is never written after `cot_loop_new` and is `Sync`; the loop's
    // thread uses the other fields (cells, tables, the loop), none of which
    // this reference covers.
    unsafe { (!p.is_null()).then(|| &*std::ptr::addr_of!((*p).connections)) }
}

/// The counter behind `cot_loop_connections`, for a loop group choosing the
/// least loaded of its loops: it stays readable after the loop is closed.
///
/// # Safety
/// `p` is a live loop (possibly running on another thread).
pub(crate) unsafe fn connection_counter(p: *mut cot_loop) -> Arc<AtomicUsize> {
    // SAFETY: live by the contract, which is what `connections` asks.
    unsafe { connections(p) }.cloned().unwrap_or_default()
}

/// How many of the loop's `cot_tcp` are connections: accepted, connected
/// (`cot_tcp_connect` or `cot_coro_connect` that succeeded), imported
/// (`cot_tcp_import` of a connection), or adopted connected
/// (`cot_tcp_open`), counted until their close, release or export. Not
/// listeners, not UDP. `COT_EINVAL` for NULL. **Safe from any thread**
/// while the loop lives: a balancer reads it while the loop runs elsewhere.
///
/// # Safety
/// `loop` is NULL or a live loop.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_loop_connections(r#loop: *mut cot_loop) -> i64 {
    // SAFETY: NULL or live (the contract), as `connections` asks; it forms no
    // reference to the parts the loop's own thread uses.
    match unsafe { connections(r#loop) } {
        Some(c) => c.load(Ordering::Relaxed) as i64,
        None => Error::Inval.code() as i64,
    }
}
