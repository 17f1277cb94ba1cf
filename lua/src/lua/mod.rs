//! The layer that touches the Lua C API, so the rest of the module need not.
//!
//! A [`Lua`] is a Lua thread seen from a C function of the module. Its
//! methods are safe: this layer proves, once, what each call of the C API
//! needs. The rest of the module writes a C function as a safe *body*
//! (`fn(&mut Lua) -> Ret`) and exports it with [`cfn!`].
//!
//! # Why the methods are safe
//! 1. **The state is valid.** A `Lua` is made only by [`cfn!`]'s trampoline
//!    (Lua called it with its running thread) and by [`Lua::from_raw`],
//!    whose caller proves the same. It is not `Copy`, `Send` or `Sync`, and
//!    a body gets it by reference: it cannot outlive the call.
//! 2. **A body never raises.** Checks return [`Error`]; the trampoline
//!    raises it after the body has returned, when no Rust frame with a
//!    destructor is left between it and Lua. The one longjmp that can still
//!    cross a body is a memory error of Lua's allocator inside a push (or a
//!    field read, whose key Lua may intern); it skips the destructors of
//!    the body's frames. So a body holds no value with a destructor (heap
//!    memory, a descriptor, a reference count, a lock or `RefCell` guard)
//!    while Lua may allocate: it reads what it needs from userdata instead
//!    of cloning it, makes its Rust values after its pushes, and hands them
//!    over with the layer's protected calls: [`Lua::new_udata`] drops its
//!    value if the block cannot be allocated, [`Lua::push_owned`] frees its
//!    bytes, [`Lua::protected`] runs several pushes and answers an error,
//!    and [`Lua::push_held`] copies out of a `RefCell` without holding it.
//!    `tests/oom` checks it under a failing allocator.
//! 3. **References into the stack stay anchored.** A string or a userdata
//!    lives while a stack slot holds it. Methods that read one return a
//!    reference that borrows the `Lua`; every method that may take a value
//!    off the stack (pop, set the top, move into a table, replace) takes
//!    `&mut self`, so no such reference can be alive across it. Lua's
//!    collector does not move objects.
//! 4. **Userdata are shared, never `&mut`.** [`Udata`] values are reached as
//!    `&T`; what changes lives in `Cell`s, so two handles to one userdata
//!    cannot break Rust's aliasing rules. Only the collector drops them:
//!    Lua code reaches no `__gc` (each metatable's `__metatable` is a copy
//!    without it), so a finalizer of Lua's, which may run at any allocation,
//!    cannot drop a value a body is reading.
//! 5. **Stack space.** Every push first makes room, so a body need not
//!    count slots; a stack that cannot grow is an `Error`. A handle knows
//!    the slots Lua promised its C function (`LUA_MINSTACK` at the call,
//!    and what each `lua_checkstack` added) and calls `lua_checkstack`
//!    only beyond them.
//! 6. **Upvalues.** A closure of an [`UpvalueFn<T>`] (made by
//!    [`upvalue_fn!`], pushed only by [`Lua::push_upvalue_fn`], which checks
//!    the `T`) holds a `T` as upvalue 1, and its body reaches it unchecked
//!    (`with_upvalue`): the scheduler's functions find their state so on
//!    every call. Only the debug library could change the upvalue.
//!
//! Raw pointers leave the layer only as opaque identities (`Lua::raw`, a
//! userdata's address for `%p`), to code that proves its own use.

mod call;
mod error;
mod stack;
mod table;
mod thread;
mod udata;
pub mod version;

use std::ffi::c_int;

pub use call::Resumed;
pub use error::{Error, Ret, shown};
pub use stack::Type;
pub use table::{REGISTRY, Reg};
pub use thread::{L, Lua, Status, Thread};
pub use udata::{Classes, Udata, UpvalueFn};

pub use version::{self as ffi, lua_Integer};

/// What a body answers instead of a count of results when its cothread
/// parked an operation: the trampoline yields (a plain `lua_yield(l, 0)`,
/// once the body's frames are gone), and the function returns the values
/// it is resumed with.
pub const YIELD: c_int = c_int::MIN;

/// What a body answers to yield every value on its stack (a yield
/// operation: its name and arguments), once its frames are gone.
pub const YIELD_ALL: c_int = c_int::MIN + 1;

/// Ends the C function running on `l` as its body answered: with `n`
/// results, with a yield (`YIELD`), or by raising the error.
///
/// # Safety
/// `l` is the running thread of the C function that calls this, as its
/// last act: no frame between it and Lua holds a value with a destructor.
pub unsafe fn ret(l: L, r: Ret) -> c_int {
    match r {
        Ok(YIELD) => {
            // SAFETY: the contract; a yield from a C function longjmps to
            // `lua_resume`, past this plain frame only.
            unsafe { ffi::yield_in_place(l) }
        }
        Ok(YIELD_ALL) => {
            // SAFETY: as for `YIELD`, with the values on the stack.
            unsafe { ffi::lua_yield(l, ffi::lua_gettop(l)) }
        }
        Ok(n) => n,
        // SAFETY: the contract.
        Err(e) => unsafe { e.raise(l) },
    }
}

/// Exports the safe body `$body: fn(&mut Lua) -> Ret` as the C function
/// `$name`. The trampoline runs the body, then raises its error or yields
/// (`ret`) once the body's frames are gone.
#[macro_export]
macro_rules! cfn {
    ($(#[$meta:meta])* $vis:vis $name:ident = $body:path) => {
        $(#[$meta])*
        ///
        /// # Safety
        /// Called by Lua, as a C function, on its running thread.
        $vis unsafe extern "C-unwind" fn $name(l: $crate::lua::L) -> ::std::ffi::c_int {
            // SAFETY: Lua calls this C function with its running thread,
            // which it has not touched yet: what `in_call` asks. The body
            // cannot keep the `Lua`; its answer is handled here, its frames
            // gone.
            unsafe { $crate::lua::ret(l, $body(&mut $crate::lua::Lua::in_call(l))) }
        }
    };
}

/// Exports the body `$body: fn(&mut Lua) -> Ret` as `$name`, an
/// `UpvalueFn<$t>`: closures of it, made by `push_upvalue_fn`, hold a `$t`
/// as upvalue 1, which the body reaches with `with_upvalue` unchecked.
#[macro_export]
macro_rules! upvalue_fn {
    ($(#[$meta:meta])* $vis:vis $name:ident: $t:ty = $body:path) => {
        $(#[$meta])*
        $vis const $name: $crate::lua::UpvalueFn<$t> = {
            unsafe extern "C-unwind" fn trampoline(l: $crate::lua::L) -> ::std::ffi::c_int {
                // SAFETY: Lua calls this C function on its running thread,
                // untouched yet, and only in a closure `push_upvalue_fn`
                // made (the one way to push this function), so with a `$t`
                // as upvalue 1: what `in_closure_of` asks. The body cannot
                // keep the `Lua`; its answer is handled here.
                unsafe { $crate::lua::ret(l, $body(&mut $crate::lua::Lua::in_closure_of::<$t>(l))) }
            }
            // SAFETY: the trampoline above is the function `new` asks for.
            unsafe { $crate::lua::UpvalueFn::new(trampoline) }
        };
    };
}
