//! The stack: reading values, checking arguments, pushing results.
//!
//! Each method notes its stack effect as Lua's manual does, `[-pops, +pushes,
//! errors]`, where errors is `-` (none) or `m` (a memory error, see rule 2 of
//! the layer). Indices are any valid or acceptable index of the function's
//! stack (1-based, negative from the top, or pseudo-indices).

use std::cell::RefCell;
use std::ffi::{CStr, c_int, c_void};

use super::version::{self as ffi, lua_Integer};

use super::error::{Error, shown};
use super::thread::{L, Lua, Thread};

/// The type of a value (`lua_type`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Type {
    None,
    Nil,
    Boolean,
    LightUserdata,
    Number,
    String,
    Table,
    Function,
    Userdata,
    Thread,
}

impl Type {
    pub(super) fn of(code: c_int) -> Type {
        match code {
            ffi::LUA_TNIL => Type::Nil,
            ffi::LUA_TBOOLEAN => Type::Boolean,
            ffi::LUA_TLIGHTUSERDATA => Type::LightUserdata,
            ffi::LUA_TNUMBER => Type::Number,
            ffi::LUA_TSTRING => Type::String,
            ffi::LUA_TTABLE => Type::Table,
            ffi::LUA_TFUNCTION => Type::Function,
            ffi::LUA_TUSERDATA => Type::Userdata,
            ffi::LUA_TTHREAD => Type::Thread,
            _ => Type::None,
        }
    }

    /// The type's name (`luaL_typename`'s).
    pub fn name(self) -> &'static CStr {
        match self {
            Type::None => c"no value",
            Type::Nil => c"nil",
            Type::Boolean => c"boolean",
            Type::LightUserdata => c"light userdata",
            Type::Number => c"number",
            Type::String => c"string",
            Type::Table => c"table",
            Type::Function => c"function",
            Type::Userdata => c"userdata",
            Type::Thread => c"thread",
        }
    }
}

impl Lua {
    // ===== the stack itself =====

    /// `[-0, +0, -]` The index of the top value (the number of values).
    #[inline]
    pub fn top(&self) -> c_int {
        // SAFETY: a valid state (rule 1); reads only.
        unsafe { ffi::lua_gettop(self.l) }
    }

    /// `[-?, +?, -]` Sets the top to `idx` (values above go, nils fill).
    #[inline]
    pub fn set_top(&mut self, idx: c_int) {
        // SAFETY: a valid state; growing fills with nils, which needs room.
        unsafe {
            let top = ffi::lua_gettop(self.l);
            if idx > top {
                ffi::lua_checkstack(self.l, idx - top);
            }
            ffi::lua_settop(self.l, idx)
        }
    }

    /// `[-n, +0, -]` Pops `n` values.
    #[inline]
    pub fn pop(&mut self, n: c_int) {
        // SAFETY: a valid state; `&mut self` ends every borrow of the stack.
        unsafe { ffi::lua_settop(self.l, -n - 1) }
    }

    /// `[-0, +0, -]` `idx` as an absolute index (a pseudo-index as it is; a
    /// negative index below the frame, or 0, one above the top).
    #[inline]
    pub fn abs(&self, idx: c_int) -> c_int {
        if idx > 0 || idx <= ffi::LUA_REGISTRYINDEX {
            return idx;
        }
        let top = self.top();
        if idx == 0 || -idx > top { top + 1 } else { top + idx + 1 }
    }

    /// `[-0, +0, -]` Makes room for `n` more values.
    pub fn check_stack(&self, n: c_int) -> Result<(), Error> {
        // SAFETY: a valid state; `lua_checkstack` answers 0 instead of raising.
        if unsafe { ffi::lua_checkstack(self.l, n) } != 0 { Ok(()) } else { Err(Error::msg(c"stack overflow")) }
    }

    /// Room for `n` more values, or an abort: the trampoline's raise needs
    /// the same, and Lua's stack limit (a million slots) is far above what
    /// a body pushes.
    ///
    /// Room once made stays while the C function runs: Lua never shrinks a
    /// stack below the top its running functions were promised (the
    /// `LUA_MINSTACK` of the call, raised by each `lua_checkstack`). So the
    /// handle keeps the index below which slots are known (`limit`), and a
    /// push under it costs a look at the top only: most bodies stay within
    /// their first `LUA_MINSTACK` slots. The index is absolute, so pushes of
    /// code that did not count them cannot fool it.
    #[inline]
    pub(super) fn room(&self, n: c_int) {
        let top = self.top();
        if top + n <= self.limit.get() {
            return;
        }
        let ask = n.max(ffi::LUA_MINSTACK);
        // SAFETY: a valid state; `lua_checkstack` does not raise.
        if unsafe { ffi::lua_checkstack(self.l, ask) } == 0 {
            std::process::abort();
        }
        self.limit.set(top + ask);
    }

    /// `idx` for a read: as it is if it names a slot of this function's
    /// stack, a pseudo-index or a slot above the top (which reads as none);
    /// a negative index below the frame, or 0, becomes one above the top.
    /// So no read reaches outside the frame. (Lua reads a positive index at
    /// or above the top as none without touching the slot, and an upvalue
    /// index past the closure's as none: those need no look at the top.)
    #[inline]
    pub(super) fn readable(&self, idx: c_int) -> c_int {
        if idx > 0 || idx <= ffi::LUA_REGISTRYINDEX {
            return idx;
        }
        let top = self.top();
        if idx == 0 || -idx > top { top + 1 } else { idx }
    }

    /// `idx` for a write: it must name a value on the stack (`1..=top` or
    /// `-top..=-1`). Anything else is a bug of ours, and a write there would
    /// corrupt memory: the process aborts instead.
    #[inline]
    pub(super) fn slot(&self, idx: c_int) -> c_int {
        let top = self.top();
        if (1..=top).contains(&idx) || (idx < 0 && -idx <= top) { idx } else { std::process::abort() }
    }

    /// `[-1, +0, -]` Moves the top value into `idx`.
    pub fn replace(&mut self, idx: c_int) {
        let idx = self.slot(idx);
        self.slot(-1);
        // SAFETY: a valid state; both slots exist (checked); `&mut self`:
        // the replaced value may go.
        unsafe { ffi::lua_replace(self.l, idx) }
    }

    /// `[-1, +1, -]` Moves the top value to `idx`, shifting up those above.
    pub fn insert(&mut self, idx: c_int) {
        let idx = self.slot(idx);
        // SAFETY: a valid state and a slot on the stack (checked); values
        // move but none leaves the stack.
        unsafe { ffi::lua_rotate(self.l, idx, 1) }
    }

    /// `[-1, +0, -]` Removes the value at `idx`.
    pub fn remove(&mut self, idx: c_int) {
        let idx = self.slot(idx);
        // SAFETY: a valid state and a slot on the stack (checked); `&mut
        // self`: the value may go.
        unsafe {
            ffi::lua_rotate(self.l, idx, -1);
            ffi::lua_settop(self.l, -2);
        }
    }

    // ===== reading =====

    /// `[-0, +0, -]` The type of the value at `idx`.
    #[inline]
    pub fn kind(&self, idx: c_int) -> Type {
        let idx = self.readable(idx);
        // SAFETY: a valid state; reads only, within the frame (`readable`).
        Type::of(unsafe { ffi::lua_type(self.l, idx) })
    }

    /// `[-0, +0, -]` Is the value at `idx` nil or absent?
    #[inline]
    pub fn is_nil(&self, idx: c_int) -> bool {
        matches!(self.kind(idx), Type::None | Type::Nil)
    }

    /// `[-0, +0, -]` Lua's truth of the value at `idx`.
    pub fn to_bool(&self, idx: c_int) -> bool {
        let idx = self.readable(idx);
        // SAFETY: a valid state; reads only, within the frame.
        unsafe { ffi::lua_toboolean(self.l, idx) != 0 }
    }

    /// `[-0, +0, -]` The value at `idx` as an integer, if it is a number with
    /// an integer value (or a string convertible to one).
    pub fn to_int(&self, idx: c_int) -> Option<lua_Integer> {
        let (idx, mut ok) = (self.readable(idx), 0);
        // SAFETY: a valid state, within the frame; an integer conversion
        // does not change the slot.
        let n = unsafe { ffi::lua_tointegerx(self.l, idx, &mut ok) };
        (ok != 0).then_some(n)
    }

    /// `[-0, +0, -]` The 64-bit identity at `idx` that `push_id` pushed; 0
    /// for any other value.
    pub fn to_id(&self, idx: c_int) -> u64 {
        let idx = self.readable(idx);
        // SAFETY: a valid state, within the frame; the value is only read.
        unsafe { ffi::to_id(self.l, idx) }
    }

    /// `[-0, +0, -]` Is the value at `idx` a number of the integer subtype
    /// (`lua_isinteger`: no float, no string)?
    pub fn is_integer(&self, idx: c_int) -> bool {
        let idx = self.readable(idx);
        // SAFETY: a valid state; `lua_isinteger` looks at the tag of a slot
        // within the frame.
        unsafe { ffi::lua_isinteger(self.l, idx) != 0 }
    }

    /// `[-0, +0, -]` The value at `idx` as a number, if it is one (or a string
    /// convertible to one).
    pub fn to_num(&self, idx: c_int) -> Option<f64> {
        let (idx, mut ok) = (self.readable(idx), 0);
        // SAFETY: a valid state, within the frame; a number conversion
        // does not change the slot.
        let n = unsafe { ffi::lua_tonumberx(self.l, idx, &mut ok) };
        (ok != 0).then_some(n)
    }

    /// `[-0, +0, -]` The bytes of the string at `idx` (never converts).
    pub fn to_bytes(&self, idx: c_int) -> Option<&[u8]> {
        let idx = self.readable(idx);
        if self.kind(idx) != Type::String {
            return None;
        }
        let mut len = 0;
        // SAFETY: a string slot converts to itself; Lua keeps its bytes
        // (and a NUL after them) while the slot holds it, and `&self` keeps
        // the slot (rule 3).
        unsafe {
            let p = ffi::lua_tolstring(self.l, idx, &mut len);
            Some(std::slice::from_raw_parts(p.cast(), len))
        }
    }

    /// `[-0, +0, -]` The string at `idx` as a C string: its bytes up to the
    /// first NUL (never converts).
    pub fn to_cstr(&self, idx: c_int) -> Option<&CStr> {
        let idx = self.readable(idx);
        if self.kind(idx) != Type::String {
            return None;
        }
        // SAFETY: as `to_bytes`; Lua ends every string with a NUL.
        unsafe { Some(CStr::from_ptr(ffi::lua_tolstring(self.l, idx, std::ptr::null_mut()))) }
    }

    /// `[-0, +0, -]` The light userdata or userdata address at `idx`, as an
    /// identity (null for other values).
    pub fn to_pointer(&self, idx: c_int) -> *mut c_void {
        let idx = self.readable(idx);
        // SAFETY: a valid state; reads only, within the frame.
        unsafe { ffi::lua_touserdata(self.l, idx) }
    }

    /// `[-0, +0, -]` The address of the value at `idx` (`lua_topointer`), as
    /// an identity: equal short strings are one object in Lua 5.4.
    pub fn to_identity(&self, idx: c_int) -> *const c_void {
        let idx = self.readable(idx);
        // SAFETY: a valid state; `lua_topointer` only reads the slot (a
        // `readable` one) and converts nothing.
        unsafe { ffi::lua_topointer(self.l, idx) }
    }

    /// `[-0, +0, -]` The C function at `idx`, if it is one (an identity).
    pub fn to_cfunction(&self, idx: c_int) -> Option<ffi::lua_CFunction> {
        let idx = self.readable(idx);
        // SAFETY: a valid state; answers the pointer of a light C function
        // or C closure in a `readable` slot, or none; nothing is called.
        unsafe { ffi::lua_tocfunction(self.l, idx) }
    }

    /// `[-0, +0, -]` Are the values at `a` and `b` primitively equal
    /// (`rawequal`)?
    pub fn raw_equal(&self, a: c_int, b: c_int) -> bool {
        let (a, b) = (self.readable(a), self.readable(b));
        // SAFETY: a valid state; compares two slots of the frame, no
        // metamethod.
        unsafe { ffi::lua_rawequal(self.l, a, b) != 0 }
    }

    // ===== argument checks =====

    /// `[-0, +0, -]` Argument `arg` is present (nil counts).
    pub fn check_any(&self, arg: c_int) -> Result<(), Error> {
        if self.kind(arg) == Type::None { Err(Error::arg(arg, c"value expected")) } else { Ok(()) }
    }

    /// `[-0, +0, -]` Argument `arg` is of type `t`.
    pub fn check_type(&self, arg: c_int, t: Type) -> Result<(), Error> {
        if self.kind(arg) == t { Ok(()) } else { Err(Error::Type { arg, expected: t.name() }) }
    }

    /// `[-0, +0, -]` Argument `arg` as an integer (`luaL_checkinteger`).
    pub fn check_int(&self, arg: c_int) -> Result<lua_Integer, Error> {
        match self.to_int(arg) {
            Some(n) => Ok(n),
            None if self.to_num(arg).is_some() => Err(Error::arg(arg, c"number has no integer representation")),
            None => Err(Error::Type { arg, expected: c"number" }),
        }
    }

    /// `[-0, +0, -]` Argument `arg` as an integer, `def` if nil or absent.
    pub fn opt_int(&self, arg: c_int, def: lua_Integer) -> Result<lua_Integer, Error> {
        if self.is_nil(arg) { Ok(def) } else { self.check_int(arg) }
    }

    /// `[-0, +0, -]` Argument `arg` as a number (`luaL_checknumber`).
    pub fn check_num(&self, arg: c_int) -> Result<f64, Error> {
        self.to_num(arg).ok_or(Error::Type { arg, expected: c"number" })
    }

    /// `[-0, +0, -]` Argument `arg` as a number, `def` if nil or absent.
    pub fn opt_num(&self, arg: c_int, def: f64) -> Result<f64, Error> {
        if self.is_nil(arg) { Ok(def) } else { self.check_num(arg) }
    }

    /// `[-0, +0, -]` Argument `arg` as a number other than NaN (a time).
    pub fn check_time(&self, arg: c_int) -> Result<f64, Error> {
        if self.kind(arg) != Type::Number {
            return Err(Error::Type { arg, expected: c"number" });
        }
        let t = self.to_num(arg).unwrap_or(f64::NAN);
        if t.is_nan() { Err(Error::arg(arg, c"number expected, got NaN")) } else { Ok(t) }
    }

    /// `[-0, +0, -]` Argument `arg` as a string; a number is converted in its
    /// slot, as `luaL_checklstring` does.
    pub fn check_bytes(&self, arg: c_int) -> Result<&[u8], Error> {
        match self.kind(arg) {
            Type::String => {}
            // SAFETY: a number at `arg` (so a slot of the frame); the
            // conversion replaces it in its slot by a string (no value leaves
            // the stack, no reference into a number exists).
            Type::Number => unsafe {
                ffi::lua_tolstring(self.l, arg, std::ptr::null_mut());
            },
            _ => return Err(Error::Type { arg, expected: c"string" }),
        }
        Ok(self.to_bytes(arg).unwrap_or_default())
    }

    /// `[-0, +0, -]` Argument `arg` as a C string: its bytes up to the first
    /// NUL (a number converted, as `check_bytes`).
    pub fn check_cstr(&self, arg: c_int) -> Result<&CStr, Error> {
        self.check_bytes(arg)?;
        Ok(self.to_cstr(arg).unwrap_or_default())
    }

    /// `[-0, +0, -]` Argument `arg` as a string, `def` if nil or absent.
    pub fn opt_bytes<'a>(&'a self, arg: c_int, def: &'a [u8]) -> Result<&'a [u8], Error> {
        if self.is_nil(arg) { Ok(def) } else { self.check_bytes(arg) }
    }

    /// `[-0, +0, -]` Argument `arg` (or `def` if nil or absent) as one of
    /// `names`: its position there (`luaL_checkoption`, with its message).
    pub fn check_option(&self, arg: c_int, def: Option<&CStr>, names: &[&CStr]) -> Result<usize, Error> {
        let name = match def {
            Some(d) if self.is_nil(arg) => d.to_bytes(),
            _ => self.check_bytes(arg)?,
        };
        names
            .iter()
            .position(|n| n.to_bytes() == name)
            .ok_or_else(|| Error::arg_owned(arg, format!("invalid option '{}'", shown(name))))
    }

    // ===== pushing =====

    /// `[-0, +1, -]` Pushes nil.
    #[inline]
    pub fn push_nil(&self) {
        self.room(1);
        // SAFETY: room for one value (checked); nil allocates nothing.
        unsafe { ffi::lua_pushnil(self.l) }
    }

    /// `[-0, +1, -]` Pushes a boolean.
    #[inline]
    pub fn push_bool(&self, b: bool) {
        self.room(1);
        // SAFETY: room for one value (checked); a boolean is stored inline.
        unsafe { ffi::lua_pushboolean(self.l, b as c_int) }
    }

    /// `[-0, +1, -]` Pushes an integer.
    #[inline]
    pub fn push_int(&self, n: lua_Integer) {
        self.room(1);
        // SAFETY: room for one value (checked); an integer is stored inline.
        unsafe { ffi::lua_pushinteger(self.l, n) }
    }

    /// `[-0, +1, m]` Pushes a 64-bit identity (a task handle) that `to_id`
    /// reads back whole: an integer, or 8 bytes where the Lua version has no
    /// integers (`version::push_id`).
    #[inline]
    pub fn push_id(&self, id: u64) {
        self.room(1);
        // SAFETY: room for one value (checked).
        unsafe { ffi::push_id(self.l, id) }
    }

    /// `[-0, +1, -]` Pushes the global table (the registry's in 5.2 on, a
    /// pseudo-index's in 5.1).
    #[inline]
    pub fn push_globals(&self) {
        self.room(1);
        // SAFETY: room for one value (checked); the global table exists.
        unsafe { ffi::lua_pushglobaltable(self.l) };
    }

    /// `[-0, +1, -]` Pushes a float.
    #[inline]
    pub fn push_num(&self, n: f64) {
        self.room(1);
        // SAFETY: room for one value (checked); a float is stored inline.
        unsafe { ffi::lua_pushnumber(self.l, n) }
    }

    /// `[-0, +1, m]` Pushes a string of any bytes.
    #[inline]
    pub fn push_bytes(&self, s: &[u8]) {
        self.room(1);
        // SAFETY: a valid state with room; Lua copies `s`.
        unsafe { ffi::lua_pushlstring(self.l, s.as_ptr().cast(), s.len()) };
    }

    /// `[-0, +1, m]` Pushes the bytes `s` made for the push (a message, a
    /// formatted name). Lua copies them in a protected call: should that
    /// raise a memory error, `s` is freed before the error goes on.
    pub fn push_owned(&self, s: impl Into<Vec<u8>>) {
        let s: Vec<u8> = s.into();
        self.room(3);
        // SAFETY: a valid state with room for the function and its two
        // arguments; `push_slice` reads the bytes of `s`, alive during the
        // call. On an error its value is on the top, raised again once `s`
        // is gone (the memory error that rule 2 of the layer allows).
        unsafe {
            ffi::lua_pushcfunction(self.l, push_slice);
            ffi::lua_pushlightuserdata(self.l, s.as_ptr().cast_mut().cast());
            ffi::lua_pushinteger(self.l, s.len() as lua_Integer);
            if ffi::lua_pcall(self.l, 2, 1, 0) != ffi::LUA_OK {
                drop(s);
                ffi::lua_error(self.l);
            }
        }
    }

    /// `[-0, +1, m]` Pushes a copy of the value at `idx`.
    #[inline]
    pub fn push_value(&self, idx: c_int) {
        let idx = self.readable(idx);
        self.room(1);
        // SAFETY: room for the copy (checked) of a value read within the
        // frame (`readable`: a bad index copies none, as nil).
        unsafe { ffi::lua_pushvalue(self.l, idx) }
    }

    /// `[-0, +1, m]` Pushes a copy of the bytes `pick` finds in what `cell`
    /// holds, the cell left as it is and not borrowed while Lua copies them:
    /// should the copy raise a memory error, no skipped guard leaves the
    /// cell borrowed for good, and nothing taken out of it is lost.
    pub fn push_held<T>(&self, cell: &RefCell<T>, pick: impl FnOnce(&T) -> &[u8]) {
        let (p, n) = {
            let v = cell.borrow();
            let b = pick(&v);
            (b.as_ptr(), b.len())
        };
        self.room(1);
        // SAFETY: a valid state with room. The bytes stay as they are until
        // they are copied: `cell` is borrowed (shared) for the whole call, no
        // Rust code runs meanwhile, and `lua_pushlstring` copies them before
        // it may run Lua code (its allocation may collect, but in emergency
        // mode, which calls no finalizer; the collection step that may call
        // one comes after the copy).
        unsafe { ffi::lua_pushlstring(self.l, p.cast(), n) };
    }

    /// `[-1, +(0|1), -]` Replaces the string on the top by the number it
    /// denotes as a numeral (Lua's syntax, as `tonumber`), or pops it and
    /// answers false if it denotes none (or is not a string).
    pub fn numeral_on_top(&mut self) -> bool {
        let Some(len) = self.to_bytes(-1).map(<[u8]>::len) else {
            self.pop(1);
            return false;
        };
        self.room(1);
        // SAFETY: a valid state with room for the number the conversion
        // pushes on success; the top is a string (checked), which Lua ends
        // with a NUL and its slot keeps during the conversion.
        let converted =
            unsafe { ffi::lua_stringtonumber(self.l, ffi::lua_tolstring(self.l, -1, std::ptr::null_mut())) };
        // A NUL inside the string would end the numeral early: no number then.
        let whole = converted != 0 && converted == len + 1;
        if converted != 0 {
            self.insert(-2); // number string
        }
        self.pop(1);
        if converted != 0 && !whole {
            self.pop(1);
        }
        whole
    }

    /// `[-0, +1, -]` Pushes an address as a light userdata (a key or a tag).
    pub fn push_light(&self, p: *const c_void) {
        self.room(1);
        // SAFETY: a valid state with room; Lua never dereferences it.
        unsafe { ffi::lua_pushlightuserdata(self.l, p.cast_mut()) }
    }

    /// `[-0, +1, m]` Pushes the C function `f`.
    pub fn push_fn(&self, f: ffi::lua_CFunction) {
        self.room(1);
        // SAFETY: room for one value (checked); a light C function is a
        // plain pointer, called by Lua with the C function ABI it has.
        unsafe { ffi::lua_pushcfunction(self.l, f) }
    }

    /// `[-n, +1, m]` Pops `n` values and pushes the C closure `f` over them.
    pub fn push_closure(&mut self, f: ffi::lua_CFunction, n: c_int) {
        // SAFETY: a valid state; the closure takes the `n` values (a net
        // push of at most one, into the slot the first one held).
        unsafe { ffi::lua_pushcclosure(self.l, f, n) }
    }

    /// `[-0, +2, m]` Pushes `nil, msg`: the failure of a call that may fail
    /// (LuaSocket's and `io`'s convention). Returns 2.
    pub fn fail(&self, msg: &CStr) -> c_int {
        self.push_nil();
        self.push_bytes(msg.to_bytes());
        2
    }

    /// `[-0, +2, m]` Pushes `false, msg` (a failure answered like `pcall`).
    /// Returns 2.
    pub fn fail_false(&self, msg: &CStr) -> c_int {
        self.push_bool(false);
        self.push_bytes(msg.to_bytes());
        2
    }

    /// `[-0, +3, m]` Pushes `nil, message, errno` (`luaL_fileresult`'s
    /// failure) for `errno`, prefixed by `prefix: ` if given. Returns 3.
    pub fn fail_errno(&self, errno: i32, prefix: Option<&CStr>) -> c_int {
        let mut msg = std::io::Error::from_raw_os_error(errno).to_string();
        // `std` adds " (os error N)"; Lua's `io` says `strerror` alone.
        msg.truncate(msg.find(" (os error").unwrap_or(msg.len()));
        if let Some(p) = prefix {
            msg = format!("{}: {msg}", p.to_string_lossy());
        }
        self.push_nil();
        self.push_owned(msg);
        self.push_int(errno as lua_Integer);
        3
    }
}

impl Lua {
    // ===== other threads =====

    /// `[-0, +n, -]` Moves the top `n` values of `co` (suspended, with that
    /// many) onto this stack, and makes room for `extra` more above them;
    /// an error if this stack cannot grow so far, nothing moved then.
    pub fn take_from(&mut self, co: &Thread, n: c_int, extra: c_int) -> Result<(), Error> {
        self.check_stack(n + extra)?;
        if n == 0 {
            return Ok(());
        }
        if !co.is_suspended() || !(0..=co.top()).contains(&n) {
            std::process::abort(); // a bug of ours: a read outside its frame
        }
        // SAFETY: two threads of one state (`Thread::from_raw`); `co` holds
        // `n` values (checked) and nothing runs on it; this stack has room.
        unsafe { ffi::lua_xmove(co.l, self.l, n) };
        Ok(())
    }

    /// `[-n, +0, -]` Moves the top `n` values of this stack onto `co`
    /// (suspended): whether they moved. Nothing moves if `co` is not
    /// suspended or its stack cannot grow.
    pub fn give_to(&mut self, co: &Thread, n: c_int) -> bool {
        if n == 0 {
            return true;
        }
        self.slot(-n);
        // SAFETY: two threads of one state; this stack holds `n` values
        // (checked by `slot`); `co` is suspended (nothing runs on it) with
        // room for them (`lua_checkstack` answers 0 instead of raising).
        unsafe {
            if !co.is_suspended() || ffi::lua_checkstack(co.l, n) == 0 {
                return false;
            }
            ffi::lua_xmove(self.l, co.l, n);
        }
        true
    }
}

/// `push_slice(pointer, length)`, called protected by `push_owned`: the
/// string of those bytes.
unsafe extern "C-unwind" fn push_slice(l: L) -> c_int {
    // SAFETY: `push_owned` calls this with the address and length of a
    // live string; a memory error unwinds to its `lua_pcall`, past no Rust
    // frame but this plain one.
    unsafe {
        let p = ffi::lua_touserdata(l, 1);
        let n = ffi::lua_tointegerx(l, 2, std::ptr::null_mut()) as usize;
        ffi::lua_pushlstring(l, p.cast(), n);
    }
    1
}
