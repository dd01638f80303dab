//! `report merge` in memory bounded by one step. Pass one streams every
//! shard report once: what the merge judges (coverage, freshness, the
//! verdict) and what the metrics need are kept, a few ids per step; each
//! step itself goes to a scratch file as it is read (`spooled`). The
//! metrics are then delivered, and pass two writes the merged report from
//! the scratch file, one step at a time, in the chosen format, to a second
//! scratch file the binary prints. The judgment is `checks::audit::merge`'s.

use anyhow::{bail, Context, Result};

use super::audit::{check_alerts, emit_metrics};
use super::report::REPORT_LIMIT;
use super::spooled::Spooled;
use crate::adapters::blob::{self, BlobDir};
use crate::adapters::local::Spool;
use crate::app::ctx::Ctx;
use crate::checks::audit::merge;
use crate::options::MergeOptions;
use crate::report::format::Format;
use crate::report::{Report, StepReport};

/// `report merge`: shard reports (files, objects, or a prefix ending in `/`
/// holding them) → one report, already formatted and redacted, in a scratch
/// file; and its exit code. Incomplete coverage is INCONCLUSIVE, never PASS.
pub(crate) fn merge_reports(
    ctx: &Ctx,
    inputs: &[String],
    o: &MergeOptions,
    format: Format,
    color: bool,
) -> Result<(i32, Spool)> {
    check_alerts(&o.alerts)?;
    let max_age = o.max_age.as_ref().map(|d| chrono::Duration::from_std(d.value).unwrap_or(chrono::Duration::MAX));
    let mut pass = ctx.try_block_on(read_all(inputs))?;
    let mut r = pass.merged(ctx.now(), max_age);
    ctx.block_on(emit_metrics(ctx, &mut r, &o.alerts))?;
    let out = pass.steps.write(&r, format, color, true)?;
    Ok((r.exit_code(), out))
}

/// What pass one leaves: the steps in the scratch file, what each report
/// said of itself.
struct Pass {
    steps: Spooled,
    seen: Vec<merge::Seen>,
}

impl Pass {
    /// The merged report without the steps' bodies: every step's name,
    /// target, verdict and the data the metrics read, ordered as the
    /// merged report orders them, then the merge's own step.
    fn merged(&mut self, now: chrono::DateTime<chrono::Utc>, max_age: Option<chrono::Duration>) -> Report {
        self.steps.sort_by_target();
        let mut r = Report::new("audit");
        r.duration_seconds = merge::duration(&self.seen);
        for s in self.steps.slim() {
            r.push(s.clone());
        }
        r.push(merge::merge_step(&self.seen, now, max_age));
        r
    }
}

/// The shard reports the inputs name, in order: a folder or a prefix
/// ending in `/` gives every `.json` report in it.
async fn sources(inputs: &[String]) -> Result<Vec<(String, BlobDir, String)>> {
    let mut out = Vec::new();
    for i in inputs {
        let loc = blob::location(i)?;
        if i.ends_with('/')
            || matches!(&loc, crate::bundle::storage_uri::Location::Local(p) if crate::adapters::local::is_dir(p))
        {
            let d = BlobDir::at(&loc, i)?;
            let names = d.list(".json").await?;
            if names.is_empty() {
                bail!("{i}: no .json reports there");
            }
            for n in names {
                out.push((format!("{}/{n}", i.trim_end_matches('/')), d.clone(), n));
            }
        } else {
            let (d, name) = blob::split_location(i)?;
            out.push((i.clone(), d, name));
        }
    }
    Ok(out)
}

/// Pass one: every report read once, as a stream.
async fn read_all(inputs: &[String]) -> Result<Pass> {
    let mut pass = Pass { steps: Spooled::new()?, seen: Vec::new() };
    for (name, dir, object) in sources(inputs).await? {
        let reader = dir
            .open(&object, REPORT_LIMIT)
            .await?
            .with_context(|| format!("{name}: no such object or file (or it vanished while merging)"))?;
        let mut seen = merge::Seen::new(name.clone(), Report::new("audit"));
        let steps = &mut pass.steps;
        let head = super::report::stream(&name, reader, &mut |s: StepReport| {
            seen.step(&s);
            if let Some(m) = merge::merged(s, &name) {
                steps.push(&m)?;
            }
            Ok(())
        })?;
        merge::check_input(&name, &head).map_err(|e| anyhow::anyhow!(e))?;
        seen.head = head;
        pass.seen.push(seen);
    }
    Ok(pass)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::{Code, Diagnostic};
    use crate::report::format::format_report;
    use crate::report::{escape, redact::redact, Detail, ShardInfo, Table, Verdict};

    fn missing_evidence() -> Code {
        *Code::ALL.iter().find(|c| c.missing_evidence()).unwrap()
    }

    /// A shard report whose steps hold what formatting can trip on: findings
    /// with evidence, a table, details, a control character, a credential
    /// in a URL, a step that floors to INCONCLUSIVE, the "owns nothing" line.
    fn shard(index: u32, owned: &[&str]) -> Report {
        let mut r = Report::new("audit");
        for (k, b) in owned.iter().enumerate() {
            let mut s = StepReport::new("audit", format!("models/{b}/release.yaml"));
            s.data = serde_json::json!({"bundle": b, "bytesHashed": 10 * k});
            s.summary = format!("checked \u{1b}[31m{b} at https://user:secret@store.example/{b}");
            if k == 1 {
                s.diagnostics.push(
                    Diagnostic::new(missing_evidence(), "a finding that means evidence is missing")
                        .evidence("line one\nline two"),
                );
                s.tables.push(Table {
                    title: "objects".into(),
                    columns: vec!["path".into()],
                    rows: vec![vec!["a".into()]],
                });
                s.details.push(Detail { title: "diff".into(), lang: "diff".into(), body: "+ x\n- y".into() });
            }
            r.push(s);
        }
        if owned.is_empty() {
            r.push(StepReport::not_run("audit", format!("shard {index}/3"), "owns nothing"));
        }
        r.shard = Some(ShardInfo {
            index,
            count: 3,
            tree: "sha256:t".into(),
            commit: None,
            bundles_total: 3,
            owned: owned.iter().map(|s| s.to_string()).collect(),
            owned_bytes: 5,
        });
        r.duration_seconds = Some(1.5 + f64::from(index));
        r.finished_at = Some("2026-12-07T10:00:00+00:00".into());
        r
    }

    /// Pass one and two over files give, byte for byte, what the one
    /// formatter prints of the merge held in memory, in every format.
    #[test]
    fn the_streamed_merge_prints_what_the_merge_in_memory_prints() {
        let d = tempfile::tempdir().unwrap();
        let dir = format!("{}/", d.path().display());
        let reports = [shard(0, &["b", "a"]), shard(1, &[]), shard(2, &["c"])];
        let mut named = Vec::new();
        for (k, r) in reports.iter().enumerate() {
            let text = escape::json(&serde_json::to_string_pretty(r).unwrap()).into_owned();
            std::fs::write(d.path().join(format!("shard-{k}.json")), text).unwrap();
            named.push((format!("{dir}shard-{k}.json"), r.clone()));
        }
        let now = chrono::DateTime::parse_from_rfc3339("2026-12-07T12:00:00Z").unwrap().with_timezone(&chrono::Utc);
        let ctx = Ctx::new(crate::adapters::env::EnvSnapshot::default()).with_clock(move || now);
        let want = merge::merge_shards(named, now, None);
        assert_eq!(want.verdict, Verdict::Inconclusive, "the step with missing evidence is floored");
        for format in [Format::Json, Format::Human, Format::Markdown, Format::Sarif] {
            for color in [false, true] {
                let (code, out) =
                    merge_reports(&ctx, std::slice::from_ref(&dir), &MergeOptions::default(), format, color).unwrap();
                let mut got = Vec::new();
                out.copy_to(&mut got).unwrap();
                let printed = redact(&format_report(&want, format, color)).into_owned();
                assert_eq!(String::from_utf8(got).unwrap(), printed, "{format:?}");
                assert_eq!(code, want.exit_code());
            }
        }
    }

    /// A step over the bound is refused naming the report, not read whole;
    /// a report that is not one is refused naming the file.
    #[test]
    fn a_step_over_the_bound_or_a_report_that_is_not_one_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let mut r = shard(0, &["a"]);
        r.steps[0].summary = "x".repeat(super::super::report::STEP_LIMIT);
        std::fs::write(d.path().join("big.json"), serde_json::to_string(&r).unwrap()).unwrap();
        std::fs::write(d.path().join("junk.json"), "{\"schema\": 1").unwrap();
        std::fs::write(d.path().join("twice.json"), "{\"steps\": [], \"steps\": []}").unwrap();
        let ctx = Ctx::new(crate::adapters::env::EnvSnapshot::default());
        for (file, words) in
            [("big.json", "limit of one step"), ("junk.json", "junk.json:1:"), ("twice.json", "duplicate key `steps`")]
        {
            let p = d.path().join(file).display().to_string();
            let e = match merge_reports(&ctx, &[p], &MergeOptions::default(), Format::Json, false) {
                Ok(_) => panic!("{file} merged"),
                Err(e) => format!("{e:#}"),
            };
            assert!(e.contains(file) && e.contains(words), "{file}: {e}");
        }
    }
}
