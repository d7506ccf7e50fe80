// Torch binding of the sm_90 folded decode kernel (folded_decode_sm90.cu).
// Argument checking with clear messages happens in Python (foscar.decode); the
// checks here (FOSCAR_CHECK) guard against misuse of this low-level entry point. lens: int32 [batch], the
// sequences' lengths (contiguous) or kv_last_page_len (paged, with kv_indptr / kv_indices).
#include <torch/extension.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>

#include "folded_decode_sm90.h"

// A refused argument raises std::runtime_error (RuntimeError in Python) whose message is formatted by vsnprintf.
// Not TORCH_CHECK: its message goes through std::ostringstream, and on the lent H200s (extensions built with
// /opt/gcc/bin/g++, run against the system's libstdc++.so.6) writing an integer into that stream inside this module
// crashed the process with SIGSEGV in a copy of basic_ostream::_M_insert<long> linked into the module (the cause is
// not established; bench/NOTES.md §59). vsnprintf is libc's.
[[noreturn]] __attribute__((format(printf, 1, 2))) static void fail(const char* fmt, ...) {
  char msg[512];
  va_list args;
  va_start(args, fmt);
  vsnprintf(msg, sizeof msg, fmt, args);
  va_end(args);
  throw std::runtime_error(msg);
}
#define FOSCAR_CHECK(cond, ...)     \
  do {                              \
    if (!(cond)) fail(__VA_ARGS__); \
  } while (0)

static std::string shape(const torch::Tensor& t) {  // "[2, 8, 4, 128]"
  std::string s = "[";
  for (int64_t d = 0; d < t.dim(); ++d) s += (d ? ", " : "") + std::to_string(t.size(d));
  return s + "]";
}

void folded_decode(torch::Tensor q, torch::Tensor k_codes, torch::Tensor v_codes, torch::Tensor k_scale,
                   torch::Tensor k_offset, torch::Tensor v_scale, torch::Tensor v_offset, torch::Tensor lens,
                   std::optional<torch::Tensor> kv_indptr, std::optional<torch::Tensor> kv_indices,
                   torch::Tensor o_part, torch::Tensor lse_part, torch::Tensor out, torch::Tensor lse,
                   torch::Tensor counters, std::optional<torch::Tensor> seq_chunks, int64_t bits, int64_t group_size, int64_t k_block, int64_t fixed_splits,
                   int64_t target_chunks, int64_t min_chunk, int64_t long_chunk, int64_t short_tokens, double qk_scale_log2, int64_t mode, int64_t fixed_window, int64_t pv_pack,
                   int64_t max_ctas_per_sm, int64_t pdl) {
  // ranks and dtypes first, so that a wrong one is refused here with a message formatted as above, before any torch
  // accessor below (size(d), stride(d), data_ptr<T>()) checks it with its own
  FOSCAR_CHECK(q.dim() == 3, "q: [batch, num_qo_heads, head_dim], got %lld dims", (long long)q.dim());
  for (const auto& t : {k_codes, v_codes}) {
    FOSCAR_CHECK(t.dim() == 4, "k_codes, v_codes: [batch or num_pages, num_kv_heads, tokens, bytes per token], got %lld "
                 "dims", (long long)t.dim());
    FOSCAR_CHECK(t.scalar_type() == torch::kUInt8, "k_codes, v_codes: uint8");
  }
  for (const auto& t : {k_scale, k_offset, v_scale, v_offset}) {
    FOSCAR_CHECK(t.dim() == 4, "k_scale ... v_offset: 4 dims, got %lld", (long long)t.dim());
    FOSCAR_CHECK(t.scalar_type() == torch::kFloat32, "k_scale ... v_offset: float32");
  }
  FOSCAR_CHECK(o_part.scalar_type() == torch::kFloat32 && lse_part.scalar_type() == torch::kFloat32,
               "o_part, lse_part: float32");
  FOSCAR_CHECK(q.is_cuda() && q.scalar_type() == torch::kBFloat16 && q.stride(2) == 1, "q: CUDA bf16, last dim contiguous");
  for (const auto& t : {k_codes, v_codes, k_scale, k_offset, v_scale, v_offset, lens, o_part, lse_part, out, lse, counters})
    FOSCAR_CHECK(t.is_cuda() && t.is_contiguous(), "cache tensors and outputs must be contiguous CUDA tensors");
  FOSCAR_CHECK(lens.scalar_type() == torch::kInt32 && counters.scalar_type() == torch::kInt32, "lens, counters: int32");
  FOSCAR_CHECK(out.scalar_type() == torch::kBFloat16 && out.sizes() == q.sizes(), "out: bf16 of q's shape");
  FOSCAR_CHECK(lse.scalar_type() == torch::kFloat32 && lse.numel() == q.size(0) * q.size(1), "lse: fp32 [batch, num_qo_heads]");
  const int64_t sequence_heads = q.size(0) * k_codes.size(1);
  FOSCAR_CHECK(seq_chunks.has_value() || (counters.numel() >= sequence_heads && counters.numel() % sequence_heads == 0),
               "counters: [batch, num_kv_heads] or [batch, num_kv_heads, 1 + groups] (the in-kernel merge's), got %s",
               shape(counters).c_str());
  // group counters a (sequence, KV head) after its own (the two-level merge of more than 32 chunks)
  const int merge_groups = seq_chunks.has_value() || sequence_heads == 0 ? 0 : (int)(counters.numel() / sequence_heads - 1);
  FOSCAR_CHECK(merge_groups == 0 || mode == 0, "counters: group counters ([batch, num_kv_heads, 1 + groups]) are for "
               "the folded BF16 mode (mode 0) only, got mode %lld", (long long)mode);
  FOSCAR_CHECK(lens.numel() == q.size(0), "lens: [batch] (seq_lens or kv_last_page_len)");
  FOSCAR_CHECK(!kv_indptr.has_value() || kv_indptr->numel() == q.size(0) + 1, "kv_indptr: [batch + 1]");
  int* chunks_ptr = nullptr;
  if (seq_chunks.has_value()) {
    FOSCAR_CHECK(seq_chunks->is_cuda() && seq_chunks->is_contiguous() && seq_chunks->scalar_type() == torch::kInt32 &&
                 seq_chunks->numel() == 2 * q.size(0), "seq_chunks: contiguous CUDA int32 [batch, 2]");
    chunks_ptr = seq_chunks->data_ptr<int>();
  }
  FOSCAR_CHECK(o_part.dim() == 3 && o_part.size(1) == q.size(1) && o_part.size(2) == q.size(2) &&
               lse_part.dim() == 2 && lse_part.size(0) == o_part.size(0) && lse_part.size(1) == q.size(1),
               "o_part [num_slots, num_qo_heads, head_dim], lse_part [num_slots, num_qo_heads]");
  FOSCAR_CHECK(kv_indptr.has_value() == kv_indices.has_value(), "kv_indptr and kv_indices: both or neither");
  const int* indptr = nullptr;
  const int* indices = nullptr;
  if (kv_indptr.has_value()) {
    for (const auto& t : {*kv_indptr, *kv_indices})
      FOSCAR_CHECK(t.is_cuda() && t.is_contiguous() && t.scalar_type() == torch::kInt32, "page table: contiguous CUDA int32");
    indptr = kv_indptr->data_ptr<int>();
    indices = kv_indices->data_ptr<int>();
  }
  for (const auto& t : {out, o_part})  // the epilogue's 8 / 16-byte stores of 4 channels (plan buffers are)
    FOSCAR_CHECK(reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0, "out and o_part must be 16-byte aligned");
  for (const auto& t : {k_codes, v_codes})  // 16-byte copies of code rows
    FOSCAR_CHECK(reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0, "code tensors must be 16-byte aligned");
  if (k_block != 0) {  // channel-wise K: rows of head_dim scales / offsets per K block, copied 16 bytes at a time
    FOSCAR_CHECK(k_block == 32 || k_block == 64 || k_block == 128, "k_block: expected 0, 32, 64 or 128, got %lld",
                 (long long)k_block);
    const int64_t rows = k_codes.size(2);  // tokens per sequence (contiguous) or per page (paged)
    FOSCAR_CHECK(!kv_indptr.has_value() || rows % k_block == 0,
                 "paged channel-wise K: k_block %lld must divide page_size %lld", (long long)k_block, (long long)rows);
    const int64_t blocks = (rows + k_block - 1) / k_block;
    for (const auto& t : {k_scale, k_offset})
      FOSCAR_CHECK(reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0 && t.size(0) == k_codes.size(0) &&
                   t.size(1) == k_codes.size(1) && t.size(2) == blocks && t.size(3) == q.size(2),
                   "channel-wise K: k_scale / k_offset must be [%lld, %lld, %lld, %lld] and 16-byte aligned, got %s",
                   (long long)k_codes.size(0), (long long)k_codes.size(1), (long long)blocks, (long long)q.size(2),
                   shape(t).c_str());
  }
  // paged: the kernel computes token rows (page * num_kv_heads + head) * page_size + offset in 32-bit unsigned
  FOSCAR_CHECK(!kv_indptr.has_value() || k_codes.size(0) * k_codes.size(1) * k_codes.size(2) <= (int64_t(1) << 32),
               "paged cache: at most 2^32 token rows (num_pages * num_kv_heads * page_size), got %lld",
               (long long)(k_codes.size(0) * k_codes.size(1) * k_codes.size(2)));
  FOSCAR_CHECK(mode >= 0 && mode <= 2, "mode: expected 0 (folded bf16), 1 (per-value) or 2 (folded fp8), got %lld",
               (long long)mode);
  const c10::cuda::CUDAGuard guard(q.device());
  const int batch = q.size(0), num_qo_heads = q.size(1), head_dim = q.size(2);
  const int num_kv_heads = k_codes.size(1), max_seq_len = k_codes.size(2);
  const int num_slots = o_part.size(0);
  FOSCAR_CHECK(fixed_splits >= 0 && target_chunks >= 1, "fixed_splits >= 0, target_chunks >= 1");
  FOSCAR_CHECK(min_chunk == 256 || min_chunk == 512, "min_chunk: expected 256 or 512 tokens, got %lld",
               (long long)min_chunk);
  FOSCAR_CHECK(long_chunk >= 0 && long_chunk <= 32768 && long_chunk % 256 == 0,
               "long_chunk: expected 0 or a multiple of 256 tokens up to 32768, got %lld", (long long)long_chunk);
  FOSCAR_CHECK(short_tokens >= 0 && short_tokens <= std::numeric_limits<int>::max(),
               "short_tokens: expected 0 (never) or a token count up to 2^31 - 1, got %lld", (long long)short_tokens);
  FOSCAR_CHECK(fixed_splits == 0 || num_slots == batch * fixed_splits, "fixed_splits: o_part needs batch * fixed_splits slots");
  FOSCAR_CHECK(fixed_splits > 0 || num_slots >= batch, "o_part: at least one slot per sequence (num_slots >= batch)");
  FOSCAR_CHECK(fixed_window == 0 || (fixed_window == 1 && fixed_splits >= 2 && seq_chunks.has_value()),
               "fixed_window: 0, or 1 with fixed_splits >= 2 and seq_chunks; got fixed_window %lld, fixed_splits %lld",
               (long long)fixed_window, (long long)fixed_splits);
  FOSCAR_CHECK(max_ctas_per_sm >= 0 && max_ctas_per_sm <= 32, "max_ctas_per_sm: 0 (as many as fit) or 1..32, got %lld",
               (long long)max_ctas_per_sm);
  FOSCAR_CHECK(pdl == 0 || pdl == 1, "pdl: 0 (a plain launch) or 1 (programmatic dependent launch), got %lld",
               (long long)pdl);
  FoscarDecodeArgs a{};  // every field by name (folded_decode_sm90.h)
  a.q = q.data_ptr();
  a.k_codes = k_codes.data_ptr();
  a.v_codes = v_codes.data_ptr();
  a.k_scale = k_scale.data_ptr<float>();
  a.k_offset = k_offset.data_ptr<float>();
  a.v_scale = v_scale.data_ptr<float>();
  a.v_offset = v_offset.data_ptr<float>();
  a.lens = lens.data_ptr<int>();
  a.kv_indptr = indptr;
  a.kv_indices = indices;
  a.num_indices = indices ? (int)kv_indices->numel() : 0;
  a.num_pages = indices ? (int)std::min<int64_t>(k_codes.size(0), std::numeric_limits<int>::max()) : 0;
  a.page_size = indptr ? (int)k_codes.size(2) : 0;
  a.o_part = o_part.data_ptr<float>();
  a.lse_part = lse_part.data_ptr<float>();
  a.out = out.data_ptr();
  a.lse = lse.data_ptr<float>();
  a.counters = counters.data_ptr<int>();
  a.merge_groups = merge_groups;
  a.seq_chunks = chunks_ptr;
  a.batch = batch;
  a.num_kv_heads = num_kv_heads;
  a.gqa = num_qo_heads / num_kv_heads;
  a.max_seq_len = max_seq_len;
  a.num_slots = num_slots;
  a.fixed_splits = (int)fixed_splits;
  a.target_chunks = (int)target_chunks;
  a.min_chunk = (int)min_chunk;
  a.long_chunk = (int)long_chunk;
  a.short_tokens = (int)short_tokens;
  a.q_stride_b = q.stride(0);
  a.q_stride_h = q.stride(1);
  a.qk_scale_log2 = (float)qk_scale_log2;
  a.bits = (int)bits;
  a.head_dim = head_dim;
  a.group_size = (int)group_size;
  a.k_block = (int)k_block;
  a.mode = (int)mode;
  a.fixed_window = (int)fixed_window;
  a.pv_pack = pv_pack != 0;
  a.max_ctas_per_sm = (int)max_ctas_per_sm;
  a.pdl = (int)pdl;
  cudaError_t err = foscar_folded_decode_sm90(&a, c10::cuda::getCurrentCUDAStream());
  FOSCAR_CHECK(err == cudaSuccess, "foscar_folded_decode_sm90: %s", cudaGetErrorString(err));
}

// Profiling builds: later launches write per-CTA timelines into `buffer` (CUDA int64 [1 + FOSCAR_TIMELINE_FIELDS * records], element 0
// zeroed by the caller); None stops. Returns False when the extension was built without FOSCAR_TIMELINE.
bool set_timeline(std::optional<torch::Tensor> buffer) {
  if (!buffer.has_value()) return foscar_set_timeline(nullptr, 0) != 0;
  const torch::Tensor& t = *buffer;
  constexpr int F = FOSCAR_TIMELINE_FIELDS;
  FOSCAR_CHECK(t.is_cuda() && t.is_contiguous() && t.scalar_type() == torch::kInt64 && t.dim() == 1 &&
                   t.numel() >= 1 + F && (t.numel() - 1) % F == 0,
               "timeline buffer: contiguous CUDA int64 [1 + %d * records], got %s", F, shape(t).c_str());
  return foscar_set_timeline(t.data_ptr(), (int)((t.numel() - 1) / F)) != 0;
}

// Whether this build's instance for the format, mode and cache kind holds the in-kernel split merge
// (foscar_fused_merge_in); without it a launch needs seq_chunks (the merge kernel).
bool fused_merge_in(int64_t bits, int64_t head_dim, int64_t group_size, int64_t mode, bool paged, bool channel_k) {
  return foscar_fused_merge_in((int)bits, (int)head_dim, (int)group_size, (int)mode, paged, channel_k) != 0;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("fused_merge_in", &fused_merge_in, "whether the kernel instance holds the in-kernel split merge");
  m.def("set_timeline", &set_timeline, "profiling builds (FOSCAR_TIMELINE): per-CTA timelines into a buffer");
  m.def("folded_decode", &folded_decode, "FOSCAR INT2/INT4 split-KV decode (sm_90, mma.sync); mode 0: folded BF16, 1: per-value reconstruction, 2: folded FP8");
}
