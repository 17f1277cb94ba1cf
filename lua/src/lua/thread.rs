//! The handle of this layer: a Lua thread seen from a C function of the
//! module ([`Lua`]), and the raw pointer under it ([`L`]). The other files
//! of the layer add its methods; the parent module says why they are safe.

use super::version::lua_State;

/// A raw Lua state pointer (a thread).
pub type L = *mut lua_State;

/// A Lua thread, in a C function of the module running on it.
pub struct Lua {
    pub(super) l: L,
}

impl Lua {
    /// The thread `l`, for the scheduler face, which drives threads itself.
    ///
    /// # Safety
    /// `l` is a live thread of a Lua state, running a C function of the
    /// module (or owned by the caller, which runs it), for as long as the
    /// `Lua` is used; no error of Lua may cross the caller's frames other
    /// than as rule 2 of the parent module (`lua`) describes.
    #[inline]
    pub unsafe fn from_raw(l: L) -> Lua {
        Lua { l }
    }

    /// The raw pointer, as an identity or for the scheduler face.
    #[inline]
    pub fn raw(&self) -> L {
        self.l
    }
}
