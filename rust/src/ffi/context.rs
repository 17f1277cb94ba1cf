//! Raw contexts (`cot_context_*`): the stack switch under coroutines, for
//! schedulers of one's own. No loop, no checks beyond NULL.

use std::ffi::c_void;

/// A suspended raw context (opaque): the stack pointer its last switch saved.
pub struct cot_context_frame {
    _opaque: [u8; 0],
}

/// A suspended raw context, or NULL.
pub type cot_context = *mut cot_context_frame;

/// The function a raw context starts with: `arg` is the value of the first
/// switch to it. It must never return (the process aborts if it does): it
/// ends by switching away for good.
pub type cot_context_fn = Option<unsafe extern "C" fn(arg: *mut c_void)>;

/// The entry of a raw context: calls the C function in `data`.
unsafe extern "C" fn raw_entry(arg: usize, data: usize) -> ! {
    // SAFETY: `data` is the non-NULL `cot_context_fn` given to
    // `cot_context_make`, a function of this type.
    let f = unsafe { std::mem::transmute::<usize, unsafe extern "C" fn(*mut c_void)>(data) };
    // SAFETY: the caller of `cot_context_make` provides a function that may
    // run on the context's stack.
    unsafe { f(arg as *mut c_void) };
    crate::stack::context_returned()
}

/// Makes a raw context on the caller's stack memory `stack .. stack + size`
/// (at least `COT_CORO_STACK_MIN` bytes; no guard page) that calls
/// `fn(arg)` when first switched to, `arg` being the value of that switch.
/// The low-level piece under coroutines, for schedulers of your own: no
/// loop, no checks beyond these. Returns the context, or NULL (NULL `stack`
/// or `fn`, too small). Safe from any thread.
///
/// # Safety
/// The stack memory is valid and used by nothing else while the context may
/// run; `fn` never returns.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_context_make(stack: *mut c_void, size: usize, r#fn: cot_context_fn) -> cot_context {
    let Some(f) = r#fn else { return std::ptr::null_mut() };
    // SAFETY: `context_on` needs `stack .. stack + size` valid and used by
    // nothing else while the context may run: this function's contract.
    match unsafe { crate::stack::context_on(stack.cast(), size, raw_entry, f as usize) } {
        Ok(ctx) => ctx.to_raw() as cot_context,
        Err(_) => std::ptr::null_mut(),
    }
}

/// Saves the running context into `*save` and resumes `to` (made by
/// `cot_context_make` or saved by a switch), handing it `arg`: there, the
/// switch that suspended it returns `arg` (a new context's function gets it
/// as its argument). Returns, once something switches back to `*save`, the
/// value that switch handed over. Saves only the callee-saved registers and
/// the floating-point control state: a handful of instructions. Returns NULL
/// at once, switching nothing, for a NULL `save` or `to`. Safe from any
/// thread, but a context runs on the thread that switches to it.
///
/// # Safety
/// `to` is a context not resumed since it was made or saved, whose stack is
/// valid; `save` stays writable until something switches back to it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_context_switch(save: *mut cot_context, to: cot_context, arg: *mut c_void) -> *mut c_void {
    // SAFETY: `cot_context` is a saved stack pointer, as the switch's; it
    // checks for NULL itself. Forwarded caller contract. (A tail call: the
    // switch's jump returns straight into the caller of the other context.)
    unsafe { crate::stack::raw_switch(save.cast(), to as usize, arg as usize) as *mut c_void }
}

/// `cot_context_switch` for peers: contexts that hand the CPU to each other
/// from one call site (a scheduler's coroutines switching straight to the
/// next ready one). It leaves with `ret` where `cot_context_switch` leaves
/// with a jump: when both sides suspended at the same call, the return and
/// every return after it are predicted, while the jump leaves the
/// return-stack predictor one entry off for the returns that follow (the
/// poco layer's yield, four returns deep: 15 ns instead of 38 on x86-64).
/// Between different call sites (a scheduler resuming a context that
/// switches back), use `cot_context_switch`. The contexts are the same:
/// either function may resume a context the other saved. Same results, NULL
/// checks and contract as `cot_context_switch`.
///
/// # Safety
/// As `cot_context_switch`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cot_context_switch_peer(
    save: *mut cot_context,
    to: cot_context,
    arg: *mut c_void,
) -> *mut c_void {
    // SAFETY: as in `cot_context_switch`.
    unsafe { crate::stack::raw_switch_peer(save.cast(), to as usize, arg as usize) as *mut c_void }
}
