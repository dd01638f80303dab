//! The one table of storage schemes bundlegate verifies, used by both lint
//! (BG019) and the store opener, so a URI lint accepts is one verify can open
//! and the other way round. Pure: parsing only, no I/O.
//!
//! The table is what KServe's storage-initializer downloads *and* what
//! `object_store` reads: `s3://`, `gs://`, the Azure names `az://`/`abfs://`,
//! and `file:` (local folders, relative to the bundle); and KServe's OCI
//! schemes (`oci://` modelcars, `oci+native://` image volumes, `oci+fetch://`
//! pulled with oras), which name a manifest in a registry rather than a
//! prefix: their digest, not a folder, pins the bytes. Hadoop's `s3a://` is
//! not in it: KServe's storage-initializer has no `s3a://` handler (its
//! supported prefixes are gs://, s3://, hdfs://, webhdfs://, http(s)://, pvc://,
//! hf://), so a bundle pointing there would verify but never serve.

use std::path::{Component, Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Local,
    S3,
    Gcs,
    Azure,
    /// An OCI registry: `bucket` is the registry, `prefix` the repository,
    /// the reference in [`StorageUri::oci`].
    Oci,
}

/// Scheme (without `:`/`://`) → backend. The only list of schemes.
pub(crate) const SCHEMES: &[(&str, Backend)] = &[
    ("s3", Backend::S3),
    ("gs", Backend::Gcs),
    ("az", Backend::Azure),
    ("abfs", Backend::Azure),
    ("file", Backend::Local),
    ("oci", Backend::Oci),
    ("oci+native", Backend::Oci),
    ("oci+fetch", Backend::Oci),
];

/// An OCI reference: `registry/repository[:tag][@sha256:<hex>]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OciRef {
    pub registry: String,
    pub repository: String,
    pub tag: Option<String>,
    /// `sha256:<64 hex>`: the manifest digest, which pins the bytes (a tag
    /// can be moved to another manifest at any time).
    pub digest: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StorageUri {
    pub scheme: &'static str,
    pub backend: Backend,
    /// Bucket / container; empty for `file:`.
    pub bucket: String,
    /// Object prefix without leading or trailing `/`; for `file:` the path as
    /// written (relative or absolute, trailing `/` trimmed).
    pub prefix: String,
    /// `file:` only: the path was absolute (`file:/x`, `file:///x`).
    pub absolute: bool,
    /// OCI schemes only: the reference.
    pub oci: Option<OciRef>,
}

/// The backend of `uri`'s scheme, if the scheme is in the table.
pub(crate) fn backend_of(uri: &str) -> Option<(&'static str, Backend)> {
    let (scheme, rest) = uri.split_once(':')?;
    let &(name, backend) = SCHEMES.iter().find(|(s, _)| *s == scheme)?;
    // Remote schemes need `//bucket`; `file:` takes any path form.
    if backend != Backend::Local && !rest.starts_with("//") {
        return None;
    }
    Some((name, backend))
}

/// Parse a storage URI. The error says what is wrong in words a bundle author
/// can act on.
pub(crate) fn parse(uri: &str) -> Result<StorageUri, String> {
    let Some((scheme, backend)) = backend_of(uri) else {
        let names: Vec<String> = SCHEMES
            .iter()
            .map(|(s, b)| if *b == Backend::Local { format!("{s}:") } else { format!("{s}://") })
            .collect();
        return Err(format!("storage URI `{uri}` has no supported scheme (supported: {})", names.join(", ")));
    };
    let rest = &uri[scheme.len() + 1..];
    if backend == Backend::Local {
        // `file:///abs`, `file:/abs` and `file:rel`; `file://host/x` is not local.
        let path = if let Some(p) = rest.strip_prefix("//") {
            if !p.starts_with('/') {
                return Err(format!(
                    "storage URI `{uri}` names a host; use `file:relative/dir/` or `file:///absolute/dir/`"
                ));
            }
            p
        } else {
            rest
        };
        let prefix = path.trim_end_matches('/');
        if prefix.is_empty() && !path.starts_with('/') {
            return Err(format!("storage URI `{uri}` has no folder"));
        }
        return Ok(StorageUri {
            scheme,
            backend,
            bucket: String::new(),
            prefix: prefix.to_string(),
            absolute: path.starts_with('/'),
            oci: None,
        });
    }
    let after = &rest[2..];
    if backend == Backend::Oci {
        let r = oci_reference(after).map_err(|why| format!("storage URI `{uri}`: {why}"))?;
        return Ok(StorageUri {
            scheme,
            backend,
            bucket: r.registry.clone(),
            prefix: r.repository.clone(),
            absolute: false,
            oci: Some(r),
        });
    }
    let (bucket, prefix) = after.split_once('/').unwrap_or((after, ""));
    if bucket.is_empty() {
        return Err(format!("storage URI `{uri}` has no bucket"));
    }
    Ok(StorageUri {
        scheme,
        backend,
        bucket: bucket.to_string(),
        prefix: prefix.trim_matches('/').to_string(),
        absolute: false,
        oci: None,
    })
}

/// `registry/repository[:tag][@sha256:<hex>]` by the OCI distribution
/// spec's grammar: a registry host (with an optional port), a lowercase
/// repository of `/`-separated components (`[a-z0-9]+` joined by `.`, `_`,
/// `__` or dashes), a tag of at most 128 `[A-Za-z0-9_.-]` not starting with
/// `.` or `-`, a sha256 digest of 64 lowercase hex.
fn oci_reference(s: &str) -> Result<OciRef, String> {
    let (name, digest) = match s.split_once('@') {
        Some((n, d)) => {
            let hex = d.strip_prefix("sha256:").ok_or_else(|| format!("digest `{d}` is not `sha256:<64 hex>`"))?;
            if !crate::util::is_sha256_hex(hex) {
                return Err(format!("digest `{d}` is not `sha256:<64 lowercase hex>`"));
            }
            (n, Some(d.to_string()))
        }
        None => (s, None),
    };
    let (registry, path) = name.split_once('/').ok_or("no repository after the registry")?;
    let host_ok = |h: &str| {
        let (host, port) = h.rsplit_once(':').map_or((h, None), |(a, b)| (a, Some(b)));
        !host.is_empty()
            && host.split('.').all(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
            && port.is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()))
    };
    if !host_ok(registry) {
        return Err(format!("registry `{registry}` is not a host name (with an optional port)"));
    }
    // A `:` in the last `/` segment starts the tag.
    let last = path.rfind('/').map_or(0, |i| i + 1);
    let (repository, tag) = match path[last..].find(':') {
        Some(i) => (&path[..last + i], Some(&path[last + i + 1..])),
        None => (path, None),
    };
    let component_ok = |c: &str| {
        !c.is_empty()
            && c.bytes().all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'.' | b'_' | b'-'))
            && c.as_bytes()[0].is_ascii_alphanumeric()
            && c.as_bytes()[c.len() - 1].is_ascii_alphanumeric()
            && !c.contains("..")
            && !c.contains("___")
    };
    if repository.is_empty() || !repository.split('/').all(component_ok) {
        return Err(format!(
            "repository `{repository}` is not an OCI repository name (lowercase letters, digits and `.`, `_`, `-` between them, `/`-separated)"
        ));
    }
    if let Some(t) = tag {
        let ok = !t.is_empty()
            && t.len() <= 128
            && !t.starts_with(['.', '-'])
            && t.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
        if !ok {
            return Err(format!("tag `{t}` is not an OCI tag (at most 128 of letters, digits, `_`, `.`, `-`)"));
        }
    }
    Ok(OciRef {
        registry: registry.to_string(),
        repository: repository.to_string(),
        tag: tag.map(String::from),
        digest,
    })
}

/// Where a cache, a report or a metrics file goes, as the user named it on
/// the command line: the same table as bundles, so a location is never half
/// understood (a `file:` URI taken for a folder named `file:`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A plain path or a `file:` URI (`file:rel`, `file:/abs`, `file:///abs`),
    /// relative to the working directory; trailing `/` trimmed.
    Local(PathBuf),
    /// An object-store URI from the table (`s3://bucket/prefix`, …).
    Remote(StorageUri),
}

/// Parse a command-line location. Text that starts with a scheme of the
/// table is parsed as a URI (and refused when malformed, e.g. `s3:/b/x` or
/// `file://host/x`); any other `scheme://` is refused; the rest is a path.
pub(crate) fn location(s: &str) -> Result<Location, String> {
    if s.is_empty() {
        return Err("an empty location".into());
    }
    let scheme = s.split_once(':').map(|(sc, _)| sc);
    if scheme.is_some_and(|sc| SCHEMES.iter().any(|(n, _)| *n == sc)) {
        let u = parse(s)?;
        if u.backend == Backend::Oci {
            return Err(format!(
                "`{s}` is an OCI registry reference: caches, reports and metrics go to a folder or an object store"
            ));
        }
        if u.backend != Backend::Local {
            return Ok(Location::Remote(u));
        }
        return Ok(Location::Local(PathBuf::from(if u.prefix.is_empty() { "/" } else { &u.prefix })));
    }
    if s.contains("://") {
        return Err(parse(s).expect_err("not a scheme of the table"));
    }
    Ok(Location::Local(PathBuf::from(s)))
}

impl StorageUri {
    /// The URI of `prefix` (without leading `/`) in this URI's bucket.
    pub(crate) fn with_prefix(&self, prefix: &str) -> String {
        format!("{}://{}/{}", self.scheme, self.bucket, prefix.trim_start_matches('/'))
    }
}

/// A `file:` prefix joined to the bundle folder and normalised lexically
/// (`.`/`..` folded), so it can be compared with the store root before any
/// file is touched.
pub(crate) fn local_path(u: &StorageUri, bundle_dir: &Path) -> PathBuf {
    let joined = if u.absolute {
        PathBuf::from(if u.prefix.is_empty() { "/" } else { &u.prefix })
    } else {
        bundle_dir.join(&u.prefix)
    };
    normalize(&joined)
}

/// Fold `.` and `..` without touching the filesystem (`..` at the root stays at the root).
pub(crate) fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_table_for_every_scheme() {
        assert_eq!(parse("s3://b/m/v2/").unwrap().prefix, "m/v2");
        assert_eq!(parse("gs://b/m/v2").unwrap().bucket, "b");
        assert_eq!(parse("abfs://c/m/v2/").unwrap().backend, Backend::Azure);
        assert!(parse("s3a://b/m/v2/").is_err(), "KServe does not download s3a://");
        assert!(parse("s3:/b/m").is_err());
        assert!(parse("s3:///m").is_err());
        assert!(parse("http://x/m/v2").is_err());
        let f = parse("file:../../store/v2/").unwrap();
        assert!(!f.absolute);
        assert_eq!(f.prefix, "../../store/v2");
        assert!(parse("file:/etc/").unwrap().absolute);
        assert!(parse("file:///etc/").unwrap().absolute);
        assert!(parse("file://host/etc/").is_err());
        assert_eq!(
            parse("http://x/m/v2").unwrap_err(),
            "storage URI `http://x/m/v2` has no supported scheme (supported: s3://, gs://, az://, abfs://, file:, oci://, oci+native://, oci+fetch://)"
        );
    }

    const D: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    /// KServe's three OCI schemes name a registry, a repository, maybe a
    /// tag, maybe a digest; what is not a reference is refused in words.
    #[test]
    fn oci_references() {
        for scheme in ["oci", "oci+native", "oci+fetch"] {
            let u = parse(&format!("{scheme}://127.0.0.1:5000/models/llm-scratch:v2@{D}")).unwrap();
            assert_eq!(
                (u.backend, u.bucket.as_str(), u.prefix.as_str()),
                (Backend::Oci, "127.0.0.1:5000", "models/llm-scratch")
            );
            let r = u.oci.unwrap();
            assert_eq!((r.tag.as_deref(), r.digest.as_deref()), (Some("v2"), Some(D)));
        }
        let tag_only = parse("oci://ghcr.io/acme/llm:v2").unwrap().oci.unwrap();
        assert_eq!((tag_only.tag.as_deref(), tag_only.digest), (Some("v2"), None));
        let digest_only = parse(&format!("oci://registry.example.com/llm@{D}")).unwrap().oci.unwrap();
        assert_eq!((digest_only.repository.as_str(), digest_only.tag), ("llm", None));
        for bad in [
            "oci://ghcr.io",
            "oci://ghcr.io/",
            "oci://ghcr.io/Acme/llm:v2",
            "oci://ghcr.io/acme/llm:",
            "oci://ghcr.io/acme/llm:-v2",
            "oci://ghcr.io/acme/llm@sha256:abc",
            "oci://ghcr.io/acme/llm@md5:0123",
            "oci://ghcr.io:port/acme/llm",
            "oci://gh cr.io/acme/llm",
            "oci://ghcr.io/acme//llm",
            "oci://ghcr.io/acme/../llm",
            "oci:ghcr.io/acme/llm",
        ] {
            assert!(parse(bad).is_err(), "{bad}: {:?}", parse(bad));
        }
        let long = format!("oci://r.io/m:{}", "a".repeat(129));
        assert!(parse(&long).is_err());
        assert!(location("oci://r.io/m:v2").is_err(), "a registry is not a place for caches");
    }

    #[test]
    fn command_line_locations_use_the_same_table() {
        let local = |s: &str| match location(s) {
            Ok(Location::Local(p)) => p,
            other => panic!("{s}: {other:?}"),
        };
        assert_eq!(local("file:/abs/cache.json"), PathBuf::from("/abs/cache.json"));
        assert_eq!(local("file:///abs/reports/"), PathBuf::from("/abs/reports"));
        assert_eq!(local("file:rel/r.json"), PathBuf::from("rel/r.json"));
        assert_eq!(local("file:/"), PathBuf::from("/"));
        assert_eq!(local("reports/shard-0.json"), PathBuf::from("reports/shard-0.json"));
        assert_eq!(local("odd:name.json"), PathBuf::from("odd:name.json"), "not a scheme of the table: a path");
        match location("s3://audit/cache/").unwrap() {
            Location::Remote(u) => assert_eq!(
                (u.bucket.as_str(), u.prefix.as_str(), u.with_prefix("x/y")),
                ("audit", "cache", "s3://audit/x/y".to_string())
            ),
            other => panic!("{other:?}"),
        }
        for bad in ["file://host/x.json", "s3:/b/x", "s3://", "http://h/x", "s3a://b/x", "", "file:"] {
            assert!(location(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn local_paths_fold_dot_dot() {
        let u = parse("file:../../store/v2/").unwrap();
        assert_eq!(local_path(&u, Path::new("/r/a/b")), PathBuf::from("/r/store/v2"));
        let u = parse("file:../../../../../etc/").unwrap();
        assert_eq!(local_path(&u, Path::new("/r/a")), PathBuf::from("/etc"));
    }
}
