//! Execution contexts: a suspended computation is the stack pointer its last
//! switch saved, on its own stack (see `arch` for the frame it points at).

use super::arch;

/// A suspended context: the stack pointer its last switch saved, or
/// [`Context::NONE`]. Plain data; it is valid until it is resumed.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
#[repr(transparent)]
pub struct Context(usize);

impl Context {
    /// No context.
    pub const NONE: Context = Context(0);

    /// Bytes a suspended context keeps at the top of its stack.
    pub const FRAME: usize = arch::FRAME;

    /// A new context on the stack whose (16-byte aligned) top is `top`: the
    /// first switch to it calls `entry(arg, data)`, `arg` being the value
    /// passed to that switch. `entry` must never return (it ends by
    /// switching away for good); if it does, the process aborts.
    ///
    /// # Safety
    /// `top - Context::FRAME .. top` is writable, and the memory below it is
    /// a stack nothing else uses, valid while the context may run.
    pub unsafe fn new(top: usize, entry: Entry, data: usize) -> Context {
        // SAFETY: `arch::init` writes the first frame below `top` and later
        // runs on the memory below it: writable and unshared (the contract).
        Context(unsafe { arch::init(top, entry, data) })
    }

    /// Is it [`Context::NONE`]?
    pub fn is_none(self) -> bool {
        self.0 == 0
    }

    /// The saved stack pointer, for the C ABI.
    pub fn to_raw(self) -> usize {
        self.0
    }

    /// A context from [`Context::to_raw`].
    pub fn from_raw(raw: usize) -> Context {
        Context(raw)
    }
}

/// The first function of a new context: `entry(arg, data)`. It must not
/// return.
pub type Entry = arch::Entry;

/// Saves the running context into `*save` and resumes `to`, handing it
/// `arg` (a NULL `save` or a `Context::NONE` switches nothing and returns 0): there, the switch that suspended `to` returns `arg` (or, for a new
/// context, its entry function receives it). Returns, once something switches
/// back to `*save`, the value that switch handed over.
///
/// # Safety
/// `save` is writable until the switch back; `to` is a suspended context not
/// resumed since it was saved (or made), whose stack is valid.
#[inline(always)]
pub unsafe fn switch(save: *mut Context, to: Context, arg: usize) -> usize {
    // SAFETY: `Context` is a transparent `usize`, so `save` is writable as one;
    // `to` is suspended with a valid stack (the contract), as `arch::switch` needs.
    unsafe { arch::switch(save.cast(), to.0, arg) }
}

#[cfg(test)]
mod tests {
    use super::super::Stack;
    use super::*;
    use std::cell::Cell;

    thread_local! {
        static MAIN: Cell<Context> = const { Cell::new(Context::NONE) };
        static OTHER: Cell<Context> = const { Cell::new(Context::NONE) };
    }

    /// Echoes every value back, incremented, forever.
    unsafe extern "C" fn echo(mut arg: usize, data: usize) -> ! {
        assert_eq!(data, 0xda7a);
        loop {
            let main = MAIN.with(Cell::get);
            // SAFETY: MAIN holds the test's suspended context.
            arg = unsafe { switch(OTHER.with(Cell::as_ptr), main, arg + 1) };
        }
    }

    #[test]
    fn ping_pong_hands_values_both_ways() {
        let stack = Stack::new(64 * 1024).unwrap();
        // SAFETY: the stack outlives every switch into the context.
        unsafe {
            OTHER.with(|c| c.set(Context::new(stack.top(), echo, 0xda7a)));
            for i in 0..1000usize {
                let other = OTHER.with(Cell::get);
                let got = switch(MAIN.with(Cell::as_ptr), other, i * 3);
                assert_eq!(got, i * 3 + 1);
            }
        }
    }

    /// Sets flush-to-zero and round-toward-zero in MXCSR / FPCR, reports
    /// what it sees, and switches back.
    #[cfg(target_arch = "x86_64")]
    unsafe extern "C" fn fp_env(_: usize, _: usize) -> ! {
        let mut seen = 0u32;
        // SAFETY: reads and writes this context's MXCSR only.
        unsafe {
            std::arch::asm!("stmxcsr [{}]", in(reg) &mut seen, options(nostack));
            let changed = seen | 0x8000 | 0x6000; // FZ, round toward zero
            std::arch::asm!("ldmxcsr [{}]", in(reg) &changed, options(nostack));
        }
        let main = MAIN.with(Cell::get);
        // SAFETY: MAIN holds the test's suspended context.
        unsafe { switch(OTHER.with(Cell::as_ptr), main, seen as usize) };
        unreachable!("never resumed")
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_floating_point_environment_is_per_context() {
        let mxcsr = || {
            let mut m = 0u32;
            // SAFETY: stores MXCSR into a local.
            unsafe { std::arch::asm!("stmxcsr [{}]", in(reg) &mut m, options(nostack)) };
            m
        };
        let before = mxcsr();
        let stack = Stack::new(0).unwrap();
        // SAFETY: the stack outlives the only switch into the context.
        let seen = unsafe {
            let ctx = Context::new(stack.top(), fp_env, 0);
            switch(MAIN.with(Cell::as_ptr), ctx, 0)
        };
        assert_eq!(seen as u32, before, "a new context starts with its creator's MXCSR");
        assert_eq!(mxcsr(), before, "the context's change stayed in it");
    }

    /// Sets flush-to-zero and round-toward-zero in FPCR, reports what it
    /// sees, and switches back.
    #[cfg(target_arch = "aarch64")]
    unsafe extern "C" fn fp_env(_: usize, _: usize) -> ! {
        let seen: usize;
        // SAFETY: reads and writes this context's FPCR only.
        unsafe {
            std::arch::asm!("mrs {}, fpcr", out(reg) seen, options(nomem, nostack));
            let changed = seen | 1 << 24 | 3 << 22; // FZ, round toward zero
            std::arch::asm!("msr fpcr, {}", in(reg) changed, options(nomem, nostack));
        }
        let main = MAIN.with(Cell::get);
        // SAFETY: MAIN holds the test's suspended context.
        unsafe { switch(OTHER.with(Cell::as_ptr), main, seen) };
        unreachable!("never resumed")
    }

    #[cfg(target_arch = "aarch64")]
    #[test]
    fn the_floating_point_environment_is_per_context() {
        let fpcr = || {
            let v: usize;
            // SAFETY: reads FPCR.
            unsafe { std::arch::asm!("mrs {}, fpcr", out(reg) v, options(nomem, nostack)) };
            v
        };
        let before = fpcr();
        let stack = Stack::new(0).unwrap();
        // SAFETY: the stack outlives the only switch into the context.
        let seen = unsafe {
            let ctx = Context::new(stack.top(), fp_env, 0);
            switch(MAIN.with(Cell::as_ptr), ctx, 0)
        };
        assert_eq!(seen, before, "a new context starts with its creator's FPCR");
        assert_eq!(fpcr(), before, "the context's change stayed in it");
    }

    /// Fills callee-saved registers with patterns across a switch: if the
    /// switch lost one, the compiler-visible values would change.
    #[test]
    fn callee_saved_values_survive_switches() {
        let stack = Stack::new(64 * 1024).unwrap();
        let a = std::hint::black_box([1.5f64, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5]);
        let b = std::hint::black_box([11u64, 12, 13, 14, 15, 16, 17]);
        // SAFETY: `stack` outlives every switch below, and `echo` never returns.
        unsafe {
            OTHER.with(|c| c.set(Context::new(stack.top(), echo, 0xda7a)));
            let mut acc = 0usize;
            for i in 0..100 {
                let other = OTHER.with(Cell::get);
                acc += switch(MAIN.with(Cell::as_ptr), other, i);
                assert_eq!(std::hint::black_box(a), [1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5]);
                assert_eq!(std::hint::black_box(b), [11, 12, 13, 14, 15, 16, 17]);
            }
            assert_eq!(acc, (1..=100).sum::<usize>());
        }
    }
}
