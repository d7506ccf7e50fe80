// FOSCAR folded INT2/INT4 split-KV decode attention for sm_90: the C entry point.
// The kernel is in folded_decode_sm90.cuh; each operand mode and cache kind is compiled in its own
// translation unit (decode_mode_*.cu).
#include "folded_decode_sm90.h"
#include "folded_decode_sm90.cuh"

static_assert(foscar::kTimelineFields == FOSCAR_TIMELINE_FIELDS, "timeline record: the kernel's layout and the C API's count");

#if FOSCAR_TIMELINE
static unsigned long long* g_timeline = nullptr;  // foscar_set_timeline's buffer, given to every launch
static int g_timeline_records = 0;
#endif

// Contract in folded_decode_sm90.h.
extern "C" int foscar_set_timeline(void* buffer, int records) {
#if FOSCAR_TIMELINE
  g_timeline = static_cast<unsigned long long*>(buffer);
  g_timeline_records = buffer != nullptr ? records : 0;
  return 1;
#else
  (void)buffer;
  (void)records;
  return 0;
#endif
}

// Contract in folded_decode_sm90.h.
extern "C" int foscar_fused_merge_in(int bits, int head_dim, int group_size, int mode, int paged, int channel_k) {
  return foscar::fused_merge_in(bits, head_dim, group_size, mode, paged != 0, channel_k != 0) ? 1 : 0;
}

// The C entry point (the torch binding's, and anything else's): contract in folded_decode_sm90.h.
extern "C" cudaError_t foscar_folded_decode_sm90(
    const void* q, const void* k_codes, const void* v_codes, const float* k_scale, const float* k_offset,
    const float* v_scale, const float* v_offset, const int* lens, const int* kv_indptr, const int* kv_indices,
    int num_indices, int num_pages, int page_size, float* o_part, float* lse_part, void* out, float* lse, int* counters,
    int merge_groups, int* seq_chunks, int batch,
    int num_kv_heads, int gqa, int max_seq_len, int num_slots, int fixed_splits, int target_chunks, int min_chunk,
    int long_chunk, long long q_stride_b, long long q_stride_h, float qk_scale_log2, int bits, int head_dim, int group_size,
    int k_block, int mode, int fixed_window, int pv_pack, int max_ctas_per_sm, int pdl, cudaStream_t stream) {
  using namespace foscar;
  if (gqa < 1 || gqa > kMaxGqa || merge_groups < 0 || batch < 0 || num_slots < 0 || fixed_splits < 0 || target_chunks < 1 || max_ctas_per_sm < 0 ||
      (pdl != 0 && pdl != 1) || (min_chunk != kMinChunk && min_chunk != kShortChunk) ||
      long_chunk < 0 || long_chunk > kMaxChunk || long_chunk % kChunkAlign != 0)
    return cudaErrorInvalidValue;
  if (batch == 0) return cudaSuccess;
  if (fixed_splits > 0 ? num_slots != batch * fixed_splits : num_slots < batch) return cudaErrorInvalidValue;
  if (fixed_window != 0 && (fixed_window != 1 || fixed_splits < 2 || seq_chunks == nullptr)) return cudaErrorInvalidValue;
  if (merge_groups != 0 && (mode != kFoldedBf16 || seq_chunks != nullptr)) return cudaErrorInvalidValue;  // merge_tree
  const bool paged = kv_indices != nullptr;
  int page_shift = 0;
  if (paged) {  // page sizes: powers of two
    while ((1 << page_shift) < page_size) ++page_shift;
    if (kv_indptr == nullptr || page_size < 1 || (1 << page_shift) != page_size || num_pages < 0)
      return cudaErrorInvalidValue;
  }
  int k_block_shift = 0, k_blocks = 0;
  if (k_block != 0) {  // channel-wise K: 32, 64 or 128 tokens per block; paged: whole blocks per page
    while ((1 << k_block_shift) < k_block) ++k_block_shift;
    if (k_block < 32 || k_block > 128 || (1 << k_block_shift) != k_block) return cudaErrorInvalidValue;
    if (paged && page_size % k_block != 0) return cudaErrorInvalidValue;
    k_blocks = paged ? page_size / k_block : (max_seq_len + k_block - 1) / k_block;
  }
  const int ng = head_dim / group_size;
  Params p{};  // by field name (Params in folded_decode_sm90.cuh documents each)
  p.q = static_cast<const __nv_bfloat16*>(q);
  p.k_codes = static_cast<const uint8_t*>(k_codes);
  p.v_codes = static_cast<const uint8_t*>(v_codes);
  p.k_scale = k_scale;
  p.k_offset = k_offset;
  p.v_scale = v_scale;
  p.v_offset = v_offset;
  p.lens = lens;
  p.kv_indptr = kv_indptr;
  p.kv_indices = kv_indices;
  p.page_shift = page_shift;
  p.k_block_shift = k_block_shift;
  p.k_blocks = k_blocks;
  p.o_part = o_part;
  p.lse_part = lse_part;
  p.out = static_cast<__nv_bfloat16*>(out);
  p.lse = lse;
  p.counters = counters;
  p.merge_groups = merge_groups;
  p.fuse_merge = seq_chunks == nullptr;  // launch() refuses it for an instance without the merge (fused_merge_in)
  p.seq_chunks = seq_chunks;
  p.fixed_window = fixed_window;
  p.batch = batch;
  p.num_kv_heads = num_kv_heads;
  p.gqa = gqa;
  p.max_seq_len = max_seq_len;
  p.num_slots = num_slots;
  p.fixed_splits = fixed_splits;
  p.target_chunks = target_chunks;
  p.min_chunk = min_chunk;
  p.long_chunk = long_chunk;
  p.num_indices = num_indices;
#if FOSCAR_PREWAIT_PREFETCH > 0 && FOSCAR_PREWAIT_PAGED
  p.num_pages = num_pages;
#endif
  // 16-byte scale copies need rows / pages of whole 16-byte chunks and 16-byte aligned bases (a view
  // with another storage offset takes the 4-byte path)
  bool bases16 = true;
  for (const float* t : {k_scale, k_offset, v_scale, v_offset}) bases16 &= reinterpret_cast<uintptr_t>(t) % 16 == 0;
  p.scales_aligned = bases16 && (paged ? (page_size * ng) % 4 == 0 : (max_seq_len * ng) % 4 == 0);
  p.q_stride_b = q_stride_b;
  p.q_stride_h = q_stride_h;
  p.qk_scale_log2 = qk_scale_log2;
  p.pv_pack = pv_pack != 0;
  p.max_ctas_per_sm = max_ctas_per_sm;
  p.pdl = pdl;
#if FOSCAR_TIMELINE
  p.timeline = g_timeline;
  p.timeline_records = g_timeline_records;
#endif
#define FOSCAR_DISPATCH(M, PG, CH)                 \
  if (mode == M && paged == PG && (k_block != 0) == CH) \
    return launch_mode<M, PG, CH>(p, bits, head_dim, group_size, batch, stream);
  FOSCAR_MODES(FOSCAR_DISPATCH)
#undef FOSCAR_DISPATCH
  return cudaErrorInvalidValue;
}
