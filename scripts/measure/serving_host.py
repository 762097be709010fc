#!/usr/bin/env python3
"""Real-hardware measurements of what a serving step costs beyond its model kernels (issue 48):
the host's work in a torch serving loop (scheduling over a paged KV cache, input preparation,
the CUDA-graph launch, the wait for the sampled tokens, output processing with incremental
detokenisation), the sampler's kernels, tokenisation, and a Llama-2-7B-shaped prefill's kernels
one by one in fp16 and fp8. Each part writes its own CSV into OUT_DIR when it finishes; a part
that fails is recorded and the rest still run. Changes no device setting; samples SM clock and
board power through NVML around each part (clocks.csv).

  host-loop.csv   per step of a synchronous decode loop, B sequences (B = 1..256), the host's
                  time in each phase (median of 200 steps, perf_counter): schedule (append a
                  block when a sequence crosses a 16-token boundary), prepare (input ids,
                  positions, slot mapping, sequence lengths and the block table as pinned tensors
                  copied into the graph's static inputs), launch (graph.replay() returning),
                  wait (from there until the sampled ids are on the host), process (append,
                  incremental detokenisation as vLLM's detokenize_incrementally does it, stop
                  checks, a response record); and the GPU's own time for the step (events)
  graph-launch.csv  a CUDA graph of N 1-element adds (N = 10-3000): the host's time in
                  graph.replay(), the GPU's time for the graph, and the wall time to a synchronize
  sampler.csv     the sampler's kernels (greedy argmax, and vLLM V0's torch top-k/top-p path:
                  float logits, temperature, sort, softmax, cumsum, mask, scatter, softmax,
                  log-softmax, exponential race), GPU time from a CUDA graph, and the host's
                  wall time of an eager call that ends with .tolist(), for B x vocabulary
  sampler-v0.csv  the same for vLLM V0's path without top-k/top-p, greedy and random
  sampler-kernels.csv  each kernel of the greedy and V0 paths (profiler GPU timestamps)
  tokenize.csv    a byte-level BPE (32000 tokens, trained here on the repository's text):
                  encoding prompts of 128..8192 tokens, and incremental detokenisation per token
  prefill-kernels.csv  every kernel of a Llama-2-7B-shaped prefill at 2048 tokens (profiler GPU
                  timestamps), fp16 and fp8 (e4m3 weights and activations, per-tensor scales,
                  torch._scaled_mm, bf16 out; attention in bf16), the median over the 32 layers
                  of each kernel's position in a layer
  prefill-fp8.csv the fp8 prefill's time to first token, 128/512/2048 tokens, from a CUDA graph

Usage: python3 serving_host.py OUT_DIR [part ...]   (parts: host-loop graph-launch sampler
sampler-v0 sampler-kernels tokenize prefill-kernels prefill-fp8; default all)"""
import glob
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_microbench import graph_of  # noqa: E402
from serving_kernels import per_call_graph, rms, run_parts  # noqa: E402

dev = torch.device("cuda")
REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BLOCK = 16


def med(v):
    return statistics.median(v) if v else float("nan")


# ---------------------------------------------------------------------------------------------
# tokenizer: a byte-level BPE trained on this repository's text (no download is possible there)

_TOK = {}


def tokenizer():
    if "tok" in _TOK:
        return _TOK["tok"]
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    files = [f for pat in ("docs/**/*.md", "sim/**/*.cpp", "sim/**/*.h", "python/**/*.py", "scripts/*.py",
                           "configs/**/*.yaml", "models/**/*.cpp", "models/**/*.h", "tests/**/*.cpp")
             for f in glob.glob(os.path.join(REPO, pat), recursive=True)]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train(files, trainers.BpeTrainer(vocab_size=32000, show_progress=False,
                                         initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    try:
        from transformers import PreTrainedTokenizerFast
        hf = PreTrainedTokenizerFast(tokenizer_object=tok)
    except Exception as e:  # transformers missing: detokenise through the tokenizers API
        print("transformers wrapper unavailable:", e, flush=True)
        hf = None
    text = " ".join(open(f, errors="replace").read() for f in files[:400])
    _TOK.update(tok=(tok, hf), text=text, files=len(files), vocab=tok.get_vocab_size())
    return _TOK["tok"]


def detok_step(hf, tok, ids, state):
    """One token of incremental detokenisation in the manner of vLLM's detokenize_incrementally
    (vllm/transformers_utils/detokenizer_utils.py): convert the new id to its token, then
    decode the window [prefix_offset:read_offset] and [prefix_offset:] and emit the difference
    once it no longer ends in an incomplete character."""
    if hf is not None:
        new = [t or "" for t in hf.convert_ids_to_tokens([ids[-1]])]  # vLLM: _replace_none_with_empty
        toks = state["tokens"] + new
        prefix = hf.convert_tokens_to_string(toks[state["p"]:state["r"]])
        full = hf.convert_tokens_to_string(toks[state["p"]:])
    else:
        toks = state["tokens"] + [tok.id_to_token(ids[-1])]
        prefix = tok.decode(ids[state["p"]:state["r"]])
        full = tok.decode(ids[state["p"]:])
    state["tokens"] = toks
    if len(full) > len(prefix) and not full.endswith("\ufffd"):
        state["text"] += full[len(prefix):]
        state["p"], state["r"] = state["r"], len(toks)


# ---------------------------------------------------------------------------------------------
# host-loop: a synchronous decode loop around a captured graph

def host_loop_rows():
    tok, hf = tokenizer()
    text_ids = tok.encode(_TOK["text"][:200000]).ids
    vocab = tok.get_vocab_size()
    V, D, LAYERS, MAXB = 32000, 512, 32, 256
    max_blocks = 4096 // BLOCK
    torch.manual_seed(0)
    # a decode-shaped model small enough that the GPU's time is short and the host's shows:
    # per layer a norm, a QKV linear, a gather from the paged cache, an output linear, an MLP
    Ws = [dict(qkv=torch.randn(3 * D, D, device=dev, dtype=torch.bfloat16) * 0.02,
               o=torch.randn(D, D, device=dev, dtype=torch.bfloat16) * 0.02,
               up=torch.randn(2 * D, D, device=dev, dtype=torch.bfloat16) * 0.02,
               dn=torch.randn(D, D, device=dev, dtype=torch.bfloat16) * 0.02,
               n=torch.ones(D, device=dev, dtype=torch.bfloat16)) for _ in range(LAYERS)]
    emb = torch.randn(V, D, device=dev, dtype=torch.bfloat16) * 0.02
    cache = torch.randn(4096, BLOCK, D, device=dev, dtype=torch.bfloat16)  # one paged cache for all layers
    s_ids = torch.zeros(MAXB, dtype=torch.long, device=dev)
    s_pos = torch.zeros(MAXB, dtype=torch.long, device=dev)
    s_slot = torch.zeros(MAXB, dtype=torch.long, device=dev)
    s_lens = torch.zeros(MAXB, dtype=torch.int32, device=dev)
    s_bt = torch.zeros(MAXB, max_blocks, dtype=torch.int32, device=dev)
    rows = []
    for B in [1, 8, 32, 64, 128, 256]:
        def fwd(B=B):
            x = emb[s_ids[:B]] + s_pos[:B, None].to(torch.bfloat16) * 0
            last = s_bt[:B, 0].long()
            for w in Ws:
                h = F.linear(rms(x, w["n"]), w["qkv"])[:, :D]
                ctx = cache[last, 0] + h  # one block of the paged cache per sequence
                x = x + F.linear(ctx, w["o"])
                g, u = F.linear(rms(x, w["n"]), w["up"]).chunk(2, dim=-1)
                x = x + F.linear(F.silu(g) * u, w["dn"])
            cache.view(-1, D)[s_slot[:B]] = x  # the step's KV write into its slots
            logits = F.linear(x, emb)
            return logits.argmax(dim=-1)
        held = {}
        with torch.no_grad():  # the last call, the captured one, leaves the graph's output tensor
            g = graph_of(lambda: held.update(out=fwd()), 1)
        out = held["out"]
        free = []

        def alloc():
            if not free:  # block ids are reused freely: only the host's bookkeeping is measured
                free.extend(range(4096))
            return free.pop()
        seqs = []
        for i in range(B):
            plen = 100 + 37 * i % 900
            ids = text_ids[i * 50 % 100000:][:plen]
            nblk = (len(ids) + BLOCK - 1) // BLOCK
            blocks = [alloc() for _ in range(nblk)]
            st_ = {"tokens": tok_ids_to_tokens(hf, tok, ids[-6:]), "p": 0, "r": 6, "text": ""}
            seqs.append({"ids": list(ids), "blocks": blocks, "det": st_, "out": [], "stop": ["</s>", "\n\n\n"],
                         "max_tokens": 10**9})
        phases = {k: [] for k in ("schedule", "prepare", "launch", "wait", "process", "step_wall", "gpu")}
        pin = {k: torch.empty(n, dtype=dt, pin_memory=True) for k, n, dt in
               (("ids", MAXB, torch.long), ("pos", MAXB, torch.long), ("slot", MAXB, torch.long),
                ("lens", MAXB, torch.int32), ("bt", MAXB * max_blocks, torch.int32))}
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        for step in range(230):
            t0 = time.perf_counter()
            # schedule: every running sequence gets a slot for its next token
            sched = []
            for s in seqs:
                n = len(s["ids"])
                if n % BLOCK == 0:
                    s["blocks"].append(alloc())
                sched.append(s)
            t1 = time.perf_counter()
            # prepare inputs: lists, then pinned tensors, then asynchronous copies into the graph's inputs
            ids_l = [s["ids"][-1] for s in sched]
            pos_l = [len(s["ids"]) - 1 for s in sched]
            slot_l = [s["blocks"][p // BLOCK] * BLOCK + p % BLOCK for s, p in zip(sched, pos_l)]
            lens_l = [len(s["ids"]) for s in sched]
            width = max(len(s["blocks"]) for s in sched)
            bt_l = [s["blocks"] + [0] * (width - len(s["blocks"])) for s in sched]
            pin["ids"][:B] = torch.tensor(ids_l, dtype=torch.long)
            pin["pos"][:B] = torch.tensor(pos_l, dtype=torch.long)
            pin["slot"][:B] = torch.tensor(slot_l, dtype=torch.long)
            pin["lens"][:B] = torch.tensor(lens_l, dtype=torch.int32)
            bt = torch.tensor(bt_l, dtype=torch.int32)
            s_ids[:B].copy_(pin["ids"][:B], non_blocking=True)
            s_pos[:B].copy_(pin["pos"][:B], non_blocking=True)
            s_slot[:B].copy_(pin["slot"][:B], non_blocking=True)
            s_lens[:B].copy_(pin["lens"][:B], non_blocking=True)
            s_bt[:B, :width].copy_(bt.to(dev, non_blocking=True))
            t2 = time.perf_counter()
            e0.record()
            g.replay()
            e1.record()
            t3 = time.perf_counter()
            new = out.tolist()
            t4 = time.perf_counter()
            # process outputs: append, detokenise, stop checks, a response record
            resp = []
            for s, t in zip(sched, new):
                t %= vocab  # the stand-in model's 32000 logits onto the tokenizer's vocabulary
                s["ids"].append(t)
                detok_step(hf, tok, s["ids"], s["det"])
                done = len(s["out"]) >= s["max_tokens"] or any(x in s["det"]["text"][-8:] for x in s["stop"])
                s["out"].append(t)
                resp.append({"id": id(s), "token": t, "text": s["det"]["text"][-16:], "finished": done})
            if len(s["det"]["text"]) > 4096:
                for s in sched:
                    s["det"]["text"] = s["det"]["text"][-64:]
            t5 = time.perf_counter()
            if step >= 30:
                for k, v in (("schedule", t1 - t0), ("prepare", t2 - t1), ("launch", t3 - t2), ("wait", t4 - t3),
                             ("process", t5 - t4), ("step_wall", t5 - t0), ("gpu", e0.elapsed_time(e1) / 1e3)):
                    phases[k].append(v * 1e6)
        row = {"batch": B, "steps": len(phases["gpu"]), "layers": LAYERS, "graph_kernels": graph_kernels(g)}
        for k, v in phases.items():
            row[k + "_us"] = round(med(v), 2)
        row["host_exposed_us"] = round(med([w - gg for w, gg in zip(phases["step_wall"], phases["gpu"])]), 2)
        rows.append(row)
        print(row, flush=True)
        del g
        torch.cuda.empty_cache()
    return rows


def tok_ids_to_tokens(hf, tok, ids):
    return hf.convert_ids_to_tokens(list(ids)) if hf is not None else [tok.id_to_token(i) for i in ids]


def graph_kernels(g):
    try:
        return len(profiled_replay(g))
    except Exception:  # the profiler unavailable: the count is left out
        return ""


# ---------------------------------------------------------------------------------------------
# graph-launch: what a CUDA graph's launch costs the host, by its number of kernels

def graph_launch_rows():
    """Graphs of N back-to-back 1-element adds, N = 10-3000: the host's time in
    `graph.replay()` (median of 50), the GPU's time from an event before the replay to one after
    it, and the wall time from the call to the end of a synchronize (each replay alone, the GPU
    idle before it)."""
    x = torch.zeros(1, device=dev)
    rows = []
    for n in [10, 100, 300, 1000, 3000]:
        g = graph_of(lambda: x.add_(1), n)
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        calls, gpus, walls = [], [], []
        for i in range(60):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            e0.record()
            g.replay()
            e1.record()
            t1 = time.perf_counter()
            torch.cuda.synchronize()
            t2 = time.perf_counter()
            if i >= 10:
                calls.append((t1 - t0) * 1e6)
                walls.append((t2 - t0) * 1e6)
                gpus.append(e0.elapsed_time(e1) * 1e3)
        rows.append({"kernels": n, "replay_call_us": round(med(calls), 2), "gpu_us": round(med(gpus), 2),
                     "wall_to_sync_us": round(med(walls), 2), "per_kernel_call_us": round(med(calls) / n, 4),
                     "per_kernel_gpu_us": round(med(gpus) / n, 4)})
        print(rows[-1], flush=True)
        del g
    return rows


# ---------------------------------------------------------------------------------------------
# sampler kernels

def top_k_top_p_sample(logits, temp, top_k, top_p):
    """vLLM V0's torch path (vllm/model_executor/layers/sampler.py: _apply_top_k_top_p,
    then _sample_with_torch's _multinomial with an exponential race)."""
    logits = logits.float().div_(temp[:, None])
    logits_sort, logits_idx = logits.sort(dim=-1, descending=False)
    k_mask = logits_sort.size(1) - top_k.to(torch.long)
    k_mask = logits_sort.gather(1, k_mask.unsqueeze(1))
    logits_sort.masked_fill_(logits_sort < k_mask, -float("inf"))
    probs_sort = logits_sort.softmax(dim=-1)
    probs_sum = probs_sort.cumsum(dim=-1)
    p_mask = probs_sum <= 1 - top_p.unsqueeze(1)
    p_mask[:, -1] = False
    logits_sort.masked_fill_(p_mask, -float("inf"))
    logits = torch.empty_like(logits_sort).scatter_(dim=-1, index=logits_idx, src=logits_sort)
    probs = torch.softmax(logits, dim=-1, dtype=torch.float)
    logprobs = torch.log_softmax(logits, dim=-1, dtype=torch.float)
    q = torch.empty_like(probs).exponential_()
    return probs.div_(q).argmax(dim=1), logprobs


def v0_sample(logits, temp, greedy):
    """vLLM V0's Sampler.forward without penalties, top-k/top-p or min-p (the defaults, or
    top_p=1.0 as its benchmark_latency.py asks), as vllm/model_executor/layers/sampler.py
    runs it: float logits divided by the temperature, softmax and log-softmax; greedy,
    torch.argmax(logprobs); random, _multinomial over probs[sample_indices] (a row gather) with
    an exponential race; then _get_logprobs's rank of each sampled token (_get_ranks over
    logprobs[query_indices], another row gather)."""
    B = logits.size(0)
    rows = torch.arange(B, device=logits.device)
    logits = logits.to(torch.float)
    logits.div_(temp.unsqueeze(dim=1))
    probs = torch.softmax(logits, dim=-1, dtype=torch.float)
    logprobs = torch.log_softmax(logits, dim=-1, dtype=torch.float)
    if greedy:
        ids = torch.argmax(logprobs, dim=-1)
    else:
        p = probs[rows]
        ids = p.div_(torch.empty_like(p).exponential_()).argmax(dim=1)
    x = logprobs[rows]
    vals = x[torch.arange(0, len(x), device=x.device, dtype=ids.dtype), ids]
    ranks = (x > vals[:, None]).sum(1).add_(1)
    return ids, ranks


def sampler_rows(modes=("greedy", "top_k_top_p", "v0_greedy", "v0_random")):
    rows = []
    for V in [32000, 128256]:
        for B in [1, 8, 32, 64, 128, 256]:
            logits = torch.randn(B, V, device=dev, dtype=torch.bfloat16)
            temp = torch.full((B,), 0.8, device=dev)
            top_k = torch.full((B,), 50, device=dev, dtype=torch.int32)
            top_p = torch.full((B,), 0.95, device=dev)
            ones = torch.ones_like(temp)
            fns = {"greedy": lambda: logits.argmax(dim=-1),
                   "top_k_top_p": lambda: top_k_top_p_sample(logits, temp, top_k, top_p),
                   "v0_greedy": lambda: v0_sample(logits, ones, True),
                   "v0_random": lambda: v0_sample(logits, ones, False)}
            for mode in modes:
                fn = fns[mode]
                with torch.no_grad():
                    gpu_best, gpu_mean = per_call_graph(fn, reps=5)
                    walls = []
                    for i in range(60):
                        t0 = time.perf_counter()
                        r = fn()
                        (r[0] if isinstance(r, tuple) else r).tolist()
                        if i >= 10:
                            walls.append((time.perf_counter() - t0) * 1e6)
                rows.append({"vocab": V, "batch": B, "mode": mode, "gpu_best_us": round(gpu_best * 1e6, 2),
                             "gpu_mean_us": round(gpu_mean * 1e6, 2), "eager_wall_median_us": round(med(walls), 2),
                             "eager_wall_min_us": round(min(walls), 2)})
                print(rows[-1], flush=True)
    return rows


def profiled_replay(g):
    """Every kernel of one replay of graph g after three warm ones: (start, end, name) in order,
    from the profiler's GPU timestamps (us)."""
    from torch.profiler import ProfilerActivity, profile
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        g.replay()
        torch.cuda.synchronize()
    return sorted([(e.time_range.start, e.time_range.end, e.name) for e in prof.events()
                   if e.device_type == torch.autograd.DeviceType.CUDA])


def sampler_kernel_rows():
    """Each kernel of the sampler paths, by the profiler's GPU timestamps over one replay of
    a graph of 5 calls (median over the calls), for a few batch sizes and both vocabularies."""
    rows = []
    for V in [32000, 128256]:
        for B in [1, 8, 64, 256]:
            logits = torch.randn(B, V, device=dev, dtype=torch.bfloat16)
            ones = torch.ones(B, device=dev)
            fns = {"greedy": lambda: logits.argmax(dim=-1),
                   "v0_greedy": lambda: v0_sample(logits, ones, True),
                   "v0_random": lambda: v0_sample(logits, ones, False)}
            for mode, fn in fns.items():
                with torch.no_grad():
                    ev = profiled_replay(graph_of(fn, 5))
                per = len(ev) // 5
                for j in range(per):
                    ks = [ev[c * per + j] for c in range(5)]
                    rows.append({"vocab": V, "batch": B, "mode": mode, "position": j, "kernel": ks[0][2][:120],
                                 "median_us": round(med([b - a for a, b, _ in ks]), 3)})
                    print(rows[-1], flush=True)
    return rows


# ---------------------------------------------------------------------------------------------
# tokenisation

def tokenize_rows():
    t0 = time.perf_counter()
    tok, hf = tokenizer()
    train_s = time.perf_counter() - t0
    text = _TOK["text"]
    all_ids = tok.encode(text[:400000]).ids
    rows = []
    for n in [128, 1024, 8192]:
        ids = all_ids[:n]
        prompt = tok.decode(ids)
        times = []
        for _ in range(30):
            a = time.perf_counter()
            got = tok.encode(prompt).ids
            times.append(time.perf_counter() - a)
        t_hf = []
        if hf is not None:
            for _ in range(30):
                a = time.perf_counter()
                hf(prompt)["input_ids"]
                t_hf.append(time.perf_counter() - a)
        rows.append({"what": "encode", "tokens": len(got), "median_us": round(med(times) * 1e6, 2),
                     "per_token_us": round(med(times) * 1e6 / len(got), 4),
                     "hf_call_median_us": round(med(t_hf) * 1e6, 2) if t_hf else "",
                     "hf_per_token_us": round(med(t_hf) * 1e6 / len(got), 4) if t_hf else "",
                     "vocab": _TOK["vocab"], "train_files": _TOK["files"], "train_s": round(train_s, 2)})
        print(rows[-1], flush=True)
    ids = all_ids[:2000]
    state = {"tokens": tok_ids_to_tokens(hf, tok, ids[:6]), "p": 0, "r": 6, "text": ""}
    times = []
    for i in range(6, len(ids)):
        a = time.perf_counter()
        detok_step(hf, tok, ids[:i + 1], state)
        times.append(time.perf_counter() - a)
    rows.append({"what": "detokenize_incrementally", "tokens": len(times), "median_us": round(med(times) * 1e6, 2),
                 "per_token_us": round(med(times) * 1e6, 4), "vocab": _TOK["vocab"],
                 "roundtrip_ok": state["text"] == tok.decode(ids[6:]) or state["text"][:50]})
    print(rows[-1], flush=True)
    return rows


# ---------------------------------------------------------------------------------------------
# prefill kernels, fp16 and fp8

L7, D7, H7, FF7, V7, DH7 = 32, 4096, 32, 11008, 32000, 128


def prefill_model(dtype):
    torch.manual_seed(0)
    wdt = torch.float16 if dtype == "fp16" else torch.bfloat16

    def mat(n, k):
        w = torch.randn(n, k, device=dev, dtype=wdt) * 0.01
        if dtype == "fp8":  # column-major k x n for _scaled_mm's second operand
            return w.to(torch.float8_e4m3fn).t()
        return w
    W = [dict(qkv=mat(3 * D7, D7), o=mat(D7, D7), gu=mat(2 * FF7, D7), dn=mat(D7, FF7),
              n1=torch.ones(D7, device=dev, dtype=wdt), n2=torch.ones(D7, device=dev, dtype=wdt)) for _ in range(L7)]
    head = torch.randn(V7, D7, device=dev, dtype=wdt) * 0.01
    one = torch.tensor(1.0, device=dev)

    def lin(x, w):
        if dtype != "fp8":
            return F.linear(x, w)
        shp = x.shape
        xq = x.reshape(-1, shp[-1]).to(torch.float8_e4m3fn)  # static per-tensor scale of 1
        y = torch._scaled_mm(xq, w, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        return y.view(*shp[:-1], y.shape[-1])

    def make(S):
        x0 = torch.randn(1, S, D7, device=dev, dtype=wdt)

        def fwd():
            x = x0
            for w in W:
                q, k, v = lin(rms(x, w["n1"]), w["qkv"]).view(1, S, 3, H7, DH7).permute(2, 0, 3, 1, 4)
                a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(1, S, D7)
                x = x + lin(a, w["o"])
                g, u = lin(rms(x, w["n2"]), w["gu"]).chunk(2, dim=-1)
                x = x + lin(F.silu(g) * u, w["dn"])
            return F.linear(x[:, -1:], head)
        return fwd
    return make


def prefill_kernel_rows():
    rows = []
    S = 2048
    for dtype in ["fp16", "fp8"]:
        fwd = prefill_model(dtype)(S)
        with torch.no_grad():
            g = graph_of(fwd, 1)
            ev = profiled_replay(g)
        total = (ev[-1][1] - ev[0][0]) if ev else 0
        # the 32 layers launch the same kernels each; the head's one or two come last
        per = len(ev) // L7
        for j in range(per):
            ks = [ev[l * per + j] for l in range(L7) if l * per + j < len(ev)]
            durs = [b - a for a, b, _ in ks]
            gaps = [ev[l * per + j + 1][0] - ev[l * per + j][1] for l in range(L7) if l * per + j + 1 < len(ev)]
            rows.append({"dtype": dtype, "tokens": S, "position": j, "kernel": ks[0][2][:110],
                         "median_us": round(med(durs), 3), "min_us": round(min(durs), 3),
                         "median_gap_after_us": round(med(gaps), 3), "same_name_all_layers":
                         all(k[2] == ks[0][2] for k in ks)})
            print(rows[-1], flush=True)
        rows.append({"dtype": dtype, "tokens": S, "position": "total", "kernel": f"{len(ev)} kernels",
                     "median_us": round(total, 1)})
        print(rows[-1], flush=True)
        del g, fwd
        torch.cuda.empty_cache()
    return rows


def prefill_fp8_rows():
    rows = []
    make = prefill_model("fp8")
    for S in [128, 512, 2048]:
        fwd = make(S)
        with torch.no_grad():
            b, mean = per_call_graph(fwd, reps=1)
        rows.append({"model": "llama-2-7b shape, fp8 linears, bf16 attention", "batch": 1, "prompt": S,
                     "best_s": b, "mean_s": mean})
        print(rows[-1], flush=True)
    torch.cuda.empty_cache()
    return rows


PARTS = {"host-loop": host_loop_rows, "graph-launch": graph_launch_rows, "sampler": sampler_rows,
         "sampler-v0": lambda: sampler_rows(("v0_greedy", "v0_random")), "sampler-kernels": sampler_kernel_rows, "tokenize": tokenize_rows,
         "prefill-kernels": prefill_kernel_rows, "prefill-fp8": prefill_fp8_rows}

if __name__ == "__main__":
    run_parts(PARTS, sys.argv[1], sys.argv[2:])
