//! The timeline's random draws: a SplitMix64 stream per purpose, so that one seed gives the same
//! arrivals, failures and placements on every machine and thread count.

use fabricsim_routing::key::mix;

#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// The stream `purpose` of `seed` (streams of one seed are independent of each other).
    pub fn new(seed: u64, purpose: u64) -> Rng {
        Rng(mix(seed ^ mix(purpose.wrapping_add(0x9e37_79b9_7f4a_7c15))))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.0)
    }

    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in 0..n (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Exponential with mean `mean`.
    pub fn exponential(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.uniform()).ln()
    }

    /// Log-uniform between `lo` and `hi` (both > 0).
    pub fn log_uniform(&mut self, lo: f64, hi: f64) -> f64 {
        (lo.ln() + self.uniform() * (hi.ln() - lo.ln())).exp()
    }
}
