//! `socket.protect`, `socket.try`, `socket.newtry`: LuaSocket's exceptions.
//!
//! A `try` function raises a *wrapped* error: a table `{message}` whose
//! metatable is the module's marker (an upvalue of each of these closures).
//! A `protect`ed function is a Lua closure (`PROTECT`, a chunk the module
//! ships) that calls its function through `cothread.pcall`, which lets the
//! function yield (suspend its cothread in a socket call) with no C
//! continuation, on Lua 5.1 too. A wrapped error becomes `nil, message`; any other error is
//! raised again unchanged.

use std::ffi::c_int;

use crate::cfn;
use crate::lua::{Error, Lua, Ret, Type};

/// The maker of protected functions: run once with the marker and
/// `cothread.pcall`, it returns
/// `make(f)`, which returns the protected function of `f`.
const PROTECT: &str = r#"
local marker, pcall = ...
local error, type, getmetatable, rawequal = error, type, getmetatable, rawequal
local function unwrap(ok, ...)
  if ok then return ... end
  local e = ...
  if type(e) == "table" and rawequal(getmetatable(e), marker) then return nil, e[1] end
  error(e, 0)
end
return function(f)
  return function(...) return unwrap(pcall(f, ...)) end
end
"#;

/// `[-1, +1, m]` Wraps the value on the top as `{value}` with the marker
/// metatable at `marker`.
fn wrap(lua: &mut Lua, marker: c_int) {
    lua.new_table(1, 0);
    lua.insert(-2); // table value
    lua.set_index(-2, 1);
    lua.push_value(marker);
    lua.set_metatable_top(-2);
}

cfn!(finalize = try_body);

/// The `try` functions: returns its arguments if the first is true;
/// otherwise calls the finalizer (upvalue 1, if any) and raises the second
/// argument wrapped.
fn try_body(lua: &mut Lua) -> Ret {
    if lua.to_bool(1) {
        return Ok(lua.top());
    }
    if !lua.is_nil(Lua::upvalue(1)) {
        lua.push_value(Lua::upvalue(1));
        lua.call(0, 0)?;
    }
    lua.set_top(2);
    wrap(lua, Lua::upvalue(2));
    Err(Error::Value)
}

cfn!(newtry = newtry_body);

/// `socket.newtry([finalizer])`: a `try` function calling `finalizer` (with
/// no arguments) before it raises. Upvalue 1: the marker.
fn newtry_body(lua: &mut Lua) -> Ret {
    if !lua.is_nil(1) {
        lua.check_type(1, Type::Function)?;
    }
    lua.set_top(1);
    lua.push_value(Lua::upvalue(1));
    lua.push_closure(finalize, 2);
    Ok(1)
}

cfn!(protect = protect_body);

/// `socket.protect(f)`: a function calling `f` that returns `nil, message`
/// where `f` raised through a `try`. Upvalue 1: the maker of protected
/// functions.
fn protect_body(lua: &mut Lua) -> Ret {
    lua.check_type(1, Type::Function)?;
    lua.set_top(1);
    lua.push_value(Lua::upvalue(1));
    lua.insert(1); // make f
    lua.call(1, 1)?;
    Ok(1)
}

/// `[-0, +0, m]` Sets `protect`, `newtry` and `try` on the table on the top.
pub(super) fn add_functions(lua: &mut Lua) -> Result<(), Error> {
    lua.new_table(0, 1); // M marker
    lua.push_bytes(b"cothread.socket.error");
    lua.set_field(-2, c"__name");
    lua.push_fn(error_tostring);
    lua.set_field(-2, c"__tostring");
    lua.push_value(-1);
    lua.push_closure(newtry, 1);
    lua.set_field(-3, c"newtry");
    lua.load(PROTECT, c"=cothread.socket.protect")?;
    lua.push_value(-2); // M marker chunk marker
    crate::pcall::push(lua)?; // M marker chunk marker pcall xpcall
    lua.pop(1);
    lua.call(2, 1)?; // M marker make
    lua.push_closure(protect, 1);
    lua.set_field(-3, c"protect");
    lua.push_nil(); // M marker nil
    lua.insert(-2); // M nil marker
    lua.push_closure(finalize, 2);
    lua.set_field(-2, c"try");
    Ok(())
}

cfn!(error_tostring = error_tostring_body);

/// `__tostring` of a wrapped error that escaped every `protect`: its message.
fn error_tostring_body(lua: &mut Lua) -> Ret {
    lua.get_index(1, 1);
    lua.push_tostring(-1)?;
    Ok(1)
}
