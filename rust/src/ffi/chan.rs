//! Channels between coroutines (`cot_chan_*`, `cot_coro_chan_*`,
//! `cot_coro_select`). The channel is `reactor::Chan`; a coroutine that must
//! wait parks on its keys as `cot_coro_wait` does (or `cot_coro_wait_any`,
//! for several cases), then tries again, until it succeeds, the channel
//! closes, or its time is up.

use std::cell::RefCell;
use std::ffi::c_void;
use std::os::raw::c_int;

use super::coro::{fair, wait_if};
use super::guard::{boolean, status, write_out};
use super::loop_::{cot_loop, with_loop};
use super::timeout::timeout;
use crate::error::{Error, Result};
use crate::reactor::{Chan, Loop};
use crate::stack::State;
use crate::stack::coro::{self, Source};

/// A channel (opaque): a FIFO of fixed-size items, copied in and out,
/// between the coroutines (and callbacks) of one loop. Made by
/// `cot_chan_new`, freed by `cot_chan_free`. On the loop's thread.
pub struct cot_chan {
    owner: *mut cot_loop,
    chan: RefCell<Chan>,
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

impl cot_chan {
    /// Runs `f` on the channel and its loop. `Error::Busy` if the channel is
    /// in use (it cannot be, on one thread: no callback runs inside `f`).
    ///
    /// # Safety
    /// The channel's loop is live.
    unsafe fn with<R>(&self, f: impl FnOnce(&mut Loop, &mut Chan) -> Result<R>) -> Result<R> {
        // SAFETY: the loop outlives its channels' use (caller's contract).
        unsafe { with_loop(self.owner, |l| self.with_in(l, f)) }
    }

    /// [`cot_chan::with`] given the loop.
    fn with_in<R>(&self, l: &mut Loop, f: impl FnOnce(&mut Loop, &mut Chan) -> Result<R>) -> Result<R> {
        let mut c = self.chan.try_borrow_mut().map_err(|_| Error::Busy)?;
        f(l, &mut c)
    }
}

/// One case, checked: its channel, whether it sends, its item.
#[derive(Clone, Copy)]
struct Case<'a> {
    chan: &'a cot_chan,
    send: bool,
    item: *mut c_void,
}

impl Case<'_> {
    /// Tries the case once: `Ok(true)` done, `Ok(false)` it must wait.
    ///
    /// # Safety
    /// `item` is valid for the channel's item size (written for a receive).
    unsafe fn try_now(&self, l: &mut Loop) -> Result<bool> {
        let item = self.item;
        self.chan.with_in(l, |l, c| {
            let n = c.item_size();
            if self.send {
                // SAFETY: readable for the item size (caller's contract).
                c.try_send(l, unsafe { std::slice::from_raw_parts(item.cast::<u8>(), n) })
            } else {
                // SAFETY: writable for the item size (caller's contract).
                c.try_recv(l, unsafe { std::slice::from_raw_parts_mut(item.cast::<u8>(), n) })
            }
        })
    }

    /// [`Case::try_now`] outside a wait.
    ///
    /// # Safety
    /// As for `try_now`; the channel's loop is live.
    unsafe fn try_alone(&self) -> Result<bool> {
        // SAFETY: the channel's loop is live and `item` valid for the item size: this
        // function's contract, which is what `with_loop` and `try_now` need.
        unsafe { with_loop(self.chan.owner, |l| self.try_now(l)) }
    }

    /// The key a waiter of this case parks on.
    fn key(&self) -> usize {
        let c = self.chan.chan.borrow();
        if self.send { c.send_key() } else { c.recv_key() }
    }

    fn waiting(&self, begin: bool) {
        let mut c = self.chan.chan.borrow_mut();
        if begin { c.wait_begin() } else { c.wait_end() }
    }
}

/// Waits in the running coroutine for the first of `cases` that can be
/// done, trying them in order, for at most `timeout_ns`. Returns its index
/// and its result (done, or `Error::Pipe`). Past the turn's budget it
/// yields before the first try (`fair`).
///
/// # Safety
/// The cases' items are valid for their channels' item size; their
/// channels' loop is the running coroutine's.
unsafe fn select(cases: &[Case<'_>], timeout_ns: u64) -> Result<(usize, Result<()>)> {
    let me = coro::running()?;
    let limit = timeout(timeout_ns)?;
    if cases.is_empty() || cases.iter().any(|c| c.chan.owner as usize != me.owner()) {
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
    let mut deadline = None;
    fair();
    loop {
        let (ended, wake) = wait_if(State::Waiting, |l, co| {
            for (i, c) in cases.iter().enumerate() {
                // SAFETY: `select`'s contract: each case's item is valid for its channel's item
                // size, which `try_now` asks; `l` is their loop, lent by `wait_if`.
                match unsafe { c.try_now(l) } {
                    Ok(true) => return Ok((Some((i, Ok(()))), false)),
                    Ok(false) => {}
                    Err(Error::Pipe) => return Ok((Some((i, Err(Error::Pipe))), false)),
                    Err(e) => return Err(e),
                }
            }
            let left = limit.map(|ns| {
                let now = l.wait_start();
                deadline.get_or_insert(now.saturating_add(ns)).saturating_sub(now)
            });
            if left == Some(0) {
                return Err(Error::TimedOut);
            }
            match sources {
                // One case parks the task's own node: no watch to place.
                [Source::Signal(key)] => coro::arm_wait(l, co, *key, left)?,
                _ => drop(coro::arm_any(l, co, sources, left)?), // signals only: never fired at once
            }
            cases.iter().for_each(|c| c.waiting(true));
            Ok((None, true))
        })?;
        if let Some(r) = ended {
            return Ok(r);
        }
        cases.iter().for_each(|c| c.waiting(false));
        let wake = wake.unwrap_or(crate::reactor::Wake::Resumed);
        match sources {
            [_] => coro::wait_result(wake)?,
            _ => drop(coro::any_result(sources, wake)?),
        }
    }
}

/// The case of one send or receive, checked.
///
/// # Safety
/// `chan` is NULL or a live channel.
unsafe fn one<'a>(chan: *mut cot_chan, send: bool, item: *mut c_void) -> Result<Case<'a>> {
    // SAFETY: `chan` is NULL or a live channel (the contract): all `check` asks.
    let chan = unsafe { check(chan)? };
    if item.is_null() {
        return Err(Error::Inval);
    }
    Ok(Case { chan, send, item })
}

/// Creates a channel of items of `item_size` bytes on `loop`, holding at
/// most `capacity` items (0: unbounded; there is no rendezvous channel: a
/// send never waits for a receiver, and a capacity of 1 comes nearest).
/// Items are copied in and out. Stores it in `*chan`. Returns 0 or
/// `COT_EINVAL` (NULL `loop` or `chan`, an `item_size` of 0, a capacity
/// whose bytes overflow). Its ring grows as items come (up to the capacity),
/// so a send may return `COT_ENOMEM`. On the loop's thread; the loop
/// outlives the channel's use.
///
/// # Safety
/// `loop` is NULL or a live loop; `chan` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_chan_new(
    r#loop: *mut cot_loop,
    item_size: usize,
    capacity: usize,
    chan: *mut *mut cot_chan,
) -> c_int {
    if r#loop.is_null() || chan.is_null() {
        return Error::Inval.code();
    }
    let made = Chan::new(item_size, capacity)
        .map(|c| Box::into_raw(Box::new(cot_chan { owner: r#loop, chan: RefCell::new(c) })));
    // SAFETY: `chan` is non-NULL (checked at the top) and writable by the contract.
    unsafe { write_out(chan, made) }
}

/// Frees a channel and the items left in it. Returns 0, `COT_EBUSY` (a
/// coroutine waits on it, or was woken by it and has not run yet; a
/// coroutine freed while it waited on the channel stays counted), or
/// `COT_EINVAL` (NULL).
///
/// # Safety
/// `chan` is NULL or a live channel; after success it is not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_chan_free(chan: *mut cot_chan) -> c_int {
    // SAFETY: `check` needs `chan` NULL or live, this function's contract; only its
    // `RefCell` is read before the box is freed below.
    let r = unsafe { check(chan) }.and_then(|c| match c.chan.try_borrow() {
        Ok(inner) if !inner.is_waited() => Ok(()),
        _ => Err(Error::Busy),
    });
    if r.is_ok() {
        // SAFETY: made by `cot_chan_new` as a box; nothing waits on it, and
        // the caller does not use it again.
        drop(unsafe { Box::from_raw(chan) });
    }
    status(r)
}

/// Sends a copy of `*item` (the channel's item size) if there is room,
/// without waiting. Returns 1 (sent), 0 (full), `COT_EPIPE` (closed),
/// `COT_ENOMEM`, or `COT_EINVAL` (NULL). Wakes the receivers waiting.
///
/// # Safety
/// `chan` is NULL or a live channel whose loop is live; `item` is NULL or
/// readable for the item size.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_chan_try_send(chan: *mut cot_chan, item: *const c_void) -> c_int {
    // SAFETY: `chan` is NULL or live with a live loop, and `item` readable for the
    // item size (the contract): what `one` and `try_alone` need.
    boolean(unsafe { one(chan, true, item.cast_mut()).and_then(|c| c.try_alone()) })
}

/// Receives the oldest item into `*item` if there is one, without waiting.
/// Returns 1 (received), 0 (empty), `COT_EPIPE` (empty and closed), or
/// `COT_EINVAL` (NULL). Wakes the senders waiting.
///
/// # Safety
/// `chan` is NULL or a live channel whose loop is live; `item` is NULL or
/// writable for the item size.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_chan_try_recv(chan: *mut cot_chan, item: *mut c_void) -> c_int {
    // SAFETY: the contract makes `chan` NULL or live with its loop live and `item`
    // writable for the item size, as `one` and `try_alone` ask.
    boolean(unsafe { one(chan, false, item).and_then(|c| c.try_alone()) })
}

/// Closes the channel: sends fail with `COT_EPIPE` from now on; receives
/// get the items left, then `COT_EPIPE`; the coroutines waiting are woken
/// to see it. Returns 1, 0 if it was closed already, or `COT_EINVAL` (NULL).
///
/// # Safety
/// `chan` is NULL or a live channel whose loop is live.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_chan_close(chan: *mut cot_chan) -> c_int {
    // SAFETY: `chan` is NULL or live and its loop live (the contract), which `check`
    // and `with` require.
    boolean(unsafe { check(chan).and_then(|c| c.with(|l, c| c.close(l))) })
}

/// The items in the channel (0 for NULL).
///
/// # Safety
/// `chan` is NULL or a live channel.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_chan_len(chan: *const cot_chan) -> usize {
    // SAFETY: `check` on `chan`, NULL or live as the contract says; the length is read
    // through the `RefCell`.
    unsafe { check(chan) }.ok().and_then(|c| c.chan.try_borrow().ok().map(|c| c.len())).unwrap_or(0)
}

/// In a coroutine: sends a copy of `*item`, waiting for room for at most
/// `timeout_ns` (`COT_CORO_FOREVER`: no limit; 0: no wait at all). Returns
/// 0, `COT_EPIPE` (closed, also while it waited), `COT_ETIMEDOUT`,
/// `COT_ECANCELED` (woken by `cot_coro_wake`), `COT_ENOMEM`, `COT_EINVAL`
/// (NULL, a channel of another loop), or `COT_EPERM` outside coroutines.
/// Waiting senders are woken in turn by each receive and try again in
/// their order in the ready queue.
///
/// # Safety
/// `chan` is NULL or a live channel; `item` is NULL or readable for the
/// item size.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_coro_chan_send(chan: *mut cot_chan, item: *const c_void, timeout_ns: u64) -> c_int {
    // SAFETY: `chan` is NULL or live and `item` readable for the item size: what `one`
    // and `select` need, by `cot_coro_chan_send`'s contract.
    status(unsafe { one(chan, true, item.cast_mut()).and_then(|c| select(&[c], timeout_ns)).and_then(|(_, r)| r) })
}

/// In a coroutine: receives the oldest item into `*item`, waiting for one
/// for at most `timeout_ns` (`COT_CORO_FOREVER`: no limit; 0: no wait at
/// all). Returns 0, `COT_EPIPE` (closed and drained), `COT_ETIMEDOUT`,
/// `COT_ECANCELED` (woken), `COT_EINVAL` (NULL, a channel of another loop),
/// or `COT_EPERM` outside coroutines.
///
/// # Safety
/// `chan` is NULL or a live channel; `item` is NULL or writable for the
/// item size.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_coro_chan_recv(chan: *mut cot_chan, item: *mut c_void, timeout_ns: u64) -> c_int {
    // SAFETY: by `cot_coro_chan_recv`'s contract `chan` is NULL or live and `item`
    // writable for the item size, as `one` and `select` require.
    status(unsafe { one(chan, false, item).and_then(|c| select(&[c], timeout_ns)).and_then(|(_, r)| r) })
}

/// In a coroutine: does the first of `n` cases (sends and receives on
/// channels of its loop) that can be done, trying them in array order (put
/// first what must win; rotate the array for fairness), waiting for at most
/// `timeout_ns` until one can (`COT_CORO_FOREVER`: no limit; 0: no wait).
/// Returns the index of that case, whose `result` it sets to 0, or to
/// `COT_EPIPE` if its channel is closed (for a receive: and drained); or
/// `COT_ETIMEDOUT`, `COT_ECANCELED` (woken), `COT_ENOMEM`, `COT_EINVAL` (NULL
/// `cases`, `n` = 0, a NULL channel or item, an unknown op, a channel of
/// another loop), or `COT_EPERM` outside coroutines.
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
            let send = match c.op {
                COT_CHAN_SEND => true,
                COT_CHAN_RECV => false,
                _ => return Err(Error::Inval),
            };
            // SAFETY: each case's channel is NULL or live (the contract), as `one` needs.
            unsafe { one(c.chan, send, c.item) }
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
            assert_eq!(cot_loop_run(lp, COT_RUN_NOWAIT), 0);
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
