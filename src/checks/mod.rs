//! Pure checks: plain data in, diagnostics out. No I/O here.

pub mod audit;
pub mod canary;
pub(crate) mod info;
pub mod lint;
pub mod pod_files;
pub mod preflight;
pub mod release_diff;
pub mod render;
pub mod revert;
pub mod rollback;
pub mod sign;
pub(crate) mod signature;
pub mod verify;
pub mod watch;
