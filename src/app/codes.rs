//! `bundlegate codes` and `explain`: the diagnostic code registry.

use anyhow::Result;

use crate::checks::info;
use crate::diag::Code;
use crate::report::StepReport;

/// Every code, with the docs/diagnostics.md text as its detail.
pub(crate) fn run() -> Vec<StepReport> {
    vec![info::codes()]
}

/// One code (or its name) explained; an unknown one is the tool failing.
pub(crate) fn explain(code: &str) -> Result<Vec<StepReport>> {
    let c = Code::from_str_any(code)
        .ok_or_else(|| anyhow::anyhow!("unknown diagnostic code `{code}` (see `bundlegate codes`)"))?;
    Ok(vec![info::explain(c, crate::checks::lint::task_table(c))])
}
