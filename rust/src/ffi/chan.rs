//! Channels between coroutines (`cot_chan_*`, `cot_coro_chan_*`,
//! `cot_coro_select`), of one loop or of several, on any threads. The
//! channel is `reactor::Chan`; a coroutine that must wait tries each case
//! and, if none can be done, counts itself parked on their channels in the
//! same try (`Chan::recv_or_park`, `send_or_park`), parks on their keys as
//! `cot_coro_wait` does (or `cot_coro_wait_any`, for several cases), then
//! tries again, still counted (`Parked::Again`), until it succeeds, a
//! channel closes, or its time is up; then it is uncounted everywhere (and
//! by `cot_coro_free`, through the coroutine's undo hook, if it is freed
//! meanwhile). A call outside a wait uses the loop the calling thread
//! runs (`loop_::running`), if any: its parked coroutines are woken at once,
//! those of other loops through a post.

use std::ffi::c_void;
use std::os::raw::c_int;
use std::rc::Rc;

use super::coro::{fair, wait_if};
use super::guard::{boolean, status, write_out};
use super::loop_::{cot_loop, running, with_loop};
use super::timeout::timeout;
use crate::error::{Error, Result};
use crate::reactor::{Chan, Loop, Parked, Side};
use crate::stack::State;
use crate::stack::coro::{self, Source, Undo};

/// A channel (opaque): a FIFO of fixed-size items, copied in and out,
/// between the coroutines and callbacks of any loops and any threads. Made
/// by `cot_chan_new`, freed by `cot_chan_free`.
pub struct cot_chan {
    chan: Chan,
}

/// `cot_chan_case` operation: send the item.
pub const COT_CHAN_SEND: c_int = 1;
/// `cot_chan_case` operation: receive into the item.
pub const COT_CHAN_RECV: c_int = 2;

/// One case of `cot_coro_select`: a send or a receive on a channel.
#[repr(C)]
pub struct cot_chan_case {
    /// The channel.
    pub chan: *mut cot_chan,
    /// `COT_CHAN_SEND` or `COT_CHAN_RECV`.
    pub op: c_int,
    /// The item to send, or where to receive one (the channel's item size).
    pub item: *mut c_void,
    /// Written by `cot_coro_select` for the case it returns: 0 (done) or
    /// `COT_EPIPE` (the channel is closed: for a receive, also drained).
    pub result: c_int,
}

/// The channel behind a C pointer.
///
/// # Safety
/// `p` is NULL or a live channel.
unsafe fn check<'a>(p: *const cot_chan) -> Result<&'a cot_chan> {
    // SAFETY: NULL or live (caller's contract).
    unsafe { p.as_ref() }.ok_or(Error::Inval)
}

/// Runs `f` lent the loop the calling thread runs, if there is one and no
/// other call holds it; else with `None` (the channel then posts every
/// wake, its own loop's too).
fn with_here<R>(f: impl FnOnce(Option<&mut Loop>) -> R) -> R {
    let mut f = Some(f);
    // SAFETY: `running()` is NULL or the loop whose run is in progress on
    // this thread (or a group's loop, on its own thread): live and used on
    // its thread, which is what `with_loop` asks. It lends the loop only if
    // no call holds it; a callback's loan is reborrowed.
    let lent = unsafe { with_loop(running(), |l| Ok(f.take().map(|f| f(Some(l))))) };
    match (lent, f) {
        (Ok(Some(r)), _) => r,
        (_, Some(f)) => f(None),
        (_, None) => unreachable!("`with_loop` failed after calling its function, which cannot fail"),
    }
}

/// One case, checked: its channel, its side, its item.
#[derive(Clone, Copy)]
struct Case<'a> {
    chan: &'a cot_chan,
    side: Side,
    item: *mut c_void,
}

impl Case<'_> {
    /// Tries the case once: `Ok(true)` done, `Ok(false)` it must wait.
    /// With `park`, a case that must wait is counted as parked on `l`, and
    /// `parked` says whether it was (see `Chan::recv_or_park`).
    ///
    /// # Safety
    /// `item` is valid for the channel's item size (written for a receive).
    unsafe fn try_in(&self, l: &mut Loop, park: bool, parked: Parked) -> Result<bool> {
        let (c, n, item) = (&self.chan.chan, self.chan.chan.item_size(), self.item.cast::<u8>());
        match self.side {
            Side::Send => {
                // SAFETY: readable for the item size (caller's contract).
                let item = unsafe { std::slice::from_raw_parts(item, n) };
                if park { c.send_or_park(l, item, parked) } else { c.try_send(Some(l), item) }
            }
            Side::Recv => {
                // SAFETY: writable for the item size (caller's contract).
                let out = unsafe { std::slice::from_raw_parts_mut(item, n) };
                if park { c.recv_or_park(l, out, parked) } else { c.try_recv(Some(l), out) }
            }
        }
    }

    /// [`Case::try_in`] outside a wait, on the calling thread's loop if any.
    ///
    /// # Safety
    /// As for `try_in`.
    unsafe fn try_alone(&self) -> Result<bool> {
        let (c, n, item) = (&self.chan.chan, self.chan.chan.item_size(), self.item.cast::<u8>());
        match self.side {
            // SAFETY: `item` is readable for the item size (this function's contract).
            Side::Send => with_here(|here| c.try_send(here, unsafe { std::slice::from_raw_parts(item, n) })),
            // SAFETY: `item` is writable for the item size, as this function requires.
            Side::Recv => with_here(|here| c.try_recv(here, unsafe { std::slice::from_raw_parts_mut(item, n) })),
        }
    }

    /// The key a waiter of this case parks on.
    fn key(&self) -> usize {
        self.chan.chan.key(self.side)
    }
}

/// The cases a coroutine is counted as parked on, for `cot_coro_free` to
/// uncount if it frees the coroutine meanwhile (its stack is abandoned).
/// One allocation for the usual single case, and no reference count of the
/// channels: a channel a coroutine is counted on cannot be freed.
enum Hook {
    One(*const cot_chan, Side),
    Many(Vec<(*const cot_chan, Side)>),
}

impl Hook {
    fn new(cases: &[Case<'_>]) -> Hook {
        match cases {
            [c] => Hook::One(c.chan, c.side),
            _ => Hook::Many(cases.iter().map(|c| (c.chan as *const cot_chan, c.side)).collect()),
        }
    }
}

impl Undo for Hook {
    fn undo(&self, l: &mut Loop) {
        let mut unpark = |&(c, side): &(*const cot_chan, Side)| {
            // SAFETY: the hook is set only while the coroutine is counted as
            // parked on these channels, and `cot_chan_free` refuses a channel
            // with a task counted: each is live.
            unsafe { &*c }.chan.unpark(l, side)
        };
        match self {
            Hook::One(c, side) => unpark(&(*c, *side)),
            Hook::Many(all) => all.iter().for_each(unpark),
        }
    }
}

fn unpark_all(cases: &[Case<'_>], l: &mut Loop) {
    cases.iter().for_each(|c| c.chan.chan.unpark(l, c.side));
}

/// Tries each case once, in order: the first that ends (done, or its
/// channel closed) with its index. With `park`, the cases that must wait
/// are counted as parked on `l`, until one ends: then the others are
/// uncounted. `parked`: they were all counted by the previous round.
///
/// # Safety
/// The cases' items are valid for their channels' item size.
unsafe fn attempt(cases: &[Case<'_>], l: &mut Loop, park: bool, parked: Parked) -> Result<Option<(usize, Result<()>)>> {
    for (i, c) in cases.iter().enumerate() {
        // SAFETY: each item is valid for its channel's item size (the contract).
        let r = unsafe { c.try_in(l, park, parked) };
        let end = match r {
            Ok(false) => continue,
            Ok(true) => Ok(Some((i, Ok(())))),
            Err(Error::Pipe) => Ok(Some((i, Err(Error::Pipe)))),
            Err(e) => Err(e),
        };
        if park {
            unpark_all(&cases[..i], l); // counted by their failed tries
            if parked == Parked::Again {
                unpark_all(&cases[i + 1..], l); // still counted from the last round
            }
        }
        return end;
    }
    Ok(None)
}

/// Waits in the running coroutine for the first of `cases` that can be
/// done, trying them in order, for at most `timeout_ns`. Returns its index
/// and its result (done, or `Error::Pipe`). Past the turn's budget it
/// yields before the first try (`fair`). The channels may be of any loop.
///
/// # Safety
/// The cases' items are valid for their channels' item size.
unsafe fn select(cases: &[Case<'_>], timeout_ns: u64) -> Result<(usize, Result<()>)> {
    let me = coro::running()?;
    let limit = timeout(timeout_ns)?;
    if cases.is_empty() {
        return Err(Error::Inval);
    }
    let mut small = [Source::Signal(1); 4];
    let mut many = Vec::new();
    let sources: &[Source<'_>] = if cases.len() <= small.len() {
        for (s, c) in small.iter_mut().zip(cases) {
            *s = Source::Signal(c.key());
        }
        &small[..cases.len()]
    } else {
        many.extend(cases.iter().map(|c| Source::Signal(c.key())));
        &many
    };
    fair();
    // SAFETY: the items are valid for their item sizes (this function's contract).
    let r = unsafe { wait_for_cases(me, cases, sources, limit) };
    me.set_on_free(None); // counted nowhere any more
    r
}

/// [`select`]'s loop: tries, parks, and again, until a case ends, the
/// time is up, or the coroutine is woken otherwise.
///
/// # Safety
/// As for `select`.
unsafe fn wait_for_cases(
    me: &coro::Coro,
    cases: &[Case<'_>],
    sources: &[Source<'_>],
    limit: Option<u64>,
) -> Result<(usize, Result<()>)> {
    // A call that may not wait only tries: nothing to count, nothing to undo.
    let park = limit != Some(0);
    let (mut parked, mut hook, mut deadline) = (Parked::No, None, None);
    loop {
        let (ended, wake) = wait_if(State::Waiting, |l, co| {
            // SAFETY: `select`'s contract: each case's item is valid for its channel's
            // item size; `l` is the coroutine's loop, lent by `wait_if`.
            if let Some(end) = unsafe { attempt(cases, l, park, parked)? } {
                return Ok((Some(end), false));
            }
            let left = limit.map(|ns| {
                let now = l.wait_start();
                deadline.get_or_insert(now.saturating_add(ns)).saturating_sub(now)
            });
            let armed = match (left, sources) {
                (Some(0), _) => Err(Error::TimedOut),
                // One case parks the task's own node: no watch to place.
                (_, [Source::Signal(key)]) => coro::arm_wait(l, co, *key, left),
                _ => coro::arm_any(l, co, sources, left).map(drop), // signals only: never fired at once
            };
            if let Err(e) = armed {
                if park {
                    unpark_all(cases, l);
                }
                return Err(e);
            }
            let undo: &std::rc::Rc<Hook> = hook.get_or_insert_with(|| Rc::new(Hook::new(cases)));
            co.set_on_free(Some(undo.clone()));
            Ok((None, true))
        })?;
        if let Some(r) = ended {
            return Ok(r);
        }
        parked = Parked::Again;
        let wake = wake.unwrap_or(crate::reactor::Wake::Resumed);
        let woke = match sources {
            [_] => coro::wait_result(wake),
            _ => coro::any_result(sources, wake).map(drop),
        };
        if let Err(e) = woke {
            // Given up (timed out, woken by `cot_coro_wake`): uncounted.
            // SAFETY: as in `wait_if`: the running coroutine's loop is live
            // and lent to it; no other reference into it is held here.
            unsafe {
                with_loop(me.owner() as *mut cot_loop, |l| {
                    unpark_all(cases, l);
                    Ok(())
                })?
            };
            return Err(e);
        }
    }
}

/// The case of one send or receive, checked.
///
/// # Safety
/// `chan` is NULL or a live channel.
unsafe fn one<'a>(chan: *mut cot_chan, side: Side, item: *mut c_void) -> Result<Case<'a>> {
    // SAFETY: `chan` is NULL or a live channel (the contract): all `check` asks.
    let chan = unsafe { check(chan)? };
    if item.is_null() {
        return Err(Error::Inval);
    }
    Ok(Case { chan, side, item })
}

/// Creates a channel of items of `item_size` bytes, holding at most
/// `capacity` items (0: unbounded; there is no rendezvous channel: a send
/// never waits for a receiver, and a capacity of 1 comes nearest). Items
/// are copied in and out. Stores it in `*chan`. Returns 0 or `COT_EINVAL`
/// (NULL `chan`, an `item_size` of 0, a capacity whose bytes overflow). Its
/// ring grows as items come (up to the capacity), so a send may return
/// `COT_ENOMEM`. Safe from any thread.
///
/// The channel belongs to no loop: coroutines and callbacks of any loops,
/// on any threads, and threads running no loop may use it (see
/// `cot_chan_try_send`). `loop` is not used and may be NULL: it remains
/// from when a channel served one loop.
///
/// # Safety
/// `chan` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_chan_new(
    r#loop: *mut cot_loop,
    item_size: usize,
    capacity: usize,
    chan: *mut *mut cot_chan,
) -> c_int {
    let _ = r#loop;
    if chan.is_null() {
        return Error::Inval.code();
    }
    let made = Chan::new(item_size, capacity).map(|chan| Box::into_raw(Box::new(cot_chan { chan })));
    // SAFETY: `chan` is non-NULL (checked at the top) and writable by the contract.
    unsafe { write_out(chan, made) }
}

/// Frees a channel and the items left in it. Returns 0, `COT_EBUSY` (a
/// coroutine of any loop waits on it, or was woken by it and has not run
/// yet), or `COT_EINVAL` (NULL). A coroutine freed while it waits on it
/// (`cot_coro_free`) stops counting. Safe from any thread, once no other
/// thread uses the channel.
///
/// # Safety
/// `chan` is NULL or a live channel; after success it is not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_chan_free(chan: *mut cot_chan) -> c_int {
    // SAFETY: `check` needs `chan` NULL or live, this function's contract.
    let r = unsafe { check(chan) }.and_then(|c| if c.chan.is_waited() { Err(Error::Busy) } else { Ok(()) });
    if r.is_ok() {
        // SAFETY: made by `cot_chan_new` as a box; nothing waits on it, and
        // the caller does not use it again. A wake still on its way to a
        // loop holds the channel itself, not this box.
        drop(unsafe { Box::from_raw(chan) });
    }
    status(r)
}

/// Sends a copy of `*item` (the channel's item size) if there is room,
/// without waiting. Returns 1 (sent), 0 (full), `COT_EPIPE` (closed),
/// `COT_ENOMEM`, or `COT_EINVAL` (NULL). Safe from any thread. Wakes the
/// receivers waiting: on the loop the calling thread runs
/// (`cot_loop_current`), at once; on other loops, through a post that
/// their next iteration runs (one per loop until it ran, however many
/// items come meanwhile). A thread that runs no loop (the loop's own
/// thread outside `cot_loop_run` included) posts to every loop.
///
/// # Safety
/// `chan` is NULL or a live channel; `item` is NULL or readable for the
/// item size.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_chan_try_send(chan: *mut cot_chan, item: *const c_void) -> c_int {
    // SAFETY: `chan` is NULL or live and `item` readable for the item size (the
    // contract): what `one` and `try_alone` need.
    boolean(unsafe { one(chan, Side::Send, item.cast_mut()).and_then(|c| c.try_alone()) })
}

/// Receives the oldest item into `*item` if there is one, without waiting.
/// Returns 1 (received), 0 (empty), `COT_EPIPE` (empty and closed), or
/// `COT_EINVAL` (NULL). Safe from any thread; wakes the senders waiting as
/// `cot_chan_try_send` wakes receivers.
///
/// # Safety
/// `chan` is NULL or a live channel; `item` is NULL or writable for the
/// item size.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_chan_try_recv(chan: *mut cot_chan, item: *mut c_void) -> c_int {
    // SAFETY: the contract makes `chan` NULL or live and `item` writable for the
    // item size, as `one` and `try_alone` ask.
    boolean(unsafe { one(chan, Side::Recv, item).and_then(|c| c.try_alone()) })
}

/// Closes the channel: sends fail with `COT_EPIPE` from now on; receives
/// get the items left, then `COT_EPIPE`; the coroutines waiting on it, on
/// every loop, are woken to see it (as `cot_chan_try_send` wakes them).
/// Returns 1, 0 if it was closed already, or `COT_EINVAL` (NULL). Safe from
/// any thread.
///
/// # Safety
/// `chan` is NULL or a live channel.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_chan_close(chan: *mut cot_chan) -> c_int {
    // SAFETY: `chan` is NULL or live (the contract), which `check` requires.
    boolean(unsafe { check(chan) }.and_then(|c| with_here(|here| c.chan.close(here))))
}

/// The items in the channel (0 for NULL): a snapshot, if other threads use
/// it. Safe from any thread.
///
/// # Safety
/// `chan` is NULL or a live channel.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_chan_len(chan: *const cot_chan) -> usize {
    // SAFETY: `check` on `chan`, NULL or live as the contract says; the length is read
    // under the channel's lock.
    unsafe { check(chan) }.map_or(0, |c| c.chan.len())
}

/// In a coroutine: sends a copy of `*item`, waiting for room for at most
/// `timeout_ns` (`COT_CORO_FOREVER`: no limit; 0: no wait at all). Returns
/// 0, `COT_EPIPE` (closed, also while it waited), `COT_ETIMEDOUT`,
/// `COT_ECANCELED` (woken by `cot_coro_wake`), `COT_ENOMEM`, `COT_EINVAL`
/// (NULL), or `COT_EPERM` outside coroutines. The channel may be fed from
/// any loop or thread. Waiting senders are woken by each receive and try
/// again in their order in the ready queue.
///
/// # Safety
/// `chan` is NULL or a live channel; `item` is NULL or readable for the
/// item size.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_coro_chan_send(chan: *mut cot_chan, item: *const c_void, timeout_ns: u64) -> c_int {
    // SAFETY: `chan` is NULL or live and `item` readable for the item size: what `one`
    // and `select` need, by `cot_coro_chan_send`'s contract.
    status(unsafe {
        one(chan, Side::Send, item.cast_mut()).and_then(|c| select(&[c], timeout_ns)).and_then(|(_, r)| r)
    })
}

/// In a coroutine: receives the oldest item into `*item`, waiting for one
/// for at most `timeout_ns` (`COT_CORO_FOREVER`: no limit; 0: no wait at
/// all). Returns 0, `COT_EPIPE` (closed and drained), `COT_ETIMEDOUT`,
/// `COT_ECANCELED` (woken), `COT_EINVAL` (NULL), or `COT_EPERM` outside
/// coroutines. The channel may be fed from any loop or thread.
///
/// # Safety
/// `chan` is NULL or a live channel; `item` is NULL or writable for the
/// item size.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_coro_chan_recv(chan: *mut cot_chan, item: *mut c_void, timeout_ns: u64) -> c_int {
    // SAFETY: by `cot_coro_chan_recv`'s contract `chan` is NULL or live and `item`
    // writable for the item size, as `one` and `select` require.
    status(unsafe { one(chan, Side::Recv, item).and_then(|c| select(&[c], timeout_ns)).and_then(|(_, r)| r) })
}

/// In a coroutine: does the first of `n` cases (sends and receives on
/// channels, fed from any loops or threads) that can be done, trying them in array order (put
/// first what must win; rotate the array for fairness), waiting for at most
/// `timeout_ns` until one can (`COT_CORO_FOREVER`: no limit; 0: no wait).
/// Returns the index of that case, whose `result` it sets to 0, or to
/// `COT_EPIPE` if its channel is closed (for a receive: and drained); or
/// `COT_ETIMEDOUT`, `COT_ECANCELED` (woken), `COT_ENOMEM`, `COT_EINVAL` (NULL
/// `cases`, `n` = 0, a NULL channel or item, an unknown op), or `COT_EPERM`
/// outside coroutines.
///
/// # Safety
/// `cases` is NULL or valid for reads and writes of `n` cases; their
/// channels are NULL or live, their items NULL or valid for the item size.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_coro_select(cases: *mut cot_chan_case, n: usize, timeout_ns: u64) -> c_int {
    if cases.is_null() || n == 0 || n > (c_int::MAX / 2) as usize {
        return Error::Inval.code();
    }
    // SAFETY: valid for `n` cases (caller's contract).
    let raw = unsafe { std::slice::from_raw_parts_mut(cases, n) };
    let checked: Result<Vec<Case<'_>>> = raw
        .iter()
        .map(|c| {
            let side = match c.op {
                COT_CHAN_SEND => Side::Send,
                COT_CHAN_RECV => Side::Recv,
                _ => return Err(Error::Inval),
            };
            // SAFETY: each case's channel is NULL or live (the contract), as `one` needs.
            unsafe { one(c.chan, side, c.item) }
        })
        .collect();
    // SAFETY: every case went through `one`, and its item is valid for its item size
    // (the contract): `select`'s requirement.
    match checked.and_then(|list| unsafe { select(&list, timeout_ns) }) {
        Ok((i, r)) => {
            raw[i].result = status(r);
            i as c_int
        }
        Err(e) => e.code(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ffi::{
        COT_CORO_FOREVER, COT_RUN_DEFAULT, COT_RUN_NOWAIT, cot_coro, cot_coro_free, cot_coro_new, cot_coro_start,
        cot_coro_wake, cot_loop_close, cot_loop_new, cot_loop_run,
    };

    /// Sends 0..100 through the channel in `arg`, then closes it.
    unsafe extern "C" fn produce(arg: *mut c_void) -> *mut c_void {
        let ch = arg.cast::<cot_chan>();
        for i in 0..100u32 {
            // SAFETY: the test's live channel; `i` is an item of its size.
            assert_eq!(unsafe { cot_coro_chan_send(ch, (&i as *const u32).cast(), COT_CORO_FOREVER) }, 0);
        }
        // SAFETY: `ch` is live: the test frees it only after both coroutines end.
        assert_eq!(unsafe { cot_chan_close(ch) }, 1);
        std::ptr::null_mut()
    }

    /// Receives until the channel in `arg` is closed and drained; returns
    /// the count, checking the order.
    unsafe extern "C" fn consume(arg: *mut c_void) -> *mut c_void {
        let ch = arg.cast::<cot_chan>();
        let mut v = 0u32;
        let mut n = 0;
        // SAFETY: the test's live channel; `v` has its item size.
        while unsafe { cot_coro_chan_recv(ch, (&mut v as *mut u32).cast(), COT_CORO_FOREVER) } == 0 {
            assert_eq!(v, n as u32);
            n += 1;
        }
        // SAFETY: `ch` outlives this coroutine and `v` is a `u32`, the item size.
        assert_eq!(unsafe { cot_coro_chan_recv(ch, (&mut v as *mut u32).cast(), 0) }, Error::Pipe.code());
        n as *mut c_void
    }

    fn spawn(
        lp: *mut cot_loop,
        f: unsafe extern "C" fn(*mut c_void) -> *mut c_void,
        arg: *mut c_void,
    ) -> *mut cot_coro {
        let mut co = std::ptr::null_mut();
        // SAFETY: a live loop; `co` is writable.
        unsafe {
            assert_eq!(cot_coro_new(lp, Some(f), arg, 0, &mut co), 0);
            assert_eq!(cot_coro_start(co), 0);
        }
        co
    }

    #[test]
    fn coroutines_pass_items_through_a_bounded_channel_in_order() {
        let lp = cot_loop_new();
        let mut ch = std::ptr::null_mut();
        // SAFETY: a live loop, coroutines and channel, each freed once at the end.
        unsafe {
            assert_eq!(cot_chan_new(lp, 4, 2, &mut ch), 0);
            let c = spawn(lp, consume, ch.cast());
            let p = spawn(lp, produce, ch.cast());
            assert_eq!(cot_loop_run(lp, COT_RUN_DEFAULT), 0);
            let mut n = std::ptr::null_mut();
            assert_eq!(crate::ffi::cot_coro_result(c, &mut n), 0);
            assert_eq!(n as usize, 100);
            assert_eq!(cot_coro_free(c), 0);
            assert_eq!(cot_coro_free(p), 0);
            assert_eq!(cot_chan_free(ch), 0);
            assert_eq!(cot_loop_close(lp), 0);
        }
    }

    /// Waits forever for an item of the channel in `arg`.
    unsafe extern "C" fn wait_recv(arg: *mut c_void) -> *mut c_void {
        let mut v = 0u32;
        // SAFETY: the test's live channel; `v` has its item size.
        let rc = unsafe { cot_coro_chan_recv(arg.cast(), (&mut v as *mut u32).cast(), COT_CORO_FOREVER) };
        rc as isize as *mut c_void
    }

    #[test]
    fn a_channel_waited_on_is_not_freed() {
        let lp = cot_loop_new();
        let mut ch = std::ptr::null_mut();
        // SAFETY: `lp` is a fresh live loop and `ch` is written by `cot_chan_new`
        // before any other use.
        unsafe {
            assert_eq!(cot_chan_new(lp, 4, 0, &mut ch), 0);
            let c = spawn(lp, wait_recv, ch.cast());
            assert_eq!(cot_loop_run(lp, COT_RUN_NOWAIT), 1, "a coroutine parked on a channel keeps its loop alive");
            assert_eq!(cot_chan_free(ch), Error::Busy.code());
            assert_eq!(cot_coro_wake(c), 1);
            assert_eq!(cot_chan_free(ch), Error::Busy.code(), "woken, not run yet");
            assert_eq!(cot_loop_run(lp, COT_RUN_DEFAULT), 0);
            let mut rc = std::ptr::null_mut();
            assert_eq!(crate::ffi::cot_coro_result(c, &mut rc), 0);
            assert_eq!(rc as isize, Error::Canceled.code() as isize);
            assert_eq!(cot_chan_free(ch), 0);
            assert_eq!(cot_coro_free(c), 0);
            assert_eq!(cot_loop_close(lp), 0);
        }
    }
}
