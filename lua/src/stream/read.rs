//! `f:read(...)` and `f:lines(...)`: Lua's read formats over a stream's
//! buffer (`reader`), answered one after the other; a format the buffer
//! cannot answer yet asks for a fill (a job for a file, readiness for a
//! pipe), and the answers so far wait in the frame.

use std::ffi::c_int;
use std::sync::TryLockError;

use super::object::{In, Out, Spec, Stream, StreamOp, check_open, failed, open_core, stream_of};
use crate::cfn;
use crate::engine::{Frame, READ, STEP_SLOTS};
use crate::lua::{Error, Lua, Ret, Type, lua_Integer};
use crate::park::drive;
use crate::reader::Format;

/// Formats `lines` accepts (Lua's `MAXARGLINE`).
const MAX_LINE_ARGS: c_int = 250;

/// Checks the read format at argument `arg`.
fn check_format(lua: &Lua, arg: c_int) -> Result<(), Error> {
    if lua.kind(arg) == Type::Number {
        lua.check_int(arg).map(drop)
    } else if parse_format(lua, arg).is_none() {
        Err(Error::arg(arg, c"invalid format"))
    } else {
        Ok(())
    }
}

/// The read format at `idx` (checked already, or `None`).
fn parse_format(lua: &Lua, idx: c_int) -> Option<Format> {
    if lua.kind(idx) == Type::Number {
        let n = lua.to_int(idx)?;
        return Some(Format::Count(usize::try_from(n).unwrap_or(usize::MAX)));
    }
    let s = lua.to_bytes(idx)?;
    let s = s.strip_prefix(b"*").unwrap_or(s);
    match s.first()? {
        b'n' => Some(Format::Number),
        b'l' => Some(Format::Line { keep: false }),
        b'L' => Some(Format::Line { keep: true }),
        b'a' => Some(Format::All),
        _ => None,
    }
}

cfn!(pub(super) stream_read = read_body);

/// `f:read(...)`: Lua's formats "n", "l", "L", "a" (with or without a
/// leading `*`) and byte counts; "l" by default.
fn read_body(lua: &mut Lua) -> Ret {
    check_open(lua, 1)?;
    if lua.top() == 1 {
        lua.push_bytes(b"l");
    }
    let k = lua.top() - 1;
    for i in 2..=k + 1 {
        check_format(lua, i)?;
    }
    lua.check_stack(k + 8)?;
    lua.push_int(k as lua_Integer);
    lua.insert(2); // stream k formats...
    drive(lua, StreamOp::new(step, READ))
}

/// Reads the formats of the frame (1 stream, 2 count k, then the formats,
/// then the answers so far).
fn step(f: &mut Frame, w: In) -> Out {
    let k = f.lua.to_int(f.at(2)).unwrap_or(0) as c_int;
    if let Some(out) = failed(f, k + 2, w) {
        return out;
    }
    let answers = f.at(k + 2);
    if !stream_of(f).is_some_and(Stream::is_open) {
        f.lua.set_top(answers);
        return Out::Done(f.lua.fail(c"closed"));
    }
    // Room for the answers still to come (the step has `STEP_SLOTS`).
    let left = k - (f.lua.top() - answers);
    if left > STEP_SLOTS - 4 && f.lua.check_stack(left + 4).is_err() {
        f.lua.set_top(answers);
        return Out::Done(f.lua.fail(c"too many results"));
    }
    loop {
        let done = f.lua.top() - answers;
        if done >= k {
            return Out::Done(k);
        }
        let fmt = parse_format(&f.lua, f.at(3 + done)).unwrap_or(Format::Line { keep: false });
        // Nothing of the stream (its lock, a reference to it, a borrow) is
        // held while a push may raise a memory error past this frame.
        let ok = match take(f, fmt) {
            Take::Answer(ok) => ok,
            Take::Again => continue,
            Take::Out(out) => return out,
            Take::Failed(e) => {
                f.lua.set_top(answers);
                return Out::Done(match e {
                    Some(e) => f.lua.fail_errno(e, None),
                    None => f.lua.fail(c"closed"),
                });
            }
        };
        if !ok {
            f.lua.push_nil();
            return Out::Done(done + 1);
        }
        let Some(s) = stream_of(f) else { return Out::Done(f.lua.fail(c"closed")) };
        f.lua.push_held(&s.out, Vec::as_slice);
        if fmt == Format::Number && !f.lua.numeral_on_top() {
            f.lua.push_nil();
            return Out::Done(done + 1);
        }
    }
}

/// What `take` did for one format.
enum Take {
    /// The answer is in the stream's `out` (`false`: the format failed).
    Answer(bool),
    /// A pipe's buffer was filled: try again.
    Again,
    /// Wait (readiness or a job) first.
    Out(Out),
    /// The stream is closed (`None`) or a read failed.
    Failed(Option<i32>),
}

/// Takes the answer to `fmt` from the buffer into the stream's `out`, or
/// says what to do first.
fn take(f: &Frame, fmt: Format) -> Take {
    let (Some((core, pipe)), Some(s)) = (open_core(f), stream_of(f)) else { return Take::Failed(None) };
    let mut g = match core.try_lock() {
        Ok(g) => g,
        Err(TryLockError::Poisoned(e)) => e.into_inner(),
        // A job holds it: this read waits its turn in a job.
        Err(TryLockError::WouldBlock) => return Take::Out(Out::Job(Spec::Fill(fmt))),
    };
    if g.rd.ready(fmt) {
        let mut out = s.out.borrow_mut();
        out.clear();
        return Take::Answer(g.rd.take(fmt, &mut out));
    }
    if !pipe {
        return Take::Out(Out::Job(Spec::Fill(fmt)));
    }
    let fd = g.fd;
    match g.rd.fill(fd) {
        Ok(_) => Take::Again,
        Err(libc::EAGAIN) => Take::Out(Out::Wait),
        Err(e) => Take::Failed(Some(e)),
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

/// `[-0, +0, m]` Sets `lines` in the methods table on the top (its maker of
/// iterators as upvalue).
pub(super) fn add_lines(lua: &mut Lua) -> Result<(), Error> {
    lua.load(LINES, c"=cothread.file.lines")?;
    lua.call(0, 1)?; // methods wrap
    lua.push_closure(stream_lines, 1);
    lua.set_field(-2, c"lines");
    Ok(())
}

cfn!(stream_lines = lines_body);

/// `f:lines(...)`: an iterator reading with the formats ("l" by default);
/// it raises on a read error and returns nil at the end (the stream stays
/// open). Upvalue 1: the maker.
fn lines_body(lua: &mut Lua) -> Ret {
    check_open(lua, 1)?;
    let n = lua.top();
    if n - 1 > MAX_LINE_ARGS {
        return Err(Error::arg(MAX_LINE_ARGS + 2, c"too many arguments"));
    }
    for i in 2..=n {
        check_format(lua, i)?;
    }
    lua.push_closure(lines_iter, n);
    lua.push_value(Lua::upvalue(1));
    lua.insert(-2); // wrap iter
    lua.push_int((n - 1).max(1) as lua_Integer);
    lua.call(2, 1)?;
    Ok(1)
}

cfn!(lines_iter = lines_iter_body);

/// The C iterator of `lines`: its upvalues are the stream and the formats.
fn lines_iter_body(lua: &mut Lua) -> Ret {
    if !lua.test_udata::<Stream>(Lua::upvalue(1)).is_some_and(Stream::is_open) {
        return Err(Error::msg(c"file is already closed"));
    }
    lua.set_top(0);
    let mut k = 0;
    while lua.kind(Lua::upvalue(k + 2)) != Type::None {
        k += 1;
    }
    lua.check_stack(k + 2)?; // the frame (`drive` checks what a step needs above it)
    lua.push_value(Lua::upvalue(1));
    if k == 0 {
        lua.push_int(1);
        lua.push_bytes(b"l");
    } else {
        lua.push_int(k as lua_Integer);
        for i in 0..k {
            lua.push_value(Lua::upvalue(i + 2));
        }
    }
    drive(lua, StreamOp::new(step, READ))
}
