//! Buffered streams: the file objects of `cothread.file` and the pipes of
//! `cothread.process`, one userdata type (metatable `cothread.file`) whose
//! methods mirror Lua's file handles (`read`, `write`, `lines`, `seek`,
//! `flush`, `close`).
//!
//! A stream's descriptor and read buffer (`Inner`) sit behind an
//! `Arc<Mutex<..>>`, so a job on the loop's thread pool owns what it touches:
//! a cothread unscheduled while its job runs leaves the job a valid stream
//! (the late completion resumes nobody; the descriptor closes when the last
//! owner lets go). The two kinds differ only in how they wait:
//! - a *file* (a blocking descriptor) fills its buffer, writes and seeks in
//!   pool jobs; a read answered from the buffer costs no job;
//! - a *pipe* (a non-blocking descriptor) reads and writes on the loop's
//!   thread and waits for readiness in the event loop, as sockets do.
//!
//! Outside a cothread, both run synchronously (files in the caller's thread,
//! pipes blocking in `poll(2)`). Misuse raises (`bad argument`, "attempt to
//! use a closed file"); failed I/O returns `nil, message, errno`.
//!
//! Each method that may wait (`read`, the `lines` iterator, `write`, `seek`)
//! is one engine operation, `StreamOp`: its step (in `read` and `write`)
//! answers what it can, then asks for a job (a file) or for readiness (a
//! pipe). Files: this one (objects, the operation, the metatable), `read`,
//! `write` (also `seek`).

mod read;
mod write;

use std::ffi::{CStr, c_int, c_void};
use std::os::fd::RawFd;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::engine::{self, Frame, Job, Next, Operation, Payload, READ, Source, SourceKind, WRITE, Why};
use crate::raw::{self, L, ffi};
use crate::reader::{Format, Reader};
use crate::sys;

/// Metatable name of a stream.
pub const STREAM: &CStr = c"cothread.file";

// ===== objects =====

/// What a job may touch: the descriptor (closed on drop) and the buffer.
pub struct Inner {
    fd: RawFd,
    rd: Reader,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if self.fd >= 0 {
            sys::close(self.fd);
        }
    }
}

pub struct Stream {
    /// `None` once closed.
    core: Option<Arc<Mutex<Inner>>>,
    pipe: bool,
    /// The bytes of an answer, between the buffer and Lua.
    out: Vec<u8>,
    /// Pipes: their side in the waiting engine.
    src: Source,
}

fn lock(m: &Mutex<Inner>) -> MutexGuard<'_, Inner> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// `[-0, +1, m]` Pushes a new stream over `fd` (which it owns from now on).
/// A pipe's descriptor must be non-blocking.
///
/// # Safety
/// `l` is a valid state, in a C function.
pub unsafe fn push_stream(l: L, fd: RawFd, pipe: bool) -> *mut Stream {
    // SAFETY: valid state; the block is fresh, sized and aligned for a
    // `Stream`, written before the metatable makes `__gc` reach it. (Should
    // the allocation raise, `fd` is not owned yet: it leaks.)
    unsafe {
        raw::check_stack(l, 3);
        let s = ffi::lua_newuserdatauv(l, std::mem::size_of::<Stream>(), 0) as *mut Stream;
        let inner = Inner { fd, rd: Reader::default() };
        s.write(Stream {
            core: Some(Arc::new(Mutex::new(inner))),
            pipe,
            out: Vec::new(),
            src: Source::new(SourceKind::Pipe),
        });
        ffi::luaL_setmetatable(l, STREAM.as_ptr());
        s
    }
}

/// Whether the value at `idx` is a stream, and if so whether it is open.
pub fn open_at(lua: &crate::lua::Lua, idx: c_int) -> Option<bool> {
    // SAFETY: `lua` is a valid state with room for the metatables compared;
    // a userdata with this metatable holds a `Stream`.
    unsafe {
        let s = ffi::luaL_testudata(lua.raw(), idx, STREAM.as_ptr()) as *const Stream;
        s.as_ref().map(|s| s.core.is_some())
    }
}

/// `[-0, +0, e]` The stream at `idx`, raising unless it is one and open.
unsafe fn check_open(l: L, idx: c_int) -> *mut Stream {
    // SAFETY: valid state; a userdata with this metatable holds a `Stream`.
    unsafe {
        let s = ffi::luaL_checkudata(l, idx, STREAM.as_ptr()) as *mut Stream;
        if (*s).core.is_none() {
            raw::error(l, c"attempt to use a closed file");
        }
        s
    }
}

/// Closes `s`: the operations waiting on the pipe end with "closed"; the
/// descriptor closes now, or when a job still running on it lets go of it.
unsafe fn close_stream(s: *mut Stream) {
    // SAFETY: `s` is live; its source is detached before the descriptor
    // closes (the engine's poll handle watches it).
    unsafe {
        engine::detach(&raw mut (*s).src);
        if let Some(core) = (*s).core.take() {
            if let Ok(mut g) = core.try_lock() {
                if g.fd >= 0 {
                    sys::close(g.fd);
                    g.fd = -1;
                }
                g.rd = Reader::default();
            }
        }
        (*s).out = Vec::new();
    }
}

// ===== metamethods and simple methods =====

/// `__gc` and `__close`: closes the stream if open (never raises).
unsafe extern "C-unwind" fn stream_gc(l: L) -> c_int {
    // SAFETY: called by Lua with a stream (or, for `__close`, the value of a
    // to-be-closed variable: tested).
    unsafe {
        let s = ffi::luaL_testudata(l, 1, STREAM.as_ptr()) as *mut Stream;
        if !s.is_null() {
            close_stream(s);
        }
    }
    0
}

/// `f:close()`: closes the stream; a cothread waiting on a pipe gets
/// `nil, "closed"`. Returns true.
unsafe extern "C-unwind" fn stream_close(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe {
        let s = check_open(l, 1);
        close_stream(s);
        ffi::lua_pushboolean(l, 1);
        1
    }
}

unsafe extern "C-unwind" fn stream_tostring(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe {
        let s = ffi::luaL_checkudata(l, 1, STREAM.as_ptr()) as *mut Stream;
        if (*s).core.is_none() {
            ffi::lua_pushliteral(l, c"file (closed)");
        } else {
            ffi::lua_pushfstring(l, c"file (%p)".as_ptr(), s as *const c_void);
        }
        1
    }
}

/// `f:flush()`: writes are not buffered (each `write` hands its data to the
/// system before it returns), so there is nothing to flush. Returns `f`.
unsafe extern "C-unwind" fn stream_flush(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe {
        check_open(l, 1);
        ffi::lua_settop(l, 1);
        1
    }
}

// ===== the operation =====

/// What a job returns: a number (a position, a count) or an errno.
type Res = Result<u64, i32>;

/// What a stream step is told.
#[derive(Clone, Copy)]
enum In {
    Start,
    /// The pipe is ready (or was closed: the step finds out).
    Ready,
    /// The job ran, with this result.
    Job(Res),
    /// The wait ended without readiness: the step answers this message.
    Failed(&'static CStr),
}

/// What a stream step asks for.
enum Out {
    Done(c_int),
    /// The job `spec` on the stream's `Inner` (a pool job for a file in a
    /// cothread; here for a pipe, or outside cothreads).
    Job(Spec),
    /// Readiness of the pipe.
    Wait,
}

/// A job on a stream, as plain data (made into a closure when handed over).
#[derive(Clone, Copy)]
enum Spec {
    /// Fill the buffer until the format can be answered.
    Fill(Format),
    /// Write the frame's data (slot 2) from this offset.
    Write(usize),
    /// Seek: whence and offset.
    Seek(c_int, i64),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `read`, the `lines` iterator. Frame: 1 stream, 2 count k, then the
    /// formats, then the answers so far.
    Read,
    /// Frame: 1 stream, 2 data, 3 bytes written.
    Write,
    /// Frame: 1 stream, 2 whence, 3 offset.
    Seek,
}

/// A stream method that may wait.
#[derive(Clone, Copy)]
struct StreamOp {
    kind: Kind,
    /// The job asked for, until `job` makes it.
    spec: Option<Spec>,
    /// The result of a job run by `block` (outside cothreads).
    res: Option<Res>,
}

impl StreamOp {
    fn new(kind: Kind) -> StreamOp {
        StreamOp { kind, spec: None, res: None }
    }
}

/// The stream in slot 1 of the frame.
unsafe fn stream_of(f: &Frame) -> *mut Stream {
    // SAFETY: slot 1 of every stream operation's frame holds its stream.
    unsafe { ffi::lua_touserdata(f.l(), f.at(1)) as *mut Stream }
}

/// Runs job `spec` on `inner` (the write's data from the frame).
unsafe fn run(f: &Frame, inner: &mut Inner, spec: Spec) -> Res {
    // SAFETY: slot 2 of a write's frame holds its data string.
    unsafe {
        match spec {
            Spec::Fill(fmt) => fill(inner, fmt),
            Spec::Write(off) => write::write_file(inner, &write::data_of(f)[off..]),
            Spec::Seek(whence, off) => write::seek_file(inner, whence, off),
        }
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
        // SAFETY: the frame the method built; a pipe's inline job holds the
        // lock only while Rust runs.
        unsafe {
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
                let out = match self.kind {
                    Kind::Read => read::step(f, w),
                    Kind::Write => write::write_step(f, w),
                    Kind::Seek => write::seek_step(f, w),
                };
                match out {
                    Out::Done(n) => return Next::Done(n),
                    Out::Wait => return Next::Wait(None),
                    Out::Job(spec) => {
                        let s = stream_of(f);
                        match (*s).core.clone() {
                            Some(core) if (*s).pipe => w = In::Job(run(f, &mut lock(&core), spec)),
                            Some(_) => {
                                self.spec = Some(spec);
                                return Next::Job;
                            }
                            None => w = In::Failed(c"closed"),
                        }
                    }
                }
            }
        }
    }

    fn sources(&self, f: &Frame, each: &mut dyn FnMut(*mut Source, RawFd, u32)) {
        // SAFETY: as `step`; a pipe's lock is only held by Rust code, so
        // `try_lock` finds it free.
        unsafe {
            let s = stream_of(f);
            let fd = match (*s).core.as_ref().map(|c| c.try_lock().map(|g| g.fd)) {
                Some(Ok(fd)) if (*s).pipe && fd >= 0 => fd,
                _ => return,
            };
            let dir = if self.kind == Kind::Write { WRITE } else { READ };
            each(&raw mut (*s).src, fd, dir);
        }
    }

    fn job(&mut self, f: &Frame) -> Job {
        // SAFETY: as `step`; the job owns a reference to the stream's `Inner`
        // and a copy of the data it writes.
        unsafe {
            let s = stream_of(f);
            let core = (*s).core.clone();
            let spec = self.spec.take().unwrap_or(Spec::Seek(libc::SEEK_CUR, 0));
            let data = if let Spec::Write(off) = spec { write::data_of(f)[off..].to_vec() } else { Vec::new() };
            Box::new(move || -> Payload {
                let Some(core) = core else { return Box::new(Res::Err(libc::EBADF)) };
                let mut inner = lock(&core);
                let r: Res = match spec {
                    Spec::Fill(fmt) => fill(&mut inner, fmt),
                    Spec::Write(_) => write::write_file(&mut inner, &data),
                    Spec::Seek(whence, off) => write::seek_file(&mut inner, whence, off),
                };
                Box::new(r)
            })
        }
    }

    fn block(&mut self, f: &mut Frame, next: Next) -> Why {
        // SAFETY: as `step`; outside cothreads a file's job runs here, its
        // result kept in `self` (plain data), not in a payload.
        unsafe {
            if next != Next::Job {
                return engine::block_default(self, f, next);
            }
            let s = stream_of(f);
            let spec = self.spec.take();
            self.res = Some(match ((*s).core.clone(), spec) {
                (Some(core), Some(spec)) => run(f, &mut lock(&core), spec),
                _ => Err(libc::EBADF),
            });
            Why::Done
        }
    }
}

/// `[-0, +n, m]` The answer of a failed step: `nil, msg[, errno]` after the
/// frame of `height` slots.
unsafe fn failed(f: &Frame, height: c_int, w: In) -> Option<Out> {
    // SAFETY: a step's slots.
    unsafe {
        match w {
            In::Failed(m) => {
                ffi::lua_settop(f.l(), f.at(height));
                Some(Out::Done(raw::push_fail(f.l(), m)))
            }
            In::Job(Err(e)) => {
                ffi::lua_settop(f.l(), f.at(height));
                Some(Out::Done(raw::push_errno(f.l(), e, None)))
            }
            _ => None,
        }
    }
}

/// The stream of an operation's frame, or `None` if it was closed meanwhile.
unsafe fn open_stream(f: &Frame) -> Option<*mut Stream> {
    // SAFETY: slot 1 of an operation's frame holds a stream.
    unsafe {
        let s = stream_of(f);
        (*s).core.is_some().then_some(s)
    }
}

// ===== the metatable =====

const METHODS: &[raw::Reg] = &[
    (c"read", read::stream_read),
    (c"write", write::stream_write),
    (c"seek", write::stream_seek),
    (c"flush", stream_flush),
    (c"close", stream_close),
];

/// `[-0, +0, m]` Makes the metatable of streams (once per Lua state).
///
/// # Safety
/// `l` is a valid state, in a C function.
pub unsafe fn register(l: L) {
    // SAFETY: valid state; balanced pushes.
    unsafe {
        raw::check_stack(l, 4);
        if ffi::luaL_newmetatable(l, STREAM.as_ptr()) == 0 {
            ffi::lua_pop(l, 1);
            return;
        }
        raw::push_functions(l, METHODS);
        read::add_lines(l);
        ffi::lua_setfield(l, -2, c"__index".as_ptr());
        for (name, f) in
            [(c"__gc", stream_gc as ffi::lua_CFunction), (c"__close", stream_gc), (c"__tostring", stream_tostring)]
        {
            ffi::lua_pushcfunction(l, f);
            ffi::lua_setfield(l, -2, name.as_ptr());
        }
        ffi::lua_pop(l, 1);
    }
}
