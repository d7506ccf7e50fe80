// FOSCAR folded INT2/INT4 split-KV decode attention for sm_90: the C entry point.
// The kernel is in folded_decode_sm90.cuh; each operand mode and cache kind is compiled in its own
// translation unit (decode_mode_*.cu).
#include "folded_decode_sm90.h"
#include "folded_decode_sm90.cuh"

// The C entry point (the torch binding's, and anything else's): contract in folded_decode_sm90.h.
extern "C" cudaError_t foscar_folded_decode_sm90(
    const void* q, const void* k_codes, const void* v_codes, const float* k_scale, const float* k_offset,
    const float* v_scale, const float* v_offset, const int* lens, const int* kv_indptr, const int* kv_indices,
    int page_size, float* o_part, float* lse_part, int batch,
    int num_kv_heads, int gqa, int max_seq_len, int num_splits, int tokens_per_split, long long q_stride_b,
    long long q_stride_h, float qk_scale_log2, int bits, int head_dim, int group_size, int k_block, int mode,
    cudaStream_t stream) {
  using namespace foscar;
  if (gqa < 1 || gqa > 8) return cudaErrorInvalidValue;
  const bool paged = kv_indices != nullptr;
  int page_shift = 0;
  if (paged) {  // page sizes: powers of two
    while ((1 << page_shift) < page_size) ++page_shift;
    if (kv_indptr == nullptr || page_size < 1 || (1 << page_shift) != page_size) return cudaErrorInvalidValue;
  }
  int k_block_shift = 0, k_blocks = 0;
  if (k_block != 0) {  // channel-wise K: 32, 64 or 128 tokens per block; paged: whole blocks per page
    while ((1 << k_block_shift) < k_block) ++k_block_shift;
    if (k_block < 32 || k_block > 128 || (1 << k_block_shift) != k_block) return cudaErrorInvalidValue;
    if (paged && page_size % k_block != 0) return cudaErrorInvalidValue;
    k_blocks = paged ? page_size / k_block : (max_seq_len + k_block - 1) / k_block;
  }
  const int ng = head_dim / group_size;
  Params p{static_cast<const __nv_bfloat16*>(q), static_cast<const uint8_t*>(k_codes),
           static_cast<const uint8_t*>(v_codes), k_scale, k_offset, v_scale, v_offset, lens, kv_indptr, kv_indices,
           page_shift, k_block_shift, k_blocks, o_part, lse_part, num_kv_heads, gqa, max_seq_len, num_splits, tokens_per_split,
           paged ? (page_size * ng) % 4 == 0 : (max_seq_len * ng) % 4 == 0, q_stride_b, q_stride_h, qk_scale_log2};
#define FOSCAR_DISPATCH(M, PG, CH)                 \
  if (mode == M && paged == PG && (k_block != 0) == CH) \
    return launch_mode<M, PG, CH>(p, bits, head_dim, group_size, batch, stream);
  FOSCAR_MODES(FOSCAR_DISPATCH)
#undef FOSCAR_DISPATCH
  return cudaErrorInvalidValue;
}
