#!/usr/bin/env python3
"""Every malformed input under tests/data/bad gets a clear error: the expected exit status (1 for
bad input, 2 for a command line that cannot be read), one line starting with the tool's prefix
(`error: `, `xpusim-trace: `, `xpusim-serve: `) that names the file (and, where the problem has one,
the line, column and key), and the expected message; never a crash, a hang or a silent success.

The file's name says what reads it:
  config-*      xpusim check --config FILE
  trace-*       xpusim check --config configs/h100-sxm.yaml --trace FILE (lowering's checks run too)
  systrace-*    the same on the 8-GPU configs/systems/dgx-h100.yaml
  sweep-*       xpusim sweep FILE --dry-run
  report-*      xpusim compare FILE FILE (a report.json)
  model-*       scripts/xpusim-trace.py FILE --phase decode (a model card)
  requests-*    scripts/xpusim-serve.py --check --requests FILE (a serving request stream)
  cli-*.args    xpusim with the file's lines as its arguments ({config} and {trace} filled in)

  tests/scripts/bad_inputs_test.py build/xpusim            run the checks
  tests/scripts/bad_inputs_test.py build/xpusim --markdown print the table in docs/reliability.md

The test also checks that docs/reliability.md lists exactly these inputs with these errors.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BAD = os.path.join(ROOT, "tests", "data", "bad")
H100 = os.path.join(ROOT, "configs", "h100-sxm.yaml")
DGX = os.path.join(ROOT, "configs", "systems", "dgx-h100.yaml")
DOC = os.path.join(ROOT, "docs", "reliability.md")
GENERATOR = os.path.join(ROOT, "scripts", "xpusim-trace.py")
SERVE = os.path.join(ROOT, "scripts", "xpusim-serve.py")
LLAMA = os.path.join(ROOT, "configs", "models", "llama-3-8b.yaml")
GOOD_TRACE = os.path.join(ROOT, "tests", "data", "gemm-small.yaml")

# file -> (what is wrong, a regular expression the error must match[, exit status: 1 unless given]).
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
    "config-voltage-floor-above-curve.yaml": ("a voltage floor above the V/f curve's top",
                                              r":3:18: key 'power\.voltage_floor': 900 mV is above power\.vf_curve's highest voltage \(805 mV\)"),
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
    "trace-contiguous-no.yaml": ("no for false", r":3:83: key 'ops\[0\]\.contiguous': expected true or false"),
    "trace-norm-typo.yaml": ("a norm that is neither layer nor rms", r":3:69: key 'ops\[0\]\.norm': expected one of layer, rms"),
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
                               r":3:5: key 'ops\[0\]': the repeat block expands to 1099511627776 ops and the trace to "
                               r"1099511627776, more than 10000000 ops"),
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
    "trace-bytes-fractional.yaml": ("a collective of 1.1 KiB (1126.4 bytes)", r":3:41: key 'ops\[0\]\.bytes': '1\.1 KiB' is 1126\.4 bytes: a size must be a whole number of bytes"),
    "trace-copy-in-ring.yaml": ("copy_in on NCCL's ring", r":3:75: key 'ops\[0\]\.copy_in': applies to algorithm one_shot or two_shot"),
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
    # Configs, second review
    "config-empty-name.yaml": ("an empty chip name", r":2:7: key 'name': a name may not be empty"),
    "config-name-newline.yaml": ("a newline in the chip name (would break the tables)", r":2:7: key 'name': a name may not hold control characters \(this one has a newline\)"),
    "config-bool-count.yaml": ("true where a count is due", r":3:10: key 'sm\.count': 'true' is not an integer"),
    "config-negative-clock.yaml": ("a negative clock", r":3:10: key 'sm\.clock': value -1 GHz is out of range \[1 MHz, 10 GHz\]"),
    "config-zero-hbm-stacks.yaml": ("no HBM stacks", r":3:11: key 'hbm\.stacks': value 0 is out of range \[1, 64\]"),
    "config-unknown-section.yaml": ("a misspelt section", r":3:3: key 'smm\.count': unknown key .*did you mean 'sm\.count'"),
    "config-map-for-number.yaml": ("a mapping where a count is due", r":3:11: key 'sm\.count': expected a single value, not a mapping"),
    "config-null-value.yaml": ("a key with no value (~)", r":3:10: key 'sm\.count': has no value"),
    "config-energy-table-missing.yaml": ("an energy table that does not exist", r":3:10: key 'energy\.table': energy table '.*nothere\.yaml' does not exist"),
    "config-unit-wrong-case.yaml": ("GHZ for GHz", r":3:10: key 'sm\.clock': unknown unit 'GHZ' in '1\.98 GHZ'; a frequency takes one of THz, GHz"),
    "config-inf-clock.yaml": ("an infinite clock", r":3:10: key 'sm\.clock': '\.inf GHz' is not a number with a unit"),
    "config-hex-count.yaml": ("a hexadecimal count", r":3:10: key 'sm\.count': '0x84' must be a whole number"),
    "config-tab-indent.yaml": ("a tab in the indentation", r":3:7: malformed YAML: illegal map value"),
    "config-vf-point-malformed.yaml": ("a V/f point not written CLOCK at VOLTAGE", r":3:13: key 'power\.vf_curve': point 1 '1\.6 GHz @ 0\.7 V' is not CLOCK at VOLTAGE"),
    "config-registers-zero.yaml": ("no registers (the range is written in full)", r":3:14: key 'sm\.registers': value 0 is out of range \[1024, 16777216\]"),
    "config-deep-nesting.yaml": ("lists nested 2000 deep", r":3:\d+: malformed YAML: lists or mappings nested too deeply"),
    # Traces, second review
    "trace-op-name-newline.yaml": ("a newline in an op name", r":3:12: key 'ops\[0\]\.name': an op name may not hold control characters \(this one has a newline\)"),
    "trace-op-name-bell.yaml": ("a BEL control character in an op name", r":3:12: key 'ops\[0\]\.name': an op name may not hold control characters \(this one has U\+0007\)"),
    "trace-name-mapping.yaml": ("a mapping for the trace name", r":2:7: key 'name': expected a name, not a list or mapping"),
    "trace-ops-mapping.yaml": ("ops as a mapping, not a list", r":2:6: key 'ops': expected a list of ops"),
    "trace-deps-string.yaml": ("deps as a word, not a list", r":4:67: key 'ops\[1\]\.deps': expected a list of op names"),
    "trace-stream-negative.yaml": ("a negative stream", r":3:69: key 'ops\[0\]\.stream': value -1 is out of range \[0, 1023\]"),
    "trace-devices-empty.yaml": ("an empty device list", r":3:70: key 'ops\[0\]\.devices': expected a non-empty list of device indices"),
    "trace-devices-duplicate.yaml": ("a device listed twice", r":3:74: key 'ops\[0\]\.devices': device 0 is listed twice"),
    "trace-kv-heads-not-divide.yaml": ("kv_heads that do not divide heads", r":3:5: key 'ops\[0\]\.kv_heads': heads \(32\) must be a multiple of kv_heads \(5\)"),
    "trace-sparsity-3-4.yaml": ("a sparsity pattern other than 2:4", r":3:71: key 'ops\[0\]\.sparsity': expected \"2:4\" or none"),
    "trace-tokens-negative.yaml": ("a negative token count", r":2:9: key 'tokens': value -5 is out of range"),
    "trace-header-typo.yaml": ("a misspelt header key", r":2:1: key 'nmae': unknown top-level key in a trace \(did you mean 'name'\?\)"),
    "trace-shape-empty.yaml": ("an empty shape", r":3:41: key 'ops\[0\]\.shape': expected a list of 1 to 8 positive dimensions"),
    "trace-shape-zero.yaml": ("a zero dimension in a shape", r":3:42: key 'ops\[0\]\.shape\[0\]': value 0 is out of range"),
    "trace-dim-fraction.yaml": ("a fractional dimension", r":3:30: key 'ops\[0\]\.m': '64\.5' is not a whole number"),
    "trace-repeat-name-clash.yaml": ("a repeat iteration's op named as an op already is", r":7:9: key 'ops\[1\]\.ops\[0\]\.name': duplicate op name 'layer\[0\]\.a'"),
    "trace-repeat-name-tab.yaml": ("a tab in a repeat block's name", r":4:11: key 'ops\[0\]\.name': a repeat block's name may not hold control characters \(this one has a tab\)"),
    "trace-int4-on-h100.yaml": ("int4 on a chip whose tensor cores lack it", r":3:5: op 'g': the tensor cores of this chip do not support int4"),
    "trace-allreduce-on-one-gpu.yaml": ("an all-reduce on a single-GPU config", r":3:5: op 'ar': a collective needs at least two GPUs; this system has 1"),
    "trace-cycle-in-repeat.yaml": ("a dependency cycle inside a repeat block", r":6:9: key 'deps': dependency cycle: layer\[0\]\.a -> layer\[0\]\.b -> layer\[0\]\.a"),
    "trace-jsonl-deep-nesting.jsonl": ("a JSON line of lists nested 1000 deep", r":2:1: malformed JSON: lists or mappings nested too deeply"),
    # Execution traces (sim/trace/chakra.cpp; written by scripts/make-et-fixtures.py --bad)
    "trace-chakra-truncated.0.et": ("a Chakra file cut short in its last node", r"byte 177: the message after node 2 'aten::mm' is 85 bytes long but the file ends 78 bytes on \(a truncated file\)"),
    "trace-chakra-unknown-node-type.0.et": ("a node of type 42", r": node 2 'aten::mm': node type 42 is not one Chakra defines"),
    "trace-chakra-two-ranks.0.et": ("two ranks on a one-GPU config", r"trace-chakra-two-ranks\.1\.et: op 'r1:aten::mm#1': is placed on device 1, but the system has 1 GPU"),
    "trace-chakra-cycle.0.et": ("nodes that wait for each other", r": dependency cycle: node 1 'aten::mm' -> node 3 'aten::mm' -> node 2 'aten::mm' -> node 1 'aten::mm'"),
    "trace-chakra-missing-dep.0.et": ("a dependency on a node the file lacks", r": node 2 'aten::mm': depends on node 7, which .* does not have"),
    "trace-chakra-gemm-shapes.0.et": ("an mm whose shapes do not multiply", r": node 1 'aten::mm': mm's inputs \[64,64\] x \[32,64\] do not multiply"),
    "trace-chakra-no-metadata.0.et": ("nodes without the GlobalMetadata first", r": byte 0: not a Chakra GlobalMetadata message"),
    "trace-chakra-metadata-only.0.et": ("a Chakra file with its GlobalMetadata and no node", r": no nodes after the GlobalMetadata"),
    "trace-chakra-length-past-4gib.0.et": ("a node length of 2^32 + n (read modulo 2^32 it would be n)", r": byte 8: the first node is 4294967378 bytes long but the file ends 82 bytes on"),
    "trace-torch-et-self-parent.json": ("an operator that is its own parent", r": a cycle in the call tree: node 2 'aten::mm' is its own parent"),
    "trace-torch-et-missing-parent.json": ("a parent the file lacks", r": node 2 'aten::mm': its parent, node 7, is not in the file"),
    "trace-torch-et-negative-parent.json": ("a negative parent", r": node 2 'aten::mm': 'ctrl_deps' must be a node id \(0 for none\), not -1"),
    "trace-torch-et-schema-2.json": ("a schema of another major version", r": schema \"2\.0\.0\" is not a PyTorch execution-trace schema xpusim reads"),
    "trace-torch-et-mm-three-inputs.json": ("an mm with three tensors", r": node 2 'aten::mm': mm takes two tensor inputs \(and an out= buffer of its output's size\), not 3"),
    "trace-torch-et-causal-not-boolean.json": ("is_causal that is not a boolean", r": node 2 'aten::scaled_dot_product_attention': is_causal must be true or false, not 'maybe'"),
    "systrace-chakra-no-comm-size.0.et": ("a collective without its size", r": node 2 'allreduce': a COMM_COLL_NODE needs the attribute 'comm_size'"),
    "systrace-chakra-unmatched-collective.0.et": ("ranks with different collectives", r": rank 0 has 1 collective in process group '' but rank 1 has 2; nothing matches node 4 'allreduce' of rank 1"),
    "trace-torch-et-cycle.json": ("a PyTorch execution trace whose call tree loops", r": a cycle in the call tree: node 2 '## block ##' -> node 3 'aten::linear' -> node 2 '## block ##'"),
    "trace-torch-et-linear-shapes.json": ("a linear whose weight does not fit its input", r": node 2 'aten::linear': linear's input \[512,4096\] and weight \[1024,2048\] disagree on k"),
    "trace-torch-et-no-id.json": ("a node without an id", r": nodes\[0\]: a node needs an integer \"id\" and a string \"name\""),
    # Sweep specs (xpusim sweep --dry-run)
    "sweep-axis-empty.yaml": ("an axis with no values", r":6:13: key 'axes\.sm\.count': expected at least one value"),
    "sweep-axis-unknown-key.yaml": ("an axis over a misspelt key", r":6:3: axis 'sm\.cout': .*unknown key .*did you mean 'sm\.count'"),
    "sweep-axis-bad-value.yaml": ("an axis value out of range", r":6:3: axis 'sm\.count': .*value -2 is out of range \[1, 4096\]"),
    "sweep-zip-unequal.yaml": ("zip over axes of different lengths", r":8:3: key 'axes\.hbm\.stacks': zip needs axes of one length"),
    "sweep-mode-typo.yaml": ("a misspelt mode", r":5:7: key 'mode': expected grid, zip or random"),
    "sweep-random-no-samples.yaml": ("random mode without samples", r"key 'samples': random mode needs samples: N"),
    "sweep-axis-value-twice.yaml": ("a value twice in one axis", r":6:18: key 'axes\.sm\.count': value '66' appears twice"),
    "sweep-set-and-axis.yaml": ("a key both fixed and swept", r":7:3: key 'axes\.sm\.count': 'sm\.count' is also fixed under set: \(sm\.count=100\)"),
    "sweep-set-twice.yaml": ("one key fixed twice", r":5:21: key 'set': 'sm\.count' is set twice"),
    "sweep-name-escapes.yaml": ("a name that leaves the output folder", r":2:7: key 'name': '\.\./\.\./outside' is not a plain name"),
    "sweep-range-log-not-bool.yaml": ("log: maybe in a random range", r":8:38: key 'axes\.sm\.count\.log': expected true or false"),
    "sweep-trace-axis-bad-format.yaml": ("a trace axis over an unknown format", r":6:3: axis 'trace\.dtype': trace override 'dtype=fp9': unknown number format"),
    "sweep-no-header.yaml": ("no format header", r":1:1: key 'xpusim_sweep': missing or unsupported version"),
    # report.json given to xpusim compare
    "report-truncated.json": ("a report.json cut short", r":1:118: malformed JSON: .*missing closing quote"),
    "report-not-an-object.json": ("a list, not a report", r"report-not-an-object\.json: not an xpusim report\.json"),
    "report-version-2.json": ("a future report format", r"report-version-2\.json: report format version '2' \(this build reads 1\)"),
    "report-time-string.json": ("a word for the run's time", r"report-time-string\.json: key 'total\.time_s': expected a number"),
    "report-time-negative.json": ("a negative time", r"report-time-negative\.json: key 'total\.time_s': must be a time of 0 or more"),
    "report-ops-not-list.json": ("ops as a number", r"report-ops-not-list\.json: key 'ops': expected a list of ops"),
    "report-duplicate-key.json": ("a key twice in one object", r":1:\d+: key 'time_s' appears twice in one object"),
    # Model cards given to scripts/xpusim-trace.py
    "model-duplicate-key.yaml": ("a key given twice", r":7: key 'layers': given twice \(first on line 6\)"),
    "model-unknown-key.yaml": ("a misspelt key", r":7: key 'hiden': unknown key \(known: "),
    "model-gated-not-bool.yaml": ("gated: yes please", r":7: key 'gated': must be true or false"),
    "model-layers-word.yaml": ("a word for the layer count", r":6: key 'layers': must be a positive whole number"),
    "model-heads-not-multiple.yaml": ("kv_heads that do not divide heads", r":7: key 'kv_heads': heads \(4\) must be a multiple of kv_heads \(3\)"),
    "model-not-yaml.yaml": ("unclosed flow sequence", r":2:7: not valid YAML: expected ',' or '\]'"),
    "model-norm-unknown.yaml": ("a norm the generator does not know", r":7: key 'norm': must be layernorm or rmsnorm"),
    # Request streams given to scripts/xpusim-serve.py
    "requests-duplicate-key.jsonl": ("a field twice in one request", r":1: field 'prompt_tokens' appears twice in one request"),
    "requests-nan-arrival.jsonl": ("NaN for an arrival time", r":1: NaN is not a JSON number"),
    "requests-zero-prompt.jsonl": ("an empty prompt", r":1: field 'prompt_tokens' must be a whole number of tokens, at least 1"),
    "requests-two-objects.jsonl": ("two requests on one line", r":1: not a JSON object \(Extra data at column 59\)"),
    "requests-beyond-context.jsonl": ("a request longer than the model's context", r":1: prompt_tokens \+ output_tokens = 9010 exceeds the model's context of 8192 tokens"),
    "requests-unknown-field.jsonl": ("a misspelt field", r":1: unknown field 'prio' \(known: arrival, id, output_tokens, priority, prompt_tokens\)"),
    # Command lines (the file's lines are xpusim's arguments)
    "cli-set-twice.args": ("--set one key to two values", r"--set sm\.count is given twice, as '66' and as '132'", 2),
    "cli-trace-set-twice.args": ("--trace-set one key to two values", r"--trace-set dtype is given twice, as 'fp8' and as 'bf16'", 2),
    "cli-describe-unknown-kind.args": ("describe a chip kind there is not", r"--kind tpu: no such chip kind \(expected gpu or accelerator\)", 2),
    "cli-describe-config-with-model.args": ("describe --config with --model, which it would ignore", r"--config prints that config's resolved values, every section; --kind and --model select", 2),
    "cli-tolerance-with-exact.args": ("--tolerance where nothing is extrapolated", r"--tolerance applies to --fidelity fast", 2),
    "cli-quiet-and-verbose.args": ("--quiet with --verbose", r"give --verbose or --quiet, not both", 2),
    "cli-out-empty.args": ("an empty --out", r"the output folder's name is empty", 1),
    "cli-out-is-a-file.args": ("--out naming a file", r"h100-sxm\.yaml: cannot create output directory \(it exists and is not a folder\)", 1),
    "cli-kernel-cache-with-exact.args": ("--kernel-cache where no kernel is replayed", r"--kernel-cache applies to --fidelity fast", 2),
    "cli-kernel-cache-not-a-cache.args": ("--kernel-cache naming a file that is not one", r"h100-sxm\.yaml: not a kernel cache \(it does not start with 'xpusim kernel cache 1'\)", 1),
    "cli-tolerance-nan.args": ("--tolerance nan", r"--tolerance must be above 0 and at most 0\.5", 2),
    "cli-fidelity-typo.args": ("a misspelt --fidelity", r"--fidelity must be fast or exact, got 'exakt'", 2),
    "cli-limit-unknown.args": ("an unknown --limit", r"--limit 'nosuch=5': unknown limit 'nosuch'", 2),
}


def command(xpusim, name, path, tmp):
    """The command that reads `name`, and the prefix its error line starts with."""
    if name.startswith("trace-"):
        return [xpusim, "check", "--config", H100, "--trace", path], "error: "
    if name.startswith("systrace-"):
        return [xpusim, "check", "--config", DGX, "--trace", path], "error: "
    if name.startswith("sweep-"):
        return [xpusim, "sweep", path, "--dry-run", "-o", os.path.join(tmp, "sweep")], "error: "
    if name.startswith("report-"):
        return [xpusim, "compare", path, path], "error: "
    if name.startswith("model-"):
        return [sys.executable, GENERATOR, path, "--phase", "decode", "-o", os.devnull], "xpusim-trace: "
    if name.startswith("requests-"):
        return [sys.executable, SERVE, "--xpusim", xpusim, "--config", H100, "--model", LLAMA, "--requests", path,
                "--out", os.path.join(tmp, "serve"), "--check"], "xpusim-serve: "
    if name.startswith("cli-"):
        with open(path) as f:
            text = f.read()
        args = (text[:-1] if text.endswith("\n") else text).split("\n")
        return [xpusim] + [a.replace("{config}", H100).replace("{trace}", GOOD_TRACE) for a in args], "error: "
    return [xpusim, "check", "--config", path], "error: "


def run(xpusim, name):
    tmp = tempfile.mkdtemp()
    args, prefix = command(xpusim, name, os.path.join(BAD, name), tmp)
    env = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1")
    try:
        r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120, env=env)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return r.returncode, r.stderr.strip(), prefix


def markdown(results):
    lines = ["| input | what is wrong | error |", "|---|---|---|"]
    for name, (what, *_) in CASES.items():
        msg = results[name].replace(BAD + "/", "").replace(ROOT + "/", "").replace("|", "\\|")
        lines.append(f"| `{name}` | {what} | `` {msg} `` |")
    return "\n".join(lines) + "\n"


def main():
    xpusim = sys.argv[1]
    # A Chakra trace's other ranks (<prefix>.1.et, ...) belong to its rank-0 file's case.
    files = sorted(f for f in os.listdir(BAD) if not re.search(r"\.[1-9][0-9]*\.et$", f))
    problems = []
    if sorted(CASES) != files:
        problems.append(f"tests/data/bad and the cases differ: {sorted(set(files) ^ set(CASES))}")
    results = {}
    for name, (_, pattern, *status) in CASES.items():
        expected = status[0] if status else 1
        rc, err, prefix = run(xpusim, name)
        results[name] = err.removeprefix(prefix)
        if rc != expected or not err.startswith(prefix) or "\n" in err or not re.search(pattern, err):
            problems.append(f"{name}: exit {rc} (expected {expected}), expected /{pattern}/, got:\n{err}")
        elif re.sub(r"\.0\.et$", ".", name) not in err and not name.startswith("cli-"):  # a command line has no file;
            # a Chakra trace's error may name another rank's file
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
