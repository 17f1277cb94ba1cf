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
//! entry function and `r13` its data. `switch`'s final `ret` (or jump) enters the
//! trampoline with `rsp` = the stack's top (16-byte aligned) and `rdi` = the
//! value passed to `switch`; the trampoline calls `entry(rdi, r13)`, so the
//! entry function starts with the alignment the ABI promises (`rsp + 8`
//! aligned). The entry function must not return; if it does, the trampoline
//! calls [`super::context_returned`], which aborts the process.

use std::arch::naked_asm;

/// Bytes of the frame `switch` saves.
pub(crate) const FRAME: usize = 64;

/// Saves the current context into `*save`, restores the context `to` and
/// continues it; there `switch` returns `arg` (or, for a new context, the
/// entry function receives it). Returns, in the saved context, the `arg` of
/// the `switch` that resumes it. Returns `0` at once, switching nothing, if
/// `save` or `to` is 0 (the C ABI's NULL checks, two predicted branches).
///
/// It leaves with `ret`, which keeps the return-stack predictor aligned:
/// when both sides switched from the same call site (coroutines handing the
/// CPU to each other from the same suspending function), the `ret` and every
/// return after it are predicted. See [`switch_jump`] for the other choice.
///
/// # Safety
/// `save` is writable; `to` is a context saved by `switch` (or
/// [`switch_jump`]) or made by [`init`] and not resumed since, whose stack is
/// still valid.
#[unsafe(naked)]
pub(crate) unsafe extern "C" fn switch(save: *mut usize, to: usize, arg: usize) -> usize {
    // rdi = save, rsi = to, rdx = arg.
    naked_asm!(
        "test rdi, rdi",
        "jz 2f",
        "test rsi, rsi",
        "jz 2f",
        "lea rsp, [rsp - 56]", // the return address is at rsp + 56 now
        "stmxcsr [rsp]",
        "fnstcw [rsp + 4]",
        "mov [rsp + 8], r15",
        "mov [rsp + 16], r14",
        "mov [rsp + 24], r13",
        "mov [rsp + 32], r12",
        "mov [rsp + 40], rbx",
        "mov [rsp + 48], rbp",
        "mov [rdi], rsp", // *save = the frame just built
        "mov rsp, rsi",   // the other context's frame
        "ldmxcsr [rsp]",
        "fldcw [rsp + 4]",
        "mov r15, [rsp + 8]",
        "mov r14, [rsp + 16]",
        "mov r13, [rsp + 24]",
        "mov r12, [rsp + 32]",
        "mov rbx, [rsp + 40]",
        "mov rbp, [rsp + 48]",
        "lea rsp, [rsp + 56]", // the return address is on top
        "mov rax, rdx",        // the value handed over: switch's return value...
        "mov rdi, rdx",        // ...and, for a new context, the trampoline's rdi
        "ret",
        "2:",
        "xor eax, eax",
        "ret",
    )
}

/// [`switch`], leaving with a jump to the saved return address instead of
/// `ret` (as boost.context's `jump_fcontext` does): the C ABI's raw switch.
/// A `ret` after a stack switch is predicted to return to the caller on the
/// stack being left; when the two sides switch from different call sites (a
/// ping-pong between a loop and a context), that is always wrong, while the
/// indirect jump is predicted from its history. The price: the return-stack
/// predictor is then one entry off for the returns that follow.
///
/// # Safety
/// As [`switch`].
#[unsafe(naked)]
pub(crate) unsafe extern "C" fn switch_jump(save: *mut usize, to: usize, arg: usize) -> usize {
    naked_asm!(
        "test rdi, rdi",
        "jz 2f",
        "test rsi, rsi",
        "jz 2f",
        "lea rsp, [rsp - 56]",
        "stmxcsr [rsp]",
        "fnstcw [rsp + 4]",
        "mov [rsp + 8], r15",
        "mov [rsp + 16], r14",
        "mov [rsp + 24], r13",
        "mov [rsp + 32], r12",
        "mov [rsp + 40], rbx",
        "mov [rsp + 48], rbp",
        "mov [rdi], rsp",
        "mov rsp, rsi",
        "mov r8, [rsp + 56]", // the return address
        "ldmxcsr [rsp]",
        "fldcw [rsp + 4]",
        "mov r15, [rsp + 8]",
        "mov r14, [rsp + 16]",
        "mov r13, [rsp + 24]",
        "mov r12, [rsp + 32]",
        "mov rbx, [rsp + 40]",
        "mov rbp, [rsp + 48]",
        "lea rsp, [rsp + 64]", // pops the frame and the return address
        "mov rax, rdx",
        "mov rdi, rdx",
        "jmp r8",
        "2:",
        "xor eax, eax",
        "ret",
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
