//! A deterministic random source for the randomized model tests (no dependency).

/// xorshift64*: the state must not be 0.
pub(crate) struct Rng(pub u64);

impl Rng {
    /// A generator for `seed` (any value, 0 included).
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) % n
    }

    /// True once in `n` draws, on average.
    pub fn one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }

    /// An index drawn with the given weights.
    pub fn pick(&mut self, weights: &[u64]) -> usize {
        let mut r = self.below(weights.iter().sum());
        weights
            .iter()
            .position(|&w| {
                let hit = r < w;
                r = r.saturating_sub(w);
                hit
            })
            .unwrap()
    }
}
