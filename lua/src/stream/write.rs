//! `f:write(...)` and `f:seek(...)`: a file writes and seeks in a job; a
//! pipe writes until it would block, then waits for readiness (the offset
//! written so far is in the frame).

use std::ffi::c_int;

use cothread::os::fd;

use super::object::{In, Out, Spec, StreamOp, check_open, data_of, failed, lock, open_core};
use crate::cfn;
use crate::engine::{Frame, READ, WRITE};
use crate::lua::{Lua, Ret, lua_Integer};
use crate::park::drive;

cfn!(pub(super) stream_write = write_body);

/// `f:write(...)`: writes strings and numbers; returns `f`, or
/// `nil, message, errno`.
fn write_body(lua: &mut Lua) -> Ret {
    check_open(lua, 1)?;
    let n = lua.top();
    for i in 2..=n {
        lua.check_bytes(i)?;
    }
    let mut data = Vec::new();
    for i in 2..=n {
        data.extend_from_slice(lua.to_bytes(i).unwrap_or_default());
    }
    lua.set_top(1);
    lua.push_owned(data);
    lua.push_int(0); // stream data offset
    drive(lua, StreamOp::new(write_step, WRITE))
}

/// Writes the data of the frame (1 stream, 2 data, 3 bytes written).
fn write_step(f: &mut Frame, w: In) -> Out {
    if let In::Job(Ok(_)) = w {
        f.lua.set_top(f.at(1));
        return Out::Done(1); // the stream
    }
    if let Some(out) = failed(f, 3, w) {
        return out;
    }
    let Some((core, pipe)) = open_core(f) else { return Out::Done(f.lua.fail(c"closed")) };
    let mut off = f.lua.to_int(f.at(3)).unwrap_or(0) as usize;
    if !pipe {
        return Out::Job(Spec::Write(off));
    }
    let fd = lock(&core).fd;
    drop(core); // no reference of ours is held while Lua allocates
    let len = data_of(f).len();
    while off < len {
        match fd::write_pipe(fd, &data_of(f)[off..]) {
            Ok(n) => off += n,
            Err(libc::EAGAIN) => {
                f.lua.push_int(off as lua_Integer);
                f.lua.replace(f.at(3));
                return Out::Wait;
            }
            Err(e) => {
                f.lua.set_top(f.at(3));
                return Out::Done(f.lua.fail_errno(e, None));
            }
        }
    }
    f.lua.set_top(f.at(1));
    Out::Done(1)
}

// ----- seek -----

cfn!(pub(super) stream_seek = seek_body);

/// `f:seek([whence [, offset]])`: "set", "cur" (default) or "end", and an
/// offset (default 0); returns the new position from the start.
fn seek_body(lua: &mut Lua) -> Ret {
    check_open(lua, 1)?;
    let whence = [libc::SEEK_SET, libc::SEEK_CUR, libc::SEEK_END]
        [lua.check_option(2, Some(c"cur"), &[c"set", c"cur", c"end"]).map_err(|_| invalid_option())?];
    let off = lua.opt_int(3, 0)?;
    lua.set_top(1);
    lua.push_int(whence as lua_Integer);
    lua.push_int(off);
    drive(lua, StreamOp::new(seek_step, READ))
}

/// `io`'s message for a bad `whence` (it names no option).
fn invalid_option() -> crate::lua::Error {
    crate::lua::Error::arg(2, c"invalid option")
}

/// Seeks (frame: 1 stream, 2 whence, 3 offset).
fn seek_step(f: &mut Frame, w: In) -> Out {
    if let In::Job(Ok(pos)) = w {
        f.lua.set_top(f.base);
        f.lua.push_int(pos as lua_Integer);
        return Out::Done(1);
    }
    if let Some(out) = failed(f, 3, w) {
        return out;
    }
    if open_core(f).is_none() {
        return Out::Done(f.lua.fail(c"closed"));
    }
    let whence = f.lua.to_int(f.at(2)).unwrap_or(0) as c_int;
    let off = f.lua.to_int(f.at(3)).unwrap_or(0);
    Out::Job(Spec::Seek(whence, off))
}
