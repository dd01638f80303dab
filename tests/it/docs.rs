//! Documentation that names tests must name real ones, and a row that
//! names a diagnostic code must be proved by a test that looks for it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use crate::support::repo;
use crate::support::syntax::test_functions;

/// The file a `module::…::test_name` lives in: tests/it/<module>.rs (or a
/// command's folder: tests/it/<module>/<sub>.rs, mod.rs), or
/// for any other path (`adapters::`, `checks::` …) the module file in src/
/// (the longest prefix that names a file: `checks::watch::props::regressions::x`
/// is in src/checks/watch/props.rs).
fn file_of(parts: &[&str]) -> Option<PathBuf> {
    // The longest module path that is a file: `tests/it/a/b.rs`, `tests/it/a/mod.rs`,
    // `tests/it/a.rs` (a command's tests may be a folder), else the library's `src/`.
    let under = |root: PathBuf, k: usize| {
        let base = root.join(parts[..k].join("/"));
        [base.with_extension("rs"), base.join("mod.rs")].into_iter().find(|p| p.is_file())
    };
    (1..parts.len())
        .rev()
        .find_map(|k| under(repo().join("tests/it"), k))
        .or_else(|| (1..parts.len()).rev().find_map(|k| under(repo().join("src"), k)))
}

/// Test functions (`#[test]` or inside `proptest!`) per file, by name → body.
fn tests_in(cache: &mut BTreeMap<PathBuf, BTreeMap<String, String>>, file: &PathBuf) -> BTreeMap<String, String> {
    cache
        .entry(file.clone())
        .or_insert_with(|| {
            let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            test_functions(&syn::parse_file(&text).unwrap()).into_iter().collect()
        })
        .clone()
}

fn is_test_path(cell: &str) -> bool {
    let parts: Vec<&str> = cell.split("::").collect();
    parts.len() >= 2
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
}

/// Every `module::test_name` in docs/reliability.md is a test function
/// (`#[test]`, or a property in `proptest!`), not merely a function of
/// that name; and in a table row that names diagnostic codes (BGnnn), each
/// such code appears in at least one of the row's tests.
#[test]
fn reliability_matrix_names_only_real_tests() {
    let doc = std::fs::read_to_string(repo().join("docs/reliability.md")).unwrap();
    let mut cache = BTreeMap::new();
    let mut named = 0;
    let mut problems = Vec::new();
    for row in doc.lines().filter(|l| l.starts_with('|')) {
        let cells: Vec<&str> = row.split('`').skip(1).step_by(2).filter(|c| is_test_path(c)).collect();
        let mut bodies = Vec::new();
        for cell in &cells {
            let parts: Vec<&str> = cell.split("::").collect();
            let name = parts[parts.len() - 1];
            let Some(file) = file_of(&parts) else {
                problems.push(format!("`{cell}`: no source file for this path"));
                continue;
            };
            match tests_in(&mut cache, &file).get(name) {
                // Token text spaces paths out (`Code :: X`): compare without blanks.
                Some(body) => bodies.push(body.split_whitespace().collect::<String>()),
                None => problems.push(format!("`{cell}` is not a #[test] or proptest function in {}", file.display())),
            }
            named += 1;
        }
        // The codes a row's outcome names must be looked for by its tests.
        let outcome: String = row.split('|').nth(2).unwrap_or("").to_string();
        let codes: Vec<String> = outcome
            .match_indices("BG")
            .filter_map(|(i, _)| outcome.get(i..i + 5))
            .filter(|c| c[2..].chars().all(|d| d.is_ascii_digit()))
            .map(String::from)
            .collect();
        for code in codes {
            if !bodies.is_empty() && !bodies.iter().any(|b| b.contains(&code) || b.contains(&code_name(&code))) {
                problems.push(format!(
                    "row names {code} but none of its tests looks for it: {}",
                    row.chars().take(120).collect::<String>()
                ));
            }
        }
    }
    assert!(problems.is_empty(), "docs/reliability.md:\n{}", problems.join("\n"));
    assert!(named > 60, "the matrix names {named} tests");
}

/// The Rust name of a code's enum variant as a test would write it
/// (`Code::RestartStorm`), from `bundlegate explain`'s registry.
fn code_name(code: &str) -> String {
    let diag = std::fs::read_to_string(repo().join("src/diag.rs")).unwrap();
    diag.lines()
        .find(|l| l.contains(&format!("(\"{code}\"")))
        .and_then(|l| l.split_whitespace().next())
        .map(|v| format!("Code::{v}"))
        .unwrap_or_else(|| format!("no variant for {code}"))
}

/// The check is not vacuous: a `fn` that is not a test is refused.
#[test]
fn a_helper_named_in_the_matrix_is_not_a_test() {
    let file = syn::parse_file("fn helper() {}\n#[test]\nfn real() { assert!(true) }\nproptest! { #[test] fn prop(x in 0..1u8) { prop_assert!(x < 1) } }").unwrap();
    let names: Vec<String> = test_functions(&file).into_iter().map(|t| t.0).collect();
    assert_eq!(names, ["real", "prop"]);
}

// ---------------------------------------------------------------------------
// The command pages: docs/commands/<command>.md, their synopsis and options
// generated from the clap command line (`bundlegate::cli::Cli`), so a flag's
// help text is written once, on its options type (src/options.rs).

use clap::CommandFactory;

/// How every generated block is regenerated; the failure message names it.
const REGENERATE: &str = "BUNDLEGATE_BLESS=1 cargo test --test it docs";

fn cli_begin(what: &str) -> String {
    format!("<!-- cli:begin {what}: generated from the command line (src/cli.rs, src/options.rs) by `{REGENERATE}`; do not edit by hand -->")
}
const CLI_END: &str = "<!-- cli:end -->";

/// The command line, built (usage strings and global flags resolved).
fn cli() -> clap::Command {
    let mut c = bundlegate::cli::Cli::command();
    c.build();
    c
}

/// The commands a user runs: every subcommand clap shows, but its own `help`.
fn user_commands(root: &clap::Command) -> Vec<&clap::Command> {
    root.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help").collect()
}

/// One table cell: one line, `|` escaped (GitHub reads `\|` inside code too).
fn cell(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ").replace('|', "\\|")
}

fn help_of(a: &clap::Arg) -> String {
    a.get_long_help().or(a.get_help()).map(|h| h.to_string()).unwrap_or_default()
}

/// `-A, --allow <CODE>`, `--deep`, `<BUNDLES>...`.
fn arg_name(a: &clap::Arg) -> String {
    let values = a
        .get_value_names()
        .map(|v| v.iter().map(|n| format!("<{n}>")).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| format!("<{}>", a.get_id().as_str().to_uppercase()));
    if a.is_positional() {
        let many = a.get_num_args().is_some_and(|n| n.max_values() > 1);
        return format!("{values}{}", if many { "..." } else { "" });
    }
    let mut names = Vec::new();
    if let Some(s) = a.get_short() {
        names.push(format!("-{s}"));
    }
    if let Some(l) = a.get_long() {
        names.push(format!("--{l}"));
    }
    let takes = a.get_action().takes_values();
    format!("{}{}", names.join(", "), if takes { format!(" {values}") } else { String::new() })
}

/// What a user needs beyond the help text: required, repeatable, default,
/// possible values, the environment variable, conflicts.
fn arg_facts(cmd: &clap::Command, a: &clap::Arg) -> Vec<String> {
    let mut facts = Vec::new();
    if a.is_required_set() {
        facts.push("Required.".to_string());
    }
    let repeatable = matches!(a.get_action(), clap::ArgAction::Append | clap::ArgAction::Count)
        || (a.is_positional() && a.get_num_args().is_some_and(|n| n.max_values() > 1));
    if repeatable && !help_of(a).contains("Repeatable") {
        facts.push("Repeatable.".to_string());
    }
    if a.get_action().takes_values() {
        let defaults: Vec<String> =
            a.get_default_values().iter().map(|d| format!("`{}`", d.to_string_lossy())).collect();
        if !defaults.is_empty() {
            facts.push(format!("Default: {}.", defaults.join(", ")));
        }
        let values: Vec<String> = a
            .get_possible_values()
            .iter()
            .filter(|v| !v.is_hide_set())
            .map(|v| match v.get_help() {
                Some(h) => format!("`{}` ({})", v.get_name(), h.to_string().trim_end_matches('.')),
                None => format!("`{}`", v.get_name()),
            })
            .collect();
        if !values.is_empty() {
            facts.push(format!("Values: {}.", values.join(", ")));
        }
    }
    if let Some(env) = a.get_env() {
        facts.push(format!("Environment: `{}`.", env.to_string_lossy()));
    }
    let conflicts: Vec<String> = cmd.get_arg_conflicts_with(a).iter().map(|c| format!("`{}`", arg_name(c))).collect();
    if !conflicts.is_empty() {
        facts.push(format!("Not with {}.", conflicts.join(", ")));
    }
    facts
}

/// `text` trimmed and ending with a full stop (clap drops the doc comment's).
fn sentence(text: &str) -> String {
    let t = text.trim();
    if t.is_empty() || t.ends_with(['.', '?']) {
        t.to_string()
    } else {
        format!("{t}.")
    }
}

/// A table of `args` (markdown), or nothing when there are none.
fn arg_table(cmd: &clap::Command, args: &[&clap::Arg], head: &str) -> String {
    if args.is_empty() {
        return String::new();
    }
    let mut out = format!("\n| {head} | meaning |\n|---|---|\n");
    for a in args {
        let text = sentence(&help_of(a));
        let facts = arg_facts(cmd, a);
        let all = [text].into_iter().chain(facts).filter(|t| !t.is_empty()).collect::<Vec<_>>().join(" ");
        out += &format!("| `{}` | {} |\n", cell(&arg_name(a)), cell(&all));
    }
    out
}

/// Arguments a subcommand shows that are not the root's global flags
/// (those are on the index page) nor clap's own `--help`.
fn own_args<'a>(root: &clap::Command, cmd: &'a clap::Command) -> Vec<&'a clap::Arg> {
    let globals: Vec<&str> = root.get_arguments().map(|a| a.get_id().as_str()).collect();
    cmd.get_arguments()
        .filter(|a| !a.is_hide_set() && !globals.contains(&a.get_id().as_str()))
        .filter(|a| !["help", "version"].contains(&a.get_id().as_str()))
        .collect()
}

fn usage(cmd: &clap::Command) -> String {
    let u = cmd.clone().render_usage().to_string();
    u.trim().trim_start_matches("Usage:").trim().to_string()
}

/// The synopsis, description, arguments and options of one command (and of
/// each of its subcommands, for `argocd` and `report`).
fn command_block(root: &clap::Command, cmd: &clap::Command, level: usize) -> String {
    let mut out = String::new();
    out += &format!("\n```text\n{}\n```\n", usage(cmd));
    if let Some(about) = cmd.get_long_about().or(cmd.get_about()) {
        out += &format!("\n{}\n", sentence(&about.to_string()));
    }
    let args = own_args(root, cmd);
    let positional: Vec<&clap::Arg> = args.iter().copied().filter(|a| a.is_positional()).collect();
    let options: Vec<&clap::Arg> = args.iter().copied().filter(|a| !a.is_positional()).collect();
    out += &arg_table(cmd, &positional, "argument");
    out += &arg_table(cmd, &options, "option");
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
        out += &format!("\n{} `{}`\n", "#".repeat(level + 1), cmd.get_name().to_string() + " " + sub.get_name());
        out += &command_block(root, sub, level + 1);
    }
    out
}

/// Every generated block: (file, block name, content).
fn cli_blocks() -> Vec<(String, String, String)> {
    let root = cli();
    let mut blocks = Vec::new();
    let mut index = String::from("\n| command | what it does |\n|---|---|\n");
    let mut readme = String::from("\n| command | what it does |\n|---|---|\n");
    let mut docs_index = Vec::new();
    for cmd in user_commands(&root) {
        let name = cmd.get_name();
        let about = cmd.get_about().map(|a| a.to_string()).unwrap_or_default();
        index += &format!("| [`{name}`]({name}.md) | {} |\n", cell(&sentence(&about)));
        readme += &format!("| [`{name}`](docs/commands/{name}.md) | {} |\n", cell(&sentence(&about)));
        docs_index.push(format!("[{name}](commands/{name}.md)"));
        let block = format!("\n## Synopsis\n{}", command_block(&root, cmd, 2));
        blocks.push((format!("docs/commands/{name}.md"), name.to_string(), block));
    }
    let globals: Vec<&clap::Arg> = root
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !["help", "version"].contains(&a.get_id().as_str()))
        .collect();
    let global_block = format!(
        "\n```text\n{}\n```\n{}\n`bundlegate --version` prints the version; `bundlegate help COMMAND` or `COMMAND --help` prints a command's help.\n",
        usage(&root),
        arg_table(&root, &globals, "global option")
    );
    blocks.push(("docs/commands/README.md".into(), "commands".into(), index));
    blocks.push(("docs/commands/README.md".into(), "global-options".into(), global_block));
    blocks.push(("README.md".into(), "commands".into(), readme));
    blocks.push((
        "docs/README.md".into(),
        "commands".into(),
        format!("One page per command: {}.", docs_index.join(", ")),
    ));
    blocks
}

/// `doc` with the block `name` replaced by `content`; `None` when the
/// document has no such block.
fn with_block(doc: &str, name: &str, content: &str) -> Option<String> {
    let begin = format!("<!-- cli:begin {name}:");
    let start = doc.find(&begin)?;
    let end = start + doc[start..].find(CLI_END)? + CLI_END.len();
    Some(format!("{}{}\n{}\n{}{}", &doc[..start], cli_begin(name), content.trim_matches('\n'), CLI_END, &doc[end..]))
}

/// A new command's page, before anyone wrote its prose around the block.
fn new_page(name: &str) -> String {
    format!("# bundlegate {name}\n\n{}\n{CLI_END}\n\n[All commands](README.md)\n", cli_begin(name))
}

/// Every command has its page under docs/commands/, and every generated
/// block (the pages' synopsis and options, the index's command table and
/// global options, the README's command list) is what the command line
/// gives. `BUNDLEGATE_BLESS=1` rewrites them (and writes a page for a new
/// command, to be given its prose).
#[test]
fn command_pages_are_what_the_command_line_gives() {
    let bless = std::env::var_os("BUNDLEGATE_BLESS").is_some();
    let root = cli();
    let mut stale = Vec::new();
    for (file, name, content) in cli_blocks() {
        let path = repo().join(&file);
        let doc = match std::fs::read_to_string(&path) {
            Ok(d) => d,
            Err(_) if bless && root.find_subcommand(&name).is_some() => new_page(&name),
            Err(e) => {
                stale.push(format!("{file}: {e} (a new command gets its page from the command below)"));
                continue;
            }
        };
        let Some(want) = with_block(&doc, &name, &content) else {
            stale.push(format!("{file} has no block `{}`…`{CLI_END}`", cli_begin(&name)));
            continue;
        };
        if want != doc {
            if bless {
                std::fs::write(&path, &want).unwrap();
            } else {
                stale.push(format!("{file} (block `{name}`)"));
            }
        }
    }
    // No page for a command that is gone.
    let names: Vec<String> = user_commands(&root).iter().map(|c| format!("{}.md", c.get_name())).collect();
    for e in std::fs::read_dir(repo().join("docs/commands")).unwrap() {
        let f = e.unwrap().file_name().to_string_lossy().into_owned();
        if f != "README.md" && !names.contains(&f) {
            stale.push(format!("docs/commands/{f}: no such command"));
        }
    }
    assert!(stale.is_empty(), "{}\nrun `{REGENERATE}` and review the diff", stale.join("\n"));
}

// ---------------------------------------------------------------------------
// Links: every relative link in the README, CONTRIBUTING, CHANGELOG and
// docs/ names a file that exists, and a `#fragment` into a markdown file
// names one of its headings.

/// Files another branch adds (the `schema` command's JSON Schemas): a link
/// to one is checked once the file exists, not before.
const PENDING: &[&str] = &["schemas/release-bundle.schema.json", "schemas/pipeline.schema.json"];

/// The markdown files a reader follows links through.
fn doc_files() -> Vec<PathBuf> {
    fn walk(dir: &std::path::Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    let mut files: Vec<PathBuf> =
        ["README.md", "CONTRIBUTING.md", "CHANGELOG.md"].iter().map(|f| repo().join(f)).collect();
    walk(&repo().join("docs"), &mut files);
    files.sort();
    files
}

/// The targets of inline links `[text](target)` outside fenced code blocks
/// and code spans, with their line numbers.
fn link_targets(doc: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fenced = false;
    for (i, line) in doc.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Drop code spans: a `](` inside backticks is not a link.
        let text: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut rest = text.as_str();
        while let Some(k) = rest.find("](") {
            rest = &rest[k + 2..];
            let Some(end) = rest.find(')') else { break };
            let target = rest[..end].split_whitespace().next().unwrap_or("").to_string();
            out.push((i + 1, target));
            rest = &rest[end..];
        }
    }
    out
}

/// GitHub's anchor for a heading: lower case, punctuation but `-` and `_`
/// dropped, spaces made `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(doc: &str) -> Vec<String> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in doc.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            out.push(slug(line.trim_start_matches('#')));
        }
    }
    out
}

#[test]
fn every_relative_link_resolves() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in doc_files() {
        let doc = std::fs::read_to_string(&file).unwrap();
        let name = file.strip_prefix(repo()).unwrap().display().to_string();
        for (line, target) in link_targets(&doc) {
            if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, fragment) = target.split_once('#').unwrap_or((&target, ""));
            let resolved = if path.is_empty() { file.clone() } else { file.parent().unwrap().join(path) };
            let Ok(resolved) = resolved.canonicalize() else {
                let pending = PENDING.iter().any(|p| file.parent().unwrap().join(path).ends_with(p));
                if !pending {
                    broken.push(format!("{name}:{line}: {target}: no such file"));
                }
                continue;
            };
            if !resolved.starts_with(repo().canonicalize().unwrap()) {
                broken.push(format!("{name}:{line}: {target}: outside the repository"));
            }
            if !fragment.is_empty() && resolved.extension().is_some_and(|x| x == "md") {
                let target_doc = std::fs::read_to_string(&resolved).unwrap();
                if !anchors(&target_doc).iter().any(|a| a == fragment) {
                    broken.push(format!("{name}:{line}: {target}: no heading `#{fragment}`"));
                }
            }
            checked += 1;
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    assert!(checked > 50, "only {checked} links checked");
}

/// The link reader is not vacuous: code is not a link, fragments are read.
#[test]
fn links_in_code_are_not_links() {
    let doc = "[a](x.md) `[b](y.md)`\n```\n[c](z.md)\n```\n[d](w.md#two-words) and [e](http://h)\n";
    let targets: Vec<String> = link_targets(doc).into_iter().map(|t| t.1).collect();
    assert_eq!(targets, ["x.md", "w.md#two-words", "http://h"]);
    assert_eq!(anchors("# One\n## Two words: `x`!\n"), ["one", "two-words-x"]);
}

/// docs/README.md is the index of every page under docs/: a page it does
/// not link is a page nobody finds.
#[test]
fn the_docs_index_links_every_page() {
    let index_path = repo().join("docs/README.md");
    let index = std::fs::read_to_string(&index_path).unwrap();
    let linked: Vec<PathBuf> = link_targets(&index)
        .into_iter()
        .filter_map(|(_, t)| repo().join("docs").join(t.split('#').next().unwrap()).canonicalize().ok())
        .collect();
    let missing: Vec<String> = doc_files()
        .into_iter()
        .filter(|f| f.starts_with(repo().join("docs")) && *f != index_path)
        .filter(|f| !linked.contains(&f.canonicalize().unwrap()))
        .map(|f| f.strip_prefix(repo()).unwrap().display().to_string())
        .collect();
    assert!(missing.is_empty(), "docs/README.md does not link: {}", missing.join(", "));
}

/// The version a go.mod requires of `module` (`v1.36.3`).
fn go_mod_version(go_mod: &str, module: &str) -> String {
    let text = std::fs::read_to_string(repo().join(go_mod)).unwrap();
    text.lines()
        .find_map(|l| l.trim().strip_prefix(&format!("{module} ")))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("{go_mod} requires no {module}"))
        .to_string()
}

/// The docs say which real control plane the tests run against; those
/// versions are the ones the go.mod files pin (what scripts/build-control-plane
/// builds), so a version bump that leaves the docs behind fails here.
#[test]
fn the_control_plane_versions_in_the_docs_are_the_built_ones() {
    let k8s = go_mod_version("tests/cluster/go.mod", "k8s.io/kubernetes");
    let etcd = go_mod_version("tests/cluster/go.mod", "go.etcd.io/etcd/server/v3");
    let kwok = go_mod_version("tests/cluster/kwok/go.mod", "sigs.k8s.io/kwok");
    let testing = std::fs::read_to_string(repo().join("docs/testing.md")).unwrap();
    for want in [
        format!("Kubernetes {k8s}"),
        format!("Kubernetes **{k8s}**"),
        format!("etcd {}", etcd.trim_start_matches('v')),
        format!("kwok {}", kwok.trim_start_matches('v')),
    ] {
        assert!(testing.contains(&want), "docs/testing.md does not say `{want}` (tests/cluster/*go.mod)");
    }
    for file in ["README.md", "CONTRIBUTING.md", "docs/testing.md"] {
        let doc = std::fs::read_to_string(repo().join(file)).unwrap();
        for (i, _) in doc.match_indices("Kubernetes v").chain(doc.match_indices("Kubernetes **v")) {
            let said: String = doc[i..].split_whitespace().nth(1).unwrap().trim_matches('*').to_string();
            let said = said.trim_end_matches(|c: char| !c.is_ascii_digit()).to_string();
            assert_eq!(said, k8s, "{file} says Kubernetes {said}; tests/cluster/go.mod builds {k8s}");
        }
    }
}

// ---------------------------------------------------------------------------
// The two files a user writes: every field and every value the parser
// accepts is named on its page (docs/bundle.md, docs/pipeline.md), so a new
// field cannot ship undocumented.

/// serde's `rename_all` of a struct or enum, if any.
fn rename_all(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().filter(|a| a.path().is_ident("serde")).find_map(|a| {
        let text = a.meta.require_list().ok()?.tokens.to_string();
        let at = text.find("rename_all")?;
        text[at..].split('"').nth(1).map(String::from)
    })
}

/// A field's or variant's own `#[serde(rename = "…")]`, if any.
fn renamed(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().filter(|a| a.path().is_ident("serde")).find_map(|a| {
        let text = a.meta.require_list().ok()?.tokens.to_string();
        let at = text.find("rename =")?;
        text[at..].split('"').nth(1).map(String::from)
    })
}

/// `snake_case` or `PascalCase` as serde writes it under `rule`.
fn serde_name(name: &str, rule: Option<&str>) -> String {
    let words: Vec<String> = if name.contains('_') || name.chars().all(|c| !c.is_uppercase()) {
        name.split('_').map(String::from).collect()
    } else {
        let mut w = Vec::new();
        for c in name.chars() {
            if c.is_uppercase() || w.is_empty() {
                w.push(String::new());
            }
            w.last_mut().unwrap().push(c.to_ascii_lowercase());
        }
        w
    };
    match rule {
        Some("camelCase") => {
            words[0].clone() + &words[1..].iter().map(|w| w[..1].to_uppercase() + &w[1..]).collect::<String>()
        }
        Some("kebab-case") => words.join("-"),
        Some("lowercase") => words.concat(),
        _ => name.to_string(),
    }
}

/// Every field and enum value (as written in YAML) of the types that derive
/// `Deserialize` in `file`: (type, name).
fn yaml_names(file: &str) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(repo().join(file)).unwrap();
    let derives_deserialize = |attrs: &[syn::Attribute]| {
        attrs.iter().any(|a| a.path().is_ident("derive") && quote::quote!(#a).to_string().contains("Deserialize"))
    };
    let mut out = Vec::new();
    for item in syn::parse_file(&text).unwrap().items {
        match item {
            syn::Item::Struct(s) if derives_deserialize(&s.attrs) => {
                let rule = rename_all(&s.attrs);
                for f in &s.fields {
                    let Some(ident) = f.ident.as_ref() else { continue };
                    let name = renamed(&f.attrs).unwrap_or_else(|| serde_name(&ident.to_string(), rule.as_deref()));
                    out.push((s.ident.to_string(), name));
                }
            }
            syn::Item::Enum(e) if derives_deserialize(&e.attrs) => {
                let untagged = e.attrs.iter().any(|a| quote::quote!(#a).to_string().contains("untagged"));
                let rule = rename_all(&e.attrs);
                for v in e.variants.iter().filter(|_| !untagged) {
                    out.push((e.ident.to_string(), serde_name(&v.ident.to_string(), rule.as_deref())));
                }
            }
            _ => {}
        }
    }
    out
}

/// The words inside the code spans of `doc` (`spec.serving.rollout.maxSurge`
/// gives each of its parts).
fn code_words(doc: &str) -> BTreeSet<String> {
    doc.split('`')
        .skip(1)
        .step_by(2)
        .flat_map(|span| span.split(|c: char| !(c.is_alphanumeric() || c == '-' || c == '_')))
        .filter(|w| !w.is_empty())
        .map(String::from)
        .collect()
}

fn assert_documents(page: &str, sources: &[&str]) {
    let doc = std::fs::read_to_string(repo().join(page)).unwrap();
    let words = code_words(&doc);
    let missing: Vec<String> = sources
        .iter()
        .flat_map(|f| yaml_names(f))
        .filter(|(_, name)| !words.contains(name))
        .map(|(ty, name)| format!("`{name}` ({ty})"))
        .collect();
    assert!(missing.is_empty(), "{page} does not name {} (write each in a code span)", missing.join(", "));
}

#[test]
fn every_bundle_field_and_value_is_on_the_bundle_page() {
    assert!(yaml_names("src/bundle/model.rs").len() > 80, "the model was read");
    assert_documents("docs/bundle.md", &["src/bundle/model.rs"]);
}

#[test]
fn every_pipeline_field_step_and_value_is_on_the_pipeline_page() {
    assert_documents("docs/pipeline.md", &["src/pipeline/mod.rs"]);
}

#[test]
fn serde_names_are_written_as_in_yaml() {
    assert_eq!(serde_name("max_surge", Some("camelCase")), "maxSurge");
    assert_eq!(serde_name("ChatTemplate", Some("kebab-case")), "chat-template");
    assert_eq!(serde_name("KserveModelspec", Some("kebab-case")), "kserve-modelspec");
    assert_eq!(serde_name("Full", Some("lowercase")), "full");
    assert_eq!(serde_name("ReadWriteOncePod", None), "ReadWriteOncePod");
    assert_eq!(serde_name("name", None), "name");
}
