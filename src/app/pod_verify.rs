//! `verify-files`: runs inside the serving pod and checks that the files the
//! model server opens are the bytes git pins. The expected list comes from
//! the manifest (an env var rendered from the bundle), never from the store.
//!
//! Exit 0: every artifact OK (a marker file records the release digest for
//! the readiness probe). Exit 1: a MISSING / SIZE-MISMATCH /
//! DIGEST-MISMATCH, written to the termination log so the pod status names
//! it. Exit 2: the expected list itself is unusable.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;
use serde_json::json;

use crate::adapters::filehash;
use crate::checks::pod_files::{self, Expected, Outcome};
use crate::adapters::local;
use crate::checks::lint::is_sha256_hex;
use crate::report::{Report, StepReport, Table, Verdict};

pub use crate::bundle::verify_seconds;

/// Cap on the env var's size: the list is small; a huge value is not ours.
const MAX_MANIFEST_BYTES: usize = 4 << 20;

#[derive(Debug, Clone)]
pub(crate) struct Opts {
    pub manifest_env: String,
    pub root: PathBuf,
    pub mode: Option<String>,
    pub termination_log: PathBuf,
    pub marker: PathBuf,
    pub ready: bool,
    pub wait: Duration,
    pub stay: bool,
    pub threads: usize,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct PodManifest {
    pub release_digest: String,
    #[serde(default = "full")]
    pub mode: String,
    pub artifacts: Vec<PodArtifact>,
}

fn full() -> String {
    "full".into()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PodArtifact {
    pub path: String,
    pub sha256: String,
    pub size: u64,
}

pub(crate) fn parse_manifest(name: &str, text: &str) -> Result<PodManifest> {
    if text.len() > MAX_MANIFEST_BYTES {
        bail!("{name} is larger than {MAX_MANIFEST_BYTES} bytes");
    }
    let m: PodManifest = serde_json::from_str(text).with_context(|| format!("{name} is not the artifact list bundlegate renders"))?;
    if m.artifacts.is_empty() {
        bail!("{name} lists no artifacts: nothing could be verified");
    }
    for (i, a) in m.artifacts.iter().enumerate() {
        if !is_sha256_hex(&a.sha256) {
            bail!("{name}: artifacts[{i}] ({}) sha256 is not 64 lowercase hex characters", a.path);
        }
    }
    if !["full", "size"].contains(&m.mode.as_str()) {
        bail!("{name}: mode `{}` must be full or size", m.mode);
    }
    Ok(m)
}

pub(crate) fn run(o: &Opts) -> Result<Report> {
    let text = crate::adapters::env::named(&o.manifest_env).ok_or_else(|| anyhow!("environment variable {} (the artifact list) is not set", o.manifest_env))?;
    let m = parse_manifest(&o.manifest_env, &text)?;
    let mut r = Report::new("verify-files");
    if o.ready {
        // Readiness probe: Ready only when this release's check passed.
        let ok = crate::adapters::bundle_files::read_text(&o.marker, crate::adapters::bundle_files::FileKind::Marker).map(|s| s.trim() == m.release_digest).unwrap_or(false);
        let mut s = StepReport::new("verify-files-ready", o.marker.display().to_string());
        s.verdict = if ok { Verdict::Pass } else { Verdict::Fail };
        s.summary = if ok { format!("verified {}", m.release_digest) } else { "model files not verified (yet)".into() };
        r.push(s);
        return Ok(r);
    }
    let mode = o.mode.clone().unwrap_or(m.mode.clone());
    let full = match mode.as_str() {
        "full" => true,
        "size" => false,
        other => bail!("--mode `{other}` must be full or size"),
    };
    let root = local::canonical(&o.root, "model folder")?;
    let items: Vec<Expected> = m.artifacts.iter().map(|a| Expected { path: a.path.clone(), sha256: a.sha256.clone(), size: a.size }).collect();
    let deadline = Instant::now() + o.wait;
    let t0 = Instant::now();
    let outcomes = loop {
        wait_complete(&root, &items, deadline);
        let before = filehash::stamps(&root, &items);
        let outcomes = filehash::check_all(&root, &items, full, o.threads);
        let all_ok = outcomes.iter().all(|x| matches!(x, Outcome::Ok));
        // A file that changed while it was hashed was still being written:
        // its mismatch proves nothing yet, so look again (until the deadline).
        if all_ok || filehash::stamps(&root, &items) == before || Instant::now() >= deadline {
            break outcomes;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    let secs = t0.elapsed().as_secs_f64();
    let bytes: u64 = items.iter().map(|e| e.size).fold(0, u64::saturating_add);
    let step = step_for(&m, &items, &outcomes, full, &root, bytes, secs);
    let lines: Vec<String> = step.diagnostics.iter().map(|d| d.message.clone()).collect();
    // A marker from an earlier run must not outlive a failed check.
    local::remove_file(&o.marker).context("removing the marker of an earlier run")?;
    if lines.is_empty() {
        local::write_atomic(&o.marker, m.release_digest.as_bytes()).context("writing the marker")?;
    } else {
        // Kubernetes keeps the last 4096 bytes; the first artifacts matter most.
        let mut msg = lines.join("\n");
        msg.truncate(4000);
        for l in &lines {
            eprintln!("bundlegate verify-files: {l}");
        }
        if let Err(e) = local::write_in_place(&o.termination_log, msg.as_bytes()) {
            tracing::warn!("cannot write the termination log: {e:#}");
        }
    }
    let ok = lines.is_empty();
    r.push(step);
    if ok && o.stay {
        // Sidecar mode: keep running so the readiness probe can exec.
        eprintln!("bundlegate verify-files: {} artifact(s) OK for {}", items.len(), m.release_digest);
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
    Ok(r)
}

/// How long every file must keep its size and modification time before it
/// counts as complete: a downloader may preallocate a file at its full size
/// and fill it in, so "has its size" alone is not "is done".
const SETTLE: Duration = Duration::from_secs(2);

/// Wait (bounded by `deadline`) until every file exists with at least its
/// pinned size and nothing has written to any of them for [`SETTLE`], so a
/// download still in progress is not reported as a mismatch. Whatever is
/// still wrong at the deadline is then reported as found.
fn wait_complete(root: &Path, items: &[Expected], deadline: Instant) {
    let mut last = filehash::stamps(root, items);
    let mut quiet_since = Instant::now();
    loop {
        let now = Instant::now();
        if now >= deadline {
            return;
        }
        let cur = filehash::stamps(root, items);
        if cur != last {
            last = cur;
            quiet_since = now;
        }
        let sized = last.iter().zip(items).all(|(s, e)| s.is_some_and(|(len, _)| len >= e.size));
        if sized && now.duration_since(quiet_since) >= SETTLE {
            return;
        }
        std::thread::sleep(Duration::from_millis(250).min(deadline.saturating_duration_since(now)));
    }
}

fn step_for(m: &PodManifest, items: &[Expected], outcomes: &[Outcome], full: bool, root: &Path, bytes: u64, secs: f64) -> StepReport {
    let mut s = StepReport::new("verify-files", root.display().to_string());
    let (diagnostics, statuses) = pod_files::judge(items, outcomes);
    s.diagnostics = diagnostics;
    let rows = items.iter().zip(&statuses).map(|(e, st)| vec![e.path.clone(), st.to_string(), e.size.to_string()]).collect();
    s.tables.push(Table { title: "artifacts".into(), columns: vec!["path".into(), "status".into(), "size".into()], rows });
    s.verdict = s.verdict_from_diagnostics();
    let bad = s.diagnostics.len();
    s.summary = format!(
        "{}/{} artifact(s) OK ({}, {} in {:.2}s) for release {}",
        items.len().saturating_sub(bad),
        items.len(),
        if full { "sha256" } else { "size only" },
        crate::util::human_bytes(bytes),
        secs,
        m.release_digest
    );
    s.data = json!({"releaseDigest": m.release_digest, "bytes": bytes, "seconds": secs, "mismatches": bad});
    s
}
