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
//! action, and whether the rollback target is a way back), `golden` (the
//! golden set's expectations), `ramp` (traffic steps placed and judged),
//! `providers` (the PromQL templates per serving stack), `query` (those
//! templates filled for one judgment), `plan` (every default resolved once,
//! and what each judgment asks), `promote` (after the canary: the next
//! traffic step, the revert or nothing), `report` (one judgment written up),
//! `split` (KServe's own traffic split rendered, read back and judged) and
//! `walk` (the traffic steps walked and written up).

pub(crate) mod decision;
pub mod gate;
pub mod golden;
pub(crate) mod histogram;
pub(crate) mod paired;
pub(crate) mod plan;
pub(crate) mod promote;
pub mod providers;
pub(crate) mod query;
pub mod ramp;
pub(crate) mod report;
pub mod split;
pub mod statistics;
pub(crate) mod walk;

#[cfg(test)]
mod tests;
