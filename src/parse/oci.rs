//! OCI image manifests as a registry answers them, into plain types: the
//! CNCF ModelPack artifact (`artifactType
//! application/vnd.cncf.model.manifest.v1+json`, layers
//! `application/vnd.cncf.model.<kind>.v1.<form>` carrying
//! `org.cncf.model.filepath`), a KitOps ModelKit
//! (`application/vnd.kitops.modelkit.*`) or a plain image (a KServe
//! modelcar: the model under `/models` in its layers). No I/O: the adapter
//! fetched the bytes; they are read through the one JSON reader (a key
//! given twice is refused at its line) within a bound.

use anyhow::{bail, Result};

use crate::checks::verify::oci::{Manifest, IMAGE_MANIFEST, MAX_MANIFEST_BYTES};

/// The manifest, from the registry's bytes. Refused: more than
/// [`MAX_MANIFEST_BYTES`], not JSON, a key given twice, a schema version
/// other than 2, another media type (an index, a Docker v2 manifest), a
/// digest that is not `sha256:<64 lowercase hex>`.
pub fn manifest(name: &str, bytes: &[u8]) -> Result<Manifest> {
    if bytes.len() > MAX_MANIFEST_BYTES {
        bail!("{name}: the manifest is {} bytes, over the limit of {MAX_MANIFEST_BYTES}", bytes.len());
    }
    let v: serde_json::Value = crate::yaml_guard::json_from_slice(name, bytes, &crate::yaml_guard::Limits::WRITTEN)?;
    // The media type first: an index has no `config`, and saying what it is
    // beats saying what it lacks.
    if let Some(t) = v.get("mediaType").and_then(|t| t.as_str()).filter(|t| *t != IMAGE_MANIFEST) {
        bail!("{name}: media type `{t}` is not an OCI image manifest ({IMAGE_MANIFEST})");
    }
    let m: Manifest = crate::serde_strict::from_json_value(v)
        .map_err(|e| anyhow::anyhow!("{name}: not an OCI image manifest: {e}"))?;
    if m.schema_version != 2 {
        bail!("{name}: schemaVersion {} (an OCI image manifest has 2)", m.schema_version);
    }
    for d in std::iter::once(&m.config).chain(&m.layers) {
        if !d.digest.strip_prefix("sha256:").is_some_and(crate::util::is_sha256_hex) {
            bail!("{name}: digest `{}` of a `{}` is not `sha256:<64 lowercase hex>`", d.digest, d.media_type);
        }
    }
    Ok(m)
}

/// One file of a ModelPack artifact as publish writes it: one raw layer.
pub struct PackFile<'a> {
    /// The path in the model, `/`-separated (the layer's
    /// `org.cncf.model.filepath`).
    pub path: &'a str,
    /// Lowercase hex.
    pub sha256: &'a str,
    pub size: u64,
    pub role: crate::bundle::ArtifactRole,
}

/// The ModelPack layer kind (`application/vnd.cncf.model.<kind>.v1.raw`)
/// of a file in this role: weights, their configuration (tokenizer,
/// templates, configs), data the release carries, or documents.
pub fn modelpack_kind(role: crate::bundle::ArtifactRole) -> &'static str {
    use crate::bundle::ArtifactRole as R;
    match role {
        R::Weights | R::Adapter => "weight",
        R::Tokenizer
        | R::ChatTemplate
        | R::GenerationConfig
        | R::Config
        | R::PoolingConfig
        | R::Labels
        | R::IndexSchema => "weight.config",
        R::DriftBaseline | R::RetrievalIndex => "dataset",
        R::Other => "doc",
    }
}

/// A ModelPack artifact of raw layers, one per file in the order given:
/// the config (`descriptor`, `modelfs` of `type: layers` with one diffId
/// per layer: a raw layer is its own uncompressed form) and the image
/// manifest naming it. Both serialised once, so the digest publish
/// records is of the very bytes it uploads; nothing time-dependent, so
/// the same files make the same manifest.
pub fn modelpack_artifact(name: &str, version: &str, files: &[PackFile<'_>]) -> (Vec<u8>, Vec<u8>) {
    use crate::checks::verify::oci::{FILEPATH, MODELPACK_ARTIFACT, MODELPACK_CONFIG};
    let digests: Vec<String> = files.iter().map(|f| format!("sha256:{}", f.sha256)).collect();
    let config = serde_json::json!({
        "descriptor": {"name": name, "version": version},
        "config": {},
        "modelfs": {"type": "layers", "diffIds": digests},
    });
    let config = serde_json::to_vec(&config).unwrap_or_default();
    let layers: Vec<serde_json::Value> = files
        .iter()
        .zip(&digests)
        .map(|(f, d)| {
            serde_json::json!({
                "mediaType": format!("application/vnd.cncf.model.{}.v1.raw", modelpack_kind(f.role)),
                "digest": d,
                "size": f.size,
                // The title too: oras (KServe's `oci+fetch`) names pulled files by it.
                "annotations": {FILEPATH: f.path, "org.opencontainers.image.title": f.path},
            })
        })
        .collect();
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": IMAGE_MANIFEST,
        "artifactType": MODELPACK_ARTIFACT,
        "config": {
            "mediaType": MODELPACK_CONFIG,
            "digest": format!("sha256:{}", crate::util::sha256_hex(&config)),
            "size": config.len(),
        },
        "layers": layers,
    });
    (config, serde_json::to_vec(&manifest).unwrap_or_default())
}

/// What a Docker config (`config.json`) holds for one registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DockerAuth {
    /// No entry for the registry.
    None,
    /// `auths.<registry>`: `auth` (base64 `user:password`) or
    /// `username`/`password`.
    Basic { username: String, password: String },
    /// Only a credential helper (`credHelpers.<registry>` or `credsStore`)
    /// could answer: bundlegate does not run helpers.
    Helper(String),
}

#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct DockerConfig {
    #[serde(default)]
    auths: std::collections::BTreeMap<String, DockerEntry>,
    #[serde(default)]
    cred_helpers: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    creds_store: Option<String>,
}

#[derive(serde::Deserialize, Default)]
struct DockerEntry {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
}

/// The `host[:port]` a Docker config key names: keys are written as
/// `host`, `https://host/v1/` and the like. Docker Hub has three names.
fn config_host(key: &str) -> String {
    let k = key.split_once("://").map(|(_, r)| r).unwrap_or(key);
    let host = k.split('/').next().unwrap_or(k).to_ascii_lowercase();
    match host.as_str() {
        "docker.io" | "registry-1.docker.io" => "index.docker.io".to_string(),
        _ => host,
    }
}

/// The credentials a Docker config gives `registry` (`host[:port]`). Errors
/// name the key, never its value.
pub fn docker_auth(text: &str, registry: &str) -> Result<DockerAuth> {
    use base64::Engine;
    // Only where it failed: serde's message may quote a value, a secret.
    let c: DockerConfig = crate::serde_strict::from_json_str(text)
        .map_err(|e| anyhow::anyhow!("not a Docker config (at line {} column {})", e.line(), e.column()))?;
    let want = config_host(registry);
    if let Some((key, e)) = c.auths.iter().find(|(k, _)| config_host(k) == want) {
        if let (Some(u), Some(p)) = (&e.username, &e.password) {
            return Ok(DockerAuth::Basic { username: u.clone(), password: p.clone() });
        }
        if let Some(a) = e.auth.as_deref().filter(|a| !a.is_empty()) {
            let raw = base64::engine::general_purpose::STANDARD
                .decode(a.trim())
                .map_err(|_| anyhow::anyhow!("`auths.{key}.auth` is not base64"))?;
            let text = String::from_utf8(raw).map_err(|_| anyhow::anyhow!("`auths.{key}.auth` is not UTF-8"))?;
            let Some((u, p)) = text.split_once(':') else {
                bail!("`auths.{key}.auth` is not `user:password` in base64");
            };
            return Ok(DockerAuth::Basic { username: u.to_string(), password: p.to_string() });
        }
    }
    if let Some(h) = c.cred_helpers.iter().find(|(k, _)| config_host(k) == want).map(|(_, h)| h) {
        return Ok(DockerAuth::Helper(h.clone()));
    }
    Ok(c.creds_store.map(DockerAuth::Helper).unwrap_or(DockerAuth::None))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::verify::oci::{Form, Kind, MODELPACK_ARTIFACT, MODELPACK_CONFIG};

    const A: &str = "sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae";
    const B: &str = "sha256:fcde2b2edba56bf408601fb721fe9b5c338d10ee429ea04fae5511b68fbf8fb9";

    fn modelpack() -> String {
        format!(
            r#"{{"schemaVersion": 2, "mediaType": "{IMAGE_MANIFEST}", "artifactType": "{MODELPACK_ARTIFACT}",
              "config": {{"mediaType": "{MODELPACK_CONFIG}", "digest": "{A}", "size": 200}},
              "layers": [
                {{"mediaType": "application/vnd.cncf.model.weight.v1.raw", "digest": "{B}", "size": 6144,
                  "annotations": {{"org.cncf.model.filepath": "ckpt.pt"}}}},
                {{"mediaType": "application/vnd.cncf.model.weight.config.v1.tar+zstd", "digest": "{A}", "size": 99,
                  "annotations": {{"org.cncf.model.filepath": "configs"}}}}
              ]}}"#
        )
    }

    #[test]
    fn a_modelpack_manifest_is_read_with_its_layers_forms_and_paths() {
        let m = manifest("m", modelpack().as_bytes()).unwrap();
        assert_eq!(m.kind(), Kind::ModelPack);
        assert_eq!(m.layers[0].form(), Form::Raw);
        assert_eq!(m.layers[0].filepath(), Some("ckpt.pt"));
        assert_eq!(m.layers[1].form(), Form::TarZstd);
        let image = format!(
            r#"{{"schemaVersion": 2, "config": {{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": "{A}", "size": 1}},
              "layers": [{{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": "{B}", "size": 9}}]}}"#
        );
        let m = manifest("i", image.as_bytes()).unwrap();
        assert_eq!((m.kind(), m.layers[0].form()), (Kind::Image, Form::TarGzip));
        let kit = modelpack()
            .replace(MODELPACK_CONFIG, "application/vnd.kitops.modelkit.config.v1+json")
            .replace(&format!(r#""artifactType": "{MODELPACK_ARTIFACT}","#), "");
        assert_eq!(manifest("k", kit.as_bytes()).unwrap().kind(), Kind::KitOps);
    }

    /// What is not an OCI image manifest of sha256 digests is refused in
    /// words, never read as an empty model.
    #[test]
    fn what_is_not_a_manifest_is_refused() {
        let good = modelpack();
        for (bad, words) in [
            (good.replace("\"schemaVersion\": 2", "\"schemaVersion\": 1"), "schemaVersion 1"),
            (good.replace(IMAGE_MANIFEST, "application/vnd.oci.image.index.v1+json"), "is not an OCI image manifest"),
            (good.replacen(B, "sha256:abc", 1), "is not `sha256:"),
            (good.replacen(B, &B.to_uppercase().replace("SHA256", "sha256"), 1), "is not `sha256:"),
            (good.replacen("\"size\": 6144", "\"size\": 6144, \"size\": 1", 1), "size"),
            ("[]".to_string(), ""),
        ] {
            let e = manifest("m", bad.as_bytes()).unwrap_err().to_string();
            assert!(e.contains(words), "{words}: {e}");
        }
        let big = vec![b' '; MAX_MANIFEST_BYTES + 1];
        assert!(manifest("m", &big).unwrap_err().to_string().contains("over the limit"));
    }

    /// What publish writes reads back as a ModelPack artifact of raw layers,
    /// each at its path with its digest and size.
    #[test]
    fn a_published_artifact_reads_back_as_modelpack_raw_layers() {
        use crate::bundle::ArtifactRole as R;
        let hex = "ab".repeat(32);
        let files = [
            PackFile { path: "ckpt.pt", sha256: &hex, size: 6, role: R::Weights },
            PackFile { path: "sub/tokenizer.json", sha256: &hex, size: 2, role: R::Tokenizer },
        ];
        let (config, bytes) = modelpack_artifact("llm", "v2", &files);
        let m = manifest("m", &bytes).unwrap();
        assert_eq!(m.kind(), Kind::ModelPack);
        assert_eq!(m.config.size, config.len() as u64);
        assert_eq!(m.layers[1].media_type, "application/vnd.cncf.model.weight.config.v1.raw");
        assert_eq!(
            (m.layers[1].form(), m.layers[1].filepath(), m.layers[1].size),
            (Form::Raw, Some("sub/tokenizer.json"), 2)
        );
        let c: serde_json::Value = serde_json::from_slice(&config).unwrap();
        assert_eq!(c["modelfs"]["diffIds"].as_array().unwrap().len(), 2);
        assert_eq!(modelpack_artifact("llm", "v2", &files).1, bytes, "the same files make the same manifest");
    }

    #[test]
    fn a_docker_config_gives_the_registrys_credentials_or_names_its_helper() {
        let text = r#"{"auths": {"https://127.0.0.1:5000/v1/": {"auth": "dXNlcjpzM2NyZXQ6eA=="},
                                  "ghcr.io": {"username": "u", "password": "p"}},
                       "credHelpers": {"gcr.io": "gcloud"}}"#;
        let basic = |u: &str, p: &str| DockerAuth::Basic { username: u.into(), password: p.into() };
        assert_eq!(docker_auth(text, "127.0.0.1:5000").unwrap(), basic("user", "s3cret:x"));
        assert_eq!(docker_auth(text, "ghcr.io").unwrap(), basic("u", "p"));
        assert_eq!(docker_auth(text, "gcr.io").unwrap(), DockerAuth::Helper("gcloud".into()));
        assert_eq!(docker_auth(text, "quay.io").unwrap(), DockerAuth::None);
        let store = r#"{"credsStore": "desktop"}"#;
        assert_eq!(docker_auth(store, "quay.io").unwrap(), DockerAuth::Helper("desktop".into()));
        let bad = r#"{"auths": {"r.io": {"auth": "%%%"}}}"#;
        let e = docker_auth(bad, "r.io").unwrap_err().to_string();
        assert!(e.contains("auths.r.io.auth") && !e.contains("%%%"), "{e}");
    }
}
