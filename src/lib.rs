//! bundlegate: one frozen release bundle, verified from git to the served pod.
//!
//! Layout: `bundle` parses, `parse` reads the other outside texts (cluster
//! snapshots, Prometheus answers, Argo CD parameters), `checks` are pure
//! functions over gathered data, `adapters` are the only I/O, `report` is the
//! one output model, `app` wires a command to those pieces (typed options in
//! `options`, which the command line derives from), `dispatch` maps a command
//! line to one command and `pipeline` runs pipeline files over the same
//! commands.
//!
//! The default feature `cli` adds the commands, their command line (clap) and
//! everything they reach the outside world with (Kubernetes, GitHub, object
//! stores, git, HTTP, the async runtime). Without it the library is the core
//! alone: every parser of outside input and what runs on its result (lint,
//! render, preflight), which is what the fuzz targets build.

// Without `cli` the commands that use most of the core are not built, so
// its dead-code report would be noise; the full build's report is the one
// that counts (clippy -D warnings over all targets).
#![cfg_attr(not(feature = "cli"), allow(dead_code, unused_imports))]
#![warn(clippy::too_many_lines)]
// Tests read fixtures and start servers; the non-test build is held to it.
#![cfg_attr(test, allow(clippy::disallowed_methods))]

// The one place I/O happens (clippy.toml disallows it elsewhere).
#[allow(clippy::disallowed_methods)]
pub mod adapters;
pub mod bundle;
pub mod checks;
pub mod diag;
pub mod fuzzing;
pub mod manifests;
pub mod options;
pub mod parse;
pub mod pipeline;
pub mod report;
pub mod serde_strict;
pub mod signing;
pub mod util;
pub mod yaml_guard;

#[cfg(feature = "cli")]
pub mod app;
#[cfg(feature = "cli")]
pub mod cli;
#[cfg(feature = "cli")]
pub mod config;
#[cfg(feature = "cli")]
pub mod dispatch;
// Every command's report on a corpus, run in-process: a unit test, so the
// mutation runs (`scripts/mutants`, unit tests only) see the judgments that
// only the commands reach (lint, render, preflight, audit).
#[cfg(all(test, feature = "cli"))]
mod corpus;
