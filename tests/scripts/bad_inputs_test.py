#!/usr/bin/env python3
"""Every malformed config and trace under tests/data/bad gets a clear error: exit status 1, one
line starting `error: ` that names the file (and, where the problem has one, the line, column
and key), and the expected message; never a crash, a hang or a silent success.

  tests/scripts/bad_inputs_test.py build/xpusim            run the checks
  tests/scripts/bad_inputs_test.py build/xpusim --markdown print the table in docs/reliability.md

The test also checks that docs/reliability.md lists exactly these inputs with these errors.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BAD = os.path.join(ROOT, "tests", "data", "bad")
H100 = os.path.join(ROOT, "configs", "h100-sxm.yaml")
DGX = os.path.join(ROOT, "configs", "systems", "dgx-h100.yaml")
DOC = os.path.join(ROOT, "docs", "reliability.md")

# file -> (what is wrong, a regular expression the error must match). Traces (trace-*) are
# checked against h100-sxm (so that lowering's checks run too), systraces (systrace-*) against an
# 8-GPU dgx-h100; configs alone.
CASES = {
    "unknown-key.yaml": ("a misspelt key", r":3:3: key 'sm\.cout': unknown key .*did you mean 'sm\.count'"),
    "config-malformed.yaml": ("unclosed flow mapping", r":3:1: malformed YAML: end of map flow not found"),
    "config-negative-size.yaml": ("negative size", r":3:9: key 'l2\.size': value -50 MiB is out of range \[64 KiB, 64 GiB\]"),
    "config-wrong-unit.yaml": ("a size where a frequency is due", r":3:10: key 'sm\.clock': '1\.98 GB' is a size, but a frequency is due"),
    "config-missing-unit.yaml": ("a number without its unit", r":3:10: key 'sm\.clock': '1980' needs a unit of frequency"),
    "config-huge-number.yaml": ("a value beyond a double", r":3:10: key 'sm\.clock': '1e305 GHz' is out of range"),
    "config-zero-sms.yaml": ("zero SMs", r":3:10: key 'sm\.count': value 0 is out of range \[1, 4096\]"),
    "config-power-limit-below-idle.yaml": ("a power limit below the idle draw", r":3:10: key 'power\.limit': is at or below what the chip draws idle"),
    "config-vf-curve-not-monotone.yaml": ("a V/f curve whose voltage falls", r":3:13: key 'power\.vf_curve': point 2 '1\.6 GHz at 0\.65 V' is not monotone"),
    "config-boost-below-base.yaml": ("a boost clock below the base clock", r":4:16: key 'power\.boost_clock': is below power\.base_clock"),
    "config-burst-under-a-byte.yaml": ("a DRAM burst of half a byte (bus_bits 4, burst_length 1)",
                                       r"key 'hbm\.burst_length': hbm\.bus_bits/8 x hbm\.burst_length must be a whole number of bytes, at least 1 \(here 0\.5 B\)"),
    "config-count-too-big.yaml": ("an integer beyond 64 bits", r":3:10: key 'sm\.count': '99999999999999999999' is out of range \[1, 4096\]"),
    "config-fraction-count.yaml": ("a fraction where a count is due", r":3:10: key 'sm\.count': '13\.5' must be a whole number"),
    "config-list-for-number.yaml": ("a list where a number is due", r":3:10: key 'sm\.count': expected a single value, not a list"),
    "config-duplicate-key.yaml": ("a key given twice", r":4:3: key 'sm\.count': duplicate key"),
    "config-extends-missing.yaml": ("extends a missing file", r":1:10: key 'extends': file '.*nothere\.yaml' does not exist"),
    "config-extends-cycle.yaml": ("extends itself", r"config-extends-cycle\.yaml: 'extends' forms a cycle"),
    "config-extends-device.yaml": ("extends /dev/zero (endless)", r":1:10: key 'extends': file '/dev/zero' is not a regular file"),
    "config-extends-name-too-long.yaml": ("extends a 300-character name", r":1:10: key 'extends': file '.*' File name too long"),
    "config-not-mapping.yaml": ("a list, not a mapping", r":1:1: a config must be a mapping of keys to values"),
    "config-empty.yaml": ("an empty file", r"config-empty\.yaml: file is empty"),
    "config-nul.yaml": ("binary (NUL bytes)", r"config-nul\.yaml: not a text file \(contains NUL bytes\)"),
    "config-bad-kind.yaml": ("an unknown chip kind", r":2:7: key 'kind': 'tpu' is not one of: gpu, accelerator"),
    "config-missing-required.yaml": ("a required key missing", r"missing required key 'name'"),
    "config-second-document.yaml": ("a second YAML document (---) after the config", r":4: a second YAML document starts here"),
    "config-empty-second-document.yaml": ("a trailing --- (an empty second document)", r":5: a second YAML document starts here"),
    "trace-malformed.yaml": ("unclosed flow mapping", r":4:1: malformed YAML"),
    "trace-name-not-utf8.yaml": ("a name that is not UTF-8 (would break report.json)", r":3:16: not UTF-8 text \(byte 0xFC\)"),
    "trace-no-header.yaml": ("no format header", r":1:1: not an xpusim trace: the header needs 'xpusim_trace: 1'"),
    "trace-version-2.yaml": ("a future format version", r":1:15: key 'xpusim_trace': unsupported trace format version '2'"),
    "trace-no-ops.yaml": ("no ops", r"trace-no-ops\.yaml: trace has no ops"),
    "trace-op-not-mapping.yaml": ("an op that is a number", r":3:5: key 'ops\[0\]': each entry of 'ops' must be a mapping"),
    "trace-unknown-kind.yaml": ("a misspelt op kind", r":3:21: key 'ops\[0\]\.kind': unknown op kind 'gem'.*did you mean 'gemm'"),
    "trace-unknown-key.yaml": ("a key the op kind does not have", r":3:47: key 'ops\[0\]\.kk': unknown key for a gemm op"),
    "trace-bad-dtype.yaml": ("an unknown number format", r":3:54: key 'ops\[0\]\.dtype': unknown number format 'fp7'"),
    "trace-negative-dim.yaml": ("a negative dimension", r":3:44: key 'ops\[0\]\.k': value -8 is out of range"),
    "trace-not-a-number.yaml": ("a word where a size is due", r":3:37: key 'ops\[0\]\.n': 'lots' is not a whole number"),
    "trace-dim-beyond-int64.yaml": ("a dimension beyond 64 bits", r":3:30: key 'ops\[0\]\.m': value 99999999999999999999 is out of range"),
    "trace-overflowing-shape.yaml": ("dimensions whose product overflows", r":3:5: key 'ops\[0\]': sizes multiply to more than 2\^50 elements"),
    "trace-bad-switching.yaml": ("operand switching that is not random, zeros or 0-1", r":3:59: key 'ops\[0\]\.switching': expected random, zeros or a number"),
    "trace-nan-density.yaml": ("NaN", r":3:62: key 'ops\[0\]\.input_density': '\.nan' is not a number"),
    "trace-bool-yes.yaml": ("yes for true", r":3:75: key 'ops\[0\]\.causal': expected true or false"),
    "trace-weight-wider.yaml": ("weights wider than the math", r":3:62: key 'ops\[0\]\.weight_dtype': weights in fp32 are wider"),
    "trace-delay-no-unit.yaml": ("a duration without a unit", r":3:38: key 'ops\[0\]\.duration': '5' needs a unit of time"),
    "trace-delay-too-long.yaml": ("a two-hour gap", r":3:38: key 'ops\[0\]\.duration': must be between 0 s and 1 h"),
    "trace-bad-device-range.yaml": ("a backwards device range", r":3:55: key 'ops\[0\]\.devices': '7-3': expected a list of device indices"),
    "trace-duplicate-name.yaml": ("two ops of one name", r":4:5: key 'ops\[1\]\.name': duplicate op name 'g'"),
    "trace-missing-dep.yaml": ("a dependency on a missing op", r":4:54: key 'ops\[1\]\.deps': no op named 'qvk'; did you mean 'qkv'"),
    "trace-self-dep.yaml": ("an op that waits for itself", r":3:5: key 'deps': dependency cycle: a -> a"),
    "trace-dep-cycle.yaml": ("a cycle over three streams", r":3:5: key 'deps': dependency cycle: a -> c -> b -> a"),
    "trace-stream-cycle.yaml": ("a cycle through stream order", r":3:5: key 'deps': dependency cycle: a -> b -> \(stream order\) a"),
    "trace-repeat-zero.yaml": ("a block repeated 0 times", r":3:13: key 'ops\[0\]\.repeat': value 0 is out of range"),
    "trace-repeat-huge.yaml": ("2^40 ops by nested repeats",
                               r"key 'ops\[0\]\.ops\[0\]\.ops\[0\]': the trace has (more than 10000000 ops|[0-9]+ ops so far, "
                               r"which would take .* this host has available)"),
    "trace-days-to-simulate.yaml": ("8000 large GEMMs (a day to simulate)",
                                    r":5:11: op 'layer\[7570\]\.g': brings the run to [0-9]+ simulated CTA steps, more than the 2000000000"),
    "trace-on-missing-gpu.yaml": ("a GPU the system lacks", r":3:5: op 'g': is placed on device 3, but the system has 1 GPU"),
    "trace-fp4-on-h100.yaml": ("a format the chip lacks", r":3:5: op 'g': the tensor cores of this chip do not support fp4"),
    "trace-larger-than-hbm.yaml": ("tensors larger than HBM", r":3:5: op 'g' needs 2\.004 TiB of tensors but the chip has 80 GiB of HBM"),
    "trace-bad-json.jsonl": ("a JSON line cut short", r":2:38: malformed JSON: .*unexpected end of input; expected '\}'"),
    "trace-jsonl-no-header.jsonl": ("no header line", r":1:1: the first line must be the header"),
    "trace-jsonl-array-line.jsonl": ("a line that is an array", r":2:1: each line must be one JSON object"),
    "trace-jsonl-string-dim.jsonl": ("a string where a size is due", r":2:36: key 'line 2\.m': 'sixty-four' is not a whole number"),
    "trace-jsonl-cycle.jsonl": ("a cycle through stream order", r":2:1: key 'deps': dependency cycle: a -> b -> \(stream order\) a"),
    "trace-bytes-unknown-unit.yaml": ("a collective of 1 PiB (no such unit)", r":3:41: key 'ops\[0\]\.bytes': unknown unit 'PiB' in '1 PiB'; a size takes one of TiB"),
    "systrace-allreduce-larger-than-hbm.yaml": ("an all-reduce buffer larger than a GPU's HBM",
                                                r":3:5: op 'ar': needs 100 GiB of buffers on each GPU but a GPU has 80 GiB of HBM"),
    "systrace-alltoall-buffers-larger-than-hbm.yaml": ("all-to-all send and receive buffers larger than HBM",
                                                       r":3:5: op 'a2a': needs 96 GiB of buffers on each GPU \(its send and receive buffers\)"),
    "trace-jsonl-two-objects.jsonl": ("two JSON objects on one line", r":2:75: malformed JSON: .*unexpected '\{'; expected end of input"),
    "trace-jsonl-trailing-comma.jsonl": ("a comma after the object", r":2:74: malformed JSON: .*unexpected ','; expected end of input"),
    "trace-jsonl-comment.jsonl": ("a // comment after the object", r":2:76: malformed JSON: .*expected end of input"),
    "trace-jsonl-single-quotes.jsonl": ("single-quoted strings", r":2:2: malformed JSON: .*expected string literal"),
    "trace-jsonl-bare-keys.jsonl": ("keys without quotes", r":2:3: malformed JSON: .*expected string literal"),
    "trace-jsonl-nul-escape.jsonl": ("a \\u0000 escape in a name", r":2:12: a string holds a NUL character"),
    "trace-jsonl-duplicate-key.jsonl": ("a key given twice in an op", r":2:75: key 'k' appears twice in one object"),
    "trace-jsonl-quoted-number.jsonl": ("a size given as a string", r":2:36: key 'line 2\.m': expected a whole number, not the string \"64\""),
    "trace-jsonl-duplicate-header-key.jsonl": ("a key given twice in the header", r":1:34: key 'name' appears twice in one object"),
    "trace-duplicate-key.yaml": ("a key given twice in an op", r":3:61: key 'ops\[0\]\.k': duplicate key \(it appears earlier in the same op\)"),
    "trace-quoted-number.yaml": ("a size given as a string", r":3:30: key 'ops\[0\]\.m': expected a whole number, not the string \"64\""),
    "trace-second-document.yaml": ("a second YAML document (---) of ops", r":4: a second YAML document starts here"),
    "trace-repeat-duplicate-key.yaml": ("a repeat count given twice", r":4:5: key 'ops\[0\]\.repeat': duplicate key"),
    "trace-header-duplicate-key.yaml": ("a trace name given twice", r":3:1: key 'name': duplicate key \(it appears earlier in the trace's header\)"),
}


def run(xpusim, name):
    path = os.path.join(BAD, name)
    if name.startswith("trace-"):
        args = [xpusim, "check", "--config", H100, "--trace", path]
    elif name.startswith("systrace-"):
        args = [xpusim, "check", "--config", DGX, "--trace", path]
    else:
        args = [xpusim, "check", "--config", path]
    env = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1")
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120, env=env)
    return r.returncode, r.stderr.strip()


def markdown(results):
    lines = ["| input | what is wrong | error |", "|---|---|---|"]
    for name, (what, _) in CASES.items():
        msg = results[name].replace(BAD + "/", "").replace("|", "\\|")
        lines.append(f"| `{name}` | {what} | `` {msg} `` |")
    return "\n".join(lines) + "\n"


def main():
    xpusim = sys.argv[1]
    files = sorted(f for f in os.listdir(BAD))
    problems = []
    if sorted(CASES) != files:
        problems.append(f"tests/data/bad and the cases differ: {sorted(set(files) ^ set(CASES))}")
    results = {}
    for name, (_, pattern) in CASES.items():
        rc, err = run(xpusim, name)
        results[name] = err.removeprefix("error: ")
        if rc != 1 or not err.startswith("error: ") or "\n" in err or not re.search(pattern, err):
            problems.append(f"{name}: exit {rc}, expected /{pattern}/, got:\n{err}")
        elif name not in err:
            problems.append(f"{name}: the error does not name the file: {err}")
    if "--markdown" in sys.argv:
        sys.stdout.write(markdown(results))
        return 0
    with open(DOC) as f:
        doc = f.read()
    m = re.search(r"<!-- bad-inputs:begin -->\n(.*)<!-- bad-inputs:end -->", doc, re.S)
    if not m:
        problems.append("docs/reliability.md has no bad-inputs table")
    else:
        listed = re.findall(r"^\| `([^`]+)` \|", m.group(1), re.M)
        if listed != list(CASES):
            problems.append("docs/reliability.md lists other bad inputs; regenerate with "
                            "`tests/scripts/bad_inputs_test.py build/xpusim --markdown`")
    for p in problems:
        print("FAIL", p)
    print(f"{len(CASES)} bad inputs, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
