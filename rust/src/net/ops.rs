//! The operations of a socket on an event loop: their state, the loop's
//! callbacks that drive them, cancel and detach. The states and the rules
//! are in the [module documentation](super); `Socket` is the public face.
//!
//! A socket attached to a loop has one poll handle there (epoll takes one
//! registration per descriptor) and one timer per direction, made when first
//! needed and kept: a socket that waits again and again allocates nothing
//! and, while the directions it watches stay the same, makes no epoll call.
//! The loop's callbacks hold the socket weakly; an operation holds it
//! strongly (`Pending::keep`), so a socket lives until its operations ended.

use std::cell::RefCell;
use std::os::fd::RawFd;
use std::rc::{Rc, Weak};

use super::accept::retry_wait;
use super::io::{SocketIo, Step, settle};
use super::pattern::Pattern;
use super::sys::Addr;
use super::write_buf::WriteBuf;
use super::{Dir, Fail};
use crate::error::Error;
use crate::reactor::{Handle, Loop, READABLE, WRITABLE};

/// A completion: called once, with the operation's result.
pub type Done<T> = Box<dyn FnOnce(&mut Loop, Result<T, Fail>)>;
/// A write's completion: the bytes sent (all of them on success), and how
/// it ended.
pub type WriteDone = Box<dyn FnOnce(&mut Loop, usize, Result<(), Fail>)>;

/// Tags of the callbacks made once per handle (`poll_start_with`,
/// `timer_start_with`): each handle here belongs to one socket and direction.
const TAG: usize = 1;

/// A socket's state, shared by its `Socket` handles and its operations.
pub(super) struct Shared {
    pub io: SocketIo,
    on: Option<OnLoop>,
    ops: [Option<Pending>; 2],
}

pub(super) type Cell = Rc<RefCell<Shared>>;

/// A socket's handles on the loop it is attached to.
struct OnLoop {
    /// The loop's epoll descriptor: it tells loops apart while both live.
    backend: RawFd,
    poll: Handle,
    /// The events the poll handle is started for (0: paused).
    events: u32,
    /// A timer per direction: deadlines, and endings due at once.
    timers: [Option<Handle>; 2],
}

/// Where a waiting operation is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    /// Waiting for readiness (and its deadline, if any).
    Polling,
    /// An accept out of descriptors: not watched; its timer tries again
    /// (`accept.rs`).
    Retrying,
    /// The read buffer answers it: its timer runs it at once.
    Due,
    /// `cancel`led: its timer ends it at once, with `Fail::Cancelled`.
    Cancelled,
}

struct Pending {
    op: Op,
    /// On the loop's clock (`Loop::now`).
    deadline: Option<u64>,
    phase: Phase,
    /// The operation keeps its socket alive until it ends.
    keep: Cell,
}

/// An operation and its completion.
pub(super) enum Op {
    Read(Pattern, Done<Vec<u8>>),
    /// The data, the bytes of it sent so far.
    Write(WriteBuf, usize, WriteDone),
    Accept(Done<RawFd>),
    Connect(Done<()>),
    /// The largest datagram taken.
    RecvFrom(usize, Done<(Vec<u8>, Addr)>),
    /// A datagram and where to (None: the connected peer); boxed, as the
    /// address is larger than the other operations.
    SendTo(Vec<u8>, Option<Box<Addr>>, Done<usize>),
}

/// An operation that ended: its completion and its result.
enum Ended {
    Read(Done<Vec<u8>>, Result<Vec<u8>, Fail>),
    Write(WriteDone, usize, Result<(), Fail>),
    Accept(Done<RawFd>, Result<RawFd, Fail>),
    Connect(Done<()>, Result<(), Fail>),
    RecvFrom(Done<(Vec<u8>, Addr)>, Result<(Vec<u8>, Addr), Fail>),
    SendTo(Done<usize>, Result<usize, Fail>),
}

impl Op {
    fn dir(&self) -> Dir {
        match self {
            Op::Read(..) | Op::Accept(_) | Op::RecvFrom(..) => Dir::Read,
            Op::Write(..) | Op::Connect(_) | Op::SendTo(..) => Dir::Write,
        }
    }

    /// Tries once more: how it ended, or the operation back to wait, and
    /// how (`Polling`, or `Retrying` for an accept out of descriptors).
    /// `seen`: epoll just said its direction is ready, which is all a
    /// `Pattern::Ready` read waits for (no system call then).
    fn step(self, io: &mut SocketIo, seen: bool) -> std::result::Result<Ended, (Op, Phase)> {
        let wait = |op| Err((op, Phase::Polling));
        match self {
            Op::Read(Pattern::Ready, done) if seen => Ok(Ended::Read(done, Ok(Vec::new()))),
            Op::Read(p, done) => match settle(io.read(p)) {
                Some(r) => Ok(Ended::Read(done, r)),
                None => wait(Op::Read(p, done)),
            },
            Op::Write(data, mut sent, done) => match settle(io.write(data.as_slice(), &mut sent)) {
                Some(r) => Ok(Ended::Write(done, sent, r)),
                None => wait(Op::Write(data, sent, done)),
            },
            Op::Accept(done) => match io.accept() {
                Ok(Step::Retry) => Err((Op::Accept(done), Phase::Retrying)),
                t => match settle(t) {
                    Some(r) => Ok(Ended::Accept(done, r)),
                    None => wait(Op::Accept(done)),
                },
            },
            Op::Connect(done) => match settle(io.connected()) {
                Some(r) => Ok(Ended::Connect(done, r)),
                None => wait(Op::Connect(done)),
            },
            Op::RecvFrom(max, done) => match settle(io.recvfrom(max)) {
                Some(r) => Ok(Ended::RecvFrom(done, r)),
                None => wait(Op::RecvFrom(max, done)),
            },
            Op::SendTo(data, to, done) => match settle(io.sendto(&data, to.as_deref())) {
                Some(r) => Ok(Ended::SendTo(done, r)),
                None => wait(Op::SendTo(data, to, done)),
            },
        }
    }

    /// Ends it with `f`.
    fn fail(self, f: Fail) -> Ended {
        match self {
            Op::Read(_, done) => Ended::Read(done, Err(f)),
            Op::Write(_, sent, done) => Ended::Write(done, sent, Err(f)),
            Op::Accept(done) => Ended::Accept(done, Err(f)),
            Op::Connect(done) => Ended::Connect(done, Err(f)),
            Op::RecvFrom(_, done) => Ended::RecvFrom(done, Err(f)),
            Op::SendTo(_, _, done) => Ended::SendTo(done, Err(f)),
        }
    }
}

impl Ended {
    /// Calls the completion. The only place one is called.
    fn deliver(self, lp: &mut Loop) {
        match self {
            Ended::Read(done, r) => done(lp, r),
            Ended::Write(done, sent, r) => done(lp, sent, r),
            Ended::Accept(done, r) => done(lp, r),
            Ended::Connect(done, r) => done(lp, r),
            Ended::RecvFrom(done, r) => done(lp, r),
            Ended::SendTo(done, r) => done(lp, r),
        }
    }
}

impl Dir {
    fn index(self) -> usize {
        self as usize
    }

    fn event(self) -> u32 {
        match self {
            Dir::Read => READABLE,
            Dir::Write => WRITABLE,
        }
    }
}

const DIRS: [Dir; 2] = [Dir::Read, Dir::Write];

impl Shared {
    pub fn new(io: SocketIo) -> Shared {
        Shared { io, on: None, ops: [None, None] }
    }

    /// Is an operation of `dir` waiting?
    pub fn waiting(&self, dir: Dir) -> bool {
        self.ops[dir.index()].is_some()
    }

    /// Is it attached to a loop?
    pub fn attached(&self) -> bool {
        self.on.is_some()
    }

    /// Is it attached to a loop other than `lp`?
    fn foreign(&self, lp: &Loop) -> bool {
        self.on.as_ref().is_some_and(|on| on.backend != lp.backend_fd())
    }

    /// The events the waiting operations need.
    fn wanted(&self) -> u32 {
        DIRS.iter()
            .filter(|d| self.ops[d.index()].as_ref().is_some_and(|p| p.phase == Phase::Polling))
            .fold(0, |e, d| e | d.event())
    }
}

/// Starts `op` on `lp`. `Error::BadF` if the socket is closed, `Busy` if an
/// operation of the same direction waits, `Inval` if the socket is attached
/// to another loop; or the poll handle's error. A start that fails drops
/// `op` without calling its completion.
pub(super) fn start(cell: &Cell, lp: &mut Loop, op: Op, deadline: Option<u64>) -> Result<(), Error> {
    let dir = op.dir();
    let due = {
        let mut s = cell.borrow_mut();
        let s = &mut *s;
        if s.io.fd < 0 {
            return Err(Error::BadF);
        }
        if s.waiting(dir) {
            return Err(Error::Busy);
        }
        if s.foreign(lp) {
            return Err(Error::Inval);
        }
        if s.on.is_none() {
            let poll = lp.poll_init(s.io.fd, 0)?;
            s.on = Some(OnLoop { backend: lp.backend_fd(), poll, events: 0, timers: [None, None] });
        }
        let due = matches!(&op, Op::Read(p, _) if p.matches(&mut s.io.buf));
        let phase = if due { Phase::Due } else { Phase::Polling };
        s.ops[dir.index()] = Some(Pending { op, deadline, phase, keep: cell.clone() });
        due
    };
    if let Err(e) = watch(cell, lp) {
        let p = cell.borrow_mut().ops[dir.index()].take();
        drop(p);
        return Err(e);
    }
    if due {
        arm(cell, lp, dir, Some(0));
    } else if let Some(d) = deadline {
        let left = d.saturating_sub(lp.now_fresh());
        arm(cell, lp, dir, Some(left));
    }
    Ok(())
}

/// Starts (`Some(timeout)`) or stops the timer of `dir`, making it if needed.
fn arm(cell: &Cell, lp: &mut Loop, dir: Dir, timeout: Option<u64>) {
    let mut s = cell.borrow_mut();
    let Some(on) = s.on.as_mut() else { return };
    let timer = match (on.timers[dir.index()], timeout) {
        (Some(t), _) => t,
        (None, None) => return,
        (None, Some(_)) => *on.timers[dir.index()].insert(lp.timer_init(0)),
    };
    drop(s);
    match timeout {
        // Neither can fail: the timer is this socket's, and open.
        Some(ns) => {
            let weak = Rc::downgrade(cell);
            let _ = lp.timer_start_with(timer, ns, 0, TAG, || Box::new(move |lp, _| on_timer(&weak, lp, dir)));
        }
        None => drop(lp.timer_stop(timer)),
    }
}

/// Starts, changes or pauses the poll handle for what the waiting
/// operations need.
fn watch(cell: &Cell, lp: &mut Loop) -> Result<(), Error> {
    let (poll, wanted) = {
        let s = cell.borrow();
        match s.on.as_ref() {
            Some(on) if on.events != s.wanted() => (on.poll, s.wanted()),
            _ => return Ok(()),
        }
    };
    if wanted == 0 {
        lp.poll_pause(poll)?;
    } else {
        let weak = Rc::downgrade(cell);
        lp.poll_start_with(poll, wanted, TAG, || Box::new(move |lp, _, ready| on_ready(&weak, lp, ready)))?;
    }
    if let Some(on) = cell.borrow_mut().on.as_mut() {
        on.events = wanted;
    }
    Ok(())
}

/// The operation of `dir` left the socket: its timer stops, the poll handle
/// narrows, then its completion runs.
fn finish(cell: &Cell, lp: &mut Loop, dir: Dir, ended: Ended, keep: Cell) {
    arm(cell, lp, dir, None);
    let _ = watch(cell, lp); // narrowing or pausing a started handle does not fail
    ended.deliver(lp);
    drop(keep);
}

/// The poll handle's callback: each ready direction's operation tries again.
fn on_ready(weak: &Weak<RefCell<Shared>>, lp: &mut Loop, ready: u32) {
    let Some(cell) = weak.upgrade() else { return };
    for dir in DIRS {
        if ready & dir.event() == 0 {
            continue;
        }
        let mut retrying = None;
        let ended = {
            let mut s = cell.borrow_mut();
            let s = &mut *s;
            match s.ops[dir.index()].take() {
                Some(p) if p.phase == Phase::Polling => {
                    if dir == Dir::Read {
                        s.io.drained = false;
                    }
                    match p.op.step(&mut s.io, true) {
                        Ok(ended) => Some((ended, p.keep)),
                        Err((op, phase)) => {
                            if phase == Phase::Retrying {
                                retrying = Some(p.deadline);
                            }
                            s.ops[dir.index()] = Some(Pending { op, phase, ..p });
                            None
                        }
                    }
                }
                other => {
                    s.ops[dir.index()] = other;
                    None
                }
            }
        };
        if let Some((ended, keep)) = ended {
            finish(&cell, lp, dir, ended, keep);
        }
        if let Some(deadline) = retrying {
            let wait = retry_wait(lp.now_fresh(), deadline);
            arm(&cell, lp, dir, Some(wait));
        }
    }
    let _ = watch(&cell, lp); // unwatches a direction gone `Retrying`
}

/// The timer of `dir`: a cancel, an operation the buffer answers, an accept
/// retrying, or the deadline. At the deadline the operation tries once more
/// first, so bytes that came in the same loop turn win over the timeout.
fn on_timer(weak: &Weak<RefCell<Shared>>, lp: &mut Loop, dir: Dir) {
    let Some(cell) = weak.upgrade() else { return };
    let ended = {
        let mut s = cell.borrow_mut();
        let s = &mut *s;
        let Some(p) = s.ops[dir.index()].take() else { return };
        if p.phase == Phase::Cancelled {
            Some((p.op.fail(Fail::Cancelled), p.keep))
        } else {
            if dir == Dir::Read {
                s.io.drained = false;
            }
            match p.op.step(&mut s.io, false) {
                Ok(ended) => Some((ended, p.keep)),
                Err((op, _)) if p.deadline.is_some_and(|d| lp.now() >= d) => Some((op.fail(Fail::Timeout), p.keep)),
                Err((op, phase)) => {
                    // Due, but another read took the bytes meanwhile; or an
                    // accept that retried: wait, or retry again.
                    s.ops[dir.index()] = Some(Pending { op, phase, ..p });
                    None
                }
            }
        }
    };
    match ended {
        Some((ended, keep)) => finish(&cell, lp, dir, ended, keep),
        None => {
            if let Err(e) = watch(&cell, lp) {
                let p = cell.borrow_mut().ops[dir.index()].take();
                if let Some(p) = p {
                    finish(&cell, lp, dir, p.op.fail(Fail::Sys(-e.code())), p.keep);
                }
                return;
            }
            let waiting = cell.borrow().ops[dir.index()].as_ref().map(|p| (p.phase, p.deadline));
            match waiting {
                Some((Phase::Retrying, deadline)) => {
                    let wait = retry_wait(lp.now_fresh(), deadline);
                    arm(&cell, lp, dir, Some(wait));
                }
                Some((_, Some(d))) => {
                    let left = d.saturating_sub(lp.now_fresh());
                    arm(&cell, lp, dir, Some(left));
                }
                _ => {}
            }
        }
    }
}

/// Cancels the operation of `dir`: it ends with `Fail::Cancelled` at the
/// next turn of the loop (its completion never runs inside this call). False
/// if none waits, or it was cancelled already.
pub(super) fn cancel(cell: &Cell, lp: &mut Loop, dir: Dir) -> Result<bool, Error> {
    {
        let mut s = cell.borrow_mut();
        if s.foreign(lp) {
            return Err(Error::Inval);
        }
        match s.ops[dir.index()].as_mut() {
            Some(p) if p.phase != Phase::Cancelled => p.phase = Phase::Cancelled,
            _ => return Ok(false),
        }
    }
    let _ = watch(cell, lp); // narrowing or pausing a started handle does not fail
    arm(cell, lp, dir, Some(0));
    Ok(true)
}

/// Detaches the socket from `lp`: its handles there close, and the
/// operations waiting end with `Fail::Closed` (`Fail::Cancelled` if they
/// were cancelled) from the poll handle's close callback, at the loop's
/// next turn. `Error::Inval` if it is attached to another loop.
pub(super) fn detach(cell: &Cell, lp: &mut Loop) -> Result<(), Error> {
    let (on, ops) = {
        let mut s = cell.borrow_mut();
        if s.foreign(lp) {
            return Err(Error::Inval);
        }
        let Some(on) = s.on.take() else { return Ok(()) };
        let ops: Vec<Pending> = s.ops.iter_mut().filter_map(Option::take).collect();
        (on, ops)
    };
    for t in on.timers.into_iter().flatten() {
        let _ = lp.close(t, None);
    }
    let closed = Box::new(move |lp: &mut Loop, _| {
        for p in ops {
            let why = if p.phase == Phase::Cancelled { Fail::Cancelled } else { Fail::Closed };
            p.op.fail(why).deliver(lp);
        }
    });
    // Cannot fail: the handle is this socket's, and open.
    let _ = lp.close(on.poll, Some(closed));
    Ok(())
}

/// Forgets the loop the socket was attached to, which was dropped: its
/// handles went with it, and the operations that waited are dropped without
/// their completions (no loop is left to run them).
pub(super) fn forget_loop(cell: &Cell) {
    let ops = {
        let mut s = cell.borrow_mut();
        s.on = None;
        std::mem::take(&mut s.ops)
    };
    drop(ops);
}
