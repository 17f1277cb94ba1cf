//! AddressSanitizer's view of our stacks, when the process runs under it.
//!
//! ASan poisons the red zones around a frame's locals on entry and clears
//! them on return. A coroutine freed while suspended never returns from its
//! frames, so their poisoning would stay on the memory and trip the next
//! user of the same addresses (a new stack mapped there, the caller's memory
//! reused). Stacks therefore unpoison their range when they are made and
//! dropped. The hook is looked up at run time (`dlsym`), so the library
//! needs no sanitizer build of its own: a program built with
//! `-fsanitize=address` exports it, and it is absent otherwise.

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
