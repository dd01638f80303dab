//! A report too large to hold: each step goes to a scratch file as it is
//! made, and only what the verdict and the metrics read of it stays in
//! memory (its name, target, verdict, the bundle, report and bytes hashed
//! it names). The report is then written one step at a time, in the chosen
//! format, to a second scratch file the binary prints: the same text
//! `format_report` gives for the whole report held in memory. Used by
//! `audit` (a step per bundle, tables of every artifact: a 10,000-bundle
//! tree's report is gigabytes in memory) and `report merge`.

use anyhow::{bail, Context, Result};

use crate::adapters::local::Spool;
use crate::checks::audit::merge;
use crate::report::format::{format_report, human_step, markdown_step, Format};
use crate::report::{escape, redact::redact, Report, StepReport};

/// One step in the scratch file: where it is, and what the verdict and
/// the metrics read of it.
struct Held {
    slim: StepReport,
    at: u64,
    len: usize,
}

/// The steps written so far.
pub(crate) struct Spooled {
    spool: Spool,
    held: Vec<Held>,
}

impl Spooled {
    pub(crate) fn new() -> Result<Spooled> {
        Ok(Spooled { spool: Spool::new().context("a scratch file for the report's steps")?, held: Vec::new() })
    }

    /// Write `s` to the scratch file, keep its slim form.
    pub(crate) fn push(&mut self, s: &StepReport) -> Result<()> {
        let bytes = serde_json::to_vec(s)?;
        let at = self.spool.append(&bytes).context("writing a step to the report's scratch file")?;
        self.held.push(Held { slim: merge::slim(s), at, len: bytes.len() });
        Ok(())
    }

    /// Order the steps by target (equal targets in the order pushed).
    pub(crate) fn sort_by_target(&mut self) {
        self.held.sort_by(|a, b| a.slim.target.cmp(&b.slim.target));
    }

    /// The steps as the report's verdict and metrics read them, in order.
    pub(crate) fn slim(&self) -> impl Iterator<Item = &StepReport> {
        self.held.iter().map(|h| &h.slim)
    }

    /// The `i`-th step of `r` whole: the first ones from the scratch file
    /// (their verdict through the evidence floor, as a report holds every
    /// step), the ones `r` holds after them as they are.
    fn step(&self, r: &Report, i: usize) -> Result<StepReport> {
        let Some(h) = self.held.get(i) else { return Ok(r.steps[i].clone()) };
        let bytes = self.spool.read_at(h.at, h.len).context("reading back a step of the report")?;
        let s: StepReport = serde_json::from_slice(&bytes).context("reading back a step of the report")?;
        Ok(merge::floored(s))
    }

    /// `r` (whose first steps are this spool's, slim) with its steps whole,
    /// held in memory (a pipeline's step, the tests).
    pub(crate) fn into_report(self, mut r: Report) -> Result<Report> {
        for i in 0..self.held.len() {
            r.steps[i] = self.step(&r, i)?;
        }
        Ok(r)
    }

    /// `r` (whose first steps are this spool's, slim) in `format`, each
    /// step read back, formatted (and redacted, with `redacted`) and
    /// written on its own.
    pub(crate) fn write(&self, r: &Report, format: Format, color: bool, redacted: bool) -> Result<Spool> {
        let mut out = Spool::new().context("a scratch file for the report")?;
        let mut put = |text: &str| {
            let text = if redacted { redact(text) } else { std::borrow::Cow::Borrowed(text) };
            out.append(text.as_bytes()).map(|_| ()).context("writing the report")
        };
        // The report around its steps, as the one formatter writes it.
        let mut head = r.clone();
        head.steps.clear();
        match format {
            Format::Json => {
                let whole = serde_json::to_string_pretty(&head)?;
                let Some((before, after)) = whole.split_once("\"steps\": []") else {
                    bail!("the report's JSON has no steps list");
                };
                put(&escape::json(&format!("{before}\"steps\": [")))?;
                for i in 0..r.steps.len() {
                    // Each step at its depth in the list (JSON text holds no raw
                    // line break inside a value, so indenting lines is exact).
                    let text = serde_json::to_string_pretty(&self.step(r, i)?)?;
                    let lines: Vec<String> = text.split('\n').map(|l| format!("    {l}")).collect();
                    put(&escape::json(&format!("{}\n{}", if i > 0 { "," } else { "" }, lines.join("\n"))))?;
                }
                let close = if r.steps.is_empty() { "]" } else { "\n  ]" };
                put(&escape::json(&format!("{close}{after}\n")))?;
            }
            Format::Human => {
                for i in 0..r.steps.len() {
                    put(&human_step(&self.step(r, i)?, color))?;
                }
                put(&format_report(&head, format, color))?;
            }
            Format::Markdown => {
                put(&format_report(&head, format, color))?;
                for i in 0..r.steps.len() {
                    put(&markdown_step(&self.step(r, i)?))?;
                }
            }
            Format::Sarif => {
                // SARIF holds the findings only: the steps' diagnostics, nothing else.
                let mut findings = head;
                for i in 0..r.steps.len() {
                    let s = self.step(r, i)?;
                    let mut t = StepReport::new(s.step, s.target);
                    t.diagnostics = s.diagnostics;
                    findings.steps.push(t);
                }
                put(&format_report(&findings, format, color))?;
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::{Code, Diagnostic};
    use crate::report::{Table, Verdict};

    /// Steps written as they come, plus steps the report holds after them
    /// (an output not delivered): every format prints what the one
    /// formatter prints of the report held whole, and the report read
    /// back whole is that report.
    #[test]
    fn a_spooled_report_prints_what_the_report_held_whole_prints() {
        let mut spooled = Spooled::new().unwrap();
        let mut whole = Report::new("audit");
        let mut r = Report::new("audit");
        for (k, b) in ["b", "a", "c"].iter().enumerate() {
            let mut s = StepReport::new("audit", format!("models/{b}/release.yaml"));
            s.data = serde_json::json!({"bundle": b, "bytesHashed": k, "artifacts": [{"path": "x"}]});
            s.summary = format!("checked {b} at https://user:secret@store.example/{b}");
            s.tables.push(Table {
                title: "artifacts".into(),
                columns: vec!["path".into()],
                rows: vec![vec!["x".into()]],
            });
            if k == 1 {
                let code = *Code::ALL.iter().find(|c| c.missing_evidence()).unwrap();
                s.diagnostics.push(Diagnostic::new(code, "evidence missing").evidence("a\nb"));
            }
            spooled.push(&s).unwrap();
            whole.push(s);
        }
        for s in spooled.slim() {
            r.push(s.clone());
        }
        let mut extra = StepReport::new("write-report", "s3://b/r.json");
        extra.verdict = Verdict::Error;
        r.push(extra.clone());
        whole.push(extra);
        assert_eq!(r.verdict, whole.verdict);
        for format in [Format::Json, Format::Human, Format::Markdown, Format::Sarif] {
            for color in [false, true] {
                let mut got = Vec::new();
                spooled.write(&r, format, color, true).unwrap().copy_to(&mut got).unwrap();
                assert_eq!(
                    String::from_utf8(got).unwrap(),
                    redact(&format_report(&whole, format, color)),
                    "{format:?}"
                );
            }
        }
        let back = spooled.into_report(r).unwrap();
        assert_eq!(serde_json::to_value(&back).unwrap(), serde_json::to_value(&whole).unwrap());
    }
}
