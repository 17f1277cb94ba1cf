//! What TCP and UDP sockets share in the C ABI: the table of a loop's
//! sockets, deadlines, errors, completions, and the calls both kinds have
//! (bind, names, options, cancel, close). `tcp.rs` and `udp.rs` export them
//! under each kind's name; the sockets are `net::Socket`s, the core's one
//! socket layer.
//!
//! A `cot_tcp` or `cot_udp` is a key of its loop's table: a closed or
//! made-up key is `COT_EBADF`, one of the other kind `COT_EINVAL`.

use std::ffi::c_void;
use std::os::raw::c_int;

use super::guard::{status, write_out};
use super::loop_::{CSocket, cot_loop, lend, tables, with_loop};
use super::poll::{COT_READABLE, COT_WRITABLE};
use crate::error::{Error, Result};
use crate::net::{Addr, Dir, Done, Fail, Socket};
use crate::reactor::Loop;
use crate::util::slab::Key;

/// A socket operation's completion: `result` is a byte count (0 at the end
/// of a stream, for a read), 0 (connect), or a negative error code:
/// `COT_ETIMEDOUT` (its deadline passed), `COT_ECANCELED` (cancelled, or
/// the socket closed), `COT_ECONNRESET`, `COT_EPIPE`, ... `sock` is the
/// `cot_tcp` or `cot_udp` it ran on; `data` the pointer the call was given.
pub type cot_socket_cb = Option<unsafe extern "C" fn(r#loop: *mut cot_loop, sock: u64, result: i64, data: *mut c_void)>;

/// A non-NULL `cot_socket_cb`.
pub(crate) type SocketFn = unsafe extern "C" fn(*mut cot_loop, u64, i64, *mut c_void);

/// The C code of how an operation failed. `Closed` is a close of the
/// socket while it waited: cancelled, as libuv says.
pub(crate) fn fail_code(f: Fail) -> i64 {
    let e = match f {
        Fail::Timeout => Error::TimedOut,
        Fail::Closed | Fail::Cancelled => Error::Canceled,
        Fail::Eof => return 0,
        Fail::Sys(e) => Error::from_errno(e),
    };
    e.code() as i64
}

/// The code of a failed system call.
pub(crate) fn sys_error(errno: c_int) -> Error {
    Error::from_errno(errno)
}

/// Runs `f` on the socket `id` of the loop, which must be of the kind
/// `udp`.
///
/// # Safety
/// `p` is NULL or a live loop.
pub(crate) unsafe fn with_socket<R>(
    p: *mut cot_loop,
    id: u64,
    udp: bool,
    f: impl FnOnce(&mut Loop, &Socket) -> Result<R>,
) -> Result<R> {
    // SAFETY: `with_loop` and `tables` need `p` NULL or live, this function's
    // contract (`tables` runs only inside, after `with_loop` refused NULL).
    unsafe {
        with_loop(p, |l| {
            let table = tables(p).map(|t| &t.sockets).ok_or(Error::Inval)?;
            let sock = {
                let t = table.borrow();
                let s = Key::from_raw(id).and_then(|k| t.get(k)).ok_or(Error::BadF)?;
                if s.udp != udp {
                    return Err(Error::Inval);
                }
                s.sock.clone()
            };
            f(l, &sock)
        })
    }
}

/// Adds `sock` to the table of `p`: its key.
///
/// # Safety
/// `p` is a live loop.
pub(crate) unsafe fn insert(p: *mut cot_loop, sock: Socket, udp: bool) -> Result<u64> {
    // SAFETY: `tables` asks `p` NULL or live; `insert`'s contract says live.
    let table = unsafe { tables(p) }.map(|t| &t.sockets).ok_or(Error::Inval)?;
    Ok(table.borrow_mut().insert(CSocket { sock, udp }).to_raw())
}

/// A new socket of `family` and `socktype` in the table; its key in `*out`.
///
/// # Safety
/// `p` is NULL or a live loop; `out` is NULL or writable.
pub(crate) unsafe fn open(p: *mut cot_loop, family: c_int, socktype: c_int, out: *mut u64) -> c_int {
    if out.is_null() {
        return Error::Inval.code();
    }
    let udp = socktype == libc::SOCK_DGRAM;
    // SAFETY: `p` is NULL or live (the contract): `with_loop` refuses NULL, so
    // `insert` inside gets a live loop; `out` is non-NULL (checked above) and
    // writable, as `write_out` asks.
    unsafe {
        write_out(
            out,
            with_loop(p, |_| {
                let sock = Socket::new(family, socktype).map_err(sys_error)?;
                insert(p, sock, udp)
            }),
        )
    }
}

/// Adopts `fd`, which must be a socket of `socktype`, into the table of `p`:
/// made non-blocking, its key in `*out`. A descriptor that is not a socket
/// is `COT_ENOTSOCK`, one not open `COT_EBADF`, a socket of another type
/// `COT_EINVAL`; on any failure `fd` is left as it was, the caller's.
///
/// # Safety
/// `p` is NULL or a live loop; `out` is NULL or writable.
pub(crate) unsafe fn adopt(p: *mut cot_loop, fd: c_int, socktype: c_int, out: *mut u64) -> c_int {
    if out.is_null() {
        return Error::Inval.code();
    }
    // SAFETY: as in `open`: `with_loop` refuses a NULL `p`, so `insert` gets
    // the live loop of the contract; `out` is non-NULL (checked) and writable.
    unsafe {
        write_out(
            out,
            with_loop(p, |_| {
                // The type first: a descriptor refused is not touched.
                if crate::net::sys::socktype(fd).map_err(sys_error)? != socktype {
                    return Err(Error::Inval);
                }
                crate::net::sys::set_nonblocking(fd).map_err(sys_error)?;
                insert(p, Socket::from_fd(fd), socktype == libc::SOCK_DGRAM)
            }),
        )
    }
}

/// The address C passes: `len` bytes at `addr`.
///
/// # Safety
/// `addr` is NULL or readable for `len` bytes.
pub(crate) unsafe fn addr_arg(addr: *const libc::sockaddr, len: u32) -> Result<Addr> {
    // SAFETY: `from_raw` reads `len` bytes at `addr`, readable by the contract;
    // it refuses NULL itself.
    unsafe { Addr::from_raw(addr.cast(), len as usize) }.ok_or(Error::Inval)
}

/// The datagram C passes: `len` bytes at `buf`, which may be NULL only for
/// an empty one (`Error::Inval` otherwise).
///
/// # Safety
/// `buf` is NULL or readable for `len` bytes while the slice is used.
pub(crate) unsafe fn datagram_arg<'a>(buf: *const c_void, len: usize) -> Result<&'a [u8]> {
    match (len, buf.is_null()) {
        (0, _) => Ok(&[]),
        (_, true) => Err(Error::Inval),
        // SAFETY: non-NULL (matched above) and, by the contract, readable for
        // `len` bytes for as long as the caller uses the slice.
        _ => Ok(unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), len) }),
    }
}

/// Starts connecting `s` to `a` on `l`, until `d`: the one start of the
/// callback and the stackful connect. `Error::Busy` while a write or
/// connect waits; a refusal the system gives at once is the error.
pub(crate) fn connect(l: &mut Loop, s: &Socket, a: &Addr, d: Option<u64>, done: Done<()>) -> Result<()> {
    if s.waiting(Dir::Write) {
        return Err(Error::Busy);
    }
    s.connect_start(a).map_err(try_error)?;
    s.connect(l, d, done)
}

/// The error of a try that failed: a socket closed under it is `COT_EBADF`.
fn try_error(f: Fail) -> Error {
    match f {
        Fail::Sys(e) => sys_error(e),
        _ => Error::BadF,
    }
}

/// A try's answer: `COT_EAGAIN` if it would have to wait.
fn tried<T>(r: Option<std::result::Result<T, Fail>>) -> Result<T> {
    r.ok_or(Error::Again)?.map_err(try_error)
}

/// The "try now" calls, shared by `cot_tcp_try_*`, `cot_udp_try_*` and the
/// coroutine calls (which park only on `COT_EAGAIN`). Each refuses with
/// `COT_EBUSY` while an operation of its direction waits, so bytes never
/// overtake it. Reads at most `out.len()` bytes into `out`: the count, 0 at
/// the end of the stream.
pub(crate) fn try_read(s: &Socket, out: &mut [u8]) -> Result<usize> {
    if s.waiting(Dir::Read) {
        return Err(Error::Busy);
    }
    tried(s.try_read_into(out))
}

/// Sends what fits of `data` now: the count (may be short).
pub(crate) fn try_write(s: &Socket, data: &[u8]) -> Result<usize> {
    if s.waiting(Dir::Write) {
        return Err(Error::Busy);
    }
    match s.try_write(data).map_err(try_error)? {
        0 => Err(Error::Again),
        n => Ok(n),
    }
}

/// Accepts a queued connection now (none, or no descriptor free: `COT_EAGAIN`).
pub(crate) fn try_accept(s: &Socket) -> Result<Socket> {
    if s.waiting(Dir::Read) {
        return Err(Error::Busy);
    }
    tried(s.try_accept())
}

/// Receives a datagram into `out` now (cut to its length): its length and
/// sender.
pub(crate) fn try_recvfrom(s: &Socket, out: &mut [u8]) -> Result<(usize, Addr)> {
    if s.waiting(Dir::Read) {
        return Err(Error::Busy);
    }
    tried(s.try_recvfrom_into(out))
}

/// Sends one datagram now, whole (a full send buffer: `COT_EAGAIN`).
pub(crate) fn try_sendto(s: &Socket, data: &[u8], to: Option<&Addr>) -> Result<usize> {
    if s.waiting(Dir::Write) {
        return Err(Error::Busy);
    }
    s.try_sendto(data, to).map_err(try_error)
}

/// Binds the socket to `addr`.
///
/// # Safety
/// `p` is NULL or a live loop; `addr` is NULL or readable for `len` bytes.
pub(crate) unsafe fn bind(p: *mut cot_loop, id: u64, udp: bool, addr: *const libc::sockaddr, len: u32) -> c_int {
    // SAFETY: `with_socket` asks `p` NULL or live, and `addr_arg` `addr` NULL
    // or readable for `len` bytes: `bind`'s contract.
    status(unsafe {
        with_socket(p, id, udp, |_, s| {
            let a = addr_arg(addr, len)?;
            s.bind(&a).map_err(sys_error)
        })
    })
}

/// Writes the local (`peer` false) or peer address into `addr`, which holds
/// `*len` bytes; `*len` becomes the address's length.
///
/// # Safety
/// `p` is NULL or a live loop; `addr` is NULL or writable for `*len` bytes;
/// `len` is NULL or readable and writable.
pub(crate) unsafe fn name(
    p: *mut cot_loop,
    id: u64,
    udp: bool,
    peer: bool,
    addr: *mut libc::sockaddr,
    len: *mut u32,
) -> c_int {
    if addr.is_null() || len.is_null() {
        return Error::Inval.code();
    }
    // SAFETY: `with_socket` needs only `p` NULL or live (the contract); `addr`
    // and `len` are written below, not here.
    let r =
        unsafe { with_socket(p, id, udp, |_, s| if peer { s.peer_addr() } else { s.local_addr() }.map_err(sys_error)) };
    match r {
        // SAFETY: `len` is readable and writable, `addr` writable for `*len`
        // bytes (the caller's contract); at most that many are copied.
        Ok(a) => unsafe {
            let b = a.as_bytes();
            let room = *len as usize;
            std::ptr::copy_nonoverlapping(b.as_ptr(), addr.cast::<u8>(), b.len().min(room));
            *len = b.len() as u32;
            0
        },
        Err(e) => e.code(),
    }
}

/// `setsockopt(2)` on the socket.
///
/// # Safety
/// `p` is NULL or a live loop; `value` is NULL or readable for `len` bytes.
pub(crate) unsafe fn setopt(
    p: *mut cot_loop,
    id: u64,
    udp: bool,
    level: c_int,
    name: c_int,
    value: *const c_void,
    len: u32,
) -> c_int {
    if value.is_null() {
        return Error::Inval.code();
    }
    // SAFETY: readable for `len` bytes (the caller's contract).
    let v = unsafe { std::slice::from_raw_parts(value.cast::<u8>(), len as usize) };
    // SAFETY: `v` is borrowed above; `with_socket` gets `p` NULL or live from
    // `setopt`'s contract.
    status(unsafe {
        with_socket(p, id, udp, |_, s| {
            let fd = live_fd(s)?;
            crate::net::sys::setsockopt(fd, level, name, v).map_err(sys_error)
        })
    })
}

/// `getsockopt(2)` on the socket: `*len` bytes of room at `value`, the
/// value's length back in `*len`.
///
/// # Safety
/// `p` is NULL or a live loop; `value` is NULL or writable for `*len` bytes;
/// `len` is NULL or readable and writable.
pub(crate) unsafe fn getopt(
    p: *mut cot_loop,
    id: u64,
    udp: bool,
    level: c_int,
    name: c_int,
    value: *mut c_void,
    len: *mut u32,
) -> c_int {
    if value.is_null() || len.is_null() {
        return Error::Inval.code();
    }
    // SAFETY: `len` is readable, `value` writable for `*len` bytes (the
    // caller's contract).
    let v = unsafe { std::slice::from_raw_parts_mut(value.cast::<u8>(), *len as usize) };
    // SAFETY: `with_socket` asks `p` NULL or live, `getopt`'s first clause; `v`
    // (made above) is the only caller memory it touches.
    let r = unsafe {
        with_socket(p, id, udp, |_, s| {
            let fd = live_fd(s)?;
            crate::net::sys::getsockopt(fd, level, name, v).map_err(sys_error)
        })
    };
    // SAFETY: `len` is writable (the caller's contract).
    unsafe { write_out(len, r.map(|n| n as u32)) }
}

/// The socket's descriptor; `COT_EBADF` once closed.
pub(crate) fn live_fd(s: &Socket) -> Result<c_int> {
    match s.fd() {
        -1 => Err(Error::BadF),
        fd => Ok(fd),
    }
}

/// Cancels the waiting operations of the directions in `events`
/// (`COT_READABLE`: read, accept, receive; `COT_WRITABLE`: write, connect,
/// send): each completion gets `COT_ECANCELED` at the loop's next turn.
/// Returns 1 if one was cancelled, 0 if none waited.
///
/// # Safety
/// `p` is NULL or a live loop.
pub(crate) unsafe fn cancel(p: *mut cot_loop, id: u64, udp: bool, events: c_int) -> c_int {
    if events == 0 || events & !(COT_READABLE | COT_WRITABLE) != 0 {
        return Error::Inval.code();
    }
    // SAFETY: `p` is NULL or live (`cancel`'s contract), which is all
    // `with_socket` asks.
    let r = unsafe {
        with_socket(p, id, udp, |l, s| {
            let mut any = false;
            for (bit, dir) in [(COT_READABLE, Dir::Read), (COT_WRITABLE, Dir::Write)] {
                if events & bit != 0 {
                    any |= s.cancel(l, dir)?;
                }
            }
            Ok(any)
        })
    };
    super::guard::boolean(r)
}

/// Ends the socket's life in the table with `end` (a close or a release):
/// once `end` succeeded, its key is invalid; if it failed, nothing changed.
///
/// # Safety
/// `p` is NULL or a live loop.
unsafe fn end<R>(p: *mut cot_loop, id: u64, udp: bool, end: impl FnOnce(&mut Loop, &Socket) -> Result<R>) -> Result<R> {
    // SAFETY: `with_socket` gets `p` NULL or live (`end`'s contract); inside,
    // the loop is live, so `tables(p)` may look at it.
    unsafe {
        with_socket(p, id, udp, |l, s| {
            let r = end(l, s)?;
            let table = tables(p).map(|t| &t.sockets).ok_or(Error::Inval)?;
            Key::from_raw(id).and_then(|k| table.borrow_mut().remove(k));
            Ok(r)
        })
    }
}

/// Closes the socket: its key is invalid at once; the operations waiting
/// end with `COT_ECANCELED` at the loop's next turn.
///
/// # Safety
/// `p` is NULL or a live loop.
pub(crate) unsafe fn close(p: *mut cot_loop, id: u64, udp: bool) -> c_int {
    // SAFETY: `end` asks only `p` NULL or live, `close`'s contract.
    status(unsafe { end(p, id, udp, |l, s| s.close(Some(l))) })
}

/// Closes every socket of the loop, as `close` does each (a group's loop
/// whose grace ran out).
///
/// # Safety
/// `p` is NULL or a live loop.
pub(crate) unsafe fn close_all(p: *mut cot_loop) {
    // SAFETY: NULL or live (the contract); the table is read, then left.
    let Some(t) = (unsafe { tables(p) }) else { return };
    let keys = t.sockets.borrow().keys();
    for k in keys {
        let udp = t.sockets.borrow().get(k).is_some_and(|s| s.udp);
        // SAFETY: `p` is live (checked above), all `close` asks.
        unsafe { close(p, k.to_raw(), udp) };
    }
}

/// Gives the socket's descriptor back into `*fd`, open, out of the loop's
/// epoll; its key is invalid at once. `COT_EBUSY` while an operation waits
/// on it (or bytes it read wait in its buffer), changing nothing.
///
/// # Safety
/// `p` is NULL or a live loop; `fd` is NULL or writable.
pub(crate) unsafe fn release(p: *mut cot_loop, id: u64, udp: bool, fd: *mut c_int) -> c_int {
    // Checked before the release: a descriptor given back must not be lost.
    if fd.is_null() {
        return Error::Inval.code();
    }
    // SAFETY: `end` needs `p` NULL or live; `fd` is non-NULL (checked above)
    // and writable, both by `release`'s contract.
    unsafe { write_out(fd, end(p, id, udp, |l, s| s.release(Some(l)))) }
}

/// A completion that calls `cb` with the loop lent, as a handle callback.
pub(crate) fn complete(me: *mut cot_loop, cb: SocketFn, id: u64, data: *mut c_void) -> impl FnOnce(&mut Loop, i64) {
    move |lp, result| {
        // SAFETY: `me` wraps `lp` and outlives the operations of its
        // sockets (they end before `cot_loop_close` succeeds); `cb` may be
        // called from the loop (the starting caller's contract).
        unsafe { lend(me, lp, || cb(me, id, result, data)) }
    }
}
