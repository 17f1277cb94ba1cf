//! The bytes a write sends: its own copy, or bytes lent by the caller, who
//! keeps them in place until the write ends. Lending is how a C or C++
//! caller whose buffer outlives the call anyway (a C++ `co_await`, a
//! stackful coroutine parked in the call, a `cot_tcp_write_nocopy` caller)
//! writes megabytes without a second copy of what the socket has not taken.

/// The bytes of a write; see the [module documentation](self).
pub enum WriteBuf {
    /// A copy the operation owns.
    Owned(Vec<u8>),
    /// Bytes lent: a pointer and a length (`WriteBuf::lent`).
    Lent(*const u8, usize),
}

impl WriteBuf {
    /// Bytes lent for the life of a write.
    ///
    /// # Safety
    /// `ptr` is readable for `len` bytes, which nobody changes, until the
    /// write given them ends: its completion ran, it failed to start, or its
    /// loop was dropped. A cancel or a close ends it before it reads again.
    pub unsafe fn lent(ptr: *const u8, len: usize) -> WriteBuf {
        WriteBuf::Lent(ptr, len)
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        match self {
            WriteBuf::Owned(v) => v,
            // SAFETY: `lent`'s contract: readable and unchanged while the
            // write that holds this lives, which `self` does.
            WriteBuf::Lent(p, n) => unsafe { std::slice::from_raw_parts(*p, *n) },
        }
    }
}

impl From<Vec<u8>> for WriteBuf {
    fn from(v: Vec<u8>) -> WriteBuf {
        WriteBuf::Owned(v)
    }
}
