//! Wire each command to loading, adapters and checks. Commands take the
//! typed options of [`crate::options`]; `crate::dispatch` gets them from the
//! command line and `crate::pipeline` from a pipeline file, so nothing here
//! depends on either.
//!
//! One shape: a command on a bundle is `<command>::run(ctx, &Loaded,
//! &Options[, &Overrides]) -> Result<Vec<StepReport>>` (lint, render, digest,
//! verify, preflight, canary, watch, revert; revert also takes the evidence
//! so far), and [`on_bundles`] is the one way to load its bundles (or report
//! the step that could not) into one report. The others take what they work
//! on instead of a bundle (publish: a folder; audit: a tree; codes; schema; the Argo
//! CD plugin; verify-files in the pod). `Err` is the tool
//! failing: the command line prints it (and its ERROR report), the pipeline
//! makes it that step's ERROR.

pub mod argocd;
pub mod audit;
pub(crate) mod audit_cache;
pub(crate) mod audit_merge;
pub mod canary;
pub mod codes;
pub mod comment;
pub mod ctx;
pub mod digest;
pub mod lint;
pub mod preflight;
pub mod promote;
pub mod publish;
pub mod render;
pub mod report;
pub mod revert;
pub mod schema;
pub mod serving;
pub mod sign;
pub(crate) mod signature;
pub(crate) mod spooled;
pub mod verify;
pub mod verify_files;
pub mod watch;

use std::path::Path;

use anyhow::Result;

use crate::bundle::{self, Loaded};
use crate::report::escape::path_name;
use crate::report::{Report, StepReport};

/// A command on each bundle in turn, as one report named `name`: each
/// bundle loaded, or reported as the step (named `name`) that could not be.
/// The one way a command on a bundle starts, for the command line and
/// library callers alike; `Err` is the command's own failure.
pub fn on_bundles<P: AsRef<Path>>(
    name: &str,
    bundles: &[P],
    run: impl Fn(&Loaded) -> Result<Vec<StepReport>>,
) -> Result<Report> {
    let mut r = Report::new(name);
    for b in bundles {
        let steps = match load_or_step(b.as_ref(), name) {
            Ok(l) => run(&l)?,
            Err(s) => vec![*s],
        };
        for s in steps {
            r.push(s);
        }
    }
    Ok(r)
}

/// Load a bundle or produce the Error step that says why (file:line:col: field).
/// The step is boxed: it is the cold path and much larger than a pointer.
pub(crate) fn load_or_step(path: &Path, step: &str) -> std::result::Result<Loaded, Box<StepReport>> {
    crate::adapters::bundle_files::load(path).map_err(|e| Box::new(load_error(path, step, e)))
}

/// [`load_or_step`] for text read elsewhere (a bundle as committed in git);
/// `path` still anchors relative references and names the file.
pub(crate) fn parse_or_step(path: &Path, text: &str, step: &str) -> std::result::Result<Loaded, Box<StepReport>> {
    bundle::parse(&path_name(path), path, text.to_string()).map_err(|e| Box::new(load_error(path, step, e)))
}

/// The Error step for a bundle whose text could not be read at all (a
/// committed blob over the size limit or not UTF-8), worded as a load error.
pub(crate) fn unreadable_step(path: &Path, why: &str, step: &str) -> StepReport {
    let source = std::io::Error::new(std::io::ErrorKind::InvalidData, why.to_string());
    load_error(path, step, bundle::LoadError::Io { file: path_name(path), source })
}

fn load_error(path: &Path, step: &str, e: bundle::LoadError) -> StepReport {
    StepReport::failed(step, path_name(path), e.to_string())
}
