//! The Lua C API as Lua 5.4 spells it, on every Lua the module builds for.
//!
//! The crate is written against 5.4. mlua's `ffi` follows the cargo feature
//! (`lua51`, `lua52`, `lua53`, `lua54`, `luajit`) and already emulates most
//! of 5.4's calls on older versions (`lua_resume` with its count of
//! results, `lua_rotate`, `lua_absindex`, `luaL_tolstring`, integers where
//! a version has none, ...). This file re-exports it and adds, for each
//! older version, the few calls it lacks, under 5.4's names and with 5.4's
//! meaning, so no other file names a version:
//!
//! - **User values.** 5.4 gives a userdata `n` of them; 5.2 and 5.3 one, 5.1
//!   and LuaJIT an environment table. There, a userdata made with user
//!   values gets one table that holds them, and `lua_getiuservalue` /
//!   `lua_setiuservalue` read and write its fields. A userdata without
//!   answers none (5.2, 5.3), or reads its environment (5.1: the caller's
//!   table; no field of it holds a tag of ours unless Lua code put it there
//!   through the debug library, which can forge a 5.4 user value too).
//!   Reading a user value may grow the stack by one slot: a memory error,
//!   as a push may raise.
//! - **`lua_isyieldable`** (5.3). 5.2 yields across `pcall`, metamethods
//!   and iterators: only its main thread is taken as not yieldable (a C
//!   function such as `table.sort` that calls Lua still refuses the yield,
//!   with Lua's own error). LuaJIT exports the call, found at run time; on
//!   Lua 5.1, a call from under a C function (`pcall`, `xpcall`, `sort`,
//!   ...), from under an iterator of a generic `for`, or from the main
//!   thread is not yieldable (a metamethod is not seen).
//! - **`lua_topointer`** of a string (5.4): the address of its bytes.
//! - **`lua_rawgeti`, `lua_rawseti`** with a key beyond an `int` (5.3).
//! - **A yield that keeps the C function's frame** (`yield_in_place`):
//!   5.4 keeps it below the values yielded; older versions hide it, so there
//!   the frame is what is yielded, and `lua_resume` answers no results.
//! - **`luaL_testudata`** (5.2) on 5.1 and LuaJIT, **`lua_stringtonumber`**
//!   (5.3) on 5.1, 5.2 and LuaJIT.
//!
//! A module built for 5.1 calls no function that Lua 5.1 lacks, so the
//! same build loads in LuaJIT (whose API is 5.1's, plus more).

pub use mlua::ffi::*;

#[cfg(not(feature = "lua54"))]
pub use older::*;
// Named, to take the place of mlua's of the same name.
#[cfg(not(feature = "lua54"))]
pub use older::lua_resume;
#[cfg(not(feature = "lua54"))]
pub use older::lua_topointer;
#[cfg(any(feature = "lua51", feature = "lua52", feature = "luajit"))]
pub use older::{lua_rawgeti, lua_rawseti};

/// Can a coroutine yield across `pcall` and `xpcall`? Not on Lua 5.1; LuaJIT
/// can (this build finds LuaJIT's own `lua_isyieldable` where it runs).
pub fn pcall_yields() -> bool {
    #[cfg(feature = "lua51")]
    return older::luajit_isyieldable().is_some();
    #[cfg(not(feature = "lua51"))]
    true
}

/// The `__tostring` that a metatable with a `__name` needs where `tostring`
/// does not read `__name` (before 5.3): `NAME: 0x...`, as 5.3 prints it.
#[cfg(not(any(feature = "lua53", feature = "lua54")))]
pub const NAME_TOSTRING: Option<lua_CFunction> = Some(older::name_tostring);
/// None: 5.3 on, `tostring` prints `__name` itself.
#[cfg(any(feature = "lua53", feature = "lua54"))]
pub const NAME_TOSTRING: Option<lua_CFunction> = None;

/// `[-0, +0, -]` Yields the running C function with no values, its frame
/// left on the thread's stack, where the engine keeps a parked operation
/// until it resumes the thread with the operation's results. 5.4 keeps the
/// frame of a C function that yields; older versions hide what lies below
/// the values yielded, so there the frame itself is yielded, and
/// `lua_resume` answers no results for it, as 5.4 does.
///
/// # Safety
/// `l` is the running thread of the C function that returns this, as its
/// last act.
#[inline]
pub unsafe fn yield_in_place(l: *mut lua_State) -> std::ffi::c_int {
    #[cfg(feature = "lua54")]
    // SAFETY: `l` runs the C function that returns this (the caller's proof).
    return unsafe { lua_yield(l, 0) };
    #[cfg(not(feature = "lua54"))]
    // SAFETY: the contract; the whole frame is on the stack to yield.
    unsafe {
        older::IN_PLACE.set(l);
        lua_yield(l, lua_gettop(l))
    }
}

#[cfg(not(feature = "lua54"))]
mod older {
    #[cfg(any(feature = "lua51", feature = "lua52", feature = "luajit"))]
    use std::ffi::c_char;
    use std::ffi::{c_int, c_void};

    use mlua::ffi::*;

    thread_local! {
        /// The thread that last yielded in place (`yield_in_place`).
        pub static IN_PLACE: std::cell::Cell<*mut lua_State> = const { std::cell::Cell::new(std::ptr::null_mut()) };
    }

    /// 5.4's `lua_resume` (mlua's emulation), which answers no results for
    /// a thread that yielded in place: its frame, yielded there, stays on its
    /// stack as 5.4 leaves it.
    ///
    /// # Safety
    /// As 5.4's.
    #[inline]
    pub unsafe fn lua_resume(l: *mut lua_State, from: *mut lua_State, narg: c_int, nres: *mut c_int) -> c_int {
        // Cleared first: a yield in place that failed (not yieldable)
        // leaves its thread here.
        IN_PLACE.set(std::ptr::null_mut());
        // SAFETY: the caller proves 5.4's conditions, which mlua's emulation asks too.
        let status = unsafe { mlua::ffi::lua_resume(l, from, narg, nres) };
        if IN_PLACE.replace(std::ptr::null_mut()) == l && status == LUA_YIELD {
            // SAFETY: `nres` is valid (the contract).
            unsafe { *nres = 0 };
        }
        status
    }

    /// 5.4's `lua_newuserdatauv`: a block of `sz` bytes; with `nuv` user
    /// values, its user value is a table of `nuv` slots that holds them.
    ///
    /// # Safety
    /// As 5.4's: a valid state with a free slot (two with user values).
    #[inline]
    pub unsafe fn lua_newuserdatauv(l: *mut lua_State, sz: usize, nuv: c_int) -> *mut c_void {
        // SAFETY: the contract; the table is set into the new userdata.
        unsafe {
            let p = lua_newuserdata(l, sz);
            if nuv > 0 {
                lua_createtable(l, nuv, 0);
                lua_setuservalue(l, -2);
            }
            p
        }
    }

    /// `__tostring` by `__name`: `NAME: 0x...` (`NAME_TOSTRING`).
    ///
    /// # Safety
    /// Called by Lua, as a metamethod.
    #[cfg(not(feature = "lua53"))]
    pub unsafe extern "C-unwind" fn name_tostring(l: *mut lua_State) -> c_int {
        // SAFETY: Lua calls this with the value as argument 1 and the free
        // slots every C function has; the name's bytes are copied into the
        // Rust string while the slot holds it.
        unsafe {
            let p = lua_topointer(l, 1);
            let mut len = 0;
            let name = match luaL_getmetafield(l, 1, c"__name".as_ptr()) {
                LUA_TSTRING => lua_tolstring(l, -1, &mut len),
                _ => c"userdata".as_ptr(),
            };
            let name = String::from_utf8_lossy(std::ffi::CStr::from_ptr(name).to_bytes()).into_owned();
            let s = format!("{name}: {p:p}");
            lua_pushlstring(l, s.as_ptr().cast(), s.len());
            1
        }
    }

    /// 5.4's `lua_getiuservalue`: pushes user value `n` of the userdata at
    /// `idx` and answers its type; nil and `LUA_TNONE` if there is none.
    ///
    /// # Safety
    /// As 5.4's: a valid state and index, a free slot.
    #[inline]
    pub unsafe fn lua_getiuservalue(l: *mut lua_State, idx: c_int, n: c_int) -> c_int {
        // SAFETY: the contract; the user value is read only from a full
        // userdata, and indexed only if it is a table (the emulation's).
        unsafe {
            let idx = lua_absindex(l, idx);
            lua_checkstack(l, 2);
            if lua_type(l, idx) != LUA_TUSERDATA {
                lua_pushnil(l);
                return LUA_TNONE;
            }
            if lua_getuservalue(l, idx) != LUA_TTABLE {
                lua_pop(l, 1);
                lua_pushnil(l);
                return LUA_TNONE;
            }
            let t = lua_rawgeti(l, -1, n as lua_Integer);
            lua_remove(l, -2);
            t
        }
    }

    /// 5.4's `lua_setiuservalue`: pops the top into user value `n` of the
    /// userdata at `idx`; 0 (the value popped all the same) if it has none.
    ///
    /// # Safety
    /// As 5.4's: a valid state and index, a value on the top.
    #[inline]
    pub unsafe fn lua_setiuservalue(l: *mut lua_State, idx: c_int, n: c_int) -> c_int {
        // SAFETY: the contract; as in `lua_getiuservalue`, only the
        // emulation's table is written.
        unsafe {
            let idx = lua_absindex(l, idx);
            lua_checkstack(l, 2);
            if lua_type(l, idx) != LUA_TUSERDATA {
                lua_pop(l, 1);
                return 0;
            }
            if lua_getuservalue(l, idx) != LUA_TTABLE {
                lua_pop(l, 2);
                return 0;
            }
            lua_insert(l, -2); // table value
            lua_rawseti(l, -2, n as lua_Integer);
            lua_pop(l, 1);
            1
        }
    }

    /// 5.3's `lua_rawgeti` on 5.1, 5.2 and LuaJIT, for any integer key
    /// (theirs take an `int`; mlua's emulation panics beyond it).
    ///
    /// # Safety
    /// As 5.3's: a valid state, a table at `idx`, a free slot.
    #[cfg(any(feature = "lua51", feature = "lua52", feature = "luajit"))]
    #[inline]
    pub unsafe fn lua_rawgeti(l: *mut lua_State, idx: c_int, n: lua_Integer) -> c_int {
        // SAFETY: the contract; the key pushed is the one popped by `lua_rawget`.
        unsafe {
            if let Ok(n) = c_int::try_from(n) {
                return mlua::ffi::lua_rawgeti(l, idx, n as lua_Integer);
            }
            let idx = lua_absindex(l, idx);
            lua_pushnumber(l, n as lua_Number);
            lua_rawget(l, idx)
        }
    }

    /// 5.3's `lua_rawseti` on 5.1, 5.2 and LuaJIT, for any integer key.
    ///
    /// # Safety
    /// As 5.3's: a valid state, a table at `idx`, a value on the top.
    #[cfg(any(feature = "lua51", feature = "lua52", feature = "luajit"))]
    #[inline]
    pub unsafe fn lua_rawseti(l: *mut lua_State, idx: c_int, n: lua_Integer) {
        // SAFETY: the contract; key and value are popped by `lua_rawset`.
        unsafe {
            if let Ok(n) = c_int::try_from(n) {
                return mlua::ffi::lua_rawseti(l, idx, n as lua_Integer);
            }
            let idx = lua_absindex(l, idx);
            lua_pushnumber(l, n as lua_Number);
            lua_insert(l, -2);
            lua_rawset(l, idx);
        }
    }

    /// 5.4's `lua_topointer`, which answers an address for a string too
    /// (older versions answer null): here its bytes', which identify the
    /// string object (equal short strings are one object) while it lives.
    ///
    /// # Safety
    /// A valid state and index.
    #[inline]
    pub unsafe fn lua_topointer(l: *mut lua_State, idx: c_int) -> *const c_void {
        // SAFETY: the contract; `lua_tolstring` converts nothing, the value
        // being a string.
        unsafe {
            if lua_type(l, idx) == LUA_TSTRING {
                return lua_tolstring(l, idx, std::ptr::null_mut()).cast();
            }
            mlua::ffi::lua_topointer(l, idx)
        }
    }

    /// 5.3's `lua_stringtonumber` on 5.1, 5.2 and LuaJIT: pushes the number
    /// the numeral `s` denotes and answers its length plus one, or 0.
    ///
    /// # Safety
    /// As 5.3's: a valid state with two free slots, `s` NUL-terminated.
    #[cfg(any(feature = "lua51", feature = "lua52", feature = "luajit"))]
    pub unsafe fn lua_stringtonumber(l: *mut lua_State, s: *const c_char) -> usize {
        // SAFETY: the contract; the copy of `s` is popped either way.
        unsafe {
            let len = std::ffi::CStr::from_ptr(s).to_bytes().len();
            lua_pushstring(l, s);
            let mut ok = 0;
            let n = lua_tonumberx(l, -1, &mut ok);
            lua_pop(l, 1);
            if ok == 0 {
                return 0;
            }
            lua_pushnumber(l, n);
            len + 1
        }
    }

    /// 5.2's `luaL_testudata` on 5.1 and LuaJIT: the userdata at `ud` if its
    /// metatable is the one registered as `tname`, else null.
    ///
    /// # Safety
    /// As 5.2's: a valid state and index, two free slots.
    #[cfg(any(feature = "lua51", feature = "luajit"))]
    #[allow(non_snake_case)]
    pub unsafe fn luaL_testudata(l: *mut lua_State, ud: c_int, tname: *const c_char) -> *mut c_void {
        // SAFETY: the contract; the two metatables pushed are popped.
        unsafe {
            let p = lua_touserdata(l, ud);
            if p.is_null() || lua_getmetatable(l, ud) == 0 {
                return std::ptr::null_mut();
            }
            lua_getfield(l, LUA_REGISTRYINDEX, tname);
            let same = lua_rawequal(l, -1, -2) != 0;
            lua_pop(l, 2);
            if same { p } else { std::ptr::null_mut() }
        }
    }

    /// 5.3's `lua_isyieldable` on 5.2: any thread but the main one.
    ///
    /// # Safety
    /// A valid state.
    #[cfg(feature = "lua52")]
    pub unsafe fn lua_isyieldable(l: *mut lua_State) -> c_int {
        // SAFETY: the contract; the pushed thread is popped.
        unsafe {
            let main = lua_pushthread(l);
            lua_pop(l, 1);
            (main == 0) as c_int
        }
    }

    #[cfg(feature = "luajit")]
    unsafe extern "C-unwind" {
        /// LuaJIT 2.1's own.
        pub fn lua_isyieldable(l: *mut lua_State) -> c_int;
    }

    /// 5.3's `lua_isyieldable` on 5.1: LuaJIT's if the host is LuaJIT (this
    /// build serves both); else no for the main thread and for a call from
    /// under a C function (`pcall`, `table.sort`, ...), whose `lua_call`
    /// 5.1 cannot yield across.
    ///
    /// # Safety
    /// A valid state, running a C function.
    #[cfg(feature = "lua51")]
    pub unsafe fn lua_isyieldable(l: *mut lua_State) -> c_int {
        if let Some(f) = luajit_isyieldable() {
            // SAFETY: LuaJIT's own function, on its valid state.
            return unsafe { f(l) };
        }
        // SAFETY: the contract; the pushed thread is popped, and the debug
        // calls only read the call stack.
        unsafe {
            let main = lua_pushthread(l);
            lua_pop(l, 1);
            if main != 0 {
                return 0;
            }
            // Level 0 is the running C function, the last level the
            // coroutine's body. Below it, a C function called Lua, or a
            // generic `for` called its iterator (5.1 names the callee after
            // the loop's hidden local): either call cannot be yielded across.
            let mut ar: lua_Debug = std::mem::zeroed();
            let mut level = 0;
            while lua_getstack(l, level + 1, &mut ar) != 0 {
                lua_getstack(l, level, &mut ar);
                lua_getinfo(l, c"Sn".as_ptr(), &mut ar);
                if level > 0 && *ar.what == b'C' as c_char {
                    return 0;
                }
                if !ar.name.is_null() && std::ffi::CStr::from_ptr(ar.name) == c"(for generator)" {
                    return 0;
                }
                level += 1;
            }
            1
        }
    }

    /// LuaJIT's `lua_isyieldable`, if the host process has one (looked up once).
    #[cfg(feature = "lua51")]
    pub(super) fn luajit_isyieldable() -> Option<unsafe extern "C-unwind" fn(*mut lua_State) -> c_int> {
        use std::sync::OnceLock;
        static FOUND: OnceLock<usize> = OnceLock::new();
        // SAFETY: `dlsym` with the default handle only looks a name up.
        let p = *FOUND.get_or_init(|| unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"lua_isyieldable".as_ptr()) } as usize);
        // SAFETY: a symbol of that name in a Lua host is LuaJIT's function
        // of this signature (Lua 5.1 has none).
        (p != 0)
            .then(|| unsafe { std::mem::transmute::<usize, unsafe extern "C-unwind" fn(*mut lua_State) -> c_int>(p) })
    }
}

/// `[-0, +1, m]` Pushes a 64-bit identity (a task handle) as a Lua value
/// that `to_id` reads back: an integer where the version has them; else a
/// number while it fits a double's 53 bits (a handle's generation, in its
/// high half, stays small), and the 8 bytes as a string beyond (a string
/// is made and interned for each, a number is not).
///
/// # Safety
/// A valid state with a free slot.
#[inline]
pub unsafe fn push_id(l: *mut lua_State, id: u64) {
    // SAFETY: a valid state with a free slot (the caller's proof); the 8 bytes are copied by Lua.
    unsafe {
        #[cfg(any(feature = "lua53", feature = "lua54"))]
        lua_pushinteger(l, id as lua_Integer);
        #[cfg(not(any(feature = "lua53", feature = "lua54")))]
        if id < 1 << 53 {
            lua_pushnumber(l, id as lua_Number);
        } else {
            lua_pushlstring(l, id.to_ne_bytes().as_ptr().cast(), 8);
        }
    }
}

/// `[-0, +0, -]` The identity `push_id` pushed, at `idx`; 0 for any other value.
///
/// # Safety
/// A valid state and index.
#[inline]
pub unsafe fn to_id(l: *mut lua_State, idx: std::ffi::c_int) -> u64 {
    // SAFETY: the contract; a string's bytes are read while its slot holds it.
    unsafe {
        #[cfg(any(feature = "lua53", feature = "lua54"))]
        return lua_tointegerx(l, idx, std::ptr::null_mut()) as u64;
        #[cfg(not(any(feature = "lua53", feature = "lua54")))]
        match lua_type(l, idx) {
            LUA_TNUMBER => {
                let n = lua_tonumber(l, idx);
                if (0.0..(1u64 << 53) as lua_Number).contains(&n) && n.fract() == 0.0 { n as u64 } else { 0 }
            }
            LUA_TSTRING => {
                let mut len = 0;
                let s = lua_tolstring(l, idx, &mut len);
                if len != 8 {
                    return 0;
                }
                u64::from_ne_bytes(std::slice::from_raw_parts(s.cast::<u8>(), 8).try_into().unwrap_or_default())
            }
            _ => 0,
        }
    }
}
