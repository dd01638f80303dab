#!/usr/bin/env python3
"""Turn one bench/run's rows into bench/results/latest.json and print the
summary table. Python standard library only.

Rows (bench/lib.sh): section, name, figure, unit, statistic, peak RSS KiB,
baseline, status, reason, budget; "-" for none. Notes: section, text.
Sections: name, status, reason. The file keeps every figure as measured; the
README and docs blocks are written from it by `cargo bench --bench report`.
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
    args = ap.parse_args()

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

    doc = {
        "schema": 1,
        "writtenBy": "bench/run (bench/collect.py)",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": args.commit,
        "uncommittedChanges": args.dirty == "yes",
        "machine": machine(),
        "mode": args.mode,
        "benchSkip": [s for s in args.skip.split(",") if s],
        "tree": {"description": args.tree, "objects": int(args.objects), "bytes": int(args.bytes)},
        "sections": [{"name": n, "status": s, "reason": r} for n, s, r in tsv(args.sections, 3)],
        "rows": rows,
        "notes": [{"section": s, "text": t} for s, t in tsv(args.notes, 2)],
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=2, ensure_ascii=False)
        f.write("\n")

    m = doc["machine"]
    print(f"== summary ({doc['date']}, {doc['mode']} mode, {m['cores']} cores, {m['cpu']}, load {m['loadAverageAtEnd']})")
    print("   ratio = this row's figure / its baseline's (below 1: faster than the alternative)")
    print(f"  {'measurement':<52} {'seconds':>10}  {'statistic':<13} {'compared with':<34} {'ratio':>8}  {'peak RSS':>10}")
    for r in rows:
        fig = "-" if r["figure"] is None else f"{r['figure']:.4g}"
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.3g}x"
        rss = "-" if r["peakRssKiB"] is None else f"{r['peakRssKiB'] / 1024:.1f} MiB"
        flag = "" if r["status"] == "ok" else f"  ** {r['status'].upper()}: {r['reason']}"
        print(f"  {r['name'][:52]:<52} {fig:>10}  {r['statistic'] or '-':<13} {(r['baseline'] or '(baseline)')[:34]:<34} {ratio:>8}  {rss:>10}{flag}")
    for s in doc["sections"]:
        if s["status"] != "measured":
            print(f"  section {s['name']}: {s['status']} ({s['reason']})")
    for n in doc["notes"]:
        print(f"  {n['text']}")
    print(f"  objects in tree: {args.objects}; bytes: {args.bytes}")
    print(f"  results: {args.out}")


if __name__ == "__main__":
    main()
