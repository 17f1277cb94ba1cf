//! Tables: fields, the registry, function tables, metatables, upvalues.
//!
//! Every access is raw (no metamethod runs), so none can run Lua code or
//! raise anything but a memory error. The module's own tables have no
//! metamethods; option tables from users are read raw, like `io.lines`'s
//! formats are read by position.

use std::ffi::{CStr, c_int};

use super::version::{self as ffi, lua_Integer};

use super::stack::Type;
use super::thread::Lua;

/// The registry's pseudo-index.
pub const REGISTRY: c_int = ffi::LUA_REGISTRYINDEX;

/// A C function and the name it is set under.
pub type Reg = (&'static CStr, ffi::lua_CFunction);

impl Lua {
    /// The pseudo-index of upvalue `n` of the running C closure.
    #[inline]
    pub fn upvalue(n: c_int) -> c_int {
        ffi::lua_upvalueindex(n)
    }

    /// `[-0, +1, m]` Pushes a new table, with room for `narr` array and
    /// `nrec` other entries.
    pub fn new_table(&self, narr: c_int, nrec: c_int) {
        self.room(1);
        // SAFETY: room for the new table (checked); its memory error is
        // rule 2's.
        unsafe { ffi::lua_createtable(self.l, narr, nrec) }
    }

    /// `[-0, +1, m]` Pushes `t[k]` of the table at `t` (raw) and says its
    /// type. (The key is interned first: a memory error if it is new.)
    pub fn get_field(&self, t: c_int, k: &CStr) -> Type {
        self.room(1);
        let t = self.abs(t);
        // SAFETY: a valid state with room for the key and the value; the key
        // is replaced by the value. `t` must be a table: a caller's error,
        // which `lua_rawget` answers with an API check, not memory unsafety,
        // only in debug builds of Lua; so check it here.
        unsafe {
            if ffi::lua_type(self.l, t) != ffi::LUA_TTABLE {
                ffi::lua_pushnil(self.l);
                return Type::Nil;
            }
            ffi::lua_pushstring(self.l, k.as_ptr());
            Type::of(ffi::lua_rawget(self.l, t))
        }
    }

    /// `[-1, +0, m]` `t[k] = v` for the table at `t` (raw), `v` the top
    /// value, popped.
    pub fn set_field(&mut self, t: c_int, k: &CStr) {
        self.room(1);
        let t = self.abs(t);
        // SAFETY: a valid state with room for the key; the table check as in
        // `get_field` (a non-table drops the value).
        unsafe {
            if ffi::lua_type(self.l, t) != ffi::LUA_TTABLE {
                ffi::lua_settop(self.l, -2);
                return;
            }
            ffi::lua_pushstring(self.l, k.as_ptr());
            ffi::lua_rotate(self.l, -2, 1);
            ffi::lua_rawset(self.l, t);
        }
    }

    /// `[-0, +1, -]` Pushes `t[i]` of the table at `t` (raw) and says its
    /// type.
    pub fn get_index(&self, t: c_int, i: lua_Integer) -> Type {
        self.room(1);
        // SAFETY: a valid state with room; the table check as in `get_field`.
        unsafe {
            if ffi::lua_type(self.l, t) != ffi::LUA_TTABLE {
                ffi::lua_pushnil(self.l);
                return Type::Nil;
            }
            Type::of(ffi::lua_rawgeti(self.l, t, i))
        }
    }

    /// `[-1, +0, m]` `t[i] = v` for the table at `t` (raw), `v` the top
    /// value, popped.
    pub fn set_index(&mut self, t: c_int, i: lua_Integer) {
        let t = self.abs(t);
        // SAFETY: a valid state; the table check as in `set_field`.
        unsafe {
            if ffi::lua_type(self.l, t) != ffi::LUA_TTABLE {
                ffi::lua_settop(self.l, -2);
                return;
            }
            ffi::lua_rawseti(self.l, t, i);
        }
    }

    /// `[-2, +0, m]` `t[k] = v` for the table at `t` (raw), `k` and `v` the
    /// two top values, popped. A nil or NaN key (which Lua refuses) drops
    /// both.
    pub fn set_table(&mut self, t: c_int) {
        let t = self.abs(t);
        let nan = self.kind(-2) == Type::Number && self.to_num(-2).is_some_and(f64::is_nan);
        let bad_key = nan || self.is_nil(-2);
        if bad_key || self.kind(t) != Type::Table {
            self.pop(2);
            return;
        }
        // SAFETY: a valid state, a table at `t` and a key Lua takes
        // (checked), so `lua_rawset` raises nothing but a memory error.
        unsafe { ffi::lua_rawset(self.l, t) }
    }

    /// `[-1, +1, -]` Replaces the key on the top by `t[key]` of the table at
    /// `t` (raw) and says its type (nil if `t` is not a table).
    pub fn get_table(&mut self, t: c_int) -> Type {
        // (`lua_rawget` finds the table before it pops the key: `t` may be
        // relative to the top.)
        if self.kind(t) != Type::Table {
            self.pop(1);
            self.push_nil();
            return Type::Nil;
        }
        // SAFETY: a table at `t` (checked) and a key on the top, replaced by
        // the value: a raw read, which raises nothing.
        Type::of(unsafe { ffi::lua_rawget(self.l, t) })
    }

    /// `[-0, +(0|1), -]` Pushes upvalue `n` of the function at `idx`, if it
    /// has one (true).
    pub fn get_upvalue(&self, idx: c_int, n: c_int) -> bool {
        let idx = self.readable(idx);
        self.room(1);
        // SAFETY: a valid state with room; `lua_getupvalue` pushes only when
        // the function has that upvalue, and reads nothing else.
        unsafe { !ffi::lua_getupvalue(self.l, idx, n).is_null() }
    }

    /// `[-0, +0, -]` Calls `f` with `t[i]` of the table at `t` (raw) pushed,
    /// and its type; pops it, and whatever `f` pushed, after.
    pub fn with_index<R>(&self, t: c_int, i: lua_Integer, f: impl FnOnce(&Lua, Type) -> R) -> R {
        let top = self.top();
        let ty = self.get_index(t, i);
        let r = f(self, ty);
        // SAFETY: only values pushed since `top` go: `t[i]`, which nothing
        // borrowed before it was pushed, and `f`'s pushes, whose borrows
        // ended with `f` (its result cannot hold one: `f` takes any `&Lua`).
        unsafe { ffi::lua_settop(self.l, top) };
        r
    }

    /// `[-0, +0, -]` Calls `f` with `t[k]` of the table at `t` (raw) pushed,
    /// `k` the value at `key`, and its type; pops it, and whatever `f`
    /// pushed, after.
    pub fn with_key<R>(&self, t: c_int, key: c_int, f: impl FnOnce(&Lua, Type) -> R) -> R {
        let (t, key) = (self.abs(t), self.readable(key));
        let top = self.top();
        self.room(1);
        // SAFETY: a valid state with room for the key's copy, which a raw
        // read replaces by the value (nothing raises); a non-table reads nil.
        let ty = unsafe {
            ffi::lua_pushvalue(self.l, key);
            if ffi::lua_type(self.l, t) == ffi::LUA_TTABLE {
                Type::of(ffi::lua_rawget(self.l, t))
            } else {
                ffi::lua_settop(self.l, -2);
                ffi::lua_pushnil(self.l);
                Type::Nil
            }
        };
        let r = f(self, ty);
        // SAFETY: as in `with_index`: only values pushed since `top` go.
        unsafe { ffi::lua_settop(self.l, top) };
        r
    }

    /// `[-0, +0, -]` Calls `f` with `mt[key]` pushed (raw; `key` an address
    /// as a light userdata), `mt` the metatable of the value at `idx`; pops
    /// both, and whatever `f` pushed, after. `None` if it has no metatable.
    pub fn with_metafield<R>(&self, idx: c_int, key: *const std::ffi::c_void, f: impl FnOnce(&Lua) -> R) -> Option<R> {
        let idx = self.readable(idx);
        let top = self.top();
        self.room(2);
        // SAFETY: a valid state with room for the metatable and the field
        // (a raw read: nothing raises).
        unsafe {
            if ffi::lua_getmetatable(self.l, idx) == 0 {
                return None;
            }
            ffi::lua_rawgetp(self.l, -1, key);
        }
        let r = f(self);
        // SAFETY: as in `with_index`: only values pushed since `top` go.
        unsafe { ffi::lua_settop(self.l, top) };
        Some(r)
    }

    /// `[-1, +0, m]` `t[key] = v` for the table at `t` (raw), `key` an
    /// address as a light userdata (a private tag), `v` the top value, popped.
    pub fn set_pointer_key(&mut self, t: c_int, key: *const std::ffi::c_void) {
        let t = self.abs(t);
        // SAFETY: a valid state; the table check as in `set_field`.
        unsafe {
            if ffi::lua_type(self.l, t) != ffi::LUA_TTABLE {
                ffi::lua_settop(self.l, -2);
                return;
            }
            ffi::lua_rawsetp(self.l, t, key);
        }
    }

    /// `[-0, +0, -]` Calls `f` for each entry of the table at `t` (raw, in
    /// `next`'s order) with the key at -2 and the value at -1, until it
    /// answers false. `f` gets the handle shared: it cannot change the
    /// stack under the traversal; what it pushes is popped after it.
    pub fn each(&mut self, t: c_int, mut f: impl FnMut(&Lua) -> bool) {
        let t = self.abs(t);
        if self.kind(t) != Type::Table {
            return;
        }
        self.room(3);
        let top = self.top();
        // SAFETY: a table at `t` (checked) and room for the key and the
        // value; the stack is cut back to the key `next` left after `f`
        // (which may only push), so `lua_next` finds it and never raises.
        unsafe {
            ffi::lua_pushnil(self.l);
            while ffi::lua_next(self.l, t) != 0 {
                let go_on = f(self);
                ffi::lua_settop(self.l, if go_on { top + 1 } else { top });
                if !go_on {
                    return;
                }
            }
        }
    }

    /// `[-0, +0, m]` Copies every entry of the table at `from` into the
    /// table at `to` (raw gets and sets), but the string key `skip`.
    pub fn copy_fields(&mut self, from: c_int, to: c_int, skip: &CStr) {
        let (from, to) = (self.abs(from), self.abs(to));
        if self.kind(from) != Type::Table || self.kind(to) != Type::Table {
            return;
        }
        self.room(4);
        // SAFETY: two tables (checked) and room for a key, a value and
        // their copies. Each iteration pushes the key and value `next`
        // gives, copies both (`lua_rawset` pops the copies, so `to` changes
        // but `from`, which `next` walks, does not) and pops the value, so
        // the key `next` left is on the top again. A raw set raises only
        // for a nil or NaN key, which `next` never gives, or for memory.
        unsafe {
            ffi::lua_pushnil(self.l);
            while ffi::lua_next(self.l, from) != 0 {
                let skipped = ffi::lua_type(self.l, -2) == ffi::LUA_TSTRING
                    && CStr::from_ptr(ffi::lua_tolstring(self.l, -2, std::ptr::null_mut())) == skip;
                if !skipped {
                    ffi::lua_pushvalue(self.l, -2);
                    ffi::lua_pushvalue(self.l, -2);
                    ffi::lua_rawset(self.l, to);
                }
                ffi::lua_settop(self.l, -2);
            }
        }
    }

    /// `[-1, +0, m]` Pops the top value into the registry and answers its
    /// reference (`luaL_ref`).
    pub fn reference(&mut self) -> c_int {
        // SAFETY: a valid state with a value on the top (a missing one reads
        // as nil, which `luaL_ref` answers with `LUA_REFNIL`); `&mut self`:
        // the value leaves the stack.
        unsafe { ffi::luaL_ref(self.l, REGISTRY) }
    }

    /// `[-0, +0, -]` Frees the registry reference `r` (`luaL_unref`), once:
    /// freed twice, two later references could share a slot.
    pub fn unreference(&self, r: c_int) {
        // SAFETY: a valid state; `luaL_unref` only stores integers in the
        // registry table (its free list), and ignores a negative `r`. A
        // double free is a logic error there, not a memory error.
        unsafe { ffi::luaL_unref(self.l, REGISTRY, r) }
    }

    /// `[-0, +1, m]` Pushes a new table of `functions`.
    pub fn push_functions(&mut self, functions: &[Reg]) {
        self.new_table(0, functions.len() as c_int);
        for (name, f) in functions {
            self.push_fn(*f);
            self.set_field(-2, name);
        }
    }

    /// `[-0, +1, m]` Pushes the table kept in the registry under `key`;
    /// the first time, `make` pushes it (one value) and it is kept. An error
    /// of `make` is passed on, and nothing is kept.
    pub fn push_once<E>(&mut self, key: &CStr, make: impl FnOnce(&mut Lua) -> Result<(), E>) -> Result<(), E> {
        if self.get_field(REGISTRY, key) == Type::Table {
            return Ok(());
        }
        self.pop(1);
        let top = self.top();
        make(self)?;
        debug_assert_eq!(self.top(), top + 1, "`make` pushes one value");
        self.push_value(-1);
        self.set_field(REGISTRY, key);
        Ok(())
    }

    /// `[-0, +1, m]` Pushes the table of `functions` kept in the registry
    /// under `key`, made the first time.
    pub fn push_functions_once(&mut self, key: &CStr, functions: &[Reg]) {
        let made: Result<(), std::convert::Infallible> = self.push_once(key, |lua| {
            lua.push_functions(functions);
            Ok(())
        });
        let Ok(()) = made;
    }

    /// `[-0, +0, m]` Sets the metatable registered under `name` on the value
    /// at `idx` (nothing if no table is registered there).
    pub fn set_metatable(&self, idx: c_int, name: &CStr) {
        self.room(1);
        let idx = self.abs(self.slot(idx));
        // SAFETY: a valid state with room; the registry's field is pushed
        // and, if a table, popped again by `lua_setmetatable` (a value of
        // another type is popped here: it must not become a metatable).
        unsafe {
            if ffi::lua_getfield(self.l, REGISTRY, name.as_ptr()) == ffi::LUA_TTABLE {
                ffi::lua_setmetatable(self.l, idx);
            } else {
                ffi::lua_settop(self.l, -2);
            }
        }
    }

    /// `[-1, +0, -]` Pops a table (or nil) into the metatable of the value
    /// at `idx`.
    pub fn set_metatable_top(&mut self, idx: c_int) {
        let idx = self.abs(self.slot(idx));
        if !matches!(self.kind(-1), Type::Table | Type::Nil) {
            self.pop(1);
            return;
        }
        // SAFETY: a table or nil on the top (checked), which
        // `lua_setmetatable` pops; `&mut self`: an old metatable may go.
        unsafe { ffi::lua_setmetatable(self.l, idx) };
    }
}
