//! A socket's descriptor and read buffer, and one non-blocking try of each
//! operation over them: each try either ends the operation or says it must
//! wait for readiness. No loop here; `ops` decides when to try.

use std::os::fd::RawFd;

use super::Fail;
use super::accept::{AcceptError, accept_error};
use super::pattern::Pattern;
use super::sys::{self, Addr};
use crate::util::buffer::Buffer;

/// Bytes asked of `recv` at a time.
const CHUNK: usize = 64 * 1024;

/// What one try of an operation gives, when it did not fail.
pub(super) enum Step<T> {
    /// It ended with this value.
    Done(T),
    /// The descriptor would block: wait for readiness.
    Wait,
    /// Out of descriptors (an accept): try again later, without watching
    /// for readiness ([`accept_error`]).
    Retry,
}

/// A try: `Err` ends the operation with that failure.
pub(super) type Try<T> = Result<Step<T>, Fail>;

/// A try's result, or `None` to wait (or retry).
pub(super) fn settle<T>(t: Try<T>) -> Option<Result<T, Fail>> {
    match t {
        Ok(Step::Wait | Step::Retry) => None,
        Ok(Step::Done(v)) => Some(Ok(v)),
        Err(f) => Some(Err(f)),
    }
}

/// The descriptor (owned; `-1` once closed) and the read buffer.
#[derive(Debug)]
pub(super) struct SocketIo {
    pub fd: RawFd,
    pub buf: Buffer,
    /// The last `recv` came back short: the socket is most likely empty, so
    /// a read that needs more waits for readiness before it tries again (as
    /// libuv reads only on readiness). Cleared when readiness is seen.
    pub drained: bool,
}

impl SocketIo {
    pub fn new(fd: RawFd) -> SocketIo {
        SocketIo { fd, buf: Buffer::default(), drained: false }
    }

    fn fd(&self) -> Result<RawFd, Fail> {
        if self.fd < 0 { Err(Fail::Closed) } else { Ok(self.fd) }
    }

    /// Closes the descriptor (the buffer stays readable).
    pub fn close(&mut self) {
        if self.fd >= 0 {
            sys::close(std::mem::replace(&mut self.fd, -1));
        }
    }

    /// Gives up the descriptor without closing it: the caller owns it now.
    pub fn release(&mut self) -> RawFd {
        std::mem::replace(&mut self.fd, -1)
    }

    /// Reads until `p` matches, the stream ends, or the socket is (most
    /// likely) empty.
    pub fn read(&mut self, p: Pattern) -> Try<Vec<u8>> {
        if p == Pattern::Ready {
            return self.ready();
        }
        loop {
            if let Some(m) = p.take(&mut self.buf) {
                return Ok(Step::Done(m));
            }
            let fd = self.fd()?;
            if self.drained {
                return Ok(Step::Wait);
            }
            match sys::recv(fd, &mut self.buf.buf, CHUNK) {
                Ok(0) => return p.take_at_end(&mut self.buf).map(Step::Done).ok_or(Fail::Eof),
                Ok(n) => self.drained = n < CHUNK,
                Err(libc::EAGAIN) => {
                    self.drained = true;
                    return Ok(Step::Wait);
                }
                Err(e) => return Err(Fail::Sys(e)),
            }
        }
    }

    /// Would a read end now (`Pattern::Ready`)? The buffer answers, or a
    /// peek at the socket, which moves nothing: bytes or the end of the
    /// stream end it; an error ends it failed (the peek took the error).
    fn ready(&mut self) -> Try<Vec<u8>> {
        if !self.buf.unread().is_empty() {
            return Ok(Step::Done(Vec::new()));
        }
        let fd = self.fd()?;
        if self.drained {
            return Ok(Step::Wait);
        }
        match sys::peek(fd) {
            Ok(_) => Ok(Step::Done(Vec::new())),
            Err(libc::EAGAIN) => {
                self.drained = true;
                Ok(Step::Wait)
            }
            Err(e) => Err(Fail::Sys(e)),
        }
    }

    /// Reads at most `out.len()` bytes into `out` now, without allocating:
    /// from the buffer if it holds any, else straight from the socket. `0`
    /// at the end of the stream; `Wait` if the socket is empty.
    pub fn read_into(&mut self, out: &mut [u8]) -> Try<usize> {
        let have = self.buf.unread();
        if !have.is_empty() {
            let n = have.len().min(out.len());
            out[..n].copy_from_slice(&have[..n]);
            self.buf.consume(n);
            return Ok(Step::Done(n));
        }
        match sys::recv_into(self.fd()?, out) {
            Ok(n) => {
                self.drained = n < out.len();
                Ok(Step::Done(n))
            }
            Err(libc::EAGAIN) => {
                self.drained = true;
                Ok(Step::Wait)
            }
            Err(e) => Err(Fail::Sys(e)),
        }
    }

    /// Sends `data[*sent..]`, counting what went in `sent`, until all went or
    /// the socket would block.
    pub fn write(&mut self, data: &[u8], sent: &mut usize) -> Try<()> {
        while *sent < data.len() {
            let fd = self.fd()?;
            match sys::send(fd, &data[*sent..]) {
                Ok(n) => *sent += n,
                Err(libc::EAGAIN) => return Ok(Step::Wait),
                Err(e) => return Err(Fail::Sys(e)),
            }
        }
        Ok(Step::Done(()))
    }

    /// Accepts one connection: its descriptor.
    pub fn accept(&mut self) -> Try<RawFd> {
        let fd = self.fd()?;
        match sys::accept(fd) {
            Ok(c) => Ok(Step::Done(c)),
            Err(e) => match accept_error(e) {
                AcceptError::Wait => Ok(Step::Wait),
                AcceptError::Retry => Ok(Step::Retry),
                AcceptError::Fail => Err(Fail::Sys(e)),
            },
        }
    }

    /// Whether a connection in progress has ended: the pending error says it
    /// failed, a peer address says it is made (`SO_ERROR` alone is also 0
    /// while it goes on).
    pub fn connected(&mut self) -> Try<()> {
        let fd = self.fd()?;
        match sys::socket_error(fd) {
            0 => {}
            e => return Err(Fail::Sys(e)),
        }
        match sys::name(fd, true) {
            Ok(_) => Ok(Step::Done(())),
            Err(libc::ENOTCONN) => Ok(Step::Wait),
            Err(e) => Err(Fail::Sys(e)),
        }
    }

    /// Receives one datagram of at most `max` bytes, and its sender.
    pub fn recvfrom(&mut self, max: usize) -> Try<(Vec<u8>, Addr)> {
        let fd = self.fd()?;
        let mut data = Vec::new();
        match sys::recvfrom(fd, &mut data, max) {
            Ok(a) => Ok(Step::Done((data, a))),
            Err(libc::EAGAIN) => Ok(Step::Wait),
            Err(e) => Err(Fail::Sys(e)),
        }
    }

    /// Receives one datagram straight into `out` (cut to its length), and
    /// its sender, without allocating.
    pub fn recvfrom_into(&mut self, out: &mut [u8]) -> Try<(usize, Addr)> {
        match sys::recvfrom_into(self.fd()?, out) {
            Ok(r) => Ok(Step::Done(r)),
            Err(libc::EAGAIN) => Ok(Step::Wait),
            Err(e) => Err(Fail::Sys(e)),
        }
    }

    /// Sends one datagram to `to` (None: the connected peer), whole.
    pub fn sendto(&mut self, data: &[u8], to: Option<&Addr>) -> Try<usize> {
        let fd = self.fd()?;
        match sys::sendto(fd, data, to) {
            Ok(n) => Ok(Step::Done(n)),
            Err(libc::EAGAIN) => Ok(Step::Wait),
            Err(e) => Err(Fail::Sys(e)),
        }
    }
}

impl Drop for SocketIo {
    fn drop(&mut self) {
        self.close();
    }
}
