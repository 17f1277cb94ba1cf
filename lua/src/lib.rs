//! The Lua 5.4 module `cothread`.
//!
//! Built as `cothread.so` (a cdylib whose entry point is `luaopen_cothread`), loaded
//! with `require "cothread"` from a stock `lua5.4` or any host that embeds Lua 5.4.
//! The module resolves the Lua C API from the host process, as every Lua C module does.
//!
//! For now the module only reports the version of the core it was built with:
//!
//! ```lua
//! local cothread = require "cothread"
//! print(cothread.version)                 --> "0.1.0"
//! print(cothread.version_major,           --> 0
//!       cothread.version_minor,           --> 1
//!       cothread.version_patch)           --> 0
//! ```

use cothread::ffi::{COT_VERSION_MAJOR, COT_VERSION_MINOR, COT_VERSION_PATCH};
use mlua::prelude::*;

/// Entry point of the module: `luaopen_cothread`, called by `require "cothread"`.
///
/// Returns the module table with the fields
/// - `version`: the core's version string (`cothread::VERSION`, e.g. `"0.1.0"`),
/// - `version_major`, `version_minor`, `version_patch`: its components as integers
///   (the C ABI's `COT_VERSION_*`).
#[mlua::lua_module(name = "cothread")]
fn cothread(lua: &Lua) -> LuaResult<LuaTable> {
    let module = lua.create_table()?;
    module.set("version", cothread::VERSION)?;
    module.set("version_major", COT_VERSION_MAJOR)?;
    module.set("version_minor", COT_VERSION_MINOR)?;
    module.set("version_patch", COT_VERSION_PATCH)?;
    Ok(module)
}
