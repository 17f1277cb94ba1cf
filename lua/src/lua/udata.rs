//! Full userdata holding a Rust value, with a type check.
//!
//! A userdata of type `T` is a block `Block<T>` under the metatable
//! registered as `T::NAME`, whose `__gc` drops the value. Lua may still hand
//! a collected userdata to a method (an object resurrected by another
//! finalizer), so the block says whether its value is alive and the check
//! refuses a dead one.
//!
//! A type whose objects change class (LuaSocket's `tcp{master}` becomes
//! `tcp{client}`) lists its classes in `T::CLASSES`: one metatable each,
//! registered under its own name. `T::NAME` then names, in the registry, the
//! set of those metatables (`set[mt] = true`), which only this file writes;
//! the check looks the object's metatable up there.

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
/// `NAME` and each of `CLASSES` are this type's alone: no other `Udata`
/// type, and no other registry field of the Lua state, uses them. The layer
/// trusts a userdata under those metatables to hold a `Self`.
pub unsafe trait Udata: Sized + 'static {
    /// The metatable's registry name, also `__name` in error messages; for
    /// a type with classes, the registry name of the set of its metatables.
    const NAME: &'static CStr;
    /// The registry names of its classes' metatables (empty: one metatable,
    /// `NAME`).
    const CLASSES: &'static [&'static CStr] = &[];
}

/// The userdata block. The value comes first, so the block's address (the
/// userdata's, as `%p` shows it) is the value's.
#[repr(C)]
struct Block<T> {
    value: ManuallyDrop<T>,
    live: Cell<bool>,
}

impl Lua {
    /// `[-0, +1, m]` Pushes the metatable of `T`, a type without classes,
    /// making it (with its `__name` and a `__gc` that drops the value) if
    /// new; true if made now.
    pub fn udata_metatable<T: Udata>(&mut self) -> bool {
        const { assert!(T::CLASSES.is_empty(), "a type with classes has a metatable per class") };
        self.make_metatable::<T>(T::NAME)
    }

    /// `[-0, +1, m]` Pushes the metatable of class `class` of `T` (registry
    /// name `T::CLASSES[class]`), making it (with its `__name`, `__gc`, and
    /// its place in `T`'s set) if new; true if made now.
    pub fn udata_class<T: Udata>(&mut self, class: usize) -> bool {
        if !self.make_metatable::<T>(T::CLASSES[class]) {
            return false;
        }
        if self.get_field(REGISTRY, T::NAME) != Type::Table {
            self.pop(1);
            self.new_table(0, T::CLASSES.len() as c_int);
            self.push_value(-1);
            self.set_field(REGISTRY, T::NAME);
        } // mt set
        self.push_value(-2);
        self.push_bool(true);
        self.set_table(-3); // set[mt] = true
        self.pop(1);
        true
    }

    /// `[-0, +1, m]` The metatable registered as `name`, made now for `T`.
    fn make_metatable<T: Udata>(&mut self, name: &CStr) -> bool {
        if !self.new_metatable(name) {
            return false;
        }
        self.push_fn(gc::<T>);
        self.set_field(-2, c"__gc");
        true
    }

    /// `[-0, +1, m]` Pushes a new userdata holding `value`, with `nuv` user
    /// values (nil), under `T`'s metatable (`udata_metatable` made it).
    pub fn new_udata<T: Udata>(&self, value: T, nuv: c_int) -> &T {
        const { assert!(T::CLASSES.is_empty(), "a type with classes is made in one of them") };
        self.new_block(value, nuv, T::NAME)
    }

    /// `[-0, +1, m]` Pushes a new userdata holding `value`, with `nuv` user
    /// values (nil), of class `class` of `T` (`udata_class` made it).
    pub fn new_udata_class<T: Udata>(&self, value: T, nuv: c_int, class: usize) -> &T {
        self.new_block(value, nuv, T::CLASSES[class])
    }

    /// `[-0, +1, m]` Pushes a new block holding `value` under the metatable
    /// registered as `name`, one of `T`'s.
    fn new_block<T: Udata>(&self, value: T, nuv: c_int, name: &CStr) -> &T {
        const { assert!(std::mem::align_of::<Block<u64>>() <= 8) };
        assert!(std::mem::align_of::<Block<T>>() <= 8, "Lua aligns userdata to 8 bytes");
        self.room(2);
        // SAFETY: a valid state with room; the fresh block is sized for a
        // `Block<T>` and aligned for it (Lua aligns userdata to 8 bytes,
        // checked above) and is written before anything reads it; the slot
        // it is pushed in anchors it for the returned borrow (rule 3).
        unsafe {
            let b = ffi::lua_newuserdatauv(self.l, std::mem::size_of::<Block<T>>(), nuv) as *mut Block<T>;
            b.write(Block { value: ManuallyDrop::new(value), live: Cell::new(true) });
            self.set_metatable(-1, name);
            &(*b).value
        }
    }

    /// `[-0, +0, m]` Makes the `T` at `idx` one of class `class` (its
    /// metatable that class's); nothing if no live `T` is there.
    pub fn set_class<T: Udata>(&self, idx: c_int, class: usize) {
        if self.test_udata::<T>(idx).is_some() {
            self.set_metatable(idx, T::CLASSES[class]);
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

    /// The block at `idx` if it is a `T`'s, anchored by its slot.
    fn block<T: Udata>(&self, idx: c_int) -> Option<&Block<T>> {
        // SAFETY: `block_ptr` answers null or a `Block<T>` that the slot
        // keeps alive while `self` is borrowed (rule 3); it is only read.
        unsafe { self.block_ptr::<T>(idx).as_ref() }
    }

    /// The block at `idx` if its metatable is `T`'s (`luaL_testudata`), or
    /// one of `T`'s classes; else null.
    fn block_ptr<T: Udata>(&self, idx: c_int) -> *mut Block<T> {
        self.room(3);
        if T::CLASSES.is_empty() {
            // SAFETY: a valid state with room for the two metatables
            // compared and popped; a userdata under `T::NAME`'s metatable was
            // made by `new_udata::<T>` (the name is `T`'s alone), so it holds
            // a `Block<T>`.
            return unsafe { ffi::luaL_testudata(self.l, idx, T::NAME.as_ptr()) as *mut Block<T> };
        }
        let idx = self.abs(idx);
        if self.kind(idx) != Type::Userdata {
            return std::ptr::null_mut();
        }
        // SAFETY: a full userdata at `idx` and room for its metatable, the
        // set and the answer, all popped (raw reads: nothing raises). Only
        // `udata_class::<T>` writes the set under `T::NAME` (the name is
        // `T`'s alone, and Lua code cannot reach the registry), and puts
        // only `T`'s class metatables in it; only `new_udata_class::<T>`
        // and `set_class::<T>` give a userdata one of those. So a member
        // metatable means a `Block<T>`.
        unsafe {
            if ffi::lua_getmetatable(self.l, idx) == 0 {
                return std::ptr::null_mut();
            }
            let mut member = false;
            if ffi::lua_getfield(self.l, REGISTRY, T::NAME.as_ptr()) == ffi::LUA_TTABLE {
                ffi::lua_pushvalue(self.l, -2);
                member = ffi::lua_rawget(self.l, -2) != ffi::LUA_TNIL; // mt set v
                ffi::lua_settop(self.l, -2);
            }
            ffi::lua_settop(self.l, -3);
            if member { ffi::lua_touserdata(self.l, idx) as *mut Block<T> } else { std::ptr::null_mut() }
        }
    }
}

/// `__gc` of every `T`: drops the value once.
unsafe extern "C-unwind" fn gc<T: Udata>(l: L) -> c_int {
    // SAFETY: Lua calls a metatable's `__gc` on its running thread.
    let lua = unsafe { Lua::from_raw(l) };
    // SAFETY: the block, if one, is a `Block<T>` held by slot 1; `live`
    // makes the drop happen once, and the value is not read after it
    // (`udata` and `test_udata` refuse a dead one).
    unsafe {
        if let Some(b) = lua.block_ptr::<T>(1).as_mut() {
            if b.live.replace(false) {
                ManuallyDrop::drop(&mut b.value);
            }
        }
    }
    0
}
