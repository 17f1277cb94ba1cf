//! Version of the library and its ABI.

use std::ffi::c_char;
use std::os::raw::c_uint;

/// Major version: changes break the ABI.
pub const COT_VERSION_MAJOR: c_uint = 0;
/// Minor version: additions to the API.
pub const COT_VERSION_MINOR: c_uint = 1;
/// Patch version: fixes only.
pub const COT_VERSION_PATCH: c_uint = 0;

/// The version of the library at run time, as
/// `(MAJOR << 16) | (MINOR << 8) | PATCH`; compare with the `COT_VERSION_*`
/// macros of the header the program was built with. Safe from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn cot_version() -> c_uint {
    COT_VERSION_MAJOR << 16 | COT_VERSION_MINOR << 8 | COT_VERSION_PATCH
}

/// The version of the library as a static string, e.g. `"0.1.0"`. Safe from
/// any thread.
#[unsafe(no_mangle)]
pub extern "C" fn cot_version_string() -> *const c_char {
    VERSION_STRING.as_ptr()
}

const VERSION_STRING: &std::ffi::CStr = c"0.1.0";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_matches_the_crate() {
        let v = format!("{COT_VERSION_MAJOR}.{COT_VERSION_MINOR}.{COT_VERSION_PATCH}");
        assert_eq!(v, crate::VERSION);
        assert_eq!(VERSION_STRING.to_str(), Ok(crate::VERSION));
        assert_eq!(cot_version(), 0x00_01_00);
    }
}
