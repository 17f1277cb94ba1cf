//! The context switch for x86-64, System V ABI.
//!
//! # What is saved
//! Only what a callee must preserve: `rbx`, `rbp`, `r12`-`r15`, the SSE
//! control/status register `MXCSR` and the x87 control word (rounding mode,
//! precision, exception masks), plus the stack pointer. Everything else is
//! caller-saved, so the compiler has already spilled what it needs before the
//! call to `switch`. The return address is on the stack, pushed by the call.
//!
//! # Stack layout at the switch
//! A suspended context is the stack pointer saved by `switch`; it points at
//! this 64-byte frame (addresses grow downwards, `sp` is 16-byte aligned):
//!
//! ```text
//! sp + 56  return address (where `switch` returns when resumed)
//! sp + 48  rbp
//! sp + 40  rbx
//! sp + 32  r12
//! sp + 24  r13
//! sp + 16  r14
//! sp +  8  r15
//! sp +  4  x87 control word (16 bits, 2 bytes of padding after it)
//! sp +  0  MXCSR (32 bits)
//! ```
//!
//! A new context ([`init`]) is the same frame built at the top of a fresh
//! stack, with the return address pointing at `trampoline`, `r12` holding the
//! entry function and `r13` its data. `switch`'s final `ret` enters the
//! trampoline with `rsp` = the stack's top (16-byte aligned) and `rdi` = the
//! value passed to `switch`; the trampoline calls `entry(rdi, r13)`, so the
//! entry function starts with the alignment the ABI promises (`rsp + 8`
//! aligned). The entry function must not return; if it does, the trampoline
//! calls [`super::context_returned`], which aborts the process.

use std::arch::naked_asm;

/// Bytes of the frame `switch` saves.
pub(crate) const FRAME: usize = 64;

/// Saves the current context into `*save`, restores the context `to` and
/// returns into it; there `switch` returns `arg` (or, for a new context, the
/// entry function receives it). Returns, in the saved context, the `arg` of
/// the `switch` that resumes it.
///
/// # Safety
/// `save` is writable; `to` is a context saved by `switch` or made by
/// [`init`] and not resumed since, whose stack is still valid.
#[unsafe(naked)]
pub(crate) unsafe extern "C" fn switch(arg: usize, save: *mut usize, to: usize) -> usize {
    // rdi = arg, rsi = save, rdx = to.
    naked_asm!(
        "push rbp",
        "push rbx",
        "push r12",
        "push r13",
        "push r14",
        "push r15",
        "sub rsp, 8",
        "stmxcsr [rsp]",
        "fnstcw [rsp + 4]",
        "mov [rsi], rsp", // *save = the frame just built
        "mov rsp, rdx",   // the other context's frame
        "ldmxcsr [rsp]",
        "fldcw [rsp + 4]",
        "add rsp, 8",
        "pop r15",
        "pop r14",
        "pop r13",
        "pop r12",
        "pop rbx",
        "pop rbp",
        "mov rax, rdi", // the value handed over: switch's return value...
        "ret",          // ...and, for a new context, the trampoline's rdi
    )
}

/// First code of a new context, entered by `switch`'s `ret` (see the module
/// documentation): calls `entry(arg, data)`, which must not return.
#[unsafe(naked)]
unsafe extern "C" fn trampoline() {
    naked_asm!(
        "mov rsi, r13", // data; rdi already holds the arg
        "call r12",
        "call {returned}", // never returns
        "ud2",
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
    let (mut mxcsr, mut fpucw) = (0u32, 0u16);
    // SAFETY: stores the current MXCSR and x87 control word into two locals;
    // the new context starts with the creator's floating-point environment.
    unsafe {
        std::arch::asm!(
            "stmxcsr [{m}]",
            "fnstcw [{f}]",
            m = in(reg) &mut mxcsr,
            f = in(reg) &mut fpucw,
            options(nostack, preserves_flags),
        );
    }
    let words: [usize; 8] = [
        mxcsr as usize | (fpucw as usize) << 32,
        0,                                // r15
        0,                                // r14
        data,                             // r13
        entry as *const () as usize,      // r12
        0,                                // rbx
        0,                                // rbp: ends frame-pointer walks
        trampoline as *const () as usize, // return address
    ];
    // SAFETY: the caller guarantees `sp .. top` is writable; `sp` is 16-byte
    // aligned, so the words are aligned.
    unsafe { std::ptr::copy_nonoverlapping(words.as_ptr(), sp as *mut usize, words.len()) };
    sp
}
