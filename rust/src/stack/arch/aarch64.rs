//! The context switch for AArch64 (AAPCS64, Linux).
//!
//! # What is saved
//! Only what a callee must preserve: `x19`-`x28`, the frame pointer `x29`,
//! the link register `x30` (where `switch` returns), the low 64 bits of
//! `v8`-`v15` (`d8`-`d15`; the upper halves are caller-saved) and the
//! floating-point control register `FPCR` (rounding mode, flush-to-zero),
//! plus the stack pointer. The other registers are caller-saved, so the
//! compiler has already spilled what it needs before the call to `switch`.
//!
//! # Stack layout at the switch
//! A suspended context is the stack pointer saved by `switch`; it points at
//! this 176-byte frame (16-byte aligned, as `sp` must always be):
//!
//! ```text
//! sp + 168  padding
//! sp + 160  FPCR
//! sp + 152  x30 (lr: where `switch` returns when resumed)
//! sp + 144  x29 (fp)
//! sp +  64  x19 .. x28 (x19 lowest)
//! sp +   0  d8 .. d15 (d8 lowest)
//! ```
//!
//! A new context ([`init`]) is the same frame built at the top of a fresh
//! stack, with `x30` pointing at `trampoline`, `x19` holding the entry
//! function and `x20` its data, and `x29` = 0 (ends frame-pointer walks).
//! `switch`'s final `ret` enters the trampoline with `sp` = the stack's top
//! and `x0` = the value passed to `switch`; the trampoline calls
//! `entry(x0, x20)`. The entry function must not return; if it does, the
//! trampoline calls [`super::context_returned`], which aborts the process.

use std::arch::naked_asm;

/// Bytes of the frame `switch` saves.
pub(crate) const FRAME: usize = 176;

/// Saves the current context into `*save`, restores the context `to` and
/// returns into it; there `switch` returns `arg` (or, for a new context, the
/// entry function receives it). Returns, in the saved context, the `arg` of
/// the `switch` that resumes it. Returns `0` at once, switching nothing, if
/// `save` or `to` is 0 (the C ABI's NULL checks).
///
/// # Safety
/// `save` is writable; `to` is a context saved by `switch` or made by
/// [`init`] and not resumed since, whose stack is still valid.
#[unsafe(naked)]
pub(crate) unsafe extern "C" fn switch(save: *mut usize, to: usize, arg: usize) -> usize {
    // x0 = save, x1 = to, x2 = arg; x0 = arg on the way out: the value
    // returned in the other context (and the trampoline's first argument).
    naked_asm!(
        "cbz x0, 2f",
        "cbz x1, 2f",
        "sub sp, sp, #176",
        "stp d8, d9, [sp, #0]",
        "stp d10, d11, [sp, #16]",
        "stp d12, d13, [sp, #32]",
        "stp d14, d15, [sp, #48]",
        "stp x19, x20, [sp, #64]",
        "stp x21, x22, [sp, #80]",
        "stp x23, x24, [sp, #96]",
        "stp x25, x26, [sp, #112]",
        "stp x27, x28, [sp, #128]",
        "stp x29, x30, [sp, #144]",
        "mrs x9, fpcr",
        "str x9, [sp, #160]",
        "mov x9, sp",
        "str x9, [x0]", // *save = the frame just built
        "mov sp, x1",   // the other context's frame
        "ldp d8, d9, [sp, #0]",
        "ldp d10, d11, [sp, #16]",
        "ldp d12, d13, [sp, #32]",
        "ldp d14, d15, [sp, #48]",
        "ldp x19, x20, [sp, #64]",
        "ldp x21, x22, [sp, #80]",
        "ldp x23, x24, [sp, #96]",
        "ldp x25, x26, [sp, #112]",
        "ldp x27, x28, [sp, #128]",
        "ldp x29, x30, [sp, #144]",
        "ldr x9, [sp, #160]",
        "msr fpcr, x9",
        "add sp, sp, #176",
        "mov x0, x2", // the value handed over
        "ret",        // to x30
        "2:",
        "mov x0, #0",
        "ret",
    )
}

/// First code of a new context, entered by `switch`'s `ret` (see the module
/// documentation): calls `entry(arg, data)`, which must not return.
#[unsafe(naked)]
unsafe extern "C" fn trampoline() {
    naked_asm!(
        "mov x1, x20", // data; x0 already holds the arg
        "blr x19",
        "bl {returned}", // never returns
        "brk #0",
        returned = sym super::context_returned,
    )
}

/// Builds a new context at `top` (16-byte aligned, with at least [`FRAME`]
/// bytes below it) that calls `entry(arg, data)` when first switched to.
///
/// # Safety
/// `top - FRAME .. top` is writable memory of the new stack.
pub(crate) unsafe fn init(top: usize, entry: super::Entry, data: usize) -> usize {
    debug_assert_eq!(top % 16, 0);
    let sp = top - FRAME;
    let fpcr: usize;
    // SAFETY: reads the floating-point control register; the new context
    // starts with the creator's floating-point environment.
    unsafe { std::arch::asm!("mrs {}, fpcr", out(reg) fpcr, options(nomem, nostack, preserves_flags)) };
    let mut words = [0usize; FRAME / 8];
    words[8] = entry as *const () as usize; // x19
    words[9] = data; // x20
    words[18] = 0; // x29
    words[19] = trampoline as *const () as usize; // x30
    words[20] = fpcr;
    // SAFETY: the caller guarantees `sp .. top` is writable; `sp` is 16-byte
    // aligned, so the words are aligned.
    unsafe { std::ptr::copy_nonoverlapping(words.as_ptr(), sp as *mut usize, words.len()) };
    sp
}
