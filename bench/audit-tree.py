#!/usr/bin/env python3
"""A tree for the sharded-audit bench: BUNDLES release bundles of PER small
objects each, the bytes in a `file:` store, written directly (no publish, so
100,000 objects take seconds). Bundle sizes are skewed on purpose (object
sizes from 256 B to 8 KiB per bundle, every 100th bundle 64 KiB objects) so
the shard balance row means something. Seeded: the same arguments give the
same tree.

    python3 bench/audit-tree.py OUT BUNDLES PER [S3_BUCKET]

Writes OUT/models/mNNNNN/release.yaml (storageUri file:../../store/mNNNNN/v1/),
OUT/store/mNNNNN/v1/*, OUT/items.tsv (bundle id, bundle file bytes: the
shard assignment's weight, declared artifact bytes) and, with
S3_BUCKET, OUT/models-s3/… pointing at s3://S3_BUCKET-mNNNNN/v1/: a bucket
per bundle, because the loopback s3s-fs answers every listing by walking
its whole bucket (100,000 objects for each bundle's 100 made the shared-cache
run 140 s of server time; a real S3 lists a prefix from its index). The
caller links each store folder under the S3 server's folder as that bucket.
"""
import hashlib
import os
import random
import re
import sys

out, bundles, per = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
bucket = sys.argv[4] if len(sys.argv) > 4 else None
here = os.path.dirname(os.path.abspath(__file__))
example = os.path.join(here, "..", "examples", "llm-scratch", "v1")
template = open(os.path.join(example, "release.yaml")).read()
golden = open(os.path.join(example, "golden.jsonl")).read()
head, rest = template.split("    artifacts:\n", 1)
tail = rest[rest.index("  generation:\n"):]
rng = random.Random(19)
chunk = rng.randbytes(1 << 16) + rng.randbytes(1 << 16)

with open(os.path.join(out, "items.tsv"), "w") as items:
    for b in range(bundles):
        name = f"m{b:05d}"
        size = 1 << 16 if b % 100 == 99 else 256 << rng.randrange(6)
        store = os.path.join(out, "store", name, "v1")
        os.makedirs(store, exist_ok=True)
        arts, total = [], 0
        for o in range(per):
            # ckpt.pt first: the example's identity check names it.
            path = "ckpt.pt" if o == 0 else f"part-{o:05d}.bin"
            off = rng.randrange(len(chunk) - size)
            data = chunk[off:off + size - 8] + b.to_bytes(4, "big") + o.to_bytes(4, "big")
            with open(os.path.join(store, path), "wb") as f:
                f.write(data)
            role = "weights" if o == 0 else "other"
            arts.append(f"      - path: {path}\n        role: {role}\n        sha256: {hashlib.sha256(data).hexdigest()}\n        size: {len(data)}\n")
            total += len(data)
        body = head.replace("name: llm-scratch", f"name: {name}") + "    artifacts:\n" + "".join(arts) + tail
        weight = 0
        for tree, uri in [("models", f"file:../../store/{name}/v1/")] + ([("models-s3", f"s3://{bucket}-{name}/v1/")] if bucket else []):
            d = os.path.join(out, tree, name)
            os.makedirs(d, exist_ok=True)
            text = re.sub(r"storageUri: .*", f"storageUri: {uri}", body, count=1)
            with open(os.path.join(d, "release.yaml"), "w") as f:
                f.write(text)
            with open(os.path.join(d, "golden.jsonl"), "w") as f:
                f.write(golden)
            if tree == "models":
                weight = len(text.encode())
        items.write(f"{name}/release.yaml\t{weight}\t{total}\n")
