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
extern "C" cudaError_t foscar_folded_decode_sm90(const FoscarDecodeArgs* args, cudaStream_t stream) {
  if (args == nullptr) return cudaErrorInvalidValue;
  const FoscarDecodeArgs& a = *args;  // by field name below
  using namespace foscar;
  if (a.gqa < 1 || a.gqa > kMaxGqa || a.merge_groups < 0 || a.batch < 0 || a.num_slots < 0 || a.fixed_splits < 0 ||
      a.target_chunks < 1 || a.max_ctas_per_sm < 0 ||
      (a.pdl != 0 && a.pdl != 1) || (a.min_chunk != kMinChunk && a.min_chunk != kShortChunk) ||
      a.long_chunk < 0 || a.long_chunk > kMaxChunk || a.long_chunk % kChunkAlign != 0 || a.short_tokens < 0)
    return cudaErrorInvalidValue;
  if (a.batch == 0) return cudaSuccess;
  if (a.fixed_splits > 0 ? a.num_slots != a.batch * a.fixed_splits : a.num_slots < a.batch) return cudaErrorInvalidValue;
  if (a.fixed_window != 0 && (a.fixed_window != 1 || a.fixed_splits < 2 || a.seq_chunks == nullptr))
    return cudaErrorInvalidValue;
  if (a.merge_groups != 0 && (a.mode != kFoldedBf16 || a.seq_chunks != nullptr)) return cudaErrorInvalidValue;  // merge_tree
  const bool paged = a.kv_indices != nullptr;
  int page_shift = 0;
  if (paged) {  // page sizes: powers of two
    while ((1 << page_shift) < a.page_size) ++page_shift;
    if (a.kv_indptr == nullptr || a.page_size < 1 || (1 << page_shift) != a.page_size || a.num_pages < 0)
      return cudaErrorInvalidValue;
  }
  int k_block_shift = 0, k_blocks = 0;
  if (a.k_block != 0) {  // channel-wise K: 32, 64 or 128 tokens per block; paged: whole blocks per page
    while ((1 << k_block_shift) < a.k_block) ++k_block_shift;
    if (a.k_block < 32 || a.k_block > 128 || (1 << k_block_shift) != a.k_block) return cudaErrorInvalidValue;
    if (paged && a.page_size % a.k_block != 0) return cudaErrorInvalidValue;
    k_blocks = paged ? a.page_size / a.k_block : (a.max_seq_len + a.k_block - 1) / a.k_block;
  }
  const int ng = a.head_dim / a.group_size;
  Params p{};  // by field name (Params in folded_decode_sm90.cuh documents each)
  p.q = static_cast<const __nv_bfloat16*>(a.q);
  p.k_codes = static_cast<const uint8_t*>(a.k_codes);
  p.v_codes = static_cast<const uint8_t*>(a.v_codes);
  p.k_scale = a.k_scale;
  p.k_offset = a.k_offset;
  p.v_scale = a.v_scale;
  p.v_offset = a.v_offset;
  p.lens = a.lens;
  p.kv_indptr = a.kv_indptr;
  p.kv_indices = a.kv_indices;
  p.page_shift = page_shift;
  p.k_block_shift = k_block_shift;
  p.k_blocks = k_blocks;
  p.o_part = a.o_part;
  p.lse_part = a.lse_part;
  p.out = static_cast<__nv_bfloat16*>(a.out);
  p.lse = a.lse;
  p.counters = a.counters;
  p.merge_groups = a.merge_groups;
  p.fuse_merge = a.seq_chunks == nullptr;  // launch() refuses it for an instance without the merge (fused_merge_in)
  p.seq_chunks = a.seq_chunks;
  p.fixed_window = a.fixed_window;
  p.batch = a.batch;
  p.num_kv_heads = a.num_kv_heads;
  p.gqa = a.gqa;
  p.max_seq_len = a.max_seq_len;
  p.num_slots = a.num_slots;
  p.fixed_splits = a.fixed_splits;
  p.target_chunks = a.target_chunks;
  p.min_chunk = a.min_chunk;
  p.long_chunk = a.long_chunk;
  p.short_tokens = a.short_tokens;
  p.num_indices = a.num_indices;
#if FOSCAR_WAVE_FIT
  p.wave_slots = 0;  // length-aware chunks: slots a KV head at one CTA an SM (find_work's wave fit)
  if (a.fixed_splits == 0 && a.num_kv_heads > 0) {
    int dev = 0, sms = 0;
    if (cudaGetDevice(&dev) == cudaSuccess &&
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) == cudaSuccess)
      p.wave_slots = sms / a.num_kv_heads;
  }
#endif
#if FOSCAR_PAGE_CHECK || (FOSCAR_PREWAIT_PREFETCH > 0 && FOSCAR_PREWAIT_PAGED)
  p.num_pages = a.num_pages;
#endif
  // 16-byte scale copies need rows / pages of whole 16-byte chunks and 16-byte aligned bases (a view
  // with another storage offset takes the 4-byte path)
  bool bases16 = true;
  for (const float* t : {a.k_scale, a.k_offset, a.v_scale, a.v_offset})
    bases16 &= reinterpret_cast<uintptr_t>(t) % 16 == 0;
  p.scales_aligned = bases16 && (paged ? (a.page_size * ng) % 4 == 0 : (a.max_seq_len * ng) % 4 == 0);
  p.q_stride_b = a.q_stride_b;
  p.q_stride_h = a.q_stride_h;
  p.qk_scale_log2 = a.qk_scale_log2;
  p.pv_pack = a.pv_pack != 0;
  p.max_ctas_per_sm = a.max_ctas_per_sm;
  p.pdl = a.pdl;
#if FOSCAR_TIMELINE
  p.timeline = g_timeline;
  p.timeline_records = g_timeline_records;
#endif
#define FOSCAR_DISPATCH(M, PG, CH)                            \
  if (a.mode == M && paged == PG && (a.k_block != 0) == CH) \
    return launch_mode<M, PG, CH>(p, a.bits, a.head_dim, a.group_size, a.batch, stream);
  FOSCAR_MODES(FOSCAR_DISPATCH)
#undef FOSCAR_DISPATCH
  return cudaErrorInvalidValue;
}
