//! The watch family (BG5xx): after merge, is this release what runs?
//!
//! - [`argo`]: Argo CD deployed it, by ancestry and content (BG504, BG509, BG510);
//! - [`ownership`]: which pods are the release's, and which the Service routes to;
//! - [`rollout`]: which release each of them runs, its model source, identity, downtime (BG501–BG507, BG530);
//! - [`stability`]: the rollout held over time, restarts and pod ends during the window (BG508);
//! - [`state`]: the plain state all of them read (pods, controllers, events, owner references).
//!
//! A code's why lives in `src/diag.rs`. All of it is pure: the adapters read
//! the cluster and git, `app::watch` orders the reads.

pub(crate) mod argo;
pub(crate) mod ownership;
pub(crate) mod rollout;
pub(crate) mod stability;
pub(crate) mod state;
pub(crate) mod steps;

#[cfg(test)]
mod props;
#[cfg(test)]
mod props_lifetimes;
