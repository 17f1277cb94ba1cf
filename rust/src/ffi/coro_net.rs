//! Socket calls in stackful coroutines (`cot_coro_read`, `_write`,
//! `_accept`, `_connect`, `_recvfrom`, `_sendto`) on the keys of
//! `cot_tcp`/`cot_udp`. Each first tries the call now, with the "try now"
//! functions the C calls `cot_tcp_try_*` use (`socket.rs`): when that
//! answers, nothing is allocated and nothing waits. Only when it would block
//! does it start the socket's own operation, whose completion fills a slot and notifies the slot's key; the coroutine parks
//! on that key. Woken early (`cot_coro_wake`), it cancels the operation and
//! waits for the completion, which may still bring data: the first reason
//! wins. The timeout is the operation's deadline.

use std::cell::RefCell;
use std::ffi::c_void;
use std::os::raw::c_int;
use std::rc::Rc;

use super::coro::wait_if;
use super::guard::write_out;
use super::loop_::cot_loop;
use super::socket::{self, deadline, fail_code, sys_error, with_socket};
use super::tcp::{cot_tcp, count};
use super::udp::cot_udp;
use crate::error::{Error, Result};
use crate::net::{Addr, Dir, Fail, Pattern, Socket};
use crate::reactor::Loop;
use crate::sched::When;
use crate::stack::State;
use crate::stack::coro;

/// Where a completion leaves its result for the parked coroutine.
type Slot<T> = Rc<RefCell<Option<std::result::Result<T, Fail>>>>;

/// A completion that fills `slot` and wakes whoever parks on its key.
type Done<T> = Box<dyn FnOnce(&mut Loop, std::result::Result<T, Fail>)>;

/// Starts an operation of direction `dir` on socket `id` of the running
/// coroutine's loop with `start` (given the socket, its deadline and the
/// completion), then parks until the completion ran. Returns its result.
fn park<T: 'static>(
    id: u64,
    udp: bool,
    dir: Dir,
    timeout_ns: u64,
    start: impl FnOnce(&mut Loop, &Socket, Option<u64>, Done<T>) -> Result<()>,
) -> Result<std::result::Result<T, Fail>> {
    let co = coro::running()?;
    let me = co.owner() as *mut cot_loop;
    let slot: Slot<T> = Rc::new(RefCell::new(None));
    let key = Rc::as_ptr(&slot) as usize; // unique while the slot lives
    let fill = slot.clone();
    let done: Done<T> = Box::new(move |lp, r| {
        *fill.borrow_mut() = Some(r);
        // A coroutine freed while it waited leaves no waiter: nothing moves.
        let _ = lp.task_notify(key, When::Later);
    });
    // SAFETY: a running coroutine's loop is live and lent to it.
    let sock = unsafe {
        with_socket(me, id, udp, |l, s| {
            let d = deadline(l, timeout_ns)?;
            start(l, s, d, done)?;
            Ok(s.clone())
        })
    }?;
    // The stack keeps nothing that owns memory, since a freed coroutine's
    // stack is abandoned: the slot and the socket go to the hook, which
    // `cot_coro_free` runs (cancelling the operation) and this call clears.
    let at = Rc::as_ptr(&slot);
    co.set_on_free(Some(Box::new(move |l| {
        let _ = sock.cancel(l, dir);
        drop(slot);
    })));
    let r = {
        // SAFETY: the hook set above owns the slot until `set_on_free(None)`
        // below, after this block, the last use of `got`.
        let got = unsafe { &*at };
        let mut cancelled = false;
        loop {
            // The completion never runs inside the start: it is still ahead
            // the first time, and the wait below cannot miss it.
            if let Some(r) = got.borrow_mut().take() {
                break Ok(r);
            }
            if let Err(e) = wait_if(State::Waiting, |l, co| coro::arm_wait(l, co, key, None).map(|()| ((), true))) {
                break Err(e);
            }
            if !cancelled && got.borrow().is_none() {
                // Woken for another reason: end the operation; its
                // completion comes at the next turn. A key closed meanwhile
                // ended it already.
                cancelled = true;
                // SAFETY: as for the start.
                let _ = unsafe { with_socket(me, id, udp, |l, s| s.cancel(l, dir)) };
            }
        }
    };
    co.set_on_free(None);
    r
}

/// Tries `f` on socket `id` of the running coroutine's loop, after checking
/// the timeout as a start would (so a bad one fails whether or not data is
/// there).
fn now<T>(id: u64, udp: bool, timeout_ns: u64, f: impl FnOnce(&Socket) -> Result<T>) -> Result<T> {
    if timeout_ns != socket::COT_FOREVER && timeout_ns > i64::MAX as u64 {
        return Err(Error::Inval);
    }
    let me = coro::running()?.owner() as *mut cot_loop;
    // SAFETY: a running coroutine's loop is live and lent to it.
    unsafe { with_socket(me, id, udp, |_, s| f(s)) }
}

/// A result as C gets it: a count, 0 at the end of a stream, or an error.
fn code<T>(r: Result<std::result::Result<T, Fail>>, count: impl FnOnce(T) -> i64) -> i64 {
    match r {
        Ok(Ok(v)) => count(v),
        Ok(Err(f)) => fail_code(f),
        Err(e) => e.code() as i64,
    }
}

/// Reads what comes on `tcp`, at most `len` bytes, into `buf`, waiting at
/// most `timeout_ns` (`COT_CORO_FOREVER`: no limit) for the first byte, in
/// the running coroutine. Returns the count, 0 at the end of the stream, or
/// an error: `COT_ETIMEDOUT`, `COT_ECANCELED` (woken by `cot_coro_wake`, or
/// the socket closed meanwhile), `COT_ECONNRESET`, ...; `COT_EINVAL` (NULL
/// `buf`, `len` 0, a timeout above `INT64_MAX`), `COT_EBADF` (closed key),
/// `COT_EBUSY` (a read or accept waits already), `COT_EPERM` outside
/// coroutines.
///
/// # Safety
/// `buf` is NULL or writable for `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_coro_read(tcp: cot_tcp, buf: *mut c_void, len: usize, timeout_ns: u64) -> i64 {
    if buf.is_null() || len == 0 {
        return Error::Inval.code() as i64;
    }
    // SAFETY: non-NULL and writable for `len` bytes (the caller's contract).
    let out = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), len) };
    match now(tcp, false, timeout_ns, |s| socket::try_read(s, out)) {
        Err(Error::Again) => {}
        r => return count(r),
    }
    let r = park(tcp, false, Dir::Read, timeout_ns, |l, s, d, done| s.read(l, Pattern::Upto(len), d, done));
    code(r, |bytes| {
        // SAFETY: `buf` is writable for `len` bytes (the caller's contract);
        // a read takes at most `len`.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf.cast::<u8>(), bytes.len()) };
        bytes.len() as i64
    })
}

/// Writes all `len` bytes of `buf` on `tcp`, waiting at most `timeout_ns`,
/// in the running coroutine. Returns `len`, or an error as
/// `cot_coro_read` (`COT_EPIPE`, `COT_ECONNRESET`: the peer went; never a
/// SIGPIPE; `COT_EBUSY`: a write or connect waits already).
///
/// # Safety
/// `buf` is NULL or readable for `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_coro_write(tcp: cot_tcp, buf: *const c_void, len: usize, timeout_ns: u64) -> i64 {
    if buf.is_null() || len == 0 {
        return Error::Inval.code() as i64;
    }
    // SAFETY: non-NULL and readable for `len` bytes (the caller's contract).
    let data = unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), len) };
    let sent = match now(tcp, false, timeout_ns, |s| socket::try_write(s, data)) {
        Ok(n) if n == len => return len as i64,
        Ok(n) => n,
        Err(Error::Again) => 0,
        Err(e) => return e.code() as i64,
    };
    // Only what did not fit is copied, for the operation that waits.
    let bytes = data[sent..].to_vec();
    let r = park(tcp, false, Dir::Write, timeout_ns, |l, s, d, done| {
        s.write(l, bytes, d, Box::new(move |lp, _sent, r| done(lp, r)))
    });
    code(r, |()| len as i64)
}

/// Accepts one connection on the listening `server`, waiting at most
/// `timeout_ns`, in the running coroutine; stores it in `*client` (a
/// `cot_tcp` of the same loop, to close with `cot_tcp_close`). Returns 0 or
/// an error as `cot_coro_read` (`COT_EINVAL` for a NULL `client`).
///
/// # Safety
/// `client` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_coro_accept(server: cot_tcp, client: *mut cot_tcp, timeout_ns: u64) -> c_int {
    if client.is_null() {
        return Error::Inval.code();
    }
    let c = match now(server, false, timeout_ns, socket::try_accept) {
        Ok(c) => c,
        Err(Error::Again) => match park(server, false, Dir::Read, timeout_ns, |l, s, d, done| s.accept(l, d, done)) {
            Ok(Ok(c)) => c,
            Ok(Err(f)) => return fail_code(f) as c_int,
            Err(e) => return e.code(),
        },
        Err(e) => return e.code(),
    };
    let me = coro::running().map(|co| co.owner() as *mut cot_loop);
    // SAFETY: the running coroutine's loop is live; `client` is writable
    // (the caller's contract).
    unsafe { write_out(client, me.and_then(|me| socket::insert(me, c, false))) }
}

/// Connects `tcp` to the `len` bytes of `addr`, waiting at most
/// `timeout_ns`, in the running coroutine. Returns 0 or an error as
/// `cot_coro_read` (`COT_ECONNREFUSED`, ...; `COT_EBUSY`: a write or
/// connect waits already).
///
/// # Safety
/// `addr` is NULL or readable for `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_coro_connect(
    tcp: cot_tcp,
    addr: *const libc::sockaddr,
    len: u32,
    timeout_ns: u64,
) -> c_int {
    let r = park(tcp, false, Dir::Write, timeout_ns, |l, s, d, done| {
        // SAFETY: NULL or readable for `len` bytes (the caller's contract).
        let a = unsafe { socket::addr_arg(addr, len) }?;
        if s.waiting(Dir::Write) {
            return Err(Error::Busy);
        }
        s.connect_start(&a).map_err(|f| match f {
            Fail::Sys(e) => sys_error(e),
            _ => Error::BadF,
        })?;
        s.connect(l, d, done)
    });
    code(r, |()| 0) as c_int
}

/// Receives one datagram on `udp` into `buf` (at most `len` bytes; the rest
/// of a longer one is dropped), waiting at most `timeout_ns`, in the running
/// coroutine. If `from` is not NULL, the sender's address goes there
/// (`*fromlen` bytes of room; its length back in `*fromlen`). Returns the
/// count or an error as `cot_coro_read` (`COT_EINVAL` also for a `from`
/// without `fromlen`).
///
/// # Safety
/// `buf` is NULL or writable for `len` bytes; `from` is NULL or writable for
/// `*fromlen` bytes; `fromlen` is NULL or readable and writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_coro_recvfrom(
    udp: cot_udp,
    buf: *mut c_void,
    len: usize,
    from: *mut libc::sockaddr,
    fromlen: *mut u32,
    timeout_ns: u64,
) -> i64 {
    if buf.is_null() || len == 0 || (!from.is_null() && fromlen.is_null()) {
        return Error::Inval.code() as i64;
    }
    let give_from = |a: &Addr| {
        if !from.is_null() {
            let b = a.as_bytes();
            // SAFETY: `from` is writable for `*fromlen` bytes, and at most
            // that many are copied (the caller's contract).
            unsafe {
                std::ptr::copy_nonoverlapping(b.as_ptr(), from.cast::<u8>(), b.len().min(*fromlen as usize));
                *fromlen = b.len() as u32;
            }
        }
    };
    // SAFETY: non-NULL and writable for `len` bytes (the caller's contract).
    let out = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), len) };
    match now(udp, true, timeout_ns, |s| socket::try_recvfrom(s, out)) {
        Ok((n, a)) => {
            give_from(&a);
            return n as i64;
        }
        Err(Error::Again) => {}
        Err(e) => return e.code() as i64,
    }
    let r = park(udp, true, Dir::Read, timeout_ns, |l, s, d, done| s.recvfrom(l, len, d, done));
    code(r, |(bytes, a): (Vec<u8>, Addr)| {
        // SAFETY: `buf` is writable for `len` bytes and a datagram is cut to
        // `len` (the caller's contract).
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf.cast::<u8>(), bytes.len()) };
        give_from(&a);
        bytes.len() as i64
    })
}

/// Sends the `len` bytes of `buf` (0 bytes: an empty datagram) as one
/// datagram on `udp` to the `tolen` bytes of `to` (NULL: the connected
/// peer), waiting at most `timeout_ns` for room, in the running coroutine.
/// Returns `len` or an error as `cot_coro_read` (`COT_EMSGSIZE`,
/// `COT_ENOTCONN`, ...; `COT_EBUSY`: a send waits already).
///
/// # Safety
/// `buf` is NULL or readable for `len` bytes; `to` is NULL or readable for
/// `tolen` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_coro_sendto(
    udp: cot_udp,
    buf: *const c_void,
    len: usize,
    to: *const libc::sockaddr,
    tolen: u32,
    timeout_ns: u64,
) -> i64 {
    if buf.is_null() && len > 0 {
        return Error::Inval.code() as i64;
    }
    let data: &[u8] = match len {
        0 => &[],
        // SAFETY: non-NULL and readable for `len` bytes (the caller's contract).
        _ => unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), len) },
    };
    let tried = now(udp, true, timeout_ns, |s| {
        // SAFETY: NULL or readable for `tolen` bytes (the caller's contract).
        let to = if to.is_null() { None } else { Some(unsafe { socket::addr_arg(to, tolen) }?) };
        socket::try_sendto(s, data, to.as_ref())
    });
    match tried {
        Err(Error::Again) => {}
        r => return count(r),
    }
    let bytes = data.to_vec();
    let r = park(udp, true, Dir::Write, timeout_ns, |l, s, d, done| {
        // SAFETY: NULL or readable for `tolen` bytes (the caller's contract).
        let to = if to.is_null() { None } else { Some(unsafe { socket::addr_arg(to, tolen) }?) };
        s.sendto(l, bytes, to, d, done)
    });
    code(r, |n| n as i64)
}
