//! `cothread.promise()`: the core's futures (`cot_promise` / `cot_future`)
//! in Lua, shared with C, C++ and stackful coroutines.
//!
//! A promise and a future are full userdata (metatables `cothread.promise`,
//! `cothread.future`) holding the core's Rust handles. Lua values set by
//! `promise:set(...)` stay Lua values: the core holds a `LuaValues` payload,
//! a registry reference to a table of them, which readers in the same Lua
//! state unpack; C and C++ readers see a light userdata's pointer or a
//! string's bytes. The payload may be dropped on any thread (the last handle
//! may go on a pool thread), so its reference is queued on its state's
//! `Anchor` and released by the Lua thread at its next promise or future
//! call, exactly once; once the state is closed, nothing needs releasing.
//!
//! `future:await()` is an engine operation waiting for an outside event: a
//! loop request on the future (`Loop::future_wait`) fires it; leaving the
//! wait cancels the request and leaves the future untouched.

use std::ffi::{CStr, CString, c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use cothread::ffi::{cot_future, cot_promise};
use cothread::future::{Future, Outcome, Payload, Promise, State};

use cothread::reactor::Loop;

use crate::engine::{self, Fire, Frame, Next, OnEnd, Operation, Why};
use crate::park::drive_raw;
use crate::raw::{self, L, ffi};

const PROMISE: &CStr = c"cothread.promise";
const FUTURE: &CStr = c"cothread.future";
/// Registry field holding this Lua state's anchor userdata.
const ANCHOR: &CStr = c"cothread.future.anchor";
/// The code of an error set by `promise:fail` when none is given (`COT_EIO`).
const LUA_ERROR_CODE: c_int = cothread::ffi::COT_EIO;

/// Where the references of a Lua state's values are released.
struct Anchor {
    /// Cleared when the state closes: its references need no release then.
    alive: AtomicBool,
    /// References dropped (on any thread), to release on the Lua thread.
    dropped: Mutex<Vec<c_int>>,
}

/// Lua values in the core: a registry reference to `{n = count, ...}`, and
/// what C readers see.
struct LuaValues {
    anchor: Arc<Anchor>,
    reference: c_int,
    /// A light userdata's pointer, or a string copy's address (NULL else).
    c_ptr: *mut c_void,
    _c_string: Option<CString>,
}

// SAFETY: the pointer is only shown to readers (a light userdata's address,
// or the address of the owned, immutable string copy); the reference is
// released on the Lua thread only (through `Anchor::dropped`).
unsafe impl Send for LuaValues {}
// SAFETY: as above; nothing is mutated through a shared reference.
unsafe impl Sync for LuaValues {}

impl Payload for LuaValues {
    fn as_ptr(&self) -> *mut c_void {
        self.c_ptr
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl Drop for LuaValues {
    fn drop(&mut self) {
        if self.anchor.alive.load(Ordering::Acquire) {
            self.anchor.dropped.lock().unwrap_or_else(|e| e.into_inner()).push(self.reference);
        }
    }
}

/// `[-0, +0, m]` This state's anchor, made on first use; releases the
/// references dropped since the last call.
unsafe fn anchor(l: L) -> Arc<Anchor> {
    // SAFETY: valid state; the registry field holds a userdata made here
    // (an `Arc<Anchor>` with a `__gc` that drops it).
    unsafe {
        raw::check_stack(l, 3);
        let a = if ffi::lua_getfield(l, ffi::LUA_REGISTRYINDEX, ANCHOR.as_ptr()) == ffi::LUA_TUSERDATA {
            (*(ffi::lua_touserdata(l, -1) as *const Arc<Anchor>)).clone()
        } else {
            ffi::lua_pop(l, 1);
            let a = Arc::new(Anchor { alive: AtomicBool::new(true), dropped: Mutex::new(Vec::new()) });
            let u = ffi::lua_newuserdatauv(l, std::mem::size_of::<Arc<Anchor>>(), 0) as *mut Arc<Anchor>;
            u.write(a.clone());
            ffi::lua_createtable(l, 0, 1);
            ffi::lua_pushcfunction(l, anchor_gc);
            ffi::lua_setfield(l, -2, c"__gc".as_ptr());
            ffi::lua_setmetatable(l, -2);
            ffi::lua_pushvalue(l, -1);
            ffi::lua_setfield(l, ffi::LUA_REGISTRYINDEX, ANCHOR.as_ptr());
            a
        };
        ffi::lua_pop(l, 1);
        let dropped = std::mem::take(&mut *a.dropped.lock().unwrap_or_else(|e| e.into_inner()));
        for r in dropped {
            ffi::luaL_unref(l, ffi::LUA_REGISTRYINDEX, r);
        }
        a
    }
}

/// `__gc` of the anchor (the state closes): later drops release nothing.
unsafe extern "C-unwind" fn anchor_gc(l: L) -> c_int {
    // SAFETY: called by Lua on the anchor userdata, once.
    unsafe {
        let u = ffi::lua_touserdata(l, 1) as *mut Arc<Anchor>;
        let a = &*u;
        a.alive.store(false, Ordering::Release);
        std::ptr::drop_in_place(u);
    }
    0
}

/// `[-0, +0, m]` Packs the values from `first` to the top into the registry.
unsafe fn pack(l: L, first: c_int, anchor: Arc<Anchor>) -> LuaValues {
    // SAFETY: valid state; indices from `first` to the top exist.
    unsafe {
        let top = ffi::lua_gettop(l);
        let n = top - first + 1;
        let (c_ptr, c_string) = match (n, ffi::lua_type(l, first)) {
            (1, ffi::LUA_TLIGHTUSERDATA) => (ffi::lua_touserdata(l, first), None),
            (1, ffi::LUA_TSTRING) => {
                let mut len = 0;
                let s = ffi::lua_tolstring(l, first, &mut len);
                let bytes = std::slice::from_raw_parts(s as *const u8, len);
                match CString::new(bytes) {
                    Ok(c) => (c.as_ptr() as *mut c_void, Some(c)),
                    Err(_) => (std::ptr::null_mut(), None), // a NUL inside: not a C string
                }
            }
            _ => (std::ptr::null_mut(), None),
        };
        raw::check_stack(l, 2);
        ffi::lua_createtable(l, n.max(0), 1);
        for i in 0..n {
            ffi::lua_pushvalue(l, first + i);
            ffi::lua_rawseti(l, -2, i as ffi::lua_Integer + 1);
        }
        ffi::lua_pushinteger(l, n as ffi::lua_Integer);
        ffi::lua_setfield(l, -2, c"n".as_ptr());
        let reference = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);
        LuaValues { anchor, reference, c_ptr, _c_string: c_string }
    }
}

/// `[-0, +n, m]` Pushes the values of `payload` as this state sees them:
/// its own Lua values unpacked, or what a C reader sees. Returns how many.
unsafe fn push_payload(l: L, payload: &dyn Payload, anchor: &Arc<Anchor>) -> c_int {
    // SAFETY: valid state; a reference of this state's anchor is live (it is
    // released only after the payload is dropped).
    unsafe {
        if let Some(v) = payload.as_any().downcast_ref::<LuaValues>().filter(|v| Arc::ptr_eq(&v.anchor, anchor)) {
            raw::check_stack(l, 2);
            ffi::lua_rawgeti(l, ffi::LUA_REGISTRYINDEX, v.reference as ffi::lua_Integer);
            ffi::lua_getfield(l, -1, c"n".as_ptr());
            let n = ffi::lua_tointegerx(l, -1, std::ptr::null_mut()) as c_int;
            ffi::lua_pop(l, 1);
            raw::check_stack(l, n);
            for i in 1..=n {
                ffi::lua_rawgeti(l, -i, i as ffi::lua_Integer);
            }
            ffi::lua_remove(l, -n - 1);
            return n;
        }
        if let Some(v) = payload.as_any().downcast_ref::<LuaValues>().filter(|v| v._c_string.is_some()) {
            ffi::lua_pushstring(l, v.c_ptr as *const std::ffi::c_char); // another state's string
            return 1;
        }
        let p = payload.as_ptr();
        if p.is_null() {
            ffi::lua_pushnil(l)
        } else {
            ffi::lua_pushlightuserdata(l, p)
        }
        1
    }
}

/// `[-0, +n, m]` Pushes a settled future's results, as `pcall` gives them:
/// `true, values...`, or `false, error` (a Lua error value as it was given,
/// or a C error's message and code), or `false, "dropped"`. Returns how many.
unsafe fn push_outcome(l: L, f: &Future, anchor: &Arc<Anchor>) -> c_int {
    // SAFETY: valid state.
    unsafe {
        raw::check_stack(l, 3);
        match f.outcome() {
            None => {
                ffi::lua_pushboolean(l, 0);
                ffi::lua_pushstring(l, c"pending".as_ptr());
                2
            }
            Some(Outcome::Value(v)) => {
                ffi::lua_pushboolean(l, 1);
                1 + push_payload(l, &**v, anchor)
            }
            Some(Outcome::Error { code, message, detail }) => {
                ffi::lua_pushboolean(l, 0);
                if let Some(d) = detail
                    .as_deref()
                    .filter(|d| d.as_any().downcast_ref::<LuaValues>().is_some_and(|v| Arc::ptr_eq(&v.anchor, anchor)))
                {
                    push_payload(l, d, anchor);
                    return 2;
                }
                ffi::lua_pushstring(l, message.as_ptr());
                ffi::lua_pushinteger(l, *code as ffi::lua_Integer);
                3
            }
            Some(Outcome::Dropped) => {
                ffi::lua_pushboolean(l, 0);
                ffi::lua_pushstring(l, c"dropped".as_ptr());
                2
            }
        }
    }
}

// ===== userdata =====

/// `[-0, +1, m]` Pushes a new userdata holding `v` with metatable `name`.
unsafe fn push_ud<T>(l: L, v: T, name: &CStr) {
    // SAFETY: valid state; the block is fresh, sized and aligned for `T` (Lua
    // aligns userdata for any C type), written before the metatable makes
    // `__gc` reach it.
    unsafe {
        let u = ffi::lua_newuserdatauv(l, std::mem::size_of::<Option<T>>(), 0) as *mut Option<T>;
        u.write(Some(v));
        ffi::luaL_setmetatable(l, name.as_ptr());
    }
}

/// `[-0, +0, v]` The promise at `idx`, or raises.
unsafe fn check_promise<'a>(l: L, idx: c_int) -> &'a Promise {
    // SAFETY: valid state; a `cothread.promise` userdata holds an `Option<Promise>`.
    unsafe {
        let u = ffi::luaL_checkudata(l, idx, PROMISE.as_ptr()) as *mut Option<Promise>;
        (*u).as_ref().unwrap_or_else(|| raw::error(l, c"promise already collected"))
    }
}

/// `[-0, +0, v]` The future at `idx`, or raises.
unsafe fn check_future<'a>(l: L, idx: c_int) -> &'a Future {
    // SAFETY: valid state; a `cothread.future` userdata holds an `Option<Future>`.
    unsafe {
        let u = ffi::luaL_checkudata(l, idx, FUTURE.as_ptr()) as *mut Option<Future>;
        (*u).as_ref().unwrap_or_else(|| raw::error(l, c"future already collected"))
    }
}

/// `__gc` of both: drops the handle (the last promise handle unsettled
/// settles the future as dropped; C's handles are their own).
unsafe extern "C-unwind" fn gc<T>(l: L) -> c_int {
    // SAFETY: called by Lua on a userdata made by `push_ud::<T>`.
    unsafe { drop((*(ffi::lua_touserdata(l, 1) as *mut Option<T>)).take()) };
    0
}

/// `promise, future = cothread.promise()`
unsafe extern "C-unwind" fn new(l: L) -> c_int {
    // SAFETY: valid state.
    unsafe {
        anchor(l);
        raw::check_stack(l, 2);
        let (p, f) = Promise::new();
        push_ud(l, p, PROMISE);
        push_ud(l, f, FUTURE);
        2
    }
}

/// `settled = promise:set(...)`: true if this call settled the future.
unsafe extern "C-unwind" fn set(l: L) -> c_int {
    // SAFETY: valid state.
    unsafe {
        let p = check_promise(l, 1);
        let a = anchor(l);
        let ok = !p.is_settled() && p.set(Box::new(pack(l, 2, a))).is_ok();
        ffi::lua_pushboolean(l, c_int::from(ok));
        1
    }
}

/// `settled = promise:fail(err [, code])`: C readers see `code` (default
/// `COT_EIO`) and `tostring(err)`; Lua readers of this state get `err`.
unsafe extern "C-unwind" fn fail(l: L) -> c_int {
    // SAFETY: valid state.
    unsafe {
        let p = check_promise(l, 1);
        ffi::luaL_checkany(l, 2);
        let code = ffi::luaL_optinteger(l, 3, LUA_ERROR_CODE as ffi::lua_Integer);
        if !(i32::MIN as ffi::lua_Integer..0).contains(&code) {
            raw::arg_error(l, 3, c"negative error code expected");
        }
        ffi::lua_settop(l, 2);
        ffi::luaL_tolstring(l, 2, std::ptr::null_mut()); // may raise (a __tostring): nothing made yet
        let message = CStr::from_ptr(ffi::lua_tolstring(l, 3, std::ptr::null_mut())).to_owned();
        ffi::lua_settop(l, 2);
        if p.is_settled() {
            ffi::lua_pushboolean(l, 0);
            return 1;
        }
        // Packed before the core's lock is taken: packing may raise.
        let detail: Box<dyn Payload> = Box::new(pack(l, 2, anchor(l)));
        let ok = p.fail_with(code as i32, &message, Some(detail)).is_ok();
        ffi::lua_pushboolean(l, c_int::from(ok));
        1
    }
}

/// `settled = promise:settled()`
unsafe extern "C-unwind" fn settled(l: L) -> c_int {
    // SAFETY: valid state.
    unsafe {
        let p = check_promise(l, 1);
        ffi::lua_pushboolean(l, c_int::from(p.is_settled()));
        1
    }
}

/// `future = promise:future()`: another future of the promise.
unsafe extern "C-unwind" fn promise_future(l: L) -> c_int {
    // SAFETY: valid state.
    unsafe {
        let f = check_promise(l, 1).future();
        push_ud(l, f, FUTURE);
        1
    }
}

/// `pointer = promise:handle()` / `future:handle()`: a new C handle (light
/// userdata) that the C side frees with `cot_promise_free` / `cot_future_free`.
unsafe extern "C-unwind" fn promise_handle(l: L) -> c_int {
    // SAFETY: valid state.
    unsafe {
        let p = check_promise(l, 1).clone();
        ffi::lua_pushlightuserdata(l, cot_promise::into_raw(p) as *mut c_void);
        1
    }
}

unsafe extern "C-unwind" fn future_handle(l: L) -> c_int {
    // SAFETY: valid state.
    unsafe {
        let f = check_future(l, 1).clone();
        ffi::lua_pushlightuserdata(l, cot_future::into_raw(f) as *mut c_void);
        1
    }
}

/// `promise = cothread.promise_of(pointer)`, `future = cothread.future_of(pointer)`:
/// Lua objects of a `cot_promise*` / `cot_future*` handed in by C (their own
/// handles: the C side keeps and frees its own).
unsafe extern "C-unwind" fn promise_of(l: L) -> c_int {
    // SAFETY: valid state; a light userdata passed here must be a live
    // `cot_promise*` (the documented contract of `promise_of`).
    unsafe {
        ffi::luaL_checktype(l, 1, ffi::LUA_TLIGHTUSERDATA);
        let Some(p) = cot_promise::get(ffi::lua_touserdata(l, 1) as *const cot_promise) else {
            raw::arg_error(l, 1, c"NULL promise");
        };
        push_ud(l, p.clone(), PROMISE);
        1
    }
}

unsafe extern "C-unwind" fn future_of(l: L) -> c_int {
    // SAFETY: as `promise_of`, for a live `cot_future*`.
    unsafe {
        ffi::luaL_checktype(l, 1, ffi::LUA_TLIGHTUSERDATA);
        let Some(f) = cot_future::get(ffi::lua_touserdata(l, 1) as *const cot_future) else {
            raw::arg_error(l, 1, c"NULL future");
        };
        push_ud(l, f.clone(), FUTURE);
        1
    }
}

/// `ready = future:ready()`
unsafe extern "C-unwind" fn ready(l: L) -> c_int {
    // SAFETY: valid state.
    unsafe {
        let f = check_future(l, 1);
        ffi::lua_pushboolean(l, c_int::from(f.outcome().is_some()));
        1
    }
}

/// `state = future:state()`: "pending", "value", "error" or "dropped".
unsafe extern "C-unwind" fn state(l: L) -> c_int {
    // SAFETY: valid state.
    unsafe {
        let name = match check_future(l, 1).state() {
            State::Pending => c"pending",
            State::Value => c"value",
            State::Error => c"error",
            State::Dropped => c"dropped",
        };
        ffi::lua_pushstring(l, name.as_ptr());
        1
    }
}

/// `ok, ... = future:value()`: the results without waiting.
unsafe extern "C-unwind" fn value(l: L) -> c_int {
    // SAFETY: valid state.
    unsafe {
        let f = check_future(l, 1);
        let a = anchor(l);
        push_outcome(l, f, &a)
    }
}

/// `future:await`. Frame: 1 the future.
#[derive(Clone, Copy)]
struct Await {
    deadline: Option<u64>,
}

impl Operation for Await {
    fn step(&mut self, f: &mut Frame, why: Why) -> Next {
        // SAFETY: the frame `await_` built (a checked future in slot 1, which
        // keeps it alive).
        unsafe {
            let l = f.l();
            let fut = check_future(l, f.at(1));
            Next::Done(match why {
                Why::Start | Why::Ready | Why::Closed if fut.outcome().is_none() => {
                    return Next::Event(self.deadline);
                }
                Why::Start | Why::Ready | Why::Closed | Why::Done => {
                    let a = anchor(l);
                    let n = push_outcome(l, fut, &a);
                    drop(a);
                    n
                }
                Why::Timeout => raw::push_false(l, c"timeout"),
                Why::Cancelled => raw::push_false(l, c"cancelled"),
                Why::Failed(m) => raw::push_false(l, m),
            })
        }
    }

    fn start(&mut self, f: &Frame, lp: &mut Loop, fire: Fire) -> Result<OnEnd, &'static CStr> {
        // SAFETY: as `step`; the request holds its own reference to the
        // future's state.
        unsafe {
            let fut = check_future(f.l(), f.at(1)).clone();
            let req = lp.future_wait(&fut, Box::new(move |_, _, _| fire.fire()));
            Ok(Box::new(move |lp| {
                let _ = lp.request_cancel(req); // completed already: nothing to cancel
            }))
        }
    }

    fn block(&mut self, f: &mut Frame, _next: Next) -> Why {
        // SAFETY: as `step`; only the calling thread blocks.
        unsafe {
            let ns = self.deadline.filter(|&d| d != u64::MAX).map(|d| d.saturating_sub(cothread::time::monotonic_ns()));
            match check_future(f.l(), f.at(1)).wait(ns) {
                Ok(()) => Why::Done,
                Err(_) => Why::Timeout,
            }
        }
    }
}

/// `ok, ... = future:await([timeout])`
unsafe extern "C-unwind" fn await_(l: L) -> c_int {
    // SAFETY: `check_future` returns a live future or raises; the frame is
    // the function's own stack.
    unsafe {
        check_future(l, 1);
        let deadline = if raw::is_nil_or_nan(l, 2) {
            None
        } else {
            Some(engine::deadline_in(engine::ns_of(ffi::luaL_checknumber(l, 2))))
        };
        ffi::lua_settop(l, 1);
        drive_raw(l, Await { deadline })
    }
}

/// `[-0, +1, m]` Pushes the module's functions into the table at the top:
/// `promise`, `promise_of`, `future_of`; makes the metatables.
///
/// # Safety
/// `l` is a valid state with a table at the top.
pub unsafe fn add_functions(l: L) {
    // SAFETY: valid state; pushes are balanced as the comments show.
    unsafe {
        raw::check_stack(l, 4);
        let kinds: [(&CStr, ffi::lua_CFunction, &[raw::Reg]); 2] = [
            (
                PROMISE,
                gc::<Promise>,
                &[
                    (c"set", set),
                    (c"fail", fail),
                    (c"settled", settled),
                    (c"future", promise_future),
                    (c"handle", promise_handle),
                ],
            ),
            (
                FUTURE,
                gc::<Future>,
                &[
                    (c"await", await_),
                    (c"ready", ready),
                    (c"state", state),
                    (c"value", value),
                    (c"handle", future_handle),
                ],
            ),
        ];
        for (name, gc, methods) in kinds {
            if ffi::luaL_newmetatable(l, name.as_ptr()) != 0 {
                ffi::lua_pushcfunction(l, gc);
                ffi::lua_setfield(l, -2, c"__gc".as_ptr());
                raw::push_functions(l, methods);
                ffi::lua_setfield(l, -2, c"__index".as_ptr());
            }
            ffi::lua_pop(l, 1);
        }
        for (name, f) in
            [(c"promise", new as ffi::lua_CFunction), (c"promise_of", promise_of), (c"future_of", future_of)]
        {
            ffi::lua_pushcfunction(l, f);
            ffi::lua_setfield(l, -2, name.as_ptr());
        }
    }
}
