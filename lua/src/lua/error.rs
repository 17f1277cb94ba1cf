//! Errors of a body, raised by its trampoline with Lua's own wording.

use std::ffi::{CStr, CString, c_int};

use super::version as ffi;

use super::thread::{L, Lua};

/// What a body returns: how many results it pushed, or its error.
pub type Ret = Result<c_int, Error>;

/// An error a body asks its trampoline to raise.
#[derive(Debug)]
pub enum Error {
    /// `bad argument #arg to 'f' (T expected, got U)`, as `luaL_typeerror`.
    Type { arg: c_int, expected: &'static CStr },
    /// `bad argument #arg to 'f' (msg)`, as `luaL_argerror`.
    Arg { arg: c_int, msg: Msg },
    /// `msg`, raised as `luaL_error` does (with the caller's position).
    Msg(Msg),
    /// The error value on top of the stack (a protected call's), raised as it
    /// is.
    Value,
}

/// A message: most are literals; the others are made at the error.
#[derive(Debug)]
pub enum Msg {
    Static(&'static CStr),
    Owned(CString),
}

impl Error {
    /// An argument error with a fixed message.
    pub fn arg(arg: c_int, msg: &'static CStr) -> Error {
        Error::Arg { arg, msg: Msg::Static(msg) }
    }

    /// An argument error with a made message (a NUL in it ends it).
    pub fn arg_owned(arg: c_int, msg: String) -> Error {
        Error::Arg { arg, msg: Msg::Owned(c_string(msg)) }
    }

    /// An error with a fixed message.
    pub fn msg(msg: &'static CStr) -> Error {
        Error::Msg(Msg::Static(msg))
    }

    /// An error with a made message (a NUL in it ends it).
    pub fn owned(msg: String) -> Error {
        Error::Msg(Msg::Owned(c_string(msg)))
    }

    /// Raises `self` in the C function running on `l`.
    ///
    /// # Safety
    /// `l` is the running thread of the C function that calls this, and no
    /// frame between it and Lua holds a value with a destructor (`self` is
    /// consumed before the raise).
    pub unsafe fn raise(self, l: L) -> ! {
        // SAFETY: the contract; the message is pushed (anchored in Lua)
        // before `self`, which owns its Rust copy, is dropped, and every
        // auxiliary call below may raise only at its end.
        unsafe {
            ffi::lua_checkstack(l, 4);
            match self {
                Error::Type { arg, expected } => {
                    let got = type_name(l, arg);
                    let msg = ffi::lua_pushfstring(l, c"%s expected, got %s".as_ptr(), expected.as_ptr(), got);
                    ffi::luaL_argerror(l, arg, msg);
                }
                Error::Arg { arg, msg } => {
                    let text = push_msg(l, msg);
                    ffi::luaL_argerror(l, arg, text);
                }
                Error::Msg(msg) => {
                    ffi::luaL_where(l, 1);
                    push_msg(l, msg);
                    ffi::lua_concat(l, 2);
                    ffi::lua_error(l);
                }
                Error::Value => {
                    ffi::lua_error(l);
                }
            }
        }
        unreachable!("Lua returned from raising an error")
    }
}

/// `[-0, +1, m]` Pushes `msg` (dropping its Rust copy) and returns Lua's.
///
/// # Safety
/// `l` is the running thread of a C function, with a free slot.
unsafe fn push_msg(l: L, msg: Msg) -> *const std::ffi::c_char {
    match msg {
        // SAFETY: a valid state with a free slot (contract); Lua copies the
        // text, which is static.
        Msg::Static(s) => unsafe { ffi::lua_pushstring(l, s.as_ptr()) },
        Msg::Owned(s) => {
            // SAFETY: the contract is `from_raw`'s. `push_owned` copies in a
            // protected call and frees the Rust copy before a memory error
            // goes on, so an error cannot leak it.
            let lua = unsafe { Lua::from_raw(l) };
            lua.push_owned(s.into_bytes());
            // SAFETY: a string on the top, just pushed; it stays there,
            // anchoring the text answered, until the error is raised.
            unsafe { ffi::lua_tolstring(l, -1, std::ptr::null_mut()) }
        }
    }
}

/// `[-0, +0|1, m]` The name `luaL_typeerror` gives the value at `arg`: its
/// metatable's `__name` (left pushed), "light userdata", or its type.
///
/// # Safety
/// `l` is a valid state with a free slot.
unsafe fn type_name(l: L, arg: c_int) -> *const std::ffi::c_char {
    // SAFETY: valid state (contract); `luaL_getmetafield` pushes the field
    // only when it answers something other than nil, and the string stays
    // anchored on the stack while the message is made from it.
    unsafe {
        if ffi::luaL_getmetafield(l, arg, c"__name".as_ptr()) == ffi::LUA_TSTRING {
            ffi::lua_tolstring(l, -1, std::ptr::null_mut())
        } else if ffi::lua_type(l, arg) == ffi::LUA_TLIGHTUSERDATA {
            c"light userdata".as_ptr()
        } else {
            ffi::luaL_typename(l, arg)
        }
    }
}

/// A user's value as an error message shows it: at most `SHOWN` bytes of
/// it, then "...", so a huge argument is not copied whole into a message.
pub fn shown(value: &[u8]) -> String {
    const SHOWN: usize = 48;
    match value.get(..SHOWN) {
        Some(head) if value.len() > SHOWN => format!("{}...", String::from_utf8_lossy(head)),
        _ => String::from_utf8_lossy(value).into_owned(),
    }
}

/// `msg` as a C string, cut at its first NUL (Lua's `%s` would cut it too).
fn c_string(msg: String) -> CString {
    let mut bytes = msg.into_bytes();
    if let Some(i) = bytes.iter().position(|&b| b == 0) {
        bytes.truncate(i);
    }
    CString::new(bytes).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_value_is_shown_cut() {
        assert_eq!(shown(b"short"), "short");
        let huge = vec![b'x'; 1 << 20];
        let s = shown(&huge);
        assert_eq!(s.len(), 48 + 3);
        assert!(s.ends_with("..."));
    }

    #[test]
    fn a_message_ends_at_its_first_nul() {
        assert_eq!(c_string("ab\0cd".to_string()).as_bytes(), b"ab");
        assert_eq!(c_string("plain".to_string()).as_bytes(), b"plain");
    }
}
