//! A model in an OCI registry, judged from its manifest first: a **raw**
//! layer's digest *is* its file's sha256 and its size the file's size, so
//! the manifest alone (fetched by its digest and hashed to it by the
//! adapter) lists and hashes every raw file without reading a blob byte.
//! Files inside archive layers (tar, tar+gzip, tar+zstd: a modelcar image,
//! a ModelPack folder layer) need the layer streamed and walked; until the
//! adapter does that, an artifact that is not a raw layer of an artifact
//! with archive layers is NOT CHECKED (UNREADABLE), never MISSING: the
//! evidence does not show it absent. The rows and verdicts are the one
//! judgment of `super::evaluate`, the same as for a bucket.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::{HashOutcome, Listed, ReadFailure};
use crate::bundle::{self, Artifact};
use crate::diag::{Code, Diagnostic};

/// The OCI image manifest media type (what a ModelPack artifact uses too).
pub const IMAGE_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
/// A ModelPack model's `artifactType`.
pub const MODELPACK_ARTIFACT: &str = "application/vnd.cncf.model.manifest.v1+json";
/// A ModelPack model's config media type.
pub const MODELPACK_CONFIG: &str = "application/vnd.cncf.model.config.v1+json";
/// The layer annotation naming the file (or folder, for an archive) a layer holds.
pub const FILEPATH: &str = "org.cncf.model.filepath";
/// Registries cap manifests at a few MiB (Distribution: 4 MiB).
pub const MAX_MANIFEST_BYTES: usize = 4 << 20;

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    pub media_type: String,
    pub digest: String,
    pub size: u64,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub schema_version: u32,
    #[serde(default)]
    pub media_type: Option<String>,
    #[serde(default)]
    pub artifact_type: Option<String>,
    pub config: Descriptor,
    #[serde(default)]
    pub layers: Vec<Descriptor>,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
}

/// What kind of model artifact a manifest is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    ModelPack,
    KitOps,
    /// A container image (a modelcar): files are inside its layers.
    Image,
}

/// How a layer holds its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Form {
    /// One file, as is: the layer's digest is the file's sha256.
    Raw,
    Tar,
    TarGzip,
    TarZstd,
    /// A media type bundlegate does not read.
    Other(String),
}

impl Manifest {
    pub fn kind(&self) -> Kind {
        if self.artifact_type.as_deref() == Some(MODELPACK_ARTIFACT) || self.config.media_type == MODELPACK_CONFIG {
            Kind::ModelPack
        } else if self.config.media_type.starts_with("application/vnd.kitops.modelkit.") {
            Kind::KitOps
        } else {
            Kind::Image
        }
    }
}

impl Descriptor {
    /// The file (or folder, for an archive layer) the layer holds, as its
    /// annotation names it.
    pub fn filepath(&self) -> Option<&str> {
        self.annotations.get(FILEPATH).map(String::as_str).filter(|p| !p.is_empty())
    }

    /// How the layer holds its bytes: ModelPack's `…v1.raw|tar|tar+gzip|tar+zstd`,
    /// KitOps' same suffixes, an image's `tar`, `tar+gzip`, `tar+zstd`.
    pub fn form(&self) -> Form {
        let t = self.media_type.as_str();
        let suffix = t.rsplit_once(".v1.").map(|(_, s)| s).unwrap_or(t);
        match suffix {
            "raw" => Form::Raw,
            "tar" | "application/vnd.oci.image.layer.v1.tar" => Form::Tar,
            "tar+gzip" | "application/vnd.oci.image.layer.v1.tar+gzip" => Form::TarGzip,
            "tar+zstd" | "application/vnd.oci.image.layer.v1.tar+zstd" => Form::TarZstd,
            _ if t == "application/vnd.docker.image.rootfs.diff.tar.gzip" => Form::TarGzip,
            _ => Form::Other(t.to_string()),
        }
    }
}

/// One entry of an archive layer as the adapter walked it: a regular
/// file's size and sha256 (its bytes hashed as they streamed by), or what
/// else it is. Paths are as the tar header names them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub path: String,
    pub kind: EntryKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryKind {
    File {
        size: u64,
        sha256: String,
    },
    Dir,
    /// A symbolic (`hard: false`) or hard link, never followed.
    Link {
        hard: bool,
        target: String,
    },
    /// A device, FIFO or other entry that holds no file bytes.
    Special(String),
}

/// What walking one archive layer found: its entries, or why it could not
/// be read (the registry stopped mid-blob, the bytes are not the layer's).
pub type Walked = Result<Vec<Entry>, ReadFailure>;

/// At most this many entries are kept per layer: a layer of more is
/// refused rather than held in memory.
pub const MAX_LAYER_ENTRIES: usize = 1_000_000;

/// Where the model lives inside an archive: a modelcar (plain image) holds
/// it under `/models` (KServe's modelcar contract); a ModelPack or KitOps
/// archive layer holds paths relative to the model's root.
pub fn model_root(k: Kind) -> &'static str {
    match k {
        Kind::Image => "models/",
        Kind::ModelPack | Kind::KitOps => "",
    }
}

/// A tar header's path, as one layer applies it: `./` and `/` in front
/// and `/` behind dropped.
pub fn entry_path(p: &str) -> &str {
    let mut p = p;
    loop {
        let q = p.trim_start_matches('/').trim_start_matches("./");
        if q == p {
            break;
        }
        p = q;
    }
    p.trim_end_matches('/')
}

const WHITEOUT: &str = ".wh.";
const OPAQUE: &str = ".wh..wh..opq";

/// Whether the adapter keeps an entry (normalized path): every whiteout
/// (it may delete the model's folder), and what is under the model's root.
pub fn entry_wanted(root: &str, path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.starts_with(WHITEOUT) || root.is_empty() || path.starts_with(root)
}

/// The manifest as the verify judgment reads a store: a listing, the
/// hashes known (from the manifest for raw layers, from the walk for
/// archive layers), and what could not be read.
#[derive(Debug, Default)]
pub struct FromManifest {
    pub listing: Vec<Listed>,
    pub hashes: BTreeMap<String, HashOutcome>,
    /// Archive layers (their digest and form), walked or not.
    pub archives: Vec<(String, Form)>,
    /// Raw layers without a usable file path (no annotation, or one that
    /// leaves the model): named, never dropped.
    pub unnamed: Vec<String>,
    /// Entries of archive layers that are not files (links, devices) or
    /// whose path leaves the model: BG108, never read.
    pub refused: Vec<super::Refused>,
    /// Paths held by raw layers (their digest is their sha256).
    pub raw: std::collections::BTreeSet<String>,
    /// Paths hashed inside an archive layer, and that layer's digest.
    pub in_layer: BTreeMap<String, String>,
    /// Paths whose raw layer the manifest lists but the registry does not
    /// have (404): MISSING.
    pub blobs_gone: std::collections::BTreeSet<String>,
    /// The registry has no manifest of the pinned digest (404): every
    /// file is MISSING.
    pub manifest_gone: bool,
}

/// What a path holds after the layers so far.
#[derive(Debug, Clone)]
enum Item {
    /// Size, digest (the blob's, for a raw layer; the file's for an entry)
    /// and the archive layer it came from (none for a raw layer).
    File {
        size: u64,
        sha256: String,
        layer: Option<String>,
    },
    Refused(String),
}

/// The path a full archive path has in the model, if it is in the model.
fn in_model<'a>(root: &str, full: &'a str) -> Option<&'a str> {
    full.strip_prefix(root).filter(|p| !p.is_empty())
}

/// Apply one walked layer over the paths so far: its whiteouts delete from
/// the layers below (a `.wh.NAME` the name and all under it, `.wh..wh..opq`
/// all of its folder), then its entries override.
fn apply_layer(state: &mut BTreeMap<String, Item>, root: &str, layer: &str, entries: &[Entry]) -> Vec<String> {
    let mut escaping = Vec::new();
    for e in entries {
        let path = entry_path(&e.path);
        let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
        let gone = if name == OPAQUE {
            dir.to_string()
        } else if let Some(n) = name.strip_prefix(WHITEOUT) {
            if dir.is_empty() {
                n.to_string()
            } else {
                format!("{dir}/{n}")
            }
        } else {
            continue;
        };
        // A whiteout of the model's folder or above deletes every path.
        if gone.is_empty() || root.starts_with(&format!("{gone}/")) {
            state.clear();
        } else if let Some(g) = in_model(root, &gone) {
            state.retain(|k, _| k != g && !k.starts_with(&format!("{g}/")));
        }
    }
    for e in entries {
        let full = entry_path(&e.path);
        let name = full.rsplit('/').next().unwrap_or(full);
        if name.starts_with(WHITEOUT) {
            continue;
        }
        let Some(path) = in_model(root, full) else { continue };
        if bundle::path_escapes(path) {
            escaping.push(e.path.clone());
            continue;
        }
        let item = match &e.kind {
            EntryKind::File { size, sha256 } => {
                Item::File { size: *size, sha256: sha256.clone(), layer: Some(layer.to_string()) }
            }
            // A folder replaces a file of its name; its files are their own entries.
            EntryKind::Dir => {
                state.remove(path);
                continue;
            }
            EntryKind::Link { hard, target } => Item::Refused(format!(
                "a {} link to `{target}` in layer {layer} (links are not followed)",
                if *hard { "hard" } else { "symbolic" }
            )),
            EntryKind::Special(what) => Item::Refused(format!("{what} in layer {layer}")),
        };
        state.insert(path.to_string(), item);
    }
    escaping
}

/// Read a manifest and its walked archive layers (by layer digest) as a
/// listing, layer by layer in the manifest's order: a later layer
/// overrides an earlier one for the same path, as in an image.
/// `manifest_digest` names where it came from; `artifacts` are the
/// bundle's (a file not found while some layer could not be read is NOT
/// CHECKED, never MISSING).
pub fn from_manifest(
    m: &Manifest,
    manifest_digest: &str,
    artifacts: &[Artifact],
    walked: &BTreeMap<String, Walked>,
) -> FromManifest {
    let mut out = FromManifest::default();
    let root = model_root(m.kind());
    let mut state: BTreeMap<String, Item> = BTreeMap::new();
    let mut unread: Vec<String> = Vec::new();
    for layer in &m.layers {
        match layer.form() {
            Form::Raw => match layer.filepath() {
                Some(p) if !bundle::path_escapes(p) => {
                    let sha256 = layer.digest.trim_start_matches("sha256:").to_string();
                    state.insert(p.to_string(), Item::File { size: layer.size, sha256, layer: None });
                }
                _ => out.unnamed.push(layer.digest.clone()),
            },
            form => {
                out.archives.push((layer.digest.clone(), form.clone()));
                match (form, walked.get(&layer.digest)) {
                    (Form::Other(t), _) => unread.push(format!("{} (media type `{t}`, not read)", layer.digest)),
                    (_, Some(Ok(entries))) => {
                        for e in apply_layer(&mut state, root, &layer.digest, entries) {
                            out.refused.push(super::Refused {
                                key: e,
                                why: format!("a path leaving the model in layer {}", layer.digest),
                            });
                        }
                    }
                    (_, Some(Err(f))) => unread.push(format!("{}: {f}", layer.digest)),
                    (_, None) => unread.push(format!("{} (not read)", layer.digest)),
                }
            }
        }
    }
    for (path, item) in state {
        match item {
            Item::File { size, sha256, layer } => {
                let e_tag = match &layer {
                    None => {
                        out.raw.insert(path.clone());
                        format!("sha256:{sha256}")
                    }
                    Some(l) => {
                        out.in_layer.insert(path.clone(), l.clone());
                        l.clone()
                    }
                };
                out.listing.push(Listed {
                    key: path.clone(),
                    size,
                    e_tag: Some(e_tag),
                    version: Some(manifest_digest.to_string()),
                    last_modified: String::new(),
                });
                out.hashes.insert(path, HashOutcome::Hashed { sha256, retries: Vec::new() });
            }
            Item::Refused(why) => out.refused.push(super::Refused { key: path, why }),
        }
    }
    if !unread.is_empty() {
        let listed: std::collections::BTreeSet<String> =
            out.listing.iter().map(|o| o.key.clone()).chain(out.refused.iter().map(|r| r.key.clone())).collect();
        for a in artifacts.iter().filter(|a| !listed.contains(&a.path)) {
            // Listed at the bundle's own size, so the judgment reaches the
            // hash, which says why it was not read.
            out.listing.push(Listed {
                key: a.path.clone(),
                size: a.size.unwrap_or(0),
                e_tag: None,
                version: Some(manifest_digest.to_string()),
                last_modified: String::new(),
            });
            let why = format!(
                "not found in the layers of {manifest_digest} that were read; it may be in a layer that could not be: {}",
                unread.join("; ")
            );
            out.hashes.insert(
                a.path.clone(),
                HashOutcome::Failed { failure: ReadFailure::NotChecked(why), retries: Vec::new() },
            );
        }
    }
    out
}

/// The archive layers to walk (digest, size, form), in the manifest's
/// order; layers of a media type bundlegate does not read are left out.
pub fn layers_to_walk(m: &Manifest) -> Vec<(String, u64, Form)> {
    m.layers
        .iter()
        .filter(|l| matches!(l.form(), Form::Tar | Form::TarGzip | Form::TarZstd))
        .map(|l| (l.digest.clone(), l.size, l.form()))
        .collect()
}

/// What a `HEAD` of a raw layer's blob found: its size, or why not.
pub type Head = Result<u64, ReadFailure>;

/// The blobs to `HEAD` (path, digest, size): raw layers of the bundle's
/// pinned artifacts whose size and digest in the manifest are the bundle's.
/// The rest are judged from the manifest alone (a mismatch needs no read).
pub fn blobs_to_head(l: &bundle::Loaded, f: &FromManifest) -> Vec<(String, String, u64)> {
    super::to_hash(l, &f.listing)
        .into_iter()
        .filter_map(|o| {
            f.raw.contains(&o.key).then_some(())?;
            let a = l.bundle.spec.model.artifacts.iter().find(|a| a.path == o.key)?;
            let digest = o.e_tag.clone()?;
            let same = matches!(f.hashes.get(&o.key), Some(HashOutcome::Hashed { sha256, .. }) if Some(sha256) == a.sha256.as_ref());
            same.then(|| (o.key.clone(), digest, o.size))
        })
        .collect()
}

/// Fold the `HEAD`s in: a blob present at the manifest's size keeps the
/// manifest's hash; absent, refused, of another size or not asked, it is a
/// read failure naming it (never OK). Returns the paths found present.
pub fn apply_heads(f: &mut FromManifest, heads: Vec<(String, u64, Head)>) -> std::collections::BTreeSet<String> {
    let mut present = std::collections::BTreeSet::new();
    for (path, size, head) in heads {
        let failure = match head {
            Ok(n) if n == size => {
                present.insert(path);
                continue;
            }
            Ok(n) => ReadFailure::Other(format!("its blob is {n} bytes in the registry, the manifest says {size}")),
            Err(ReadFailure::NotFound) => {
                blob_gone(f, path);
                continue;
            }
            Err(e) => e,
        };
        f.hashes.insert(path, HashOutcome::Failed { failure, retries: Vec::new() });
    }
    present
}

/// A raw layer's blob the registry does not have: the file is not in the
/// model (MISSING), and its row says why.
fn blob_gone(f: &mut FromManifest, path: String) {
    f.listing.retain(|o| o.key != path);
    f.hashes.remove(&path);
    f.blobs_gone.insert(path);
}

/// The registry has no manifest of the pinned digest: nothing is in the
/// model, every file MISSING.
pub fn manifest_gone() -> FromManifest {
    FromManifest { manifest_gone: true, ..FromManifest::default() }
}

/// A bundle pinning `repo:tag@digest` whose tag now names another manifest
/// (`now`: its digest, `None` for no manifest, `Err` when the tag could not
/// be read) is reported as a note: the digest rules, the verdict does not
/// change.
pub fn tag_moved(uri: &str, tag: &str, pinned: &str, now: &Result<Option<String>, String>) -> Option<Diagnostic> {
    let what = match now {
        Ok(Some(d)) if d == pinned => return None,
        Ok(Some(d)) => format!("now names manifest {d}"),
        Ok(None) => "now names no manifest".to_string(),
        Err(why) => format!("could not be read ({why})"),
    };
    Some(Diagnostic::new(
        Code::OciTagMoved,
        format!("`{uri}`: the tag `{tag}` {what}, not the pinned {pinned}; the digest rules, so the release read is the pinned one"),
    ))
}

/// What `--deep` read of a raw layer's blob: the sha256 of its bytes, or
/// why not.
pub type Reread = Result<String, ReadFailure>;

/// Fold the re-reads in (`--deep`): the blob's own hash replaces the
/// manifest's, so bytes changed in the registry's storage are a
/// DIGEST-MISMATCH; a blob that could not be read is that failure. Returns
/// the paths read whole.
pub fn apply_rereads(f: &mut FromManifest, reads: Vec<(String, Reread)>) -> std::collections::BTreeSet<String> {
    let mut read = std::collections::BTreeSet::new();
    for (path, r) in reads {
        let outcome = match r {
            Ok(sha256) => {
                read.insert(path.clone());
                HashOutcome::Hashed { sha256, retries: Vec::new() }
            }
            Err(ReadFailure::NotFound) => {
                blob_gone(f, path);
                continue;
            }
            Err(failure) => HashOutcome::Failed { failure, retries: Vec::new() },
        };
        f.hashes.insert(path, outcome);
    }
    read
}

/// Say on each OK row where its hash came from: a raw layer's digest in the
/// manifest with the blob found present (no byte read), the blob read
/// whole (`--deep`), or the file hashed inside an archive layer.
pub fn note_manifest_rows(
    rows: &mut [super::Row],
    f: &FromManifest,
    present: &std::collections::BTreeSet<String>,
    read: &std::collections::BTreeSet<String>,
) {
    for r in rows.iter_mut().filter(|r| r.status == super::Status::Missing) {
        if f.manifest_gone {
            r.note = "the registry has no manifest of the pinned digest".into();
        } else if f.blobs_gone.contains(&r.path) {
            r.note = "the manifest lists its blob, the registry does not have it".into();
        }
    }
    for r in rows.iter_mut().filter(|r| r.status == super::Status::Ok) {
        if present.contains(&r.path) {
            r.note = "digest from manifest, blob present (not read)".into();
        } else if read.contains(&r.path) {
            r.note = "blob read whole, its sha256 is the manifest's".into();
        } else if let Some(layer) = f.in_layer.get(&r.path) {
            r.note = format!("hashed inside layer {layer}");
        }
    }
}

/// What reading the registry cost beyond the files hashed: the manifest
/// digest, raw blobs found present by `HEAD`, raw blobs read whole
/// (`--deep`), archive layers walked.
pub(crate) struct RegistryRead<'a> {
    pub digest: &'a str,
    pub headed: usize,
    pub read: usize,
    pub walked: usize,
}

/// The verify step of a registry-stored model: the one verify write-up,
/// plus what the registry was asked and what the manifest could not name.
pub(crate) fn step(
    l: &crate::bundle::Loaded,
    ov: &crate::diag::Overrides,
    outcome: super::Outcome,
    extra: Vec<Diagnostic>,
    read: super::Read,
    f: &FromManifest,
    r: &RegistryRead<'_>,
) -> crate::report::StepReport {
    let mut s = super::step(l, ov, outcome, extra, read);
    s.summary.push_str(&format!(
        "; manifest {}: {} blob(s) present by HEAD, {} raw blob(s) read, {} archive layer(s) walked ({} blob bytes read)",
        r.digest, r.headed, r.read, r.walked, read.bytes
    ));
    if f.manifest_gone {
        s.summary.push_str("; the registry has no manifest of that digest: every file MISSING");
    }
    if !f.unnamed.is_empty() {
        s.summary.push_str(&format!("; raw layer(s) without a safe file path: {}", f.unnamed.join(", ")));
    }
    s.data["manifestDigest"] = r.digest.into();
    s.data["blobsHeaded"] = r.headed.into();
    s.data["layersWalked"] = r.walked.into();
    s
}

#[cfg(test)]
mod tests {
    use super::super::{evaluate, Status};
    use super::*;
    use crate::parse::oci::manifest;

    fn loaded(store: &str) -> crate::bundle::Loaded {
        let text = include_str!("../../../examples/llm-scratch/v2/release.yaml");
        let mut l = crate::bundle::parse("r", std::path::Path::new("release.yaml"), text.to_string()).unwrap();
        l.bundle.spec.model.storage_uri = store.into();
        l
    }

    /// The manifest of the example's files as raw ModelPack layers, with
    /// `edit` applied to the layers' JSON.
    fn manifest_of(
        l: &crate::bundle::Loaded,
        extra: &str,
        edit: impl Fn(&str, &str, u64) -> (String, u64),
    ) -> Manifest {
        let layers: Vec<String> = l
            .bundle
            .spec
            .model
            .artifacts
            .iter()
            .map(|a| {
                let (d, size) = edit(&a.path, &format!("sha256:{}", a.sha256.clone().unwrap()), a.size.unwrap());
                format!(
                    r#"{{"mediaType": "application/vnd.cncf.model.weight.v1.raw", "digest": "{d}", "size": {size}, "annotations": {{"org.cncf.model.filepath": "{}"}}}}"#,
                    a.path
                )
            })
            .chain((!extra.is_empty()).then(|| extra.to_string()))
            .collect();
        let text = format!(
            r#"{{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json", "artifactType": "application/vnd.cncf.model.manifest.v1+json",
               "config": {{"mediaType": "application/vnd.cncf.model.config.v1+json", "digest": "sha256:{}", "size": 10}},
               "layers": [{}]}}"#,
            "0".repeat(64),
            layers.join(",")
        );
        manifest("m", text.as_bytes()).unwrap()
    }

    const M: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";

    fn statuses(l: &crate::bundle::Loaded, m: &Manifest, deny_extra: bool) -> Vec<(String, Status)> {
        let f = from_manifest(m, M, &l.bundle.spec.model.artifacts, &BTreeMap::new());
        evaluate(l, &f.listing, &f.hashes, deny_extra).rows.into_iter().map(|r| (r.path, r.status)).collect()
    }

    #[test]
    fn raw_layers_verify_from_the_manifest_alone() {
        let l = loaded("oci://r.io/m@sha256:1111111111111111111111111111111111111111111111111111111111111111");
        let m = manifest_of(&l, "", |_, d, s| (d.to_string(), s));
        assert!(statuses(&l, &m, false).iter().all(|(_, s)| *s == Status::Ok), "{:?}", statuses(&l, &m, false));
        // Another digest, another size, a file left out, a file too many.
        let first = l.bundle.spec.model.artifacts[0].path.clone();
        let second = l.bundle.spec.model.artifacts[1].path.clone();
        let m = manifest_of(&l, "", |p, d, s| {
            if p == first {
                (format!("sha256:{}", "a".repeat(64)), s)
            } else if p == second {
                (d.to_string(), s + 1)
            } else {
                (d.to_string(), s)
            }
        });
        let st = statuses(&l, &m, false);
        assert!(st.contains(&(first.clone(), Status::DigestMismatch)), "{st:?}");
        assert!(st.contains(&(second.clone(), Status::SizeMismatch)), "{st:?}");
        let extra = format!(
            r#"{{"mediaType": "application/vnd.cncf.model.doc.v1.raw", "digest": "sha256:{}", "size": 3, "annotations": {{"org.cncf.model.filepath": "README.md"}}}}"#,
            "b".repeat(64)
        );
        let m = manifest_of(&l, &extra, |_, d, s| (d.to_string(), s));
        let st = statuses(&l, &m, true);
        assert!(st.contains(&("README.md".to_string(), Status::Extra)), "{st:?}");
    }

    /// A file that may be inside an archive layer not read is not shown
    /// absent: NOT CHECKED (UNREADABLE), never MISSING, never OK.
    #[test]
    fn files_inside_archive_layers_are_not_checked_never_missing() {
        let l = loaded("oci://r.io/m@sha256:1111111111111111111111111111111111111111111111111111111111111111");
        let first = l.bundle.spec.model.artifacts[0].path.clone();
        let tar = format!(
            r#"{{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": "sha256:{}", "size": 9}}"#,
            "c".repeat(64)
        );
        // The first artifact is not a raw layer; an image layer is there.
        let m = manifest_of(&l, &tar, |p, d, s| {
            if p == first {
                (format!("sha256:{}", "d".repeat(64)), s)
            } else {
                (d.to_string(), s)
            }
        });
        let mut m = m;
        m.layers.retain(|x| x.filepath() != Some(first.as_str()));
        let f = from_manifest(&m, M, &l.bundle.spec.model.artifacts, &BTreeMap::new());
        assert_eq!(f.archives.len(), 1);
        let st = statuses(&l, &m, false);
        assert!(st.contains(&(first.clone(), Status::Unreadable)), "{st:?}");
        // Without any archive layer the same file is MISSING.
        m.layers.retain(|x| x.form() == Form::Raw);
        let st = statuses(&l, &m, false);
        assert!(st.contains(&(first, Status::Missing)), "{st:?}");
    }

    /// A raw layer whose path leaves the model, or that names none, is kept
    /// aside by digest, never listed under a made-up name.
    #[test]
    fn a_raw_layer_without_a_safe_path_is_named_not_listed() {
        let l = loaded("oci://r.io/m@sha256:1111111111111111111111111111111111111111111111111111111111111111");
        let escaping = format!(
            r#"{{"mediaType": "application/vnd.cncf.model.weight.v1.raw", "digest": "sha256:{}", "size": 3, "annotations": {{"org.cncf.model.filepath": "../etc/passwd"}}}}"#,
            "e".repeat(64)
        );
        let m = manifest_of(&l, &escaping, |_, d, s| (d.to_string(), s));
        let f = from_manifest(&m, M, &l.bundle.spec.model.artifacts, &BTreeMap::new());
        assert_eq!(f.unnamed, vec![format!("sha256:{}", "e".repeat(64))]);
        assert!(f.listing.iter().all(|x| !x.key.contains("..")));
    }

    /// A raw layer is OK only with its blob present at its size: a blob
    /// the registry lacks, or that no one could ask about, is never OK.
    #[test]
    fn a_raw_layer_needs_its_blob_present() {
        let l = loaded("oci://r.io/m@sha256:1111111111111111111111111111111111111111111111111111111111111111");
        let first = l.bundle.spec.model.artifacts[0].path.clone();
        let m = manifest_of(&l, "", |p, d, s| {
            if p == first {
                (format!("sha256:{}", "a".repeat(64)), s)
            } else {
                (d.to_string(), s)
            }
        });
        let mut f = from_manifest(&m, M, &l.bundle.spec.model.artifacts, &BTreeMap::new());
        let todo = blobs_to_head(&l, &f);
        // The mismatching digest is judged from the manifest: no HEAD.
        assert!(todo.iter().all(|(p, _, _)| *p != first));
        assert_eq!(todo.len(), l.bundle.spec.model.artifacts.len() - 1);
        let heads: Vec<_> = todo
            .iter()
            .enumerate()
            .map(|(i, (p, _, s))| {
                let h = match i {
                    0 => Err(ReadFailure::Other("its blob is gone".into())),
                    1 => Err(ReadFailure::Unreachable("connection refused".into())),
                    2 => Err(ReadFailure::NotFound),
                    _ => Ok(*s),
                };
                (p.clone(), *s, h)
            })
            .collect();
        let present = apply_heads(&mut f, heads);
        let mut out = evaluate(&l, &f.listing, &f.hashes, false);
        note_manifest_rows(&mut out.rows, &f, &present, &Default::default());
        let st = |p: &str| out.rows.iter().find(|r| r.path == p).unwrap().clone();
        assert_eq!(st(&first).status, Status::DigestMismatch);
        assert_eq!(st(&todo[0].0).status, Status::Unreadable);
        // The registry stopped answering: BG109, NOT CHECKED.
        assert_eq!(st(&todo[1].0).status, Status::Unreadable);
        assert!(out.diagnostics.iter().any(|d| d.code == crate::diag::Code::ObjectNotChecked), "{:?}", out.diagnostics);
        // A blob the registry does not have (404): MISSING, the row says why.
        assert_eq!(st(&todo[2].0).status, Status::Missing);
        assert!(st(&todo[2].0).note.contains("the registry does not have it"), "{:?}", st(&todo[2].0));
        for (p, _, _) in &todo[3..] {
            assert_eq!(st(p).status, Status::Ok);
            assert!(st(p).note.contains("digest from manifest, blob present"));
        }
    }

    /// No manifest of the pinned digest: every artifact MISSING, noted.
    #[test]
    fn a_manifest_gone_makes_every_file_missing() {
        let l = loaded(&format!("oci://r.io/m@{M}"));
        let f = manifest_gone();
        let mut out = evaluate(&l, &f.listing, &f.hashes, false);
        note_manifest_rows(&mut out.rows, &f, &Default::default(), &Default::default());
        assert_eq!(out.rows.len(), l.bundle.spec.model.artifacts.len());
        for r in &out.rows {
            assert_eq!(r.status, Status::Missing, "{r:?}");
            assert!(r.note.contains("no manifest of the pinned digest"), "{r:?}");
        }
    }

    /// A tag naming the pinned manifest says nothing; one naming another,
    /// none, or unreadable is a note naming both.
    #[test]
    fn a_moved_tag_is_a_note_and_the_digest_rules() {
        let other = format!("sha256:{}", "b".repeat(64));
        assert!(tag_moved("u", "v2", M, &Ok(Some(M.to_string()))).is_none());
        for (now, words) in [
            (Ok(Some(other.clone())), format!("now names manifest {other}")),
            (Ok(None), "now names no manifest".to_string()),
            (Err("timed out".to_string()), "could not be read (timed out)".to_string()),
        ] {
            let d = tag_moved("u", "v2", M, &now).unwrap();
            assert_eq!((d.code, d.severity), (Code::OciTagMoved, crate::diag::Severity::Note));
            assert!(d.message.contains(&words) && d.message.contains(M), "{}", d.message);
        }
    }

    fn file(path: &str, body: &[u8]) -> Entry {
        use sha2::Digest;
        Entry {
            path: path.into(),
            kind: EntryKind::File { size: body.len() as u64, sha256: hex::encode(sha2::Sha256::digest(body)) },
        }
    }

    /// A modelcar: two image layers walked. The later overrides the
    /// earlier, a whiteout deletes from the layers below, files outside
    /// `/models` are not the model's, a link is refused (BG108) and never
    /// followed.
    #[test]
    fn image_layers_override_whiteouts_delete_and_links_are_refused() {
        let l = loaded("oci://r.io/m@sha256:1111111111111111111111111111111111111111111111111111111111111111");
        let arts = &l.bundle.spec.model.artifacts;
        let (a0, a1, a2) = (arts[0].path.clone(), arts[1].path.clone(), arts[2].path.clone());
        let layer = |d: char| format!("sha256:{}", d.to_string().repeat(64));
        let text = format!(
            r#"{{"schemaVersion": 2, "config": {{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": "{}", "size": 2}},
              "layers": [{{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": "{}", "size": 9}},
                         {{"mediaType": "application/vnd.oci.image.layer.v1.tar+zstd", "digest": "{}", "size": 9}}]}}"#,
            layer('0'),
            layer('a'),
            layer('b')
        );
        let m = manifest("m", text.as_bytes()).unwrap();
        assert_eq!(m.kind(), Kind::Image);
        let bodies = ["x".as_bytes(), b"y", b"z"];
        let lower = vec![
            file("./etc/passwd", b"root"),
            Entry { path: "models/".into(), kind: EntryKind::Dir },
            file(&format!("./models/{a0}"), b"wrong"),
            file(&format!("models/{a1}"), bodies[1]),
            file(&format!("models/{a2}"), bodies[2]),
        ];
        let upper = vec![
            file(&format!("models/{a0}"), bodies[0]),
            file(&format!("models/.wh.{a2}"), b""),
            Entry { path: "models/tok".into(), kind: EntryKind::Link { hard: false, target: "/etc/passwd".into() } },
            Entry { path: "models/dev".into(), kind: EntryKind::Special("a character device".into()) },
        ];
        let walked: BTreeMap<String, Walked> = [(layer('a'), Ok(lower)), (layer('b'), Ok(upper))].into();
        let f = from_manifest(&m, M, arts, &walked);
        let keys: Vec<&str> = f.listing.iter().map(|o| o.key.as_str()).collect();
        assert_eq!(keys, vec![a0.as_str(), a1.as_str()], "the later layer overrides, the whiteout deletes");
        let sha = |p: &str| match &f.hashes[p] {
            HashOutcome::Hashed { sha256, .. } => sha256.clone(),
            o => panic!("{o:?}"),
        };
        use sha2::Digest;
        assert_eq!(sha(&a0), hex::encode(sha2::Sha256::digest(bodies[0])));
        assert_eq!(f.in_layer[&a0], layer('b'));
        assert_eq!(f.in_layer[&a1], layer('a'));
        let refused: Vec<(&str, &str)> = f.refused.iter().map(|r| (r.key.as_str(), r.why.as_str())).collect();
        assert!(
            refused.iter().any(|(k, w)| *k == "tok" && w.contains("symbolic link to `/etc/passwd`")),
            "{refused:?}"
        );
        assert!(refused.iter().any(|(k, w)| *k == "dev" && w.contains("character device")), "{refused:?}");
        // An opaque whiteout of the folder, or one of `models` itself, empties the model.
        for wh in ["models/.wh..wh..opq", ".wh.models"] {
            let walked: BTreeMap<String, Walked> = [
                (layer('a'), Ok(vec![file(&format!("models/{a1}"), b"y")])),
                (layer('b'), Ok(vec![file(wh, b""), file(&format!("models/{a0}"), b"x")])),
            ]
            .into();
            let f = from_manifest(&m, M, arts, &walked);
            let keys: Vec<&str> = f.listing.iter().map(|o| o.key.as_str()).collect();
            // The opaque whiteout hides what is below, not the layer's own files.
            assert_eq!(keys, vec![a0.as_str()], "{wh}");
        }
        // A layer that could not be read: what is not found is NOT CHECKED, not MISSING.
        let walked: BTreeMap<String, Walked> = [
            (layer('a'), Ok(vec![file(&format!("models/{a1}"), b"y")])),
            (layer('b'), Err(ReadFailure::Unreachable("connection reset".into()))),
        ]
        .into();
        let f = from_manifest(&m, M, arts, &walked);
        assert!(
            matches!(&f.hashes[&a0], HashOutcome::Failed { failure: ReadFailure::NotChecked(w), .. } if w.contains("connection reset")),
            "{:?}",
            f.hashes[&a0]
        );
        assert!(matches!(&f.hashes[&a1], HashOutcome::Hashed { .. }));
    }

    /// A ModelPack archive layer holds paths from the model's root; one
    /// that leaves it is refused, never listed.
    #[test]
    fn modelpack_archive_entries_are_model_paths_and_escapes_are_refused() {
        let l = loaded("oci://r.io/m@sha256:1111111111111111111111111111111111111111111111111111111111111111");
        let arts = &l.bundle.spec.model.artifacts;
        let tar = format!(
            r#"{{"mediaType": "application/vnd.cncf.model.weight.v1.tar+zstd", "digest": "sha256:{}", "size": 9, "annotations": {{"org.cncf.model.filepath": "x"}}}}"#,
            "c".repeat(64)
        );
        let m = manifest_of(&l, &tar, |_, d, s| (d.to_string(), s));
        let walked: BTreeMap<String, Walked> =
            [(format!("sha256:{}", "c".repeat(64)), Ok(vec![file("configs/a.json", b"{}"), file("../up", b"!")]))]
                .into();
        let f = from_manifest(&m, M, arts, &walked);
        assert!(f.listing.iter().any(|o| o.key == "configs/a.json"));
        assert!(f.refused.iter().any(|r| r.key == "../up" && r.why.contains("leaving the model")), "{:?}", f.refused);
        // Verify makes the refusal a finding: store-object-escapes (BG108).
        let out = super::super::evaluate_with_refused(&l, &f.listing, &f.refused, &BTreeMap::new(), false);
        assert!(
            out.diagnostics
                .iter()
                .any(|d| d.code == crate::diag::Code::StoreObjectEscapes && d.message.contains("../up")),
            "{:?}",
            out.diagnostics
        );
        assert_eq!(entry_path("./././models/a/"), "models/a");
        assert!(entry_wanted("models/", "etc/.wh.x") && !entry_wanted("models/", "etc/passwd"));
        assert!(entry_wanted("", "etc/passwd"));
    }

    /// `--deep`: the blob's own hash replaces the manifest's; a blob that
    /// could not be read is that failure, never OK.
    #[test]
    fn deep_rereads_replace_the_manifest_hash() {
        let l = loaded("oci://r.io/m@sha256:1111111111111111111111111111111111111111111111111111111111111111");
        let arts = &l.bundle.spec.model.artifacts;
        let m = manifest_of(&l, "", |_, d, s| (d.to_string(), s));
        let mut f = from_manifest(&m, M, arts, &BTreeMap::new());
        let reads = vec![
            (arts[0].path.clone(), Ok("f".repeat(64))),
            (arts[1].path.clone(), Err(ReadFailure::Truncated { expected: 9, got: 3 })),
            (arts[2].path.clone(), Ok(arts[2].sha256.clone().unwrap())),
        ];
        let read = apply_rereads(&mut f, reads);
        let mut out = evaluate(&l, &f.listing, &f.hashes, false);
        note_manifest_rows(&mut out.rows, &f, &Default::default(), &read);
        let st = |p: &str| out.rows.iter().find(|r| r.path == p).unwrap().clone();
        assert_eq!(st(&arts[0].path).status, Status::DigestMismatch);
        assert_eq!(st(&arts[1].path).status, Status::Unreadable);
        assert_eq!(st(&arts[2].path).status, Status::Ok);
        assert!(st(&arts[2].path).note.contains("blob read whole"));
    }
}
