//! Canary statistics and gate verdicts: plain numbers in, verdicts
//! out. No I/O here; `app::canary` sends the queries built here to
//! Prometheus and hands the answers (read by `parse::prom`) back.
//!
//! Every gate is "lower is better" (error rate, latency, memory, quality
//! failure rates). A gate can only PASS when both arms have at least the
//! sample size needed to detect the configured effect; it FAILs only when the
//! candidate exceeds a limit *and* a one-sided test supports it.
//!
//! One file per concept, each named where it is used: `statistics` (the
//! tests and sample sizes), `histogram` (Prometheus classic histograms),
//! `gate` (one metric's verdict), `decision` (gates + trend → situation →
//! action), `golden` (the golden set's expectations), `steps` (traffic
//! steps), `providers` (the PromQL templates per serving stack) and `query`
//! (those templates filled for one judgment).

pub(crate) mod decision;
pub mod gate;
pub mod golden;
pub(crate) mod histogram;
pub mod providers;
pub(crate) mod query;
pub mod ramp;
pub mod statistics;

#[cfg(test)]
mod tests;
