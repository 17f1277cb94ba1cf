//! The context switch, one file per architecture, in assembly (naked
//! functions). Each file documents the registers it saves and the frame a
//! suspended context leaves on its stack; both expose the same three items:
//!
//! - `FRAME`: the bytes of that frame;
//! - `switch(save, to, arg) -> usize`: saves the current context's stack
//!   pointer into `*save`, resumes `to`, and returns (when resumed in turn) the
//!   `arg` of the switch that resumed it; 0 at once for a 0 `save` or `to`
//!   (the argument order and checks of the C ABI's `cot_context_switch`);
//! - `switch_jump`: the same, for the C ABI's `cot_context_switch`; on
//!   x86-64 it leaves with a jump instead of `ret` (the file says why),
//!   elsewhere it is `switch` (`cot_context_switch_peer` is `switch`);
//! - `init(top, entry, data) -> sp`: builds a new context at the top of a stack
//!   that calls `entry(arg, data)` on its first resumption.

#[cfg(target_arch = "aarch64")]
mod aarch64;
#[cfg(target_arch = "x86_64")]
mod x86_64;

#[cfg(target_arch = "aarch64")]
pub(crate) use aarch64::{FRAME, init, switch, switch as switch_jump};
#[cfg(target_arch = "x86_64")]
pub(crate) use x86_64::{FRAME, init, switch, switch_jump};

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
compile_error!("cothread's stackful coroutines support x86-64 and AArch64 only");

/// The first function a new context runs: `entry(arg, data)`, `arg` being the
/// value of the first switch into it and `data` the value given to `init`.
/// It must never return (it ends by switching away for good).
pub(crate) type Entry = unsafe extern "C" fn(arg: usize, data: usize) -> !;

/// Called by a trampoline whose entry function returned, which is a bug of
/// the code that made the context: there is nowhere to return to.
pub extern "C" fn context_returned() -> ! {
    eprintln!("cothread: a context's entry function returned; aborting");
    std::process::abort()
}
