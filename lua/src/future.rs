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

use crate::cfn;
use crate::engine::{self, Fire, Frame, Next, OnEnd, Operation, Why};
use crate::lua::{Error, Lua, REGISTRY, Reg, Ret, Type, Udata, lua_Integer};
use crate::park::drive;

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

/// The anchor's userdata: collected when the state closes.
struct AnchorBox(Arc<Anchor>);

// SAFETY: c"cothread.anchor" names only this type (no other `Udata`, no registry field).
unsafe impl Udata for AnchorBox {
    const NAME: &'static CStr = c"cothread.anchor";
}

impl Drop for AnchorBox {
    /// The state closes: later drops release nothing.
    fn drop(&mut self) {
        self.0.alive.store(false, Ordering::Release);
    }
}

/// Lua values in the core: a registry reference to `{n = count, ...}`, and
/// what C readers see.
struct LuaValues {
    anchor: Arc<Anchor>,
    reference: c_int,
    /// A light userdata's pointer, or the string copy's address (NULL else).
    c_ptr: *mut c_void,
    c_string: Option<CString>,
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

// A memory error of Lua's allocator longjmps past the Rust frames of a
// body (rule 2 of the `lua` layer): here no reference count, string copy or
// payload of ours is held while Lua allocates. Futures are read in their
// userdata, the anchor is an identity until `pack` clones it at its end.

/// `[-0, +0, m]` This state's anchor, made on first use; releases the
/// references dropped since the last call. Answers its identity (the
/// registry keeps it alive).
fn anchor(lua: &mut Lua) -> *const Anchor {
    if lua.get_field(REGISTRY, ANCHOR) != Type::Userdata || lua.test_udata::<AnchorBox>(-1).is_none() {
        lua.pop(1);
        if lua.udata_metatable::<AnchorBox>(|_| Ok(())).is_err() {
            return std::ptr::null(); // cannot be: the filling never fails
        }
        lua.pop(1);
        let a = Anchor { alive: AtomicBool::new(true), dropped: Mutex::new(Vec::new()) };
        lua.new_udata(AnchorBox(Arc::new(a)), 0);
        lua.push_value(-1);
        lua.set_field(REGISTRY, ANCHOR);
    }
    let Some(a) = lua.test_udata::<AnchorBox>(-1) else { return std::ptr::null() };
    let dropped = std::mem::take(&mut *a.0.dropped.lock().unwrap_or_else(|e| e.into_inner()));
    let id = Arc::as_ptr(&a.0);
    // Releasing a reference allocates nothing (a slot of the registry's
    // array goes to its free list).
    for r in dropped {
        lua.unreference(r);
    }
    lua.pop(1);
    id
}

/// `[-0, +0, -]` The anchor itself, once `anchor` made it.
fn anchor_owned(lua: &mut Lua) -> Option<Arc<Anchor>> {
    lua.get_field(REGISTRY, ANCHOR);
    let a = lua.test_udata::<AnchorBox>(-1).map(|a| a.0.clone());
    lua.pop(1);
    a
}

/// `[-0, +0, m]` Packs the values from `first` to the top into the registry
/// (`anchor` made the anchor). None if there is no anchor.
fn pack(lua: &mut Lua, first: c_int) -> Option<LuaValues> {
    let n = lua.top() - first + 1;
    lua.new_table(n.max(0), 1);
    for i in 0..n {
        lua.push_value(first + i);
        lua.set_index(-2, i as lua_Integer + 1);
    }
    lua.push_int(n as lua_Integer);
    lua.set_field(-2, c"n");
    let reference = lua.reference();
    // Lua allocates nothing from here on.
    let (c_ptr, c_string) = match (n, lua.kind(first)) {
        (1, Type::LightUserdata) => (lua.to_pointer(first), None),
        // A string with a NUL inside is no C string: C readers see NULL.
        (1, Type::String) => match CString::new(lua.to_bytes(first).unwrap_or_default()) {
            Ok(c) => (c.as_ptr() as *mut c_void, Some(c)),
            Err(_) => (std::ptr::null_mut(), None),
        },
        _ => (std::ptr::null_mut(), None),
    };
    let Some(anchor) = anchor_owned(lua) else {
        lua.unreference(reference);
        return None;
    };
    Some(LuaValues { anchor, reference, c_ptr, c_string })
}

/// What a payload is to this state: its own Lua values (their registry
/// reference), or what a C reader sees.
enum Seen<'a> {
    Ours(c_int),
    Bytes(&'a [u8]),
    Pointer(*mut c_void),
}

fn seen(payload: &dyn Payload, anchor: *const Anchor) -> Seen<'_> {
    let values = payload.as_any().downcast_ref::<LuaValues>();
    // A reference of this state's anchor is live: it is released only
    // after the payload is dropped.
    if let Some(v) = values.filter(|v| Arc::as_ptr(&v.anchor) == anchor) {
        return Seen::Ours(v.reference);
    }
    match values.and_then(|v| v.c_string.as_deref()) {
        Some(s) => Seen::Bytes(s.to_bytes()), // another state's string
        None => Seen::Pointer(payload.as_ptr()),
    }
}

/// `[-0, +n, m]` Pushes the values of the Lua values' table `reference`.
/// Returns how many.
fn push_ours(lua: &mut Lua, reference: c_int) -> Result<c_int, Error> {
    lua.get_index(REGISTRY, reference as lua_Integer);
    lua.get_field(-1, c"n");
    let n = lua.to_int(-1).unwrap_or(0) as c_int;
    lua.pop(1);
    lua.check_stack(n + 1)?;
    for i in 1..=n {
        lua.get_index(-i, i as lua_Integer);
    }
    lua.remove(-n - 1);
    Ok(n)
}

/// `[-0, +1, m]` Pushes what a C reader sees of a payload.
fn push_seen(lua: &Lua, s: &Seen) {
    match *s {
        Seen::Ours(_) => lua.push_nil(),
        Seen::Bytes(b) => lua.push_bytes(b),
        Seen::Pointer(p) if p.is_null() => lua.push_nil(),
        Seen::Pointer(p) => lua.push_light(p),
    }
}

/// `[-0, +n, m]` Pushes the results of the future in slot `at` (settled),
/// as `pcall` gives them: `true, values...`, or `false, error` (a Lua
/// error value as it was given, or a C error's message and code), or
/// `false, "dropped"`. Returns how many.
fn push_outcome(lua: &mut Lua, at: c_int, anchor: *const Anchor) -> Result<c_int, Error> {
    let Some(fut) = lua.test_udata::<LuaFuture>(at) else { return Ok(lua.fail_false(c"collected")) };
    match fut.0.outcome() {
        None => Ok(lua.fail_false(c"pending")),
        Some(Outcome::Value(v)) => {
            let s = seen(&**v, anchor);
            lua.push_bool(true);
            match s {
                Seen::Ours(r) => Ok(1 + push_ours(lua, r)?),
                s => {
                    push_seen(lua, &s);
                    Ok(2)
                }
            }
        }
        Some(Outcome::Error { code, message, detail }) => {
            lua.push_bool(false);
            if let Some(Seen::Ours(r)) = detail.as_deref().map(|d| seen(d, anchor)) {
                push_ours(lua, r)?;
                return Ok(2);
            }
            lua.push_bytes(message.to_bytes());
            lua.push_int(*code as lua_Integer);
            Ok(3)
        }
        Some(Outcome::Dropped) => Ok(lua.fail_false(c"dropped")),
    }
}

// ===== userdata =====

/// A promise in Lua (userdata `cothread.promise`).
struct LuaPromise(Promise);

// SAFETY: c"cothread.promise" names only this type (no other `Udata`, no registry field).
unsafe impl Udata for LuaPromise {
    const NAME: &'static CStr = c"cothread.promise";
}

/// A future in Lua (userdata `cothread.future`).
struct LuaFuture(Future);

// SAFETY: c"cothread.future" names only this type (no other `Udata`, no registry field).
unsafe impl Udata for LuaFuture {
    const NAME: &'static CStr = c"cothread.future";
}

cfn!(new = new_body);

/// `promise, future = cothread.promise()`
fn new_body(lua: &mut Lua) -> Ret {
    anchor(lua);
    // The future is made from the promise once that is Lua's (`new_udata`
    // drops its value if it cannot allocate): neither is held meanwhile
    // (nor by a temporary of this statement's, which the error would skip).
    let (p, f) = Promise::new();
    drop(f);
    let f = lua.new_udata(LuaPromise(p), 0).0.future();
    lua.new_udata(LuaFuture(f), 0);
    Ok(2)
}

cfn!(set = set_body);

/// `settled = promise:set(...)`: true if this call settled the future.
fn set_body(lua: &mut Lua) -> Ret {
    let settled = lua.udata::<LuaPromise>(1)?.0.is_settled();
    anchor(lua);
    let ok = !settled
        && match pack(lua, 2) {
            Some(values) => lua.udata::<LuaPromise>(1)?.0.set(Box::new(values)).is_ok(),
            None => false,
        };
    lua.push_bool(ok);
    Ok(1)
}

cfn!(fail = fail_body);

/// `settled = promise:fail(err [, code])`: C readers see `code` (default
/// `COT_EIO`) and `tostring(err)`; Lua readers of this state get `err`.
fn fail_body(lua: &mut Lua) -> Ret {
    lua.udata::<LuaPromise>(1)?;
    // A nil error would read as a success with no value to `await`.
    if lua.is_nil(2) {
        return Err(Error::Type { arg: 2, expected: c"error value" });
    }
    let code = lua.opt_int(3, LUA_ERROR_CODE as lua_Integer)?;
    if !(i32::MIN as lua_Integer..0).contains(&code) {
        return Err(Error::arg(3, c"negative error code expected"));
    }
    lua.set_top(2);
    if lua.udata::<LuaPromise>(1)?.0.is_settled() {
        lua.push_bool(false);
        return Ok(1);
    }
    lua.push_tostring(2)?;
    lua.insert(2); // promise message err
    // Packed before the core's lock is taken, and before the message is
    // copied (Lua allocates nothing after `pack`).
    anchor(lua);
    let Some(values) = pack(lua, 3) else {
        lua.push_bool(false);
        return Ok(1);
    };
    let detail: Box<dyn Payload> = Box::new(values);
    let message = CString::new(lua.to_bytes(2).unwrap_or_default()).unwrap_or_default();
    let ok = lua.udata::<LuaPromise>(1)?.0.fail_with(code as i32, &message, Some(detail)).is_ok();
    lua.push_bool(ok);
    Ok(1)
}

cfn!(settled = settled_body);

/// `settled = promise:settled()`
fn settled_body(lua: &mut Lua) -> Ret {
    let s = lua.udata::<LuaPromise>(1)?.0.is_settled();
    lua.push_bool(s);
    Ok(1)
}

cfn!(promise_future = promise_future_body);

/// `future = promise:future()`: another future of the promise.
fn promise_future_body(lua: &mut Lua) -> Ret {
    let f = lua.udata::<LuaPromise>(1)?.0.future();
    lua.new_udata(LuaFuture(f), 0);
    Ok(1)
}

cfn!(promise_handle = promise_handle_body);

/// `pointer = promise:handle()` / `future:handle()`: a new C handle (light
/// userdata) that the C side frees with `cot_promise_free` / `cot_future_free`.
fn promise_handle_body(lua: &mut Lua) -> Ret {
    let p = lua.udata::<LuaPromise>(1)?.0.clone();
    lua.push_light(cot_promise::into_raw(p) as *const c_void);
    Ok(1)
}

cfn!(future_handle = future_handle_body);

fn future_handle_body(lua: &mut Lua) -> Ret {
    let f = lua.udata::<LuaFuture>(1)?.0.clone();
    lua.push_light(cot_future::into_raw(f) as *const c_void);
    Ok(1)
}

cfn!(promise_of = promise_of_body);

/// `promise = cothread.promise_of(pointer)`, `future = cothread.future_of(pointer)`:
/// Lua objects of a `cot_promise*` / `cot_future*` handed in by C (their own
/// handles: the C side keeps and frees its own).
fn promise_of_body(lua: &mut Lua) -> Ret {
    lua.check_type(1, Type::LightUserdata)?;
    // SAFETY: a light userdata passed here must be a live `cot_promise*`:
    // the documented contract of `promise_of`, the one place where Lua code
    // hands the module a C pointer (NULL is checked by `get`).
    let p = unsafe { cot_promise::get(lua.to_pointer(1) as *const cot_promise) };
    let p = p.ok_or(Error::arg(1, c"NULL promise"))?.clone();
    lua.new_udata(LuaPromise(p), 0);
    Ok(1)
}

cfn!(future_of = future_of_body);

fn future_of_body(lua: &mut Lua) -> Ret {
    lua.check_type(1, Type::LightUserdata)?;
    // SAFETY: as in `promise_of`, for a live `cot_future*`.
    let f = unsafe { cot_future::get(lua.to_pointer(1) as *const cot_future) };
    let f = f.ok_or(Error::arg(1, c"NULL future"))?.clone();
    lua.new_udata(LuaFuture(f), 0);
    Ok(1)
}

cfn!(ready = ready_body);

/// `ready = future:ready()`
fn ready_body(lua: &mut Lua) -> Ret {
    let r = lua.udata::<LuaFuture>(1)?.0.outcome().is_some();
    lua.push_bool(r);
    Ok(1)
}

cfn!(state = state_body);

/// `state = future:state()`: "pending", "value", "error" or "dropped".
fn state_body(lua: &mut Lua) -> Ret {
    let name: &[u8] = match lua.udata::<LuaFuture>(1)?.0.state() {
        State::Pending => b"pending",
        State::Value => b"value",
        State::Error => b"error",
        State::Dropped => b"dropped",
    };
    lua.push_bytes(name);
    Ok(1)
}

cfn!(value = value_body);

/// `ok, ... = future:value()`: the results without waiting.
fn value_body(lua: &mut Lua) -> Ret {
    lua.udata::<LuaFuture>(1)?;
    let a = anchor(lua);
    push_outcome(lua, 1, a)
}

/// `future:await`. Frame: 1 the future.
#[derive(Clone, Copy)]
struct Await {
    deadline: Option<u64>,
}

/// The future in slot 1 of an await's frame (checked by `await`).
fn future_of_frame(f: &Frame) -> Option<Future> {
    f.lua.test_udata::<LuaFuture>(f.at(1)).map(|u| u.0.clone())
}

impl Operation for Await {
    fn step(&mut self, f: &mut Frame, why: Why) -> Next {
        let at = f.at(1);
        let Some(settled) = f.lua.test_udata::<LuaFuture>(at).map(|u| u.0.outcome().is_some()) else {
            return Next::Done(f.lua.fail_false(c"collected"));
        };
        let lua = &mut f.lua;
        Next::Done(match why {
            Why::Start | Why::Ready | Why::Closed if !settled => {
                return Next::Event(self.deadline);
            }
            Why::Start | Why::Ready | Why::Closed | Why::Done => {
                let a = anchor(lua);
                push_outcome(lua, at, a).unwrap_or_else(|_| lua.fail_false(c"too many values"))
            }
            Why::Timeout => lua.fail_false(c"timeout"),
            Why::Cancelled => lua.fail_false(c"cancelled"),
            Why::Failed(m) => lua.fail_false(m),
        })
    }

    fn start(&mut self, f: &Frame, lp: &mut Loop, fire: Fire) -> Result<OnEnd, &'static CStr> {
        // The request holds its own reference to the future's state.
        let fut = future_of_frame(f).ok_or(c"collected")?;
        let req = lp.future_wait(&fut, Box::new(move |_, _, _| fire.fire()));
        Ok(Box::new(move |lp| {
            let _ = lp.request_cancel(req); // completed already: nothing to cancel
        }))
    }

    fn block(&mut self, f: &mut Frame, _next: Next) -> Why {
        let ns = self.deadline.filter(|&d| d != u64::MAX).map(|d| d.saturating_sub(cothread::time::monotonic_ns()));
        match future_of_frame(f).map(|fut| fut.wait(ns)) {
            Some(Err(_)) => Why::Timeout,
            _ => Why::Done,
        }
    }
}

cfn!(await_ = await_body);

/// `ok, ... = future:await([timeout])`
fn await_body(lua: &mut Lua) -> Ret {
    lua.udata::<LuaFuture>(1)?;
    let deadline = if lua.is_nil(2) { None } else { Some(engine::deadline_in(engine::ns_of(lua.check_time(2)?))) };
    lua.set_top(1);
    drive(lua, Await { deadline })
}

const PROMISE_METHODS: &[Reg] =
    &[(c"set", set), (c"fail", fail), (c"settled", settled), (c"future", promise_future), (c"handle", promise_handle)];

const FUTURE_METHODS: &[Reg] =
    &[(c"await", await_), (c"ready", ready), (c"state", state), (c"value", value), (c"handle", future_handle)];

/// `[-0, +0, m]` Sets `__index`, a table of `methods`, in the table on the top.
fn set_index(lua: &mut Lua, methods: &[Reg]) -> Result<(), Error> {
    lua.push_functions(methods);
    lua.set_field(-2, c"__index");
    Ok(())
}

/// `[-0, +0, m]` Sets the module's functions in the table at the top:
/// `promise`, `promise_of`, `future_of`; makes the metatables.
pub fn add_functions(lua: &mut Lua) {
    // The fillings never fail (a memory error raises): the tables are pushed.
    if lua.udata_metatable::<LuaPromise>(|lua| set_index(lua, PROMISE_METHODS)).is_ok() {
        lua.pop(1);
    }
    if lua.udata_metatable::<LuaFuture>(|lua| set_index(lua, FUTURE_METHODS)).is_ok() {
        lua.pop(1);
    }
    for (name, f) in
        [(c"promise", new as crate::lua::ffi::lua_CFunction), (c"promise_of", promise_of), (c"future_of", future_of)]
    {
        lua.push_fn(f);
        lua.set_field(-2, name);
    }
}
