//! `bundlegate sign`: read the key, sign the bundle's two statements, write
//! `model.sig` and `release.sig`. The store is not read: the bundle already
//! holds every file's sha256, which is what the format signs.

use anyhow::{anyhow, Context, Result};

use crate::adapters::{bundle_files, local};
use crate::app::ctx::Ctx;
use crate::bundle::Loaded;
use crate::checks::sign as written;
use crate::options::SignOptions;
use crate::report::StepReport;
use crate::signing;

pub(crate) fn run(_ctx: &Ctx, l: &Loaded, o: &SignOptions) -> Result<Vec<StepReport>> {
    let shown = crate::report::escape::path_name(&o.key);
    let pem = bundle_files::read_bytes(&o.key, signing::MAX_KEY_BYTES, "private key")
        .and_then(bundle_files::utf8)
        .with_context(|| format!("reading the private key {shown}"))?;
    let key = signing::private_key(&pem).map_err(|e| anyhow!("{shown}: {e}"))?;
    let chain = certificate_chain(o)?;
    let model = signing::model_statement(&written::model_name(l), &l.bundle.spec.model.artifacts)
        .map_err(|e| anyhow!("{}: {e}", l.display))?;
    let release = signing::release_statement(l);
    let dir = o.out.clone().unwrap_or_else(|| bundle_files::bundle_folder(&l.path));
    let mut files = Vec::new();
    for (name, statement) in [(written::MODEL_SIG, &model), (written::RELEASE_SIG, &release)] {
        let text = match &chain {
            None => signing::sign(statement, &key),
            Some(c) => signing::sign_certified(statement, &key, c),
        }
        .map_err(|e| anyhow!("signing {name}: {e}"))?;
        let path = dir.join(name);
        local::write_atomic(&path, text.as_bytes())?;
        files.push(crate::report::escape::path_name(&path));
    }
    let hint = signing::key_hint(key.verifying_key()).map_err(|e| anyhow!("{shown}: {e}"))?;
    Ok(vec![written::signed(l, &model, &files, &hint)])
}

/// Certificate mode: `--certificate` then every `--chain` file, as DER.
fn certificate_chain(o: &SignOptions) -> Result<Option<Vec<Vec<u8>>>> {
    let Some(cert) = &o.certificate else { return Ok(None) };
    let mut chain = Vec::new();
    for p in std::iter::once(cert).chain(&o.chain) {
        let shown = crate::report::escape::path_name(p);
        let pem = bundle_files::read_bytes(p, signing::MAX_KEY_BYTES, "certificate")
            .and_then(bundle_files::utf8)
            .with_context(|| format!("reading the certificate {shown}"))?;
        chain.extend(signing::cert::pem_chain(&pem).map_err(|e| anyhow!("{shown}: {e}"))?);
    }
    if chain.len() > signing::cert::MAX_CHAIN {
        anyhow::bail!("{} certificates in all, over the {} a signature carries", chain.len(), signing::cert::MAX_CHAIN);
    }
    Ok(Some(chain))
}
