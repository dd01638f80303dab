"""The obvious alternative to `bundlegate preflight` for bench/preflight-scale.sh:
load the JSON snapshot and sum requests per node. Only the arithmetic core of
a capacity check (no taints, selectors, quotas, volumes, PDBs or surge plan),
so the ratio flatters this script."""
import json
import sys


def cpu(q):
    return float(q[:-1]) / 1000 if q.endswith("m") else float(q)


doc = json.load(open(sys.argv[1]))
free = {}
for it in doc["items"]:
    if it["kind"] == "Node":
        a = it["status"]["allocatable"]
        free[it["metadata"]["name"]] = [cpu(a["cpu"]), int(a.get("nvidia.com/gpu", "0"))]
for it in doc["items"]:
    if it["kind"] == "Pod" and it["status"].get("phase") in ("Running", "Pending"):
        n = free.get(it["spec"].get("nodeName"))
        if n is None:
            continue
        for c in it["spec"]["containers"]:
            r = c.get("resources", {}).get("requests", {})
            n[0] -= cpu(r.get("cpu", "0"))
            n[1] -= int(r.get("nvidia.com/gpu", "0"))
print(sum(1 for v in free.values() if v[1] >= 1 and v[0] >= 4), "nodes with room for a 1-GPU, 4-CPU pod")
