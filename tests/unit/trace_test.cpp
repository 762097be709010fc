#include <catch2/catch.hpp>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "helpers.h"
#include "sim/config/yaml_util.h"
#include "sim/io/json_strict.h"
#include "sim/report/json_writer.h"
#include "sim/trace/op_fields.h"
#include "sim/trace/trace.h"

using namespace xpusim;
using xpusim::testing::error_of;
using xpusim::testing::temp_file;

namespace {
std::string trace_error(const std::string& text, const std::string& suffix = ".yaml") {
  const std::string path = temp_file(text, suffix);
  return error_of([&] { trace::load_trace(path); });
}
const std::string kHead = "xpusim_trace: 1\nname: t\nops:\n";
}  // namespace

TEST_CASE("traces load with kinds, dtypes, deps and repeat blocks", "[trace]") {
  const auto t = trace::load_trace(temp_file(kHead + R"(  - {name: embed, kind: elementwise, shape: [8, 1024], dtype: fp8}
  - repeat: 3
    name: layer
    ops:
      - {name: qkv, kind: gemm, m: 8, n: 3072, k: 1024, dtype: bf16, deps: [embed]}
      - {name: attn, kind: attention, heads: 16, kv_heads: 4, seq_q: 8, seq_kv: 512, head_dim: 64, deps: [qkv]}
      - {name: out, kind: gemm, m: 8, n: 1024, k: 1024, sparsity: "2:4", deps: [attn]}
  - {name: norm, kind: layernorm, shape: [8, 1024], stream: 1, deps: ["layer[2].out"]}
)"));
  REQUIRE(t.ops.size() == 11);
  CHECK(t.ops[0].dtype == Dtype::fp8_e4m3);
  CHECK(t.ops[1].name == "layer[0].qkv");
  CHECK(t.ops[1].deps == std::vector<size_t>{0});
  CHECK(t.ops[5].name == "layer[1].attn");
  CHECK(t.ops[5].deps == std::vector<size_t>{4});  // the same iteration's qkv
  CHECK(t.ops[3].sparse_2_4);
  CHECK(t.ops[10].deps == std::vector<size_t>{9});
  CHECK(t.ops[10].stream == 1);
  CHECK(t.ops[2].kv_heads == 4);
}

TEST_CASE("FLOP counts follow the op definitions", "[trace]") {
  trace::Op g;
  g.kind = trace::OpKind::gemm;
  g.m = 128, g.n = 256, g.k = 64, g.batch = 2;
  CHECK(g.flops() == 2.0 * 2 * 128 * 256 * 64);
  trace::Op a;
  a.kind = trace::OpKind::attention;
  a.batch = 1, a.heads = 2, a.kv_heads = 2, a.seq_q = 4, a.seq_kv = 4, a.head_dim = 8;
  CHECK(a.flops() == 4.0 * 2 * 16 * 8);
  a.causal = true;  // 1 + 2 + 3 + 4 = 10 of the 16 pairs
  CHECK(a.attention_pairs() == 10);
  trace::Op c;
  c.kind = trace::OpKind::conv2d;
  c.batch = 1, c.h = 8, c.w = 8, c.c = 16, c.k = 32, c.r = 3, c.s = 3, c.stride = 1, c.pad = 1;
  CHECK(c.conv_p() == 8);
  CHECK(c.flops() == 2.0 * 64 * 32 * 16 * 9);
}

TEST_CASE("an elementwise op writes its outputs tensors of its shape, and other kinds take no outputs", "[trace]") {
  const auto t = trace::load_trace(temp_file(kHead + "  - {name: adam, kind: elementwise, shape: [1024], inputs: 4, outputs: 3, dtype: fp32}\n"
                                                     "  - {name: cast, kind: elementwise, shape: [64, 32], dtype: bf16, out_dtype: fp8, outputs: 2}\n"
                                                     "  - {name: add, kind: elementwise, shape: [64, 32], inputs: 2}\n"));
  CHECK(t.ops[0].outputs == 3);
  CHECK(t.ops[0].min_bytes() == 1024.0 * (4 * 4 + 3 * 4));
  CHECK(t.ops[1].min_bytes() == 64.0 * 32 * (2 + 2 * 1));
  CHECK(t.ops[2].outputs == 1);
  CHECK(t.ops[2].min_bytes() == 64.0 * 32 * 3 * 2);
  // The memo key tells them apart (op_fields: a work field).
  trace::Op a = t.ops[0], b = t.ops[0];
  b.outputs = 1;
  CHECK(trace::work_key(a) != trace::work_key(b));
  CHECK_THAT(trace_error(kHead + "  - {name: e, kind: elementwise, shape: [8], outputs: 0}\n"),
             Catch::Contains("key 'ops[0].outputs': value 0 is out of range"));
  CHECK_THAT(trace_error(kHead + "  - {name: s, kind: softmax, shape: [8, 8], outputs: 2}\n"),
             Catch::Contains("key 'ops[0].outputs': unknown key for a softmax op"));
}

TEST_CASE("a GEMM that accumulates reads its output too, and only GEMMs take accumulate", "[trace]") {
  const auto t = trace::load_trace(temp_file(kHead + "  - {name: g, kind: gemm, m: 64, n: 32, k: 16, out_dtype: fp32, accumulate: true}\n"
                                                     "  - {name: h, kind: gemm, m: 64, n: 32, k: 16, out_dtype: fp32}\n"));
  CHECK(t.ops[0].accumulate);
  CHECK_FALSE(t.ops[1].accumulate);
  CHECK(t.ops[0].min_bytes() == t.ops[1].min_bytes() + 64.0 * 32 * 4);
  CHECK(trace::work_key(t.ops[0]) != trace::work_key(t.ops[1]));
  CHECK_THAT(trace_error(kHead + "  - {name: g, kind: gemm, m: 8, n: 8, k: 8, accumulate: 2}\n"),
             Catch::Contains("key 'ops[0].accumulate'"));
  CHECK_THAT(trace_error(kHead + "  - {name: e, kind: elementwise, shape: [8], accumulate: true}\n"),
             Catch::Contains("key 'ops[0].accumulate': unknown key for a elementwise op"));
}

TEST_CASE("JSON Lines traces load, with line numbers in errors", "[trace]") {
  const auto t = trace::load_trace(temp_file(
      "{\"xpusim_trace\": 1, \"name\": \"gen\"}\n"
      "{\"name\": \"a\", \"kind\": \"gemm\", \"m\": 64, \"n\": 64, \"k\": 64}\n"
      "\n"
      "{\"name\": \"b\", \"kind\": \"softmax\", \"shape\": [64, 64], \"deps\": [\"a\"]}\n",
      ".jsonl"));
  REQUIRE(t.ops.size() == 2);
  CHECK(t.name == "gen");
  CHECK(t.ops[1].deps == std::vector<size_t>{0});
  const std::string e = trace_error("{\"xpusim_trace\": 1}\n{\"kind\": \"gemm\", \"m\": 64, \"n\": -1, \"k\": 64}\n", ".jsonl");
  CHECK_THAT(e, Catch::Matches(".*\\.jsonl:2:[0-9]+: key 'line 2\\.n': value -1 is out of range.*"));
  CHECK_THAT(trace_error("{\"xpusim_trace\": 1}\n{\"kind\": \"gemm\", \"m\": 64\n", ".jsonl"), Catch::Contains(".jsonl:2:") && Catch::Contains("malformed JSON"));
  CHECK_THAT(trace_error("", ".jsonl"), Catch::Contains("file is empty"));
}

TEST_CASE("JSON is read strictly, and a YAML file holds one document", "[trace][json]") {
  auto json_error = [](const std::string& text) { return error_of([&] { io::check_strict_json(text, "f.jsonl", 7); }); };
  CHECK(json_error("{\"a\": 1, \"b\": [1, 2.5, \"x\", null, true], \"c\": {\"a\": 2}}").empty());  // a key may recur in another object
  CHECK_THAT(json_error("{\"a\": 1} {\"b\": 2}"), Catch::StartsWith("f.jsonl:7:10: malformed JSON:") && Catch::Contains("expected end of input"));
  CHECK_THAT(json_error("{\"a\": 1},"), Catch::StartsWith("f.jsonl:7:9: malformed JSON:"));
  CHECK_THAT(json_error("{\"a\": 1} // why"), Catch::Contains("malformed JSON"));
  CHECK_THAT(json_error("{'a': 1}"), Catch::Contains("malformed JSON"));
  CHECK_THAT(json_error("{a: 1}"), Catch::Contains("malformed JSON"));
  CHECK_THAT(json_error("{\"a\": 1, \"b\": 2, \"a\": 3}"), Catch::StartsWith("f.jsonl:7:18: key 'a' appears twice in one object"));
  CHECK_THAT(json_error("{\"a\": \"x\\u0000y\"}"), Catch::StartsWith("f.jsonl:7:") && Catch::Contains("NUL character"));
  CHECK_THAT(json_error("{\"a\\u0000\": 1}"), Catch::Contains("a key holds a NUL character"));
  CHECK_THAT(json_error("{\"a\": 1e999}"), Catch::Equals("f.jsonl:7: malformed JSON: number overflow parsing '1e999'"));
  CHECK_THAT(json_error("{\"a\": 1,\n \"b\": }"), Catch::StartsWith("f.jsonl:8:7: malformed JSON:"));  // a whole file counts its lines

  auto yaml_error = [](const std::string& text) { return error_of([&] { load_yaml_string(text, "f.yaml"); }); };
  CHECK(yaml_error("a: 1\n").empty());
  CHECK(yaml_error("---\na: 1\n...\n").empty());
  CHECK(yaml_error("%YAML 1.2\n---\na: 1\n").empty());
  CHECK(yaml_error("a: |\n  ---\n  text\n").empty());  // indented: text in a block scalar, not a marker
  CHECK_THAT(yaml_error("a: 1\n---\nb: 2\n"), Catch::StartsWith("f.yaml:2: a second YAML document starts here"));
  CHECK_THAT(yaml_error("---\na: 1\n---\n"), Catch::StartsWith("f.yaml:3: a second YAML document"));
  CHECK_THAT(yaml_error("a: 1\n...\nb: 2\n"), Catch::StartsWith("f.yaml:3: a second YAML document"));
  CHECK(yaml_error(",").empty());  // a plain scalar, loaded at once (YAML::LoadAll never returns on it)
}

TEST_CASE("trace errors name file, line, column and key", "[trace][errors]") {
  CHECK_THAT(trace_error(kHead + "  - {name: g, kind: gemm, m: 64, n: 64}\n"), Catch::Contains(":4:5: key 'ops[0]': missing required key 'k'"));
  CHECK_THAT(trace_error(kHead + "  - {name: g, kind: gemm, m: 64, n: 64, k: -8}\n"), Catch::Contains("key 'ops[0].k': value -8 is out of range"));
  CHECK_THAT(trace_error(kHead + "  - {name: g, kind: gemm, m: 64, n: 64, k: 8, dtype: fp7}\n"), Catch::Contains("unknown number format 'fp7'"));
  CHECK_THAT(trace_error(kHead + "  - {name: g, kind: gem, m: 64}\n"), Catch::Contains("unknown op kind 'gem'") && Catch::Contains("did you mean 'gemm'"));
  CHECK_THAT(trace_error(kHead + "  - {name: g, kind: gemm, m: 64, n: 64, k: 8, kk: 3}\n"), Catch::Contains("key 'ops[0].kk': unknown key for a gemm op"));
  CHECK_THAT(trace_error(kHead + "  - {name: g, kind: gemm, m: 64, n: 64, k: 8, deps: [nothere]}\n"), Catch::Contains(":4:54: key 'ops[0].deps': no op named 'nothere'"));
  // A later op on the same stream: g waits for h, which waits for g by stream order.
  CHECK_THAT(trace_error(kHead + "  - {name: g, kind: gemm, m: 64, n: 64, k: 8, deps: [h]}\n  - {name: h, kind: gemm, m: 64, n: 64, k: 8}\n"),
             Catch::Contains(":4:5: key 'deps': dependency cycle: g -> h -> (stream order) g"));
  CHECK_THAT(trace_error(kHead + "  - {name: g, kind: gemm, m: 64, n: 64, k: 8}\n  - {name: g, kind: gemm, m: 64, n: 64, k: 8}\n"), Catch::Contains("duplicate op name 'g'"));
  CHECK_THAT(trace_error(kHead + "  - {name: g, kind: gemm, m: 4294967296, n: 4294967296, k: 8}\n"), Catch::Contains("more than 2^50"));
  CHECK_THAT(trace_error(kHead + "  - {name: s, kind: softmax, shape: []}\n"), Catch::Contains("expected a list of 1 to 8 positive dimensions"));
  CHECK_THAT(trace_error(kHead + "  - {kind: attention, heads: 6, kv_heads: 4, seq_q: 8, head_dim: 64}\n"), Catch::Contains("multiple of kv_heads"));
  CHECK_THAT(trace_error(kHead + "  - {kind: gemm, m: 8, n: 8, k: 8, sparsity: \"1:4\"}\n"), Catch::Contains("expected \"2:4\" or none"));
  CHECK_THAT(trace_error(kHead + "  - repeat: 0\n    ops: [{kind: gemm, m: 8, n: 8, k: 8}]\n"), Catch::Contains("key 'ops[0].repeat': value 0 is out of range"));
  CHECK_THAT(trace_error("xpusim_trace: 2\nops: []\n"), Catch::Contains("unsupported trace format version '2'"));
  CHECK_THAT(trace_error("name: x\nops: []\n"), Catch::Contains("needs 'xpusim_trace: 1'"));
  CHECK_THAT(trace_error("xpusim_trace: 1\nopz: []\n"), Catch::Contains("did you mean 'ops'"));
  CHECK_THAT(trace_error("xpusim_trace: 1\nops: []\n"), Catch::Contains("trace has no ops"));
  CHECK_THAT(trace_error("xpusim_trace: 1\nops:\n  - 42\n"), Catch::Contains("must be a mapping"));
}

TEST_CASE("a host op waits its duration and the report counts it as host time", "[trace][sim]") {
  const std::string host = "  - {name: wait, kind: host, duration: 50 us}\n";
  const std::string gemm = "  - {name: g, kind: gemm, m: 1024, n: 1024, k: 1024, dtype: bf16}\n";
  const auto t = trace::load_trace(temp_file(kHead + host));
  REQUIRE(t.ops.size() == 1);
  CHECK(t.ops[0].kind == trace::OpKind::host);
  CHECK(t.ops[0].is_timed_gap());
  CHECK_FALSE(t.ops[0].is_collective());
  CHECK(t.ops[0].flops() == 0);
  CHECK_THAT(trace_error(kHead + "  - {name: wait, kind: host, duration: -1 us}\n"), Catch::Contains("ops[0].duration"));
  CHECK_THAT(trace_error(kHead + "  - {name: wait, kind: host}\n"), Catch::Contains("duration"));
  const std::string h100 = xpusim::testing::source_path("configs/h100-sxm.yaml");
  const YAML::Node r = xpusim::testing::simulate(h100, kHead + host + gemm);
  const YAML::Node b = r["time_breakdown"];
  CHECK(b["host_s"].as<double>() == Approx(50e-6).epsilon(1e-6));
  CHECK(b["kernels_s"].as<double>() == Approx(r["ops"][1]["time_s"].as<double>()).epsilon(1e-9));
  CHECK(b["collectives_s"].as<double>() == 0);
  CHECK(b["kernels_s"].as<double>() + b["host_s"].as<double>() + b["idle_s"].as<double>() ==
        Approx(r["total"]["time_s"].as<double>()).epsilon(1e-9));
  // Beside the kernels on another stream, host time under a kernel is hidden: only what does not
  // overlap the kernel counts (here the kernel's launch, at most).
  const YAML::Node side = xpusim::testing::simulate(h100, kHead + "  - {name: wait, kind: host, duration: 5 us, stream: 1}\n" + gemm);
  CHECK(side["time_breakdown"]["host_s"].as<double>() < 2e-6);
  CHECK(side["total"]["time_s"].as<double>() < r["total"]["time_s"].as<double>() - 40e-6);
  // A trace's eager_issue: kernels issued one at a time, that far apart.
  std::string chain = "xpusim_trace: 1\neager_issue: 40 us\nops:\n";
  for (int i = 0; i < 10; ++i) chain += "  - {name: e" + std::to_string(i) + ", kind: elementwise, shape: [256], dtype: bf16}\n";
  const YAML::Node eager = xpusim::testing::simulate(h100, chain);
  CHECK(eager["total"]["time_s"].as<double>() >= 10 * 40e-6);
  CHECK_THAT(trace_error("xpusim_trace: 1\neager_issue: 5\nops:\n" + gemm), Catch::Contains("eager_issue"));
  // The host's serial work (a host op on stream 0) holds the issuing thread: the kernels after
  // it are issued after it, one every eager_issue, and the host op takes no issue slot.
  std::string serial = "xpusim_trace: 1\neager_issue: 40 us\nops:\n  - {name: wait, kind: host, duration: 500 us}\n";
  for (int i = 0; i < 10; ++i) serial += "  - {name: e" + std::to_string(i) + ", kind: elementwise, shape: [256], dtype: bf16}\n";
  const YAML::Node s = xpusim::testing::simulate(h100, serial);
  CHECK(s["total"]["time_s"].as<double>() >= 500e-6 + 10 * 40e-6);
  CHECK(s["ops"][1]["start_s"].as<double>() >= 540e-6 - 1e-9);
}

TEST_CASE("a delay op takes its duration, with units, and nothing else", "[trace][sim]") {
  const auto t = trace::load_trace(temp_file(kHead + "  - {name: gap, kind: delay, duration: 12.5 us}\n"));
  REQUIRE(t.ops.size() == 1);
  CHECK(t.ops[0].duration_s == Approx(12.5e-6));
  CHECK(t.ops[0].flops() == 0);
  CHECK(t.ops[0].min_bytes() == 0);
  CHECK_THAT(trace_error(kHead + "  - {name: gap, kind: delay, duration: 3 furlongs}\n"),
             Catch::Contains("ops[0].duration") && Catch::Contains("unknown unit"));
  CHECK_THAT(trace_error(kHead + "  - {name: gap, kind: delay}\n"), Catch::Contains("duration"));
  const YAML::Node r = xpusim::testing::simulate(xpusim::testing::source_path("configs/h100-sxm.yaml"),
                                                 kHead + "  - {name: gap, kind: delay, duration: 12.5 us}\n");
  CHECK(r["ops"][0]["time_s"].as<double>() == Approx(12.5e-6).epsilon(1e-3));
  const YAML::Node a = xpusim::testing::simulate(xpusim::testing::source_path("configs/magnet-int4.yaml"),
                                                 kHead + "  - {name: gap, kind: delay, duration: 12.5 us}\n");
  CHECK(a["ops"][0]["time_s"].as<double>() == Approx(12.5e-6).epsilon(1e-3));
}

TEST_CASE("weight-only formats: weights narrower than the math, with block scales", "[trace]") {
  const auto t = trace::load_trace(temp_file(kHead + R"(  - {name: w4, kind: gemm, m: 16, n: 4096, k: 4096, dtype: bf16, weight_dtype: int4}
  - {name: w4g64, kind: gemm, m: 16, n: 4096, k: 4096, dtype: bf16, weight_dtype: int4, weight_group: 64}
  - {name: mx, kind: gemm, m: 16, n: 4096, k: 4096, dtype: fp8, weight_dtype: mxfp4}
  - {name: nv, kind: gemm, m: 16, n: 4096, k: 4096, dtype: fp4, weight_dtype: nvfp4}
  - {name: w8, kind: gemm, m: 16, n: 4096, k: 4096, dtype: bf16, weight_dtype: fp8}
  - {name: same, kind: gemm, m: 16, n: 4096, k: 4096, dtype: bf16, weight_dtype: bf16}
  - {name: conv, kind: conv2d, h: 14, w: 14, c: 256, k: 256, r: 3, s: 3, pad: 1, dtype: bf16, weight_dtype: int4}
)"));
  REQUIRE(t.ops.size() == 7);
  CHECK(t.ops[0].weight_bits() == Approx(4 + 16.0 / 128));  // GPTQ/AWQ: an fp16 scale per 128
  CHECK(t.ops[1].weight_bits() == Approx(4 + 16.0 / 64));
  CHECK(t.ops[2].weight_dtype == Dtype::fp4);
  CHECK(t.ops[2].weight_bits() == Approx(4.25));  // OCP MX: an E8M0 scale per 32
  CHECK(t.ops[3].weight_bits() == Approx(4.5));   // NVFP4: an E4M3 scale per 16
  CHECK(t.ops[4].weight_bits() == 8);             // per-channel scales, applied in the epilogue
  CHECK_FALSE(t.ops[5].weight_only());            // stored as computed: nothing special
  CHECK(t.ops[5].weight_bits() == 16);
  // FLOPs do not change; the weights' compulsory bytes do.
  CHECK(t.ops[0].flops() == t.ops[5].flops());
  const double acts = 16.0 * 4096 * 2 * 2;  // A read, C written, bf16
  CHECK(t.ops[0].min_bytes() - acts == Approx(4096.0 * 4096 * (4 + 0.125) / 8));
  trace::Op dense_conv = t.ops[6];
  dense_conv.weight_format.clear();
  CHECK(dense_conv.min_bytes() - t.ops[6].min_bytes() == Approx(256.0 * 9 * 256 * (16 - 4.125) / 8));  // conv: the filters' bytes

  auto err = [&](const std::string& op) { return trace_error(kHead + "  - " + op + "\n"); };
  CHECK_THAT(err("{name: g, kind: gemm, m: 8, n: 8, k: 8, dtype: fp8, weight_dtype: bf16}"),
             Catch::Contains("key 'ops[0].weight_dtype'") && Catch::Contains("wider than the op's dtype"));
  CHECK_THAT(err("{name: g, kind: gemm, m: 8, n: 8, k: 8, weight_dtype: int3}"),
             Catch::Contains("unknown number format 'int3'") && Catch::Contains("mxfp4"));
  CHECK_THAT(err("{name: g, kind: gemm, m: 8, n: 8, k: 8, weight_group: 128}"), Catch::Contains("applies with weight_dtype"));
  CHECK_THAT(err("{name: g, kind: gemm, m: 8, n: 8, k: 8, dtype: fp8, weight_dtype: mxfp4, weight_group: 64}"),
             Catch::Contains("mxfp4 fixes its block size"));
  CHECK_THAT(err("{name: g, kind: gemm, m: 8, n: 8, k: 8, weight_dtype: int4, weight_group: -1}"),
             Catch::Contains("ops[0].weight_group"));
  CHECK_THAT(err("{name: e, kind: elementwise, shape: [8], weight_dtype: int4}"), Catch::Contains("weight_dtype"));
}

TEST_CASE("deps may name later ops, and cycles through deps and stream order are refused at load", "[trace][deps]") {
  // Forward references on other streams are fine, and resolve in a repeat block's iteration.
  const auto t = trace::load_trace(temp_file(kHead +
                                             "  - {name: a, kind: gemm, m: 64, n: 64, k: 64, deps: [b]}\n"
                                             "  - {name: b, kind: softmax, shape: [64, 64], stream: 1}\n"
                                             "  - repeat: 2\n    name: l\n    ops:\n"
                                             "      - {name: x, kind: gemm, m: 64, n: 64, k: 64, deps: [y], stream: 2}\n"
                                             "      - {name: y, kind: softmax, shape: [64, 64], stream: 3}\n"));
  REQUIRE(t.ops.size() == 6);
  CHECK(t.ops[0].deps == std::vector<size_t>{1});
  CHECK(t.ops[2].deps == std::vector<size_t>{3});  // l[0].x waits for l[0].y
  CHECK(t.ops[4].deps == std::vector<size_t>{5});  // l[1].x waits for l[1].y
  // An op on its own; a three-op ring over three streams; a ring through another GPU's stream.
  CHECK_THAT(trace_error(kHead + "  - {name: a, kind: gemm, m: 64, n: 64, k: 64, deps: [a]}\n"), Catch::Contains("dependency cycle: a -> a"));
  CHECK_THAT(trace_error(kHead + "  - {name: a, kind: gemm, m: 64, n: 64, k: 64, deps: [c]}\n"
                                 "  - {name: b, kind: gemm, m: 64, n: 64, k: 64, deps: [a], stream: 1}\n"
                                 "  - {name: c, kind: gemm, m: 64, n: 64, k: 64, deps: [b], stream: 2}\n"),
             Catch::Contains("dependency cycle: a -> c -> b -> a"));
  CHECK_THAT(trace_error(kHead + "  - {name: a, kind: gemm, m: 64, n: 64, k: 64, device: 1, deps: [c]}\n"
                                 "  - {name: b, kind: gemm, m: 64, n: 64, k: 64, device: 1}\n"
                                 "  - {name: c, kind: gemm, m: 64, n: 64, k: 64, device: 0, deps: [b]}\n"),
             Catch::Contains("dependency cycle: a -> c -> b -> (stream order) a"));
  // JSON Lines too, naming the line.
  CHECK_THAT(trace_error("{\"xpusim_trace\": 1}\n{\"name\": \"a\", \"kind\": \"gemm\", \"m\": 8, \"n\": 8, \"k\": 8, \"deps\": [\"b\"]}\n"
                         "{\"name\": \"b\", \"kind\": \"gemm\", \"m\": 8, \"n\": 8, \"k\": 8}\n", ".jsonl"),
             Catch::Matches(".*\\.jsonl:2:1: key 'deps': dependency cycle: a -> b -> \\(stream order\\) a.*"));
}

TEST_CASE("traces are UTF-8: names in any script load, invalid bytes are refused with their position", "[trace][errors]") {
  const auto t = trace::load_trace(temp_file(kHead + "  - {name: \"caf\xc3\xa9-\xe2\x82\xac-\xf0\x9f\x98\x80\", kind: gemm, m: 8, n: 8, k: 8}\n"));
  CHECK(t.ops[0].name == "caf\xc3\xa9-\xe2\x82\xac-\xf0\x9f\x98\x80");
  // A stray byte, an overlong encoding of '/', a UTF-16 surrogate, a sequence cut short.
  for (const std::string bad : {"\xfc", "\xc0\xaf", "\xed\xa0\x80", "\xe2\x82"})
    CHECK_THAT(trace_error(kHead + "  - {name: \"ab" + bad + "\", kind: gemm, m: 8, n: 8, k: 8}\n"),
               Catch::Contains(":4:15: not UTF-8 text (byte 0x"));
}

TEST_CASE("report strings are written as JSON a strict reader reads back unchanged", "[json]") {
  // JsonWriter escapes through nlohmann-json: whatever a name holds, report.json stays JSON.
  const std::vector<std::string> names = {"plain", "a \"quoted\" name", "back\\slash", "tab\tnew\nline\r",
                                          std::string("bell\x07 and \x1f"), "caf\xc3\xa9 \xe2\x9c\x93", "</script>"};
  for (const std::string& s : names) {
    report::JsonWriter w;
    w.begin_object().field("name", s).field("x", 0.1).end_object();
    const std::string text = w.str();
    INFO(text);
    CHECK(error_of([&] { io::check_strict_json(text, "w.json", 1); }).empty());
    CHECK(nlohmann::json::parse(text)["name"].get<std::string>() == s);
  }
  // Text that is not UTF-8 (the loaders refuse it) is replaced, never written raw.
  report::JsonWriter w;
  w.begin_object().field("name", std::string("bad \xff byte")).end_object();
  CHECK(error_of([&] { io::check_strict_json(w.str(), "w.json", 1); }).empty());
}

namespace {
// Changes one field's value, whatever its type.
struct Nudge {
  void operator()(std::string& x) const { x += "x"; }
  void operator()(bool& x) const { x = !x; }
  void operator()(int& x) const { ++x; }
  void operator()(int64_t& x) const { ++x; }
  void operator()(double& x) const { x += 0.5; }
  void operator()(trace::OpKind& x) const { x = x == trace::OpKind::gemm ? trace::OpKind::conv2d : trace::OpKind::gemm; }
  void operator()(Dtype& x) const { x = x == Dtype::bf16 ? Dtype::fp16 : Dtype::bf16; }
  void operator()(SourceLoc& x) const { ++x.line; }
  template <class T>
  void operator()(std::vector<T>& x) const { x.push_back(T{}); }
};
}  // namespace

TEST_CASE("Every field of trace::Op is listed once in visit_fields, and each work field is in the memo key", "[trace]") {
  trace::Op op;
  std::vector<const void*> seen;
  std::vector<std::string> names;
  trace::visit_fields(op, [&](const char* name, const auto& field, trace::FieldRole) {
    seen.push_back(&field);
    names.push_back(name);
  });
  // A field added to Op and not to visit_fields (sim/trace/op_fields.h) fails here: fast
  // fidelity would otherwise let two kernels that differ in it share one simulation.
  CHECK(seen.size() == trace::aggregate_fields<trace::Op>());
  std::vector<const void*> distinct = seen;
  std::sort(distinct.begin(), distinct.end());
  CHECK(std::unique(distinct.begin(), distinct.end()) == distinct.end());
  CHECK(trace::aggregate_fields<SourceLoc>() == 3);  // the counter counts

  // Changing any one field changes work_key exactly when the field is a work field.
  const std::string base = trace::work_key(op);
  for (size_t i = 0; i < seen.size(); ++i) {
    trace::Op changed = op;
    size_t j = 0;
    trace::FieldRole role = trace::FieldRole::work;
    trace::visit_fields(changed, [&](const char*, auto& field, trace::FieldRole r) {
      if (j++ == i) Nudge{}(field), role = r;
    });
    INFO(names[i]);
    CHECK((trace::work_key(changed) != base) == (role == trace::FieldRole::work));
  }
}
