//! Full userdata holding a Rust value, with a type check.
//!
//! A userdata of type `T` is a block `Block<T>` under the metatable
//! registered as `T::NAME`, whose `__gc` drops the value. Lua may still hand
//! a collected userdata to a method (an object resurrected by another
//! finalizer), so the block says whether its value is alive and the check
//! refuses a dead one.

use std::cell::Cell;
use std::ffi::{CStr, c_int};
use std::mem::ManuallyDrop;

use mlua::ffi;

use super::error::Error;
use super::stack::Type;
use super::table::REGISTRY;
use super::thread::{L, Lua};

/// A Rust type kept in Lua userdata. What changes after creation lives in
/// `Cell`s: Lua code can hold the same userdata twice, so the layer hands
/// out only shared references.
///
/// # Safety
/// `NAME` is this type's alone: no other `Udata` type, and no other
/// registry field of the Lua state, uses it. The layer trusts a userdata
/// under that metatable to hold a `Self`.
pub unsafe trait Udata: Sized + 'static {
    /// The metatable's registry name, also `__name` in error messages.
    const NAME: &'static CStr;
}

/// The userdata block. The value comes first, so the block's address is the
/// value's (`value_at`).
#[repr(C)]
struct Block<T> {
    value: ManuallyDrop<T>,
    live: Cell<bool>,
}

impl Lua {
    /// `[-0, +1, m]` Pushes the metatable of `T`; with none registered,
    /// first makes it: `__name`, a `__gc` that drops the value, and what
    /// `fill` adds (it finds the table on the top). The table is registered
    /// only once complete: a memory error in between registers nothing,
    /// and the next call makes it again, where a table registered first
    /// would stay without its `__gc` (objects never finalized) or methods.
    /// On an error nothing is pushed (but an `Error::Value`'s value).
    pub fn udata_metatable<T: Udata>(&mut self, fill: impl FnOnce(&mut Lua) -> Result<(), Error>) -> Result<(), Error> {
        if self.get_field(REGISTRY, T::NAME) != Type::Nil {
            return Ok(());
        }
        self.pop(1);
        let top = self.top();
        self.new_table(0, 4);
        self.push_bytes(T::NAME.to_bytes());
        self.set_field(-2, c"__name");
        self.push_fn(gc::<T>);
        self.set_field(-2, c"__gc");
        if let Err(e) = fill(self) {
            if matches!(e, Error::Value) {
                self.replace(top + 1);
                self.set_top(top + 1);
            } else {
                self.set_top(top);
            }
            return Err(e);
        }
        self.push_value(-1);
        self.set_field(REGISTRY, T::NAME);
        Ok(())
    }

    /// `[-0, +1, m]` Pushes a new userdata holding `value`, with `nuv` user
    /// values (nil), under `T`'s metatable (`udata_metatable` made it).
    ///
    /// The block is allocated in a protected call: should Lua's allocator
    /// refuse it, `value` is dropped (a descriptor it owns closes) before
    /// the memory error is raised on.
    pub fn new_udata<T: Udata>(&self, value: T, nuv: c_int) -> &T {
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
            self.set_metatable(-1, T::NAME);
            &(*b).value
        }
    }

    /// `[-0, +0, -]` The live `T` at `idx`, if the value there is one.
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

    /// `[-0, +1, -]` Pushes user value `n` of the userdata at `idx` and says
    /// its type (`None` if it has no such value).
    pub fn get_uservalue(&self, idx: c_int, n: c_int) -> Type {
        let idx = self.readable(idx);
        self.room(1);
        // SAFETY: a valid state with room; a non-userdata or a missing value
        // pushes nil and answers LUA_TNONE.
        Type::of(unsafe { ffi::lua_getiuservalue(self.l, idx, n) })
    }

    /// `[-1, +0, -]` Pops the top value into user value `n` of the userdata
    /// at `idx`; false (the value dropped) if it has no such value.
    pub fn set_uservalue(&mut self, idx: c_int, n: c_int) -> bool {
        let idx = self.abs(idx);
        if self.kind(idx) != Type::Userdata {
            self.pop(1);
            return false;
        }
        // SAFETY: a full userdata at `idx` (checked); `&mut self`: the old
        // user value may go.
        unsafe { ffi::lua_setiuservalue(self.l, idx, n) != 0 }
    }

    /// The block at `idx` if its metatable is `T`'s (`luaL_testudata`).
    fn block<T: Udata>(&self, idx: c_int) -> Option<&Block<T>> {
        let idx = self.readable(idx);
        self.room(2);
        // SAFETY: a valid state with room for the two metatables compared
        // and popped; a userdata under `T::NAME`'s metatable was made by
        // `new_udata::<T>` (the name is `T`'s alone), so it holds a
        // `Block<T>`, anchored by its slot for the borrow.
        unsafe {
            let p = ffi::luaL_testudata(self.l, idx, T::NAME.as_ptr()) as *const Block<T>;
            p.as_ref()
        }
    }
}

/// The `T` whose userdata block is at `ud`, for code that kept the address
/// of a userdata it checked (the engine's `Selectable`s).
///
/// # Safety
/// `ud` is the address of a userdata made by `new_udata::<T>`, alive (held
/// by a stack slot or a reachable value) for `'a`.
pub unsafe fn value_at<'a, T: Udata>(ud: *const std::ffi::c_void) -> &'a T {
    // SAFETY: the contract; `Block<T>` is `repr(C)` with the value first.
    unsafe { &(*(ud as *const Block<T>)).value }
}

/// `[-0, +1, -]` Pushes a new userdata block of `size` bytes with `nuv`
/// user values, allocated in a protected call, and answers its address; on
/// a memory error, answers null with the error's value pushed instead, for
/// the caller to free what the block was to own before raising it.
///
/// # Safety
/// `l` is a valid state, running a C function, with three free slots.
pub unsafe fn alloc_block(l: L, size: usize, nuv: c_int) -> *mut std::ffi::c_void {
    // SAFETY: the contract; `lua_pcall` catches the allocation's error.
    unsafe {
        ffi::lua_pushcfunction(l, new_block);
        ffi::lua_pushinteger(l, size as ffi::lua_Integer);
        ffi::lua_pushinteger(l, nuv as ffi::lua_Integer);
        if ffi::lua_pcall(l, 2, 1, 0) != ffi::LUA_OK {
            return std::ptr::null_mut();
        }
        ffi::lua_touserdata(l, -1)
    }
}

/// `new_block(size, nuv)`, called protected by `alloc_block`: a userdata of
/// `size` bytes with `nuv` user values.
unsafe extern "C-unwind" fn new_block(l: L) -> c_int {
    // SAFETY: `alloc_block` calls this with two integers; the allocation's
    // error unwinds to its `lua_pcall`, past no Rust frame but this one.
    unsafe {
        let size = ffi::lua_tointegerx(l, 1, std::ptr::null_mut()) as usize;
        let nuv = ffi::lua_tointegerx(l, 2, std::ptr::null_mut()) as c_int;
        ffi::lua_newuserdatauv(l, size, nuv);
    }
    1
}

/// `__gc` of every `T`: drops the value once.
unsafe extern "C-unwind" fn gc<T: Udata>(l: L) -> c_int {
    // SAFETY: Lua calls a metatable's `__gc` with its object; the metatable
    // is `T`'s, so the block is a `Block<T>`; `live` makes the drop happen
    // once, and the value is not read after it (`udata` refuses a dead one).
    unsafe {
        let b = ffi::luaL_testudata(l, 1, T::NAME.as_ptr()) as *mut Block<T>;
        if let Some(b) = b.as_mut() {
            if b.live.replace(false) {
                ManuallyDrop::drop(&mut b.value);
            }
        }
    }
    0
}
