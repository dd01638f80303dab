//! The benchmark figures in docs/ are what the committed
//! results file (bench/results/latest.json, written by bench/run) gives,
//! formatted by bench/figures.rs (the module `cargo bench --bench report`
//! writes them with): a figure edited by hand, or a results file committed
//! without its blocks, fails here. The file itself must hold together: every
//! baseline a row of the same run, ratios that are the figures' ratios, a
//! statistic that says how many runs, a reason for every row not measured or
//! over budget. No figure is judged here (no timed assertions).

#[path = "../../bench/figures.rs"]
mod figures;

use serde_json::{json, Value};
use std::path::Path;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn results() -> Value {
    let text = std::fs::read_to_string(repo().join(figures::RESULTS)).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn readme_and_docs_figures_are_what_the_results_file_gives() {
    let r = results();
    let mut stale = Vec::new();
    for (file, name, sections) in figures::BLOCKS {
        let doc = std::fs::read_to_string(repo().join(file)).unwrap();
        let want = figures::render(&doc, name, sections, &r).unwrap_or_else(|e| panic!("{file}: {e}"));
        if want != doc {
            stale.push(format!("{file} (block `{name}`)"));
        }
    }
    assert!(
        stale.is_empty(),
        "{} differ from {}: run `cargo bench --bench report -- --write` (never edit a figure by hand)",
        stale.join(", "),
        figures::RESULTS
    );
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

#[test]
fn the_results_file_holds_together() {
    let r = results();
    let rows = r["rows"].as_array().expect("rows");
    let sections: Vec<&str> = r["sections"].as_array().unwrap().iter().map(|s| str_of(s, "name").unwrap()).collect();
    for s in r["sections"].as_array().unwrap() {
        let status = str_of(s, "status").unwrap();
        assert!(["measured", "skipped", "not measured", "failed", "over budget"].contains(&status), "{s}");
    }
    for row in rows {
        let name = str_of(row, "name").expect("a name");
        let section = str_of(row, "section").expect("a section");
        assert!(sections.contains(&section), "{name}: section {section} is not in the sections list");
        assert_eq!(rows.iter().filter(|o| str_of(o, "name") == Some(name)).count(), 1, "{name} twice");
        let status = str_of(row, "status").unwrap();
        match status {
            "ok" => assert!(row["figure"].is_f64(), "{name}: measured rows have a figure"),
            "over budget" => assert!(str_of(row, "reason").is_some() && str_of(row, "budget").is_some(), "{name}"),
            "not measured" => assert!(row["figure"].is_null() && str_of(row, "reason").is_some(), "{name}"),
            other => panic!("{name}: status {other}"),
        }
        if let Some(stat) = str_of(row, "statistic") {
            let runs = row["runs"].as_u64().expect("runs");
            let want = if runs == 1 {
                "single run".to_string()
            } else {
                stat.split(" of ").next().unwrap().to_string() + &format!(" of {runs}")
            };
            assert_eq!(stat, want, "{name}: the statistic says how many runs");
        }
        match (str_of(row, "baseline"), row["figure"].as_f64()) {
            (None, _) => assert!(row["ratio"].is_null(), "{name}: a baseline has no ratio"),
            (Some(b), figure) => {
                let base =
                    rows.iter().find(|o| str_of(o, "name") == Some(b)).unwrap_or_else(|| panic!("{name}: no row {b}"));
                if let (Some(f), Some(bf)) = (figure, base["figure"].as_f64()) {
                    let ratio = row["ratio"].as_f64().expect("ratio");
                    assert!((ratio - f / bf).abs() <= 1e-3 * (f / bf), "{name}: ratio {ratio} is not {f} / {bf}");
                }
            }
        }
    }
}

fn sample(status: &str, figure: Value, reason: Value) -> Value {
    json!({
        "date": "2026-12-04T21:40:00Z", "commit": "0123456789abcdef", "uncommittedChanges": false,
        "machine": {"cores": 2, "cpu": "Test CPU", "memoryGiB": 4.0, "loadAverageAtEnd": 1.5},
        "mode": "small", "tree": {"description": "t", "objects": 1, "bytes": 1048576},
        "sections": [{"name": "cmp", "status": "measured", "reason": null}],
        "rows": [
            {"section": "cmp", "name": "kubectl kustomize (overlay)", "figure": 0.07, "unit": "s", "statistic": "median of 100",
             "runs": 100, "peakRssKiB": 40960, "baseline": null, "ratio": null, "status": "ok", "reason": null, "budget": null},
            {"section": "cmp", "name": "bundlegate argocd generate (CMP)", "figure": figure, "unit": "s", "statistic": "median of 100",
             "runs": 100, "peakRssKiB": 13926, "baseline": "kubectl kustomize (overlay)", "ratio": 0.2071, "status": status,
             "reason": reason, "budget": "10 ms median"}
        ],
        "notes": [{"section": "cmp", "text": "hyperfine | 100 runs"}]
    })
}

const DOC: &str = "# Doc\n\n<!-- bench:begin argocd: old -->\nold figures\n<!-- bench:end -->\n\nafter\n";

#[test]
fn a_budget_miss_and_a_row_not_measured_say_so() {
    let over = figures::render(
        DOC,
        "argocd",
        &["cmp"],
        &sample("over budget", json!(0.0145), json!("median 14.5 ms > 10 ms")),
    )
    .unwrap();
    assert!(over.contains("| bundlegate argocd generate (CMP) | 14.5 ms, **over the 10 ms median budget** | median of 100 | kubectl kustomize (overlay), 70.0 ms | 0.21× | 13.6 MiB |"), "{over}");
    assert!(over.contains("- hyperfine | 100 runs\n"), "notes are kept as written: {over}");
    assert!(
        over.starts_with("# Doc\n\n<!-- bench:begin argocd: written from")
            && over.ends_with("<!-- bench:end -->\n\nafter\n"),
        "{over}"
    );
    let within = figures::render(DOC, "argocd", &["cmp"], &sample("ok", json!(0.0092), Value::Null)).unwrap();
    assert!(within.contains("| 9.20 ms (within the 10 ms median budget) |"), "{within}");
    let mut without = sample("not measured", Value::Null, json!("kubectl not installed"));
    without["sections"][0] = json!({"name": "cmp", "status": "not measured", "reason": "kubectl not installed"});
    let missing = figures::render(DOC, "argocd", &["cmp"], &without).unwrap();
    assert!(missing.contains("| not measured: kubectl not installed |"), "{missing}");
    let line = "\nSections left out or not complete in this run: `cmp` not measured (kubectl not installed).\n";
    assert!(missing.contains(line), "{missing}");
    assert!(!missing.contains("0.21×"), "no ratio without a figure: {missing}");
}

#[test]
fn a_figure_edited_by_hand_differs_from_the_generated_block() {
    let r = sample("ok", json!(0.0092), Value::Null);
    let good = figures::render(DOC, "argocd", &["cmp"], &r).unwrap();
    assert_eq!(figures::render(&good, "argocd", &["cmp"], &r).unwrap(), good, "rendering is stable");
    let edited = good.replace("70.0 ms", "104 ms");
    assert_ne!(edited, good);
    assert_eq!(figures::render(&edited, "argocd", &["cmp"], &r).unwrap(), good, "the edit is what the check reports");
    assert!(
        figures::render("no markers\n", "argocd", &["cmp"], &r).is_err(),
        "a document without its block is an error"
    );
}

/// A section measured alone (`BENCH_ONLY`) and merged into the results
/// says so beside the run the block otherwise quotes: its own date, mode,
/// machine and commit.
#[test]
fn a_section_measured_alone_says_when_and_how() {
    let mut r = sample("ok", json!(0.0092), Value::Null);
    let alone = figures::render(DOC, "argocd", &["cmp"], &r).unwrap();
    assert!(!alone.contains("run of its own"), "{alone}");
    r["sections"][0]["run"] = json!({
        "date": "2026-12-08T00:38:00Z", "commit": "fedcba9876543210", "uncommittedChanges": true, "mode": "full",
        "machine": {"cores": 2, "cpu": "Test CPU", "memoryGiB": 4.0, "loadAverageAtEnd": 2.5}
    });
    let out = figures::render(DOC, "argocd", &["cmp"], &r).unwrap();
    let line = "\nSection `cmp` measured in a run of its own (`BENCH_ONLY=cmp bash bench/run`), not the run above: 2026-12-08 00:38 UTC, full mode, 2 cores (Test CPU), 4 GiB RAM, load average 2.5 at the end; commit fedcba9 plus uncommitted changes.\n";
    assert!(out.contains(line), "{out}");
    assert!(out.contains("2026-12-04 21:40 UTC, small mode"), "the whole run is still quoted: {out}");
}
