//! bundlegate: one frozen release bundle, verified from git to the served pod.
//!
//! Layout: `bundle` parses, `checks` are pure functions over gathered data,
//! `adapters` are the only I/O, `report` is the one output model, `app` wires
//! a command to those pieces (typed options in `app::options`), `dispatch`
//! maps the command line into them and `pipeline` runs pipeline files over
//! the same commands.

pub mod adapters;
pub mod app;
pub mod bundle;
pub mod checks;
pub mod cli;
pub mod config;
pub mod diag;
pub mod dispatch;
pub mod fuzzing;
pub mod manifests;
pub mod pipeline;
pub mod report;

/// The former name of [`manifests`] (bundle → Kubernetes manifests), kept
/// so code written against it still builds; new code says `manifests`.
pub use manifests as render;
pub mod util;
pub mod yaml_guard;
