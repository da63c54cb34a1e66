#!/usr/bin/env python3
"""PyTorch + transformers on the same model directory and GPU as CudaBench: prefill tok/s (one
forward over batch x prompt tokens) and decode tok/s of generate() (greedy, exactly N new tokens)
at batch 1, 8, 32, 128, 256. Timed with CUDA synchronisation, after a warm-up; prefill the
median of 3 after one untimed forward of the same shape (as CudaBench).

    python3 hf_generate.py /tmp/qwen3-1.7b [prompt=128] [new_tokens=32]
"""
import sys, time, torch
from transformers import AutoModelForCausalLM

def main():
    d = sys.argv[1]
    prompt = int(sys.argv[2]) if len(sys.argv) > 2 else 128
    new = int(sys.argv[3]) if len(sys.argv) > 3 else 32
    try:  # transformers 5 names it dtype, 4.x torch_dtype
        model = AutoModelForCausalLM.from_pretrained(d, dtype=torch.bfloat16)
    except TypeError:
        model = AutoModelForCausalLM.from_pretrained(d, torch_dtype=torch.bfloat16)
    model = model.cuda().eval()
    vocab = model.config.vocab_size
    print(f"transformers on {torch.cuda.get_device_name()}: {d}")
    print("| batch | prefill tok/s | decode tok/s (generate) |")
    print("|---|---|---|")
    g = torch.Generator(device="cuda").manual_seed(1)
    for b in (1, 8, 32, 128, 256):
        ids = torch.randint(0, vocab, (b, prompt), device="cuda", generator=g)
        with torch.no_grad():
            model(ids, logits_to_keep=1); torch.cuda.synchronize()
            runs = []
            for _ in range(3):
                t = time.perf_counter(); model(ids, logits_to_keep=1); torch.cuda.synchronize()
                runs.append(time.perf_counter() - t)
            prefill = b * prompt / sorted(runs)[1]
            kw = dict(do_sample=False, min_new_tokens=new, max_new_tokens=new, pad_token_id=0)
            model.generate(ids, **dict(kw, min_new_tokens=2, max_new_tokens=2)); torch.cuda.synchronize()
            t = time.perf_counter(); model.generate(ids, **dict(kw, min_new_tokens=1, max_new_tokens=1))
            torch.cuda.synchronize(); first = time.perf_counter() - t
            t = time.perf_counter(); model.generate(ids, **kw); torch.cuda.synchronize()
            total = time.perf_counter() - t
        decode = b * (new - 1) / max(total - first, 1e-9)
        print(f"| {b} | {prefill:.0f} | {decode:.1f} |", flush=True)

if __name__ == "__main__":
    main()
