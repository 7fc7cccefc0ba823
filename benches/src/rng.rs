//! A seeded pseudo-random generator (SplitMix64), so that one `--seed` reproduces a soak's message
//! sizes and the shape of its schedule without another dependency.

use std::time::Duration;

/// SplitMix64's increment: the golden ratio in 64 bits.
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64's output function over `x`: a bijection that spreads every input bit over the
/// whole word, so consecutive inputs give unrelated outputs.
pub fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(GAMMA);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A stream of pseudo-random numbers from a seed.
#[derive(Clone, Debug)]
pub struct Rng {
    state: u64,
}

impl Rng {
    /// The stream of `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let x = self.state;
        self.state = self.state.wrapping_add(GAMMA);
        mix(x)
    }

    /// A number in `0..n` (`n > 0`). The modulo bias is below 2^-40 for the small `n` used here.
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        self.next_u64() % n
    }

    /// `true` with probability `p` (clamped to 0..=1).
    pub fn chance(&mut self, p: f64) -> bool {
        let unit = (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        unit < p
    }

    /// A duration in `lo..=hi`, to the microsecond.
    pub fn duration(&mut self, lo: Duration, hi: Duration) -> Duration {
        let span = hi.saturating_sub(lo).as_micros() as u64;
        lo + Duration::from_micros(self.below(span + 1))
    }

    /// One of `items` (not empty).
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        for _ in 0..1000 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        assert_ne!(Rng::new(7).next_u64(), Rng::new(8).next_u64());
    }

    #[test]
    fn ranges_hold() {
        let mut r = Rng::new(1);
        let (lo, hi) = (Duration::from_millis(2), Duration::from_millis(3));
        for _ in 0..1000 {
            assert!(r.below(5) < 5);
            assert!((lo..=hi).contains(&r.duration(lo, hi)));
        }
        assert!(!r.chance(0.0));
        assert!(r.chance(1.0));
    }
}
