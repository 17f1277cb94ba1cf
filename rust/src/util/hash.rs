//! A fast hasher for pointer-sized keys (signal keys are addresses or ids).
//! SipHash's DoS resistance buys nothing here: the keys come from the program
//! itself, and `notify` is on the hot path.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Multiply by an odd constant, then rotate so the well-mixed high bits reach
/// the low bits that pick the bucket (the scheme of rustc's FxHash).
#[derive(Default, Clone, Copy)]
pub(crate) struct KeyHasher(u64);

const K: u64 = 0xf135_7aea_2e62_a9c5;

impl Hasher for KeyHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }

    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(K);
    }

    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0.rotate_left(26)
    }
}

/// A map keyed by pointer-sized values.
pub(crate) type KeyMap<V> = HashMap<usize, V, BuildHasherDefault<KeyHasher>>;
