//! `f:read(...)` and `f:lines(...)`: Lua's read formats over a stream's
//! buffer (`reader`), answered one after the other; a format the buffer
//! cannot answer yet asks for a fill (a job for a file, readiness for a
//! pipe), and the answers so far wait in the frame.

use std::ffi::{CStr, c_int};
use std::sync::TryLockError;

use super::{In, Kind, Out, Spec, Stream, StreamOp, check_open, failed, open_stream};
use crate::engine::{Frame, STEP_SLOTS};
use crate::park::drive_raw;
use crate::raw::{self, L, ffi};
use crate::reader::Format;

/// Formats `lines` accepts (Lua's `MAXARGLINE`).
const MAX_LINE_ARGS: c_int = 250;

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
pub(super) unsafe fn parse_format(l: L, idx: c_int) -> Option<Format> {
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
pub(super) unsafe extern "C-unwind" fn stream_read(l: L) -> c_int {
    // SAFETY: `check_open` returns an open stream or raises; the formats are
    // checked before the frame is built in the function's own stack.
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
        drive_raw(l, StreamOp::new(Kind::Read))
    }
}

/// Reads the formats of the frame (1 stream, 2 count k, then the formats,
/// then the answers so far).
pub(super) unsafe fn step(f: &Frame, w: In) -> Out {
    // SAFETY: the frame of a read; no guard or vector local is alive when a
    // push raises (the answer is kept in the stream's `out`).
    unsafe {
        let l = f.l();
        let k = ffi::lua_tointegerx(l, f.at(2), std::ptr::null_mut()) as c_int;
        if let Some(out) = failed(f, k + 2, w) {
            return out;
        }
        let Some(s) = open_stream(f) else {
            ffi::lua_settop(l, f.at(k + 2));
            return Out::Done(raw::push_fail(l, c"closed"));
        };
        // Room for the answers still to come (the step has `STEP_SLOTS`).
        let left = k - (ffi::lua_gettop(l) - f.at(k + 2));
        if left > STEP_SLOTS - 4 {
            raw::check_stack(l, left + 4);
        }
        loop {
            let done = ffi::lua_gettop(l) - f.at(k + 2);
            if done >= k {
                return Out::Done(k);
            }
            let fmt = parse_format(l, f.at(3 + done)).expect("checked");
            let core = (*s).core.as_ref().expect("open");
            let mut g = match core.try_lock() {
                Ok(g) => g,
                Err(TryLockError::Poisoned(e)) => e.into_inner(),
                // A job holds it: this read waits its turn in a job.
                Err(TryLockError::WouldBlock) => return Out::Job(Spec::Fill(fmt)),
            };
            if g.rd.ready(fmt) {
                (*s).out.clear();
                let ok = g.rd.take(fmt, &mut (*s).out);
                drop(g);
                if !push_answer(l, s, fmt, ok) {
                    return Out::Done(done + 1);
                }
                continue;
            }
            if !(*s).pipe {
                return Out::Job(Spec::Fill(fmt));
            }
            let fd = g.fd;
            match g.rd.fill(fd) {
                Ok(_) => {}
                Err(libc::EAGAIN) => return Out::Wait,
                Err(e) => {
                    drop(g);
                    ffi::lua_settop(l, f.at(k + 2));
                    return Out::Done(raw::push_errno(l, e, None));
                }
            }
        }
    }
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

/// The maker of the `lines` iterators seen by Lua: it wraps the C iterator
/// (`lines_iter`) in a Lua function that raises the message of a failed
/// read, as `io.lines` does. A Lua function, so that the C iterator needs
/// no continuation: it returns what its operation delivered, and the
/// wrapper looks at it.
const LINES: &str = r##"
local error, select = error, select
local function check(a, b, ...)
  if a == nil and b ~= nil then error(b, 0) end
  return a, b, ...
end
return function(iter, k)
  if k == 1 then
    return function()
      local a, b = iter()
      if a == nil and b ~= nil then error(b, 0) end
      return a
    end
  end
  return function() return check(iter()) end
end
"##;

/// `[-0, +0, e]` Sets `lines` in the methods table on the top (its maker of
/// iterators as upvalue).
pub(super) unsafe fn add_lines(l: L) {
    // SAFETY: a valid state with the methods table on the top; pushes are
    // balanced as the comments show.
    unsafe {
        raw::check_stack(l, 3);
        raw::load_chunk(l, LINES, c"=cothread.file.lines");
        ffi::lua_call(l, 0, 1); // methods wrap
        ffi::lua_pushcclosure(l, stream_lines, 1);
        ffi::lua_setfield(l, -2, c"lines".as_ptr());
    }
}

/// `f:lines(...)`: an iterator reading with the formats ("l" by default);
/// it raises on a read error and returns nil at the end (the stream stays open).
unsafe extern "C-unwind" fn stream_lines(l: L) -> c_int {
    // SAFETY: a closure made by `add_lines` (upvalue 1: the maker);
    // `check_open` returns an open stream or raises.
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
        ffi::lua_pushvalue(l, ffi::lua_upvalueindex(1));
        ffi::lua_rotate(l, -2, 1); // wrap iter
        ffi::lua_pushinteger(l, (n - 1).max(1) as ffi::lua_Integer);
        ffi::lua_call(l, 2, 1);
        1
    }
}

/// The C iterator of `lines`: its upvalues are the stream and the formats.
unsafe extern "C-unwind" fn lines_iter(l: L) -> c_int {
    // SAFETY: a closure made by `stream_lines`; the frame is built in its own
    // stack, with room checked for a result per format.
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
        if k + 2 > ffi::LUA_MINSTACK {
            raw::check_stack(l, k + 2); // the frame (`drive` checks what a step needs above it)
        }
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
        drive_raw(l, StreamOp::new(Kind::Read))
    }
}
