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

use std::ffi::{CStr, c_int, c_void};
use std::os::fd::RawFd;
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use crate::io::{JobResult, Outcome, READ, WRITE};
use crate::park::{self, cothread_of};
use crate::raw::{self, L, ffi};
use crate::reader::{Format, Reader};
use crate::state::{self, State};
use crate::sys;

/// Metatable name of a stream.
pub const STREAM: &CStr = c"cothread.file";
/// Formats `lines` accepts (Lua's `MAXARGLINE`).
const MAX_LINE_ARGS: c_int = 250;

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
    /// Pipes: identifier on the event loop of `owner` (0: never attached).
    id: u64,
    owner: *mut State,
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
        let s = ffi::lua_newuserdatauv(l, std::mem::size_of::<Stream>(), 1) as *mut Stream;
        let inner = Inner { fd, rd: Reader::default() };
        s.write(Stream {
            core: Some(Arc::new(Mutex::new(inner))),
            pipe,
            out: Vec::new(),
            id: 0,
            owner: std::ptr::null_mut(),
        });
        ffi::luaL_setmetatable(l, STREAM.as_ptr());
        s
    }
}

/// Is the stream at `idx` (one, checked) open?
///
/// # Safety
/// `l` is a valid state, in a C function.
pub unsafe fn is_open(l: L, idx: c_int) -> bool {
    // SAFETY: the caller checked that `idx` holds a stream.
    unsafe { (*(ffi::lua_touserdata(l, idx) as *mut Stream)).core.is_some() }
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

/// Detaches pipe `s` from its scheduler's loop (its waiters end, "closed").
unsafe fn detach(s: *mut Stream) {
    // SAFETY: `s` is live; its owner's memory is kept by user value 1.
    unsafe {
        let p = std::mem::replace(&mut (*s).owner, std::ptr::null_mut());
        crate::state::source_event(p, (*s).id, crate::state::SourceEvent::Detach);
    }
}

/// Closes `s`: the descriptor closes now, or when a job still running on
/// it lets go of it.
unsafe fn close_stream(s: *mut Stream) {
    // SAFETY: `s` is live; only Rust code runs.
    unsafe {
        detach(s);
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

// ===== operations =====

const OP_READ: u8 = 1;
const OP_LINES: u8 = 2;
const OP_WRITE: u8 = 3;
const OP_SEEK: u8 = 4;

/// What a job returns: a number (a position, a count) or an errno.
type Res = Result<u64, i32>;
type JobFn = Box<dyn FnOnce(&mut Inner) -> Res + Send>;

/// Why a step runs again.
enum Why {
    /// A pipe is ready (or was closed: the step finds out).
    Ready,
    /// The job ran, with this result.
    Job(Res),
    /// The wait failed: the step returns this message.
    Failed(&'static CStr),
}

/// What a step asks for.
enum Step {
    Done(c_int),
    /// Run this on the stream's `Inner` (in a pool job for a file in a cothread).
    Job(JobFn),
    /// Wait until the pipe is ready for `READ` or `WRITE`.
    Wait(u32),
}

/// Runs operation `op` (its frame on the stack) until it is done.
unsafe fn drive(l: L, op: u8, mut why: Option<Why>) -> c_int {
    // SAFETY: a C function whose frame is `op`'s; a job box is alive only
    // between a step and its consumption (by `park`, or run here), and the
    // loop is made beforehand (`io_of` raises only when it makes it).
    unsafe {
        if let Some((p, _)) = cothread_of(l) {
            state::io_of(l, p);
        }
        loop {
            let step = match op {
                OP_READ | OP_LINES => read_step(l, why.take()),
                OP_WRITE => write_step(l, why.take()),
                _ => seek_step(l, why.take()),
            };
            let s = ffi::lua_touserdata(l, 1) as *mut Stream;
            why = Some(match step {
                Step::Done(n) if op == OP_LINES => return lines_result(l, n),
                Step::Done(n) => return n,
                Step::Job(f) => match cothread_of(l) {
                    Some((p, task)) if !(*s).pipe => {
                        let core = (*s).core.clone().expect("an open stream");
                        let m = park::park(l, p, op, continuation, move |io| {
                            Ok(io.begin_job(task, move || Box::new(f(&mut lock(&core))) as JobResult))
                        });
                        Why::Failed(m)
                    }
                    _ => Why::Job(f(&mut lock((*s).core.as_ref().expect("an open stream")))),
                },
                Step::Wait(dir) => match cothread_of(l) {
                    Some((p, task)) => {
                        let m = park::park(l, p, op, continuation, |io| {
                            attach(l, s, p, io)?;
                            io.begin(task, vec![((*s).id, dir)], None).map_err(|e| e.c_message())
                        });
                        Why::Failed(m)
                    }
                    None => block(s, dir),
                },
            });
        }
    }
}

/// Attaches pipe `s` to the loop `io` of `p` (moving it from another
/// scheduler's loop if nothing waits on it there); the scheduler's userdata
/// is on the stack top, the stream in slot 1.
unsafe fn attach(l: L, s: *mut Stream, p: *mut State, io: &mut crate::io::Io) -> Result<(), &'static CStr> {
    // SAFETY: `s` is live, in slot 1; its owner's memory is kept by user value 1.
    unsafe {
        if (*s).owner == p && io.attached((*s).id) {
            return Ok(());
        }
        let old = (*s).owner;
        if !old.is_null() && !(*old).closed && (*old).io.as_ref().is_some_and(|o| o.busy((*s).id)) {
            return Err(c"pipe in use by another scheduler");
        }
        detach(s);
        if (*s).id == 0 {
            (*s).id = crate::io::new_id();
        }
        let fd = lock((*s).core.as_ref().ok_or(c"closed")?).fd;
        io.attach((*s).id, fd).map_err(|e| e.c_message())?;
        (*s).owner = p;
        ffi::lua_pushvalue(l, -1);
        ffi::lua_setiuservalue(l, 1, 1);
        Ok(())
    }
}

/// The continuation of a parked stream operation.
unsafe extern "C-unwind" fn continuation(l: L, _status: c_int, ctx: ffi::lua_KContext) -> c_int {
    // SAFETY: the frame of the operation as `park` left it.
    unsafe {
        let (op, outcome, result) = park::unpark(l, ctx);
        let why = match (outcome, result) {
            (Outcome::Ready, Some(r)) => match r.downcast::<Res>() {
                Ok(r) => Why::Job(*r),
                Err(_) => Why::Failed(c"cancelled"),
            },
            (Outcome::Ready | Outcome::Closed, None) => {
                let s = ffi::lua_touserdata(l, 1) as *mut Stream;
                if (*s).pipe { Why::Ready } else { Why::Failed(c"cancelled") }
            }
            (Outcome::Timeout, _) => Why::Failed(c"timeout"),
            (_, _) => Why::Failed(c"cancelled"),
        };
        drive(l, op, Some(why))
    }
}

/// Blocks the caller until pipe `s` is ready (outside cothreads).
unsafe fn block(s: *mut Stream, dir: u32) -> Why {
    // SAFETY: `s` is live; only Rust code runs.
    unsafe {
        let Some(core) = (*s).core.as_ref() else { return Why::Ready };
        let fd = lock(core).fd;
        let mut fds = [sys::pollfd(fd, if dir == READ { sys::POLL_IN } else { sys::POLL_OUT })];
        loop {
            match sys::poll(&mut fds, -1) {
                Ok(0) => continue,
                Ok(_) => return Why::Ready,
                Err(e) => return Why::Job(Err(e)),
            }
        }
    }
}

/// `[-0, +n, m]` The result of a failed step: `nil, msg[, errno]` after the
/// frame of `height` slots.
unsafe fn failed(l: L, height: c_int, why: &Why) -> Option<Step> {
    // SAFETY: valid state.
    unsafe {
        match why {
            Why::Failed(m) => {
                ffi::lua_settop(l, height);
                Some(Step::Done(park::push_fail(l, m)))
            }
            Why::Job(Err(e)) => {
                ffi::lua_settop(l, height);
                Some(Step::Done(park::push_errno(l, *e, None)))
            }
            _ => None,
        }
    }
}

/// The stream of an operation's frame, or `None` if it was closed meanwhile.
unsafe fn open_stream(l: L) -> Option<*mut Stream> {
    // SAFETY: slot 1 of an operation's frame holds a stream.
    unsafe {
        let s = ffi::lua_touserdata(l, 1) as *mut Stream;
        (*s).core.is_some().then_some(s)
    }
}

// ----- read -----

/// `[-0, +0, e]` Checks the read format at `idx` (argument `arg`).
unsafe fn check_format(l: L, idx: c_int, arg: c_int) {
    // SAFETY: valid state.
    unsafe {
        if ffi::lua_type(l, idx) == ffi::LUA_TNUMBER {
            ffi::luaL_checkinteger(l, idx);
        } else if parse_format(l, idx).is_none() {
            raw::arg_error(l, arg, c"invalid format");
        }
    }
}

/// The read format at `idx` (checked already, or `None`).
unsafe fn parse_format(l: L, idx: c_int) -> Option<Format> {
    // SAFETY: valid state; only raw reads.
    unsafe {
        if ffi::lua_type(l, idx) == ffi::LUA_TNUMBER {
            let n = ffi::lua_tointegerx(l, idx, std::ptr::null_mut());
            return Some(Format::Count(usize::try_from(n).unwrap_or(usize::MAX)));
        }
        let s = CStr::from_ptr(raw::to_str(l, idx)?).to_bytes();
        let s = s.strip_prefix(b"*").unwrap_or(s);
        match s.first()? {
            b'n' => Some(Format::Number),
            b'l' => Some(Format::Line { keep: false }),
            b'L' => Some(Format::Line { keep: true }),
            b'a' => Some(Format::All),
            _ => None,
        }
    }
}

/// `f:read(...)`: Lua's formats "n", "l", "L", "a" (with or without a
/// leading `*`) and byte counts; "l" by default.
unsafe extern "C-unwind" fn stream_read(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe {
        check_open(l, 1);
        if ffi::lua_gettop(l) == 1 {
            ffi::lua_pushliteral(l, c"l");
        }
        let k = ffi::lua_gettop(l) - 1;
        for i in 2..=k + 1 {
            check_format(l, i, i);
        }
        raw::check_stack(l, k + 8);
        ffi::lua_pushinteger(l, k as ffi::lua_Integer);
        ffi::lua_rotate(l, 2, 1); // stream k formats...
        drive(l, OP_READ, None)
    }
}

/// Reads the formats of the frame (1 stream, 2 count k, then the formats,
/// then the results so far).
unsafe fn read_step(l: L, why: Option<Why>) -> Step {
    // SAFETY: the frame of a read; no guard or vector local is alive when a
    // push raises (the answer is kept in the stream's `out`).
    unsafe {
        let k = ffi::lua_tointegerx(l, 2, std::ptr::null_mut()) as c_int;
        if let Some(step) = why.as_ref().and_then(|w| failed(l, k + 2, w)) {
            return step;
        }
        let Some(s) = open_stream(l) else {
            ffi::lua_settop(l, k + 2);
            return Step::Done(park::push_fail(l, c"closed"));
        };
        loop {
            let done = ffi::lua_gettop(l) - (k + 2);
            if done >= k {
                return Step::Done(k);
            }
            let f = parse_format(l, 3 + done).expect("checked");
            let core = (*s).core.as_ref().expect("open");
            let mut g = match core.try_lock() {
                Ok(g) => g,
                Err(TryLockError::Poisoned(e)) => e.into_inner(),
                // A job holds it: this read waits its turn in a job.
                Err(TryLockError::WouldBlock) => return fill_job(f),
            };
            if g.rd.ready(f) {
                (*s).out.clear();
                let ok = g.rd.take(f, &mut (*s).out);
                drop(g);
                if !push_answer(l, s, f, ok) {
                    return Step::Done(done + 1);
                }
                continue;
            }
            if !(*s).pipe {
                return fill_job(f);
            }
            let fd = g.fd;
            match g.rd.fill(fd) {
                Ok(_) => {}
                Err(libc::EAGAIN) => return Step::Wait(READ),
                Err(e) => {
                    drop(g);
                    ffi::lua_settop(l, k + 2);
                    return Step::Done(park::push_errno(l, e, None));
                }
            }
        }
    }
}

/// A job filling a file's buffer until `f` can be answered.
fn fill_job(f: Format) -> Step {
    Step::Job(Box::new(move |inner: &mut Inner| {
        if inner.fd < 0 {
            return Err(libc::EBADF);
        }
        inner.rd.fill_for(inner.fd, f).map(|()| 0)
    }))
}

/// `[-0, +1, m]` Pushes the answer in `s.out` (`ok`: else fail); false if
/// the read stops there (fail).
unsafe fn push_answer(l: L, s: *mut Stream, f: Format, ok: bool) -> bool {
    // SAFETY: valid state with free slots (checked by the caller).
    unsafe {
        if !ok {
            ffi::lua_pushnil(l);
            return false;
        }
        let out = &(*s).out;
        if f == Format::Count(0) {
            ffi::lua_pushliteral(l, c"");
            return true;
        }
        ffi::lua_pushlstring(l, out.as_ptr().cast(), out.len());
        if f != Format::Number {
            return true;
        }
        let converted = ffi::lua_stringtonumber(l, ffi::lua_tolstring(l, -1, std::ptr::null_mut())) != 0;
        if converted {
            ffi::lua_remove(l, -2);
        } else {
            ffi::lua_pop(l, 1);
            ffi::lua_pushnil(l);
        }
        converted
    }
}

/// `f:lines(...)`: an iterator reading with the formats ("l" by default);
/// it raises on a read error and returns nil at the end (the stream stays open).
unsafe extern "C-unwind" fn stream_lines(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe {
        check_open(l, 1);
        let n = ffi::lua_gettop(l);
        if n - 1 > MAX_LINE_ARGS {
            raw::arg_error(l, MAX_LINE_ARGS + 2, c"too many arguments");
        }
        for i in 2..=n {
            check_format(l, i, i);
        }
        ffi::lua_pushcclosure(l, lines_iter, n);
        1
    }
}

/// The iterator of `lines`: its upvalues are the stream and the formats.
unsafe extern "C-unwind" fn lines_iter(l: L) -> c_int {
    // SAFETY: a closure made by `stream_lines`.
    unsafe {
        let s = ffi::lua_touserdata(l, ffi::lua_upvalueindex(1)) as *mut Stream;
        if (*s).core.is_none() {
            raw::error(l, c"file is already closed");
        }
        ffi::lua_settop(l, 0);
        let mut k = 0;
        while ffi::lua_type(l, ffi::lua_upvalueindex(k + 2)) != ffi::LUA_TNONE {
            k += 1;
        }
        raw::check_stack(l, 2 * k + 10); // the frame, then a result per format
        ffi::lua_pushvalue(l, ffi::lua_upvalueindex(1));
        if k == 0 {
            ffi::lua_pushinteger(l, 1);
            ffi::lua_pushliteral(l, c"l");
        } else {
            ffi::lua_pushinteger(l, k as ffi::lua_Integer);
            for i in 0..k {
                ffi::lua_pushvalue(l, ffi::lua_upvalueindex(i + 2));
            }
        }
        drive(l, OP_LINES, None)
    }
}

/// The results of the `lines` iterator: a failure raises its message.
unsafe fn lines_result(l: L, n: c_int) -> c_int {
    // SAFETY: `n` results on the stack top.
    unsafe {
        if n >= 2 && ffi::lua_type(l, -n) == ffi::LUA_TNIL {
            ffi::lua_pushvalue(l, -n + 1);
            ffi::lua_error(l);
        }
        n
    }
}

// ----- write -----

/// `f:write(...)`: writes strings and numbers; returns `f`, or
/// `nil, message, errno`.
unsafe extern "C-unwind" fn stream_write(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe {
        check_open(l, 1);
        let n = ffi::lua_gettop(l);
        for i in 2..=n {
            ffi::luaL_checklstring(l, i, std::ptr::null_mut());
        }
        raw::check_stack(l, 8);
        if n == 1 {
            ffi::lua_pushliteral(l, c"");
        } else {
            ffi::lua_concat(l, n - 1);
        }
        ffi::lua_pushinteger(l, 0); // stream data offset
        drive(l, OP_WRITE, None)
    }
}

/// Writes the data of the frame (1 stream, 2 data, 3 bytes written).
unsafe fn write_step(l: L, why: Option<Why>) -> Step {
    // SAFETY: the frame of a write; the data string stays in slot 2.
    unsafe {
        match why {
            Some(Why::Job(Ok(_))) => {
                ffi::lua_settop(l, 1);
                return Step::Done(1);
            }
            Some(w) => {
                if let Some(step) = failed(l, 3, &w) {
                    return step;
                }
            }
            None => {}
        }
        let Some(s) = open_stream(l) else { return Step::Done(park::push_fail(l, c"closed")) };
        let mut len = 0;
        let data = ffi::lua_tolstring(l, 2, &mut len) as *const u8;
        let data = std::slice::from_raw_parts(data, len);
        let mut off = ffi::lua_tointegerx(l, 3, std::ptr::null_mut()) as usize;
        if !(*s).pipe {
            let v = data[off..].to_vec();
            return Step::Job(Box::new(move |inner: &mut Inner| write_file(inner, &v)));
        }
        let fd = lock((*s).core.as_ref().expect("open")).fd;
        while off < data.len() {
            match write_pipe(fd, &data[off..]) {
                Ok(n) => off += n,
                Err(libc::EAGAIN) => {
                    ffi::lua_pushinteger(l, off as ffi::lua_Integer);
                    ffi::lua_replace(l, 3);
                    return Step::Wait(WRITE);
                }
                Err(e) => {
                    ffi::lua_settop(l, 3);
                    return Step::Done(park::push_errno(l, e, None));
                }
            }
        }
        ffi::lua_settop(l, 1);
        Step::Done(1)
    }
}

/// Writes all of `data` to a file (after moving back over what was read
/// ahead, as stdio does between a read and a write).
fn write_file(inner: &mut Inner, mut data: &[u8]) -> Res {
    if inner.fd < 0 {
        return Err(libc::EBADF);
    }
    let ahead = inner.rd.discard();
    if ahead > 0 {
        // SAFETY: a plain system call on the stream's descriptor.
        unsafe { libc::lseek(inner.fd, -(ahead as libc::off_t), libc::SEEK_CUR) };
    }
    while !data.is_empty() {
        // SAFETY: `data` is a valid slice.
        let r = unsafe { libc::write(inner.fd, data.as_ptr().cast(), data.len()) };
        if r < 0 {
            let e = errno();
            if e == libc::EINTR {
                continue;
            }
            return Err(e);
        }
        data = &data[r as usize..];
    }
    Ok(0)
}

/// One non-blocking write to a pipe; a closed reader gives `EPIPE`, not a
/// SIGPIPE (blocked around the write, and a pending one taken away).
fn write_pipe(fd: RawFd, data: &[u8]) -> Result<usize, i32> {
    // SAFETY: valid sigset_t values, filled before use; `data` is valid.
    unsafe {
        let mut pipe: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut pipe);
        libc::sigaddset(&mut pipe, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &pipe, &mut old);
        let r = loop {
            let r = libc::write(fd, data.as_ptr().cast(), data.len());
            if r >= 0 {
                break Ok(r as usize);
            }
            let e = errno();
            if e != libc::EINTR {
                break Err(e);
            }
        };
        if r == Err(libc::EPIPE) && libc::sigismember(&old, libc::SIGPIPE) == 0 {
            let zero = libc::timespec { tv_sec: 0, tv_nsec: 0 };
            libc::sigtimedwait(&pipe, std::ptr::null_mut(), &zero);
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        r
    }
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

// ----- seek -----

/// `f:seek([whence [, offset]])`: "set", "cur" (default) or "end", and an
/// offset (default 0); returns the new position from the start.
unsafe extern "C-unwind" fn stream_seek(l: L) -> c_int {
    // SAFETY: a method of the module.
    unsafe {
        check_open(l, 1);
        let whence = ffi::luaL_optlstring(l, 2, c"cur".as_ptr(), std::ptr::null_mut());
        let w = match CStr::from_ptr(whence).to_bytes() {
            b"set" => libc::SEEK_SET,
            b"cur" => libc::SEEK_CUR,
            b"end" => libc::SEEK_END,
            _ => raw::arg_error(l, 2, c"invalid option"),
        };
        let off = ffi::luaL_optinteger(l, 3, 0);
        ffi::lua_settop(l, 1);
        ffi::lua_pushinteger(l, w as ffi::lua_Integer);
        ffi::lua_pushinteger(l, off);
        drive(l, OP_SEEK, None)
    }
}

/// Seeks (frame: 1 stream, 2 whence, 3 offset).
unsafe fn seek_step(l: L, why: Option<Why>) -> Step {
    // SAFETY: the frame of a seek.
    unsafe {
        match why {
            Some(Why::Job(Ok(pos))) => {
                ffi::lua_settop(l, 0);
                ffi::lua_pushinteger(l, pos as ffi::lua_Integer);
                return Step::Done(1);
            }
            Some(w) => {
                if let Some(step) = failed(l, 3, &w) {
                    return step;
                }
            }
            None => {}
        }
        if open_stream(l).is_none() {
            return Step::Done(park::push_fail(l, c"closed"));
        }
        let w = ffi::lua_tointegerx(l, 2, std::ptr::null_mut()) as c_int;
        let off = ffi::lua_tointegerx(l, 3, std::ptr::null_mut());
        Step::Job(Box::new(move |inner: &mut Inner| seek_file(inner, w, off)))
    }
}

/// Seeks the descriptor of `inner`; the new position.
fn seek_file(inner: &mut Inner, whence: c_int, off: i64) -> Res {
    if inner.fd < 0 {
        return Err(libc::EBADF);
    }
    // The stream's position is behind the descriptor's by what was read ahead.
    let ahead = inner.rd.unread().len() as i64;
    let off = if whence == libc::SEEK_CUR { off - ahead } else { off };
    // SAFETY: a plain system call on the stream's descriptor.
    let r = unsafe { libc::lseek(inner.fd, off as libc::off_t, whence) };
    if r < 0 {
        return Err(errno());
    }
    inner.rd.discard();
    Ok(r as u64)
}

// ===== the metatable =====

const METHODS: &[(&CStr, ffi::lua_CFunction)] = &[
    (c"read", stream_read),
    (c"write", stream_write),
    (c"lines", stream_lines),
    (c"seek", stream_seek),
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
        ffi::lua_createtable(l, 0, METHODS.len() as c_int);
        for (name, f) in METHODS {
            ffi::lua_pushcfunction(l, *f);
            ffi::lua_setfield(l, -2, name.as_ptr());
        }
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
