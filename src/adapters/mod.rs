//! The only modules that touch the network or the disk beyond reading the
//! user's input files. Each turns the outside world into plain data.
//!
//! `bundle_files` reads the user's input files with std alone and the core
//! needs it (render reads template folders, `pipeline::load`), so it is
//! built without the `cli` feature too; the rest come with `cli`.

pub mod bundle_files;

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
pub mod prom;
#[cfg(feature = "cli")]
pub mod pushgateway;
#[cfg(feature = "cli")]
pub mod rollout;
#[cfg(feature = "cli")]
pub mod store;
