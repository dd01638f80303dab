//! Canary statistics and gate verdicts: plain numbers in, verdicts
//! out. No I/O here; `app::canary` gathers the numbers from Prometheus.
//!
//! Every gate is "lower is better" (error rate, latency, memory, quality
//! failure rates). A gate can only PASS when both arms have at least the
//! sample size needed to detect the configured effect; it FAILs only when the
//! candidate exceeds a limit *and* a one-sided test supports it.
//!
//! One file per concept: `statistics` (the tests and sample sizes),
//! `histogram` (Prometheus classic histograms), `gate` (one metric's verdict),
//! `decision` (gates + trend → situation → action); `steps` and `providers`
//! beside them. Everything is re-exported here, so `checks::canary::X` paths
//! hold whichever file `X` lives in.

mod decision;
mod gate;
pub mod golden;
mod histogram;
pub mod providers;
mod statistics;
pub mod steps;

pub(crate) use decision::*;
pub use gate::*;
pub(crate) use histogram::*;
pub use providers::Template;
pub use statistics::*;

#[cfg(test)]
mod tests;
