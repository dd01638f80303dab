//! The audit's cache around verify: what it remembers of each object it
//! hashed (its listed identity and sha256), which objects it lets an audit
//! skip, and which moved under the same path since (drift). Pure: the cache
//! is read and written by `app::audit_cache`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::bundle::Loaded;
use crate::checks::verify::{self as vcheck, HashOutcome, Listed};
use crate::diag::Diagnostic;

/// Incremental-audit cache: object identity → verified sha256.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct AuditCache {
    pub version: u32,
    pub objects: BTreeMap<String, CacheEntry>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct CacheEntry {
    pub e_tag: Option<String>,
    pub version: Option<String>,
    pub size: u64,
    pub last_modified: String,
    pub sha256: String,
    pub verified_at: String,
}

impl CacheEntry {
    pub(crate) fn same_identity(&self, o: &Listed) -> bool {
        self.size == o.size
            && self.e_tag == o.e_tag
            && self.version == o.version
            && self.last_modified == o.last_modified
    }
}

/// An object the audit cache knew under another identity: (key, what the
/// cache recorded, what the store lists now).
pub(crate) type Drift = (String, CacheEntry, Listed);

/// What to read: the objects to hash now, those trusted from the audit
/// cache, and those whose identity moved since the cache entry.
pub(crate) struct Reads {
    pub hashes: BTreeMap<String, HashOutcome>,
    pub drift: Vec<Drift>,
    pub to_read: Vec<Listed>,
}

/// Sort the listed objects the bundle names into cached / to read (a deep
/// audit, or plain verify, reads everything); identity changes are drift.
pub(crate) fn plan_reads(
    l: &Loaded,
    listing: &[Listed],
    cache: Option<&AuditCache>,
    deep: bool,
    cache_key: &dyn Fn(&str) -> String,
) -> Reads {
    let candidates: Vec<Listed> = vcheck::to_hash(l, listing).into_iter().cloned().collect();
    let mut reads = Reads { hashes: BTreeMap::new(), drift: Vec::new(), to_read: Vec::new() };
    for o in candidates {
        if let Some(c) = cache.and_then(|c| c.objects.get(&cache_key(&o.key))) {
            if c.same_identity(&o) {
                if !deep {
                    reads.hashes.insert(
                        o.key.clone(),
                        HashOutcome::Cached { sha256: c.sha256.clone(), verified_at: c.verified_at.clone() },
                    );
                    continue;
                }
            } else {
                reads.drift.push((o.key.clone(), c.clone(), o.clone()));
            }
        }
        reads.to_read.push(o);
    }
    reads
}

/// Remember every object hashed now, under its listed identity.
pub(crate) fn record_hashed(
    cache: &mut AuditCache,
    listing: &[Listed],
    read: &BTreeMap<String, HashOutcome>,
    now: &str,
    cache_key: &dyn Fn(&str) -> String,
) {
    for o in listing {
        if let Some(HashOutcome::Hashed { sha256, .. }) = read.get(&o.key) {
            cache.objects.insert(
                cache_key(&o.key),
                CacheEntry {
                    e_tag: o.e_tag.clone(),
                    version: o.version.clone(),
                    size: o.size,
                    last_modified: o.last_modified.clone(),
                    sha256: sha256.clone(),
                    verified_at: now.to_string(),
                },
            );
        }
    }
}

/// One `artifact_drifted` finding per object whose identity moved since
/// the audit cache verified it, at the artifact's span when it has one.
pub(crate) fn drift_diagnostics(l: &Loaded, drift: Vec<Drift>) -> Vec<Diagnostic> {
    use crate::checks::verify::drift::{artifact_drifted, Identity};
    let mut diags = Vec::new();
    for (key, was, now) in drift {
        let field = l
            .bundle
            .spec
            .model
            .artifacts
            .iter()
            .position(|a| a.path == key)
            .map(|i| format!("spec.model.artifacts[{i}]"));
        let was_id = Identity { e_tag: was.e_tag.as_deref(), size: was.size, last_modified: &was.last_modified };
        let now_id = Identity { e_tag: now.e_tag.as_deref(), size: now.size, last_modified: &now.last_modified };
        let mut d = artifact_drifted(&key, &was.verified_at, was_id, now_id);
        if let Some(f) = field {
            d = d.at(l.span(&f)).field(f);
        }
        diags.push(d);
    }
    diags
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(o: &Listed, sha: &str) -> CacheEntry {
        CacheEntry {
            e_tag: o.e_tag.clone(),
            version: o.version.clone(),
            size: o.size,
            last_modified: o.last_modified.clone(),
            sha256: sha.into(),
            verified_at: "2026-12-01T00:00:00Z".into(),
        }
    }

    /// An audit skips what the cache verified under the same identity, a
    /// deep audit reads it anyway, and an object whose identity moved is
    /// read again and reported as drift; a hash recorded now is remembered
    /// under the object's listed identity.
    #[test]
    fn the_cache_skips_only_unchanged_objects_and_reports_what_moved() {
        let l = crate::bundle::example();
        let listing: Vec<Listed> = l
            .bundle
            .spec
            .model
            .artifacts
            .iter()
            .map(|a| Listed {
                key: a.path.clone(),
                size: a.size.unwrap(),
                e_tag: Some(format!("\"{}\"", a.path)),
                version: None,
                last_modified: "2026-12-01T00:00:00Z".into(),
            })
            .collect();
        assert!(listing.len() >= 2);
        let key = |k: &str| format!("file:store/{k}");
        let mut cache = AuditCache { version: 1, ..Default::default() };
        for o in &listing {
            cache.objects.insert(key(&o.key), entry(o, "aa"));
        }
        // The first object moved: another etag under the same path.
        let moved = listing[0].key.clone();
        cache.objects.get_mut(&key(&moved)).unwrap().e_tag = Some("\"old\"".into());

        let r = plan_reads(&l, &listing, Some(&cache), false, &key);
        assert_eq!(r.to_read.iter().map(|o| o.key.as_str()).collect::<Vec<_>>(), [moved.as_str()]);
        assert_eq!(r.drift.len(), 1);
        assert_eq!(r.hashes.len(), listing.len() - 1);
        assert!(r.hashes.values().all(|h| matches!(h, HashOutcome::Cached { sha256, .. } if sha256 == "aa")));
        let d = drift_diagnostics(&l, r.drift);
        assert_eq!(d[0].field.as_deref(), Some("spec.model.artifacts[0]"));

        let deep = plan_reads(&l, &listing, Some(&cache), true, &key);
        assert_eq!((deep.to_read.len(), deep.hashes.len(), deep.drift.len()), (listing.len(), 0, 1));
        let none = plan_reads(&l, &listing, None, false, &key);
        assert_eq!((none.to_read.len(), none.drift.len()), (listing.len(), 0));

        let read: BTreeMap<String, HashOutcome> =
            [(moved.clone(), HashOutcome::Hashed { sha256: "bb".into(), retries: vec![] })].into();
        record_hashed(&mut cache, &listing, &read, "2026-12-07T00:00:00Z", &key);
        let e = &cache.objects[&key(&moved)];
        assert_eq!((e.sha256.as_str(), e.e_tag.as_deref()), ("bb", listing[0].e_tag.as_deref()));
        assert!(e.same_identity(&listing[0]));
    }
}
