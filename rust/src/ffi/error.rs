//! Error codes: negative errno values, as libuv's.

use std::ffi::c_char;
use std::os::raw::c_int;

use crate::error::Error;

/// Invalid argument: NULL, a freed task, a task of another scheduler, a zero
/// signal, an unknown `when`.
pub const COT_EINVAL: c_int = -22;
/// Busy: the object has waiters or is in use, or the call was made from inside
/// one of the object's own callbacks.
pub const COT_EBUSY: c_int = -16;
/// Not enough memory.
pub const COT_ENOMEM: c_int = -12;
/// Operation canceled.
pub const COT_ECANCELED: c_int = -125;
/// Timed out: a wait's time limit passed (`cot_park`).
pub const COT_ETIMEDOUT: c_int = -110;
/// Operation not permitted (e.g. polling a regular file).
pub const COT_EPERM: c_int = -1;
/// Bad file descriptor.
pub const COT_EBADF: c_int = -9;
/// Already exists (e.g. a descriptor polled by two handles).
pub const COT_EEXIST: c_int = -17;
/// Another system error.
pub const COT_EIO: c_int = -5;
/// No such process.
pub const COT_ESRCH: c_int = -3;
/// Not a child of this process (or reaped already).
pub const COT_ECHILD: c_int = -10;
/// Already settled: a promise's first result wins (`cot_promise_set`).
pub const COT_EALREADY: c_int = -114;
/// A future's promise was freed without a result (`cot_future_result`).
pub const COT_EDROPPED: c_int = -4001;
/// Name resolution: temporary failure (the value of libuv's `UV_EAI_AGAIN`).
pub const COT_EAI_AGAIN: c_int = -3001;
/// Name resolution: permanent failure.
pub const COT_EAI_FAIL: c_int = -3002;
/// Name resolution: address family not supported.
pub const COT_EAI_FAMILY: c_int = -3003;
/// Name resolution: unknown node or service.
pub const COT_EAI_NONAME: c_int = -3008;
/// Name resolution: service not available for the socket type.
pub const COT_EAI_SERVICE: c_int = -3010;
/// Sockets: the peer reset the connection.
pub const COT_ECONNRESET: c_int = -104;
/// Broken pipe: the other end is closed: a write to a connection the peer
/// closed (no SIGPIPE is raised), or a closed channel (`cot_chan_close`).
pub const COT_EPIPE: c_int = -32;
/// Sockets: nobody listens at the address.
pub const COT_ECONNREFUSED: c_int = -111;
/// Sockets: the connection was aborted.
pub const COT_ECONNABORTED: c_int = -103;
/// Sockets: the address is in use.
pub const COT_EADDRINUSE: c_int = -98;
/// Sockets: the address is not this machine's.
pub const COT_EADDRNOTAVAIL: c_int = -99;
/// Sockets: the address family is not supported.
pub const COT_EAFNOSUPPORT: c_int = -97;
/// Sockets: not connected.
pub const COT_ENOTCONN: c_int = -107;
/// Sockets: connected already.
pub const COT_EISCONN: c_int = -106;
/// Sockets: the network is unreachable.
pub const COT_ENETUNREACH: c_int = -101;
/// Sockets: the host is unreachable.
pub const COT_EHOSTUNREACH: c_int = -113;
/// Sockets: a datagram too long.
pub const COT_EMSGSIZE: c_int = -90;
/// Sockets: an option the protocol does not know.
pub const COT_ENOPROTOOPT: c_int = -92;
/// Sockets: not supported on this socket (e.g. listening on UDP).
pub const COT_ENOTSUP: c_int = -95;
/// Permission denied (e.g. a port below 1024).
pub const COT_EACCES: c_int = -13;
/// No such file or directory (e.g. a Unix socket's path).
pub const COT_ENOENT: c_int = -2;
/// Sockets: a "try now" call would have to wait (`cot_tcp_try_read`, ...).
pub const COT_EAGAIN: c_int = -11;
/// Sockets: the descriptor is not a socket (`cot_tcp_open` of a pipe or a
/// file).
pub const COT_ENOTSOCK: c_int = -88;

/// A static description of an error code, e.g. `"invalid argument"`;
/// `"success"` for 0 and `"unknown error"` for codes not listed here.
/// Safe from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn cot_strerror(err: c_int) -> *const c_char {
    match Error::from_code(err) {
        Some(e) => e.c_message().as_ptr(),
        None if err == 0 => c"success".as_ptr(),
        None => c"unknown error".as_ptr(),
    }
}

/// The name of an error code, e.g. `"COT_EINVAL"`; `"COT_OK"` for 0 and
/// `"UNKNOWN"` for codes not listed here. Safe from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn cot_err_name(err: c_int) -> *const c_char {
    match Error::from_code(err) {
        Some(e) => e.c_name().as_ptr(),
        None if err == 0 => c"COT_OK".as_ptr(),
        None => c"UNKNOWN".as_ptr(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn constants_match_the_core() {
        assert_eq!(COT_EINVAL, Error::Inval.code());
        assert_eq!(COT_EBUSY, Error::Busy.code());
        assert_eq!(COT_ENOMEM, Error::NoMem.code());
        assert_eq!(COT_ECANCELED, Error::Canceled.code());
        assert_eq!(COT_ETIMEDOUT, Error::TimedOut.code());
        assert_eq!(COT_EALREADY, Error::Already.code());
        assert_eq!(COT_EDROPPED, Error::Dropped.code());
        assert_eq!(COT_EPERM, Error::Perm.code());
        assert_eq!(COT_EBADF, Error::BadF.code());
        assert_eq!(COT_EEXIST, Error::Exist.code());
        assert_eq!(COT_EIO, Error::Io.code());
        assert_eq!(COT_ESRCH, Error::Srch.code());
        assert_eq!(COT_ECHILD, Error::Child.code());
        for (c, e) in [
            (COT_EAI_AGAIN, Error::EaiAgain),
            (COT_EAI_FAIL, Error::EaiFail),
            (COT_EAI_FAMILY, Error::EaiFamily),
            (COT_EAI_NONAME, Error::EaiNoname),
            (COT_EAI_SERVICE, Error::EaiService),
            (COT_ECONNRESET, Error::ConnReset),
            (COT_EPIPE, Error::Pipe),
            (COT_ECONNREFUSED, Error::ConnRefused),
            (COT_ECONNABORTED, Error::ConnAborted),
            (COT_EADDRINUSE, Error::AddrInUse),
            (COT_EADDRNOTAVAIL, Error::AddrNotAvail),
            (COT_EAFNOSUPPORT, Error::AfNoSupport),
            (COT_ENOTCONN, Error::NotConn),
            (COT_EISCONN, Error::IsConn),
            (COT_ENETUNREACH, Error::NetUnreach),
            (COT_EHOSTUNREACH, Error::HostUnreach),
            (COT_EMSGSIZE, Error::MsgSize),
            (COT_ENOPROTOOPT, Error::NoProtoOpt),
            (COT_ENOTSUP, Error::NotSup),
            (COT_EACCES, Error::Acces),
            (COT_ENOENT, Error::NoEnt),
            (COT_EAGAIN, Error::Again),
            (COT_ENOTSOCK, Error::NotSock),
        ] {
            assert_eq!(c, e.code());
        }
        assert_eq!(Error::ALL.len(), 36, "a new error needs its COT_E* constant");
    }

    #[test]
    fn names_and_messages() {
        // SAFETY: both functions return static NUL-terminated strings.
        let s = |p: *const c_char| unsafe { CStr::from_ptr(p) }.to_str().unwrap();
        assert_eq!(s(cot_err_name(COT_EBUSY)), "COT_EBUSY");
        assert_eq!(s(cot_strerror(COT_EINVAL)), "invalid argument");
        assert_eq!(s(cot_strerror(COT_ETIMEDOUT)), "timed out");
        assert_eq!(s(cot_err_name(COT_ETIMEDOUT)), "COT_ETIMEDOUT");
        assert_eq!(s(cot_strerror(0)), "success");
        assert_eq!(s(cot_strerror(-9999)), "unknown error");
        assert_eq!(s(cot_err_name(12345)), "UNKNOWN");
    }
}
