#!/usr/bin/python3
"""Writes tiny random Hugging Face models and the logits PyTorch computes for them.

Run with Debian's torch (apt-get install python3-torch):  /usr/bin/python3 tools/golden/make_golden.py
Output: cluster-node/src/test/resources/golden/{llama,qwen3}/ with config.json, model.safetensors
(BF16 for Llama, F16 for Qwen3) and golden.json ({"tokens": [...], "logits": [[...], ...]}).

The model math follows transformers' modeling_llama.py / modeling_qwen3.py (eager attention), written
out here because transformers is not installed: RMSNorm in float32, rotate_half RoPE (with the
llama3 frequency scaling of modeling_rope_utils._compute_llama3_parameters), repeat_kv for GQA,
causal softmax in float32, SwiGLU MLP, tied or separate LM head. Compute is float32 on the weights as
stored (BF16/F16 upcast), as transformers does with torch_dtype=float32.
"""
import json
import math
import os
import struct

import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
OUT = os.path.join(ROOT, "cluster-node", "src", "test", "resources", "golden")

MODELS = {
    "llama": dict(
        architectures=["LlamaForCausalLM"], model_type="llama", hidden_act="silu",
        vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=256,
        rms_norm_eps=1e-5, rope_theta=500000.0,
        rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                          original_max_position_embeddings=32),
        tie_word_embeddings=False, bos_token_id=1, eos_token_id=2, torch_dtype="bfloat16"),
    "qwen3": dict(
        architectures=["Qwen3ForCausalLM"], model_type="qwen3", hidden_act="silu",
        vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=32, max_position_embeddings=256,
        rms_norm_eps=1e-6, rope_theta=1000000.0, rope_scaling=None,
        tie_word_embeddings=True, bos_token_id=None, eos_token_id=3, torch_dtype="float16"),
}
DTYPES = {"llama": (torch.bfloat16, "BF16"), "qwen3": (torch.float16, "F16")}


def tensor_shapes(c):
    h, d = c["hidden_size"], c["head_dim"]
    q, kv, i = c["num_attention_heads"] * d, c["num_key_value_heads"] * d, c["intermediate_size"]
    s = {"model.embed_tokens.weight": (c["vocab_size"], h)}
    for l in range(c["num_hidden_layers"]):
        p = f"model.layers.{l}."
        s[p + "input_layernorm.weight"] = (h,)
        s[p + "self_attn.q_proj.weight"] = (q, h)
        s[p + "self_attn.k_proj.weight"] = (kv, h)
        s[p + "self_attn.v_proj.weight"] = (kv, h)
        if c["model_type"] == "qwen3":
            s[p + "self_attn.q_norm.weight"] = (d,)
            s[p + "self_attn.k_norm.weight"] = (d,)
        s[p + "self_attn.o_proj.weight"] = (h, q)
        s[p + "post_attention_layernorm.weight"] = (h,)
        s[p + "mlp.gate_proj.weight"] = (i, h)
        s[p + "mlp.up_proj.weight"] = (i, h)
        s[p + "mlp.down_proj.weight"] = (h, i)
    s["model.norm.weight"] = (h,)
    if not c["tie_word_embeddings"]:
        s["lm_head.weight"] = (c["vocab_size"], h)
    return s


def write_safetensors(path, tensors, code):
    header, offset, blobs = {}, 0, []
    for name, t in tensors.items():
        raw = t.contiguous().view(torch.int16).numpy().tobytes() if t.dtype != torch.float32 \
            else t.contiguous().numpy().tobytes()
        header[name] = {"dtype": code, "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        blobs.append(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def rms_norm(x, w, eps):
    x = x.to(torch.float32)
    var = x.pow(2).mean(-1, keepdim=True)
    return w * (x * torch.rsqrt(var + eps))


def inv_freq(c):
    d, base = c["head_dim"], c["rope_theta"]
    f = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))
    r = c.get("rope_scaling")
    if r and r["rope_type"] == "llama3":
        factor, lo, hi, old = r["factor"], r["low_freq_factor"], r["high_freq_factor"], r["original_max_position_embeddings"]
        low_wl, high_wl = old / lo, old / hi
        wavelen = 2 * math.pi / f
        f_l = torch.where(wavelen > low_wl, f / factor, f)
        smooth = (old / wavelen - lo) / (hi - lo)
        smoothed = (1 - smooth) * f_l / factor + smooth * f_l
        medium = ~(wavelen < high_wl) * ~(wavelen > low_wl)
        f = torch.where(medium, smoothed, f_l)
    return f


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def forward(c, w, tokens):
    T, d = len(tokens), c["head_dim"]
    nh, nkv = c["num_attention_heads"], c["num_key_value_heads"]
    eps = c["rms_norm_eps"]
    x = w["model.embed_tokens.weight"][torch.tensor(tokens)]  # [T, H]
    pos = torch.arange(T, dtype=torch.float32)
    freqs = torch.outer(pos, inv_freq(c))  # [T, d/2]
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos()[:, None, :], emb.sin()[:, None, :]  # [T, 1, d]
    mask = torch.full((T, T), float("-inf")).triu(1)
    for l in range(c["num_hidden_layers"]):
        p = f"model.layers.{l}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = (h @ w[p + "self_attn.q_proj.weight"].T).view(T, nh, d)
        k = (h @ w[p + "self_attn.k_proj.weight"].T).view(T, nkv, d)
        v = (h @ w[p + "self_attn.v_proj.weight"].T).view(T, nkv, d)
        if c["model_type"] == "qwen3":
            q = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, w[p + "self_attn.k_norm.weight"], eps)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(nh // nkv, dim=1)  # repeat_kv
        v = v.repeat_interleave(nh // nkv, dim=1)
        scores = torch.einsum("thd,shd->hts", q, k) / math.sqrt(d) + mask
        probs = torch.softmax(scores.float(), dim=-1)
        attn = torch.einsum("hts,shd->thd", probs, v).reshape(T, nh * d)
        x = x + attn @ w[p + "self_attn.o_proj.weight"].T
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        g = torch.nn.functional.silu(h @ w[p + "mlp.gate_proj.weight"].T)
        x = x + (g * (h @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
    h = rms_norm(x, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if c["tie_word_embeddings"] else w["lm_head.weight"]
    return h @ head.T


def main():
    for i, (name, c) in enumerate(MODELS.items()):
        g = torch.Generator().manual_seed(1234 + i)
        dtype, code = DTYPES[name]
        stored = {}
        for tname, shape in tensor_shapes(c).items():
            t = torch.randn(shape, generator=g) * (0.1 if "norm" in tname else 0.08)
            if "norm" in tname:
                t = t + 1.0
            stored[tname] = t.to(dtype)
        weights = {k: v.to(torch.float32) for k, v in stored.items()}
        tokens = torch.randint(0, c["vocab_size"], (40,), generator=g).tolist()
        with torch.no_grad():
            logits = forward(c, weights, tokens)
        d = os.path.join(OUT, name)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(c, f, indent=2)
        write_safetensors(os.path.join(d, "model.safetensors"), stored, code)
        with open(os.path.join(d, "golden.json"), "w") as f:
            json.dump({"torch": torch.__version__, "tokens": tokens,
                       "logits": [[float(f"{v:.7g}") for v in row] for row in logits.tolist()]}, f)
        print(name, "tokens", len(tokens), "logit range", float(logits.min()), float(logits.max()))


if __name__ == "__main__":
    main()
