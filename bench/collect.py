#!/usr/bin/env python3
"""Turn one bench/run's rows into bench/results/latest.json and print the
summary table. Python standard library only.

Rows (bench/lib.sh): section, name, figure, unit, statistic, peak RSS KiB,
baseline, status, reason, budget; "-" for none. Notes: section, text.
Sections: name, status, reason. The file keeps every figure as measured; the
README and docs blocks are written from it by `cargo bench --bench report`.

With --only SECTIONS (bench/run with BENCH_ONLY) the run measured those
sections alone: their rows, notes and section entries replace the same
sections' in the existing --out file, everything else in it is kept as it was,
and each replaced section entry carries its own `run` (date, commit, mode,
machine), so a reader sees which figures come from which run.
"""
import argparse
import datetime
import json
import os
import re
import sys


def tsv(path, columns):
    out = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            cells = line.rstrip("\n").split("\t")
            if line.strip() == "":
                continue
            if len(cells) != columns:
                sys.exit(f"{path}:{n}: {len(cells)} columns, expected {columns}: {line!r}")
            out.append([None if c == "-" else c for c in cells])
    return out


def runs_of(statistic):
    if statistic == "single run":
        return 1
    m = re.fullmatch(r"(median|best|mean) of (\d+)", statistic or "")
    if not m:
        sys.exit(f"unknown statistic {statistic!r} (single run, median of N, best of N, mean of N)")
    return int(m.group(2))


def machine():
    cpu = "unknown"
    mem_kib = 0
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = " ".join(line.split(":", 1)[1].split())
                break
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                mem_kib = int(line.split()[1])
    with open("/proc/loadavg") as f:
        load = float(f.read().split()[0])
    return {"cores": os.cpu_count(), "cpu": cpu, "memoryGiB": round(mem_kib / 1048576, 1), "loadAverageAtEnd": load}


def main():
    ap = argparse.ArgumentParser()
    for a in ("rows", "notes", "sections", "mode", "skip", "tree", "objects", "bytes", "commit", "dirty", "out"):
        ap.add_argument("--" + a, required=True)
    ap.add_argument("--only", default="", help="comma-separated sections measured alone, merged into --out")
    args = ap.parse_args()
    only = [s for s in args.only.split(",") if s]

    rows = []
    for section, name, figure, unit, statistic, rss, base, status, reason, budget in tsv(args.rows, 10):
        rows.append({
            "section": section, "name": name,
            "figure": None if figure is None else float(figure), "unit": unit,
            "statistic": statistic, "runs": None if statistic is None else runs_of(statistic),
            "peakRssKiB": None if rss is None else int(rss),
            "baseline": base, "ratio": None, "status": status, "reason": reason, "budget": budget,
        })
    by_name = {}
    for r in rows:
        if r["name"] in by_name:
            sys.exit(f"two rows named {r['name']!r}")
        by_name[r["name"]] = r
        if r["status"] not in ("ok", "over budget", "not measured"):
            sys.exit(f"row {r['name']!r}: unknown status {r['status']!r}")
    for r in rows:
        b = r["baseline"]
        if b is None:
            continue
        if b not in by_name:
            sys.exit(f"row {r['name']!r}: baseline {b!r} is not a row of this run")
        base = by_name[b]
        if r["figure"] is not None and base["figure"]:
            r["ratio"] = float(f"{r['figure'] / base['figure']:.4g}")

    sections = [{"name": n, "status": s, "reason": r} for n, s, r in tsv(args.sections, 3)]
    notes = [{"section": s, "text": t} for s, t in tsv(args.notes, 2)]
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    if only:
        doc = merge_into(args, only, date, sections, rows, notes)
    else:
        doc = whole_run(args, date, sections, rows, notes)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=2, ensure_ascii=False)
        f.write("\n")
    summary(doc, args, only)


def whole_run(args, date, sections, rows, notes):
    return {
        "schema": 1,
        "writtenBy": "bench/run (bench/collect.py)",
        "date": date,
        "commit": args.commit,
        "uncommittedChanges": args.dirty == "yes",
        "machine": machine(),
        "mode": args.mode,
        "benchSkip": [s for s in args.skip.split(",") if s],
        "tree": {"description": args.tree, "objects": int(args.objects), "bytes": int(args.bytes)},
        "sections": sections,
        "rows": rows,
        "notes": notes,
    }


def merge_into(args, only, date, sections, rows, notes):
    """The existing results with the sections in `only` replaced by this run's."""
    with open(args.out) as f:
        doc = json.load(f)
    run = {
        "date": date, "commit": args.commit, "uncommittedChanges": args.dirty == "yes",
        "mode": args.mode, "machine": machine(),
    }
    fresh = [dict(s, run=run) for s in sections if s["name"] in only]
    if sorted(s["name"] for s in fresh) != sorted(only):
        sys.exit(f"--only {only}: this run recorded sections {[s['name'] for s in sections]}")
    # A section measured only as another's set-up (the verify tree) is not merged.
    rows = [r for r in rows if r["section"] in only]
    notes = [n for n in notes if n["section"] in only]
    for r in rows:
        if r["baseline"] is not None and r["baseline"] not in {x["name"] for x in rows}:
            sys.exit(f"row {r['name']!r}: baseline {r['baseline']!r} is not a row of this run")
    kept = [s for s in doc["sections"] if s["name"] not in only]
    known = [s["name"] for s in doc["sections"]]
    # Keep bench/run's order: a section replaced where it was, a new one at the end.
    doc["sections"] = [next(x for x in fresh if x["name"] == s["name"]) if s["name"] in only else s for s in doc["sections"]]
    doc["sections"] += [x for x in fresh if x["name"] not in known]
    assert len(doc["sections"]) == len(kept) + len(fresh)
    # Rows and notes in the sections' order, each section's own order kept.
    order = {s["name"]: i for i, s in enumerate(doc["sections"])}
    for key, new in (("rows", rows), ("notes", notes)):
        merged = [x for x in doc[key] if x["section"] not in only] + new
        doc[key] = sorted(merged, key=lambda x: order.get(x["section"], len(order)))
    return doc


def summary(doc, args, only):
    rows = [r for r in doc["rows"] if not only or r["section"] in only]
    run = doc if not only else next(s["run"] for s in doc["sections"] if s["name"] in only)
    m = run["machine"]
    print(f"== summary ({run['date']}, {run['mode']} mode, {m['cores']} cores, {m['cpu']}, load {m['loadAverageAtEnd']})")
    print("   ratio = this row's figure / its baseline's (below 1: faster than the alternative)")
    print(f"  {'measurement':<52} {'seconds':>10}  {'statistic':<13} {'compared with':<34} {'ratio':>8}  {'peak RSS':>10}")
    for r in rows:
        fig = "-" if r["figure"] is None else f"{r['figure']:.4g}"
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.3g}x"
        rss = "-" if r["peakRssKiB"] is None else f"{r['peakRssKiB'] / 1024:.1f} MiB"
        flag = "" if r["status"] == "ok" else f"  ** {r['status'].upper()}: {r['reason']}"
        print(f"  {r['name'][:52]:<52} {fig:>10}  {r['statistic'] or '-':<13} {(r['baseline'] or '(baseline)')[:34]:<34} {ratio:>8}  {rss:>10}{flag}")
    for s in doc["sections"]:
        if only and s["name"] not in only:
            continue
        if s["status"] != "measured":
            print(f"  section {s['name']}: {s['status']} ({s['reason']})")
    for n in doc["notes"]:
        if not only or n["section"] in only:
            print(f"  {n['text']}")
    if only:
        print(f"  sections {', '.join(only)} merged into the results of the run of {doc['date']}")
    else:
        print(f"  objects in tree: {args.objects}; bytes: {args.bytes}")
    print(f"  results: {args.out}")


if __name__ == "__main__":
    main()
