//! The only modules that touch the network or the disk beyond reading the
//! user's input files. Each turns the outside world into plain data.

pub mod env;
pub mod store;
pub mod blob;
pub mod pushgateway;
pub mod cluster;
pub mod prom;
pub mod git;
pub mod github;
pub mod rollout;
pub mod bundle_files;
pub mod filehash;
