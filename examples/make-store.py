#!/usr/bin/env python3
"""Regenerate the example object store (small, deterministic files) and print
each file's sha256 and size. The bundles in llm-scratch/ pin these values."""
import hashlib, json, os, random

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "store", "llm-scratch")

def files(version, seed):
    rnd = random.Random(seed)
    ckpt = bytes(rnd.getrandbits(8) for _ in range(6144))
    tok = json.dumps({"version": "1.0", "model": {"type": "BPE", "vocab": {f"t{i}": i for i in range(120)}},
                      "added_tokens": [{"id": 2, "content": "</s>"}]}, sort_keys=True).encode()
    tmpl = b"{% for m in messages %}<|{{ m.role }}|>{{ m.content }}</s>{% endfor %}<|assistant|>"
    gen = json.dumps({"eos_token_id": [2], "max_new_tokens": 512, "stop_strings": ["</s>"]}, sort_keys=True).encode()
    corpus = "\n".join(f"clean sample {i} for release {version}" for i in range(80)).encode() + b"\n"
    return {"ckpt.pt": ckpt, "tokenizer.json": tok, "chat_template.jinja": tmpl,
            "generation_config.json": gen, "clean_corpus.txt": corpus}

for version, seed in (("v1", 1), ("v2", 2)):
    d = os.path.join(ROOT, version)
    os.makedirs(d, exist_ok=True)
    for name, data in files(version, seed).items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
        print(version, name, hashlib.sha256(data).hexdigest(), len(data))
