//! Tickets: what a cancelled operation leaves on its cothread's stack.
//!
//! When a parked cothread is taken out from outside (`unschedule`, a
//! plugin's yield) or its scheduler goes (collected), its operation leaves
//! the engine at once: no registration, timer, job or handle of it remains,
//! and nothing can resume the cothread. The operation itself moves into a
//! *ticket*, a userdata put on top of its frame in place of the sentinel. If
//! the cothread is scheduled again (by any scheduler), `settle` runs the
//! operation's last step (`Why::Cancelled`) there and then, on the
//! scheduling thread: the call's results (`nil, "cancelled"`, or what it can
//! still tell, as a child's exit) wait on the stack for its resume. A
//! cothread never scheduled again is collected with its ticket.

use std::ffi::{CStr, c_int};

use super::frame::{Frame, Next, STEP_SLOTS, Why};
use super::op::{Operation, Spent};
use super::records::{Engine, delivered_marker, parked_here};
use crate::lua::raw::{self, L, ffi};

/// Metatable name of tickets.
const TICKET: &CStr = c"cothread.ticket";
/// Marks the tickets' metatable (its address as a key).
static MARK: u8 = 0;

/// The userdata block of a ticket.
struct Ticket {
    op: Option<Box<dyn Operation>>,
}

unsafe extern "C-unwind" fn ticket_gc(l: L) -> c_int {
    // SAFETY: Lua calls this once with a ticket (its metatable's `__gc`),
    // whose block `make` wrote.
    unsafe {
        let t = ffi::lua_touserdata(l, 1) as *mut Ticket;
        if !t.is_null() {
            drop((*t).op.take());
        }
    }
    0
}

/// Moves parked operation `id` of `e` into a ticket on its cothread's stack
/// (the caller checked `parked_here`). Runs on `l`, which may raise before
/// anything changed.
///
/// # Safety
/// `l` is a thread in a C function; `e` is live; `id` is a parked record
/// that is not stepping.
pub(super) unsafe fn make(l: L, e: *mut Engine, id: u64) {
    // SAFETY: the ticket is made (and may raise) before the record leaves
    // the engine; then only calls that do not raise: the record's boxes
    // change owner, and the ticket moves into the slot the sentinel leaves.
    unsafe {
        raw::check_stack(l, 3);
        let t = ffi::lua_newuserdatauv(l, std::mem::size_of::<Ticket>(), 0) as *mut Ticket;
        t.write(Ticket { op: None });
        raw::metatable_once(l, TICKET, |l| {
            ffi::lua_pushcfunction(l, ticket_gc);
            ffi::lua_setfield(l, -2, c"__gc".as_ptr());
            ffi::lua_pushboolean(l, 1);
            ffi::lua_rawsetp(l, -2, (&raw const MARK).cast());
        });
        ffi::lua_setmetatable(l, -2);
        let Some(r) = (*e).ops.remove(&id) else {
            ffi::lua_pop(l, 1);
            return;
        };
        (*e).disarm(r, id);
        let co = (*r).co;
        let op = std::mem::replace(&mut (*r).op, std::ptr::null_mut::<Spent>());
        (*t).op = Some(Box::from_raw(op));
        (*e).recycle(r);
        ffi::lua_settop(co, -2); // the sentinel
        ffi::lua_xmove(l, co, 1);
    }
}

/// If `co` (a suspended coroutine being scheduled) holds a ticket, runs its
/// operation's last step on `l` and leaves the results on `co`'s stack under
/// the `DELIVERED` marker. Whether it did.
///
/// # Safety
/// `l` is a thread in a C function; `co` is a live thread of its state.
pub unsafe fn settle(l: L, co: L) -> bool {
    // SAFETY: the ticket is identified by its metatable's mark before its
    // block is read; the frame moves between two threads of one state with
    // checked stack space; the operation stays in the ticket (anchored on
    // `l`'s stack) while it steps, so a raised error leaks nothing.
    unsafe {
        if ffi::lua_status(co) != ffi::LUA_YIELD
            || ffi::lua_gettop(co) == 0
            || ffi::lua_type(co, -1) != ffi::LUA_TUSERDATA
        {
            return false;
        }
        raw::check_stack(l, 3);
        ffi::lua_xmove(co, l, 1); // the candidate ticket, on top of `l`
        let marked = ffi::lua_getmetatable(l, -1) != 0 && {
            let m = ffi::lua_rawgetp(l, -1, (&raw const MARK).cast()) != ffi::LUA_TNIL;
            ffi::lua_pop(l, 2);
            m
        };
        if !marked {
            ffi::lua_xmove(l, co, 1); // not ours: back where it was
            return false;
        }
        let t = ffi::lua_touserdata(l, -1) as *mut Ticket;
        let Some(op) = (*t).op.as_deref_mut() else {
            ffi::lua_pop(l, 1); // spent: the thread resumes with nothing
            return false;
        };
        let op: *mut dyn Operation = op;
        let h = ffi::lua_gettop(co);
        raw::check_stack(l, h + STEP_SLOTS); // may raise: the ticket stays on `l`, spent with it
        ffi::lua_xmove(co, l, h);
        let base = ffi::lua_gettop(l) - h;
        let mut f = Frame::new(l, base);
        let n = match (*op).step(&mut f, Why::Cancelled) {
            Next::Done(n) => n,
            _ => 0,
        };
        drop((*t).op.take());
        let n = if ffi::lua_checkstack(co, n + 1) == 0 { 0 } else { n };
        ffi::lua_xmove(l, co, n);
        ffi::lua_pushlightuserdata(co, delivered_marker());
        ffi::lua_settop(l, base - 1); // the frame and the ticket
        true
    }
}

/// Moves every parked operation of `e` into a ticket (its scheduler goes).
/// Called in a protected call: should making a ticket raise, the rest are
/// dropped with the engine.
///
/// # Safety
/// `l` is a thread in a C function; `e` is live.
pub(super) unsafe fn abandon_all(l: L, e: *mut Engine) {
    // SAFETY: the ids wait in the engine (not on the Rust stack) while
    // tickets are made; each is checked again before use.
    unsafe {
        (*e).abandoning = (*e).ops.keys().copied().collect();
        while let Some(id) = (*e).abandoning.pop() {
            let Some(&r) = (*e).ops.get(&id) else { continue };
            if !(*r).stepping && parked_here(r, id) {
                make(l, e, id);
            }
        }
    }
}
