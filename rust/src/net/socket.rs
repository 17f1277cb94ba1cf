//! `Socket`: one TCP or UDP socket, what a face holds. Its calls that do not
//! wait try once, now (`try_*`); its operations wait on a loop and end
//! through their completion (see the [module documentation](super)).

use std::cell::RefCell;
use std::ffi::c_int;
use std::os::fd::RawFd;
use std::rc::Rc;

use super::io::{SocketIo, settle};
use super::ops::{self, Cell, Done, Op, Shared, WriteDone};
use super::pattern::Pattern;
use super::sys::{self, Addr, SysResult};
use super::write_buf::WriteBuf;
use super::{Dir, Fail};
use crate::error::Error;
use crate::reactor::Loop;

/// A socket taken out of its loop by [`Socket::export`]: the open
/// descriptor and the bytes read from it and not taken yet. `Send`: hand it
/// to another thread, whose loop imports it ([`Socket::import`]). Dropped,
/// it closes the descriptor.
#[derive(Debug)]
pub struct Exported {
    fd: RawFd,
    unread: Vec<u8>,
}

impl Exported {
    /// The descriptor (open, non-blocking), to look at; the `Exported` keeps
    /// it.
    pub fn fd(&self) -> RawFd {
        self.fd
    }

    /// The bytes the socket had read and not handed out: its next reads give
    /// them first.
    pub fn buffered(&self) -> &[u8] {
        &self.unread
    }

    /// The descriptor and the bytes, now the caller's.
    fn into_parts(mut self) -> (RawFd, Vec<u8>) {
        (std::mem::replace(&mut self.fd, -1), std::mem::take(&mut self.unread))
    }
}

impl Drop for Exported {
    fn drop(&mut self) {
        if self.fd >= 0 {
            sys::close(self.fd);
        }
    }
}

/// A socket: its descriptor (owned: closed by `close`, or when the last
/// handle and operation are gone), its read buffer, and its operations on
/// at most one loop. Handles are cheap clones of one socket; single-threaded.
#[derive(Clone)]
pub struct Socket(Cell);

impl std::fmt::Debug for Socket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.0.borrow();
        f.debug_struct("Socket").field("fd", &s.io.fd).field("buffered", &s.io.buf.unread().len()).finish()
    }
}

impl Socket {
    /// A new non-blocking, close-on-exec socket of `family` (`AF_INET`,
    /// `AF_INET6`) and `socktype` (`SOCK_STREAM`, `SOCK_DGRAM`).
    pub fn new(family: c_int, socktype: c_int) -> SysResult<Socket> {
        sys::socket(family, socktype).map(Socket::from_fd)
    }

    /// Takes ownership of `fd`, which the caller made non-blocking. No
    /// system call.
    pub fn from_fd(fd: RawFd) -> Socket {
        Socket(Rc::new(RefCell::new(Shared::new(SocketIo::new(fd)))))
    }

    /// The descriptor, or -1 once closed.
    pub fn fd(&self) -> RawFd {
        self.0.borrow().io.fd
    }

    /// Is it the same socket as `other`?
    pub fn same(&self, other: &Socket) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }

    fn with_fd<T>(&self, f: impl FnOnce(RawFd) -> SysResult<T>) -> SysResult<T> {
        match self.fd() {
            -1 => Err(libc::EBADF),
            fd => f(fd),
        }
    }

    /// Binds it to `addr`.
    pub fn bind(&self, addr: &Addr) -> SysResult<()> {
        self.with_fd(|fd| sys::bind(fd, addr))
    }

    /// Makes it listen, with a queue of `backlog` connections.
    pub fn listen(&self, backlog: c_int) -> SysResult<()> {
        self.with_fd(|fd| sys::listen(fd, backlog))
    }

    /// Its local address.
    pub fn local_addr(&self) -> SysResult<Addr> {
        self.with_fd(|fd| sys::name(fd, false))
    }

    /// Its peer's address.
    pub fn peer_addr(&self) -> SysResult<Addr> {
        self.with_fd(|fd| sys::name(fd, true))
    }

    /// Starts connecting to `addr`: true if connected at once, false if the
    /// connection goes on (then `connect` waits for it).
    pub fn connect_start(&self, addr: &Addr) -> Result<bool, Fail> {
        match self.with_fd(|fd| sys::connect(fd, addr)) {
            Ok(()) => Ok(true),
            Err(libc::EINPROGRESS) => Ok(false),
            Err(libc::EBADF) if self.fd() < 0 => Err(Fail::Closed),
            Err(e) => Err(Fail::Sys(e)),
        }
    }

    /// How many bytes were read and not taken yet.
    pub fn buffered(&self) -> usize {
        self.0.borrow().io.buf.unread().len()
    }

    /// Would a read now most likely find nothing? True when the last `recv`
    /// found the socket empty or came back short, no readiness was seen
    /// since, and nothing is buffered. Reading again would cost a system
    /// call for nothing; a face that may wait can start `read` at once (it
    /// waits for readiness) instead of `try_read`.
    pub fn drained(&self) -> bool {
        let s = self.0.borrow();
        s.io.drained && s.io.buf.unread().is_empty()
    }

    /// Takes every unread byte, as LuaSocket hands out the partial result of
    /// a failed read (for `Pattern::Line`, without CRs).
    pub fn take_partial(&self, p: Pattern) -> Vec<u8> {
        p.take_partial(&mut self.0.borrow_mut().io.buf)
    }

    /// Reads what `p` asks, now: `None` if it must wait. Reads the socket at
    /// least once, unless the buffer answers.
    pub fn try_read(&self, p: Pattern) -> Option<Result<Vec<u8>, Fail>> {
        let mut s = self.0.borrow_mut();
        s.io.drained = false;
        settle(s.io.read(p))
    }

    /// Reads at most `out.len()` bytes into `out` now, without allocating
    /// (the buffer first, else the socket straight into `out`): the count,
    /// 0 at the end of the stream; `None` if nothing is there.
    pub fn try_read_into(&self, out: &mut [u8]) -> Option<Result<usize, Fail>> {
        settle(self.0.borrow_mut().io.read_into(out))
    }

    /// Sends what it can of `data` now: the bytes sent (fewer than all: it
    /// would block). A failure after some bytes went shows at the next call.
    pub fn try_write(&self, data: &[u8]) -> Result<usize, Fail> {
        let mut sent = 0;
        match self.0.borrow_mut().io.write(data, &mut sent) {
            Err(f) if sent == 0 => Err(f),
            _ => Ok(sent),
        }
    }

    /// Accepts a connection now: `None` if none is queued, or if no
    /// descriptor is free (`accept` then waits, trying again on a timer).
    pub fn try_accept(&self) -> Option<Result<Socket, Fail>> {
        settle(self.0.borrow_mut().io.accept()).map(|r| r.map(Socket::from_fd))
    }

    /// Receives a datagram of at most `max` bytes now, and its sender:
    /// `None` if none is queued.
    pub fn try_recvfrom(&self, max: usize) -> Option<Result<(Vec<u8>, Addr), Fail>> {
        settle(self.0.borrow_mut().io.recvfrom(max))
    }

    /// Receives a datagram straight into `out` now (cut to its length): its
    /// length and sender; `None` if none is queued.
    pub fn try_recvfrom_into(&self, out: &mut [u8]) -> Option<Result<(usize, Addr), Fail>> {
        settle(self.0.borrow_mut().io.recvfrom_into(out))
    }

    /// Sends one datagram to `to` (None: the connected peer). Datagrams are
    /// not split: it went whole, or fails (`Sys(EAGAIN)`: the send buffer is
    /// full).
    pub fn try_sendto(&self, data: &[u8], to: Option<&Addr>) -> Result<usize, Fail> {
        match self.fd() {
            -1 => Err(Fail::Closed),
            fd => sys::sendto(fd, data, to).map_err(Fail::Sys),
        }
    }

    /// Reads what `p` asks on `lp`, until `deadline` (on the loop's clock,
    /// `Loop::now`; `None`: no limit). On failure the bytes read stay
    /// buffered (`take_partial`). Fails to start (and never calls `done`)
    /// with `Error::BadF` if closed, `Busy` if a read, accept or recvfrom
    /// waits already, `Inval` if attached to another loop.
    pub fn read(&self, lp: &mut Loop, p: Pattern, deadline: Option<u64>, done: Done<Vec<u8>>) -> Result<(), Error> {
        ops::start(&self.0, lp, Op::Read(p, done), deadline)
    }

    /// Writes all of `data` (owned, or lent: [`WriteBuf`]) on `lp`, until
    /// `deadline`; `done` gets the bytes sent, all of them on success. Fails
    /// to start as `read` does (`Busy`: a write or connect waits).
    pub fn write(
        &self,
        lp: &mut Loop,
        data: impl Into<WriteBuf>,
        deadline: Option<u64>,
        done: WriteDone,
    ) -> Result<(), Error> {
        ops::start(&self.0, lp, Op::Write(data.into(), 0, done), deadline)
    }

    /// Accepts a connection on `lp`, until `deadline`. Out of descriptors
    /// it neither fails nor spins: it stops watching the listener and tries
    /// again every `ACCEPT_RETRY_NS` (`net/accept.rs`). Fails to start as
    /// `read` does.
    pub fn accept(&self, lp: &mut Loop, deadline: Option<u64>, done: Done<Socket>) -> Result<(), Error> {
        let done: Done<RawFd> = Box::new(move |lp, r| done(lp, r.map(Socket::from_fd)));
        ops::start(&self.0, lp, Op::Accept(done), deadline)
    }

    /// Waits on `lp`, until `deadline`, for the connection `connect_start`
    /// began to be made or to fail. Fails to start as `write` does.
    pub fn connect(&self, lp: &mut Loop, deadline: Option<u64>, done: Done<()>) -> Result<(), Error> {
        ops::start(&self.0, lp, Op::Connect(done), deadline)
    }

    /// Receives a datagram of at most `max` bytes on `lp`, until `deadline`.
    /// Fails to start as `read` does.
    pub fn recvfrom(
        &self,
        lp: &mut Loop,
        max: usize,
        deadline: Option<u64>,
        done: Done<(Vec<u8>, Addr)>,
    ) -> Result<(), Error> {
        ops::start(&self.0, lp, Op::RecvFrom(max, done), deadline)
    }

    /// Sends one datagram to `to` (None: the connected peer) on `lp`, until
    /// `deadline`: at once if the send buffer has room, else when it has.
    /// `done` gets the bytes sent (all of them). Fails to start as `write`
    /// does.
    pub fn sendto(
        &self,
        lp: &mut Loop,
        data: Vec<u8>,
        to: Option<Addr>,
        deadline: Option<u64>,
        done: Done<usize>,
    ) -> Result<(), Error> {
        ops::start(&self.0, lp, Op::SendTo(data, to.map(Box::new), done), deadline)
    }

    /// Is an operation of `dir` waiting?
    pub fn waiting(&self, dir: Dir) -> bool {
        self.0.borrow().waiting(dir)
    }

    /// Cancels the operation of `dir`: its completion gets `Fail::Cancelled`
    /// at the loop's next turn, never inside this call. False if none waits
    /// (or it is cancelled already); `Error::Inval` for another loop.
    pub fn cancel(&self, lp: &mut Loop, dir: Dir) -> Result<bool, Error> {
        ops::cancel(&self.0, lp, dir)
    }

    /// Leaves `lp`: the waiting operations end with `Fail::Closed` (or
    /// `Cancelled`, if they were) at the loop's next turn. The socket stays
    /// open and may wait on another loop then. `Error::Inval` if it is
    /// attached to another loop; nothing if to none.
    pub fn detach(&self, lp: &mut Loop) -> Result<(), Error> {
        ops::detach(&self.0, lp)
    }

    /// Forgets the loop it was attached to, once that loop was dropped
    /// without detaching it (a face tearing down in any order): the
    /// operations that waited are dropped without their completions, since
    /// no loop is left to run them. Then `close(None)` works. Called while
    /// the loop lives, the loop keeps the socket's handles, now idle.
    pub fn forget_loop(&self) {
        ops::forget_loop(&self.0)
    }

    /// Detaches it (from `lp`, which must be its loop if it has one), then
    /// closes the descriptor. The read buffer stays readable. Closing twice
    /// is fine.
    pub fn close(&self, lp: Option<&mut Loop>) -> Result<(), Error> {
        self.leave(lp)?;
        self.0.borrow_mut().io.close();
        Ok(())
    }

    /// Gives the descriptor back, open: detached from `lp` as `close` does
    /// (out of its epoll at once), then forgotten, so no handle of the
    /// socket closes it. Refused, changing nothing: `Error::BadF` once
    /// closed or released; `Busy` while an operation waits (its completion
    /// would run on a descriptor no longer the socket's) or while read bytes
    /// wait in the buffer (they would be lost: take them first).
    pub fn release(&self, lp: Option<&mut Loop>) -> Result<RawFd, Error> {
        if !self.0.borrow().io.buf.unread().is_empty() && self.fd() >= 0 {
            return Err(Error::Busy);
        }
        self.give_up(lp)
    }

    /// Takes the socket out, to go on on another loop or thread: the open
    /// descriptor and the bytes read and not taken yet, in an [`Exported`]
    /// that [`Socket::import`] makes a socket again. Detached from `lp` as
    /// `release` does; this handle (and its clones) is closed after. Refused
    /// as `release` is, changing nothing (`BadF`, `Busy` while an operation
    /// waits), except that buffered bytes go along instead of refusing it.
    pub fn export(&self, lp: Option<&mut Loop>) -> Result<Exported, Error> {
        let fd = self.give_up(lp)?;
        let buf = std::mem::take(&mut self.0.borrow_mut().io.buf);
        let mut unread = buf.buf;
        unread.drain(..buf.first);
        Ok(Exported { fd, unread })
    }

    /// A socket again, from what `export` took: its first reads give the
    /// bytes that were buffered, then what the descriptor has. No system
    /// call; it waits on whichever loop its first operation names.
    pub fn import(ex: Exported) -> Socket {
        let (fd, unread) = ex.into_parts();
        let s = Socket::from_fd(fd);
        s.0.borrow_mut().io.buf.buf = unread;
        s
    }

    /// What `release` and `export` share: refused (`BadF`, `Busy`) while
    /// closed or while an operation waits; else detached from `lp` and the
    /// descriptor handed over, no handle closing it any more.
    fn give_up(&self, lp: Option<&mut Loop>) -> Result<RawFd, Error> {
        {
            let s = self.0.borrow();
            if s.io.fd < 0 {
                return Err(Error::BadF);
            }
            if s.waiting(Dir::Read) || s.waiting(Dir::Write) {
                return Err(Error::Busy);
            }
        }
        self.leave(lp)?;
        Ok(self.0.borrow_mut().io.release())
    }

    /// Detaches it from `lp`; without a loop, `Error::Inval` if attached.
    fn leave(&self, lp: Option<&mut Loop>) -> Result<(), Error> {
        match lp {
            Some(lp) => self.detach(lp),
            None if self.0.borrow().attached() => Err(Error::Inval),
            None => Ok(()),
        }
    }
}
