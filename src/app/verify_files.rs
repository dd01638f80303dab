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

use crate::adapters::filehash;
use crate::adapters::local;
use crate::checks::pod_files::{self, describe_wait, Expected, Outcome, Seen, WaitState, Waiting};
use crate::options::VerifyFilesOptions;
use crate::report::{escape, Report};
use crate::util::is_sha256_hex;

/// Cap on the env var's size: the list is small; a huge value is not ours.
const MAX_MANIFEST_BYTES: usize = 4 << 20;

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
    let m: PodManifest = crate::yaml_guard::json_from_str(name, text, &crate::yaml_guard::Limits::WRITTEN)
        .with_context(|| format!("{name} is not the artifact list bundlegate renders"))?;
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

pub(crate) fn run(o: &VerifyFilesOptions) -> Result<Report> {
    let text = crate::adapters::env::named(&o.manifest_env)
        .ok_or_else(|| anyhow!("environment variable {} (the artifact list) is not set", o.manifest_env))?;
    let m = parse_manifest(&o.manifest_env, &text)?;
    let mut r = Report::new("verify-files");
    if o.ready {
        // Readiness probe: Ready only when this release's check passed;
        // otherwise say what the verifier last reported (what it waits
        // for, or what failed): `kubectl describe pod` shows this output.
        let ok = read_small(&o.marker).is_some_and(|s| s.trim() == m.release_digest);
        // What the verifier last reported (what it waits for, or what failed).
        let said = (!ok).then(|| read_small(&status_path(&o.marker)));
        let s = pod_files::ready_step(&escape::path_name(&o.marker), &m.release_digest, said);
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
    let items: Vec<Expected> =
        m.artifacts.iter().map(|a| Expected { path: a.path.clone(), sha256: a.sha256.clone(), size: a.size }).collect();
    let status = status_path(&o.marker);
    // A status from an earlier run must not describe this one.
    local::remove_file(&status).context("removing the status of an earlier run")?;
    // The log is the pod's record of the check: a failing stderr fails the
    // command once the check is done (never midway, which would leave no marker decision).
    let log_failed: std::cell::Cell<Option<std::io::Error>> = std::cell::Cell::new(None);
    let log = |line: &str| {
        if let Err(e) = local::stderr_line(&log_text(line)) {
            let first = log_failed.take();
            log_failed.set(first.or(Some(e)));
        }
    };
    let mut say = |line: &str, to_log: bool| {
        if to_log {
            log(line);
        }
        if let Err(e) = local::write_atomic(&status, status_text(line).as_bytes()) {
            tracing::warn!("cannot write the verifier's status: {e:#}");
        }
    };
    // The signatures first: a list no allowed key vouched for is not worth hashing against.
    let signed = match signatures(o, &m, &mut r, &log, &mut say)? {
        Signed::Refused => {
            return match log_failed.take() {
                Some(e) => Err(anyhow!("cannot write the verifier's log to standard error: {e}")),
                None => Ok(r),
            }
        }
        Signed::NotAsked => None,
        Signed::By(who) => Some(who),
    };
    let clock = SystemClock;
    let deadline = clock.now() + o.wait;
    let t0 = Instant::now();
    let outcomes = loop {
        wait_complete(&items, deadline, &clock, &mut || filehash::stamps(&root, &items), &mut say);
        let before = filehash::stamps(&root, &items);
        say(
            &format!(
                "checking {} artifact(s) ({}) against their pinned {}",
                items.len(),
                crate::util::human_bytes(items.iter().map(|e| e.size).fold(0, u64::saturating_add)),
                if full { "sha256 and size" } else { "size" }
            ),
            false,
        );
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
    let step = pod_files::step(&m.release_digest, &items, &outcomes, full, &escape::path_name(&root), bytes, secs);
    let lines: Vec<String> = step.diagnostics.iter().map(|d| d.message.clone()).collect();
    // Who vouched for the list joins the file outcomes (the pod's status).
    let signed_line = signed.as_ref().map(|who| format!("signature {who}"));
    // A marker from an earlier run must not outlive a failed check.
    local::remove_file(&o.marker).context("removing the marker of an earlier run")?;
    if lines.is_empty() {
        local::write_atomic(&o.marker, m.release_digest.as_bytes()).context("writing the marker")?;
        local::remove_file(&status).context("removing the verifier's status")?;
    } else {
        for l in &lines {
            log(l);
        }
        let (said, mut msg) = failure_texts(&lines, items.len());
        if let Some(who) = &signed_line {
            msg = format!("{}\n{msg}", escape::human(who));
            truncate_at(&mut msg, 4000);
        }
        say(&said, false);
        if let Err(e) = local::write_in_place(&o.termination_log, msg.as_bytes()) {
            tracing::warn!("cannot write the termination log: {e:#}");
        }
    }
    let ok = lines.is_empty();
    r.push(step);
    if ok && o.stay {
        // Sidecar mode: keep running so the readiness probe can exec.
        let who = signed_line.as_deref().map(|w| format!("; {w}")).unwrap_or_default();
        log(&format!("{} artifact(s) OK for {}{who}", items.len(), m.release_digest));
    }
    if let Some(e) = log_failed.take() {
        bail!("cannot write the verifier's log to standard error: {e}");
    }
    if ok && o.stay {
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
    Ok(r)
}

enum Signed {
    NotAsked,
    By(String),
    Refused,
}

/// With `--trust`, the signature step (pushed to `r`): who signed, or
/// refused with the marker removed and the reasons logged, in the status
/// and in the termination message.
fn signatures(
    o: &VerifyFilesOptions,
    m: &PodManifest,
    r: &mut Report,
    log: &dyn Fn(&str),
    say: &mut dyn FnMut(&str, bool),
) -> Result<Signed> {
    let Some(dir) = &o.trust else { return Ok(Signed::NotAsked) };
    let step = signature_step(o, dir, m)?;
    let outcome = crate::checks::signature::pod_outcome(&step);
    r.push(step);
    let (heading, lines) = match outcome {
        Ok(who) => {
            log(&who);
            return Ok(Signed::By(who));
        }
        Err(refused) => refused,
    };
    local::remove_file(&o.marker).context("removing the marker of an earlier run")?;
    for l in &lines {
        log(l);
    }
    let (said, msg) = failed_texts(heading, &lines);
    say(&said, false);
    if let Err(e) = local::write_in_place(&o.termination_log, msg.as_bytes()) {
        tracing::warn!("cannot write the termination log: {e:#}");
    }
    Ok(Signed::Refused)
}

/// The `signature` step of the pod: the signatures in `o.signature_env`
/// judged under the keys of the trust folder, against the rendered list
/// (what the files are then hashed against). A trust folder without a
/// usable key is the tool's error (exit 2): nothing could be verified.
fn signature_step(o: &VerifyFilesOptions, dir: &Path, m: &PodManifest) -> Result<crate::report::StepReport> {
    use crate::checks::signature::{self, Mode, Policy, SigFile, Signatures, Subject};
    let keys = crate::adapters::bundle_files::read_trust_keys(dir)?
        .iter()
        .map(|(name, pem)| signature::allowed_key(name, pem).map_err(|e| anyhow!("the trust folder's key {e}")))
        .collect::<Result<Vec<_>>>()?;
    let policy = Policy { mode: Mode::Required, keys, ..Policy::default() };
    let sigs = match crate::adapters::env::named(&o.signature_env) {
        None => Signatures::default(),
        Some(text) => crate::app::signature::from_pod_env(&o.signature_env, &text).unwrap_or_else(|why| Signatures {
            model: Some(SigFile { shown: o.signature_env.clone(), parsed: Err(why) }),
            ..Signatures::default()
        }),
    };
    let arts = m.artifacts.iter().map(|a| (a.path.as_str(), Some(a.sha256.as_str()))).collect();
    let subject = Subject::pod(&m.release_digest, &m.release_digest, arts);
    let j = signature::judge(&subject, &policy, &sigs);
    Ok(signature::step(&subject, &policy, j, &crate::diag::Overrides::default()))
}

// What the verifier writes names the bundle's artifact paths: each line
// goes through the terminal's escaper, since `kubectl logs`, `kubectl
// describe pod` (the termination log, the probe's output) print it as is.

/// A line of the verifier's log on stderr (`kubectl logs`).
pub(crate) fn log_text(line: &str) -> String {
    format!("bundlegate verify-files: {}", escape::human(line))
}

/// The status file's text (what the readiness probe prints).
pub(crate) fn status_text(line: &str) -> String {
    escape::human(line).into_owned()
}

/// What a failed check says: the status line (within [`STATUS_MAX`]) and
/// the termination log, one line per failure (Kubernetes keeps the last
/// 4096 bytes; the first artifacts matter most).
pub(crate) fn failure_texts(lines: &[String], items: usize) -> (String, String) {
    failed_texts(format!("{} of {items} artifact(s) failed", lines.len()), lines)
}

/// [`failure_texts`] under any heading.
fn failed_texts(head: String, lines: &[String]) -> (String, String) {
    let mut said = format!("{head}: {}", lines.join("; "));
    truncate_at(&mut said, STATUS_MAX);
    let mut msg = lines.iter().map(|l| escape::human(l)).collect::<Vec<_>>().join("\n");
    truncate_at(&mut msg, 4000);
    (said, msg)
}

/// The status file beside the marker: what the verifier last reported
/// (waiting for what, checking, or what failed), for the readiness probe.
fn status_path(marker: &Path) -> PathBuf {
    let mut name = marker.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".status");
    marker.with_file_name(name)
}

/// A status line fits the 4 KiB the probe reads of it.
pub(crate) const STATUS_MAX: usize = 3500;

/// The log says what the wait is for at least this often.
pub(crate) const LOG_EVERY: Duration = Duration::from_secs(10);

/// How often the files are looked at while waiting.
const POLL: Duration = Duration::from_millis(250);

/// A small file's text (the marker, the status), or None.
fn read_small(p: &Path) -> Option<String> {
    crate::adapters::bundle_files::read_text(p, crate::adapters::bundle_files::FileKind::Marker).ok()
}

/// Cut `s` to at most `max` bytes on a character boundary.
fn truncate_at(s: &mut String, max: usize) {
    let mut cut = max.min(s.len());
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    s.truncate(cut);
}

/// Time for the wait loop, injectable so its reporting is tested without
/// sleeping.
pub(crate) trait Clock {
    fn now(&self) -> Instant;
    fn sleep(&self, d: Duration);
}

struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
    fn sleep(&self, d: Duration) {
        std::thread::sleep(d);
    }
}

/// A file the wait names, with the kind of reason (not the byte count).
type Named = (usize, std::mem::Discriminant<Waiting>);

/// Wait (bounded by `deadline`) until every file exists with at least its
/// pinned size and nothing has written to it for [`SETTLE`](pod_files::SETTLE),
/// so a download still in progress is not reported as a mismatch. A path
/// holding something that is not a file is not waited for. `look` reads
/// what is at the paths; `say` gets what the wait is for each time it is
/// looked at (for the probe), with `true` when it goes to the log too: at
/// the first look, whenever the set of files or their reasons change, and
/// at least every [`LOG_EVERY`]. Whatever is still wrong at the deadline is
/// then reported as found.
pub(crate) fn wait_complete(
    items: &[Expected],
    deadline: Instant,
    clock: &dyn Clock,
    look: &mut dyn FnMut() -> Vec<Seen>,
    say: &mut dyn FnMut(&str, bool),
) {
    let start = clock.now();
    let mut state = WaitState::new(look());
    // When the log last spoke, and which files it named for which reason.
    let mut logged: Option<(Instant, Vec<Named>)> = None;
    let mut shown = String::new();
    loop {
        let now = clock.now();
        let at = now.saturating_duration_since(start);
        if state.done(items, at) {
            if logged.is_some() {
                say(&format!("every artifact complete after {:.1} s of waiting", at.as_secs_f64()), true);
            }
            return;
        }
        if now >= deadline {
            // With `--wait 0s` nothing was waited for, so nothing to say.
            if logged.is_some() {
                say(
                    &format!(
                        "stopped waiting after {:.1} s (--wait): {}",
                        at.as_secs_f64(),
                        describe_wait(items, &state.waiting(items, at), STATUS_MAX - 64)
                    ),
                    true,
                );
            }
            return;
        }
        let waiting = state.waiting(items, at);
        let kinds: Vec<_> = waiting.iter().map(|(i, w)| (*i, std::mem::discriminant(w))).collect();
        let line = describe_wait(items, &waiting, STATUS_MAX);
        let log =
            logged.as_ref().is_none_or(|(when, k)| *k != kinds || now.saturating_duration_since(*when) >= LOG_EVERY);
        if log || line != shown {
            say(&line, log);
            shown = line;
        }
        if log {
            logged = Some((now, kinds));
        }
        clock.sleep(POLL.min(deadline.saturating_duration_since(now)));
        let cur = look();
        state.observe(clock.now().saturating_duration_since(start), cur);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::cell::Cell;

    /// Time that moves only when the loop sleeps.
    struct FakeClock {
        start: Instant,
        t: Cell<Duration>,
    }

    impl Clock for FakeClock {
        fn now(&self) -> Instant {
            self.start + self.t.get()
        }
        fn sleep(&self, d: Duration) {
            self.t.set(self.t.get() + d);
        }
    }

    /// One file's download: absent until `appear`, growing until `full`,
    /// then rewritten in place until `quiet` (`None`: never appears).
    #[derive(Debug, Clone, Copy)]
    struct Timeline {
        appear: Option<u64>,
        full: u64,
        quiet: u64,
    }

    const SIZE: u64 = 1000;

    fn timeline() -> impl Strategy<Value = Timeline> {
        (prop::option::weighted(0.85, 0u64..60_000), 0u64..40_000, 0u64..20_000).prop_map(|(a, g, q)| Timeline {
            appear: a,
            full: a.unwrap_or(0) + g,
            quiet: a.unwrap_or(0) + g + q,
        })
    }

    /// What is at the path `ms` into the wait.
    fn seen(tl: &Timeline, ms: u64) -> Seen {
        match tl.appear {
            Some(a) if ms >= a => {
                let len = if ms >= tl.full { SIZE } else { SIZE * (ms - a) / (tl.full - a).max(1) };
                let modified = std::time::UNIX_EPOCH + Duration::from_millis(ms.min(tl.quiet));
                Seen::File { len, modified: Some(modified) }
            }
            _ => Seen::Absent,
        }
    }

    proptest! {
        #![proptest_config(crate::util::prop_config(200))]

        /// Any set of downloads (absent, growing, rewritten in place, never
        /// arriving) under a 90 s wait: a log line at the first look and at
        /// least every 10 s while waiting; each names exactly the files not
        /// complete at that moment with why (absent; n of m bytes; still
        /// changing), and none that is complete and quiet; the status (what
        /// the probe prints) is always the latest of them; the wait ends
        /// when the last file has settled, or at the deadline naming what
        /// is missing.
        #[test]
        fn the_wait_says_what_it_waits_for_at_least_every_ten_seconds(tls in prop::collection::vec(timeline(), 1..5)) {
            let items: Vec<Expected> = (0..tls.len()).map(|i| Expected { path: format!("shard-{i}.bin"), sha256: String::new(), size: SIZE }).collect();
            let clock = FakeClock { start: Instant::now(), t: Cell::new(Duration::ZERO) };
            let deadline = clock.start + Duration::from_secs(90);
            let ms = || clock.t.get().as_millis() as u64;
            let mut look = || tls.iter().map(|tl| seen(tl, ms())).collect::<Vec<_>>();
            let mut said: Vec<(u64, String, bool)> = Vec::new();
            wait_complete(&items, deadline, &clock, &mut look, &mut |line: &str, log: bool| said.push((ms(), line.to_string(), log)));
            let end = ms();
            let settled_at = tls.iter().map(|tl| tl.appear.map(|_| tl.quiet.max(tl.full))).collect::<Option<Vec<_>>>().map(|v| v.into_iter().max().unwrap_or(0));
            // Ends once everything settled (within a poll), else at the deadline.
            match settled_at {
                Some(t) if t + 2000 + 250 < 90_000 => prop_assert!(end <= t + 2000 + 500 && end >= 2000, "ended at {end} ms, last change at {t} ms"),
                _ => prop_assert!(end >= 89_750, "ended at {end} ms before the deadline with a file never arriving"),
            }
            let logs: Vec<&(u64, String, bool)> = said.iter().filter(|s| s.2).collect();
            if end > 0 && settled_at != Some(0) {
                prop_assert!(!logs.is_empty() && logs[0].0 == 0, "no log line at the first look: {said:?}");
            }
            for w in logs.windows(2) {
                prop_assert!(w[1].0 - w[0].0 <= (LOG_EVERY + POLL).as_millis() as u64, "{} ms without a log line: {:?}", w[1].0 - w[0].0, w);
            }
            if let Some(last) = logs.last() {
                prop_assert!(end - last.0 <= (LOG_EVERY + POLL).as_millis() as u64, "silent for the last {} ms", end - last.0);
            }
            for (at, line, _) in said.iter().filter(|s| s.1.starts_with("waiting for")) {
                for (i, tl) in tls.iter().enumerate() {
                    let name = &items[i].path;
                    let want = match seen(tl, *at) {
                        Seen::Absent => Some("absent".to_string()),
                        Seen::File { len, .. } if len < SIZE => Some(format!("{len} of {SIZE} bytes")),
                        Seen::File { .. } if *at < tl.quiet && *at >= 250 && tl.quiet > 0 => Some("still changing".into()),
                        Seen::File { .. } if *at >= tl.quiet.max(tl.full) + 2000 + 250 => None,
                        _ => continue, // settling: named or not
                        };
                    match want {
                        Some(why) => prop_assert!(line.contains(&format!("{name} ({why})")), "at {at} ms `{line}` does not say {name} ({why})"),
                        None => prop_assert!(!line.contains(name.as_str()), "at {at} ms `{line}` names {name}, complete and quiet"),
                    }
                }
            }
            if let Some((_, last, _)) = said.last() {
                let done = last.starts_with("every artifact complete");
                let stopped = last.starts_with("stopped waiting");
                prop_assert!(done || stopped, "the last word is neither: {last}");
                for (i, tl) in tls.iter().enumerate() {
                    if tl.appear.is_none() {
                        prop_assert!(stopped && last.contains(&format!("{} (absent)", items[i].path)), "{last}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_wait_of_zero_says_nothing_and_refused_paths_are_not_waited_for() {
        let items: Vec<Expected> =
            (0..2).map(|i| Expected { path: format!("f{i}"), sha256: String::new(), size: 5 }).collect();
        let clock = FakeClock { start: Instant::now(), t: Cell::new(Duration::ZERO) };
        let mut said = Vec::new();
        wait_complete(&items, clock.start, &clock, &mut || vec![Seen::Absent, Seen::Refused], &mut |l: &str, _| {
            said.push(l.to_string())
        });
        assert!(said.is_empty(), "{said:?}");
        // A FIFO (Refused) beside a complete file: over once the file settles.
        let f = Seen::File { len: 5, modified: None };
        wait_complete(
            &items,
            clock.start + Duration::from_secs(600),
            &clock,
            &mut || vec![f.clone(), Seen::Refused],
            &mut |l: &str, _| said.push(l.to_string()),
        );
        assert!(clock.t.get() <= pod_files::SETTLE + POLL, "{:?}", clock.t.get());
    }

    #[test]
    fn the_status_path_sits_beside_the_marker() {
        assert_eq!(
            status_path(Path::new("/tmp/bundlegate-verified")),
            PathBuf::from("/tmp/bundlegate-verified.status")
        );
    }
}
