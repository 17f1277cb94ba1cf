//! `f:write(...)` and `f:seek(...)`: a file writes and seeks in a job; a
//! pipe writes until it would block, then waits for readiness (the offset
//! written so far is in the frame).

use std::ffi::{CStr, c_int};
use std::os::fd::RawFd;

use super::{In, Inner, Kind, Out, Res, Spec, StreamOp, check_open, failed, lock, open_stream};
use crate::engine::Frame;
use crate::park::drive_raw;
use crate::raw::{self, L, ffi};

/// The data string in slot 2 of a write's frame.
///
/// # Safety
/// `f` is a write's frame; the slice lives as long as the string stays
/// there.
pub(super) unsafe fn data_of<'a>(f: &Frame) -> &'a [u8] {
    // SAFETY: slot 2 holds a string (made by `stream_write`), which stays.
    unsafe {
        let mut len = 0;
        let p = ffi::lua_tolstring(f.l(), f.at(2), &mut len) as *const u8;
        std::slice::from_raw_parts(p, len)
    }
}

/// `f:write(...)`: writes strings and numbers; returns `f`, or
/// `nil, message, errno`.
pub(super) unsafe extern "C-unwind" fn stream_write(l: L) -> c_int {
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
        drive_raw(l, StreamOp::new(Kind::Write))
    }
}

/// Writes the data of the frame (1 stream, 2 data, 3 bytes written).
pub(super) unsafe fn write_step(f: &Frame, w: In) -> Out {
    // SAFETY: the frame of a write; the data string stays in slot 2.
    unsafe {
        let l = f.l();
        if let In::Job(Ok(_)) = w {
            ffi::lua_settop(l, f.at(1));
            return Out::Done(1); // the stream
        }
        if let Some(out) = failed(f, 3, w) {
            return out;
        }
        let Some(s) = open_stream(f) else { return Out::Done(raw::push_fail(l, c"closed")) };
        let data = data_of(f);
        let mut off = ffi::lua_tointegerx(l, f.at(3), std::ptr::null_mut()) as usize;
        if !(*s).pipe {
            return Out::Job(Spec::Write(off));
        }
        let fd = lock((*s).core.as_ref().expect("open")).fd;
        while off < data.len() {
            match write_pipe(fd, &data[off..]) {
                Ok(n) => off += n,
                Err(libc::EAGAIN) => {
                    ffi::lua_pushinteger(l, off as ffi::lua_Integer);
                    ffi::lua_replace(l, f.at(3));
                    return Out::Wait;
                }
                Err(e) => {
                    ffi::lua_settop(l, f.at(3));
                    return Out::Done(raw::push_errno(l, e, None));
                }
            }
        }
        ffi::lua_settop(l, f.at(1));
        Out::Done(1)
    }
}

/// Writes all of `data` to a file (after moving back over what was read
/// ahead, as stdio does between a read and a write).
pub(super) fn write_file(inner: &mut Inner, mut data: &[u8]) -> Res {
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
pub(super) unsafe extern "C-unwind" fn stream_seek(l: L) -> c_int {
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
        drive_raw(l, StreamOp::new(Kind::Seek))
    }
}

/// Seeks (frame: 1 stream, 2 whence, 3 offset).
pub(super) unsafe fn seek_step(f: &Frame, w: In) -> Out {
    // SAFETY: the frame of a seek.
    unsafe {
        let l = f.l();
        if let In::Job(Ok(pos)) = w {
            ffi::lua_settop(l, f.base);
            ffi::lua_pushinteger(l, pos as ffi::lua_Integer);
            return Out::Done(1);
        }
        if let Some(out) = failed(f, 3, w) {
            return out;
        }
        if open_stream(f).is_none() {
            return Out::Done(raw::push_fail(l, c"closed"));
        }
        let whence = ffi::lua_tointegerx(l, f.at(2), std::ptr::null_mut()) as c_int;
        let off = ffi::lua_tointegerx(l, f.at(3), std::ptr::null_mut());
        Out::Job(Spec::Seek(whence, off))
    }
}

/// Seeks the descriptor of `inner`; the new position.
pub(super) fn seek_file(inner: &mut Inner, whence: c_int, off: i64) -> Res {
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
