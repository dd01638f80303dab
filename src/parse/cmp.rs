//! The Argo CD CMP parameters of one `generate`: the plugin
//! environment (`ARGOCD_APP_PARAMETERS` JSON, `PARAM_*`, `ARGOCD_ENV_*`) →
//! resolved [`Params`]. Outside input, parsed without I/O; `app::argocd`
//! renders with the result.

use std::collections::BTreeMap;

use anyhow::{anyhow, bail, Context, Result};
use serde_json::Value;

/// Bundle file looked for when the `bundle` parameter is absent.
pub const DEFAULT_BUNDLE: &str = "release.yaml";

/// One announced parameter. `default` is what `generate` applies when Argo
/// sends nothing; an empty default means "take it from the bundle".
pub(crate) struct ParamSpec {
    pub(crate) name: &'static str,
    pub(crate) title: &'static str,
    pub(crate) tooltip: &'static str,
    pub(crate) default: &'static str,
}

impl ParamSpec {
    /// This parameter as the `parameters` command announces it to Argo,
    /// with `default` shown as its value.
    pub(crate) fn announce(&self, default: &str) -> Value {
        serde_json::json!({
            "name": self.name,
            "title": self.title,
            "tooltip": self.tooltip,
            "required": false,
            "itemType": "string",
            "collectionType": "string",
            "string": default,
        })
    }
}

/// Every parameter the plugin takes, in the order it announces them.
pub(crate) const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "bundle",
        title: "Release bundle",
        tooltip: "Path of the ReleaseBundle file, relative to the application's source path.",
        default: DEFAULT_BUNDLE,
    },
    ParamSpec {
        name: "namespace",
        title: "Namespace override",
        tooltip: "Namespace for every rendered object (empty: the bundle's metadata.namespace).",
        default: "",
    },
    ParamSpec {
        name: "replicas",
        title: "Replicas override",
        tooltip: "Replica count (empty: the bundle's spec.serving.replicas). Lint runs on the overridden value.",
        default: "",
    },
    ParamSpec {
        name: "templates",
        title: "Template folder",
        tooltip: "Folder inside the source path with <format>.yaml.hbs templates (empty: built-in templates).",
        default: "",
    },
    ParamSpec {
        name: "lint",
        title: "Refuse on lint errors",
        tooltip: "\"true\": refuse to render a bundle with error-severity lint findings. \"false\" renders anyway.",
        default: "true",
    },
];

/// The application's context variables Argo CD sets for a plugin.
const APP_VARS: &[&str] = &[
    "ARGOCD_APP_NAME",
    "ARGOCD_APP_NAMESPACE",
    "ARGOCD_APP_PARAMETERS",
    "ARGOCD_APP_REVISION",
    "ARGOCD_APP_SOURCE_PATH",
    "ARGOCD_APP_SOURCE_REPO_URL",
    "BUNDLEGATE_VERIFIER_IMAGE",
];

/// The process environment as Argo set it (a map, so tests and callers can
/// pass their own).
#[derive(Debug, Clone, Default)]
pub struct CmpEnv {
    vars: BTreeMap<String, String>,
}

impl CmpEnv {
    /// Every variable the plugin reads: the application's context Argo CD
    /// sets, each parameter as `ARGOCD_ENV_<NAME>` and `PARAM_<NAME>`, and the
    /// operator's verifier image.
    pub(crate) fn names() -> Vec<String> {
        let mut v: Vec<String> = APP_VARS.iter().map(|s| s.to_string()).collect();
        for spec in PARAMS {
            let upper = spec.name.to_ascii_uppercase();
            v.push(format!("ARGOCD_ENV_{upper}"));
            v.push(format!("PARAM_{upper}"));
        }
        v
    }

    /// The variables of [`CmpEnv::names`] from a lookup (the process
    /// environment, read by `adapters::env`, or a test's map).
    pub(crate) fn from_lookup(get: impl Fn(&str) -> Option<String>) -> CmpEnv {
        CmpEnv { vars: Self::names().into_iter().filter_map(|k| get(&k).map(|v| (k, v))).collect() }
    }

    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> CmpEnv {
        CmpEnv { vars: pairs.into_iter().map(|(k, v)| (k.to_string(), v.to_string())).collect() }
    }

    /// A variable Argo set; an empty one counts as unset.
    pub(crate) fn get(&self, k: &str) -> Option<&str> {
        self.vars.get(k).map(String::as_str).filter(|v| !v.is_empty())
    }
}

/// Resolved parameters (`None`: take the value from the bundle).
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    pub bundle: String,
    pub namespace: Option<String>,
    pub replicas: Option<u32>,
    pub templates: Option<String>,
    pub lint: bool,
}

impl Params {
    /// Precedence: `ARGOCD_APP_PARAMETERS` (the structured source) >
    /// `PARAM_<NAME>` > plugin env `ARGOCD_ENV_<NAME>` > announced default.
    /// An empty string counts as absent: Argo's UI sends `""` for a cleared field.
    pub fn from_env(env: &CmpEnv) -> Result<Params> {
        let mut raw: BTreeMap<&'static str, (String, String)> = BTreeMap::new();
        for spec in PARAMS {
            let upper = spec.name.to_ascii_uppercase();
            for src in [format!("ARGOCD_ENV_{upper}"), format!("PARAM_{upper}")] {
                if let Some(v) = env.get(&src) {
                    raw.insert(spec.name, (v.to_string(), src));
                }
            }
        }
        if let Some(text) = env.get("ARGOCD_APP_PARAMETERS") {
            // A key twice in an entry, or a parameter twice in the list, is
            // refused: serde_json and the loop below would keep the last.
            if let Err(g) = crate::yaml_guard::check_json(text) {
                bail!("ARGOCD_APP_PARAMETERS: column {}: {}", g.column, g.at_path());
            }
            let list: Vec<Value> = serde_json::from_str(text).context("ARGOCD_APP_PARAMETERS is not a JSON array")?;
            let mut seen = std::collections::BTreeSet::new();
            for p in list {
                let name = p
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| anyhow!("ARGOCD_APP_PARAMETERS: an entry has no `name`: {p}"))?;
                if !seen.insert(name.to_string()) {
                    bail!("ARGOCD_APP_PARAMETERS: parameter `{name}` is given twice");
                }
                let spec = PARAMS.iter().find(|s| s.name == name).ok_or_else(|| {
                    let known: Vec<&str> = PARAMS.iter().map(|s| s.name).collect();
                    anyhow!("unknown plugin parameter `{name}` (known: {})", known.join(", "))
                })?;
                if p.get("array").is_some() || p.get("map").is_some() {
                    bail!("plugin parameter `{name}` must be a string, not an array or map");
                }
                match p.get("string") {
                    Some(Value::String(s)) if !s.is_empty() => {
                        raw.insert(spec.name, (s.clone(), "ARGOCD_APP_PARAMETERS".into()));
                    }
                    Some(Value::String(_)) | None | Some(Value::Null) => {
                        raw.remove(spec.name);
                    }
                    Some(other) => bail!("plugin parameter `{name}` must be a string, found {other}"),
                }
            }
        }
        let val = |name: &str| -> Option<&(String, String)> { raw.get(name) };
        let default = |name: &str| PARAMS.iter().find(|s| s.name == name).map(|s| s.default).unwrap_or("");

        let bundle = val("bundle").map(|(v, _)| v.clone()).unwrap_or_else(|| default("bundle").to_string());
        // The same rules as the bundle fields they override (bundle::validate).
        let namespace = match val("namespace") {
            Some((v, src)) => {
                crate::bundle::validate::check_namespace(v)
                    .map_err(|why| anyhow!("parameter `namespace` ({src}): {why}"))?;
                Some(v.clone())
            }
            None => None,
        };
        let replicas = match val("replicas") {
            Some((v, src)) => {
                let n = v
                    .trim()
                    .parse::<u64>()
                    .map_err(|_| anyhow!("parameter `replicas` ({src}) = `{v}` is not a whole number"))?;
                crate::bundle::validate::check_replicas(n)
                    .map_err(|why| anyhow!("parameter `replicas` ({src}): {why}, as for spec.serving.replicas"))?;
                Some(n as u32)
            }
            None => None,
        };
        let templates = val("templates").map(|(v, _)| v.clone());
        let lint_raw = val("lint").map(|(v, s)| (v.as_str(), s.as_str())).unwrap_or((default("lint"), "default"));
        let lint = match lint_raw.0.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" | "1" => true,
            "false" | "no" | "0" => false,
            other => bail!("parameter `lint` ({}) = `{other}` must be \"true\" or \"false\"", lint_raw.1),
        };
        Ok(Params { bundle, namespace, replicas, templates, lint })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precedence_json_over_param_over_env_over_default() {
        let env = CmpEnv::from_pairs([
            ("ARGOCD_ENV_REPLICAS", "1"),
            ("PARAM_REPLICAS", "2"),
            ("PARAM_NAMESPACE", "from-param"),
            ("ARGOCD_ENV_LINT", "false"),
            ("ARGOCD_APP_PARAMETERS", r#"[{"name":"replicas","string":"3"}]"#),
        ]);
        let p = Params::from_env(&env).unwrap();
        assert_eq!(p.replicas, Some(3));
        assert_eq!(p.namespace.as_deref(), Some("from-param"));
        assert!(!p.lint);
        assert_eq!(p.bundle, DEFAULT_BUNDLE);
    }

    #[test]
    fn defaults_when_nothing_is_sent() {
        let p = Params::from_env(&CmpEnv::default()).unwrap();
        assert_eq!(
            p,
            Params { bundle: "release.yaml".into(), namespace: None, replicas: None, templates: None, lint: true }
        );
    }

    /// The variables read are the application's context, each parameter in
    /// both spellings and the verifier image; nothing else is looked up, and
    /// an empty value counts as unset.
    #[test]
    fn the_environment_read_is_named_and_empty_is_unset() {
        let names = CmpEnv::names();
        for n in [
            "ARGOCD_APP_PARAMETERS",
            "BUNDLEGATE_VERIFIER_IMAGE",
            "ARGOCD_ENV_LINT",
            "PARAM_LINT",
            "PARAM_BUNDLE",
            "ARGOCD_ENV_TEMPLATES",
        ] {
            assert!(names.iter().any(|x| x == n), "{n}");
        }
        assert_eq!(names.len(), APP_VARS.len() + 2 * PARAMS.len());
        let asked = std::cell::RefCell::new(Vec::new());
        let env = CmpEnv::from_lookup(|k| {
            asked.borrow_mut().push(k.to_string());
            match k {
                "PARAM_TEMPLATES" => Some("tpl".into()),
                "PARAM_BUNDLE" => Some(String::new()),
                _ => None,
            }
        });
        assert_eq!(*asked.borrow(), names);
        assert_eq!((env.get("PARAM_TEMPLATES"), env.get("PARAM_BUNDLE"), env.get("HOME")), (Some("tpl"), None, None));
        let p = Params::from_env(&env).unwrap();
        assert_eq!((p.templates.as_deref(), p.bundle.as_str()), (Some("tpl"), "release.yaml"));
    }

    /// In the structured list an empty or null string clears what the
    /// environment gave (the UI sends "" for a cleared field); each spelling
    /// of the lint switch; each refusal names the parameter and its source.
    #[test]
    fn structured_parameters_clear_set_and_refuse_by_name() {
        let with = |json: &str| {
            Params::from_env(&CmpEnv::from_pairs([
                ("PARAM_REPLICAS", "2"),
                ("PARAM_BUNDLE", "a.yaml"),
                ("ARGOCD_APP_PARAMETERS", json),
            ]))
        };
        let p = with(
            r#"[{"name":"replicas","string":""},{"name":"bundle","string":null},{"name":"templates","string":"t"}]"#,
        )
        .unwrap();
        assert_eq!((p.replicas, p.bundle.as_str(), p.templates.as_deref()), (None, "release.yaml", Some("t")));
        let p = with(r#"[{"name":"namespace"}]"#).unwrap();
        assert_eq!((p.replicas, p.bundle.as_str(), p.namespace), (Some(2), "a.yaml", None));
        for (v, lint) in [("true", true), (" YES ", true), ("1", true), ("False", false), ("no", false), ("0", false)] {
            let p = Params::from_env(&CmpEnv::from_pairs([("ARGOCD_ENV_LINT", v)])).unwrap();
            assert_eq!(p.lint, lint, "{v}");
        }
        let err = |json: &str| with(json).unwrap_err().to_string();
        assert_eq!(
            err(r#"[{"name":"lint"},{"name":"lint"}]"#),
            "ARGOCD_APP_PARAMETERS: parameter `lint` is given twice"
        );
        assert!(err(r#"[{"string":"x"}]"#).contains("an entry has no `name`"));
        assert!(err(r#"[{"name":"lint","map":{}}]"#).contains("`lint` must be a string, not an array or map"));
        assert!(err(r#"[{"name":"lint","string":5}]"#).contains("`lint` must be a string, found 5"));
        let e = err(r#"[{"name":"lint","name":"bundle"}]"#);
        assert!(e.starts_with("ARGOCD_APP_PARAMETERS: column ") && e.contains("duplicate key"), "{e}");
        let e = err(r#"[{"name":"replica"}]"#);
        assert!(
            e.contains("unknown plugin parameter `replica`")
                && e.contains("bundle, namespace, replicas, templates, lint"),
            "{e}"
        );
        assert!(err(r#"{"name":"lint"}"#).contains("not a JSON array"));
        let e = err(r#"[{"name":"replicas","string":"x"}]"#);
        assert!(e.contains("`replicas` (ARGOCD_APP_PARAMETERS) = `x` is not a whole number"), "{e}");
        let e = Params::from_env(&CmpEnv::from_pairs([("PARAM_NAMESPACE", "Bad_NS")])).unwrap_err().to_string();
        assert!(e.starts_with("parameter `namespace` (PARAM_NAMESPACE): "), "{e}");
        let e = Params::from_env(&CmpEnv::from_pairs([("ARGOCD_ENV_REPLICAS", "100000")])).unwrap_err().to_string();
        assert!(
            e.starts_with("parameter `replicas` (ARGOCD_ENV_REPLICAS): ")
                && e.ends_with("as for spec.serving.replicas"),
            "{e}"
        );
        let e = Params::from_env(&CmpEnv::from_pairs([("PARAM_LINT", "maybe")])).unwrap_err().to_string();
        assert_eq!(e, "parameter `lint` (PARAM_LINT) = `maybe` must be \"true\" or \"false\"");
    }

    #[test]
    fn bad_parameters_are_refused() {
        for (k, v) in [
            ("ARGOCD_APP_PARAMETERS", r#"[{"name":"replica","string":"3"}]"#),
            ("ARGOCD_APP_PARAMETERS", r#"[{"name":"replicas","array":["3"]}]"#),
            ("ARGOCD_APP_PARAMETERS", "not json"),
            ("PARAM_REPLICAS", "three"),
            ("PARAM_NAMESPACE", "Bad_NS"),
            ("PARAM_LINT", "maybe"),
        ] {
            assert!(Params::from_env(&CmpEnv::from_pairs([(k, v)])).is_err(), "{k}={v} accepted");
        }
    }
}
