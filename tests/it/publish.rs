//! `publish`: all or nothing. Names the store would hold under another key
//! are refused before any upload, and a failure at any upload leaves the
//! prefix empty so the retry succeeds.

use std::collections::BTreeSet;

use std::path::{Path, PathBuf};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use proptest::prelude::*;

use bundlegate::adapters::env::EnvSnapshot;
use bundlegate::app::ctx::Ctx;
use futures::StreamExt;
use object_store::memory::InMemory;
use object_store::path::Path as OPath;
use object_store::{
    GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore, PutMultipartOptions, PutOptions,
    PutPayload, PutResult, UploadPart,
};

use crate::support::*;

const TO: &str = "s3://models/llm-scratch/v3/";

const KEY_PREFIX: &str = "models/llm-scratch/v3";

/// `object_store`'s in-memory store whose `fail_at`-th write (a PUT, a
/// multipart start, part or completion; counted from 1) fails, and every
/// write after it when `sticky` (the store stays down).
#[derive(Debug)]
struct FailingStore {
    inner: Arc<InMemory>,
    writes: Arc<AtomicUsize>,
    fail_at: usize,
    sticky: bool,
}

impl std::fmt::Display for FailingStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FailingStore({})", self.fail_at)
    }
}

fn should_fail(writes: &AtomicUsize, fail_at: usize, sticky: bool) -> object_store::Result<()> {
    let n = writes.fetch_add(1, Ordering::SeqCst) + 1;
    if n == fail_at || (sticky && n > fail_at) {
        return Err(object_store::Error::Generic {
            store: "failing",
            source: format!("injected failure at write {n}").into(),
        });
    }
    Ok(())
}

#[derive(Debug)]
struct FailingUpload {
    inner: Box<dyn MultipartUpload>,
    writes: Arc<AtomicUsize>,
    fail_at: usize,
    sticky: bool,
}

#[async_trait::async_trait]
impl MultipartUpload for FailingUpload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        match should_fail(&self.writes, self.fail_at, self.sticky) {
            Ok(()) => self.inner.put_part(data),
            Err(e) => Box::pin(async move { Err(e) }),
        }
    }
    async fn complete(&mut self) -> object_store::Result<PutResult> {
        should_fail(&self.writes, self.fail_at, self.sticky)?;
        self.inner.complete().await
    }
    async fn abort(&mut self) -> object_store::Result<()> {
        self.inner.abort().await
    }
}

#[async_trait::async_trait]
impl ObjectStore for FailingStore {
    async fn put_opts(
        &self,
        location: &OPath,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        should_fail(&self.writes, self.fail_at, self.sticky)?;
        self.inner.put_opts(location, payload, opts).await
    }
    async fn put_multipart_opts(
        &self,
        location: &OPath,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        should_fail(&self.writes, self.fail_at, self.sticky)?;
        let inner = self.inner.put_multipart_opts(location, opts).await?;
        Ok(Box::new(FailingUpload { inner, writes: self.writes.clone(), fail_at: self.fail_at, sticky: self.sticky }))
    }
    async fn get_opts(&self, location: &OPath, options: GetOptions) -> object_store::Result<GetResult> {
        self.inner.get_opts(location, options).await
    }
    fn delete_stream(
        &self,
        locations: futures::stream::BoxStream<'static, object_store::Result<OPath>>,
    ) -> futures::stream::BoxStream<'static, object_store::Result<OPath>> {
        self.inner.delete_stream(locations)
    }
    fn list(&self, prefix: Option<&OPath>) -> futures::stream::BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list(prefix)
    }
    async fn list_with_delimiter(&self, prefix: Option<&OPath>) -> object_store::Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }
    async fn copy_opts(
        &self,
        from: &OPath,
        to: &OPath,
        options: object_store::CopyOptions,
    ) -> object_store::Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

/// Every key under the release prefix, relative to it.
fn keys(rt: &tokio::runtime::Runtime, mem: &InMemory) -> BTreeSet<String> {
    rt.block_on(async {
        let mut out = BTreeSet::new();
        let mut s = mem.list(Some(&OPath::from(KEY_PREFIX)));
        while let Some(m) = s.next().await {
            out.insert(m.unwrap().location.as_ref().trim_start_matches(KEY_PREFIX).trim_start_matches('/').to_string());
        }
        out
    })
}

fn publish(ex: &Example, store: Arc<dyn ObjectStore>, dir: &Path) -> anyhow::Result<bundlegate::report::StepReport> {
    let ctx = Ctx::new(EnvSnapshot::default()).with_store(store);
    let rt = ctx.runtime()?;
    rt.block_on(bundlegate::app::publish::publish(&ctx, dir, TO, &ex.v2(), 4))
}

/// Files of the given sizes in a fresh folder, named `names`.
fn folder(names: &[PathBuf], sizes: &[usize]) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for (i, (n, size)) in names.iter().zip(sizes).enumerate() {
        let p = d.path().join(n);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, (0..*size).map(|k| (k + i) as u8).collect::<Vec<_>>()).unwrap();
    }
    d
}

/// A path segment the store may or may not hold faithfully: plain names,
/// characters `object_store` percent-encodes, `.`/`..`, trailing dots and
/// whitespace, decomposed Unicode, invalid UTF-8.
fn segment() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        4 => "[a-z0-9_-]{1,6}".prop_map(|s| s.into_bytes()),
        1 => prop::sample::select(vec!["%", "#", "[", "]", "{", "}", "^", "~", "`", "|", "<", ">", "\"", "\\", "*", "?", " ", ".", "é", "e\u{301}", "\u{7f}", "\t", "+", "=", "@"]).prop_map(|s| s.as_bytes().to_vec()),
        1 => Just(vec![0xffu8]),
    ];
    prop_oneof![
        8 => prop::collection::vec(piece, 1..4).prop_map(|v| v.concat()),
        1 => Just(b".".to_vec()),
        1 => Just(b"..".to_vec()),
    ]
}

fn os_path(segs: &[Vec<u8>]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    segs.iter().map(|s| std::ffi::OsStr::from_bytes(s)).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    /// A folder holding a generated name beside a plain one: publish either
    /// refuses before anything is written (the prefix stays empty and the
    /// error names the file), or every key the store lists is exactly the
    /// local name, and the bundle records exactly those names.
    #[test]
    fn publish_never_stores_a_name_under_another_key(segs in prop::collection::vec(segment(), 1..3)) {
        let name = os_path(&segs);
        // Names the folder itself cannot hold ("." or ".." as a file) are not this class.
        prop_assume!(name.file_name().is_some() && !segs.iter().any(|s| s == b"." || s == b".."));
        let dir = folder(&[PathBuf::from("config.json"), name.clone()], &[10, 20]);
        let ex = Example::new();
        let mem = Arc::new(InMemory::new());
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        match publish(&ex, mem.clone(), dir.path()) {
            Err(e) => {
                let listed = keys(&rt, &mem);
                prop_assert!(listed.is_empty(), "refused ({e:#}) after writing {listed:?}");
                prop_assert!(format!("{e:#}").contains("refusing to publish"), "{e:#}");
            }
            Ok(step) => {
                let want: BTreeSet<String> = ["config.json".to_string(), name.to_str().unwrap().to_string()].into();
                prop_assert_eq!(&keys(&rt, &mem), &want, "the store holds other keys than the local names");
                let recorded: BTreeSet<String> = step.data["artifacts"].as_array().unwrap().iter().map(|a| a["path"].as_str().unwrap().to_string()).collect();
                prop_assert_eq!(&recorded, &want);
            }
        }
    }

    /// A folder of 1–6 files (one of them multipart-sized, sometimes) and a
    /// store whose k-th write fails (once, or from then on): publish fails
    /// leaving the prefix empty (or, when no write failed, succeeds
    /// complete), and the retry on a working store succeeds with every file.
    #[test]
    fn publish_failing_at_any_write_leaves_nothing_and_the_retry_succeeds(sizes in prop::collection::vec(0usize..3000, 1..6), big in prop::bool::weighted(0.15), fail_at in 1usize..12, sticky in any::<bool>()) {
        let mut sizes = sizes;
        if big {
            sizes[0] = 17 << 20;
        }
        let names: Vec<PathBuf> = (0..sizes.len()).map(|i| PathBuf::from(format!("shard-{i}.bin"))).collect();
        let dir = folder(&names, &sizes);
        let ex = Example::new();
        let mem = Arc::new(InMemory::new());
        let writes = Arc::new(AtomicUsize::new(0));
        let failing = Arc::new(FailingStore { inner: mem.clone(), writes: writes.clone(), fail_at, sticky });
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let all: BTreeSet<String> = names.iter().map(|n| n.to_str().unwrap().to_string()).collect();
        match publish(&ex, failing, dir.path()) {
            Ok(_) => {
                prop_assert!(writes.load(Ordering::SeqCst) < fail_at, "publish succeeded although write {fail_at} failed");
                prop_assert_eq!(&keys(&rt, &mem), &all);
            }
            Err(e) => {
                let left = keys(&rt, &mem);
                prop_assert!(left.is_empty(), "a failed publish ({e:#}) left {left:?} under the prefix");
                let step = publish(&ex, mem.clone(), dir.path());
                prop_assert!(step.is_ok(), "the retry failed: {:#}", step.err().unwrap());
                prop_assert_eq!(&keys(&rt, &mem), &all);
            }
        }
    }
}
