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
use super::loop_::{CSocket, Counted, connections, cot_loop, lend, tables, with_loop};
use super::poll::{COT_READABLE, COT_WRITABLE};
use crate::error::{Error, Result};
use crate::net::{Addr, Dir, Done, Exported, Fail, Socket};
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

/// What a socket is to its table: its kind, and for TCP whether it is a
/// connection (counted in `cot_loop_connections`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Udp,
    /// A listener, or a socket not connected yet.
    Tcp,
    Connection,
}

/// Adds `sock` to the table of `p`: its key.
///
/// # Safety
/// `p` is a live loop.
pub(crate) unsafe fn insert(p: *mut cot_loop, sock: Socket, kind: Kind) -> Result<u64> {
    // SAFETY: `tables` asks `p` NULL or live; `insert`'s contract says live.
    let table = unsafe { tables(p) }.map(|t| &t.sockets).ok_or(Error::Inval)?;
    // SAFETY: live, as above.
    let counted = unsafe { counted(p, kind == Kind::Connection) };
    Ok(table.borrow_mut().insert(CSocket { sock, udp: kind == Kind::Udp, counted }).to_raw())
}

/// A place in the count of `p` if `conn`.
///
/// # Safety
/// `p` is a live loop.
unsafe fn counted(p: *mut cot_loop, conn: bool) -> Option<Counted> {
    // SAFETY: live (the contract), as `connections` asks.
    conn.then(|| unsafe { connections(p) }.map(Counted::new)).flatten()
}

/// Counts the TCP socket `id` of `p` as a connection from now (its connect
/// succeeded), if it is still `sock` and not counted yet.
///
/// # Safety
/// `p` is a live loop, on its thread.
unsafe fn count_connected(p: *mut cot_loop, id: u64, sock: &Socket) {
    // SAFETY: live, on its thread (the contract): `tables` and `counted` ask
    // that.
    let Some(t) = (unsafe { tables(p) }) else { return };
    let mut table = t.sockets.borrow_mut();
    if let Some(s) = Key::from_raw(id).and_then(|k| table.get_mut(k))
        && s.sock.same(sock)
        && s.counted.is_none()
    {
        // SAFETY: as above.
        s.counted = unsafe { counted(p, true) };
    }
}

/// A new socket of `family` and `socktype` in the table; its key in `*out`.
///
/// # Safety
/// `p` is NULL or a live loop; `out` is NULL or writable.
pub(crate) unsafe fn open(p: *mut cot_loop, family: c_int, socktype: c_int, out: *mut u64) -> c_int {
    if out.is_null() {
        return Error::Inval.code();
    }
    let kind = if socktype == libc::SOCK_DGRAM { Kind::Udp } else { Kind::Tcp };
    // SAFETY: `p` is NULL or live (the contract): `with_loop` refuses NULL, so
    // `insert` inside gets a live loop; `out` is non-NULL (checked above) and
    // writable, as `write_out` asks.
    unsafe {
        write_out(
            out,
            with_loop(p, |_| {
                let sock = Socket::new(family, socktype).map_err(sys_error)?;
                insert(p, sock, kind)
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
                // A stream with a peer is a connection (a listener has none).
                let kind = match socktype {
                    libc::SOCK_DGRAM => Kind::Udp,
                    _ if crate::net::sys::name(fd, true).is_ok() => Kind::Connection,
                    _ => Kind::Tcp,
                };
                insert(p, Socket::from_fd(fd), kind)
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

/// Starts connecting `s` (the socket `id` of `p`) to `a` on `l`, until `d`:
/// the one start of the callback and the stackful connect. `Error::Busy`
/// while a write or connect waits; a refusal the system gives at once is
/// the error. Once connected, the socket counts as a connection of `p`.
///
/// # Safety
/// `p` is the live wrapper of `l`.
pub(crate) unsafe fn connect(
    p: *mut cot_loop,
    id: u64,
    l: &mut Loop,
    s: &Socket,
    a: &Addr,
    d: Option<u64>,
    done: Done<()>,
) -> Result<()> {
    if s.waiting(Dir::Write) {
        return Err(Error::Busy);
    }
    s.connect_start(a).map_err(try_error)?;
    let sock = s.clone();
    s.connect(
        l,
        d,
        Box::new(move |lp, r| {
            if r.is_ok() {
                // SAFETY: `p` wraps `lp` (the contract), and lives while its
                // loop runs this completion, on its thread.
                unsafe { count_connected(p, id, &sock) };
            }
            done(lp, r)
        }),
    )
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

/// `SO_REUSEPORT` on (`enable` not 0) or off, before the bind.
///
/// # Safety
/// `p` is NULL or a live loop.
pub(crate) unsafe fn reuseport(p: *mut cot_loop, id: u64, udp: bool, enable: c_int) -> c_int {
    let v = c_int::from(enable != 0).to_ne_bytes();
    // SAFETY: `p` NULL or live is the contract; `value` points to `v`, a
    // local of the 4 bytes passed, as `setopt` asks.
    unsafe { setopt(p, id, udp, libc::SOL_SOCKET, libc::SO_REUSEPORT, v.as_ptr().cast(), 4) }
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

/// Ends the socket's life in the table with `end` (a close, a release or
/// an export): once `end` succeeded, its key is invalid, and it is no longer
/// counted; if it failed, nothing changed. With `end`'s result: whether it
/// was a connection.
///
/// # Safety
/// `p` is NULL or a live loop.
unsafe fn end<R>(
    p: *mut cot_loop,
    id: u64,
    udp: bool,
    end: impl FnOnce(&mut Loop, &Socket) -> Result<R>,
) -> Result<(R, bool)> {
    // SAFETY: `with_socket` gets `p` NULL or live (`end`'s contract); inside,
    // the loop is live, so `tables(p)` may look at it.
    unsafe {
        with_socket(p, id, udp, |l, s| {
            let r = end(l, s)?;
            let table = tables(p).map(|t| &t.sockets).ok_or(Error::Inval)?;
            let gone = Key::from_raw(id).and_then(|k| table.borrow_mut().remove(k));
            Ok((r, gone.is_some_and(|g| g.counted.is_some())))
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
    status(unsafe { end(p, id, udp, |l, s| s.close(Some(l))) }.map(drop))
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
    unsafe { write_out(fd, end(p, id, udp, |l, s| s.release(Some(l))).map(|(fd, _)| fd)) }
}

/// A TCP socket between loops (opaque): from `cot_tcp_export`, for
/// `cot_tcp_import` on any loop of any thread, or `cot_tcp_exported_free`.
pub struct cot_tcp_exported {
    ex: Exported,
    /// It was a connection: the importing loop counts it.
    conn: bool,
}

/// Takes the TCP socket out of `p` into `*out`, its buffered bytes with it;
/// its key is invalid at once. Refused as a release is (`COT_EBUSY` while an
/// operation waits), changing nothing.
///
/// # Safety
/// `p` is NULL or a live loop; `out` is NULL or writable.
pub(crate) unsafe fn export(p: *mut cot_loop, id: u64, out: *mut *mut cot_tcp_exported) -> c_int {
    // Checked first: an exported socket must not be lost.
    if out.is_null() {
        return Error::Inval.code();
    }
    // SAFETY: `end` needs `p` NULL or live; `out` is non-NULL (checked) and
    // writable: `export`'s contract.
    unsafe {
        write_out(
            out,
            end(p, id, false, |l, s| s.export(Some(l)))
                .map(|(ex, conn)| Box::into_raw(Box::new(cot_tcp_exported { ex, conn }))),
        )
    }
}

/// Makes `ex` a TCP socket of `p`, its key in `*out`; consumes `ex` on
/// success only.
///
/// # Safety
/// `p` is NULL or a live loop; `ex` is NULL or from `export`, not freed or
/// imported since; `out` is NULL or writable.
pub(crate) unsafe fn import(p: *mut cot_loop, ex: *mut cot_tcp_exported, out: *mut u64) -> c_int {
    if ex.is_null() || out.is_null() {
        return Error::Inval.code();
    }
    // SAFETY: `with_loop` refuses a NULL `p`, so `tables` and `counted` see
    // the live loop of the contract; `ex` is taken back only after the last
    // step that can fail, so a refusal leaves it the caller's; `out` is
    // non-NULL (checked) and writable.
    unsafe {
        write_out(
            out,
            with_loop(p, |_| {
                let table = tables(p).map(|t| &t.sockets).ok_or(Error::Inval)?;
                let ex = Box::from_raw(ex);
                let sock = Socket::import(ex.ex);
                let counted = counted(p, ex.conn);
                Ok(table.borrow_mut().insert(CSocket { sock, udp: false, counted }).to_raw())
            }),
        )
    }
}

/// Frees an exported socket, closing its descriptor.
///
/// # Safety
/// `ex` is NULL or from `export`, not freed or imported since.
pub(crate) unsafe fn exported_free(ex: *mut cot_tcp_exported) {
    if !ex.is_null() {
        // SAFETY: made by `Box::into_raw` in `export` and still the caller's
        // (the contract); dropping it closes the descriptor.
        drop(unsafe { Box::from_raw(ex) });
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ffi::{
        cot_loop_close, cot_loop_connections, cot_loop_new, cot_tcp_close, cot_tcp_export, cot_tcp_import,
        cot_tcp_open, cot_tcp_try_read,
    };
    use crate::net::Pattern;

    #[test]
    fn an_export_carries_the_buffered_bytes_to_a_loop_of_another_thread() {
        let (a, b) = crate::net::sys::socketpair().unwrap();
        let lp = cot_loop_new();
        let mut t = 0;
        let mut ex = std::ptr::null_mut();
        // SAFETY: `lp` is live until closed below, on this thread; the out
        // pointers are locals.
        unsafe {
            assert_eq!(cot_tcp_open(lp, b, &mut t), 0);
            assert_eq!(cot_loop_connections(lp), 1, "a socket pair has a peer");
            let counter = super::super::loop_::connection_counter(lp);
            assert_eq!(counter.load(std::sync::atomic::Ordering::Relaxed), 1);
            assert_eq!(crate::net::sys::send(a, b"one\ntwo\nthree"), Ok(13));
            // A line read (as the Lua face reads) leaves the rest buffered.
            let line = with_socket(lp, t, false, |_, s| Ok(s.try_read(Pattern::Line)));
            assert_eq!(line, Ok(Some(Ok(b"one".to_vec()))));
            assert_eq!(cot_tcp_export(lp, t, &mut ex), 0);
            assert_eq!(cot_loop_connections(lp), 0);
            assert_eq!(cot_loop_close(lp), 0);
            assert_eq!(counter.load(std::sync::atomic::Ordering::Relaxed), 0, "readable after the close");
        }
        let ex = ex as usize; // the object may go to any thread
        let far = std::thread::spawn(move || {
            let lp = cot_loop_new();
            let (mut t, mut out) = (0, [0u8; 64]);
            // SAFETY: `lp` is this thread's until closed; `ex` came from
            // `cot_tcp_export` and is imported once; `out` is a local.
            unsafe {
                assert_eq!(cot_tcp_import(lp, ex as *mut cot_tcp_exported, &mut t), 0);
                assert_eq!(cot_loop_connections(lp), 1);
                let n = cot_tcp_try_read(lp, t, out.as_mut_ptr().cast(), out.len());
                assert_eq!(&out[..n as usize], b"two\nthree", "the buffered bytes first, once");
                assert_eq!(cot_tcp_try_read(lp, t, out.as_mut_ptr().cast(), out.len()), Error::Again.code() as i64);
                assert_eq!(cot_tcp_close(lp, t), 0);
                assert_eq!(cot_loop_close(lp), 0);
            }
        });
        far.join().unwrap();
        crate::net::sys::close(a);
    }
}
