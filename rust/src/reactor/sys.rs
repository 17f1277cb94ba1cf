//! The system calls of the reactor: epoll, eventfd, and closing descriptors.
//! This file holds the reactor's only unsafe code; each call checks its result
//! and turns failures into `io::Error`.

use std::io;
use std::os::fd::RawFd;

/// An owned file descriptor, closed on drop.
#[derive(Debug)]
pub(crate) struct Fd(RawFd);

impl Fd {
    pub fn raw(&self) -> RawFd {
        self.0
    }
}

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: `self.0` is a descriptor this value owns, closed only here.
        unsafe { libc::close(self.0) };
    }
}

fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 { Err(io::Error::last_os_error()) } else { Ok(r) }
}

/// A new epoll instance (close-on-exec).
pub(crate) fn epoll_create() -> io::Result<Fd> {
    // SAFETY: no pointer arguments; the result is checked.
    check(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) }).map(Fd)
}

/// Adds, modifies (`op`) or deletes `fd` in the epoll set, with `token` as the
/// event's data.
pub(crate) fn epoll_ctl(epoll: &Fd, op: libc::c_int, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
    let mut ev = libc::epoll_event { events, u64: token };
    // SAFETY: `ev` is a valid epoll_event for the duration of the call.
    check(unsafe { libc::epoll_ctl(epoll.raw(), op, fd, &mut ev) }).map(drop)
}

/// Waits up to `timeout_ms` (-1: forever) for events; fills `events` and
/// returns how many came. An interrupted wait (EINTR) returns 0.
pub(crate) fn epoll_wait(epoll: &Fd, events: &mut [libc::epoll_event], timeout_ms: i32) -> io::Result<usize> {
    let max = events.len().min(i32::MAX as usize) as libc::c_int;
    // SAFETY: `events` is valid for writing `max` entries.
    let r = unsafe { libc::epoll_wait(epoll.raw(), events.as_mut_ptr(), max, timeout_ms) };
    match check(r) {
        Ok(n) => Ok(n as usize),
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(0),
        Err(e) => Err(e),
    }
}

/// A new non-blocking, close-on-exec eventfd.
pub(crate) fn eventfd() -> io::Result<Fd> {
    // SAFETY: no pointer arguments; the result is checked.
    check(unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) }).map(Fd)
}

/// Adds one to an eventfd's counter (wakes its poller). Safe from any thread.
pub(crate) fn eventfd_signal(fd: RawFd) {
    let one: u64 = 1;
    // SAFETY: writes 8 bytes from a valid u64. A full counter (EAGAIN) already
    // wakes the poller, so the result can be ignored.
    unsafe { libc::write(fd, (&one as *const u64).cast(), 8) };
}

/// Resets an eventfd's counter.
pub(crate) fn eventfd_drain(fd: &Fd) {
    let mut n: u64 = 0;
    // SAFETY: reads at most 8 bytes into a valid u64; a non-blocking read of a
    // zero counter fails with EAGAIN, which is fine.
    unsafe { libc::read(fd.raw(), (&mut n as *mut u64).cast(), 8) };
}
