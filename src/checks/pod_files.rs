//! The in-pod verifier's judgment (`verify-files`): each file the server
//! will read, as found on the pod's disk, against the bundle's pin.

use std::time::Duration;

use serde_json::json;

use crate::diag::{Code, Diagnostic};
use crate::report::{StepReport, Table, Verdict};

/// A file the bundle pins.
#[derive(Debug, Clone)]
pub(crate) struct Expected {
    pub path: String,
    pub sha256: String,
    pub size: u64,
}

/// What was found at that path.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Outcome {
    Ok,
    Missing,
    SizeMismatch {
        actual: u64,
    },
    DigestMismatch {
        actual: String,
    },
    /// Outside the root, not a regular file, or a read error.
    Unreadable(String),
}

/// One diagnostic per file that is not exactly the pinned bytes, and a
/// status per file (OK, MISSING, SIZE-MISMATCH, DIGEST-MISMATCH, UNREADABLE)
/// in `items` order. The messages lead with the status: they are what the
/// pod's termination log shows.
pub(crate) fn judge(items: &[Expected], outcomes: &[Outcome]) -> (Vec<Diagnostic>, Vec<&'static str>) {
    let mut diags = Vec::new();
    let mut statuses = Vec::new();
    for (e, o) in items.iter().zip(outcomes) {
        let (status, detail) = match o {
            Outcome::Ok => ("OK", None),
            Outcome::Missing => (
                "MISSING",
                Some(format!("MISSING {}: expected sha256:{} size {}, no such file", e.path, e.sha256, e.size)),
            ),
            Outcome::SizeMismatch { actual } => (
                "SIZE-MISMATCH",
                Some(format!(
                    "SIZE-MISMATCH {}: expected size {} (sha256:{}), found {actual} bytes",
                    e.path, e.size, e.sha256
                )),
            ),
            Outcome::DigestMismatch { actual } => (
                "DIGEST-MISMATCH",
                Some(format!("DIGEST-MISMATCH {}: expected sha256:{}, found sha256:{actual}", e.path, e.sha256)),
            ),
            Outcome::Unreadable(why) => {
                ("UNREADABLE", Some(format!("UNREADABLE {}: expected sha256:{}: {why}", e.path, e.sha256)))
            }
        };
        if let Some(detail) = detail {
            diags.push(Diagnostic::new(Code::PodArtifactMismatch, detail).field(e.path.clone()));
        }
        statuses.push(status);
    }
    // A file without an outcome was not checked: never counted as OK.
    for e in items.iter().skip(outcomes.len()) {
        diags.push(
            Diagnostic::new(
                Code::PodArtifactMismatch,
                format!("UNREADABLE {}: expected sha256:{}: not checked", e.path, e.sha256),
            )
            .field(e.path.clone()),
        );
        statuses.push("UNREADABLE");
    }
    (diags, statuses)
}

/// One look at an artifact's path while waiting for a download.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Seen {
    Absent,
    /// A regular file: its size and modification time.
    File {
        len: u64,
        modified: Option<std::time::SystemTime>,
    },
    /// Something that will never become the file (a FIFO, socket, device or
    /// folder, or a path leading outside the model folder): the check
    /// refuses it, so it is never waited for.
    Refused,
}

/// Why the verifier still waits for an artifact.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Waiting {
    Absent,
    Partial {
        have: u64,
        want: u64,
    },
    /// At its size, but written to less than [`SETTLE`] ago.
    Changing,
}

impl std::fmt::Display for Waiting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Waiting::Absent => write!(f, "absent"),
            Waiting::Partial { have, want } => write!(f, "{have} of {want} bytes"),
            Waiting::Changing => write!(f, "still changing"),
        }
    }
}

/// How long a file must keep its size and modification time before it
/// counts as complete: a downloader may preallocate a file at its full size
/// and fill it in, so "has its size" alone is not "is done".
pub(crate) const SETTLE: Duration = Duration::from_secs(2);

/// The wait for downloads as plain data: what each path held at each look
/// (times are offsets from the first look), and from that what is still
/// awaited and why. The loop that looks and sleeps is the command's.
#[derive(Debug, Clone)]
pub(crate) struct WaitState {
    last: Vec<Seen>,
    /// When each path last changed (the first look counts as a change).
    changed_at: Vec<Duration>,
    /// Whether it changed after the first look (then it is "still changing").
    moved: Vec<bool>,
}

impl WaitState {
    pub(crate) fn new(first: Vec<Seen>) -> WaitState {
        let n = first.len();
        WaitState { last: first, changed_at: vec![Duration::ZERO; n], moved: vec![false; n] }
    }

    pub(crate) fn observe(&mut self, at: Duration, cur: Vec<Seen>) {
        for (i, s) in cur.into_iter().enumerate().take(self.last.len()) {
            if s != self.last[i] {
                self.last[i] = s;
                self.changed_at[i] = at;
                self.moved[i] = true;
            }
        }
    }

    /// Whether `i` is complete at `at`: refused (nothing to wait for), or
    /// at least its pinned size and untouched for [`SETTLE`].
    fn settled(&self, items: &[Expected], i: usize, at: Duration) -> bool {
        match self.last[i] {
            Seen::Refused => true,
            Seen::Absent => false,
            Seen::File { len, .. } => len >= items[i].size && at.saturating_sub(self.changed_at[i]) >= SETTLE,
        }
    }

    /// Every artifact complete: the wait is over.
    pub(crate) fn done(&self, items: &[Expected], at: Duration) -> bool {
        (0..self.last.len()).all(|i| self.settled(items, i, at))
    }

    /// What is awaited at `at` and why, in `items` order. A file at its size
    /// that has not changed since the first look is not listed while it
    /// settles: nothing says it is being written.
    pub(crate) fn waiting(&self, items: &[Expected], at: Duration) -> Vec<(usize, Waiting)> {
        let mut out = Vec::new();
        for (i, s) in self.last.iter().enumerate() {
            let why = match s {
                Seen::Refused => continue,
                Seen::Absent => Waiting::Absent,
                Seen::File { len, .. } if *len < items[i].size => Waiting::Partial { have: *len, want: items[i].size },
                Seen::File { .. } if self.moved[i] && !self.settled(items, i, at) => Waiting::Changing,
                Seen::File { .. } => continue,
            };
            out.push((i, why));
        }
        out
    }
}

/// One line saying what the wait is for, at most `max` bytes (the readiness
/// probe's output and the pod's log show it): `waiting for 2 of 5
/// artifact(s): a.bin (absent), b.bin (10 of 20 bytes)`.
pub(crate) fn describe_wait(items: &[Expected], waiting: &[(usize, Waiting)], max: usize) -> String {
    if waiting.is_empty() {
        return format!(
            "waiting for 0 of {} artifact(s): all present, making sure nothing still writes them ({} s unchanged)",
            items.len(),
            SETTLE.as_secs()
        );
    }
    let mut s = format!("waiting for {} of {} artifact(s): ", waiting.len(), items.len());
    for (k, (i, why)) in waiting.iter().enumerate() {
        let part = format!("{}{} ({why})", if k > 0 { ", " } else { "" }, items[*i].path);
        let more = format!(", …and {} more", waiting.len() - k);
        if s.len() + part.len() + more.len() > max {
            s.push_str(if k == 0 { more.trim_start_matches(", ") } else { &more });
            break;
        }
        s.push_str(&part);
    }
    s
}

/// The verifier's step: a row per file, one finding per file that is not
/// the pinned bytes, and what was read (`bytes` in `secs`, `root` named).
pub(crate) fn step(
    release_digest: &str,
    items: &[Expected],
    outcomes: &[Outcome],
    full: bool,
    root: &str,
    bytes: u64,
    secs: f64,
) -> StepReport {
    let mut s = StepReport::new("verify-files", root);
    let (diagnostics, statuses) = judge(items, outcomes);
    s.diagnostics = diagnostics;
    let rows =
        items.iter().zip(&statuses).map(|(e, st)| vec![e.path.clone(), st.to_string(), e.size.to_string()]).collect();
    s.tables.push(Table {
        title: "artifacts".into(),
        columns: vec!["path".into(), "status".into(), "size".into()],
        rows,
    });
    s.verdict = s.verdict_from_diagnostics();
    let bad = s.diagnostics.len();
    s.summary = format!(
        "{}/{} artifact(s) OK ({}, {} in {:.2}s) for release {release_digest}",
        items.len().saturating_sub(bad),
        items.len(),
        if full { "sha256" } else { "size only" },
        crate::util::human_bytes(bytes),
        secs,
    );
    s.data = json!({"releaseDigest": release_digest, "bytes": bytes, "seconds": secs, "mismatches": bad});
    s
}

/// The readiness probe's step: PASS only when this release's check passed
/// (`said`: None); else FAIL with what the verifier last reported, which
/// `kubectl describe pod` shows (`Some(None)`: nothing yet).
pub(crate) fn ready_step(marker: &str, release_digest: &str, said: Option<Option<String>>) -> StepReport {
    let mut s = StepReport::new("verify-files-ready", marker);
    match said {
        None => {
            s.verdict = Verdict::Pass;
            s.summary = format!("verified {release_digest}");
        }
        Some(said) => {
            s.verdict = Verdict::Fail;
            let said = said.unwrap_or_else(|| "the verifier has not reported yet".into());
            s.summary = format!("model files not verified yet: {}", said.trim());
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The wait line fits its bound exactly: every item shown fits with room
    /// for the "…and N more" tail, shown + N is every awaited file, and a
    /// line that is exactly the bound keeps the item (cargo-mutants found
    /// the bound and the tail's arithmetic unheld).
    #[test]
    fn the_wait_line_holds_its_bound_exactly() {
        let items: Vec<Expected> =
            (0..5).map(|i| Expected { path: format!("file-{i}.bin"), sha256: "ab".into(), size: 3 }).collect();
        let waiting: Vec<(usize, Waiting)> = (0..5).map(|i| (i, Waiting::Absent)).collect();
        let head = "waiting for 5 of 5 artifact(s): ";
        let all = describe_wait(&items, &waiting, 10_000);
        assert_eq!(
            all,
            format!("{head}{}", (0..5).map(|i| format!("file-{i}.bin (absent)")).collect::<Vec<_>>().join(", "))
        );
        let first = "file-0.bin (absent)";
        // Exactly the bound: the first item and the tail for the other four.
        let exact = head.len() + first.len() + ", …and 5 more".len();
        assert_eq!(describe_wait(&items, &waiting, exact), format!("{head}{first}, …and 4 more"));
        assert_eq!(describe_wait(&items, &waiting, exact - 1), format!("{head}…and 5 more"), "k = 0: no leading comma");
        for max in head.len() + 20..all.len() + 40 {
            let line = describe_wait(&items, &waiting, max);
            let shown = (0..5).filter(|i| line.contains(&format!("file-{i}.bin"))).count();
            let more =
                line.rsplit_once("…and ").map_or(0, |(_, n)| n.trim_end_matches(" more").parse::<usize>().unwrap());
            assert_eq!(shown + more, 5, "{max}: {line}");
            if more > 0 && shown > 0 {
                assert!(line.len() <= max, "{max}: {} bytes: {line}", line.len());
            }
        }
    }

    fn pinned(sizes: &[u64]) -> Vec<Expected> {
        sizes
            .iter()
            .enumerate()
            .map(|(i, &size)| Expected { path: format!("f{i}"), sha256: "ab".into(), size })
            .collect()
    }

    fn file(len: u64) -> Seen {
        Seen::File { len, modified: None }
    }

    const MS: Duration = Duration::from_millis(1);

    /// The wait follows each path as the downloader would write it: absent,
    /// then partial, then at its size; a file counts as complete only after
    /// SETTLE untouched (exactly SETTLE is enough, one tick less is not), a
    /// file larger than its pin is complete (the hash judges it), and a
    /// refused path is never waited for.
    #[test]
    fn the_wait_ends_when_every_file_has_its_size_and_settled() {
        let items = pinned(&[10, 10, 10, 10, 0]);
        let mut w = WaitState::new(vec![Seen::Absent, file(5), file(10), file(11), Seen::Refused]);
        let t0 = Duration::ZERO;
        assert_eq!(w.waiting(&items, t0), vec![(0, Waiting::Absent), (1, Waiting::Partial { have: 5, want: 10 })]);
        assert!(!w.done(&items, t0));
        // Nothing changes: the files already at (or past) their size settle
        // from the first look, the others are still awaited.
        let t1 = Duration::from_secs(1);
        w.observe(t1, vec![Seen::Absent, file(5), file(10), file(11), Seen::Refused]);
        assert_eq!(w.waiting(&items, SETTLE), vec![(0, Waiting::Absent), (1, Waiting::Partial { have: 5, want: 10 })]);
        // Both arrive: still changing until SETTLE after the change.
        w.observe(t1, vec![file(10), file(9), file(10), file(11), Seen::Refused]);
        w.observe(t1 + MS, vec![file(10), file(10), file(10), file(11), Seen::Refused]);
        assert_eq!(w.waiting(&items, t1 + MS), vec![(0, Waiting::Changing), (1, Waiting::Changing)]);
        assert_eq!(w.waiting(&items, t1 + SETTLE), vec![(1, Waiting::Changing)], "f0 settles at exactly SETTLE");
        assert!(!w.done(&items, t1 + MS + SETTLE - MS));
        assert!(w.done(&items, t1 + MS + SETTLE));
        assert_eq!(w.waiting(&items, t1 + MS + SETTLE), vec![]);
        // A later write (same size, new mtime) starts the settling again.
        let touched = Seen::File { len: 10, modified: Some(std::time::UNIX_EPOCH + t1) };
        let t2 = Duration::from_secs(10);
        w.observe(t2, vec![touched, file(10), file(10), file(11), Seen::Refused]);
        assert!(!w.done(&items, t2 + SETTLE - MS));
        assert_eq!(w.waiting(&items, t2), vec![(0, Waiting::Changing)]);
        assert!(w.done(&items, t2 + SETTLE));
        // A file that shrinks back below its size is partial again.
        w.observe(t2 + MS, vec![file(3), file(10), file(10), file(11), Seen::Refused]);
        assert_eq!(w.waiting(&items, t2 + SETTLE * 9), vec![(0, Waiting::Partial { have: 3, want: 10 })]);
        assert!(!w.done(&items, t2 + SETTLE * 9));
    }

    /// A file at its size from the first look is complete once SETTLE has
    /// passed since then; before, the wait is not done but lists nothing
    /// (nothing says it is being written), and says so.
    #[test]
    fn a_file_present_from_the_start_settles_quietly() {
        let items = pinned(&[4]);
        let w = WaitState::new(vec![file(4)]);
        assert!(!w.done(&items, SETTLE - MS));
        assert_eq!(w.waiting(&items, Duration::ZERO), vec![]);
        assert!(w.done(&items, SETTLE));
        assert_eq!(
            describe_wait(&items, &[], 200),
            "waiting for 0 of 1 artifact(s): all present, making sure nothing still writes them (2 s unchanged)"
        );
        let two = pinned(&[4, 4]);
        let waiting = [(0, Waiting::Partial { have: 1, want: 4 }), (1, Waiting::Changing)];
        assert_eq!(
            describe_wait(&two, &waiting, 200),
            "waiting for 2 of 2 artifact(s): f0 (1 of 4 bytes), f1 (still changing)"
        );
    }

    /// Each outcome's line names the file, the pin and what was found, and
    /// the finding's field is the file's path.
    #[test]
    fn each_outcome_says_what_was_found() {
        let items = pinned(&[3, 3, 3, 3, 3]);
        let (d, st) = judge(
            &items,
            &[
                Outcome::Missing,
                Outcome::DigestMismatch { actual: "cd".into() },
                Outcome::Unreadable("a FIFO".into()),
                Outcome::SizeMismatch { actual: 7 },
                Outcome::Ok,
            ],
        );
        assert_eq!(st, vec!["MISSING", "DIGEST-MISMATCH", "UNREADABLE", "SIZE-MISMATCH", "OK"]);
        let lines: Vec<&str> = d.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(
            lines,
            vec![
                "MISSING f0: expected sha256:ab size 3, no such file",
                "DIGEST-MISMATCH f1: expected sha256:ab, found sha256:cd",
                "UNREADABLE f2: expected sha256:ab: a FIFO",
                "SIZE-MISMATCH f3: expected size 3 (sha256:ab), found 7 bytes",
            ]
        );
        let fields: Vec<_> = d.iter().map(|d| d.field.clone().unwrap_or_default()).collect();
        assert_eq!(fields, vec!["f0", "f1", "f2", "f3"]);
    }

    #[test]
    fn only_exact_bytes_pass_and_unchecked_files_fail() {
        let e = |p: &str| Expected { path: p.into(), sha256: "ab".into(), size: 3 };
        let items = [e("a"), e("b"), e("c")];
        let (d, st) = judge(&items, &[Outcome::Ok, Outcome::SizeMismatch { actual: 2 }]);
        assert_eq!(st, vec!["OK", "SIZE-MISMATCH", "UNREADABLE"]);
        assert_eq!(d.len(), 2);
        assert!(d.iter().all(|d| d.code == Code::PodArtifactMismatch));
        assert!(d[0].message.starts_with("SIZE-MISMATCH b:"), "{}", d[0].message);
    }
}
