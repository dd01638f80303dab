#!/usr/bin/env python3
"""Regenerate the example object store (small, deterministic files) and print
each file's sha256 and size. The bundles in llm-scratch/ and embed-minilm/ pin these values."""
import hashlib, json, os, random, struct

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "store", "llm-scratch")

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

DOCS = [f"document {i} of the example corpus" for i in range(16)]
DIM = 8

def embed_files(seed):
    """A sentence-embedding release in the layout sentence-transformers writes, with the
    retrieval index it serves: the index holds one vector per document, made from the
    weights' bytes, so new weights re-embed it (a stand-in for running the model)."""
    rnd = random.Random(100 + seed)
    weights = bytes(rnd.getrandbits(8) for _ in range(4096))
    vocab = "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(60)]).encode() + b"\n"
    tok = json.dumps({"version": "1.0", "model": {"type": "WordPiece", "unk_token": "[UNK]"}}, sort_keys=True).encode()
    config = json.dumps({"architectures": ["BertModel"], "hidden_size": DIM, "model_type": "bert"}, sort_keys=True).encode()
    modules = json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
    ], sort_keys=True).encode()
    pooling = json.dumps({"word_embedding_dimension": DIM, "pooling_mode_mean_tokens": True,
                          "pooling_mode_cls_token": False, "pooling_mode_max_tokens": False}, sort_keys=True).encode()
    index = struct.pack("<4sII", b"VIDX", len(DOCS), DIM)
    for doc in DOCS:
        h = hashlib.sha256(weights + doc.encode()).digest()
        vec = [b / 255.0 - 0.5 for b in h[:DIM]]
        norm = sum(x * x for x in vec) ** 0.5
        index += struct.pack(f"<{DIM}f", *(x / norm for x in vec))
    schema = json.dumps({"format": "flat-f32-le", "dimension": DIM, "metric": "cosine", "normalized": True,
                         "documents": DOCS}, sort_keys=True).encode()
    return {"model.safetensors": weights, "vocab.txt": vocab, "tokenizer.json": tok, "config.json": config,
            "modules.json": modules, "1_Pooling/config.json": pooling, "index/docs.index": index,
            "index/index_schema.json": schema}

def write(root, version, named):
    d = os.path.join(root, version)
    for name, data in named.items():
        os.makedirs(os.path.dirname(os.path.join(d, name)), exist_ok=True)
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
        print(os.path.basename(root), version, name, hashlib.sha256(data).hexdigest(), len(data))

for version, seed in (("v1", 1), ("v2", 2)):
    write(ROOT, version, files(version, seed))
for version, seed in (("v1", 1), ("v2", 2)):
    write(os.path.join(HERE, "store", "embed-minilm"), version, embed_files(seed))
