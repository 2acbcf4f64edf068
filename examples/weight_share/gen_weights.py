#!/usr/bin/python3
"""Writes synthetic LLaMA-shaped weights as safetensors, from a seeded PRNG.

The tensors have Hugging Face LLaMA names and shapes (model.layers.N.self_attn.q_proj.weight
...), F16 by default; --f32 also writes the same values as F32 (the "compute layout" file the
mmap mode maps). The model's shape is in the header's __metadata__ (all strings, as the
format requires). The values are random: outputs are meaningless text, but sizes, memory and
bandwidth are those of a real model of that shape.

  gen_weights.py --preset tinyllama --layers 4 --out w.safetensors --f32 w.f32.safetensors
"""
import argparse
import json
import struct
import sys

import numpy as np

PRESETS = {
    # name: dim, n_heads, n_kv_heads, ffn_dim, vocab, n_layers
    "tiny": (64, 4, 2, 128, 256, 4),
    "tinyllama": (2048, 32, 4, 5632, 32000, 4),      # TinyLlama-1.1B's layer shape
    "llama7b-slice": (4096, 32, 32, 11008, 32000, 2),  # LLaMA-7B's layer shape
}


def tensor_list(dim, n_heads, n_kv, ffn, vocab, layers):
    kv_dim = dim // n_heads * n_kv if n_heads and dim % n_heads == 0 else dim
    out = [("model.embed_tokens.weight", (vocab, dim))]
    for i in range(layers):
        p = f"model.layers.{i}."
        out += [
            (p + "input_layernorm.weight", (dim,)),
            (p + "self_attn.q_proj.weight", (dim, dim)),
            (p + "self_attn.k_proj.weight", (kv_dim, dim)),
            (p + "self_attn.v_proj.weight", (kv_dim, dim)),
            (p + "self_attn.o_proj.weight", (dim, dim)),
            (p + "post_attention_layernorm.weight", (dim,)),
            (p + "mlp.gate_proj.weight", (ffn, dim)),
            (p + "mlp.up_proj.weight", (ffn, dim)),
            (p + "mlp.down_proj.weight", (dim, ffn)),
        ]
    out.append(("model.norm.weight", (dim,)))
    return out


def values(seed, index, name, shape):
    rng = np.random.default_rng([seed, index])
    if len(shape) == 1:  # norm weights: around 1
        return (1.0 + 0.1 * rng.standard_normal(shape, dtype=np.float32)).astype(np.float16)
    return (0.02 * rng.standard_normal(shape, dtype=np.float32)).astype(np.float16)


def write(path, tensors, meta, seed, dtype):
    esize = 2 if dtype == "F16" else 4
    header, off = {"__metadata__": meta}, 0
    for name, shape in tensors:
        n = int(np.prod(shape)) * esize
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [off, off + n]}
        off += n
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((-(8 + len(text))) % 64)  # data starts 64-byte aligned; spaces are allowed
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for i, (name, shape) in enumerate(tensors):
            v = values(seed, i, name, shape)
            f.write((v if dtype == "F16" else v.astype(np.float32)).tobytes())
    return off


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--preset", choices=sorted(PRESETS), default="tinyllama")
    ap.add_argument("--layers", type=int, help="number of decoder layers (default: the preset's)")
    ap.add_argument("--heads", type=int, help="override n_heads (for bad-shape tests)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", required=True, help="F16 safetensors file")
    ap.add_argument("--f32", help="also write the same values as F32 here")
    a = ap.parse_args()
    dim, heads, kv, ffn, vocab, layers = PRESETS[a.preset]
    if a.layers is not None:
        layers = a.layers
    if a.heads is not None:
        heads = a.heads
        kv = min(kv, heads)
    meta = {"format": "pt", "generator": "symmem examples/weight_share/gen_weights.py",
            "preset": a.preset, "seed": str(a.seed), "dim": str(dim), "n_layers": str(layers),
            "n_heads": str(heads), "n_kv_heads": str(kv), "ffn_dim": str(ffn),
            "vocab_size": str(vocab), "norm_eps": "1e-05", "rope_theta": "10000.0",
            "tie_word_embeddings": "true"}
    tensors = tensor_list(dim, heads, kv, ffn, vocab, layers)
    n16 = write(a.out, tensors, meta, a.seed, "F16")
    msg = f"{a.out}: {a.preset} {layers} layers, {n16 / 2**20:.1f} MiB F16"
    if a.f32:
        n32 = write(a.f32, tensors, meta, a.seed, "F32")
        msg += f"; {a.f32}: {n32 / 2**20:.1f} MiB F32"
    print(msg)


if __name__ == "__main__":
    sys.exit(main())
