//! Full userdata holding a Rust value, with a type check.
//!
//! A userdata of type `T` is a block `Block<T>` under the metatable
//! registered as `T::NAME`, whose `__gc` drops the value. Lua may still hand
//! a collected userdata to a method (an object resurrected by another
//! finalizer), so the block says whether its value is alive and the check
//! refuses a dead one. Lua code cannot call the `__gc` itself: the
//! metatable's `__metatable` is a copy without it, which is what
//! `getmetatable` answers (the debug library aside, as for any C library).
//!
//! A type whose objects change class (LuaSocket's `tcp{master}` becomes
//! `tcp{client}`) lists its classes in `T::CLASSES`, a `static`: one
//! metatable each, registered under its own name. Its objects carry a tag
//! instead, user value 1: a light userdata, the static's address. The check
//! reads the tag (no metatable, no registry: it is on every socket call);
//! it is unforgeable because Lua code cannot set user values and this
//! layer's `set_uservalue` refuses light userdata.

use std::any::TypeId;
use std::cell::Cell;
use std::ffi::{CStr, c_int};
use std::marker::PhantomData;
use std::mem::ManuallyDrop;

use super::version::{self as ffi, lua_Integer};

use super::error::Error;
use super::stack::Type;
use super::table::REGISTRY;
use super::thread::{L, Lua};

/// A Rust type kept in Lua userdata. What changes after creation lives in
/// `Cell`s: Lua code can hold the same userdata twice, so the layer hands
/// out only shared references.
///
/// # Safety
/// `NAME`, `CLASSES` and each name in it are this type's alone: no other
/// `Udata` type, and no other registry field of the Lua state, uses them.
/// The layer trusts a userdata under `NAME`'s metatable, or tagged with
/// `CLASSES`, to hold a `Self`.
pub unsafe trait Udata: Sized + 'static {
    /// The metatable's registry name, also `__name` in error messages (for
    /// a type with classes, only the name `udata`'s message gives).
    const NAME: &'static CStr;
    /// Its classes, if its objects change class (none: one metatable,
    /// `NAME`).
    const CLASSES: Option<&'static Classes> = None;

    /// Runs in its `__gc`, just before the value is dropped: what must
    /// still talk to Lua (nothing, by default).
    fn finalize(&self, _lua: &mut Lua) {}
}

/// The registry names of the metatables of a `Udata` type whose objects
/// change class. Kept in a `static` of its own: its address is the tag of
/// the type's objects.
pub struct Classes(pub &'static [&'static CStr]);

impl Classes {
    /// The tag of the objects of the type (user value 1).
    fn tag(&'static self) -> *const std::ffi::c_void {
        (self as *const Classes).cast()
    }
}

/// A C function whose closures hold a `T` as upvalue 1: made by
/// `upvalue_fn!` (its trampoline tells the layer so), pushed only by
/// `push_upvalue_fn` (which checks the `T`).
pub struct UpvalueFn<T>(ffi::lua_CFunction, PhantomData<T>);

impl<T> Clone for UpvalueFn<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for UpvalueFn<T> {}

impl<T: Udata> UpvalueFn<T> {
    /// # Safety
    /// `f` is the trampoline `upvalue_fn!` makes: the only C function that
    /// runs with `Lua::in_closure_of::<T>`.
    pub const unsafe fn new(f: ffi::lua_CFunction) -> UpvalueFn<T> {
        UpvalueFn(f, PhantomData)
    }

    /// Is `f` this function (a closure's, as `to_cfunction` reads it)?
    pub fn is(&self, f: ffi::lua_CFunction) -> bool {
        std::ptr::fn_addr_eq(self.0, f)
    }
}

/// The userdata block. The value comes first, so the block's address (the
/// userdata's, as `%p` shows it) is the value's.
#[repr(C)]
struct Block<T> {
    value: ManuallyDrop<T>,
    live: Cell<bool>,
}

impl Lua {
    /// `[-0, +1, m]` Pushes the metatable of `T`, a type without classes;
    /// with none registered, first makes it: `__name`, a `__gc` that drops
    /// the value, and what `fill` adds (see `make_metatable`).
    pub fn udata_metatable<T: Udata>(&mut self, fill: impl FnOnce(&mut Lua) -> Result<(), Error>) -> Result<(), Error> {
        const { assert!(T::CLASSES.is_none(), "a type with classes has a metatable per class") };
        self.make_metatable::<T>(T::NAME, fill)
    }

    /// `[-0, +1, m]` Pushes the metatable of class `class` of `T` (registry
    /// name `T::CLASSES[class]`); with none registered, first makes it, as
    /// `udata_metatable` does.
    pub fn udata_class<T: Udata>(
        &mut self,
        class: usize,
        fill: impl FnOnce(&mut Lua) -> Result<(), Error>,
    ) -> Result<(), Error> {
        self.make_metatable::<T>(T::CLASSES.expect("a type with classes").0[class], fill)
    }

    /// `[-0, +1, m]` The metatable registered as `name`, made now for `T`
    /// if there is none: `__name`, `__gc`, what `fill` adds (it finds the
    /// table on the top), and `__metatable`, a copy of it all but `__gc`. The table is registered only once complete: a
    /// memory error in between registers nothing, and the next call makes
    /// it again, where a table registered first would stay without its
    /// `__gc` (objects never finalized) or methods. On an error nothing is
    /// pushed (but an `Error::Value`'s value).
    fn make_metatable<T: Udata>(
        &mut self,
        name: &CStr,
        fill: impl FnOnce(&mut Lua) -> Result<(), Error>,
    ) -> Result<(), Error> {
        if self.get_field(REGISTRY, name) != Type::Nil {
            return Ok(());
        }
        self.pop(1);
        let top = self.top();
        self.new_table(0, 4);
        self.push_bytes(name.to_bytes());
        self.set_field(-2, c"__name");
        self.push_fn(gc::<T>);
        self.set_field(-2, c"__gc");
        if let Some(f) = ffi::NAME_TOSTRING {
            self.push_fn(f);
            self.set_field(-2, c"__tostring");
        }
        if let Err(e) = fill(self) {
            if matches!(e, Error::Value) {
                self.replace(top + 1);
                self.set_top(top + 1);
            } else {
                self.set_top(top);
            }
            return Err(e);
        }
        // Lua code sees a copy without `__gc` (`getmetatable` answers
        // `__metatable`): a finalizer called by hand, say from another
        // object's finalizer while a body holds this value, would drop it
        // under that body.
        self.new_table(0, 8);
        self.copy_fields(-2, -1, c"__gc");
        self.set_field(-2, c"__metatable");
        self.push_value(-1);
        self.set_field(REGISTRY, name);
        Ok(())
    }

    /// `[-0, +1, m]` Pushes a new userdata holding `value`, with `nuv` user
    /// values (nil), under `T`'s metatable (`udata_metatable` made it).
    ///
    /// The block is allocated in a protected call: should Lua's allocator
    /// refuse it, `value` is dropped (a descriptor it owns closes) before
    /// the memory error is raised on. So does `new_udata_class`.
    pub fn new_udata<T: Udata>(&self, value: T, nuv: c_int) -> &T {
        const { assert!(T::CLASSES.is_none(), "a type with classes is made in one of them") };
        self.new_block(value, nuv, T::NAME)
    }

    /// `[-0, +1, m]` Pushes a new userdata holding `value`, of class `class`
    /// of `T` (`udata_class` made it), tagged as `T`'s (user value 1), with
    /// `nuv` more user values (nil), from 2.
    pub fn new_udata_class<T: Udata>(&self, value: T, class: usize, nuv: c_int) -> &T {
        let classes = T::CLASSES.expect("a type with classes");
        let t = self.new_block(value, 1 + nuv.max(0), classes.0[class]);
        self.push_light(classes.tag());
        // SAFETY: the new userdata is below its tag, and has user value 1:
        // the only write of a `Classes` address into a user value.
        unsafe { ffi::lua_setiuservalue(self.l, -2, 1) };
        t
    }

    /// `[-0, +1, m]` Pushes a new block holding `value` under the metatable
    /// registered as `name`, one of `T`'s.
    fn new_block<T: Udata>(&self, value: T, nuv: c_int, name: &CStr) -> &T {
        const { assert!(std::mem::align_of::<Block<u64>>() <= 8) };
        assert!(std::mem::align_of::<Block<T>>() <= 8, "Lua aligns userdata to 8 bytes");
        self.room(3);
        // SAFETY: a valid state with room for the allocation's call. On a
        // memory error, its value is on the top, raised again once `value`
        // is gone (the memory error that rule 2 of the layer allows).
        let b = unsafe { alloc_block(self.l, std::mem::size_of::<Block<T>>(), nuv) } as *mut Block<T>;
        if b.is_null() {
            drop(value);
            // SAFETY: as above.
            unsafe { ffi::lua_error(self.l) };
        }
        // SAFETY: the block on the top is fresh, sized for a `Block<T>` and
        // aligned for it (Lua aligns userdata to 8 bytes, checked above),
        // and is written before anything reads it; the slot it is in
        // anchors it for the returned borrow (rule 3).
        unsafe {
            b.write(Block { value: ManuallyDrop::new(value), live: Cell::new(true) });
            self.set_metatable(-1, name);
            &(*b).value
        }
    }

    /// `[-0, +0, m]` Makes the `T` at `idx` one of class `class` (its
    /// metatable that class's); nothing if no live `T` is there.
    pub fn set_class<T: Udata>(&self, idx: c_int, class: usize) {
        if let (Some(classes), Some(_)) = (T::CLASSES, self.test_udata::<T>(idx)) {
            self.set_metatable(idx, classes.0[class]);
        }
    }

    /// `[-0, +0, -]` The live `T` at `idx`, if the value there is one.
    #[inline]
    pub fn test_udata<T: Udata>(&self, idx: c_int) -> Option<&T> {
        let b = self.block::<T>(idx)?;
        b.live.get().then_some(&*b.value)
    }

    /// `[-0, +0, -]` Argument `arg` as a live `T` (`luaL_checkudata`'s
    /// message, or "... expected, got closed ..." for a collected one).
    pub fn udata<T: Udata>(&self, arg: c_int) -> Result<&T, Error> {
        match self.block::<T>(arg) {
            Some(b) if b.live.get() => Ok(&b.value),
            Some(_) => Err(Error::arg(arg, c"object already collected")),
            None => Err(Error::Type { arg, expected: T::NAME }),
        }
    }

    /// Runs `f` with the live `T` in upvalue `n` of the running C closure
    /// (`None` if the value there is not one, or was collected). The
    /// reference is not tied to a stack slot: the closure holds it. In an
    /// `UpvalueFn<T>` upvalue 1 is known to be a `T`, and is not checked
    /// again: the scheduler's functions reach their state this way on every
    /// call.
    #[inline]
    pub fn with_upvalue<T: Udata, R>(&mut self, n: c_int, f: impl FnOnce(&mut Lua, Option<&T>) -> R) -> R {
        let b = if n == 1 && self.upvalue_type == Some(TypeId::of::<T>()) {
            // SAFETY: a valid state; an upvalue's pseudo-index reads the
            // closure's upvalue (a full userdata here: `push_upvalue_fn`
            // made the closure with a `T`, and only the debug library, which
            // Lua's manual says breaks what libraries assume, could change
            // it).
            unsafe { ffi::lua_touserdata(self.l, Lua::upvalue(1)) as *mut Block<T> }
        } else {
            self.block_ptr::<T>(Lua::upvalue(n))
        };
        // SAFETY: null or a `Block<T>` (above, or `block_ptr`), held by an
        // upvalue of the closure that runs: reachable, so not collected, for
        // the whole call. `f` cannot keep the reference (it is
        // higher-ranked), and only `gc`, on an unreachable block, takes
        // `&mut`.
        let t = unsafe { b.as_ref() }.filter(|b| b.live.get()).map(|b| &*b.value);
        f(self, t)
    }

    /// `[-(n), +1, m]` Pushes `f` as a closure whose upvalue 1 is the `T` at
    /// `ud` and whose next upvalues are the `n` values on the top (popped).
    /// Nothing is pushed, and they stay, if there is no `T` at `ud`.
    pub fn push_upvalue_fn<T: Udata>(&mut self, f: UpvalueFn<T>, ud: c_int, n: c_int) -> bool {
        let ud = self.abs(ud);
        if self.block_ptr::<T>(ud).is_null() {
            return false;
        }
        self.push_value(ud);
        if n > 0 {
            self.insert(-n - 1);
        }
        self.push_closure(f.0, n + 1);
        true
    }

    /// `[-0, +1, -]` Pushes user value `n` of the userdata at `idx` and says
    /// its type (`None` if it has no such value).
    pub fn get_uservalue(&self, idx: c_int, n: c_int) -> Type {
        let idx = self.readable(idx);
        self.room(1);
        // SAFETY: a valid state with room; a non-userdata or a missing value
        // pushes nil and answers LUA_TNONE.
        Type::of(unsafe { ffi::lua_getiuservalue(self.l, idx, n) })
    }

    /// `[-0, +0, -]` `t[k]` (raw) as an integer, `t` being the table in
    /// user value `n` of the userdata at `ud` and `k` the value at `key`:
    /// `None` if there is no such table or the value is no integer. One
    /// call for what the scheduler does on every signal it looks up.
    pub fn uservalue_field_int(&self, ud: c_int, n: c_int, key: c_int) -> Option<lua_Integer> {
        let (ud, key) = (self.abs(ud), self.abs(key));
        self.room(2);
        let mut ok = 0;
        // SAFETY: a valid state with room for the table and the key; both
        // indices are within the frame (`abs`), read before anything is
        // pushed; a raw read raises nothing, nor does an integer
        // conversion, and the stack is as it was after.
        let v = unsafe {
            if ffi::lua_getiuservalue(self.l, ud, n) != ffi::LUA_TTABLE {
                ffi::lua_settop(self.l, -2);
                return None;
            }
            ffi::lua_pushvalue(self.l, key);
            ffi::lua_rawget(self.l, -2);
            let v = ffi::lua_tointegerx(self.l, -1, &mut ok);
            ffi::lua_settop(self.l, -3);
            v
        };
        (ok != 0).then_some(v)
    }

    /// `[-0, +0, m]` Sets `t[i]` (raw) to the value at `value` (nil if
    /// `None`), `t` being the table in user value `n` of the userdata at
    /// `ud`, and says whether `t[i]` was nil before. Nothing if there is no
    /// such table.
    pub fn swap_uservalue_index(&mut self, ud: c_int, n: c_int, i: lua_Integer, value: Option<c_int>) -> bool {
        let ud = self.abs(ud);
        let value = value.map(|v| self.abs(v));
        self.room(3);
        // SAFETY: a valid state with room for the table, the old value and
        // the new one; the indices are within the frame (`abs`), read before
        // the pushes; raw reads and writes with an integer key raise nothing
        // but a memory error (rule 2). The stack is as it was after.
        unsafe {
            if ffi::lua_getiuservalue(self.l, ud, n) != ffi::LUA_TTABLE {
                ffi::lua_settop(self.l, -2);
                return false;
            }
            let was_nil = ffi::lua_rawgeti(self.l, -1, i) == ffi::LUA_TNIL;
            ffi::lua_settop(self.l, -2);
            match value {
                Some(v) => ffi::lua_pushvalue(self.l, v),
                None => ffi::lua_pushnil(self.l),
            }
            ffi::lua_rawseti(self.l, -2, i);
            ffi::lua_settop(self.l, -2);
            was_nil
        }
    }

    /// `[-1, +0, -]` Pops the top value into user value `n` of the userdata
    /// at `idx`; false (the value dropped) if it has no such value, or if the
    /// value is a light userdata (those are the layer's tags).
    pub fn set_uservalue(&mut self, idx: c_int, n: c_int) -> bool {
        let idx = self.abs(idx);
        if self.kind(idx) != Type::Userdata || self.kind(-1) == Type::LightUserdata {
            self.pop(1);
            return false;
        }
        // SAFETY: a full userdata at `idx` (checked); `&mut self`: the old
        // user value may go.
        unsafe { ffi::lua_setiuservalue(self.l, idx, n) != 0 }
    }

    /// The block at `idx` if it is a `T`'s, anchored by its slot.
    #[inline]
    fn block<T: Udata>(&self, idx: c_int) -> Option<&Block<T>> {
        // SAFETY: `block_ptr` answers null or a `Block<T>` that the slot
        // keeps alive while `self` is borrowed (rule 3); it is only read.
        unsafe { self.block_ptr::<T>(idx).as_ref() }
    }

    /// The block at `idx` if its metatable is `T`'s (`luaL_testudata`), or,
    /// for a type with classes, if it has `T`'s tag; else null.
    #[inline]
    fn block_ptr<T: Udata>(&self, idx: c_int) -> *mut Block<T> {
        let idx = self.readable(idx);
        self.room(2);
        let Some(classes) = T::CLASSES else {
            // SAFETY: a valid state with room for the two metatables
            // compared and popped; a userdata under `T::NAME`'s metatable was
            // made by `new_udata::<T>` (the name is `T`'s alone), so it holds
            // a `Block<T>`.
            return unsafe { ffi::luaL_testudata(self.l, idx, T::NAME.as_ptr()) as *mut Block<T> };
        };
        if self.kind(idx) != Type::Userdata {
            return std::ptr::null_mut();
        }
        // SAFETY: a full userdata at `idx` and room for its user value 1,
        // popped after (a plain read). That value is a light userdata only
        // if Rust code of this crate put it there: Lua code cannot set user
        // values (the debug library aside, as for any metatable check), and
        // `set_uservalue` refuses light userdata. The only such write of a
        // `Classes` address is `new_udata_class::<T>`'s, of `T::CLASSES` (a
        // static of `T`'s), so the tag means a `Block<T>`.
        unsafe {
            let tagged = ffi::lua_getiuservalue(self.l, idx, 1) == ffi::LUA_TLIGHTUSERDATA
                && ffi::lua_touserdata(self.l, -1).cast_const() == classes.tag();
            ffi::lua_settop(self.l, -2);
            if tagged { ffi::lua_touserdata(self.l, idx) as *mut Block<T> } else { std::ptr::null_mut() }
        }
    }
}

/// `[-0, +1, -]` Pushes a new userdata block of `size` bytes with `nuv`
/// user values, allocated in a protected call, and answers its address; on
/// a memory error, answers null with the error's value pushed instead, for
/// the caller to free what the block was to own before raising it.
///
/// # Safety
/// `l` is a valid state, running a C function, with three free slots.
unsafe fn alloc_block(l: L, size: usize, nuv: c_int) -> *mut std::ffi::c_void {
    // SAFETY: the contract; `lua_pcall` catches the allocation's error.
    unsafe {
        ffi::lua_pushcfunction(l, new_userdata_call);
        ffi::lua_pushinteger(l, size as ffi::lua_Integer);
        ffi::lua_pushinteger(l, nuv as ffi::lua_Integer);
        if ffi::lua_pcall(l, 2, 1, 0) != ffi::LUA_OK {
            return std::ptr::null_mut();
        }
        ffi::lua_touserdata(l, -1)
    }
}

/// `new_userdata_call(size, nuv)`, called protected by `alloc_block`: a userdata of
/// `size` bytes with `nuv` user values.
unsafe extern "C-unwind" fn new_userdata_call(l: L) -> c_int {
    // SAFETY: `alloc_block` calls this with two integers; the allocation's
    // error unwinds to its `lua_pcall`, past no Rust frame but this one.
    unsafe {
        let size = ffi::lua_tointegerx(l, 1, std::ptr::null_mut()) as usize;
        let nuv = ffi::lua_tointegerx(l, 2, std::ptr::null_mut()) as c_int;
        ffi::lua_newuserdatauv(l, size, nuv);
    }
    1
}

/// `__gc` of every `T`: finalizes and drops the value once.
unsafe extern "C-unwind" fn gc<T: Udata>(l: L) -> c_int {
    // SAFETY: Lua calls a metatable's `__gc` on its running thread.
    let mut lua = unsafe { Lua::from_raw(l) };
    let b = lua.block_ptr::<T>(1);
    // SAFETY: null or a `Block<T>` held by slot 1, only read here.
    let live = unsafe { b.as_ref() }.is_some_and(|b| b.live.get());
    if !live {
        return 0;
    }
    // SAFETY: as above; `finalize` gets it shared, and slot 1 stays.
    T::finalize(unsafe { &(*b).value }, &mut lua);
    // SAFETY: no other reference to the block is alive: Lua calls `__gc` on
    // an object nothing reaches any more (no slot or upvalue of a running
    // body holds it), or on every object as it closes, when no body runs;
    // `live` makes the drop happen once, and the value is not read after
    // it (`udata`, `test_udata` and `with_upvalue` refuse a dead one).
    unsafe {
        let b = &mut *b;
        if b.live.replace(false) {
            ManuallyDrop::drop(&mut b.value);
        }
    }
    0
}
