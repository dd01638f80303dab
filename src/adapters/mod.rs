//! The only modules that touch the network, the disk or the process
//! environment (a test, `tests/it/layout.rs`, holds the rest of `src/` to
//! that). Each turns the outside world into plain data.
//!
//! `bundle_files` reads the user's input files and `local` writes outputs,
//! with std alone; the core needs them (render reads template folders and
//! writes `--out`, `pipeline::load`), so they are built without the `cli`
//! feature too; the rest come with `cli`.

pub mod bundle_files;
pub mod local;

#[cfg(feature = "cli")]
pub mod blob;
#[cfg(feature = "cli")]
pub mod cluster;
#[cfg(feature = "cli")]
pub mod env;
#[cfg(feature = "cli")]
pub mod filehash;
#[cfg(feature = "cli")]
pub mod git;
#[cfg(feature = "cli")]
pub mod github;
#[cfg(feature = "cli")]
pub(crate) mod http;
#[cfg(feature = "cli")]
pub mod kube;
#[cfg(feature = "cli")]
pub(crate) mod model;
#[cfg(feature = "cli")]
pub(crate) mod oci;
#[cfg(feature = "cli")]
pub(crate) mod poll;
#[cfg(feature = "cli")]
pub mod prom;
#[cfg(feature = "cli")]
pub mod pushgateway;
#[cfg(feature = "cli")]
pub mod store;
