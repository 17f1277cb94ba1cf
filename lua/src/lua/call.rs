//! Running Lua code from a body: calls, chunks, `tostring`, resuming a
//! coroutine. Each runs in
//! protected mode, so an error of the code run becomes `Error::Value` (its
//! value left on the top) instead of a longjmp through the body.

use std::ffi::{CStr, c_int};

use super::version as ffi;

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

    /// `[-0, +n, m]` Runs `f` in a protected call, on a stack of its own;
    /// the values it leaves come here (answered: how many). On an error (a
    /// memory error while `f` pushed) its value is on the top and the
    /// answer is `Error::Value`, so a caller that owns Rust values across
    /// several allocations keeps them, and drops them as usual. `f` itself
    /// must hold none across a push.
    pub fn protected(&mut self, f: &mut dyn FnMut(&mut Lua)) -> Result<c_int, Error> {
        self.check_stack(2)?;
        let top = self.top();
        let mut f = f;
        // SAFETY: a valid state with room for the function and its argument,
        // the address of `f`, alive for the call; `lua_pcall` catches every
        // error raised inside (it returns instead of longjmping here).
        let status = unsafe {
            ffi::lua_pushcfunction(self.l, run_protected);
            ffi::lua_pushlightuserdata(self.l, (&raw mut f).cast());
            ffi::lua_pcall(self.l, 1, ffi::LUA_MULTRET, 0)
        };
        if status == ffi::LUA_OK { Ok(self.top() - top) } else { Err(Error::Value) }
    }

    /// `[-nargs, +n, m]` Runs `f(cx)` in a protected call whose stack is the
    /// top `nargs` values of this one (they leave it); the values it leaves
    /// come back here (answered: how many). `f` reaches the stack through
    /// `lua(cx)`, this thread's handle: during the call its indices name the
    /// call's own stack. On an error its value is on the top, in place of
    /// the `nargs` values, and the answer is `Error::Value`. As for
    /// `protected`, `f` must hold nothing with a destructor across a push.
    pub fn protected_over<T>(
        cx: &mut T,
        lua: fn(&mut T) -> &mut Lua,
        nargs: c_int,
        f: fn(&mut T),
    ) -> Result<c_int, Error> {
        let this = lua(cx);
        match nargs {
            0 => {}
            1.. => _ = this.slot(-nargs),
            _ => std::process::abort(), // a bug of ours
        }
        this.check_stack(2)?;
        let (l, below) = (this.l, this.top() - nargs);
        // Inside, the handle runs another C function: what it knows of this
        // one's stack slots and upvalue (indices relative to this frame)
        // does not hold there. It learns anew, and knows again after.
        let known = (this.limit.replace(0), this.upvalue_type.take());
        let mut call = Over { cx, f };
        // SAFETY: a valid state with the `nargs` values (checked) and room
        // for the function and the call's address, pushed under and over
        // them; the call (alive until `lua_pcall` returns) is read by
        // `run_over` only. `lua_pcall` catches every error raised inside.
        let status = unsafe {
            ffi::lua_pushcfunction(l, run_over::<T>);
            ffi::lua_rotate(l, below + 1, 1);
            ffi::lua_pushlightuserdata(l, (&raw mut call).cast());
            ffi::lua_pcall(l, nargs + 1, ffi::LUA_MULTRET, 0)
        };
        let this = lua(call.cx);
        this.limit.set(known.0);
        this.upvalue_type = known.1;
        if status == ffi::LUA_OK { Ok(this.top() - below) } else { Err(Error::Value) }
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

/// How a coroutine stopped (`resume_at`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Resumed {
    Yielded,
    Returned,
    Raised,
}

impl Lua {
    /// `[-nargs, +n, -]` Resumes the suspended coroutine at `idx` (not
    /// this thread) with the `nargs` values on the top, after `kept` values
    /// already on its own stack; moves what it yields or returns (or its
    /// error object) onto this stack. Answers how it stopped and `n`.
    pub fn resume_at(&mut self, idx: c_int, nargs: c_int, kept: c_int) -> Result<(Resumed, c_int), Error> {
        let co = self.to_thread(idx).filter(|&co| co != self.l).expect("a coroutine");
        // SAFETY: `co` is a thread of this Lua state held by slot `idx`
        // (alive for the call), not this one; each `lua_xmove` moves values
        // the source has onto a stack checked for room first, and
        // `lua_resume` catches every error of the coroutine.
        unsafe {
            if ffi::lua_checkstack(co, nargs) == 0 {
                return Err(Error::msg(c"too many values to resume a coroutine with"));
            }
            ffi::lua_xmove(self.l, co, nargs);
            let mut nres = 0;
            let how = match ffi::lua_resume(co, self.l, nargs + kept, &mut nres) {
                ffi::LUA_YIELD => Resumed::Yielded,
                ffi::LUA_OK => Resumed::Returned,
                _ => Resumed::Raised,
            };
            let n = if how == Resumed::Raised { 1 } else { nres };
            if ffi::lua_checkstack(self.l, n) == 0 {
                ffi::lua_settop(co, 0);
                return Err(Error::msg(c"too many values produced by a coroutine"));
            }
            ffi::lua_xmove(co, self.l, n);
            Ok((how, n))
        }
    }
}

/// `run(f)`, called protected by `protected`: runs `f` (a pointer to a
/// `&mut dyn FnMut(&mut Lua)`) on this function's stack, and answers every
/// value it leaves.
unsafe extern "C-unwind" fn run_protected(l: L) -> c_int {
    // SAFETY: `protected` calls this with the address of its closure as the
    // one argument, alive for the call; this thread runs this C function
    // (what `from_raw` asks); an error of the closure unwinds to the
    // `lua_pcall` of `protected`, past its frames (which hold nothing with
    // a destructor across a push: its contract) and this plain one.
    unsafe {
        let f = &mut *(ffi::lua_touserdata(l, 1) as *mut &mut dyn FnMut(&mut Lua));
        ffi::lua_settop(l, 0);
        f(&mut Lua::from_raw(l));
        ffi::lua_gettop(l)
    }
}

/// What `protected_over` hands to `run_over`.
struct Over<'a, T> {
    cx: &'a mut T,
    f: fn(&mut T),
}

/// `run(values..., call)`, called protected by `protected_over`: runs the
/// call's function over the values below its address.
unsafe extern "C-unwind" fn run_over<T>(l: L) -> c_int {
    // SAFETY: `protected_over` calls this with the address of its `Over`
    // (alive for the call) as the last argument; an error of `f` unwinds to
    // its `lua_pcall`, past this plain frame. `f` uses the caller's handle
    // of this same thread, whose API calls now address this call's stack.
    unsafe {
        let call = &mut *(ffi::lua_touserdata(l, -1) as *mut Over<T>);
        ffi::lua_settop(l, -2);
        (call.f)(call.cx);
        ffi::lua_gettop(l)
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
