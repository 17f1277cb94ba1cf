//! The sanitizers' view of our stacks, when the process runs under one.
//!
//! # AddressSanitizer
//!
//! ASan poisons the red zones around a frame's locals on entry and clears
//! them on return. A coroutine freed while suspended never returns from its
//! frames, so their poisoning would stay on the memory and trip the next
//! user of the same addresses (a new stack mapped there, the caller's memory
//! reused). Stacks therefore unpoison their range when they are made and
//! dropped. The hook is looked up at run time (`dlsym`), so the library
//! needs no sanitizer build of its own: a program built with
//! `-fsanitize=address` exports it, and it is absent otherwise.
//!
//! # ThreadSanitizer
//! TSan keeps a shadow call stack per thread (instrumented functions push
//! and pop it) and the happens-before clock of the thread. Switching stacks
//! behind its back mixes the shadow stacks of the coroutines and crashes it.
//! Its fiber API gives each coroutine its own: a fiber is made with the
//! coroutine, the switch into it and back are announced just before they
//! happen, and the fiber is destroyed once the coroutine finished or was
//! freed. Looked up with `dlsym` too; without TSan these are no-ops (one
//! predictable branch per switch).

use std::ffi::c_void;
use std::sync::OnceLock;

type Unpoison = unsafe extern "C" fn(addr: *const c_void, size: usize);

fn hook() -> Option<Unpoison> {
    static HOOK: OnceLock<Option<Unpoison>> = OnceLock::new();
    *HOOK.get_or_init(|| {
        // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name only reads.
        let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"__asan_unpoison_memory_region".as_ptr()) };
        // SAFETY: when present, the symbol is ASan's
        // `void __asan_unpoison_memory_region(void const volatile *, size_t)`.
        (!p.is_null()).then(|| unsafe { std::mem::transmute::<*mut c_void, Unpoison>(p) })
    })
}

/// Clears ASan's poisoning of `addr .. addr + size`, if ASan is there.
pub(crate) fn unpoison(addr: *mut u8, size: usize) {
    if let Some(f) = hook() {
        // SAFETY: the range is memory the caller owns (a stack being made or
        // dropped); the call only writes ASan's shadow of it.
        unsafe { f(addr.cast(), size) };
    }
}

/// TSan's fiber API (`sanitizer/tsan_interface.h`).
pub(crate) struct Fibers {
    current: unsafe extern "C" fn() -> *mut c_void,
    create: unsafe extern "C" fn(flags: u32) -> *mut c_void,
    destroy: unsafe extern "C" fn(fiber: *mut c_void),
    switch_to: unsafe extern "C" fn(fiber: *mut c_void, flags: u32),
}

/// TSan's fiber API, if the process runs under TSan.
#[inline]
pub(crate) fn tsan() -> Option<&'static Fibers> {
    static FIBERS: OnceLock<Option<Fibers>> = OnceLock::new();
    FIBERS
        .get_or_init(|| {
            let find = |name: &std::ffi::CStr| {
                // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name.
                let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
                (!p.is_null()).then_some(p)
            };
            let (current, create, destroy, switch_to) = (
                find(c"__tsan_get_current_fiber")?,
                find(c"__tsan_create_fiber")?,
                find(c"__tsan_destroy_fiber")?,
                find(c"__tsan_switch_to_fiber")?,
            );
            // SAFETY: when present, these are TSan's fiber functions with the
            // signatures of `Fibers`.
            unsafe {
                Some(Fibers {
                    current: std::mem::transmute::<*mut c_void, unsafe extern "C" fn() -> *mut c_void>(current),
                    create: std::mem::transmute::<*mut c_void, unsafe extern "C" fn(u32) -> *mut c_void>(create),
                    destroy: std::mem::transmute::<*mut c_void, unsafe extern "C" fn(*mut c_void)>(destroy),
                    switch_to: std::mem::transmute::<*mut c_void, unsafe extern "C" fn(*mut c_void, u32)>(switch_to),
                })
            }
        })
        .as_ref()
}

impl Fibers {
    /// The running fiber (the thread's own one outside coroutines).
    pub(crate) fn current(&self) -> *mut c_void {
        // SAFETY: no preconditions.
        unsafe { (self.current)() }
    }

    /// A new fiber, for a new coroutine.
    pub(crate) fn create(&self) -> *mut c_void {
        // SAFETY: no preconditions.
        unsafe { (self.create)(0) }
    }

    /// Destroys a fiber made by `create` that is not running.
    pub(crate) fn destroy(&self, fiber: *mut c_void) {
        // SAFETY: `fiber` came from `create` and is not the running one (the
        // callers are on the loop's side of the switch).
        unsafe { (self.destroy)(fiber) }
    }

    /// Announces the switch, about to happen, to `fiber` (synchronizing: what
    /// the running fiber did happens before what `fiber` does next).
    #[inline]
    pub(crate) fn switch_to(&self, fiber: *mut c_void) {
        // SAFETY: `fiber` is live (made by `create`, or `current`'s).
        unsafe { (self.switch_to)(fiber, 0) }
    }
}
