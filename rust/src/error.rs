//! Errors of the core, shared by every face. Each is a negative errno-style
//! code in the C ABI (`COT_E*`), as libuv does.

use std::ffi::CStr;
use std::fmt;

fn c_str(s: &'static str) -> &'static CStr {
    CStr::from_bytes_with_nul(s.as_bytes()).expect("NUL-terminated literal")
}

/// One error list generates the enum, its codes, names and messages.
macro_rules! errors {
    ($($(#[$doc:meta])* $name:ident = $code:literal, $cname:literal, $msg:literal;)*) => {
        /// An error of the core. `code()` is its negative C ABI value.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(i32)]
        pub enum Error {
            $($(#[$doc])* $name = $code,)*
        }

        impl Error {
            /// All errors, for tables and tests.
            pub const ALL: &'static [Error] = &[$(Error::$name),*];

            /// The error's C name, e.g. `"COT_EINVAL"`.
            pub fn name(self) -> &'static str {
                match self { $(Error::$name => $cname,)* }
            }

            /// A short description, e.g. `"invalid argument"`.
            pub fn message(self) -> &'static str {
                match self { $(Error::$name => $msg,)* }
            }

            /// [`Error::message`] as a C string.
            pub fn c_message(self) -> &'static CStr {
                match self { $(Error::$name => c_str(concat!($msg, "\0")),)* }
            }

            /// [`Error::name`] as a C string.
            pub fn c_name(self) -> &'static CStr {
                match self { $(Error::$name => c_str(concat!($cname, "\0")),)* }
            }
        }
    };
}

errors! {
    /// A bad argument: NULL, a freed task, a task of another scheduler, ...
    Inval = -22, "COT_EINVAL", "invalid argument";
    /// The object is in use (has waiters, is part of another, or a callback is running).
    Busy = -16, "COT_EBUSY", "resource busy or locked";
    /// Out of memory.
    NoMem = -12, "COT_ENOMEM", "not enough memory";
    /// Operation not permitted (e.g. polling a regular file).
    Perm = -1, "COT_EPERM", "operation not permitted";
    /// Bad file descriptor.
    BadF = -9, "COT_EBADF", "bad file descriptor";
    /// Already exists (e.g. a descriptor polled by two handles).
    Exist = -17, "COT_EEXIST", "file already exists";
    /// Another system error.
    Io = -5, "COT_EIO", "i/o error";
    /// No such process.
    Srch = -3, "COT_ESRCH", "no such process";
    /// Not a child of this process (or reaped already).
    Child = -10, "COT_ECHILD", "no child processes";
    /// Name resolution: temporary failure (libuv's value).
    EaiAgain = -3001, "COT_EAI_AGAIN", "temporary failure";
    /// Name resolution: permanent failure.
    EaiFail = -3002, "COT_EAI_FAIL", "permanent failure";
    /// Name resolution: address family not supported.
    EaiFamily = -3003, "COT_EAI_FAMILY", "ai_family not supported";
    /// Name resolution: unknown node or service.
    EaiNoname = -3008, "COT_EAI_NONAME", "unknown node or service";
    /// Name resolution: service not available for socket type.
    EaiService = -3010, "COT_EAI_SERVICE", "service not available for socket type";
    /// The operation was canceled.
    Canceled = -125, "COT_ECANCELED", "operation canceled";
    /// A wait ended because its time limit passed.
    TimedOut = -110, "COT_ETIMEDOUT", "timed out";
    /// A promise was settled already: the first result wins.
    Already = -114, "COT_EALREADY", "already settled";
    /// A future's promise was dropped without a result.
    Dropped = -4001, "COT_EDROPPED", "promise dropped without a result";
    /// Sockets: the peer reset the connection.
    ConnReset = -104, "COT_ECONNRESET", "connection reset by peer";
    /// The other end is closed: a socket the peer closed (never a SIGPIPE),
    /// a closed channel, or a dropped loop (`Remote::post`).
    Pipe = -32, "COT_EPIPE", "broken pipe";
    /// Sockets: nobody listens at the address.
    ConnRefused = -111, "COT_ECONNREFUSED", "connection refused";
    /// Sockets: the connection was aborted.
    ConnAborted = -103, "COT_ECONNABORTED", "connection aborted";
    /// Sockets: the address is in use.
    AddrInUse = -98, "COT_EADDRINUSE", "address already in use";
    /// Sockets: the address is not this machine's.
    AddrNotAvail = -99, "COT_EADDRNOTAVAIL", "address not available";
    /// Sockets: the address family is not supported.
    AfNoSupport = -97, "COT_EAFNOSUPPORT", "address family not supported";
    /// Sockets: not connected.
    NotConn = -107, "COT_ENOTCONN", "socket is not connected";
    /// Sockets: connected already.
    IsConn = -106, "COT_EISCONN", "socket is already connected";
    /// Sockets: the network is unreachable.
    NetUnreach = -101, "COT_ENETUNREACH", "network is unreachable";
    /// Sockets: the host is unreachable.
    HostUnreach = -113, "COT_EHOSTUNREACH", "host is unreachable";
    /// Sockets: a datagram too long.
    MsgSize = -90, "COT_EMSGSIZE", "message too long";
    /// Sockets: an option the protocol does not know.
    NoProtoOpt = -92, "COT_ENOPROTOOPT", "protocol not available";
    /// Sockets: not supported on this socket (e.g. `listen` on UDP).
    NotSup = -95, "COT_ENOTSUP", "operation not supported on socket";
    /// Permission denied (e.g. a port below 1024).
    Acces = -13, "COT_EACCES", "permission denied";
    /// No such file or directory (e.g. a Unix socket's path).
    NoEnt = -2, "COT_ENOENT", "no such file or directory";
    /// Sockets: a "try now" call would have to wait (`cot_tcp_try_read`, ...).
    Again = -11, "COT_EAGAIN", "resource temporarily unavailable";
    /// Sockets: the descriptor is not a socket (`cot_tcp_open` of a pipe).
    NotSock = -88, "COT_ENOTSOCK", "socket operation on non-socket";
}

impl Error {
    /// The negative code used in the C ABI.
    pub fn code(self) -> i32 {
        self as i32
    }

    /// The error for a system error (`Error::Io` for one without its own code).
    pub fn from_io(e: &std::io::Error) -> Error {
        e.raw_os_error().map_or(Error::Io, Error::from_errno)
    }

    /// The error for an `errno` (`Error::Io` for one without its own code).
    pub fn from_errno(errno: i32) -> Error {
        Error::from_code(-errno).unwrap_or(Error::Io)
    }

    /// The error with this code, if any.
    pub fn from_code(code: i32) -> Option<Error> {
        Error::ALL.iter().copied().find(|e| e.code() == code)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for Error {}

/// Result of the core's fallible operations.
pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_negative_errno_values() {
        assert_eq!(Error::Inval.code(), -libc::EINVAL);
        assert_eq!(Error::Busy.code(), -libc::EBUSY);
        assert_eq!(Error::NoMem.code(), -libc::ENOMEM);
        assert_eq!(Error::Canceled.code(), -libc::ECANCELED);
        assert_eq!(Error::Perm.code(), -libc::EPERM);
        assert_eq!(Error::BadF.code(), -libc::EBADF);
        assert_eq!(Error::Exist.code(), -libc::EEXIST);
        assert_eq!(Error::Io.code(), -libc::EIO);
        assert_eq!(Error::Srch.code(), -libc::ESRCH);
        assert_eq!(Error::Child.code(), -libc::ECHILD);
        assert_eq!(Error::TimedOut.code(), -libc::ETIMEDOUT);
        assert_eq!(Error::Already.code(), -libc::EALREADY);
        assert_eq!(Error::Pipe.code(), -libc::EPIPE);
        assert_eq!(Error::EaiNoname.code(), -3008, "as libuv's UV_EAI_NONAME");
        for (e, n) in [
            (Error::ConnReset, libc::ECONNRESET),
            (Error::Pipe, libc::EPIPE),
            (Error::ConnRefused, libc::ECONNREFUSED),
            (Error::ConnAborted, libc::ECONNABORTED),
            (Error::AddrInUse, libc::EADDRINUSE),
            (Error::AddrNotAvail, libc::EADDRNOTAVAIL),
            (Error::AfNoSupport, libc::EAFNOSUPPORT),
            (Error::NotConn, libc::ENOTCONN),
            (Error::IsConn, libc::EISCONN),
            (Error::NetUnreach, libc::ENETUNREACH),
            (Error::HostUnreach, libc::EHOSTUNREACH),
            (Error::MsgSize, libc::EMSGSIZE),
            (Error::NoProtoOpt, libc::ENOPROTOOPT),
            (Error::NotSup, libc::EOPNOTSUPP),
            (Error::Acces, libc::EACCES),
            (Error::NoEnt, libc::ENOENT),
            (Error::Again, libc::EAGAIN),
            (Error::NotSock, libc::ENOTSOCK),
        ] {
            assert_eq!(e.code(), -n, "{e:?}");
        }
        assert_eq!(Error::from_io(&std::io::Error::from_raw_os_error(libc::EBADF)), Error::BadF);
        assert_eq!(Error::from_io(&std::io::Error::from_raw_os_error(libc::ENOSPC)), Error::Io);
        assert_eq!(Error::from_io(&std::io::Error::from_raw_os_error(libc::ETIMEDOUT)), Error::TimedOut);
        for e in Error::ALL {
            assert_eq!(Error::from_code(e.code()), Some(*e));
            assert!(e.name().starts_with("COT_E"));
            assert_eq!(e.c_name().to_str(), Ok(e.name()));
            assert_eq!(e.c_message().to_str(), Ok(e.message()));
        }
        assert_eq!(Error::from_code(0), None);
    }
}
