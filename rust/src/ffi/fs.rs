//! Requests that run blocking system calls on the loop's thread pool: name
//! resolution and file operations. Each is a work request (see `work`): its
//! callback runs once on the loop, also after `cot_work_cancel` (with
//! `COT_ECANCELED`).

use std::ffi::{CStr, CString, c_char, c_void};
use std::os::raw::c_int;
use std::sync::{Arc, Mutex};

use super::guard::{status, write_out};
use super::loop_::{cot_loop, lend, with_loop};
use super::work::cot_req;
use crate::error::{Error, Result};

/// Called with the result of a file request: a descriptor (`cot_fs_open`), a
/// byte count (`cot_fs_read`, `cot_fs_write`), 0 (`cot_fs_close`,
/// `cot_fs_stat`), or a negative error code.
pub type cot_fs_cb = Option<unsafe extern "C" fn(r#loop: *mut cot_loop, req: cot_req, result: i64, data: *mut c_void)>;

/// Called with the result of `cot_getaddrinfo`: `status` 0 and a list to free
/// with `freeaddrinfo`, or a negative code (`COT_EAI_*`, `COT_ECANCELED`) and
/// NULL.
pub type cot_getaddrinfo_cb = Option<
    unsafe extern "C" fn(
        r#loop: *mut cot_loop,
        req: cot_req,
        status: c_int,
        res: *mut libc::addrinfo,
        data: *mut c_void,
    ),
>;

/// A value moved to a pool thread and back. Raw pointers inside are the
/// caller's, promised usable from the pool (documented on each function).
pub(super) struct Shared<T>(Arc<Mutex<T>>);

// SAFETY: the values (integers and pointers the caller handed over for use on
// the pool) are only touched under the mutex, by one thread at a time.
unsafe impl<T> Send for Shared<T> {}

impl<T> Shared<T> {
    fn new(v: T) -> Shared<T> {
        Shared(Arc::new(Mutex::new(v)))
    }

    pub(super) fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        f(&mut self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        Shared(self.0.clone())
    }
}

/// `-errno` of the last system error.
fn last_error() -> i64 {
    -(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO) as i64)
}

/// Submits `run` (on the pool) as a work request; `done` gets its result, or
/// the cancellation code, on the loop.
///
/// # Safety
/// `loop` is NULL or a live loop; `req` is NULL or writable.
pub(super) unsafe fn submit(
    r#loop: *mut cot_loop,
    run: impl FnOnce() -> i64 + Send + 'static,
    done: impl FnOnce(*mut cot_loop, cot_req, i64) + 'static,
    req: *mut cot_req,
) -> c_int {
    let me = r#loop;
    let result = Shared::new(0i64);
    let out = result.clone();
    let work: crate::reactor::Work = Box::new(move || {
        let r = run();
        out.with(|v| *v = r);
    });
    let after: crate::reactor::After = Box::new(move |lp, r, s| {
        let v = match s {
            Ok(()) => result.with(|v| *v),
            Err(e) => e.code() as i64,
        };
        // SAFETY: `me` wraps `lp` and outlives its requests.
        unsafe { lend(me, lp, || done(me, r.to_raw(), v)) }
    });
    // SAFETY: `loop` is NULL or live (`submit`'s contract), `with_loop`'s need.
    let r = unsafe { with_loop(r#loop, |l| Ok(l.work_submit(work, after).to_raw())) };
    if req.is_null() {
        return status(r.map(drop));
    }
    // SAFETY: `req` is non-NULL (checked above) and writable by the contract.
    unsafe { write_out(req, r) }
}

/// `done` for the file requests: calls the user's callback.
fn fs_done(cb: FsFn, data: *mut c_void) -> impl FnOnce(*mut cot_loop, cot_req, i64) + 'static {
    move |lp, r, v| {
        // SAFETY: `cb` may be called from the loop (the submitter's contract).
        unsafe { cb(lp, r, v, data) }
    }
}

type FsFn = unsafe extern "C" fn(*mut cot_loop, cot_req, i64, *mut c_void);

/// A path argument copied for the pool.
///
/// # Safety
/// `path` is NULL or a NUL-terminated string.
unsafe fn path_arg(path: *const c_char) -> Result<CString> {
    if path.is_null() {
        return Err(Error::Inval);
    }
    // SAFETY: non-null and NUL-terminated (caller's contract).
    Ok(unsafe { CStr::from_ptr(path) }.to_owned())
}

/// Opens `path` on the pool (`open(2)` with `flags` and `mode`; `O_CLOEXEC`
/// is added); `cb` gets the descriptor or the error. The path is copied.
/// Returns 0 or `COT_EINVAL` (NULL path or callback).
///
/// # Safety
/// `loop` is NULL or a live loop; `path` is NULL or a C string; `req` is NULL
/// or writable; `cb` may be called from `cot_loop_run`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_fs_open(
    r#loop: *mut cot_loop,
    path: *const c_char,
    flags: c_int,
    mode: c_int,
    cb: cot_fs_cb,
    data: *mut c_void,
    req: *mut cot_req,
) -> c_int {
    // SAFETY: `path` is NULL or a C string (the contract): what `path_arg` needs.
    let (Ok(path), Some(cb)) = (unsafe { path_arg(path) }, cb) else { return Error::Inval.code() };
    let run = move || {
        // SAFETY: `path` is a valid C string owned by this closure.
        let fd = unsafe { libc::open(path.as_ptr(), flags | libc::O_CLOEXEC, mode as libc::c_uint) };
        if fd < 0 { last_error() } else { fd as i64 }
    };
    // SAFETY: `submit` wants `loop` NULL or live and `req` NULL or writable, as
    // `cot_fs_open`'s contract says; `cb` may be called from the loop.
    unsafe { submit(r#loop, run, fs_done(cb, data), req) }
}

/// A read (`write` false) or write of `len` bytes at `buf`, at `offset`.
struct Transfer {
    fd: c_int,
    buf: *mut c_void,
    len: usize,
    offset: i64,
    write: bool,
}

/// Runs a transfer on the pool.
///
/// # Safety
/// As `cot_fs_read` / `cot_fs_write`.
unsafe fn transfer(r#loop: *mut cot_loop, t: Transfer, cb: cot_fs_cb, data: *mut c_void, req: *mut cot_req) -> c_int {
    let Transfer { fd, buf, len, offset, write } = t;
    let (Some(cb), false) = (cb, buf.is_null() && len > 0) else { return Error::Inval.code() };
    let buf = Shared::new(buf);
    let run = move || {
        buf.with(|&mut b| {
            // SAFETY: `b` is valid for `len` bytes until the callback (the
            // caller's contract); a write only reads it.
            let n = unsafe {
                match (write, offset < 0) {
                    (false, true) => libc::read(fd, b, len),
                    (false, false) => libc::pread(fd, b, len, offset as libc::off_t),
                    (true, true) => libc::write(fd, b, len),
                    (true, false) => libc::pwrite(fd, b, len, offset as libc::off_t),
                }
            };
            if n < 0 { last_error() } else { n as i64 }
        })
    };
    // SAFETY: this function's contract is `cot_fs_read`'s or `cot_fs_write`'s, which
    // covers `submit`'s (`loop` and `req`).
    unsafe { submit(r#loop, run, fs_done(cb, data), req) }
}

/// Reads up to `len` bytes from `fd` at `offset` (-1: the current position)
/// into `buf`, on the pool; `cb` gets the count (0 at end of file) or the
/// error. Returns 0 or `COT_EINVAL`.
///
/// # Safety
/// `loop` is NULL or a live loop; `buf` is valid for writing `len` bytes, from
/// a pool thread, until `cb` ran; `req` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_fs_read(
    r#loop: *mut cot_loop,
    fd: c_int,
    buf: *mut c_void,
    len: usize,
    offset: i64,
    cb: cot_fs_cb,
    data: *mut c_void,
    req: *mut cot_req,
) -> c_int {
    // SAFETY: `transfer` asks for `cot_fs_read`'s contract, which this is: `buf` stays
    // writable for `len` bytes until `cb` ran.
    unsafe { transfer(r#loop, Transfer { fd, buf, len, offset, write: false }, cb, data, req) }
}

/// Writes `len` bytes of `buf` to `fd` at `offset` (-1: the current
/// position), on the pool; `cb` gets the count written or the error. Returns
/// 0 or `COT_EINVAL`.
///
/// # Safety
/// `loop` is NULL or a live loop; `buf` is valid for reading `len` bytes, from
/// a pool thread, until `cb` ran; `req` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_fs_write(
    r#loop: *mut cot_loop,
    fd: c_int,
    buf: *const c_void,
    len: usize,
    offset: i64,
    cb: cot_fs_cb,
    data: *mut c_void,
    req: *mut cot_req,
) -> c_int {
    // SAFETY: `transfer` asks for `cot_fs_write`'s contract, which this is:
    // `buf` is readable for `len` bytes, and a write only reads it.
    unsafe { transfer(r#loop, Transfer { fd, buf: buf as *mut c_void, len, offset, write: true }, cb, data, req) }
}

/// Closes `fd` on the pool; `cb` gets 0 or the error. Returns 0 or `COT_EINVAL`.
///
/// # Safety
/// `loop` is NULL or a live loop; `req` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_fs_close(
    r#loop: *mut cot_loop,
    fd: c_int,
    cb: cot_fs_cb,
    data: *mut c_void,
    req: *mut cot_req,
) -> c_int {
    let Some(cb) = cb else { return Error::Inval.code() };
    let run = move || {
        // SAFETY: closing a descriptor the caller handed over.
        if unsafe { libc::close(fd) } < 0 { last_error() } else { 0 }
    };
    // SAFETY: closing needs no memory of the caller: `submit` only wants `loop` NULL
    // or live and `req` NULL or writable (the contract).
    unsafe { submit(r#loop, run, fs_done(cb, data), req) }
}

/// Fills `*st` with `stat(2)` of `path`, on the pool; `cb` gets 0 or the
/// error. The path is copied. Returns 0 or `COT_EINVAL`.
///
/// # Safety
/// `loop` is NULL or a live loop; `path` is NULL or a C string; `st` is valid
/// for writing, from a pool thread, until `cb` ran; `req` is NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_fs_stat(
    r#loop: *mut cot_loop,
    path: *const c_char,
    st: *mut libc::stat,
    cb: cot_fs_cb,
    data: *mut c_void,
    req: *mut cot_req,
) -> c_int {
    // SAFETY: `path_arg` reads `path`, NULL or a C string by `cot_fs_stat`'s contract.
    let (Ok(path), Some(cb), false) = (unsafe { path_arg(path) }, cb, st.is_null()) else {
        return Error::Inval.code();
    };
    let st = Shared::new(st);
    let run = move || {
        st.with(|&mut s| {
            // SAFETY: `path` is owned here; `s` is writable until the callback.
            if unsafe { libc::stat(path.as_ptr(), s) } < 0 { last_error() } else { 0 }
        })
    };
    // SAFETY: the `stat` job writes `st`, valid until `cb` ran (the contract); `submit`
    // needs `loop` NULL or live and `req` NULL or writable, given too.
    unsafe { submit(r#loop, run, fs_done(cb, data), req) }
}

/// The C ABI code of a `getaddrinfo` failure.
fn eai_error(e: c_int) -> c_int {
    match e {
        libc::EAI_AGAIN => Error::EaiAgain.code(),
        libc::EAI_FAMILY => Error::EaiFamily.code(),
        libc::EAI_NONAME | libc::EAI_NODATA => Error::EaiNoname.code(),
        libc::EAI_SERVICE => Error::EaiService.code(),
        libc::EAI_MEMORY => Error::NoMem.code(),
        libc::EAI_SYSTEM => last_error() as c_int,
        _ => Error::EaiFail.code(),
    }
}

/// Resolves `node` and/or `service` (either may be NULL, not both) with
/// `getaddrinfo(3)` on the pool, with `hints` (may be NULL; copied). `cb` gets
/// 0 and the list (free it with `freeaddrinfo`) or a negative code
/// (`COT_EAI_NONAME`, ...) and NULL. The strings are copied. Returns 0 or
/// `COT_EINVAL`.
///
/// # Safety
/// `loop` is NULL or a live loop; `node`, `service` are NULL or C strings;
/// `hints` is NULL or valid; `req` is NULL or writable; `cb` may be called
/// from `cot_loop_run`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_getaddrinfo(
    r#loop: *mut cot_loop,
    node: *const c_char,
    service: *const c_char,
    hints: *const libc::addrinfo,
    cb: cot_getaddrinfo_cb,
    data: *mut c_void,
    req: *mut cot_req,
) -> c_int {
    let Some(cb) = cb else { return Error::Inval.code() };
    // SAFETY: `lookup_job` reads `node`, `service` and `hints`, each NULL or valid by
    // this function's contract.
    let Ok((run, result)) = (unsafe { lookup_job(node, service, hints) }) else { return Error::Inval.code() };
    let done = move |lp: *mut cot_loop, r: cot_req, v: i64| {
        let (code, res) = if v < 0 { (v as c_int, std::ptr::null_mut()) } else { result.with(|v| *v) };
        // SAFETY: `cot_getaddrinfo`'s contract lets the loop call `cb` with the list.
        unsafe { cb(lp, r, code, res, data) }
    };
    // SAFETY: `loop` is NULL or live and `req` NULL or writable, as `submit` needs:
    // `cot_getaddrinfo`'s contract.
    unsafe { submit(r#loop, run, done, req) }
}

/// What a lookup leaves: 0 and its list, or a negative code and NULL.
pub(super) type Found = Shared<(c_int, *mut libc::addrinfo)>;

/// A `getaddrinfo(3)` job for the pool (the strings and hints copied), and
/// where it leaves its result. `Error::Inval` if `node` and `service` are
/// both NULL.
///
/// # Safety
/// `node`, `service` are NULL or C strings; `hints` is NULL or valid.
pub(super) unsafe fn lookup_job(
    node: *const c_char,
    service: *const c_char,
    hints: *const libc::addrinfo,
) -> Result<(impl FnOnce() -> i64 + Send + 'static, Found)> {
    if node.is_null() && service.is_null() {
        return Err(Error::Inval);
    }
    // SAFETY: NULL or C strings (caller's contract).
    let (node, service) = unsafe { (path_arg(node).ok(), path_arg(service).ok()) };
    // SAFETY: `hints` is NULL or valid; only the four input fields are copied.
    let hints = unsafe { hints.as_ref() }.map(|h| (h.ai_flags, h.ai_family, h.ai_socktype, h.ai_protocol));
    let result = Shared::new((0 as c_int, std::ptr::null_mut::<libc::addrinfo>()));
    let out = result.clone();
    let run = move || {
        // SAFETY: a zeroed addrinfo is a valid "no hints" value; the strings
        // are owned here; getaddrinfo writes the list pointer into `res`.
        let (code, res) = unsafe {
            let mut h: libc::addrinfo = std::mem::zeroed();
            if let Some((flags, family, socktype, protocol)) = hints {
                (h.ai_flags, h.ai_family, h.ai_socktype, h.ai_protocol) = (flags, family, socktype, protocol);
            }
            let mut res = std::ptr::null_mut();
            let n = node.as_ref().map_or(std::ptr::null(), |s| s.as_ptr());
            let s = service.as_ref().map_or(std::ptr::null(), |s| s.as_ptr());
            let e = libc::getaddrinfo(n, s, &h, &mut res);
            (if e == 0 { 0 } else { eai_error(e) }, res)
        };
        out.with(|v| *v = (code, res));
        0
    };
    Ok((run, result))
}
