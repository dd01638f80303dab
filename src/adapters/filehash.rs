//! Local file hashing: the one read-and-hash loop that `verify` (`file:`
//! stores), `publish` and `verify-files` (in the pod, where the model server
//! reads the files) share, and `verify-files`' own walk: every artifact
//! confined to the root, largest first, one worker per core, memory fixed
//! per worker whatever the model size.

use crate::checks::pod_files::{Expected, Outcome, Seen};
use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use sha2::{Digest, Sha256};

/// One read: large enough that syscalls vanish next to SHA-256, small
/// enough to stay in the shared cache between the reading and the hashing core.
pub(crate) const BLOCK: usize = 1 << 20;

/// Buffers in flight per file: the reader fills some while the hasher
/// consumes one, so `jobs` concurrent files hold `jobs × DEPTH × BLOCK`.
const DEPTH: usize = 4;

/// Progress is reported every this many bytes, not per block, so the hot
/// loop does no atomic/terminal work per read.
const PROGRESS_EVERY: u64 = 16 << 20;

/// What [`sha256_read`] saw: the digest of the bytes read and how many.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hashed {
    pub sha256: String,
    pub bytes: u64,
}

/// SHA-256 of everything `r` yields, reading at most one block past
/// `expected` (a file growing under us is a mismatch, never an endless read).
///
/// Over two blocks, a second thread reads ahead into a few fixed buffers
/// while this one hashes: the copy from the page cache (a sixth of the CPU
/// time of a read-then-hash loop) then runs beside the hashing instead of
/// before it, so one large file is hashed at the speed of SHA-256 alone.
/// `progress` gets byte counts as they are hashed.
pub(crate) fn sha256_read<R: Read + Send>(
    mut r: R,
    expected: u64,
    progress: &(dyn Fn(u64) + Sync),
) -> std::io::Result<Hashed> {
    let mut acc = Hashing::new(progress);
    if expected <= 2 * BLOCK as u64 {
        let mut buf = vec![0u8; (expected as usize).saturating_add(1).min(BLOCK)];
        let mut total = 0u64;
        while total <= expected {
            let k = read_some(&mut r, &mut buf)?;
            if k == 0 {
                break;
            }
            total += k as u64;
            acc.add(&buf[..k]);
        }
    } else {
        let (full_tx, full_rx) = std::sync::mpsc::sync_channel::<std::io::Result<(Vec<u8>, usize)>>(DEPTH);
        let (empty_tx, empty_rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(DEPTH);
        for _ in 0..DEPTH {
            let _ = empty_tx.send(vec![0u8; BLOCK]);
        }
        std::thread::scope(|s| -> std::io::Result<()> {
            s.spawn(move || {
                let mut total = 0u64;
                // Ends when the hasher hangs up (its channels drop) or at EOF.
                while let Ok(mut buf) = empty_rx.recv() {
                    let msg = read_some(&mut r, &mut buf).map(|k| (buf, k));
                    let stop = match &msg {
                        Ok((_, 0)) => true,
                        Ok((_, k)) => {
                            total += *k as u64;
                            total > expected
                        }
                        Err(_) => true,
                    };
                    if matches!(msg, Ok((_, 0))) || full_tx.send(msg).is_err() || stop {
                        break;
                    }
                }
            });
            // Owning both ends here drops them on return, which releases the reader.
            let (full_rx, empty_tx) = (full_rx, empty_tx);
            for msg in full_rx.iter() {
                let (buf, k) = msg?;
                acc.add(&buf[..k]);
                let _ = empty_tx.send(buf);
            }
            Ok(())
        })?;
    }
    Ok(acc.finish())
}

/// SHA-256 of a byte stream so far, reporting progress every
/// [`PROGRESS_EVERY`] bytes (never per block, so the hot loop does no
/// terminal work). Shared by file reads and object-store streams.
pub(crate) struct Hashing<P: Fn(u64)> {
    hasher: Sha256,
    bytes: u64,
    unreported: u64,
    progress: P,
}

impl<P: Fn(u64)> Hashing<P> {
    pub(crate) fn new(progress: P) -> Self {
        Hashing { hasher: Sha256::new(), bytes: 0, unreported: 0, progress }
    }
    pub(crate) fn add(&mut self, block: &[u8]) {
        self.hasher.update(block);
        self.bytes += block.len() as u64;
        self.unreported += block.len() as u64;
        if self.unreported >= PROGRESS_EVERY {
            (self.progress)(self.unreported);
            self.unreported = 0;
        }
    }
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }
    pub(crate) fn finish(self) -> Hashed {
        if self.unreported > 0 {
            (self.progress)(self.unreported);
        }
        Hashed { sha256: hex::encode(self.hasher.finalize()), bytes: self.bytes }
    }
}

/// One `read`, retried on EINTR.
fn read_some(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    loop {
        match r.read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// `rel` under `root` (already canonical), refusing `..`, absolute paths and
/// symlinks that lead out of `root`. `Ok(None)`: the file does not exist.
pub(crate) fn confined(root: &Path, rel: &str) -> Result<Option<PathBuf>, String> {
    let p = Path::new(rel);
    if rel.is_empty() || p.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir)) {
        return Err(format!("artifact path `{rel}` is not a relative path inside the model folder"));
    }
    let joined = root.join(p);
    match joined.canonicalize() {
        Ok(real) if real.starts_with(root) => Ok(Some(real)),
        Ok(real) => Err(format!("`{rel}` resolves outside the model folder (to {})", real.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("`{rel}`: {e}")),
    }
}

/// What is at each artifact's path now, for waiting on downloads: two
/// equal readings some time apart mean nobody is writing. Only metadata is
/// read, never the file: a FIFO, socket, device or folder (or a path
/// leading outside the root) is `Refused` at once, never waited for.
pub(crate) fn stamps(root: &Path, items: &[Expected]) -> Vec<Seen> {
    items
        .iter()
        .map(|e| match confined(root, &e.path) {
            Ok(None) => Seen::Absent,
            Err(_) => Seen::Refused,
            Ok(Some(p)) => match std::fs::metadata(p) {
                Ok(m) if m.is_file() => Seen::File { len: m.len(), modified: m.modified().ok() },
                Ok(_) => Seen::Refused,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Seen::Absent,
                Err(_) => Seen::Refused,
            },
        })
        .collect()
}

fn check_one(root: &Path, e: &Expected, full: bool) -> Outcome {
    let path = match confined(root, &e.path) {
        Ok(Some(p)) => p,
        Ok(None) => return Outcome::Missing,
        Err(m) => return Outcome::Unreadable(m),
    };
    // Checked before it is opened: a FIFO here would block the open forever.
    let (f, meta) = match crate::adapters::bundle_files::open_regular(&path) {
        Ok(x) => x,
        Err(err) => return Outcome::Unreadable(format!("{}: {err}", e.path)),
    };
    if meta.len() != e.size {
        return Outcome::SizeMismatch { actual: meta.len() };
    }
    if !full {
        return Outcome::Ok;
    }
    let got = match sha256_read(f, e.size, &|_| {}) {
        Ok(got) => got,
        Err(err) => return Outcome::Unreadable(format!("{}: {err}", e.path)),
    };
    if got.bytes != e.size {
        return Outcome::SizeMismatch { actual: got.bytes };
    }
    if got.sha256 == e.sha256 {
        Outcome::Ok
    } else {
        Outcome::DigestMismatch { actual: got.sha256 }
    }
}

/// Check every artifact; results are in `items` order. `full`: hash, else
/// sizes only. `threads` 0 means one per available core.
pub(crate) fn check_all(root: &Path, items: &[Expected], full: bool, threads: usize) -> Vec<Outcome> {
    let mut order: Vec<usize> = (0..items.len()).collect();
    // Largest first: the longest hash starts at once, the small ones fill in.
    order.sort_by(|a, b| items[*b].size.cmp(&items[*a].size));
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let workers = if threads == 0 { cores } else { threads }.clamp(1, items.len().max(1));
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Outcome>>> = Mutex::new(vec![None; items.len()]);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(&i) = order.get(k) else { break };
                let o = check_one(root, &items[i], full);
                if let Ok(mut r) = results.lock() {
                    r[i] = Some(o);
                }
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_default()
        .into_iter()
        .map(|o| o.unwrap_or(Outcome::Unreadable("not checked".into())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Yields `data` in reads of `step` bytes, then fails if `fail` is set.
    struct Chunky<'a> {
        data: &'a [u8],
        step: usize,
        fail: bool,
    }
    impl Read for Chunky<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.data.is_empty() && self.fail {
                return Err(std::io::Error::other("disk gone"));
            }
            let k = self.step.min(buf.len()).min(self.data.len());
            buf[..k].copy_from_slice(&self.data[..k]);
            self.data = &self.data[k..];
            Ok(k)
        }
    }

    fn digest(d: &[u8]) -> String {
        hex::encode(Sha256::digest(d))
    }

    #[test]
    fn pipelined_and_inline_reads_hash_the_same_bytes() {
        let data: Vec<u8> = (0..(5 * BLOCK + 12345)).map(|i| (i * 31 % 251) as u8).collect();
        for len in [0, 1, BLOCK, 2 * BLOCK, 2 * BLOCK + 1, data.len()] {
            for step in [7, 4096, BLOCK] {
                let seen = std::sync::atomic::AtomicU64::new(0);
                let got = sha256_read(Chunky { data: &data[..len], step, fail: false }, len as u64, &|k| {
                    seen.fetch_add(k, Ordering::Relaxed);
                })
                .unwrap();
                assert_eq!(got, Hashed { sha256: digest(&data[..len]), bytes: len as u64 }, "len {len} step {step}");
                assert_eq!(seen.into_inner(), len as u64, "progress covers every byte");
            }
        }
    }

    #[test]
    fn a_source_longer_than_expected_stops_one_block_past_it() {
        let data = vec![1u8; 8 * BLOCK];
        for expected in [10u64, 3 * BLOCK as u64] {
            let got = sha256_read(Chunky { data: &data, step: BLOCK, fail: false }, expected, &|_| {}).unwrap();
            assert!(got.bytes > expected && got.bytes <= expected + BLOCK as u64, "{expected}: read {}", got.bytes);
        }
    }

    #[test]
    fn a_read_error_is_returned_not_hashed_over() {
        let data = vec![2u8; 3 * BLOCK];
        for expected in [(3 * BLOCK) as u64 + 10, 100] {
            let d = if expected == 100 { &data[..50] } else { &data[..] };
            let e = sha256_read(Chunky { data: d, step: BLOCK, fail: true }, expected, &|_| {}).unwrap_err();
            assert_eq!(e.to_string(), "disk gone");
        }
    }

    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Kind {
        Good,
        Fifo,
        Socket,
        Folder,
        LinkToFifo,
        Absent,
    }

    proptest::proptest! {
        #![proptest_config(crate::util::prop_config(48))]

        /// Any mix of regular files, FIFOs, sockets, folders, symlinks to a
        /// FIFO and absent paths: the check and the wait's look both return
        /// within seconds (run on a thread with a timeout, so a reader that
        /// opens a FIFO fails the test instead of hanging it), every
        /// non-file is UNREADABLE naming what it is and `Refused` (never
        /// waited for), the rest judged as usual.
        #[test]
        fn files_that_are_not_files_are_refused_without_blocking(kinds in proptest::collection::vec(proptest::sample::select(vec![Kind::Good, Kind::Fifo, Kind::Socket, Kind::Folder, Kind::LinkToFifo, Kind::Absent]), 1..6)) {
            let d = tempfile::tempdir().unwrap();
            let root = d.path().canonicalize().unwrap();
            let mut keep = Vec::new();
            let mut items = Vec::new();
            for (i, k) in kinds.iter().enumerate() {
                let p = root.join(format!("a{i}"));
                let fifo = |p: &Path| {
                    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
                    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
                };
                match k {
                    Kind::Good => std::fs::write(&p, b"hello").unwrap(),
                    Kind::Fifo => fifo(&p),
                    Kind::Socket => keep.push(std::os::unix::net::UnixListener::bind(&p).unwrap()),
                    Kind::Folder => std::fs::create_dir(&p).unwrap(),
                    Kind::LinkToFifo => {
                        fifo(&root.join(format!("t{i}")));
                        std::os::unix::fs::symlink(root.join(format!("t{i}")), &p).unwrap();
                    }
                    Kind::Absent => {}
                }
                items.push(Expected { path: format!("a{i}"), sha256: digest(b"hello"), size: 5 });
            }
            let (tx, rx) = std::sync::mpsc::channel();
            let (r2, i2) = (root.clone(), items.clone());
            let t0 = std::time::Instant::now();
            std::thread::spawn(move || {
                let _ = tx.send((check_all(&r2, &i2, true, 2), stamps(&r2, &i2)));
            });
            let got = rx.recv_timeout(std::time::Duration::from_secs(5));
            proptest::prop_assert!(got.is_ok(), "a reader blocked on {kinds:?} ({:?})", t0.elapsed());
            let (outcomes, seen) = got.unwrap();
            for ((k, o), s) in kinds.iter().zip(&outcomes).zip(&seen) {
                let what = match k {
                    Kind::Good => {
                        proptest::prop_assert_eq!(o, &Outcome::Ok);
                        continue;
                    }
                    Kind::Absent => {
                        proptest::prop_assert_eq!((o, s), (&Outcome::Missing, &Seen::Absent));
                        continue;
                    }
                    Kind::Fifo | Kind::LinkToFifo => "a FIFO",
                    Kind::Socket => "a socket",
                    Kind::Folder => "a folder",
                };
                proptest::prop_assert!(matches!(o, Outcome::Unreadable(m) if m.contains(&format!("it is {what}"))), "{:?}: {:?}", k, o);
                proptest::prop_assert_eq!(s, &Seen::Refused);
            }
        }
    }
}
