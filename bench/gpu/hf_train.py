#!/usr/bin/env python3
"""The PyTorch side of the GPU training run (docs/benchmarks.md, "GPU training"), on the same model
directory and GPU as CudaTrainBench, after it:

1. gradient check: reads CudaTrainBench's DUMP_DIR (row.json, adapter.safetensors,
   troupe_grads.safetensors) and recomputes L = sum_t coef_t * logprob_t and the gradient of every
   LoRA A and B in FP32 (the BF16 checkpoint upcast exactly, TF32 off; LoRA as
   y = x W^T + (alpha / r) * (x A^T) B^T on the seven projections, in plain torch), each packed
   segment on its own (attention never crosses segments, so the sum is the packed row's loss).
   Prints ||troupe - torch|| / ||torch|| for the log-probabilities and per gradient tensor (worst
   and median) and FAILS (exit 1) when the worst tensor is above TOL;
2. speed: one training step on a row of ROW tokens (one sequence, every position trained: forward,
   a weighted log-probability loss, backward, clip_grad_norm_ 0.1, AdamW) with PEFT (LoRA r 8,
   alpha 16, all seven projections, dropout 0) on the BF16 model with SDPA attention, without and
   with gradient checkpointing; 2 warm-up steps, then the median of STEPS with CUDA
   synchronisation. Without peft installed, the same LoRA in plain torch (said so in the output).

    python3 hf_train.py MODEL_DIR DUMP_DIR [row=2048] [steps=5]
"""
import json, os, statistics, sys, time, torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM

TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
TOL = 1e-1  # provisional until measured: BF16 activations over 28 layers against FP32

def load(d, dtype, **kw):
    try:  # transformers 5 names it dtype, 4.x torch_dtype
        m = AutoModelForCausalLM.from_pretrained(d, dtype=dtype, **kw)
    except TypeError:
        m = AutoModelForCausalLM.from_pretrained(d, torch_dtype=dtype, **kw)
    return m.cuda()

class Lora(torch.nn.Module):
    """A frozen linear layer plus (alpha / r) * B A, PEFT's LoRA without dropout."""
    def __init__(self, base, a, b, scale):
        super().__init__()
        self.base, self.scale = base, scale
        self.a, self.b = torch.nn.Parameter(a), torch.nn.Parameter(b)
    def forward(self, x):
        return self.base(x) + self.scale * ((x @ self.a.t()) @ self.b.t())

def attach(model, tensors, scale):
    """Wraps every projection named in tensors ("<module>.lora_A"/"lora_B"); returns name -> Lora."""
    out = {}
    for name in sorted({k[: -len(".lora_A")] for k in tensors if k.endswith(".lora_A")}):
        parent, child = name.rsplit(".", 1)
        base = getattr(model.get_submodule(parent), child)
        a = tensors[name + ".lora_A"].to(base.weight.device, base.weight.dtype)
        b = tensors[name + ".lora_B"].to(base.weight.device, base.weight.dtype)
        lora = Lora(base, a, b, scale)
        setattr(model.get_submodule(parent), child, lora)
        out[name] = lora
    return out

def rel(x, y):
    return (torch.linalg.vector_norm(x - y) / torch.linalg.vector_norm(y).clamp_min(1e-30)).item()

def gradient_check(d, dump):
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    row = json.load(open(os.path.join(dump, "row.json")))
    adapter = load_file(os.path.join(dump, "adapter.safetensors"))
    troupe = load_file(os.path.join(dump, "troupe_grads.safetensors"))
    model = load(d, torch.float32)
    model.requires_grad_(False)
    loras = attach(model, adapter, row["alpha"] / row["rank"])
    tokens, segs, coef = row["tokens"], row["segments"], torch.tensor(row["coef"], device="cuda")
    lp_all = torch.zeros(len(tokens), device="cuda")
    loss = 0.0
    start = 0
    while start < len(tokens):
        end = start
        while end < len(tokens) and segs[end] == segs[start]: end += 1
        ids = torch.tensor([tokens[start:end]], device="cuda")
        logits = model(input_ids=ids).logits[0].float()
        lp = torch.log_softmax(logits[:-1], -1).gather(-1, ids[0, 1:, None])[:, 0]
        loss = loss + (coef[start:end - 1] * lp).sum()
        lp_all[start:end - 1] = lp.detach()
        start = end
    loss.backward()
    mask = torch.tensor([c != 0 for c in row["coef"]], device="cuda")
    lp_err = rel(torch.tensor(row["logprobs"], device="cuda")[mask], lp_all[mask])
    errs = {}
    for name, lora in loras.items():
        errs[name + ".lora_A"] = rel(troupe[name + ".lora_A"].cuda(), lora.a.grad)
        errs[name + ".lora_B"] = rel(troupe[name + ".lora_B"].cuda(), lora.b.grad)
    worst = max(errs, key=errs.get)
    print(f"gradient check on {torch.cuda.get_device_name()}, {len(tokens)} tokens: Troupe (BF16) vs "
          f"PyTorch FP32: logprobs {lp_err:.2e}; {len(errs)} LoRA tensors, median "
          f"{statistics.median(errs.values()):.2e}, worst {errs[worst]:.2e} ({worst})", flush=True)
    del model, loras
    torch.cuda.empty_cache()
    return errs[worst] <= TOL and lp_err <= TOL

def lora_model(d, use_peft):
    """The BF16 model with LoRA r 8, alpha 16 on the seven projections: PEFT's, or plain torch."""
    model = load(d, torch.bfloat16, attn_implementation="sdpa")
    if use_peft:
        from peft import LoraConfig, get_peft_model
        return get_peft_model(model, LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0,
                                                target_modules=TARGETS, bias="none"))
    model.requires_grad_(False)
    g = torch.Generator().manual_seed(3407)
    tensors = {}
    for name, m in model.named_modules():
        if name.rsplit(".", 1)[-1] in TARGETS and isinstance(m, torch.nn.Linear):
            bound = 1 / m.in_features ** 0.5
            tensors[name + ".lora_A"] = (torch.rand(8, m.in_features, generator=g) * 2 - 1) * bound
            tensors[name + ".lora_B"] = torch.zeros(m.out_features, 8)
    for lora in attach(model, tensors, 2.0).values():  # adapters in FP32, as PEFT keeps them
        lora.a.data, lora.b.data = lora.a.data.float(), lora.b.data.float()
    return model

def time_steps(model, n, steps):
    """Median seconds of a training step on one row of n tokens, after 2 warm-up steps."""
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=5e-6, betas=(0.9, 0.99), weight_decay=0.1)
    g = torch.Generator(device="cuda").manual_seed(11)
    ids = torch.randint(0, model.config.vocab_size, (1, n), device="cuda", generator=g)
    w = torch.randint(0, 2, (n - 1,), device="cuda", generator=g).float() * 2 - 1
    times = []
    for s in range(steps + 2):
        torch.cuda.synchronize(); t = time.perf_counter()
        logits = model(input_ids=ids).logits[0, :-1].float()
        lp = torch.log_softmax(logits, -1).gather(-1, ids[0, 1:, None])[:, 0]
        loss = -(w * lp).mean()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 0.1)
        opt.step(); opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        if s >= 2: times.append(time.perf_counter() - t)
        del logits, lp, loss
    return times

def speed(d, n, steps):
    try:
        import peft  # noqa: F401
        use_peft = True
    except ImportError:
        use_peft = False
    for checkpointing in (False, True):
        what = ("PEFT" if use_peft else "plain-torch LoRA (peft not installed)") + (
            " + gradient checkpointing" if checkpointing else "")
        try:
            model = lora_model(d, use_peft)
            if checkpointing:
                model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            times = time_steps(model, n, steps)
            med = statistics.median(times)
            print(f"{what}: one row of {n} tokens, median {med * 1e3:.1f} ms of {steps} "
                  f"({', '.join(f'{x * 1e3:.1f}' for x in times)}), {n / med:.0f} tokens/s, peak "
                  f"{torch.cuda.max_memory_allocated() >> 20} MiB", flush=True)
        except Exception as e:  # one variant failing still leaves the others' figures
            print(f"{what}: FAILED: {type(e).__name__}: {e}", flush=True)
        model = None
        torch.cuda.empty_cache(); torch.cuda.reset_peak_memory_stats()

def main():
    d, dump = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 2048
    steps = int(sys.argv[4]) if len(sys.argv) > 4 else 5
    ok = gradient_check(d, dump)
    speed(d, n, steps)
    if not ok:
        sys.exit(f"gradient check FAILED (tolerance {TOL})")

if __name__ == "__main__":
    main()
