//! What an accept that waits does when `accept(2)` fails: one rule for
//! every face (`ops.rs` for [`Socket::accept`](super::Socket::accept), the
//! Lua face's `server:accept`).
//!
//! Out of descriptors, the listener's queue stays readable: an accept that
//! went back to waiting for readiness would wake at once, fail again, and
//! spin; one that failed would end a server whose acceptor treats an error
//! as fatal. So it waits instead, without watching the listener: it tries
//! again every [`ACCEPT_RETRY_NS`] until a descriptor is free or its
//! deadline passes (then it fails with a timeout, as when nobody connects).
//! The connections wait in the kernel's queue meanwhile; none is dropped.

use std::ffi::c_int;

/// How long an accept out of descriptors waits before it tries again.
pub const ACCEPT_RETRY_NS: u64 = 100_000_000;

/// What an accept does after `accept(2)` failed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum AcceptError {
    /// Nothing queued (`EAGAIN`): wait for the listener's readiness.
    Wait,
    /// Out of descriptors (`EMFILE`, `ENFILE`) or of kernel memory
    /// (`ENOBUFS`, `ENOMEM`): stop watching the listener and try again after
    /// [`ACCEPT_RETRY_NS`].
    Retry,
    /// Anything else ends the accept with the error.
    Fail,
}

/// The rule for an `accept(2)` that failed with `errno` (`net::sys::accept`
/// already took the next connection after `EINTR` and `ECONNABORTED`).
pub fn accept_error(errno: c_int) -> AcceptError {
    match errno {
        libc::EAGAIN => AcceptError::Wait,
        libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM => AcceptError::Retry,
        _ => AcceptError::Fail,
    }
}

/// The time an accept that must retry waits: until its next try, or until
/// its deadline if that comes first (`now` and `deadline` on one clock).
pub fn retry_wait(now: u64, deadline: Option<u64>) -> u64 {
    let left = deadline.map_or(u64::MAX, |d| d.saturating_sub(now));
    left.min(ACCEPT_RETRY_NS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_errno_has_its_rule() {
        assert_eq!(accept_error(libc::EAGAIN), AcceptError::Wait);
        for e in [libc::EMFILE, libc::ENFILE, libc::ENOBUFS, libc::ENOMEM] {
            assert_eq!(accept_error(e), AcceptError::Retry, "errno {e}");
        }
        for e in [libc::EBADF, libc::EINVAL, libc::ENOTSOCK, libc::EOPNOTSUPP] {
            assert_eq!(accept_error(e), AcceptError::Fail, "errno {e}");
        }
    }

    #[test]
    fn a_retry_waits_at_most_until_the_deadline() {
        assert_eq!(retry_wait(5, None), ACCEPT_RETRY_NS);
        assert_eq!(retry_wait(5, Some(5 + 2 * ACCEPT_RETRY_NS)), ACCEPT_RETRY_NS);
        assert_eq!(retry_wait(5, Some(15)), 10);
        assert_eq!(retry_wait(5, Some(3)), 0, "a deadline passed: no wait");
    }
}
