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

/// The manifest as the verify judgment reads a store: a listing, the
/// hashes known without reading a byte, and the layers left to stream.
#[derive(Debug, Default)]
pub struct FromManifest {
    pub listing: Vec<Listed>,
    pub hashes: BTreeMap<String, HashOutcome>,
    /// Archive layers (their digest and form) whose files are not read here.
    pub archives: Vec<(String, Form)>,
    /// Raw layers without a usable file path (no annotation, or one that
    /// leaves the model): named, never dropped.
    pub unnamed: Vec<String>,
}

/// Read a manifest as a listing. `manifest_digest` names where it came from
/// in the notes; `artifacts` are the bundle's (for the archive rule).
pub fn from_manifest(m: &Manifest, manifest_digest: &str, artifacts: &[Artifact]) -> FromManifest {
    let mut out = FromManifest::default();
    // Later layers override earlier ones for the same path, as in an image.
    let mut raw: BTreeMap<String, (u64, String)> = BTreeMap::new();
    for layer in &m.layers {
        match layer.form() {
            Form::Raw => match layer.filepath() {
                Some(p) if !bundle::path_escapes(p) => {
                    raw.insert(p.to_string(), (layer.size, layer.digest.clone()));
                }
                _ => out.unnamed.push(layer.digest.clone()),
            },
            form => out.archives.push((layer.digest.clone(), form)),
        }
    }
    for (path, (size, digest)) in &raw {
        out.listing.push(Listed {
            key: path.clone(),
            size: *size,
            e_tag: Some(digest.clone()),
            version: Some(manifest_digest.to_string()),
            last_modified: String::new(),
        });
        let sha256 = digest.trim_start_matches("sha256:").to_string();
        out.hashes.insert(path.clone(), HashOutcome::Hashed { sha256, retries: Vec::new() });
    }
    if !out.archives.is_empty() {
        for a in artifacts.iter().filter(|a| !raw.contains_key(&a.path)) {
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
                "not a raw layer of {manifest_digest}: it may be inside one of its {} archive layer(s), which bundlegate does not read yet",
                out.archives.len()
            );
            out.hashes.insert(
                a.path.clone(),
                HashOutcome::Failed { failure: ReadFailure::NotChecked(why), retries: Vec::new() },
            );
        }
    }
    out
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
            Err(e) => e,
        };
        f.hashes.insert(path, HashOutcome::Failed { failure, retries: Vec::new() });
    }
    present
}

/// Say on each OK row that its digest is the manifest's and its blob was
/// found present: no byte of it was read.
pub fn note_manifest_rows(rows: &mut [super::Row], present: &std::collections::BTreeSet<String>) {
    for r in rows.iter_mut().filter(|r| r.status == super::Status::Ok && present.contains(&r.path)) {
        r.note = "digest from manifest, blob present (not read)".into();
    }
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
        let f = from_manifest(m, M, &l.bundle.spec.model.artifacts);
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

    /// A file that may be inside an archive layer is not shown absent:
    /// NOT CHECKED (UNREADABLE), never MISSING, never OK.
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
        let f = from_manifest(&m, M, &l.bundle.spec.model.artifacts);
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
        let f = from_manifest(&m, M, &l.bundle.spec.model.artifacts);
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
        let mut f = from_manifest(&m, M, &l.bundle.spec.model.artifacts);
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
                    _ => Ok(*s),
                };
                (p.clone(), *s, h)
            })
            .collect();
        let present = apply_heads(&mut f, heads);
        let mut out = evaluate(&l, &f.listing, &f.hashes, false);
        note_manifest_rows(&mut out.rows, &present);
        let st = |p: &str| out.rows.iter().find(|r| r.path == p).unwrap().clone();
        assert_eq!(st(&first).status, Status::DigestMismatch);
        assert_eq!(st(&todo[0].0).status, Status::Unreadable);
        // The registry stopped answering: BG109, NOT CHECKED.
        assert_eq!(st(&todo[1].0).status, Status::Unreadable);
        assert!(out.diagnostics.iter().any(|d| d.code == crate::diag::Code::ObjectNotChecked), "{:?}", out.diagnostics);
        for (p, _, _) in &todo[2..] {
            assert_eq!(st(p).status, Status::Ok);
            assert!(st(p).note.contains("digest from manifest, blob present"));
        }
    }
}
