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

/// Resets an eventfd's counter; returns what it was (0 if it was 0).
pub(crate) fn eventfd_drain(fd: &Fd) -> u64 {
    let mut n: u64 = 0;
    // SAFETY: reads at most 8 bytes into a valid u64; a non-blocking read of a
    // zero counter fails with EAGAIN and leaves `n` at 0, which is the answer.
    let r = unsafe { libc::read(fd.raw(), (&mut n as *mut u64).cast(), 8) };
    if r == 8 { n } else { 0 }
}

/// Blocks (`block`) or unblocks `signum` in the calling thread; returns
/// whether it was blocked before.
pub(crate) fn block_signal(signum: i32, block: bool) -> io::Result<bool> {
    // SAFETY: the sigset_t values are initialised by sigemptyset before use and
    // live across the calls; pthread_sigmask only reads `set` and writes `old`.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        if libc::sigaddset(&mut set, signum) != 0 {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let how = if block { libc::SIG_BLOCK } else { libc::SIG_UNBLOCK };
        let r = libc::pthread_sigmask(how, &set, &mut old);
        if r != 0 {
            return Err(io::Error::from_raw_os_error(r));
        }
        Ok(libc::sigismember(&old, signum) == 1)
    }
}

/// Creates (`fd` None) or updates a non-blocking signalfd for `signals`.
pub(crate) fn signalfd(fd: Option<&Fd>, signals: &[i32]) -> io::Result<Option<Fd>> {
    // SAFETY: `set` is initialised by sigemptyset; signalfd only reads it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for &s in signals {
            libc::sigaddset(&mut set, s);
        }
        let raw = fd.map_or(-1, Fd::raw);
        let r = check(libc::signalfd(raw, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC))?;
        Ok(if fd.is_some() { None } else { Some(Fd(r)) })
    }
}

/// The next signal number queued on a signalfd, if any.
pub(crate) fn signalfd_read(fd: &Fd) -> Option<i32> {
    // SAFETY: reads at most one signalfd_siginfo into a zeroed value of that type.
    unsafe {
        let mut info: libc::signalfd_siginfo = std::mem::zeroed();
        let n = libc::read(
            fd.raw(),
            (&mut info as *mut libc::signalfd_siginfo).cast(),
            std::mem::size_of::<libc::signalfd_siginfo>(),
        );
        (n == std::mem::size_of::<libc::signalfd_siginfo>() as isize).then_some(info.ssi_signo as i32)
    }
}

/// A pidfd for process `pid`: readable once it exits.
pub(crate) fn pidfd_open(pid: i32) -> io::Result<Fd> {
    // SAFETY: a raw syscall with integer arguments; the result is checked.
    let r = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    check(r as libc::c_int).map(Fd)
}

/// Is `pid` a child of this process, not reaped yet? (`waitid` with
/// `WNOWAIT` and `WNOHANG`: it neither waits nor reaps.)
pub(crate) fn is_child(pid: i32) -> io::Result<bool> {
    // SAFETY: `info` is a zeroed `siginfo_t` that waitid may fill; the other
    // arguments are integers.
    let r = unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT)
    };
    match check(r) {
        Ok(_) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::ECHILD) => Ok(false),
        Err(e) => Err(e),
    }
}

/// How a child ended: its exit status, or the signal that ended it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Exit {
    /// The exit status (0 when killed by a signal).
    pub status: i32,
    /// The signal that ended it (0 when it exited).
    pub signal: i32,
}

/// Reaps child `pid` if it ended (`waitpid` with `WNOHANG`).
pub(crate) fn reap(pid: i32) -> io::Result<Option<Exit>> {
    let mut st: libc::c_int = 0;
    // SAFETY: `st` is a valid int to write the status into.
    let r = check(unsafe { libc::waitpid(pid, &mut st, libc::WNOHANG) })?;
    if r == 0 {
        return Ok(None);
    }
    Ok(Some(if libc::WIFSIGNALED(st) {
        Exit { status: 0, signal: libc::WTERMSIG(st) }
    } else {
        Exit { status: libc::WEXITSTATUS(st), signal: 0 }
    }))
}
