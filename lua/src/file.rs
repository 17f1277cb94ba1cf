//! `cothread.file`: files on the loop's thread pool, as Lua's `io` library
//! opens them. `open` and `stat` run their system call in a pool job when
//! called from a cothread (synchronously elsewhere); the file objects are the
//! streams of `stream`.

use std::ffi::{CStr, OsString, c_int};
use std::fs::{Metadata, OpenOptions};
use std::os::fd::{IntoRawFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use crate::cfn;
use crate::engine::{Frame, Payload};
use crate::lua::{Error, Lua, Reg, Ret};
use crate::stream;
use crate::work;

/// Registry field caching the module table.
const MODULE: &CStr = c"cothread.file.module";

/// How `io.open`'s `mode` opens a file ("r", "w", "a", with "+" and any
/// "b"s), or `None` for an invalid mode. Files are made with mode 0666 (less
/// the umask) and closed on exec, as `fopen` does.
fn open_options(mode: &[u8]) -> Option<OpenOptions> {
    let (first, rest) = mode.split_first()?;
    let (plus, rest) = match rest.split_first() {
        Some((b'+', r)) => (true, r),
        _ => (false, rest),
    };
    if !rest.iter().all(|&c| c == b'b') {
        return None;
    }
    let mut o = OpenOptions::new();
    match first {
        b'r' => o.read(true).write(plus),
        b'w' => o.write(true).read(plus).create(true).truncate(true),
        b'a' => o.append(true).read(plus).create(true),
        _ => return None,
    };
    Some(o)
}

/// An `io::Error`'s errno (`EINVAL` for a path with a NUL byte, which
/// `std` refuses before any system call).
fn errno_of(e: std::io::Error) -> i32 {
    e.raw_os_error().unwrap_or(libc::EINVAL)
}

/// The path in frame slot 1, all its bytes.
fn path_of(f: &Frame) -> PathBuf {
    PathBuf::from(OsString::from_vec(f.lua.to_bytes(f.at(1)).unwrap_or_default().to_vec()))
}

/// `[-0, +3, m]` Pushes `nil, "path: message", errno`, the path at `path`.
fn fail_path(lua: &Lua, path: c_int, errno: i32) -> c_int {
    lua.fail_errno(errno, Some(lua.to_cstr(path).unwrap_or_default()))
}

cfn!(open = open_body);

/// `cothread.file.open(path [, mode])`: a file object, or `nil, message,
/// errno`. The modes of `io.open`.
fn open_body(lua: &mut Lua) -> Ret {
    lua.check_bytes(1)?;
    let mode = lua.opt_bytes(2, b"r")?;
    if open_options(mode).is_none() {
        return Err(Error::arg(2, c"invalid mode"));
    }
    lua.set_top(2); // path mode
    let make = |f: &Frame| -> crate::engine::Job {
        let path = path_of(f);
        let options = open_options(f.lua.to_bytes(f.at(2)).unwrap_or(b"r"));
        Box::new(move || -> Payload {
            let r: Result<OwnedFd, i32> = match options {
                Some(o) => o.open(&path).map(OwnedFd::from).map_err(errno_of),
                None => Err(libc::EINVAL),
            };
            Box::new(r)
        })
    };
    work::call(lua, make, open_done)
}

/// Pushes the stream an open made, or its failure.
fn open_done(lua: &mut Lua, base: c_int, r: Result<&mut Payload, &'static CStr>) -> c_int {
    let at1 = base + 1;
    // The descriptor leaves the payload (an `OwnedFd` that would close it)
    // for the stream, which owns it from then.
    match r.map(|p| p.downcast_mut::<Result<OwnedFd, i32>>().map(|r| std::mem::replace(r, Err(0)))) {
        Ok(Some(Ok(fd))) => {
            stream::push_stream(lua, fd.into_raw_fd(), false);
            1
        }
        Ok(Some(Err(e))) => fail_path(lua, at1, e),
        Ok(None) => lua.fail(c"cancelled"),
        Err(m) => lua.fail(m),
    }
}

cfn!(stat = stat_body);

/// `cothread.file.stat(path)`: a table of the file's attributes (named as
/// LuaFileSystem's `attributes`), or `nil, message, errno`.
fn stat_body(lua: &mut Lua) -> Ret {
    lua.check_bytes(1)?;
    lua.set_top(1);
    let make = |f: &Frame| -> crate::engine::Job {
        let path = path_of(f);
        Box::new(move || -> Payload {
            let r: Result<Metadata, i32> = std::fs::metadata(&path).map_err(errno_of);
            Box::new(r)
        })
    };
    work::call(lua, make, stat_done)
}

/// Pushes the attributes a stat found, or its failure.
fn stat_done(lua: &mut Lua, base: c_int, r: Result<&mut Payload, &'static CStr>) -> c_int {
    let at1 = base + 1;
    match r.map(|p| p.downcast_ref::<Result<Metadata, i32>>()) {
        Ok(Some(Ok(st))) => {
            push_stat(lua, st);
            1
        }
        Ok(Some(Err(e))) => fail_path(lua, at1, *e),
        Ok(None) => lua.fail(c"cancelled"),
        Err(m) => lua.fail(m),
    }
}

/// The type of a file mode, as LuaFileSystem names it.
fn type_name(mode: u32) -> &'static CStr {
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
fn push_stat(lua: &mut Lua, st: &Metadata) {
    lua.new_table(0, 14);
    lua.push_bytes(type_name(st.mode()).to_bytes());
    lua.set_field(-2, c"mode");
    let mut perm = [b'-'; 9];
    for (i, c) in b"rwxrwxrwx".iter().enumerate() {
        if st.mode() & (0o400 >> i) != 0 {
            perm[i] = *c;
        }
    }
    lua.push_bytes(&perm);
    lua.set_field(-2, c"permissions");
    let ints: [(&CStr, u64); 10] = [
        (c"size", st.size()),
        (c"dev", st.dev()),
        (c"ino", st.ino()),
        (c"nlink", st.nlink()),
        (c"uid", st.uid() as u64),
        (c"gid", st.gid() as u64),
        (c"rdev", st.rdev()),
        (c"blocks", st.blocks()),
        (c"blksize", st.blksize()),
        (c"bits", (st.mode() & 0o7777) as u64),
    ];
    for (name, v) in ints {
        lua.push_int(v as i64);
        lua.set_field(-2, name);
    }
    let times = [
        (c"access", st.atime(), st.atime_nsec()),
        (c"modification", st.mtime(), st.mtime_nsec()),
        (c"change", st.ctime(), st.ctime_nsec()),
    ];
    for (name, s, ns) in times {
        lua.push_num(s as f64 + ns as f64 * 1e-9);
        lua.set_field(-2, name);
    }
}

cfn!(file_type = file_type_body);

/// `cothread.file.type(x)`: "file" for an open file (or pipe), "closed
/// file" for a closed one, else nil (as `io.type`).
fn file_type_body(lua: &mut Lua) -> Ret {
    lua.check_any(1)?;
    match stream::open_at(lua, 1) {
        None => lua.push_nil(),
        Some(open) => lua.push_bytes(if open { b"file" } else { b"closed file" }),
    }
    Ok(1)
}

const FUNCTIONS: &[Reg] = &[(c"open", open), (c"stat", stat), (c"type", file_type)];

/// `[-0, +1, m]` Pushes the `cothread.file` table (one per Lua state).
pub fn push_module(lua: &mut Lua) -> Result<(), Error> {
    lua.push_once(MODULE, |lua| {
        stream::register(lua)?;
        lua.push_functions(FUNCTIONS);
        Ok(())
    })
}
