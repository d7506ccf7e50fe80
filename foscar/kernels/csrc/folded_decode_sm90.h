// The C entry point of the sm_90 decode kernel (defined in folded_decode_sm90.cu), declared
// once for the definition and for the torch binding: with extern "C" a mismatch between
// two copies of this signature would link and then crash.
#pragma once

#include <cuda_runtime.h>

// Dispatch on the format and on the operand mode (0: folded BF16, 1: per-value
// reconstruction, 2: folded FP8). Contiguous cache: lens = the sequences' lengths [batch],
// kv_indptr = kv_indices = nullptr, page_size ignored. Paged cache (FlashInfer-style page
// table, page_size a power of two): lens = kv_last_page_len [batch]; the kernel derives each
// length from kv_indptr (no extra kernel). Lengths are clamped to what the cache holds (contiguous:
// max_seq_len; paged: num_indices = the length of kv_indices, kv_last_page_len to 0..page_size). num_pages: paged,
// the pool's pages (k_codes' first dimension; builds with FOSCAR_PREWAIT_PAGED prefetch no page id at or past it);
// ignored elsewhere.
// Output: out [batch, num_qo_heads, head_dim] bf16 and lse [batch, num_qo_heads] fp32 (natural
// log), through the split partials o_part [num_slots, num_qo_heads, head_dim] / lse_part
// [num_slots, num_qo_heads] fp32 and counters [batch, num_kv_heads, 1 + merge_groups] int32, zero before the first
// launch (the kernel leaves them zero; only where foscar_fused_merge_in says 1; merge_groups >= 0 group counters a
// (sequence, KV head) after its own: a sequence of more than 32 and at most 16 * merge_groups chunks merges in two
// levels, groups of 16 chunks first, bench/NOTES.md §108-§109; mode 0 and seq_chunks nullptr only, else
// cudaErrorInvalidValue); or, with seq_chunks [batch, 2] int32 non-null, no merge in the kernel: each sequence's
// first slot and chunk count go to seq_chunks for a merge kernel (foscar/kernels/merge_triton.py merge_slots;
// sequences of one chunk are written directly). Split-KV: fixed_splits > 0 cuts every sequence into that many chunks
// (num_slots = batch * fixed_splits); 0 sizes chunks from the lengths so that they fill the num_slots slots
// (num_slots >= batch; chunk T / target_chunks, at least min_chunk tokens: 512, or 256 where the plan's target fits
// one CTA an SM, foscar/kernels/splits.py plan_min_chunk, or where T <= short_tokens and the longest length is past
// min_chunk, splits.plan_short_tokens, 0 for none; grown until the chunks fit; short_tokens < 0:
// cudaErrorInvalidValue).
// long_chunk: 0, or a multiple of 256 up to 32768 with which a fixed_splits above 32 cuts a length in chunks of at
// least min(long_chunk, ceil(length / 32)) tokens, and the length-aware chunks' least is min(ceil(longest / 32),
// long_chunk) instead of ceil(longest / 32) (a plan made for the capacity: splits.plan_long_chunk).
// k_block: 0 for token-wise K (k_scale / k_offset like
// V's), or 32 / 64 / 128 for channel-wise K (k_scale / k_offset [batch, num_kv_heads,
// ceil(max_seq_len / k_block), head_dim]; paged: [num_pages, num_kv_heads, page_size / k_block,
// head_dim], k_block dividing page_size). Paged pools hold at most 2^32 token rows, num_pages *
// num_kv_heads * page_size (the kernel's page-table rows are 32-bit unsigned; the caller checks: the
// torch binding does). Returns cudaErrorInvalidValue for an unsupported
// (bits, head_dim, group_size, gqa, mode, page_size, k_block). fixed_window: 0, or 1 with fixed_splits >= 2 and
// seq_chunks: every slot's partial is written (a sequence of one chunk's too, an empty chunk's LSE as -inf), so
// that a merge kernel can take sequence b's chunks as slots b * fixed_splits .. without reading seq_chunks.
// pv_pack: 1 lets gqa <= 4 take the integer PV with packed columns where the format has it (INT2 / INT4, head_dim
// <= 128, mode 0, token-wise K; bench/NOTES.md §62), 0 keeps INT2's two-mma integer PV (the same output up to fp32
// rounding) and INT4's BF16 PV. max_ctas_per_sm: 0, or k > 0: at most k CTAs share an SM (the dynamic shared memory
// padded where more would fit; bench/NOTES.md §67). pdl: 1 launches the kernel with programmatic dependent launch
// (cudaLaunchAttributeProgrammaticStreamSerialization; the kernel waits in griddepcontrol.wait before it reads any
// value that reaches the outputs, so its launch may overlap the previous kernel's tail where that kernel triggers; in
// builds with FOSCAR_PREWAIT_PREFETCH, off by default, contiguous token-wise instances (paged too, with
// FOSCAR_PREWAIT_PAGED) prefetch into L2 their chunk's first steps before the wait, placed from lengths and page ids
// read relaxed, a hint that changes no value), 0 a plain launch (no prefetch); every CTA executes
// griddepcontrol.launch_dependents after its main loop, or at its start in the instances that prefetch where no merge
// kernel follows (bench/NOTES.md §43, §73, §99, §100).
// The arguments by name (each field's contract above), filled field by field by the caller: a positional list of 40
// arguments, most of them int, let two swapped values compile.
typedef struct FoscarDecodeArgs {
  const void* q;  // bf16 [batch, num_qo_heads, head_dim], strides q_stride_b / q_stride_h (elements), last dim dense
  const void* k_codes;
  const void* v_codes;
  const float* k_scale;
  const float* k_offset;
  const float* v_scale;
  const float* v_offset;
  const int* lens;
  const int* kv_indptr;
  const int* kv_indices;
  int num_indices, num_pages, page_size;
  float* o_part;
  float* lse_part;
  void* out;
  float* lse;
  int* counters;
  int merge_groups;
  int* seq_chunks;
  int batch, num_kv_heads, gqa, max_seq_len, num_slots, fixed_splits, target_chunks, min_chunk, long_chunk;
  int short_tokens;
  long long q_stride_b, q_stride_h;
  float qk_scale_log2;
  int bits, head_dim, group_size, k_block, mode, fixed_window, pv_pack, max_ctas_per_sm, pdl;
} FoscarDecodeArgs;

// args nullptr: cudaErrorInvalidValue.
extern "C" cudaError_t foscar_folded_decode_sm90(const FoscarDecodeArgs* args, cudaStream_t stream);

// 1 where the instance for (bits, head_dim, group_size, mode, paged, channel_k: k_block != 0) holds the in-kernel
// split merge (counters, seq_chunks nullptr), 0 where its launches need seq_chunks and the merge kernel: a build
// with -DFOSCAR_FUSED_MERGE=0, and INT2 D=128 G=32 mode 0 paged token-wise (fused_merge_in in
// folded_decode_sm90.cuh; bench/NOTES.md §81). It answers for formats with no instance too (1 unless that rule
// says 0). foscar_folded_decode_sm90 returns cudaErrorInvalidValue for a launch with seq_chunks nullptr on an
// instance without the merge.
extern "C" int foscar_fused_merge_in(int bits, int head_dim, int group_size, int mode, int paged, int channel_k);

// u64 fields of one CTA's timeline record (the layout: kTimelineFields in folded_decode_sm90.cuh; the reader's
// FIELDS in bench/timeline.py, which the binding's buffer check holds to this count)
#define FOSCAR_TIMELINE_FIELDS 13

// Profiling builds (-DFOSCAR_TIMELINE=1): every later launch's CTAs write their timeline into buffer, a device
// array of 1 + FOSCAR_TIMELINE_FIELDS * records u64 whose first element (a record counter) the caller zeroes (layout: Params in
// folded_decode_sm90.cuh; reader: bench/timeline.py); buffer nullptr stops it. Returns 1, or 0 in a build without
// FOSCAR_TIMELINE (nothing is written).
extern "C" int foscar_set_timeline(void* buffer, int records);
