//! Stackful coroutines: stacks, the context switch, and coroutines that run
//! as tasks of an event loop.
//!
//! - `memory`: [`Stack`], mapped with a guard page below (a stack overflow
//!   faults instead of corrupting memory) or lent by the caller (no
//!   allocation at all).
//! - `arch`: the context switch in assembly, one file per architecture
//!   (x86-64 System V, AArch64), saving only the callee-saved registers and
//!   the floating-point control state.
//! - `context`: [`Context`], a suspended computation (its saved stack
//!   pointer), and [`switch`].
//! - `coro`: [`Coro`], a coroutine attached to a loop task of a
//!   [`Loop`](crate::reactor::Loop): it yields, sleeps, waits on signals, fd
//!   readiness, work on the pool, other coroutines, or the first of several
//!   with a timeout, by awaiting through its task (see `reactor::task`).
//! - `sanitizer`: keeps AddressSanitizer's shadow of our stacks clean when
//!   the process runs under it.
//!
//! The unsafe code of the crate's stack handling lives here: the assembly,
//! the mappings, and the control blocks that both sides of a switch share
//! (through `Cell`s, never through `&mut` held across a switch).
//!
//! # Threads
//! A context runs on the thread that switches to it; a coroutine on its
//! loop's thread. Nothing here is `Send`: a suspended coroutine stays on its
//! loop's thread (switching to it from another thread would move its frames
//! between threads, which C code with thread-locals does not expect).

mod arch;
mod context;
pub mod coro;
mod memory;
mod sanitizer;

pub use arch::context_returned;
/// The switches of the C ABI's raw contexts, `switch(save, to, arg)`, with
/// the argument order and NULL checks of `cot_context_switch` and
/// `cot_context_switch_peer` (which tail-call them); see `arch` for how
/// they differ.
pub(crate) use arch::{switch as raw_switch_peer, switch_jump as raw_switch};
pub use context::{Context, Entry, switch};
pub use coro::{Coro, CoroFn, State};
pub use memory::{DEFAULT_SIZE, MIN_SIZE, Stack, page_size};

/// A context on caller-owned memory `ptr .. ptr + len` that calls
/// `entry(arg, data)` when first switched to (the raw contexts of the C
/// ABI). `Error::Inval` for NULL or less than [`MIN_SIZE`] bytes.
///
/// # Safety
/// The memory is valid, used by nothing else while the context may run.
pub unsafe fn context_on(ptr: *mut u8, len: usize, entry: Entry, data: usize) -> crate::error::Result<Context> {
    // SAFETY: the memory is valid and unshared (the contract), as `lent` needs;
    // the stack only describes it, and forgetting it leaves it to the caller.
    let stack = unsafe { Stack::lent(ptr, len)? };
    let top = stack.top();
    std::mem::forget(stack);
    // SAFETY: `top` is the aligned top of the caller's stack memory.
    Ok(unsafe { Context::new(top, entry, data) })
}

#[cfg(test)]
mod tests;
