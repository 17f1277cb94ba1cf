//! The one rule for times given to the C API in nanoseconds (timeouts,
//! delays, sleeps, timer periods):
//!
//! | value | meaning |
//! | --- | --- |
//! | 0 to `INT64_MAX` | that many ns (292 years at most) |
//! | `COT_FOREVER` (`UINT64_MAX`, `(uint64_t)-1`) | no limit |
//! | anything else above `INT64_MAX` | `COT_EINVAL`: a negative number converted |
//!
//! A wait of `ns` is counted from the call (a fresh clock read), so it lasts
//! at least `ns` however long the loop's iteration has already run; timers
//! count from the loop's cached time, as libuv's do.

use crate::error::{Error, Result};
use crate::reactor::Loop;

/// A timeout that never passes: the call waits until it ends or is
/// cancelled. Equal to `COT_CORO_FOREVER`. Every duration in ns (timeouts,
/// delays, sleeps, timer periods) is 0 to `INT64_MAX` or this; any other
/// value above `INT64_MAX` (a negative number converted) is `COT_EINVAL`.
pub const COT_FOREVER: u64 = u64::MAX;

/// `ns` checked by the rule: itself, or `Error::Inval`.
pub(crate) fn checked(ns: u64) -> Result<u64> {
    if ns > i64::MAX as u64 && ns != COT_FOREVER { Err(Error::Inval) } else { Ok(ns) }
}

/// `ns` checked by the rule, as a limit: `None` for `COT_FOREVER`.
pub(crate) fn timeout(ns: u64) -> Result<Option<u64>> {
    checked(ns).map(|ns| (ns != COT_FOREVER).then_some(ns))
}

/// The deadline on the loop's clock of a timeout starting now: `None` for
/// `COT_FOREVER`.
pub(crate) fn deadline(l: &mut Loop, ns: u64) -> Result<Option<u64>> {
    Ok(timeout(ns)?.map(|ns| l.wait_start().saturating_add(ns)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule() {
        assert_eq!(timeout(0), Ok(Some(0)));
        assert_eq!(timeout(i64::MAX as u64), Ok(Some(i64::MAX as u64)));
        assert_eq!(timeout(COT_FOREVER), Ok(None));
        assert_eq!(timeout(-5i64 as u64), Err(Error::Inval));
        assert_eq!(timeout(i64::MAX as u64 + 1), Err(Error::Inval));
        assert_eq!(checked(COT_FOREVER), Ok(COT_FOREVER));
    }
}
