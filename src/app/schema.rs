//! `bundlegate schema bundle|pipeline`: the JSON Schema of an input file,
//! derived from the types serde reads it into, so it cannot drift from the
//! parser. `schemas/*.schema.json` are this command's output, committed for
//! editors (`# yaml-language-server: $schema=…` in the shipped files).

use crate::bundle::ReleaseBundle;
use crate::options::SchemaKind;
use crate::report::StepReport;

/// The file a kind's schema is published as, under `schemas/`.
pub(crate) fn name(kind: SchemaKind) -> &'static str {
    match kind {
        SchemaKind::Bundle => "release-bundle.schema.json",
        SchemaKind::Pipeline => "pipeline.schema.json",
    }
}

/// Draft-07: what editors' YAML language servers validate and complete with.
/// Every schema is made by one of these (`dispatch` hands it to the
/// pipeline's, which this module does not see).
pub(crate) fn generator() -> schemars::SchemaGenerator {
    schemars::generate::SchemaSettings::draft07().into_generator()
}

/// The release bundle's schema.
pub(crate) fn bundle() -> schemars::Schema {
    generator().into_root_schema_for::<ReleaseBundle>()
}

/// The schema as `schemas/` holds it: pretty JSON and a final newline.
pub(crate) fn text(schema: &schemars::Schema) -> String {
    // A schemars schema is a JSON value: printing it cannot fail.
    serde_json::to_string_pretty(schema).unwrap_or_else(|e| unreachable!("a schema is JSON: {e}")) + "\n"
}

/// The schema as a report: its value in `data`, its text as the detail.
pub(crate) fn run(kind: SchemaKind, schema: &schemars::Schema) -> Vec<StepReport> {
    let what = match kind {
        SchemaKind::Bundle => "a release bundle (release.yaml)",
        SchemaKind::Pipeline => "a pipeline file (pipelines/*.yaml)",
    };
    vec![crate::checks::info::schema(name(kind), what, schema.clone().to_value(), text(schema))]
}
