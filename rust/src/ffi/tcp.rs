//! TCP sockets (IPv4, IPv6 and Unix streams) on a loop: `cot_tcp`.
//!
//! Operations (accept, connect, read, write) end once, through their
//! callback, from `cot_loop_run`: never inside the call that started them. A
//! call that fails to start returns the error and never calls back. Each
//! direction has at most one operation at a time (read and accept read;
//! write and connect write): a second gets `COT_EBUSY`, while one read and
//! one write run together (full duplex).

use std::ffi::c_void;
use std::os::raw::c_int;

use super::guard::{status, write_out};
use super::loop_::{cot_loop, lend};
use super::socket::{self, SocketFn, cot_socket_cb, cot_tcp_exported, fail_code, sys_error, with_socket};
use super::timeout::deadline;
use crate::error::{Error, Result};
use crate::net::{Dir, Fail, Pattern, Socket, WriteBuf};

/// A TCP socket: a key of its loop's socket table, from `cot_tcp_init`,
/// `cot_tcp_open` or an accept. 0 is never a socket.
pub type cot_tcp = u64;

/// An accept's completion: `status` 0 and the new connection `client` (a
/// `cot_tcp` of the same loop, to close with `cot_tcp_close`), or a negative
/// code (`COT_ETIMEDOUT`, `COT_ECANCELED`, ...) and 0.
pub type cot_accept_cb = Option<
    unsafe extern "C" fn(r#loop: *mut cot_loop, server: cot_tcp, status: c_int, client: cot_tcp, data: *mut c_void),
>;

/// Makes a TCP socket of `family` (`AF_INET`, `AF_INET6`, `AF_UNIX`),
/// non-blocking and close-on-exec; stores it in `*tcp`. Returns 0,
/// `COT_EINVAL`, or the system's refusal (`COT_EAFNOSUPPORT`, ...).
///
/// # Safety
/// `loop` is NULL or a live loop; `tcp` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_tcp_init(r#loop: *mut cot_loop, family: c_int, tcp: *mut cot_tcp) -> c_int {
    // SAFETY: `socket::open` needs `loop` NULL or live and `tcp` NULL or
    // writable: this function's contract, word for word.
    unsafe { socket::open(r#loop, family, libc::SOCK_STREAM, tcp) }
}

/// Adopts `fd`, a stream socket (`SOCK_STREAM`: TCP or Unix; connected,
/// listening, or new), which becomes the loop's: `cot_tcp_close` closes it,
/// `cot_tcp_release` gives it back. Makes it non-blocking; leaves its other
/// flags (close-on-exec) as they are. Returns 0, or `COT_EBADF` (not open,
/// negative), `COT_ENOTSOCK` (a pipe, a file), `COT_EINVAL` (a socket of
/// another type, a NULL `tcp`); on failure `fd` stays the caller's,
/// unchanged.
///
/// # Safety
/// `loop` is NULL or a live loop; `tcp` is NULL or writable; nothing else
/// closes `fd` or adopts it while the loop owns it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_tcp_open(r#loop: *mut cot_loop, fd: c_int, tcp: *mut cot_tcp) -> c_int {
    // SAFETY: `socket::adopt` asks `loop` NULL or live and `tcp` NULL or
    // writable, which `cot_tcp_open` promises.
    unsafe { socket::adopt(r#loop, fd, libc::SOCK_STREAM, tcp) }
}

/// Gives the socket's descriptor back in `*fd`: open, still non-blocking,
/// out of the loop's epoll, the caller's to use and close. The key is
/// invalid at once, as after `cot_tcp_close`; the loop closes
/// (`cot_loop_close`) once a run has finished the socket's handles. Returns
/// 0, `COT_EBADF` (closed or released already), `COT_EINVAL` (NULL `fd`, a
/// UDP key), or `COT_EBUSY`, changing nothing, while an operation waits on
/// the socket (cancel it and let the loop run its callback first) or bytes
/// read from it wait in its buffer (take them with `cot_tcp_try_read`).
///
/// # Safety
/// `loop` is NULL or a live loop; `fd` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_tcp_release(r#loop: *mut cot_loop, tcp: cot_tcp, fd: *mut c_int) -> c_int {
    // SAFETY: `socket::release` needs `loop` NULL or live and `fd` NULL or
    // writable: `cot_tcp_release`'s contract.
    unsafe { socket::release(r#loop, tcp, false, fd) }
}

/// Takes the socket out of its loop, to go on on another loop (of any
/// thread): `*out` gets an object owning the open descriptor and the bytes
/// read from it and not taken yet, which `cot_tcp_import` turns into a
/// socket again (its reads give those bytes first). The key is invalid at
/// once, as after `cot_tcp_close`, and the socket no longer counts in
/// `cot_loop_connections`. A listener may be exported too. Returns 0,
/// `COT_EINVAL` (NULL `out`, a UDP key), `COT_EBADF` (closed), or
/// `COT_EBUSY`, changing nothing, while an operation waits on the socket
/// (cancel it and let the loop run its callback first).
///
/// # Safety
/// `loop` is NULL or a live loop; `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_tcp_export(r#loop: *mut cot_loop, tcp: cot_tcp, out: *mut *mut cot_tcp_exported) -> c_int {
    // SAFETY: `socket::export` asks `loop` NULL or live and `out` NULL or
    // writable: this contract.
    unsafe { socket::export(r#loop, tcp, out) }
}

/// Makes an exported socket a `cot_tcp` of `loop`, on whatever thread runs
/// it; its key into `*out`. A connection counts in the loop's
/// `cot_loop_connections`. Returns 0, consuming `ex`; or, leaving `ex` the
/// caller's, `COT_EINVAL` (NULL `loop`, `ex` or `out`) or `COT_EBUSY`
/// (called from inside another call on the loop).
///
/// # Safety
/// `loop` is NULL or a live loop; `ex` is NULL or from `cot_tcp_export`, not
/// imported or freed since; `out` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_tcp_import(r#loop: *mut cot_loop, ex: *mut cot_tcp_exported, out: *mut cot_tcp) -> c_int {
    // SAFETY: `socket::import` asks what this contract gives, clause by clause.
    unsafe { socket::import(r#loop, ex, out) }
}

/// Frees an exported socket that will not be imported: closes its
/// descriptor and drops its buffered bytes. NULL is fine. Any thread.
///
/// # Safety
/// `ex` is NULL or from `cot_tcp_export`, not imported or freed since.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_tcp_exported_free(ex: *mut cot_tcp_exported) {
    // SAFETY: the contract is `socket::exported_free`'s.
    unsafe { socket::exported_free(ex) }
}

/// Binds the socket to the `len` bytes of `addr` (a `sockaddr_in`,
/// `sockaddr_in6` or `sockaddr_un`). Returns 0 or an error
/// (`COT_EADDRINUSE`, `COT_EACCES`, ...).
///
/// # Safety
/// `loop` is NULL or a live loop; `addr` is NULL or readable for `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_tcp_bind(
    r#loop: *mut cot_loop,
    tcp: cot_tcp,
    addr: *const libc::sockaddr,
    len: u32,
) -> c_int {
    // SAFETY: `socket::bind` asks `loop` NULL or live and `addr` NULL or
    // readable for `len` bytes, which is `cot_tcp_bind`'s contract.
    unsafe { socket::bind(r#loop, tcp, false, addr, len) }
}

/// Makes the socket listen, with a queue of `backlog` connections. Returns
/// 0 or an error.
///
/// # Safety
/// `loop` is NULL or a live loop.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_tcp_listen(r#loop: *mut cot_loop, tcp: cot_tcp, backlog: c_int) -> c_int {
    // SAFETY: listening touches no caller memory: `with_socket` wants only
    // `loop` NULL or live, which the contract gives.
    status(unsafe { with_socket(r#loop, tcp, false, |_, s| s.listen(backlog).map_err(sys_error)) })
}

/// Accepts one connection, waiting at most `timeout_ns` (`COT_FOREVER`: no
/// limit); `cb` gets it. Out of descriptors, it waits and tries again
/// rather than spin. Returns 0, or (without calling back) `COT_EINVAL`
/// (NULL `cb`, a timeout above `INT64_MAX`), `COT_EBADF` (closed),
/// `COT_EBUSY` (a read or accept waits already).
///
/// # Safety
/// `loop` is NULL or a live loop; `cb` may be called from `cot_loop_run`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_tcp_accept(
    r#loop: *mut cot_loop,
    tcp: cot_tcp,
    timeout_ns: u64,
    cb: cot_accept_cb,
    data: *mut c_void,
) -> c_int {
    let Some(cb) = cb else { return Error::Inval.code() };
    let me = r#loop;
    let done = move |lp: &mut crate::reactor::Loop, r: std::result::Result<Socket, Fail>| {
        let (code, client) = match r {
            // SAFETY: `me` is live while its loop runs this completion.
            Ok(c) => match unsafe { socket::insert(me, c, socket::Kind::Connection) } {
                Ok(id) => (0, id),
                Err(e) => (e.code(), 0),
            },
            Err(f) => (fail_code(f) as c_int, 0),
        };
        // SAFETY: `me` wraps `lp`; `cb` may be called from the loop.
        unsafe { lend(me, lp, || cb(me, tcp, code, client, data)) }
    };
    // SAFETY: `loop` is NULL or live (the contract) for `with_socket`; the
    // completion calls `cb` from the loop, which the contract allows.
    status(unsafe {
        with_socket(r#loop, tcp, false, |l, s| {
            let d = deadline(l, timeout_ns)?;
            s.accept(l, d, Box::new(done))
        })
    })
}

/// Connects to the `len` bytes of `addr`, waiting at most `timeout_ns`;
/// `cb` gets 0 or the error (`COT_ECONNREFUSED`, `COT_ETIMEDOUT`,
/// `COT_ECANCELED`, ...). Returns 0, or without calling back `COT_EINVAL`,
/// `COT_EBADF`, `COT_EBUSY` (a write or connect waits), or a refusal the
/// system gave at once (a Unix path nobody listens on: `COT_ECONNREFUSED`).
///
/// # Safety
/// `loop` is NULL or a live loop; `addr` is NULL or readable for `len`
/// bytes; `cb` may be called from `cot_loop_run`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_tcp_connect(
    r#loop: *mut cot_loop,
    tcp: cot_tcp,
    addr: *const libc::sockaddr,
    len: u32,
    timeout_ns: u64,
    cb: cot_socket_cb,
    data: *mut c_void,
) -> c_int {
    let Some(cb) = cb else { return Error::Inval.code() };
    let done = socket::complete(r#loop, cb, tcp, data);
    // SAFETY: `with_socket` gets `loop` NULL or live, and `addr_arg` reads
    // `addr`, NULL or readable for `len` bytes: both clauses of the contract.
    // Inside, `loop` is live and wraps `l`, as `socket::connect` asks. `done`
    // calls `cb` from the loop only.
    status(unsafe {
        with_socket(r#loop, tcp, false, |l, s| {
            let d = deadline(l, timeout_ns)?;
            let a = socket::addr_arg(addr, len)?;
            let done = Box::new(move |lp: &mut crate::reactor::Loop, r: std::result::Result<(), Fail>| {
                done(lp, r.map_or_else(fail_code, |()| 0))
            });
            socket::connect(r#loop, tcp, l, s, &a, d, done)
        })
    })
}

/// The buffers of a `cot_tcp_readv` or `cot_tcp_writev`: `n` entries, none
/// NULL with a length, more than 0 bytes in all.
///
/// # Safety
/// `iov` is NULL or readable for `n` entries.
unsafe fn iov_arg<'a>(iov: *const libc::iovec, n: c_int) -> Result<&'a [libc::iovec]> {
    let n = usize::try_from(n).map_err(|_| Error::Inval)?;
    if iov.is_null() || n == 0 {
        return Err(Error::Inval);
    }
    // SAFETY: non-NULL and readable for `n` entries (the caller's contract).
    let v = unsafe { std::slice::from_raw_parts(iov, n) };
    let total = v
        .iter()
        .try_fold(0usize, |t, e| if e.iov_base.is_null() && e.iov_len > 0 { None } else { t.checked_add(e.iov_len) });
    match total {
        Some(t) if t > 0 => Ok(v),
        _ => Err(Error::Inval),
    }
}

/// What a read's completion takes into the caller's memory, straight from
/// the socket: the count (0 at the end of the stream), or `None` if nothing
/// is there.
trait Take: FnMut(&Socket) -> Option<std::result::Result<usize, Fail>> + 'static {}
impl<T: FnMut(&Socket) -> Option<std::result::Result<usize, Fail>> + 'static> Take for T {}

/// Starts a read: it waits until reading would not block (moving no byte),
/// then `take` copies what is there to the caller's memory.
///
/// # Safety
/// `loop` is NULL or a live loop.
unsafe fn read(
    r#loop: *mut cot_loop,
    tcp: cot_tcp,
    timeout_ns: u64,
    cb: SocketFn,
    data: *mut c_void,
    mut take: impl Take,
) -> c_int {
    let done = socket::complete(r#loop, cb, tcp, data);
    // SAFETY: `with_socket` needs `loop` NULL or live: `read`'s one clause.
    // `take` is safe to call; its closure argues the memory it writes.
    status(unsafe {
        with_socket(r#loop, tcp, false, |l, s| {
            let d = deadline(l, timeout_ns)?;
            let sock = s.clone();
            s.read(
                l,
                Pattern::Ready,
                d,
                Box::new(move |lp, r| {
                    let result = match r.map(|_| take(&sock)) {
                        Ok(Some(Ok(n))) => n as i64,
                        Ok(Some(Err(f))) | Err(f) => fail_code(f),
                        Ok(None) => return read_again(lp, &sock, d, take, done),
                    };
                    done(lp, result)
                }),
            )
        })
    })
}

/// Readiness whose bytes someone else took (through the descriptor): wait
/// for a byte in the buffer (`Count(0)` leaves it there), then take again.
/// Rare, so it may allocate: the cell gives `done` back if the start fails.
fn read_again(
    lp: &mut crate::reactor::Loop,
    sock: &Socket,
    d: Option<u64>,
    take: impl Take,
    done: impl FnOnce(&mut crate::reactor::Loop, i64) + 'static,
) {
    let cell = std::rc::Rc::new(std::cell::Cell::new(Some((take, done))));
    let mine = cell.clone();
    let s = sock.clone();
    let started = sock.read(
        lp,
        Pattern::Count(0),
        d,
        Box::new(move |lp, r| {
            let Some((mut take, done)) = mine.take() else { return };
            let result = match r.map(|_| take(&s)) {
                Ok(Some(Ok(n))) => n as i64,
                Ok(Some(Err(f))) | Err(f) => fail_code(f),
                Ok(None) => Error::Again.code() as i64, // a byte was buffered: cannot happen
            };
            done(lp, result)
        }),
    );
    if let Err(e) = started
        && let Some((_, done)) = cell.take()
    {
        done(lp, e.code() as i64);
    }
}

/// Reads what comes, at most `len` bytes, into `buf`, waiting at most
/// `timeout_ns` for the first byte; `cb` gets the count, 0 at the end of the
/// stream, or the error (`COT_ECONNRESET`, `COT_ETIMEDOUT`, ...). Bytes that
/// come in the same loop turn as the deadline are delivered. Returns 0, or
/// without calling back `COT_EINVAL` (NULL `buf` or `cb`, `len` 0, a timeout
/// above `INT64_MAX`), `COT_EBADF`, `COT_EBUSY` (a read waits already).
///
/// # Safety
/// `loop` is NULL or a live loop; `buf` is writable for `len` bytes until
/// `cb` ran; `cb` may be called from `cot_loop_run`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_tcp_read(
    r#loop: *mut cot_loop,
    tcp: cot_tcp,
    buf: *mut c_void,
    len: usize,
    timeout_ns: u64,
    cb: cot_socket_cb,
    data: *mut c_void,
) -> c_int {
    let (Some(cb), false, false) = (cb, buf.is_null(), len == 0) else { return Error::Inval.code() };
    let take = move |s: &Socket| {
        // SAFETY: `buf` is writable for `len` bytes until the callback (the
        // caller's contract), which comes after this.
        s.try_read_into(unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), len) })
    };
    // SAFETY: `read` asks `loop` NULL or live (the contract); `take` writes
    // `buf` only from the completion, before `cb`, while the contract keeps
    // `buf` writable.
    unsafe { read(r#loop, tcp, timeout_ns, cb, data, take) }
}

/// `cot_tcp_read` into `n` buffers, filled in order. The array is read now;
/// the buffers are written when data comes.
///
/// # Safety
/// As `cot_tcp_read`, for each buffer; `iov` is NULL or readable for `n`
/// entries.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_tcp_readv(
    r#loop: *mut cot_loop,
    tcp: cot_tcp,
    iov: *const libc::iovec,
    n: c_int,
    timeout_ns: u64,
    cb: cot_socket_cb,
    data: *mut c_void,
) -> c_int {
    // SAFETY: `iov` is NULL or readable for `n` entries (this contract), as
    // `iov_arg` asks; it refuses NULL itself.
    let (Ok(v), Some(cb)) = (unsafe { iov_arg(iov, n) }, cb) else { return Error::Inval.code() };
    let parts: Vec<(usize, usize)> = v.iter().map(|e| (e.iov_base as usize, e.iov_len)).collect();
    // Fills the buffers in order, one recv each, until one comes back
    // short. A failure after bytes came gives the bytes.
    let take = move |s: &Socket| {
        let mut got: Option<usize> = None;
        for &(base, room) in parts.iter().filter(|p| p.1 > 0) {
            // SAFETY: each buffer is writable for its length until the
            // callback (the caller's contract), which comes after this.
            let out = unsafe { std::slice::from_raw_parts_mut(base as *mut u8, room) };
            match s.try_read_into(out) {
                Some(Ok(n)) => {
                    got = Some(got.unwrap_or(0) + n);
                    if n < room {
                        break;
                    }
                }
                Some(Err(f)) if got.is_none() => return Some(Err(f)),
                _ => break,
            }
        }
        got.map(Ok)
    };
    // SAFETY: as in `cot_tcp_read`, `read` gets the NULL-or-live `loop`; `take`
    // writes each buffer only before `cb`, while the contract keeps them
    // writable.
    unsafe { read(r#loop, tcp, timeout_ns, cb, data, take) }
}

/// Starts a write of all of `bytes`.
///
/// # Safety
/// `loop` is NULL or a live loop; lent `bytes` keep `WriteBuf::lent`'s
/// contract.
unsafe fn write(
    r#loop: *mut cot_loop,
    tcp: cot_tcp,
    bytes: WriteBuf,
    timeout_ns: u64,
    cb: SocketFn,
    data: *mut c_void,
) -> c_int {
    let done = socket::complete(r#loop, cb, tcp, data);
    let done = move |lp: &mut crate::reactor::Loop, sent: usize, r: std::result::Result<(), Fail>| {
        done(lp, r.map_or_else(fail_code, |()| sent as i64))
    };
    // SAFETY: `write` owns its bytes; `with_socket` needs only `loop` NULL or
    // live, `write`'s contract.
    status(unsafe {
        with_socket(r#loop, tcp, false, |l, s| {
            let d = deadline(l, timeout_ns)?;
            s.write(l, bytes, d, Box::new(done))
        })
    })
}

/// Writes all `len` bytes of `buf` (copied: the buffer is free at once),
/// waiting at most `timeout_ns`; `cb` gets `len` or the error (`COT_EPIPE`,
/// `COT_ECONNRESET`: the peer went; never a SIGPIPE). Returns 0, or without
/// calling back `COT_EINVAL` (NULL `buf` or `cb`, `len` 0, a timeout above
/// `INT64_MAX`), `COT_EBADF`, `COT_EBUSY` (a write or connect waits).
///
/// # Safety
/// `loop` is NULL or a live loop; `buf` is NULL or readable for `len` bytes;
/// `cb` may be called from `cot_loop_run`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_tcp_write(
    r#loop: *mut cot_loop,
    tcp: cot_tcp,
    buf: *const c_void,
    len: usize,
    timeout_ns: u64,
    cb: cot_socket_cb,
    data: *mut c_void,
) -> c_int {
    let (Some(cb), false, false) = (cb, buf.is_null(), len == 0) else { return Error::Inval.code() };
    // SAFETY: the check above refused a NULL `buf`; the contract makes it
    // readable for `len` bytes now, and the copy ends its use.
    let bytes = unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), len) }.to_vec();
    // SAFETY: the bytes are copied above, so `write` asks only `loop` NULL or
    // live, which `cot_tcp_write`'s contract gives.
    unsafe { write(r#loop, tcp, bytes.into(), timeout_ns, cb, data) }
}

/// `cot_tcp_write` without the copy: the socket sends from `buf` itself,
/// which must stay valid and unchanged until `cb` runs (as with libuv's
/// `uv_write`). For large writes from a buffer that lives anyway: the C++
/// `write` and `cot_coro_write` use it. A cancel or a close ends the write
/// before it reads `buf` again; `cb` still runs, after.
///
/// # Safety
/// As `cot_tcp_write`; besides, `buf` stays readable and unchanged until
/// `cb` runs, or the loop is closed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_tcp_write_nocopy(
    r#loop: *mut cot_loop,
    tcp: cot_tcp,
    buf: *const c_void,
    len: usize,
    timeout_ns: u64,
    cb: cot_socket_cb,
    data: *mut c_void,
) -> c_int {
    let (Some(cb), false, false) = (cb, buf.is_null(), len == 0) else { return Error::Inval.code() };
    // SAFETY: `buf` is not NULL (checked) and stays readable and unchanged
    // until `cb` runs or the loop closes: this function's contract, which is
    // `WriteBuf::lent`'s, since the write ends by running `cb`.
    let bytes = unsafe { WriteBuf::lent(buf.cast::<u8>(), len) };
    // SAFETY: `loop` NULL or live (the contract); the lent bytes keep
    // `lent`'s contract, as argued above.
    unsafe { write(r#loop, tcp, bytes, timeout_ns, cb, data) }
}

/// `cot_tcp_write` of `n` buffers, in order, copied.
///
/// # Safety
/// As `cot_tcp_write`, for each buffer; `iov` is NULL or readable for `n`
/// entries.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_tcp_writev(
    r#loop: *mut cot_loop,
    tcp: cot_tcp,
    iov: *const libc::iovec,
    n: c_int,
    timeout_ns: u64,
    cb: cot_socket_cb,
    data: *mut c_void,
) -> c_int {
    // SAFETY: `iov_arg` reads `n` entries at `iov`, which `cot_tcp_writev`'s
    // contract makes NULL (refused) or readable.
    let (Ok(v), Some(cb)) = (unsafe { iov_arg(iov, n) }, cb) else { return Error::Inval.code() };
    let mut bytes = Vec::new();
    for e in v.iter().filter(|e| e.iov_len > 0) {
        // SAFETY: a non-NULL buffer readable for its length (checked by
        // `iov_arg`, readable by the caller's contract).
        bytes.extend_from_slice(unsafe { std::slice::from_raw_parts(e.iov_base.cast::<u8>(), e.iov_len) });
    }
    // SAFETY: `bytes` is a copy made above; `write` needs `loop` NULL or live,
    // as the contract (that of `cot_tcp_write`) says.
    unsafe { write(r#loop, tcp, bytes.into(), timeout_ns, cb, data) }
}

/// Reads at most `len` bytes into `buf` now, never waiting, never calling
/// back: the count (bytes the socket's buffer held first, else straight
/// from the socket), 0 at the end of the stream, `COT_EAGAIN` if nothing is
/// there, or an error: `COT_EINVAL` (NULL `buf`, `len` 0), `COT_EBADF`,
/// `COT_EBUSY` (a read or accept waits: its bytes come first),
/// `COT_ECONNRESET`, ...
///
/// # Safety
/// `loop` is NULL or a live loop; `buf` is NULL or writable for `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_tcp_try_read(r#loop: *mut cot_loop, tcp: cot_tcp, buf: *mut c_void, len: usize) -> i64 {
    if buf.is_null() || len == 0 {
        return Error::Inval.code() as i64;
    }
    // SAFETY: `buf` passed the NULL check above and is writable for `len` bytes
    // by the contract; `out` lives only in this call.
    let out = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), len) };
    // SAFETY: `out` was made above; `with_socket` needs `loop` NULL or live,
    // the first clause of the contract.
    count(unsafe { with_socket(r#loop, tcp, false, |_, s| socket::try_read(s, out)) })
}

/// Would a read of `tcp` now most likely fail with `COT_EAGAIN`? 1 if the
/// last receive found the socket empty or came back short and since then
/// no readiness was seen and nothing is buffered: wait for readiness
/// (`cot_tcp_read`) instead of trying. 0 if not; `COT_EBADF`, `COT_EINVAL`
/// (NULL `loop`, a UDP key). A hint: `cot_tcp_try_read` still reads the
/// socket, so polling it sees new data.
///
/// # Safety
/// `loop` is NULL or a live loop.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_tcp_drained(r#loop: *mut cot_loop, tcp: cot_tcp) -> c_int {
    // SAFETY: `with_socket` asks `loop` NULL or live, the whole contract.
    match unsafe { with_socket(r#loop, tcp, false, |_, s| Ok(s.drained())) } {
        Ok(d) => c_int::from(d),
        Err(e) => e.code(),
    }
}

/// Sends what fits of the `len` bytes of `buf` now, never waiting, never
/// calling back: the count (may be short), `COT_EAGAIN` if none could go,
/// or an error: `COT_EINVAL`, `COT_EBADF`, `COT_EBUSY` (a write or connect
/// waits: its bytes go first), `COT_EPIPE`, `COT_ECONNRESET` (never a
/// SIGPIPE), ...
///
/// # Safety
/// `loop` is NULL or a live loop; `buf` is NULL or readable for `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_tcp_try_write(r#loop: *mut cot_loop, tcp: cot_tcp, buf: *const c_void, len: usize) -> i64 {
    if buf.is_null() || len == 0 {
        return Error::Inval.code() as i64;
    }
    // SAFETY: `buf` is non-NULL (checked above) and readable for `len` bytes
    // (the contract); `data` is dropped before this call returns.
    let data = unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), len) };
    // SAFETY: `data` borrows `buf` for this call only; `with_socket` gets
    // `loop` NULL or live from the contract.
    count(unsafe { with_socket(r#loop, tcp, false, |_, s| socket::try_write(s, data)) })
}

/// Accepts a queued connection now, never waiting, never calling back; the
/// new `cot_tcp` into `*conn`. Returns 0, `COT_EAGAIN` (none queued, or no
/// descriptor free), or an error: `COT_EINVAL` (NULL `conn`), `COT_EBADF`,
/// `COT_EBUSY` (a read or accept waits), ...
///
/// # Safety
/// `loop` is NULL or a live loop; `conn` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_tcp_try_accept(r#loop: *mut cot_loop, listener: cot_tcp, conn: *mut cot_tcp) -> c_int {
    if conn.is_null() {
        return Error::Inval.code();
    }
    let me = r#loop;
    // SAFETY: `with_socket` asks `loop` NULL or live (the contract); `insert`
    // runs only inside it, where the loop is live; `conn` is non-NULL (checked
    // above) and writable by the contract, as `write_out` asks.
    unsafe {
        write_out(
            conn,
            with_socket(r#loop, listener, false, |_, s| {
                socket::try_accept(s).and_then(|c| socket::insert(me, c, socket::Kind::Connection))
            }),
        )
    }
}

/// A count as C gets it, or the error's code.
pub(crate) fn count(r: Result<usize>) -> i64 {
    r.map_or_else(|e| e.code() as i64, |n| n as i64)
}

/// Shuts the socket's writing side now (the peer reads the end of the
/// stream); reading goes on. Returns 0, `COT_EBUSY` while a write or connect
/// waits (its bytes would be lost), or an error (`COT_ENOTCONN`).
///
/// # Safety
/// `loop` is NULL or a live loop.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_tcp_shutdown(r#loop: *mut cot_loop, tcp: cot_tcp) -> c_int {
    // SAFETY: `with_socket` asks `loop` NULL or live, this contract; the
    // shutdown itself is a system call on the socket's own descriptor.
    status(unsafe {
        with_socket(r#loop, tcp, false, |_, s| {
            if s.waiting(Dir::Write) {
                return Err(Error::Busy);
            }
            crate::net::sys::shutdown(socket::live_fd(s)?, libc::SHUT_WR).map_err(sys_error)
        })
    })
}

/// Turns Nagle's algorithm off (`enable` 1: `TCP_NODELAY`) or on. Returns 0
/// or an error (`COT_ENOTSUP` on a Unix socket).
///
/// # Safety
/// `loop` is NULL or a live loop.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_tcp_nodelay(r#loop: *mut cot_loop, tcp: cot_tcp, enable: c_int) -> c_int {
    let v = c_int::from(enable != 0).to_ne_bytes();
    // SAFETY: `loop` NULL or live is the contract; `value` points to `v`, a
    // local of the 4 bytes passed, as `setopt` asks.
    unsafe { socket::setopt(r#loop, tcp, false, libc::IPPROTO_TCP, libc::TCP_NODELAY, v.as_ptr().cast(), 4) }
}

/// Lets other sockets bind the same address and port (`enable` 1:
/// `SO_REUSEPORT`), each with the option set, so that listeners on several
/// loops share the connections (the kernel spreads them by a hash of the
/// peer). Call it before `cot_tcp_bind`. Returns 0 or an error.
///
/// # Safety
/// `loop` is NULL or a live loop.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_tcp_reuseport(r#loop: *mut cot_loop, tcp: cot_tcp, enable: c_int) -> c_int {
    // SAFETY: `socket::reuseport` asks only `loop` NULL or live: the contract.
    unsafe { socket::reuseport(r#loop, tcp, false, enable) }
}

/// `setsockopt(2)`: `len` bytes of `value` for option `name` of `level`.
/// Returns 0 or an error (`COT_ENOPROTOOPT`, ...).
///
/// # Safety
/// `loop` is NULL or a live loop; `value` is NULL or readable for `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_tcp_setopt(
    r#loop: *mut cot_loop,
    tcp: cot_tcp,
    level: c_int,
    name: c_int,
    value: *const c_void,
    len: u32,
) -> c_int {
    // SAFETY: `socket::setopt` asks `loop` NULL or live and `value` NULL or
    // readable for `len` bytes: `cot_tcp_setopt`'s contract.
    unsafe { socket::setopt(r#loop, tcp, false, level, name, value, len) }
}

/// `getsockopt(2)`: the option into `value`, which has `*len` bytes of room;
/// its length into `*len`. Returns 0 or an error.
///
/// # Safety
/// `loop` is NULL or a live loop; `value` is NULL or writable for `*len`
/// bytes; `len` is NULL or readable and writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_tcp_getopt(
    r#loop: *mut cot_loop,
    tcp: cot_tcp,
    level: c_int,
    name: c_int,
    value: *mut c_void,
    len: *mut u32,
) -> c_int {
    // SAFETY: `socket::getopt` asks what `cot_tcp_getopt` promises: `loop` NULL
    // or live, `value` NULL or writable for `*len` bytes, `len` NULL or
    // readable and writable.
    unsafe { socket::getopt(r#loop, tcp, false, level, name, value, len) }
}

/// The local address into `addr`, which has `*len` bytes of room (a
/// `struct sockaddr_storage` holds any); its length into `*len`. Returns 0
/// or an error.
///
/// # Safety
/// `loop` is NULL or a live loop; `addr` is NULL or writable for `*len`
/// bytes; `len` is NULL or readable and writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_tcp_getsockname(
    r#loop: *mut cot_loop,
    tcp: cot_tcp,
    addr: *mut libc::sockaddr,
    len: *mut u32,
) -> c_int {
    // SAFETY: `socket::name` asks `loop` NULL or live, `addr` NULL or writable
    // for `*len` bytes and `len` NULL or readable and writable: this contract.
    unsafe { socket::name(r#loop, tcp, false, false, addr, len) }
}

/// The peer's address, as `cot_tcp_getsockname`. `COT_ENOTCONN` if none.
///
/// # Safety
/// As `cot_tcp_getsockname`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_tcp_getpeername(
    r#loop: *mut cot_loop,
    tcp: cot_tcp,
    addr: *mut libc::sockaddr,
    len: *mut u32,
) -> c_int {
    // SAFETY: the contract is `cot_tcp_getsockname`'s, which is what
    // `socket::name` asks for either address.
    unsafe { socket::name(r#loop, tcp, false, true, addr, len) }
}

/// Cancels the waiting operation of each direction in `events`
/// (`COT_READABLE`: the read or accept; `COT_WRITABLE`: the write or
/// connect): its callback gets `COT_ECANCELED` at the loop's next turn,
/// never inside this call. Returns 1 if one was cancelled, 0 if none waited,
/// or `COT_EINVAL` / `COT_EBADF`.
///
/// # Safety
/// `loop` is NULL or a live loop.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_tcp_cancel(r#loop: *mut cot_loop, tcp: cot_tcp, events: c_int) -> c_int {
    // SAFETY: cancelling reads no caller memory: `socket::cancel` needs `loop`
    // NULL or live, the contract.
    unsafe { socket::cancel(r#loop, tcp, false, events) }
}

/// Closes the socket. The key is invalid at once (`COT_EBADF` after); the
/// operations waiting end with `COT_ECANCELED` at the loop's next turn; the
/// loop closes (`cot_loop_close`) once a run has finished the socket's
/// handles. Returns 0, `COT_EBADF` (closed already) or `COT_EINVAL`.
///
/// # Safety
/// `loop` is NULL or a live loop.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_tcp_close(r#loop: *mut cot_loop, tcp: cot_tcp) -> c_int {
    // SAFETY: `socket::close` asks only `loop` NULL or live, which
    // `cot_tcp_close`'s contract gives.
    unsafe { socket::close(r#loop, tcp, false) }
}
