//! `report show`: a saved JSON report (a file or an object-store URI) printed
//! again in any `--format`: the action turns its JSON report into SARIF for
//! code scanning without running the pipeline twice.

use anyhow::Result;

use crate::adapters::blob;
use crate::app::ctx::Ctx;
use crate::report::{Report, StepReport};
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

/// The most one step of a streamed report may take: `report merge` holds
/// one step at a time, so this bounds its memory, not the report's size.
pub(crate) const STEP_LIMIT: usize = 32 << 20;

/// What serde_json pulls from a streamed report: counted against the
/// report's bound, and kept while one step goes by, so the step is read
/// through the one JSON guard whole and nothing else is held.
struct Tape {
    keeping: bool,
    kept: Vec<u8>,
    read: u64,
}

struct Tapped<R> {
    inner: R,
    tape: std::rc::Rc<std::cell::RefCell<Tape>>,
}

impl<R: std::io::Read> std::io::Read for Tapped<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let mut t = self.tape.borrow_mut();
        t.read += n as u64;
        if t.read > REPORT_LIMIT {
            return Err(std::io::Error::other(format!("over the {REPORT_LIMIT}-byte limit of a report")));
        }
        if t.keeping {
            if t.kept.len() + n > STEP_LIMIT {
                return Err(std::io::Error::other(format!("a step over the {STEP_LIMIT}-byte limit of one step")));
            }
            t.kept.extend_from_slice(&buf[..n]);
        }
        Ok(n)
    }
}

/// Read a saved JSON report as a stream (`name` for the error): each step
/// is handed to `on_step` as it is read, through the same guard as
/// [`parse`], and dropped; what is returned is the report without its
/// steps. Memory: the largest step, whatever the report's size.
pub(crate) fn stream(
    name: &str,
    reader: impl std::io::Read,
    on_step: &mut dyn FnMut(StepReport) -> Result<()>,
) -> Result<Report> {
    use serde::de::DeserializeSeed;
    let tape = std::rc::Rc::new(std::cell::RefCell::new(Tape { keeping: false, kept: Vec::new(), read: 0 }));
    let mut de = serde_json::Deserializer::from_reader(Tapped { inner: reader, tape: tape.clone() });
    let at = |e: serde_json::Error| anyhow::anyhow!("not a bundlegate report: {name}:{}:{}: {e}", e.line(), e.column());
    let head = Head { name, tape: &tape, on_step }.deserialize(&mut de).map_err(at)?;
    de.end().map_err(at)?;
    Ok(head)
}

/// The report's fields, its steps handed on one by one.
struct Head<'a> {
    name: &'a str,
    tape: &'a std::rc::Rc<std::cell::RefCell<Tape>>,
    on_step: &'a mut dyn FnMut(StepReport) -> Result<()>,
}

impl<'de> serde::de::DeserializeSeed<'de> for Head<'_> {
    type Value = Report;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> std::result::Result<Report, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Head<'_> {
    type Value = Report;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a bundlegate report (a JSON object)")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> std::result::Result<Report, A::Error> {
        use serde::de::Error as _;
        let Head { name, tape, on_step } = self;
        let mut r = Report::new("");
        let mut verdict = None;
        let mut keys = std::collections::BTreeSet::new();
        while let Some(k) = map.next_key::<String>()? {
            if !keys.insert(k.clone()) {
                return Err(A::Error::custom(format!(
                    "duplicate key `{k}` (JSON parsers keep one of the values, so the file is ambiguous)"
                )));
            }
            match k.as_str() {
                "schema" => r.schema = map.next_value()?,
                "command" => r.command = map.next_value()?,
                "verdict" => verdict = Some(map.next_value()?),
                "shard" => r.shard = map.next_value()?,
                "durationSeconds" => r.duration_seconds = map.next_value()?,
                "finishedAt" => r.finished_at = map.next_value()?,
                "steps" => map.next_value_seed(Steps { name, tape, on_step: &mut *on_step })?,
                _ => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        for required in ["schema", "command", "verdict", "steps"] {
            if !keys.contains(required) {
                return Err(A::Error::missing_field(required));
            }
        }
        // The report's own verdict as it says it (the merge judges anew).
        Ok(Report { verdict: verdict.unwrap_or(r.verdict), ..r })
    }
}

struct Steps<'a> {
    name: &'a str,
    tape: &'a std::rc::Rc<std::cell::RefCell<Tape>>,
    on_step: &'a mut dyn FnMut(StepReport) -> Result<()>,
}

impl<'de> serde::de::DeserializeSeed<'de> for Steps<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Steps<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of steps")
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
        use serde::de::Error as _;
        let Steps { name, tape, on_step } = self;
        for i in 0usize.. {
            {
                let mut t = tape.borrow_mut();
                t.keeping = true;
                t.kept.clear();
            }
            // serde_json checks the step's syntax; the bytes it pulled are kept.
            let more = seq.next_element::<serde::de::IgnoredAny>()?;
            let kept = {
                let mut t = tape.borrow_mut();
                t.keeping = false;
                std::mem::take(&mut t.kept)
            };
            if more.is_none() {
                break;
            }
            // What was pulled before the step: the separator and blanks.
            let start = kept.iter().position(|b| !matches!(b, b',' | b' ' | b'\t' | b'\n' | b'\r')).unwrap_or(0);
            let step: StepReport =
                json_from_slice(&format!("{name} (step {})", i + 1), &kept[start..], &Limits::WRITTEN)
                    .map_err(|e| A::Error::custom(format!("{e:#}")))?;
            on_step(step).map_err(|e| A::Error::custom(format!("{e:#}")))?;
        }
        Ok(())
    }
}
