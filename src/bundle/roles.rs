//! The role a published file most likely plays, guessed from its name
//! (`publish` of a new folder); the bundle's author reviews the guess.

use crate::bundle::ArtifactRole as R;

/// Well-known file names and suffixes, first match wins: the more specific
/// names (a pooling folder's config, label files, index files) before the
/// catch-all `.json`/`.yaml` → `config`.
pub(crate) fn infer_role(path: &str) -> R {
    let lower = path.to_ascii_lowercase();
    let name = lower.rsplit('/').next().unwrap_or(&lower);
    let parent = lower.rsplit('/').nth(1).unwrap_or("");
    let ends = |exts: &[&str]| exts.iter().any(|e| name.ends_with(e));
    if name.contains("chat_template") || name.ends_with(".jinja") {
        R::ChatTemplate
    } else if name.starts_with("tokenizer")
        || ["vocab.json", "vocab.txt", "merges.txt", "special_tokens_map.json"].contains(&name)
        || name.ends_with(".model")
    {
        R::Tokenizer
    } else if name == "generation_config.json" {
        R::GenerationConfig
    } else if name.starts_with("adapter_") && ends(&[".safetensors", ".bin", ".json"]) {
        // PEFT's `adapter_model.safetensors` and `adapter_config.json`.
        R::Adapter
    } else if parent.ends_with("_pooling") && name == "config.json" {
        // sentence-transformers names its modules `<n>_Pooling/`.
        R::PoolingConfig
    } else if ["labels.txt", "labels.json", "id2label.json", "label_map.json", "classes.txt"].contains(&name) {
        R::Labels
    } else if ends(&[".faiss", ".index", ".hnsw", ".annoy", ".usearch", ".lance"]) || name.starts_with("index.") {
        R::RetrievalIndex
    } else if name.contains("index_schema") || name.contains("index-schema") {
        R::IndexSchema
    } else if ends(&[".safetensors", ".bin", ".pt", ".pth", ".gguf", ".onnx", ".ckpt"]) {
        R::Weights
    } else if name.contains("corpus") || name.contains("baseline") || name.contains("drift") {
        R::DriftBaseline
    } else if ends(&[".json", ".yaml"]) {
        R::Config
    } else {
        R::Other
    }
}

/// The role's name as the bundle spells it (kebab-case).
pub(crate) fn role_name(r: R) -> String {
    serde_json::to_value(r).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_else(|| "other".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each well-known name to its role, the all-MiniLM-L6-v2 folder's
    /// files among them.
    #[test]
    fn well_known_names_get_their_roles() {
        for (path, role) in [
            ("model.safetensors", R::Weights),
            ("onnx/model.onnx", R::Weights),
            ("tokenizer.json", R::Tokenizer),
            ("tokenizer_config.json", R::Tokenizer),
            ("vocab.txt", R::Tokenizer),
            ("special_tokens_map.json", R::Tokenizer),
            ("chat_template.jinja", R::ChatTemplate),
            ("generation_config.json", R::GenerationConfig),
            ("1_Pooling/config.json", R::PoolingConfig),
            ("config.json", R::Config),
            ("modules.json", R::Config),
            ("config_sentence_transformers.json", R::Config),
            ("sentence_bert_config.json", R::Config),
            ("labels.txt", R::Labels),
            ("id2label.json", R::Labels),
            ("adapter_model.safetensors", R::Adapter),
            ("adapter_config.json", R::Adapter),
            ("index/docs.faiss", R::RetrievalIndex),
            ("index.bin", R::RetrievalIndex),
            ("index_schema.json", R::IndexSchema),
            ("clean_corpus.txt", R::DriftBaseline),
            ("README.md", R::Other),
        ] {
            assert_eq!(infer_role(path), role, "{path}");
        }
        assert_eq!(role_name(R::PoolingConfig), "pooling-config");
        assert_eq!(role_name(R::RetrievalIndex), "retrieval-index");
    }
}
