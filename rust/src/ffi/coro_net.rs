//! Socket calls in stackful coroutines (`cot_coro_read`, `_write`,
//! `_accept`, `_connect`, `_recvfrom`, `_sendto`) on the keys of
//! `cot_tcp`/`cot_udp`. Each first tries the call now, with the "try now"
//! functions the C calls `cot_tcp_try_*` use (`socket.rs`): when that
//! answers, nothing is allocated and nothing waits (a read skips the try
//! when the last one found the socket empty). Only when it would block does
//! it start the socket's own operation, whose completion fills the parked
//! call and notifies its key; the coroutine parks on that key. A read waits
//! only for readiness (`Pattern::Ready`), then takes the bytes straight into
//! the caller's buffer. Woken early (`cot_coro_wake`), it cancels the
//! operation and waits for the completion, which may still bring data: the
//! first reason wins. The timeout is the operation's deadline. A call's
//! first try counts in the coroutine's budget (`sched::BUDGET`): past it,
//! the call yields before trying.

use std::cell::RefCell;
use std::ffi::c_void;
use std::os::raw::c_int;
use std::rc::Rc;

use super::coro::{fair, wait_if};
use super::guard::write_out;
use super::loop_::cot_loop;
use super::socket::{self, fail_code, with_socket};
use super::tcp::{cot_tcp, count};
use super::timeout::{checked, deadline};
use super::udp::cot_udp;
use crate::error::{Error, Result};
use crate::net::{Addr, Dir, Fail, Pattern, Socket, WriteBuf};
use crate::reactor::Loop;
use crate::sched::When;
use crate::stack::State;
use crate::stack::coro::{self, Undo};

/// A parked call: where the completion leaves its result, and the
/// operation to cancel if the coroutine is freed meanwhile. One allocation,
/// shared by the completion and the coroutine's free hook.
struct Parked<T> {
    got: RefCell<Option<std::result::Result<T, Fail>>>,
    /// Set once the operation started.
    sock: RefCell<Option<Socket>>,
    dir: Dir,
}

impl<T> Undo for Parked<T> {
    fn undo(&self, l: &mut Loop) {
        if let Some(s) = self.sock.borrow().as_ref() {
            let _ = s.cancel(l, self.dir);
        }
    }
}

/// A completion that fills the parked call and wakes whoever parks on its key.
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
    let parked = Rc::new(Parked { got: RefCell::new(None), sock: RefCell::new(None), dir });
    let key = Rc::as_ptr(&parked) as usize; // unique while it lives
    let fill = parked.clone();
    let done: Done<T> = Box::new(move |lp, r| {
        *fill.got.borrow_mut() = Some(r);
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
    *parked.sock.borrow_mut() = Some(sock);
    // The stack keeps nothing that owns memory, since a freed coroutine's
    // stack is abandoned: the parked call goes to the hook, which
    // `cot_coro_free` runs (cancelling the operation) and this call clears.
    let at = Rc::as_ptr(&parked);
    co.set_on_free(Some(parked));
    let r = {
        // SAFETY: the hook set above owns the parked call until
        // `set_on_free(None)` below, after this block, the last use of `got`.
        let got = unsafe { &(*at).got };
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

/// A call's first try: it counts in the coroutine's turn (past the budget
/// it yields first: `fair`), then tries as [`again`].
fn now<T>(id: u64, udp: bool, timeout_ns: u64, f: impl FnOnce(&Socket) -> Result<T>) -> Result<T> {
    fair();
    again(id, udp, timeout_ns, f)
}

/// Tries `f` on socket `id` of the running coroutine's loop, after checking
/// the timeout as a start would (so a bad one fails whether or not data is
/// there). A read's try after its wait uses it alone: that call suspended,
/// so it does not count.
fn again<T>(id: u64, udp: bool, timeout_ns: u64, f: impl FnOnce(&Socket) -> Result<T>) -> Result<T> {
    checked(timeout_ns)?;
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
    // SAFETY: NULL and 0 were refused above; the contract keeps `buf` writable
    // for `len` bytes, and `out` is used only until this call returns, parks
    // included.
    let out = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), len) };
    // A socket the last read found empty is not tried first: that recv
    // would most likely fail (libuv too reads only on readiness).
    let mut first = true;
    loop {
        let read = |s: &Socket| match first && s.drained() {
            true => Err(Error::Again),
            false => socket::try_read(s, &mut *out),
        };
        let tried = if first { now(tcp, false, timeout_ns, read) } else { again(tcp, false, timeout_ns, read) };
        match tried {
            Err(Error::Again) => {}
            r => return count(r),
        }
        first = false;
        // Wait until a read would not block, moving no byte, then take the
        // bytes straight into `buf` above. Readiness whose bytes someone
        // else took (only through the descriptor) waits again, afresh.
        let r = park(tcp, false, Dir::Read, timeout_ns, |l, s, d, done| s.read(l, Pattern::Ready, d, done));
        match r {
            Ok(Ok(_)) => {}
            r => return code(r, |_| 0),
        }
    }
}

/// Writes all `len` bytes of `buf` on `tcp`, waiting at most `timeout_ns`,
/// in the running coroutine. Returns `len`, or an error as
/// `cot_coro_read` (`COT_EPIPE`, `COT_ECONNRESET`: the peer went; never a
/// SIGPIPE; `COT_EBUSY`: a write or connect waits already). Nothing is
/// copied: the socket sends from `buf` until the call returns.
///
/// # Safety
/// `buf` is NULL or readable for `len` bytes, unchanged until the call
/// returns.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_coro_write(tcp: cot_tcp, buf: *const c_void, len: usize, timeout_ns: u64) -> i64 {
    if buf.is_null() || len == 0 {
        return Error::Inval.code() as i64;
    }
    // SAFETY: NULL and 0 were refused above; `buf` is readable for `len` bytes
    // by the contract, and what waits is copied out of `data` first.
    let data = unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), len) };
    let sent = match now(tcp, false, timeout_ns, |s| socket::try_write(s, data)) {
        Ok(n) if n == len => return len as i64,
        Ok(n) => n,
        Err(Error::Again) => 0,
        Err(e) => return e.code() as i64,
    };
    // What did not fit is sent from `buf` itself: this call returns only
    // after the write ended (`park` waits for its completion, even when
    // woken), and a free of the coroutine cancels it first.
    // SAFETY: readable for `len` bytes (the contract), unchanged while this
    // coroutine is parked in the call, and the write ends before the call
    // returns or the coroutine's stack goes: `lent`'s contract.
    let bytes = unsafe { WriteBuf::lent(data[sent..].as_ptr(), len - sent) };
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
    unsafe { write_out(client, me.and_then(|me| socket::insert(me, c, socket::Kind::Connection))) }
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
        let me = coro::running()?.owner() as *mut cot_loop;
        // SAFETY: the running coroutine's loop is live and wraps `l`, the
        // loop `park` lent this start.
        unsafe { socket::connect(me, tcp, l, s, &a, d, done) }
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
    // SAFETY: `buf` is non-NULL with `len` > 0 (checked above), writable for
    // `len` bytes by the contract; `out` serves only the first try.
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
    // SAFETY: `buf` is NULL or readable for `len` bytes (the contract);
    // `data` is copied before any park.
    let Ok(data) = (unsafe { socket::datagram_arg(buf, len) }) else { return Error::Inval.code() as i64 };
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
