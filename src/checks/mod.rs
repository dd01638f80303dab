//! Pure checks: plain data in, diagnostics out. No I/O here.

pub mod lint;
pub mod verify;
