//! `report show`: a saved JSON report (a file or an object-store URI) printed
//! again in any `--format`: the action turns its JSON report into SARIF for
//! code scanning without running the pipeline twice.

use anyhow::Result;

use crate::adapters::blob;
use crate::app::ctx::Ctx;
use crate::report::Report;
use crate::yaml_guard::{json_from_slice, Limits};

/// Saved reports (shard reports too) are small; anything bigger is not ours.
pub(crate) const REPORT_LIMIT: u64 = 256 << 20;

/// Read one report back, bounded and through the one JSON guard.
pub(crate) fn show(ctx: &Ctx, input: &str) -> Result<Report> {
    let bytes = ctx.try_block_on(blob::read_location(input, REPORT_LIMIT))?;
    parse(input, &bytes)
}

/// A saved JSON report's bytes as a report (`name` for the error): what
/// `report show` and `report merge` both read.
pub(crate) fn parse(name: &str, bytes: &[u8]) -> Result<Report> {
    json_from_slice(name, bytes, &Limits::WRITTEN).map_err(|e| anyhow::anyhow!("not a bundlegate report: {e:#}"))
}
