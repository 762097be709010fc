#!/usr/bin/env python3
"""The GEMMs of docs/validation/published/pre-hopper-gemm.csv on the GPU at hand, measured as
their sources ran them, with what the published figures leave out: the kernels cuBLAS launched
(name, grid, block, registers, shared memory) and the SM clock and board power they ran at.
Those are what the rows scripts/check-generations.py still misses need (docs/validation.md,
"What the rows outside 15% need"); run it on the card a row names. Changes no device setting.

Each row's GEMM runs in its format (fp32 with TF32 off, fp16, int8 through torch._int_mm) on
zeros where the row's trace_set says switching=zeros (DeepBench's 16- and 8-bit matrices) and
on normal random data otherwise, back to back for --seconds (the governor settles, as under
DeepBench's 400 calls) while nvidia-smi samples clock and power every 100 ms; then one call
runs under the PyTorch profiler. Writes OUT/published-shapes.csv (one line per row: time per
call, TFLOP/s, mean clock and power, the published TFLOP/s) and OUT/published-kernels.csv
(one line per kernel launched), both keyed by the row's line in the published file.

Usage: python3 published_shapes.py OUT --system V100         the rows whose system names V100
       python3 published_shapes.py --list --system T4        the rows it would run (needs no GPU)
       python3 published_shapes.py OUT --published docs/validation/published/k40-sgemm-curve.csv
                                                             the K40's whole SGEMM curve"""
import argparse
import csv
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PUBLISHED = os.path.join(ROOT, "docs", "validation", "published", "pre-hopper-gemm.csv")


def rows_of(path, system):
    """(line, row) for each row of the published file whose system contains `system`."""
    with open(path, newline="") as f:
        rows = [(i + 2, r) for i, r in enumerate(csv.DictReader(f)) if system in r["system"]]
    if not rows:
        sys.exit(f"published_shapes: no row of {path} has a system containing '{system}'")
    return rows


def zeros_of(row):
    return "switching=zeros" in row.get("trace_set", "")


def operands(torch, row):
    """The row's GEMM as a callable, laid out as DeepBench calls cuBLAS: column-major A (m x k)
    and B (k x n), neither transposed (NN). torch.mm of row-major B^T (n x k) by A^T (k x m)
    is that call. clBLAS's K40 page ran NT, so a K40 kernel's name may differ in its layout
    suffix; int8 goes through torch._int_mm, whose cuBLASLt call is TN."""
    m, n, k = int(row["m"]), int(row["n"]), int(row["k"])
    dev = torch.device("cuda")
    dtype = row["dtype"]
    if dtype in ("fp32", "fp16", "bf16"):
        dt = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
        torch.backends.cuda.matmul.allow_tf32 = False
        # DeepBench's 16-bit rows are its "mixed math": fp32 accumulation throughout.
        torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
        make = torch.zeros if zeros_of(row) else torch.randn
        bt, at = make(n, k, device=dev, dtype=dt), make(k, m, device=dev, dtype=dt)
        return lambda: torch.mm(bt, at)
    if dtype == "int8":
        if zeros_of(row):
            a = torch.zeros(m, k, device=dev, dtype=torch.int8)
            b = torch.zeros(n, k, device=dev, dtype=torch.int8).t()
        else:
            a = torch.randint(-8, 8, (m, k), device=dev, dtype=torch.int8)
            b = torch.randint(-8, 8, (n, k), device=dev, dtype=torch.int8).t()
        return lambda: torch._int_mm(a, b)
    raise ValueError(f"format {dtype} is not measured here")


def sustained(torch, fn, seconds):
    """Calls back to back for about `seconds`: time per call, and the mean SM clock and board
    power nvidia-smi sampled over all but the first half second."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits", "-lms", "100"],
                           stdout=subprocess.PIPE, text=True)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    calls, gpu_ms, t0 = 0, 0.0, time.time()
    while time.time() - t0 < seconds:
        start.record()
        for _ in range(10):
            fn()
        end.record()
        end.synchronize()
        gpu_ms += start.elapsed_time(end)
        calls += 10
    smi.terminate()
    samples = [line.split(",") for line in smi.communicate()[0].strip().splitlines() if "," in line][5:]
    mean = lambda i: sum(float(s[i]) for s in samples) / len(samples) if samples else 0.0  # noqa: E731
    return gpu_ms / 1e3 / calls, calls, mean(0), mean(1), len(samples)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    ap.add_argument("out", nargs="?", help="directory for the two CSV files")
    ap.add_argument("--system", default="", help="only rows whose system contains this text (e.g. V100, T4, K40, Titan Xp)")
    ap.add_argument("--published", default=PUBLISHED, help="the published figures (default: %(default)s)")
    ap.add_argument("--seconds", type=float, default=3.0, help="time each GEMM runs back to back (default 3)")
    ap.add_argument("--list", action="store_true", help="print the rows it would run and exit (no GPU needed)")
    a = ap.parse_args()
    if a.seconds <= 0:
        ap.error("--seconds must be positive")
    if not os.path.exists(a.published):
        sys.exit(f"published_shapes: {a.published}: no such file")
    rows = rows_of(a.published, a.system)
    if a.list:
        for line, r in rows:
            print(f"line {line}: {r['system']}, {r['dtype']}{' on zeros' if zeros_of(r) else ''}, "
                  f"{r['m']}x{r['n']}x{r['k']}, published {r['tflops']} TFLOP/s")
        print(f"{len(rows)} rows")
        return
    if not a.out:
        ap.error("an output directory is needed (or --list)")
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from gemm_grids import launched_kernels  # imports torch: not before --list has been handled
    if not torch.cuda.is_available():
        sys.exit("published_shapes: no CUDA device")
    os.makedirs(a.out, exist_ok=True)
    device = torch.cuda.get_device_name(0)
    print(device, "torch", torch.__version__, "cuda", torch.version.cuda, flush=True)
    shape_keys = ["line", "system", "dtype", "zeros", "m", "n", "k", "device", "calls", "s_per_call", "tflops",
                  "published_tflops", "ratio", "sm_clock_mhz", "power_w", "samples", "error"]
    kernel_keys = ["line", "m", "n", "k", "dtype", "kernel", "grid", "block", "regs", "smem", "dur_us"]
    with open(os.path.join(a.out, "published-shapes.csv"), "w", newline="") as fs, \
         open(os.path.join(a.out, "published-kernels.csv"), "w", newline="") as fk:
        ws, wk = csv.DictWriter(fs, fieldnames=shape_keys), csv.DictWriter(fk, fieldnames=kernel_keys)
        ws.writeheader()
        wk.writeheader()
        for line, r in rows:
            out = {"line": line, "system": r["system"], "dtype": r["dtype"], "zeros": zeros_of(r), "m": r["m"], "n": r["n"],
                   "k": r["k"], "device": device, "published_tflops": r["tflops"]}
            try:
                fn = operands(torch, r)
                s, calls, clock, power, samples = sustained(torch, fn, a.seconds)
                tflops = 2 * int(r["m"]) * int(r["n"]) * int(r["k"]) / s / 1e12
                out.update(calls=calls, s_per_call=s, tflops=tflops, ratio=tflops / float(r["tflops"]), sm_clock_mhz=clock,
                           power_w=power, samples=samples)
                for kern in launched_kernels(fn):
                    wk.writerow({"line": line, "m": r["m"], "n": r["n"], "k": r["k"], "dtype": r["dtype"], **kern})
                del fn
            except Exception as e:  # a format or shape this card or torch build cannot run
                out["error"] = str(e)[:200]
            ws.writerow(out)
            fs.flush()
            fk.flush()
            print(out, flush=True)
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
