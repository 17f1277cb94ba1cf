//! The stream object (`Stream`, its `Inner` shared with pool jobs), its
//! metamethods, and `StreamOp`: the engine operation of every stream method
//! that may wait, with the jobs it runs on a file (fill, write, seek). The
//! steps of the methods are in `read` and `write`; each hands its step to
//! `StreamOp::new`.

use std::cell::RefCell;
use std::ffi::{CStr, c_int};
use std::os::fd::RawFd;
use std::sync::{Arc, Mutex, MutexGuard};

use cothread::os::fd;

use crate::cfn;
use crate::engine::{self, Frame, Job, Next, Operation, Payload, Source, SourceKind, Why};
use crate::lua::{Error, Lua, Ret, Udata};
use crate::reader::{Format, Reader};
use crate::sys;

// ===== objects =====

/// What a job may touch: the descriptor (closed on drop) and the buffer.
pub struct Inner {
    pub(super) fd: RawFd,
    pub(super) rd: Reader,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if self.fd >= 0 {
            sys::close(self.fd);
        }
    }
}

/// A stream (userdata `cothread.file`).
pub struct Stream {
    /// `None` once closed.
    pub(super) core: RefCell<Option<Arc<Mutex<Inner>>>>,
    pub(super) pipe: bool,
    /// The bytes of an answer, between the buffer and Lua.
    pub(super) out: RefCell<Vec<u8>>,
    /// Pipes: their side in the waiting engine.
    pub(super) src: Source,
}

// SAFETY: c"cothread.file" names only this type (no other `Udata`, no registry field).
unsafe impl Udata for Stream {
    const NAME: &'static CStr = c"cothread.file";
}

impl Drop for Stream {
    fn drop(&mut self) {
        self.close();
    }
}

impl Stream {
    pub(super) fn is_open(&self) -> bool {
        self.core.borrow().is_some()
    }

    /// The shared part, if open.
    pub(super) fn core(&self) -> Option<Arc<Mutex<Inner>>> {
        self.core.borrow().clone()
    }

    /// Closes the stream: the operations waiting on the pipe end with
    /// "closed"; the descriptor closes now, or when a job still running on
    /// it lets go of it.
    pub(super) fn close(&self) {
        // Before the descriptor its poll handle watches closes.
        self.src.detach();
        if let Some(core) = self.core.borrow_mut().take() {
            if let Ok(mut g) = core.try_lock() {
                if g.fd >= 0 {
                    sys::close(g.fd);
                    g.fd = -1;
                }
                g.rd = Reader::default();
            }
        }
        *self.out.borrow_mut() = Vec::new();
    }
}

pub(super) fn lock(m: &Mutex<Inner>) -> MutexGuard<'_, Inner> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// `[-0, +1, m]` Pushes a new stream over `fd` (which it owns from now on).
/// A pipe's descriptor must be non-blocking. (Should the allocation fail,
/// `fd` is closed before the memory error goes on.)
pub fn push_stream(lua: &Lua, fd: RawFd, pipe: bool) {
    let inner = Inner { fd, rd: Reader::default() };
    lua.new_udata(
        Stream {
            core: RefCell::new(Some(Arc::new(Mutex::new(inner)))),
            pipe,
            out: RefCell::new(Vec::new()),
            src: Source::new(SourceKind::Pipe),
        },
        0,
    );
}

/// Whether the value at `idx` is a stream, and if so whether it is open.
pub fn open_at(lua: &Lua, idx: c_int) -> Option<bool> {
    lua.test_udata::<Stream>(idx).map(Stream::is_open)
}

/// The stream at argument `arg`, if it is one and open.
pub(super) fn check_open(lua: &Lua, arg: c_int) -> Result<&Stream, Error> {
    let s = lua.udata::<Stream>(arg)?;
    if s.is_open() { Ok(s) } else { Err(Error::msg(c"attempt to use a closed file")) }
}

// ===== metamethods and simple methods =====

cfn!(pub(super) stream_close_meta = close_meta_body);

/// `__close`: closes the stream if open (never raises).
fn close_meta_body(lua: &mut Lua) -> Ret {
    if let Some(s) = lua.test_udata::<Stream>(1) {
        s.close();
    }
    Ok(0)
}

cfn!(pub(super) stream_close = close_body);

/// `f:close()`: closes the stream; a cothread waiting on a pipe gets
/// `nil, "closed"`. Returns true.
fn close_body(lua: &mut Lua) -> Ret {
    check_open(lua, 1)?.close();
    lua.push_bool(true);
    Ok(1)
}

cfn!(pub(super) stream_tostring = tostring_body);

fn tostring_body(lua: &mut Lua) -> Ret {
    if lua.udata::<Stream>(1)?.is_open() {
        lua.push_owned(format!("file ({:p})", lua.to_pointer(1)));
    } else {
        lua.push_bytes(b"file (closed)");
    }
    Ok(1)
}

cfn!(pub(super) stream_flush = flush_body);

/// `f:flush()`: writes are not buffered (each `write` hands its data to the
/// system before it returns), so there is nothing to flush. Returns `f`.
fn flush_body(lua: &mut Lua) -> Ret {
    check_open(lua, 1)?;
    lua.set_top(1);
    Ok(1)
}

// ===== the operation =====

/// What a job returns: a number (a position, a count) or an errno.
pub(super) type Res = Result<u64, i32>;

/// What a stream step is told.
#[derive(Clone, Copy)]
pub(super) enum In {
    Start,
    /// The pipe is ready (or was closed: the step finds out).
    Ready,
    /// The job ran, with this result.
    Job(Res),
    /// The wait ended without readiness: the step answers this message.
    Failed(&'static CStr),
}

/// What a stream step asks for.
pub(super) enum Out {
    Done(c_int),
    /// The job `spec` on the stream's `Inner` (a pool job for a file in a
    /// cothread; here for a pipe, or outside cothreads).
    Job(Spec),
    /// Readiness of the pipe.
    Wait,
}

/// A job on a stream, as plain data (made into a closure when handed over).
#[derive(Clone, Copy)]
pub(super) enum Spec {
    /// Fill the buffer until the format can be answered.
    Fill(Format),
    /// Write the frame's data (slot 2) from this offset.
    Write(usize),
    /// Seek: whence and offset.
    Seek(c_int, i64),
}

/// The step of one stream method: `read::step` (frame: 1 stream, 2 count k,
/// then the formats, then the answers so far), `write::write_step` (1 stream,
/// 2 data, 3 bytes written) or `write::seek_step` (1 stream, 2 whence, 3
/// offset).
pub(super) type Step = fn(&mut Frame, In) -> Out;

/// A stream method that may wait.
#[derive(Clone, Copy)]
pub(super) struct StreamOp {
    step: Step,
    /// The direction a pipe waits in (`READ`, `WRITE`).
    dir: u32,
    /// The job asked for, until `job` makes it.
    spec: Option<Spec>,
    /// The result of a job run by `block` (outside cothreads).
    res: Option<Res>,
}

impl StreamOp {
    pub(super) fn new(step: Step, dir: u32) -> StreamOp {
        StreamOp { step, dir, spec: None, res: None }
    }
}

/// The stream in slot 1 of an operation's frame (its method checked it).
pub(super) fn stream_of(f: &Frame) -> Option<&Stream> {
    f.lua.test_udata::<Stream>(f.at(1))
}

/// The shared part and the kind of the frame's stream, if it is open.
pub(super) fn open_core(f: &Frame) -> Option<(Arc<Mutex<Inner>>, bool)> {
    stream_of(f).and_then(|s| Some((s.core()?, s.pipe)))
}

/// Runs job `spec` on `inner` (the write's data from the frame).
fn run(f: &Frame, inner: &mut Inner, spec: Spec) -> Res {
    match spec {
        Spec::Fill(fmt) => fill(inner, fmt),
        Spec::Write(off) => write_file(inner, &data_of(f)[off..]),
        Spec::Seek(whence, off) => seek_file(inner, whence, off),
    }
}

/// Fills a file's buffer until `fmt` can be answered.
fn fill(inner: &mut Inner, fmt: Format) -> Res {
    if inner.fd < 0 {
        return Err(libc::EBADF);
    }
    inner.rd.fill_for(inner.fd, fmt).map(|()| 0)
}

impl Operation for StreamOp {
    fn step(&mut self, f: &mut Frame, why: Why) -> Next {
        let mut w = match why {
            Why::Start => In::Start,
            Why::Ready => In::Ready,
            Why::Closed => In::Failed(c"closed"),
            Why::Done => match self.res.take().or_else(|| engine::payload_as::<Res>(f.take_payload())) {
                Some(r) => In::Job(r),
                None => In::Failed(c"cancelled"),
            },
            Why::Timeout => In::Failed(c"timeout"),
            Why::Cancelled => In::Failed(c"cancelled"),
            Why::Failed(m) => In::Failed(m),
        };
        loop {
            let out = (self.step)(f, w);
            match out {
                Out::Done(n) => return Next::Done(n),
                Out::Wait => return Next::Wait(None),
                Out::Job(spec) => match open_core(f) {
                    // A pipe's job runs here, on the loop's thread.
                    Some((core, true)) => w = In::Job(run(f, &mut lock(&core), spec)),
                    Some((_, false)) => {
                        self.spec = Some(spec);
                        return Next::Job;
                    }
                    None => w = In::Failed(c"closed"),
                },
            }
        }
    }

    fn sources(&self, f: &Frame, each: &mut dyn FnMut(&Source, RawFd, u32)) {
        let Some(s) = stream_of(f).filter(|s| s.pipe) else { return };
        // A pipe's lock is only held by Rust code on this thread: free here.
        let Some(core) = s.core() else { return };
        let fd = match core.try_lock() {
            Ok(g) if g.fd >= 0 => g.fd,
            _ => return,
        };
        each(&s.src, fd, self.dir);
    }

    fn job(&mut self, f: &Frame) -> Job {
        // The job owns a reference to the stream's `Inner` and a copy of the
        // data it writes.
        let core = open_core(f).map(|(c, _)| c);
        let spec = self.spec.take().unwrap_or(Spec::Seek(libc::SEEK_CUR, 0));
        let data = if let Spec::Write(off) = spec { data_of(f)[off..].to_vec() } else { Vec::new() };
        Box::new(move || -> Payload {
            let Some(core) = core else { return Box::new(Res::Err(libc::EBADF)) };
            let mut inner = lock(&core);
            let r: Res = match spec {
                Spec::Fill(fmt) => fill(&mut inner, fmt),
                Spec::Write(_) => write_file(&mut inner, &data),
                Spec::Seek(whence, off) => seek_file(&mut inner, whence, off),
            };
            Box::new(r)
        })
    }

    fn block(&mut self, f: &mut Frame, next: Next) -> Why {
        if next != Next::Job {
            return engine::block_default(self, f, next);
        }
        // Outside cothreads a file's job runs here, its result kept in `self`.
        let spec = self.spec.take();
        self.res = Some(match (open_core(f), spec) {
            (Some((core, _)), Some(spec)) => run(f, &mut lock(&core), spec),
            _ => Err(libc::EBADF),
        });
        Why::Done
    }
}

/// `[-0, +n, m]` The answer of a failed step: `nil, msg[, errno]` after the
/// frame of `height` slots.
pub(super) fn failed(f: &mut Frame, height: c_int, w: In) -> Option<Out> {
    let top = f.at(height);
    match w {
        In::Failed(m) => {
            f.lua.set_top(top);
            Some(Out::Done(f.lua.fail(m)))
        }
        In::Job(Err(e)) => {
            f.lua.set_top(top);
            Some(Out::Done(f.lua.fail_errno(e, None)))
        }
        _ => None,
    }
}

// ===== what the jobs run on a file =====

/// The data string in slot 2 of a write's frame (empty if it is not one).
pub(super) fn data_of(f: &Frame) -> &[u8] {
    f.lua.to_bytes(f.at(2)).unwrap_or_default()
}

/// Writes all of `data` to a file (after moving back over what was read
/// ahead, as stdio does between a read and a write).
pub(super) fn write_file(inner: &mut Inner, data: &[u8]) -> Res {
    if inner.fd < 0 {
        return Err(libc::EBADF);
    }
    let ahead = inner.rd.discard();
    if ahead > 0 {
        let _ = fd::seek(inner.fd, -(ahead as i64), libc::SEEK_CUR);
    }
    fd::write_all(inner.fd, data).map(|()| 0)
}

/// Seeks the descriptor of `inner`; the new position.
pub(super) fn seek_file(inner: &mut Inner, whence: c_int, off: i64) -> Res {
    if inner.fd < 0 {
        return Err(libc::EBADF);
    }
    // The stream's position is behind the descriptor's by what was read ahead.
    let ahead = inner.rd.unread().len() as i64;
    let off = if whence == libc::SEEK_CUR { off - ahead } else { off };
    let pos = fd::seek(inner.fd, off, whence)?;
    inner.rd.discard();
    Ok(pos)
}
