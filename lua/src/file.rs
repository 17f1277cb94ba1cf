//! `cothread.file`: files on the loop's thread pool, as Lua's `io` library
//! opens them. `open` and `stat` run their system call in a pool job when
//! called from a cothread (synchronously elsewhere); the file objects are the
//! streams of `stream`.

use std::ffi::{CStr, c_int};
use std::os::fd::{FromRawFd, IntoRawFd, OwnedFd};

use crate::engine::{Frame, Job, Payload};
use crate::raw::{self, L, ffi};
use crate::stream::{self, STREAM};
use crate::work;

/// Registry field caching the module table.
const MODULE: &CStr = c"cothread.file.module";

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

/// The path in frame slot 1 (a string: checked by the function).
unsafe fn path_arg(f: &Frame) -> &CStr {
    // SAFETY: slot 1 holds a string (checked), which stays there.
    unsafe { CStr::from_ptr(ffi::lua_tolstring(f.l, f.at(1), std::ptr::null_mut())) }
}

/// `cothread.file.open(path [, mode])`: a file object, or `nil, message,
/// errno`. The modes of `io.open`.
unsafe extern "C-unwind" fn open(l: L) -> c_int {
    // SAFETY: a module function; the frame (path, flags) is built in its own
    // stack.
    unsafe {
        ffi::luaL_checklstring(l, 1, std::ptr::null_mut());
        let mode = CStr::from_ptr(ffi::luaL_optlstring(l, 2, c"r".as_ptr(), std::ptr::null_mut()));
        let Some(flags) = open_flags(mode.to_bytes()) else { raw::arg_error(l, 2, c"invalid mode") };
        ffi::lua_settop(l, 1);
        ffi::lua_pushinteger(l, flags as ffi::lua_Integer); // path flags
        let make = |f: &Frame| -> Job {
            let path = path_arg(f).to_owned();
            let flags = ffi::lua_tointegerx(f.l, f.at(2), std::ptr::null_mut()) as c_int;
            Box::new(move || open_job(&path, flags))
        };
        work::call(l, make, open_done)
    }
}

/// Pushes the stream an open made, or its failure.
unsafe fn open_done(f: &Frame, r: Result<&mut Payload, &'static CStr>) -> c_int {
    // SAFETY: a finish of `work::call`; the descriptor leaves the payload (an
    // `OwnedFd` that would close it) for the stream, which owns it from then.
    unsafe {
        match r.map(|p| p.downcast_mut::<Result<OwnedFd, i32>>().map(|r| std::mem::replace(r, Err(0)))) {
            Ok(Some(Ok(fd))) => {
                stream::push_stream(f.l, fd.into_raw_fd(), false);
                1
            }
            Ok(Some(Err(e))) => raw::push_errno(f.l, e, Some(path_arg(f))),
            Ok(None) => raw::push_fail(f.l, c"cancelled"),
            Err(m) => raw::push_fail(f.l, m),
        }
    }
}

/// `cothread.file.stat(path)`: a table of the file's attributes (named as
/// LuaFileSystem's `attributes`), or `nil, message, errno`.
unsafe extern "C-unwind" fn stat(l: L) -> c_int {
    // SAFETY: a module function; the frame (the path) is its own stack.
    unsafe {
        ffi::luaL_checklstring(l, 1, std::ptr::null_mut());
        ffi::lua_settop(l, 1);
        let make = |f: &Frame| -> Job {
            let path = path_arg(f).to_owned();
            Box::new(move || stat_job(&path))
        };
        work::call(l, make, stat_done)
    }
}

/// Pushes the attributes a stat found, or its failure.
unsafe fn stat_done(f: &Frame, r: Result<&mut Payload, &'static CStr>) -> c_int {
    // SAFETY: a finish of `work::call`; the `stat` is plain data.
    unsafe {
        match r.map(|p| p.downcast_ref::<Result<libc::stat, i32>>()) {
            Ok(Some(Ok(st))) => {
                push_stat(f.l, st);
                1
            }
            Ok(Some(Err(e))) => raw::push_errno(f.l, *e, Some(path_arg(f))),
            Ok(None) => raw::push_fail(f.l, c"cancelled"),
            Err(m) => raw::push_fail(f.l, m),
        }
    }
}

/// Opens `path`: the descriptor (closed if nobody takes it) or the errno.
fn open_job(path: &CStr, flags: c_int) -> Payload {
    // SAFETY: `path` is a valid C string.
    let fd = unsafe { libc::open(path.as_ptr(), flags, 0o666 as libc::c_uint) };
    // SAFETY: a descriptor just opened, owned by nobody else.
    let r: Result<OwnedFd, i32> = if fd < 0 { Err(errno()) } else { Ok(unsafe { OwnedFd::from_raw_fd(fd) }) };
    Box::new(r)
}

/// The attributes of `path` or the errno.
fn stat_job(path: &CStr) -> Payload {
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
