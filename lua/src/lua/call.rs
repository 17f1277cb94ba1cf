//! Running Lua code from a body: calls, chunks, `tostring`. Each runs in
//! protected mode, so an error of the code run becomes `Error::Value` (its
//! value left on the top) instead of a longjmp through the body.

use std::ffi::{CStr, c_int};

use mlua::ffi;

use super::error::Error;
use super::thread::{L, Lua};

impl Lua {
    /// `[-(nargs+1), +nres, m]` Calls the function below the top `nargs`
    /// values with them; `nres` results (`ffi::LUA_MULTRET`: all). On an
    /// error, its value is on the top and the answer is `Error::Value`.
    pub fn call(&mut self, nargs: c_int, nres: c_int) -> Result<(), Error> {
        if nres > 0 {
            self.check_stack(nres)?;
        }
        // SAFETY: a valid state; `lua_pcall` catches every error of the
        // callee (it returns instead of longjmping here). A yield inside is
        // refused by Lua ("attempt to yield across a C-call boundary").
        match unsafe { ffi::lua_pcall(self.l, nargs, nres, 0) } {
            ffi::LUA_OK => Ok(()),
            _ => Err(Error::Value),
        }
    }

    /// `[-0, +1, m]` Pushes the chunk `source` (text only) compiled under
    /// `name`; a chunk that does not compile answers its message as
    /// `Error::Value`.
    pub fn load(&self, source: &str, name: &CStr) -> Result<(), Error> {
        self.room(1);
        // SAFETY: a valid state with room; the loader reads `source`, which
        // outlives the call, and pushes one value (the chunk or the message)
        // without raising anything but a memory error.
        let status = unsafe {
            ffi::luaL_loadbufferx(self.l, source.as_ptr().cast(), source.len(), name.as_ptr(), c"t".as_ptr())
        };
        if status == ffi::LUA_OK { Ok(()) } else { Err(Error::Value) }
    }

    /// `[-0, +1, m]` Pushes `tostring` of the value at `idx` (its
    /// `__tostring` or `__name` honoured, as `luaL_tolstring`).
    pub fn push_tostring(&mut self, idx: c_int) -> Result<(), Error> {
        let idx = self.abs(idx);
        self.push_fn(tostring);
        self.push_value(idx);
        self.call(1, 1)
    }
}

/// `tostring(v)` of the layer, run protected by `push_tostring`.
unsafe extern "C-unwind" fn tostring(l: L) -> c_int {
    // SAFETY: Lua calls this with its one argument; `luaL_tolstring` pushes
    // the result, and an error in `__tostring` unwinds to the `lua_pcall`
    // of `push_tostring`, past no Rust frame but this plain one.
    unsafe { ffi::luaL_tolstring(l, 1, std::ptr::null_mut()) };
    1
}
