#!/usr/bin/env python3
"""Writes a random-weight Hugging Face model directory shaped like Qwen3-1.7B or Llama-3.1-8B
(BF16 safetensors, weights N(0, 0.02) from a seed, norms 1), generated on the machine: nothing to
download. Both CudaBench (Java) and hf_generate.py (transformers) load the same directory.

    python3 make_random_model.py qwen3-1.7b /dev/shm/qwen3-1.7b [seed]

RoPE settings go in as transformers 5 takes them (rope_parameters) or 4.x (rope_theta,
rope_scaling); the saved config.json is read back and must hold the intended theta and scaling in
one form or the other, else this exits 1: a silently dropped theta makes a different model.
"""
import json, os, sys, torch, transformers

SHAPES = {
    "qwen3-1.7b": dict(cls="Qwen3", vocab_size=151936, hidden_size=2048, intermediate_size=6144,
                       num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=8,
                       head_dim=128, rope_theta=1e6, tie_word_embeddings=True, rms_norm_eps=1e-6,
                       max_position_embeddings=40960),
    "llama-3.1-8b": dict(cls="Llama", vocab_size=128256, hidden_size=4096, intermediate_size=14336,
                         num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
                         rope_theta=5e5, tie_word_embeddings=False, rms_norm_eps=1e-5,
                         max_position_embeddings=131072,
                         rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                       "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}),
}

def rope_kwargs(s):
    """rope_theta/rope_scaling of SHAPES as this transformers version's config classes take them."""
    theta, scaling = s.pop("rope_theta"), s.pop("rope_scaling", None)
    if int(transformers.__version__.split(".")[0]) >= 5:
        return {"rope_parameters": dict(scaling or {"rope_type": "default"}, rope_theta=theta)}
    return dict(rope_theta=theta, **({"rope_scaling": scaling} if scaling else {}))

def check_rope(out, theta, scaling):
    c = json.load(open(os.path.join(out, "config.json")))
    p = c.get("rope_parameters") or dict(c.get("rope_scaling") or {}, rope_theta=c.get("rope_theta"))
    ok = p.get("rope_theta") == theta and all(p.get(k) == v for k, v in (scaling or {}).items())
    if not ok:
        sys.exit(f"{out}/config.json lost the rope settings: wanted theta {theta} {scaling}, got {p}")

def main():
    name, out = sys.argv[1], sys.argv[2]
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 20250611
    s = dict(SHAPES[name]); cls = s.pop("cls")
    theta, scaling = s["rope_theta"], s.get("rope_scaling")
    rope = rope_kwargs(s)  # takes rope_theta/rope_scaling out of s
    cfg = getattr(transformers, cls + "Config")(**s, **rope)
    torch.manual_seed(seed)
    torch.set_default_dtype(torch.bfloat16)  # build in BF16: half the memory of FP32 then cast
    with torch.device("cuda" if torch.cuda.is_available() else "cpu"):
        model = getattr(transformers, cls + "ForCausalLM")(cfg)
    with torch.no_grad():
        for n, p in model.named_parameters():
            if n.endswith("norm.weight"): p.fill_(1.0)
            else: p.normal_(0.0, 0.02)
    model.save_pretrained(out, safe_serialization=True)
    check_rope(out, theta, scaling)
    print("wrote", out, "with transformers", transformers.__version__)

if __name__ == "__main__":
    main()
