//! `bundlegate codes` and `explain`: the diagnostic code registry.

use anyhow::Result;

use crate::diag::Code;
use crate::report::{Detail, StepReport, Table};

/// Every code, with the docs/diagnostics.md text as its detail.
pub(crate) fn run() -> Vec<StepReport> {
    let mut s = StepReport::new("codes", "bundlegate");
    s.summary = format!("{} diagnostic codes", Code::ALL.len());
    s.tables.push(Table {
        title: String::new(),
        columns: vec!["code".into(), "name".into(), "family".into(), "default".into()],
        rows: Code::ALL
            .iter()
            .map(|c| {
                let i = c.info();
                vec![i.code.into(), i.name.into(), i.family.into(), i.default_severity.to_string()]
            })
            .collect(),
    });
    s.details.push(Detail {
        title: "documentation".into(),
        lang: "markdown".into(),
        body: crate::diag::markdown_docs(),
    });
    vec![s]
}

/// One code (or its name) explained; an unknown one is the tool failing.
pub(crate) fn explain(code: &str) -> Result<Vec<StepReport>> {
    let c = Code::from_str_any(code)
        .ok_or_else(|| anyhow::anyhow!("unknown diagnostic code `{code}` (see `bundlegate codes`)"))?;
    let i = c.info();
    let mut s = StepReport::new("explain", i.code);
    s.summary = format!("{} `{}` ({}, default {}): {}", i.code, i.name, i.family, i.default_severity, i.why);
    s.tables.extend(crate::checks::lint::task_table(c));
    Ok(vec![s])
}
