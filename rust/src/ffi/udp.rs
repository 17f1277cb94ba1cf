//! UDP sockets (IPv4, IPv6) on a loop: `cot_udp`. Receives and sends are
//! operations as TCP's are (`tcp.rs`): one callback, from `cot_loop_run`, at
//! most one receive and one send at a time.

use std::ffi::c_void;
use std::os::raw::c_int;

use super::guard::status;
use super::loop_::{cot_loop, lend};
use super::socket::{self, cot_socket_cb, fail_code, sys_error, with_socket};
use super::tcp::count;
use super::timeout::deadline;
use crate::error::Error;
use crate::net::{Addr, Fail};

/// A UDP socket: a key of its loop's socket table, from `cot_udp_init` or
/// `cot_udp_open`. 0 is never a socket.
pub type cot_udp = u64;

/// A receive's completion: `nread` is the datagram's length (the part that
/// fit the buffer) or a negative code; `from` (valid during the call) and
/// `fromlen` its sender, NULL and 0 on failure.
pub type cot_udp_recv_cb = Option<
    unsafe extern "C" fn(
        r#loop: *mut cot_loop,
        udp: cot_udp,
        nread: i64,
        from: *const libc::sockaddr,
        fromlen: u32,
        data: *mut c_void,
    ),
>;

/// Makes a UDP socket of `family` (`AF_INET`, `AF_INET6`), non-blocking and
/// close-on-exec; stores it in `*udp`. Returns 0 or an error.
///
/// # Safety
/// `loop` is NULL or a live loop; `udp` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_udp_init(r#loop: *mut cot_loop, family: c_int, udp: *mut cot_udp) -> c_int {
    // SAFETY: `socket::open` needs `loop` NULL or live and `udp` NULL or
    // writable, which `cot_udp_init` promises.
    unsafe { socket::open(r#loop, family, libc::SOCK_DGRAM, udp) }
}

/// Adopts `fd`, a datagram socket (`SOCK_DGRAM`: UDP, or a Unix datagram
/// socket; bound, connected, or new), which becomes the loop's, as
/// `cot_tcp_open` does for streams: `cot_udp_close` closes it,
/// `cot_udp_release` gives it back. Returns 0, `COT_EBADF`, `COT_ENOTSOCK`
/// or `COT_EINVAL` (a stream socket, a NULL `udp`); on failure `fd` stays
/// the caller's, unchanged.
///
/// # Safety
/// `loop` is NULL or a live loop; `udp` is NULL or writable; nothing else
/// closes `fd` or adopts it while the loop owns it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_udp_open(r#loop: *mut cot_loop, fd: c_int, udp: *mut cot_udp) -> c_int {
    // SAFETY: `socket::adopt` asks `loop` NULL or live and `udp` NULL or
    // writable, the promise of `cot_udp_open`'s caller.
    unsafe { socket::adopt(r#loop, fd, libc::SOCK_DGRAM, udp) }
}

/// Gives the socket's descriptor back in `*fd`, as `cot_tcp_release`:
/// `COT_EBUSY` while a receive or send waits.
///
/// # Safety
/// `loop` is NULL or a live loop; `fd` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_udp_release(r#loop: *mut cot_loop, udp: cot_udp, fd: *mut c_int) -> c_int {
    // SAFETY: `socket::release` asks `loop` NULL or live and `fd` NULL or
    // writable, as `cot_udp_release`'s caller promises.
    unsafe { socket::release(r#loop, udp, true, fd) }
}

/// Binds the socket to the `len` bytes of `addr`. Returns 0 or an error.
///
/// # Safety
/// `loop` is NULL or a live loop; `addr` is NULL or readable for `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_udp_bind(
    r#loop: *mut cot_loop,
    udp: cot_udp,
    addr: *const libc::sockaddr,
    len: u32,
) -> c_int {
    // SAFETY: `cot_udp_bind`'s contract is `socket::bind`'s: `loop` NULL or
    // live, `addr` NULL or readable for `len` bytes.
    unsafe { socket::bind(r#loop, udp, true, addr, len) }
}

/// Sets the peer (`connect(2)` does not wait for UDP): sends with a NULL
/// address go there, and only its datagrams are received. A NULL `addr`
/// dissolves the association. Returns 0 or an error.
///
/// # Safety
/// `loop` is NULL or a live loop; `addr` is NULL or readable for `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_udp_connect(
    r#loop: *mut cot_loop,
    udp: cot_udp,
    addr: *const libc::sockaddr,
    len: u32,
) -> c_int {
    // SAFETY: `with_socket` gets `loop` NULL or live; `addr_arg` reads `addr`
    // only when non-NULL (tested first), readable for `len` bytes: both this
    // contract's.
    status(unsafe {
        with_socket(r#loop, udp, true, |_, s| {
            let fd = socket::live_fd(s)?;
            if addr.is_null() {
                return crate::net::sys::disconnect(fd).map_err(sys_error);
            }
            let a = socket::addr_arg(addr, len)?;
            crate::net::sys::connect(fd, &a).map_err(sys_error)
        })
    })
}

/// Receives one datagram into `buf` (at most `len` bytes; the rest of a
/// longer one is dropped), waiting at most `timeout_ns`. Returns 0, or
/// without calling back `COT_EINVAL` (NULL `buf` or `cb`, `len` 0, a timeout
/// above `INT64_MAX`), `COT_EBADF`, `COT_EBUSY` (a receive waits already).
///
/// # Safety
/// `loop` is NULL or a live loop; `buf` is writable for `len` bytes until
/// `cb` ran; `cb` may be called from `cot_loop_run`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_udp_recv(
    r#loop: *mut cot_loop,
    udp: cot_udp,
    buf: *mut c_void,
    len: usize,
    timeout_ns: u64,
    cb: cot_udp_recv_cb,
    data: *mut c_void,
) -> c_int {
    let (Some(cb), false, false) = (cb, buf.is_null(), len == 0) else { return Error::Inval.code() };
    let me = r#loop;
    let done = move |lp: &mut crate::reactor::Loop, r: Result<(Vec<u8>, Addr), Fail>| {
        let (n, from) = match r {
            Ok((bytes, from)) => {
                // SAFETY: `buf` is writable for `len` bytes until the
                // callback (the caller's contract); a receive takes at most
                // `len`.
                unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf.cast::<u8>(), bytes.len()) };
                (bytes.len() as i64, Some(from))
            }
            Err(f) => (fail_code(f), None),
        };
        let (p, plen) = from.as_ref().map_or((std::ptr::null(), 0), |a| (a.as_bytes().as_ptr(), a.as_bytes().len()));
        // SAFETY: `me` wraps `lp`; `cb` may be called from the loop; the
        // address lives until the call returns.
        unsafe { lend(me, lp, || cb(me, udp, n, p.cast(), plen as u32, data)) }
    };
    // SAFETY: `loop` is NULL or live (the contract), as `with_socket` asks;
    // `done` writes `buf` before `cb`, while the contract keeps it writable.
    status(unsafe {
        with_socket(r#loop, udp, true, |l, s| {
            let d = deadline(l, timeout_ns)?;
            s.recvfrom(l, len, d, Box::new(done))
        })
    })
}

/// Sends the `len` bytes of `buf` (copied; 0 bytes is an empty datagram) as
/// one datagram to the `addrlen` bytes of `addr` (NULL: the connected peer),
/// waiting at most `timeout_ns` for room in the send buffer; `cb` gets `len`
/// or the error (`COT_EMSGSIZE`, `COT_ENOTCONN`, ...). Returns 0, or
/// without calling back `COT_EINVAL`, `COT_EBADF`, `COT_EBUSY` (a send
/// waits already).
///
/// # Safety
/// `loop` is NULL or a live loop; `buf` is NULL or readable for `len` bytes;
/// `addr` is NULL or readable for `addrlen` bytes; `cb` may be called from
/// `cot_loop_run`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_udp_send(
    r#loop: *mut cot_loop,
    udp: cot_udp,
    buf: *const c_void,
    len: usize,
    addr: *const libc::sockaddr,
    addrlen: u32,
    timeout_ns: u64,
    cb: cot_socket_cb,
    data: *mut c_void,
) -> c_int {
    // SAFETY: `buf` is NULL or readable for `len` bytes (the contract); the
    // bytes are copied at once.
    let (Some(cb), Ok(bytes)) = (cb, unsafe { socket::datagram_arg(buf, len) }) else {
        return Error::Inval.code();
    };
    let bytes = bytes.to_vec();
    let done = socket::complete(r#loop, cb, udp, data);
    // SAFETY: `bytes` is a copy; `with_socket` gets `loop` NULL or live and
    // `addr_arg` a non-NULL `addr` readable for `addrlen` bytes, from the
    // contract.
    status(unsafe {
        with_socket(r#loop, udp, true, |l, s| {
            let d = deadline(l, timeout_ns)?;
            let to = if addr.is_null() { None } else { Some(socket::addr_arg(addr, addrlen)?) };
            s.sendto(l, bytes, to, d, Box::new(move |lp, r| done(lp, r.map_or_else(fail_code, |n| n as i64))))
        })
    })
}

/// Receives one datagram into `buf` now (at most `len` bytes; the rest of
/// a longer one is dropped), never waiting, never calling back; its sender
/// into `*from` unless `from` is NULL. Returns the datagram's length,
/// `COT_EAGAIN` if none is queued, or an error: `COT_EINVAL` (NULL `buf`,
/// `len` 0), `COT_EBADF`, `COT_EBUSY` (a receive waits), ...
///
/// # Safety
/// `loop` is NULL or a live loop; `buf` is NULL or writable for `len` bytes;
/// `from` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_udp_try_recv(
    r#loop: *mut cot_loop,
    udp: cot_udp,
    buf: *mut c_void,
    len: usize,
    from: *mut libc::sockaddr_storage,
) -> i64 {
    if buf.is_null() || len == 0 {
        return Error::Inval.code() as i64;
    }
    // SAFETY: `buf` is non-NULL and `len` > 0 (checked above); the contract
    // makes it writable for `len` bytes during this call, the only use of
    // `out`.
    let out = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), len) };
    // SAFETY: `out` was made above; `with_socket` wants `loop` NULL or live,
    // which `cot_udp_try_recv` promises.
    let r = unsafe { with_socket(r#loop, udp, true, |_, s| socket::try_recvfrom(s, out)) };
    count(r.map(|(n, a)| {
        if !from.is_null() {
            let b = a.as_bytes();
            // SAFETY: `from` is writable (the caller's contract) and holds
            // any address, at most a `sockaddr_storage`.
            unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), from.cast::<u8>(), b.len().min(size_of_val(&*from))) };
        }
        n
    }))
}

/// Sends the `len` bytes of `buf` (0 bytes: an empty datagram) as one
/// datagram to the `tolen` bytes of `to` (NULL: the connected peer) now,
/// never waiting, never calling back: `len`, `COT_EAGAIN` if the send buffer
/// is full, or an error: `COT_EINVAL`, `COT_EBADF`, `COT_EBUSY` (a send
/// waits), `COT_EMSGSIZE`, ...
///
/// # Safety
/// `loop` is NULL or a live loop; `buf` is NULL or readable for `len` bytes;
/// `to` is NULL or readable for `tolen` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_udp_try_send(
    r#loop: *mut cot_loop,
    udp: cot_udp,
    buf: *const c_void,
    len: usize,
    to: *const libc::sockaddr,
    tolen: u32,
) -> i64 {
    // SAFETY: `buf` is NULL or readable for `len` bytes while this call
    // sends it (the contract).
    let Ok(data) = (unsafe { socket::datagram_arg(buf, len) }) else { return Error::Inval.code() as i64 };
    // SAFETY: `with_socket` gets `loop` NULL or live; `addr_arg` reads a non-
    // NULL `to`, readable for `tolen` bytes: the contract.
    count(unsafe {
        with_socket(r#loop, udp, true, |_, s| {
            let to = if to.is_null() { None } else { Some(socket::addr_arg(to, tolen)?) };
            socket::try_sendto(s, data, to.as_ref())
        })
    })
}

/// Lets other sockets bind the same address and port (`enable` 1:
/// `SO_REUSEPORT`), each with the option set: the kernel spreads the
/// datagrams among them by a hash of the sender. Call it before
/// `cot_udp_bind`. Returns 0 or an error.
///
/// # Safety
/// `loop` is NULL or a live loop.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_udp_reuseport(r#loop: *mut cot_loop, udp: cot_udp, enable: c_int) -> c_int {
    // SAFETY: `socket::reuseport` asks only `loop` NULL or live: the contract.
    unsafe { socket::reuseport(r#loop, udp, true, enable) }
}

/// `setsockopt(2)`, as `cot_tcp_setopt` (`SO_BROADCAST`, `IP_MULTICAST_TTL`,
/// ...).
///
/// # Safety
/// `loop` is NULL or a live loop; `value` is NULL or readable for `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_udp_setopt(
    r#loop: *mut cot_loop,
    udp: cot_udp,
    level: c_int,
    name: c_int,
    value: *const c_void,
    len: u32,
) -> c_int {
    // SAFETY: like `cot_tcp_setopt`'s, this contract (`loop` NULL or live,
    // `value` NULL or readable for `len` bytes) is `socket::setopt`'s.
    unsafe { socket::setopt(r#loop, udp, true, level, name, value, len) }
}

/// `getsockopt(2)`, as `cot_tcp_getopt`.
///
/// # Safety
/// `loop` is NULL or a live loop; `value` is NULL or writable for `*len`
/// bytes; `len` is NULL or readable and writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_udp_getopt(
    r#loop: *mut cot_loop,
    udp: cot_udp,
    level: c_int,
    name: c_int,
    value: *mut c_void,
    len: *mut u32,
) -> c_int {
    // SAFETY: `socket::getopt` gets `loop` NULL or live, `value` NULL or
    // writable for `*len` bytes, `len` NULL or readable and writable:
    // `cot_udp_getopt`'s contract.
    unsafe { socket::getopt(r#loop, udp, true, level, name, value, len) }
}

/// The local address, as `cot_tcp_getsockname`.
///
/// # Safety
/// As `cot_tcp_getsockname`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_udp_getsockname(
    r#loop: *mut cot_loop,
    udp: cot_udp,
    addr: *mut libc::sockaddr,
    len: *mut u32,
) -> c_int {
    // SAFETY: `cot_tcp_getsockname`'s contract, which this one is, is what
    // `socket::name` asks.
    unsafe { socket::name(r#loop, udp, true, false, addr, len) }
}

/// Cancels the waiting receive (`COT_READABLE`) and/or send
/// (`COT_WRITABLE`), as `cot_tcp_cancel`.
///
/// # Safety
/// `loop` is NULL or a live loop.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_udp_cancel(r#loop: *mut cot_loop, udp: cot_udp, events: c_int) -> c_int {
    // SAFETY: `socket::cancel` touches no caller memory and needs `loop` NULL
    // or live: `cot_udp_cancel`'s contract.
    unsafe { socket::cancel(r#loop, udp, true, events) }
}

/// Closes the socket, as `cot_tcp_close`.
///
/// # Safety
/// `loop` is NULL or a live loop.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_udp_close(r#loop: *mut cot_loop, udp: cot_udp) -> c_int {
    // SAFETY: closing needs only `loop` NULL or live (`socket::close`'s ask),
    // as `cot_udp_close` promises.
    unsafe { socket::close(r#loop, udp, true) }
}
