//! Stacks: mapped with a guard page, or lent by the caller.
//!
//! A mapped stack is one anonymous private mapping: its lowest page is made
//! `PROT_NONE`, so running off the bottom of the stack faults (SIGSEGV)
//! instead of writing over whatever lies below. Pages are committed lazily by
//! the kernel, so a large stack costs address space, not memory, until it is
//! used (`MAP_NORESERVE`: not even swap reservation). Each mapped stack takes
//! two entries of the process's memory map (the guard page and the rest);
//! Linux limits them to `vm.max_map_count` (65530 by default), so about
//! 32 000 mapped stacks fit at once. Past that, mapping fails with
//! `Error::NoMem`; lend stacks carved out of one region instead.
//!
//! A lent stack is memory the caller owns (a static array, one slice of a
//! big region): nothing is allocated, no guard page is added, and the memory
//! is the caller's again once the stack is dropped.

use std::ptr::NonNull;
use std::sync::OnceLock;

use super::sanitizer;
use crate::error::{Error, Result};

/// The usable size of a mapped stack when none is asked for: 256 KiB (it
/// costs only what the coroutine touches).
pub const DEFAULT_SIZE: usize = 256 * 1024;

/// The smallest stack accepted: room for the switch frames and a few calls.
pub const MIN_SIZE: usize = 4096;

/// The system's page size.
pub fn page_size() -> usize {
    static PAGE: OnceLock<usize> = OnceLock::new();
    *PAGE.get_or_init(|| {
        // SAFETY: sysconf has no preconditions.
        let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        if n > 0 { n as usize } else { 4096 }
    })
}

/// The memory of one stack: mapped with a guard page below, or lent by the
/// caller (see the module documentation of `stack::memory`).
#[derive(Debug)]
pub struct Stack {
    /// The lowest usable byte (just above the guard page, if any).
    base: NonNull<u8>,
    /// Usable bytes from `base`; `base + size` is 16-byte aligned.
    size: usize,
    /// The whole mapping (guard page included), for a mapped stack.
    mapping: Option<(NonNull<u8>, usize)>,
}

impl Stack {
    /// Maps a stack of at least `size` usable bytes (0: [`DEFAULT_SIZE`]),
    /// rounded up to whole pages, with a guard page below.
    /// `Error::NoMem` when the system refuses the mapping.
    pub fn new(size: usize) -> Result<Stack> {
        let page = page_size();
        let size = if size == 0 { DEFAULT_SIZE } else { size.max(MIN_SIZE) };
        let size = size.checked_next_multiple_of(page).ok_or(Error::NoMem)?;
        let len = size.checked_add(page).ok_or(Error::NoMem)?;
        let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_STACK;
        // SAFETY: a fresh anonymous mapping; no existing memory is touched.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, flags, -1, 0) };
        if p == libc::MAP_FAILED {
            return Err(Error::NoMem);
        }
        // SAFETY: the first page belongs to the mapping just made.
        if unsafe { libc::mprotect(p, page, libc::PROT_NONE) } != 0 {
            // SAFETY: unmaps exactly the mapping made above.
            unsafe { libc::munmap(p, len) };
            return Err(Error::NoMem);
        }
        let map = NonNull::new(p.cast::<u8>()).ok_or(Error::NoMem)?;
        // SAFETY: `page < len`, so `base` is inside the mapping.
        let base = unsafe { map.add(page) };
        // A mapping at an address used before (a freed stack) may still carry
        // an AddressSanitizer's poisoning of the frames that lived there.
        sanitizer::unpoison(base.as_ptr(), size);
        Ok(Stack { base, size, mapping: Some((map, len)) })
    }

    /// A stack in the caller's memory `ptr .. ptr + len` (the top is aligned
    /// down to 16 bytes). `Error::Inval` for NULL or less than [`MIN_SIZE`]
    /// bytes.
    ///
    /// # Safety
    /// The memory is valid for reads and writes, used by nothing else, and
    /// stays so until the stack is dropped.
    pub unsafe fn lent(ptr: *mut u8, len: usize) -> Result<Stack> {
        let base = NonNull::new(ptr).ok_or(Error::Inval)?;
        let top = (ptr as usize).checked_add(len).ok_or(Error::Inval)? & !15;
        let size = top - ptr as usize;
        if size < MIN_SIZE {
            return Err(Error::Inval);
        }
        sanitizer::unpoison(ptr, size);
        Ok(Stack { base, size, mapping: None })
    }

    /// The lowest usable address.
    pub fn base(&self) -> *mut u8 {
        self.base.as_ptr()
    }

    /// The top: one past the highest usable byte, 16-byte aligned.
    pub fn top(&self) -> usize {
        self.base.as_ptr() as usize + self.size
    }

    /// Usable bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Is it a mapped stack (with a guard page), not a lent one?
    pub fn is_mapped(&self) -> bool {
        self.mapping.is_some()
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // Frames abandoned on the stack (a coroutine freed while suspended)
        // leave their sanitizer poisoning behind: clear it for the next user.
        sanitizer::unpoison(self.base.as_ptr(), self.size);
        if let Some((map, len)) = self.mapping {
            // SAFETY: unmaps exactly the mapping `new` made; nothing runs on
            // this stack any more (the owner's contract).
            unsafe { libc::munmap(map.as_ptr().cast(), len) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_page_rounded_with_a_default_and_a_minimum() {
        let page = page_size();
        let s = Stack::new(0).unwrap();
        assert_eq!(s.size(), DEFAULT_SIZE);
        assert!(s.is_mapped());
        let s = Stack::new(1).unwrap();
        assert_eq!(s.size(), MIN_SIZE.next_multiple_of(page));
        let s = Stack::new(5 * page + 1).unwrap();
        assert_eq!(s.size(), 6 * page);
        assert_eq!(s.top() % 16, 0);
        assert_eq!(s.base() as usize % page, 0);
        // The whole usable range is writable.
        // SAFETY: `base .. top` is the stack's usable memory.
        unsafe { std::ptr::write_bytes(s.base(), 0xa5, s.size()) };
        assert_eq!(Stack::new(usize::MAX - 10).err(), Some(Error::NoMem), "the size overflows");
        assert_eq!(Stack::new(1 << 62).err(), Some(Error::NoMem), "no address space that large: mmap refuses");
    }

    #[test]
    fn lent_stacks_are_checked_and_aligned() {
        let mut buf = vec![0u8; 8192 + 7];
        // SAFETY: `buf` outlives the stacks made of it.
        unsafe {
            assert_eq!(Stack::lent(std::ptr::null_mut(), 8192).unwrap_err(), Error::Inval);
            assert_eq!(Stack::lent(buf.as_mut_ptr(), MIN_SIZE - 1).unwrap_err(), Error::Inval);
            let s = Stack::lent(buf.as_mut_ptr().add(3), 8192).unwrap();
            assert_eq!(s.top() % 16, 0);
            assert!(s.top() <= buf.as_ptr() as usize + 3 + 8192);
            assert!(!s.is_mapped());
        }
    }

    #[test]
    fn the_guard_page_is_not_accessible() {
        let s = Stack::new(MIN_SIZE).unwrap();
        let page = page_size();
        let guard = s.base() as usize - page;
        // Reading it would fault: check its protection in the memory map.
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let start = format!("{guard:x}-");
        let line = maps.lines().find(|l| l.starts_with(&start)).expect("the guard page's mapping");
        assert!(line.split_whitespace().nth(1).unwrap().starts_with("---p"), "{line}");
    }
}
