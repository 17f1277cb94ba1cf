//! `cothread.file`: files on the loop's thread pool, as Lua's `io` library
//! opens them. `open` and `stat` run their system call in a pool job when
//! called from a cothread (synchronously elsewhere); the file objects are the
//! streams of `stream`.

use std::ffi::{CStr, CString, c_int};
use std::os::fd::{FromRawFd, IntoRawFd, OwnedFd};

use crate::io::JobResult;
use crate::park::{self, cothread_of};
use crate::raw::{self, L, ffi};
use crate::state;
use crate::stream::{self, STREAM};

/// Registry field caching the module table.
const MODULE: &CStr = c"cothread.file.module";

const OP_OPEN: u8 = 1;
const OP_STAT: u8 = 2;

/// The flags of an `io.open` mode ("r", "w", "a", with "+" and any "b"s),
/// or `None` for an invalid mode.
fn open_flags(mode: &[u8]) -> Option<c_int> {
    let (first, rest) = mode.split_first()?;
    let (plus, rest) = match rest.split_first() {
        Some((b'+', r)) => (true, r),
        _ => (false, rest),
    };
    if !rest.iter().all(|&c| c == b'b') {
        return None;
    }
    let access = if plus {
        libc::O_RDWR
    } else if *first == b'r' {
        libc::O_RDONLY
    } else {
        libc::O_WRONLY
    };
    let extra = match first {
        b'r' => 0,
        b'w' => libc::O_CREAT | libc::O_TRUNC,
        b'a' => libc::O_CREAT | libc::O_APPEND,
        _ => return None,
    };
    Some(access | extra | libc::O_CLOEXEC)
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

/// Runs `job` in a pool job if the caller is a cothread (then it yields, and
/// `continuation` hands the result to `done`), else at once.
unsafe fn run(l: L, op: u8, job: impl FnOnce() -> JobResult + Send + 'static) -> c_int {
    // SAFETY: a C function of the module; the loop was made by the caller
    // (`prepare`), so nothing raises while `job` is alive.
    unsafe {
        match cothread_of(l) {
            Some((p, task)) => {
                let m = park::park(l, p, op, continuation, move |io| Ok(io.begin_job(task, job)));
                park::push_fail(l, m)
            }
            None => done(l, op, Some(job())),
        }
    }
}

/// Makes the scheduler's loop before a job exists (it may raise).
unsafe fn prepare(l: L) {
    // SAFETY: valid state.
    unsafe {
        if let Some((p, _)) = cothread_of(l) {
            state::io_of(l, p);
        }
    }
}

unsafe extern "C-unwind" fn continuation(l: L, _status: c_int, ctx: ffi::lua_KContext) -> c_int {
    // SAFETY: the frame of `open` or `stat` as `park` left it.
    unsafe {
        let (op, outcome, result) = park::unpark(l, ctx);
        match outcome {
            crate::io::Outcome::Ready if result.is_some() => done(l, op, result),
            crate::io::Outcome::Timeout => park::push_fail(l, c"timeout"),
            _ => park::push_fail(l, c"cancelled"),
        }
    }
}

/// Pushes the results of operation `op` from its job's result (the path is
/// in slot 1).
unsafe fn done(l: L, op: u8, result: Option<JobResult>) -> c_int {
    // SAFETY: the frame of `open` or `stat`; the job's result is consumed
    // before anything is pushed (an `OwnedFd` becomes the stream's).
    unsafe {
        let path = ffi::lua_tolstring(l, 1, std::ptr::null_mut());
        let path = CStr::from_ptr(path);
        let Some(result) = result else { return park::push_fail(l, c"cancelled") };
        if op == OP_OPEN {
            match result.downcast::<Result<OwnedFd, i32>>().map(|b| *b) {
                Ok(Ok(fd)) => {
                    stream::push_stream(l, fd.into_raw_fd(), false);
                    1
                }
                Ok(Err(e)) => park::push_errno(l, e, Some(path)),
                Err(_) => park::push_fail(l, c"cancelled"),
            }
        } else {
            match result.downcast::<Result<libc::stat, i32>>().map(|b| *b) {
                Ok(Ok(st)) => {
                    push_stat(l, &st);
                    1
                }
                Ok(Err(e)) => park::push_errno(l, e, Some(path)),
                Err(_) => park::push_fail(l, c"cancelled"),
            }
        }
    }
}

/// `cothread.file.open(path [, mode])`: a file object, or `nil, message,
/// errno`. The modes of `io.open`.
unsafe extern "C-unwind" fn open(l: L) -> c_int {
    // SAFETY: a function of the module.
    unsafe {
        let path = CStr::from_ptr(ffi::luaL_checklstring(l, 1, std::ptr::null_mut()));
        let mode = CStr::from_ptr(ffi::luaL_optlstring(l, 2, c"r".as_ptr(), std::ptr::null_mut()));
        let Some(flags) = open_flags(mode.to_bytes()) else { raw::arg_error(l, 2, c"invalid mode") };
        ffi::lua_settop(l, 1);
        prepare(l);
        let path = CString::from(path);
        run(l, OP_OPEN, move || open_job(&path, flags))
    }
}

/// `cothread.file.stat(path)`: a table of the file's attributes (named as
/// LuaFileSystem's `attributes`), or `nil, message, errno`.
unsafe extern "C-unwind" fn stat(l: L) -> c_int {
    // SAFETY: a function of the module.
    unsafe {
        let path = CStr::from_ptr(ffi::luaL_checklstring(l, 1, std::ptr::null_mut()));
        ffi::lua_settop(l, 1);
        prepare(l);
        let path = CString::from(path);
        run(l, OP_STAT, move || stat_job(&path))
    }
}

/// Opens `path`: the descriptor (closed if nobody takes it) or the errno.
fn open_job(path: &CStr, flags: c_int) -> JobResult {
    // SAFETY: `path` is a valid C string.
    let fd = unsafe { libc::open(path.as_ptr(), flags, 0o666 as libc::c_uint) };
    // SAFETY: a descriptor just opened, owned by nobody else.
    let r: Result<OwnedFd, i32> = if fd < 0 { Err(errno()) } else { Ok(unsafe { OwnedFd::from_raw_fd(fd) }) };
    Box::new(r)
}

/// The attributes of `path` or the errno.
fn stat_job(path: &CStr) -> JobResult {
    // SAFETY: `st` is plain data, written by stat; `path` is valid.
    let r: Result<libc::stat, i32> = unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::stat(path.as_ptr(), &mut st) < 0 { Err(errno()) } else { Ok(st) }
    };
    Box::new(r)
}

/// The type of a file mode, as LuaFileSystem names it.
fn type_name(mode: libc::mode_t) -> &'static CStr {
    match mode & libc::S_IFMT {
        libc::S_IFREG => c"file",
        libc::S_IFDIR => c"directory",
        libc::S_IFLNK => c"link",
        libc::S_IFSOCK => c"socket",
        libc::S_IFIFO => c"named pipe",
        libc::S_IFCHR => c"char device",
        libc::S_IFBLK => c"block device",
        _ => c"other",
    }
}

/// `[-0, +1, m]` Pushes the attributes table of `st`.
unsafe fn push_stat(l: L, st: &libc::stat) {
    // SAFETY: valid state; balanced pushes.
    unsafe {
        raw::check_stack(l, 3);
        ffi::lua_createtable(l, 0, 14);
        ffi::lua_pushstring(l, type_name(st.st_mode).as_ptr());
        ffi::lua_setfield(l, -2, c"mode".as_ptr());
        let mut perm = [b'-'; 10];
        for (i, c) in b"rwxrwxrwx".iter().enumerate() {
            if st.st_mode & (0o400 >> i) != 0 {
                perm[i] = *c;
            }
        }
        perm[9] = 0;
        ffi::lua_pushstring(l, perm.as_ptr().cast());
        ffi::lua_setfield(l, -2, c"permissions".as_ptr());
        let ints: [(&CStr, i64); 10] = [
            (c"size", st.st_size),
            (c"dev", st.st_dev as i64),
            (c"ino", st.st_ino as i64),
            (c"nlink", st.st_nlink as i64),
            (c"uid", st.st_uid as i64),
            (c"gid", st.st_gid as i64),
            (c"rdev", st.st_rdev as i64),
            (c"blocks", st.st_blocks),
            (c"blksize", st.st_blksize),
            (c"bits", (st.st_mode & 0o7777) as i64),
        ];
        for (name, v) in ints {
            ffi::lua_pushinteger(l, v as ffi::lua_Integer);
            ffi::lua_setfield(l, -2, name.as_ptr());
        }
        let times = [
            (c"access", st.st_atime, st.st_atime_nsec),
            (c"modification", st.st_mtime, st.st_mtime_nsec),
            (c"change", st.st_ctime, st.st_ctime_nsec),
        ];
        for (name, s, ns) in times {
            ffi::lua_pushnumber(l, s as f64 + ns as f64 * 1e-9);
            ffi::lua_setfield(l, -2, name.as_ptr());
        }
    }
}

/// `cothread.file.type(x)`: "file" for an open file (or pipe), "closed
/// file" for a closed one, else nil (as `io.type`).
unsafe extern "C-unwind" fn file_type(l: L) -> c_int {
    // SAFETY: a function of the module.
    unsafe {
        ffi::luaL_checkany(l, 1);
        if ffi::luaL_testudata(l, 1, STREAM.as_ptr()).is_null() {
            ffi::lua_pushnil(l);
        } else {
            ffi::lua_pushstring(l, if stream::is_open(l, 1) { c"file" } else { c"closed file" }.as_ptr());
        }
        1
    }
}

const FUNCTIONS: &[(&CStr, ffi::lua_CFunction)] = &[(c"open", open), (c"stat", stat), (c"type", file_type)];

/// `[-0, +1, m]` Pushes the `cothread.file` table (one per Lua state).
///
/// # Safety
/// `l` is a valid state, in a C function.
pub unsafe fn push_module(l: L) {
    // SAFETY: valid state; `stream::register` leaves the stack as it was.
    unsafe {
        raw::push_module_once(l, MODULE, |l| {
            stream::register(l);
            raw::push_functions(l, FUNCTIONS);
        })
    }
}
