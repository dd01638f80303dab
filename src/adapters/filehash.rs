//! Local file hashing for `verify-files` (in the pod, where the model server
//! reads the files): every artifact confined to the root, largest first,
//! one worker per core, a fixed 1 MiB buffer per worker so peak memory does
//! not grow with the model size.

use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use sha2::{Digest, Sha256};

pub const BUF_BYTES: usize = 1 << 20;

#[derive(Debug, Clone)]
pub struct Expected {
    pub path: String,
    pub sha256: String,
    pub size: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Ok,
    Missing,
    SizeMismatch { actual: u64 },
    DigestMismatch { actual: String },
    /// Outside the root, not a regular file, or a read error.
    Unreadable(String),
}

/// `rel` under `root` (already canonical), refusing `..`, absolute paths and
/// symlinks that lead out of `root`. `Ok(None)`: the file does not exist.
pub fn confined(root: &Path, rel: &str) -> Result<Option<PathBuf>, String> {
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

/// Current size of each artifact (None: missing), for waiting on downloads.
/// Size and modification time of each file (`None`: absent or refused);
/// two equal readings some time apart mean nobody is writing.
pub fn stamps(root: &Path, items: &[Expected]) -> Vec<Option<(u64, std::time::SystemTime)>> {
    items
        .iter()
        .map(|e| confined(root, &e.path).ok().flatten().and_then(|p| std::fs::metadata(p).ok()).and_then(|m| Some((m.len(), m.modified().ok()?))))
        .collect()
}

pub fn sizes(root: &Path, items: &[Expected]) -> Vec<Option<u64>> {
    items.iter().map(|e| confined(root, &e.path).ok().flatten().and_then(|p| std::fs::metadata(p).ok()).map(|m| m.len())).collect()
}

fn check_one(root: &Path, e: &Expected, full: bool, buf: &mut [u8]) -> Outcome {
    let path = match confined(root, &e.path) {
        Ok(Some(p)) => p,
        Ok(None) => return Outcome::Missing,
        Err(m) => return Outcome::Unreadable(m),
    };
    let mut f = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(err) => return Outcome::Unreadable(format!("{}: {err}", e.path)),
    };
    let meta = match f.metadata() {
        Ok(m) if m.is_file() => m,
        Ok(_) => return Outcome::Unreadable(format!("{} is not a regular file", e.path)),
        Err(err) => return Outcome::Unreadable(format!("{}: {err}", e.path)),
    };
    if meta.len() != e.size {
        return Outcome::SizeMismatch { actual: meta.len() };
    }
    if !full {
        return Outcome::Ok;
    }
    let mut h = Sha256::new();
    let mut n: u64 = 0;
    loop {
        match f.read(buf) {
            Ok(0) => break,
            Ok(k) => {
                h.update(&buf[..k]);
                n += k as u64;
                // Never read past the pinned size: a file growing under us is a mismatch, not a hang.
                if n > e.size {
                    return Outcome::SizeMismatch { actual: n };
                }
            }
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(err) => return Outcome::Unreadable(format!("{}: {err}", e.path)),
        }
    }
    if n != e.size {
        return Outcome::SizeMismatch { actual: n };
    }
    let actual = hex::encode(h.finalize());
    if actual == e.sha256 {
        Outcome::Ok
    } else {
        Outcome::DigestMismatch { actual }
    }
}

/// Check every artifact; results are in `items` order. `full`: hash, else
/// sizes only. `threads` 0 means one per available core.
pub fn check_all(root: &Path, items: &[Expected], full: bool, threads: usize) -> Vec<Outcome> {
    let mut order: Vec<usize> = (0..items.len()).collect();
    // Largest first: the longest hash starts at once, the small ones fill in.
    order.sort_by(|a, b| items[*b].size.cmp(&items[*a].size));
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let workers = if threads == 0 { cores } else { threads }.clamp(1, items.len().max(1));
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Outcome>>> = Mutex::new(vec![None; items.len()]);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                let mut buf = vec![0u8; BUF_BYTES];
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&i) = order.get(k) else { break };
                    let o = check_one(root, &items[i], full, &mut buf);
                    if let Ok(mut r) = results.lock() {
                        r[i] = Some(o);
                    }
                }
            });
        }
    });
    results.into_inner().unwrap_or_default().into_iter().map(|o| o.unwrap_or(Outcome::Unreadable("not checked".into()))).collect()
}
