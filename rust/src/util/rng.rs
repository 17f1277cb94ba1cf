//! A deterministic random source for the randomized model tests and their
//! fuzz targets (no dependency).
//!
//! Seeded, it is xorshift64*. Made from a fuzzer's input (`tape`), each
//! draw reads the next input bytes instead, so that the fuzzer steers every
//! choice; [`Rng::exhausted`] says when the input is used up.

/// A source of draws (see the [module documentation](self)).
pub(crate) struct Rng {
    /// xorshift64* state, never 0.
    state: u64,
    tape: Vec<u8>,
    /// Next byte of `tape`.
    at: usize,
}

impl Rng {
    /// A generator for `seed` (any value, 0 included).
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn new(seed: u64) -> Rng {
        Rng { state: seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1, tape: Vec::new(), at: 0 }
    }

    /// Draws read from `bytes`, two per draw; zeros once they are used up.
    #[cfg_attr(not(fuzzing), allow(dead_code))]
    pub fn tape(bytes: &[u8]) -> Rng {
        Rng { state: 1, tape: bytes.to_vec(), at: 0 }
    }

    /// Whether a tape is used up (never, for a seeded generator).
    #[cfg_attr(not(fuzzing), allow(dead_code))]
    pub fn exhausted(&self) -> bool {
        !self.tape.is_empty() && self.at >= self.tape.len()
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        if !self.tape.is_empty() {
            let byte = |i: usize| u64::from(self.tape.get(i).copied().unwrap_or(0));
            let v = byte(self.at) | byte(self.at + 1) << 8;
            self.at += 2;
            return v % n;
        }
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        (self.state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) % n
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
