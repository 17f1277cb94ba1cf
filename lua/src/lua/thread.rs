//! The handle of this layer: a Lua thread seen from a C function of the
//! module ([`Lua`]), and the raw pointer under it ([`L`]). The other files
//! of the layer add its methods; the parent module says why they are safe.

use std::any::TypeId;
use std::cell::Cell;
use std::ffi::{c_int, c_void};

use super::version::{self as ffi, lua_State};

/// A raw Lua state pointer (a thread).
pub type L = *mut lua_State;

/// A Lua thread, in a C function of the module running on it.
pub struct Lua {
    pub(super) l: L,
    /// The stack slots below this index are known to exist for as long as
    /// the handle lives (`room`); 0 when nothing is known.
    pub(super) limit: Cell<c_int>,
    /// The `Udata` type upvalue 1 of the running closure is known to hold
    /// (its closure was made by `push_upvalue_fn`), if any.
    pub(super) upvalue_type: Option<TypeId>,
}

impl Lua {
    /// The thread `l`, for the scheduler face, which drives threads itself.
    ///
    /// # Safety
    /// `l` is a live thread of a Lua state, running a C function of the
    /// module (or owned by the caller, which runs it), for as long as the
    /// `Lua` is used; no error of Lua may cross the caller's frames other
    /// than as rule 2 of the parent module (`lua`) describes.
    #[inline]
    pub unsafe fn from_raw(l: L) -> Lua {
        Lua { l, limit: Cell::new(0), upvalue_type: None }
    }

    /// The thread `l` in the C function Lua just called on it, which is
    /// where `cfn!`'s trampoline makes its handle: Lua gave the function
    /// `LUA_MINSTACK` free slots above its arguments, so pushes up to there
    /// need no `lua_checkstack` (see `room`).
    ///
    /// # Safety
    /// As `from_raw`, and called before anything changed the stack of the
    /// C function, for a handle that does not outlive its call.
    #[inline]
    pub unsafe fn in_call(l: L) -> Lua {
        // SAFETY: a valid state (the contract); reads only.
        let top = unsafe { ffi::lua_gettop(l) };
        Lua { l, limit: Cell::new(top + ffi::LUA_MINSTACK), upvalue_type: None }
    }

    /// `in_call` for the trampoline of an `UpvalueFn<T>` (`upvalue_fn!`):
    /// the closure running is one `push_upvalue_fn` made, so its upvalue 1
    /// holds a `T` (`with_upvalue` trusts it).
    ///
    /// # Safety
    /// As `in_call`; and the running closure was made by
    /// `push_upvalue_fn::<T>`.
    #[inline]
    pub unsafe fn in_closure_of<T: 'static>(l: L) -> Lua {
        // SAFETY: the contract covers `in_call`'s.
        let lua = unsafe { Lua::in_call(l) };
        Lua { upvalue_type: Some(TypeId::of::<T>()), ..lua }
    }

    /// The raw pointer, as an identity or for the scheduler face.
    #[inline]
    pub fn raw(&self) -> L {
        self.l
    }
}

/// What `coroutine.status` would say of a coroutine, seen from another.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Status {
    Running,
    Suspended,
    Normal,
    Dead,
}

impl Lua {
    /// `[-0, +0, -]` The thread at `idx`, as an identity (or to resume it),
    /// if the value there is one.
    pub fn to_thread(&self, idx: c_int) -> Option<L> {
        let idx = self.readable(idx);
        // SAFETY: a valid state (rule 1); a thread read from a `readable`
        // slot is only an address here.
        let co = unsafe { ffi::lua_tothread(self.l, idx) };
        (!co.is_null()).then_some(co)
    }

    /// `[-0, +0, -]` Runs `f` with the thread at `idx` (`None` if the value
    /// there is not one).
    pub fn with_thread_at<R>(&self, idx: c_int, f: impl FnOnce(&Thread) -> R) -> Option<R> {
        let co = self.to_thread(idx)?;
        // SAFETY: a thread of this Lua state (read from its stack), which the
        // slot keeps alive while `self` is borrowed: for all of `f`, which
        // gets the handle by reference only.
        let t = unsafe { Thread::from_raw(co) };
        Some(f(&t))
    }

    /// `[-0, +0, -]` The status of the thread at `idx` (lcorolib's
    /// `auxstatus`); `None` if the value there is not a thread.
    pub fn thread_status(&self, idx: c_int) -> Option<Status> {
        let co = self.to_thread(idx)?;
        if co == self.l {
            return Some(Status::Running);
        }
        // SAFETY: `co` is the thread in a slot of this frame, so alive while
        // `&self` is borrowed (rule 3); `lua_Debug` is plain data, which
        // `lua_getstack` only fills; the rest reads its status and top.
        Some(unsafe {
            match ffi::lua_status(co) {
                ffi::LUA_YIELD => Status::Suspended,
                ffi::LUA_OK => {
                    let mut ar: ffi::lua_Debug = std::mem::zeroed();
                    if ffi::lua_getstack(co, 0, &mut ar) != 0 {
                        Status::Normal
                    } else if ffi::lua_gettop(co) == 0 {
                        Status::Dead
                    } else {
                        Status::Suspended
                    }
                }
                _ => Status::Dead,
            }
        })
    }

    /// `[-0, +0, -]` May the running C function yield (`lua_isyieldable`)?
    pub fn is_yieldable(&self) -> bool {
        // SAFETY: a valid state; reads a counter of the thread.
        unsafe { ffi::lua_isyieldable(self.l) != 0 }
    }

    /// `[-0, +1, -]` Pushes the thread `co`.
    ///
    /// # Safety
    /// `co` is a live thread of this Lua state (another state's thread, or
    /// a collected one, would corrupt memory).
    pub unsafe fn push_thread(&self, co: L) {
        self.room(1);
        // SAFETY: the contract; both threads share one global state, so the
        // thread value moves between their stacks.
        unsafe {
            if co == self.l {
                ffi::lua_pushthread(self.l);
            } else {
                ffi::lua_pushthread(co);
                ffi::lua_xmove(co, self.l, 1);
            }
        }
    }
}

/// Another thread of the same Lua state, seen from a thread that runs a C
/// function of the module: a suspended cothread whose stack the engine
/// moves values into and out of. Its methods change its stack only while it
/// is suspended in a yield (`is_suspended`), where the stack is the
/// yielding C function's frame and nothing runs on it; a method asked to
/// reach below the top or outside a yield does nothing.
pub struct Thread {
    pub(super) l: L,
}

impl Thread {
    /// The thread `l`.
    ///
    /// # Safety
    /// `l` is a live thread of the Lua state of every `Lua` it is used with,
    /// for as long as the `Thread` is used (a registered cothread: its
    /// scheduler keeps it alive).
    #[inline]
    pub unsafe fn from_raw(l: L) -> Thread {
        Thread { l }
    }

    /// The raw pointer, as an identity.
    #[inline]
    pub fn raw(&self) -> L {
        self.l
    }

    /// Is it suspended in a yield?
    #[inline]
    pub fn is_suspended(&self) -> bool {
        // SAFETY: a live thread (`from_raw`); reads its status only.
        unsafe { ffi::lua_status(self.l) == ffi::LUA_YIELD }
    }

    /// The number of values on its stack (in its current frame).
    #[inline]
    pub fn top(&self) -> c_int {
        // SAFETY: a live thread; reads only.
        unsafe { ffi::lua_gettop(self.l) }
    }

    /// The light userdata on the top of its stack, if the top value is one
    /// (a tag or a key; never dereferenced here).
    #[inline]
    pub fn light_on_top(&self) -> Option<*mut c_void> {
        // SAFETY: a live thread; reads the type and value of its top slot,
        // which exists (top > 0).
        unsafe {
            if ffi::lua_gettop(self.l) == 0 || ffi::lua_type(self.l, -1) != ffi::LUA_TLIGHTUSERDATA {
                return None;
            }
            Some(ffi::lua_touserdata(self.l, -1))
        }
    }

    /// Is the top value a full userdata?
    #[inline]
    pub fn udata_on_top(&self) -> bool {
        // SAFETY: a live thread; reads the type of its top slot, which exists.
        unsafe { ffi::lua_gettop(self.l) > 0 && ffi::lua_type(self.l, -1) == ffi::LUA_TUSERDATA }
    }

    /// Makes room for `n` more values: whether its stack could grow.
    #[inline]
    pub fn reserve(&self, n: c_int) -> bool {
        // SAFETY: a live thread of the state; growing its stack moves it,
        // and Lua corrects its own pointers into it (no reference into a
        // thread's stack leaves this layer). It answers 0 instead of raising.
        unsafe { ffi::lua_checkstack(self.l, n) != 0 }
    }

    /// Pops `n` values, if it is suspended with that many.
    #[inline]
    pub fn pop(&self, n: c_int) {
        if self.is_suspended() && (0..=self.top()).contains(&n) {
            // SAFETY: a suspended thread with `n` values in its frame: the
            // new top stays inside the frame, and nothing runs on it that
            // could hold a reference into the slots that go.
            unsafe { ffi::lua_settop(self.l, -n - 1) }
        }
    }

    /// Pushes a light userdata, if it is suspended and its stack can grow:
    /// whether it did.
    #[inline]
    pub fn push_light(&self, p: *mut c_void) -> bool {
        // SAFETY: a suspended thread with room for one more value (checked;
        // `lua_checkstack` answers 0 instead of raising).
        unsafe {
            if !self.is_suspended() || ffi::lua_checkstack(self.l, 1) == 0 {
                return false;
            }
            ffi::lua_pushlightuserdata(self.l, p);
            true
        }
    }
}
