// FOSCAR folded INT2/INT4 split-KV decode attention for sm_90 (mma.sync, bf16 operands).
//
// One CTA = one (sequence, KV head, split); 4 warps, each streaming its own 64-token
// sub-tiles (tokens [start + (4 * it + warp) * 64, +64)) through a private two-stage
// cp.async pipeline in shared memory, with its own online softmax; the 4 warps are
// merged through shared memory at the end. Output per split: normalized fp32 partial
// output and base-2 LSE, merged across splits by foscar/kernels/merge_triton.py.
//
// Tensor-core shapes (mma.sync.m16n8k16, bf16 in, fp32 accumulate):
//   QK:  S^T[token, head] = K[token, :] . Q[head, :]   M = 16 tokens, N = 8 query heads
//   PV:  O^T[chan, head]  = V^T[chan, :] . P'^T[:, head] M = 16 channels, K = 16 tokens
// so GQA <= 8 heads pad to N = 8 (Triton's 16-row minimum would pad to 16).
//
// Operands from packed codes (plane-split packing, foscar/quant.py): a 32-bit word
// holds 4 bytes = 4 x (8 / BITS) codes. For plane p the BF16 operand 1 + code/128 of
// two bytes is one lop3: ((w >> (BITS * p)) & 0x00030003) | 0x3F803F80 yields bytes 0
// and 2, and the same on (w >> (BITS * p + 8)) bytes 1 and 3. The k (QK) and m (PV)
// orderings are chosen so that these pairs land exactly where the mma fragments want
// them, and the query / output channel orders follow (no data moves between lanes).
// QK words come from ldmatrix (token rows); PV words from ldmatrix.trans (token
// pairs per register). P^T goes from the QK accumulator layout to the PV B-fragment
// layout with movmatrix.trans.
//
// Folding (DESIGN §3), token-wise groups, a = 1/128, c = 1:
//   S_t  = sum_g acc_g * (128 s_tg) + sum(Q_g) * (z_tg - 128 s_tg)     (times sm_scale log2 e)
//   O_h  = sum_t P'_th v_t - sum_t P'_th + sum_t P_th z_t,   P' = bf16(P * 128 s_t)
// with the PV bias cancelled per 64-token tile in a fresh accumulator, using the
// BF16-rounded P' the mma consumed (DESIGN §9, rules 1 and 2).
//
// This file includes no torch header: CI compiles it with nvcc alone.

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

namespace foscar {

// Tuning knobs, overridable with -D for experiments (bench/NOTES.md records what was tried).
#ifndef FOSCAR_STAGES
#define FOSCAR_STAGES 2
#endif
#ifdef FOSCAR_MIN_BLOCKS  // cap registers so that this many CTAs fit on an SM
#define FOSCAR_LAUNCH_BOUNDS __launch_bounds__(kWarps * 32, FOSCAR_MIN_BLOCKS)
#else  // (a min-blocks of 1 is not the same: ptxas then used 167 registers instead of 128)
#define FOSCAR_LAUNCH_BOUNDS __launch_bounds__(kWarps * 32)
#endif

constexpr int kWarps = 4;
constexpr int kTileTokens = 64;  // tokens per warp per iteration (4 m16 tiles)
constexpr int kStages = FOSCAR_STAGES;

template <int BITS, int HEAD_DIM, int GROUP>
struct Fmt {
  static constexpr int P = 8 / BITS;               // planes (codes per byte)
  static constexpr int RB = HEAD_DIM * BITS / 8;   // packed bytes per token row
  static constexpr int NCH = RB / 16;              // 16-byte chunks per row
  static constexpr int NG = HEAD_DIM / GROUP;      // groups per row
  static constexpr int KSTEPS = NCH * P;           // k16 steps of QK = m16 blocks of PV
  static constexpr uint32_t MASK = BITS == 2 ? 0x00030003u : 0x000F000Fu;

  // shared memory of one warp-stage: K codes, V codes, then ks, kz, vs, vz
  static constexpr int CODE_BYTES = kTileTokens * RB;
  static constexpr int SCALE_BYTES = kTileTokens * NG * 4;
  static constexpr int STAGE_BYTES = 2 * CODE_BYTES + 4 * SCALE_BYTES;
  static constexpr int SMEM_BYTES = kStages * kWarps * STAGE_BYTES;
  // swizzle of 16-byte chunks so an 8-row ldmatrix hits 8 distinct bank groups
  static constexpr int ROWS_PER_SWZ = NCH >= 8 ? 1 : 8 / NCH;
  static_assert(HEAD_DIM % GROUP == 0 && GROUP % 16 == 0, "group must be a multiple of 16 dividing head_dim");
  static_assert(RB % 16 == 0, "packed row must be a multiple of 16 bytes");
};

__device__ __forceinline__ int swz(int token, int chunk, int nch, int rows_per_swz) {
  return chunk ^ ((token / rows_per_swz) & (nch - 1));
}

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(smem)), "l"(gmem), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async4(void* smem, const void* gmem, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_u32(smem)), "l"(gmem), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x2(uint32_t (&r)[2], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x2_trans(uint32_t (&r)[2], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1]) : "r"(addr));
}
__device__ __forceinline__ uint32_t movmatrix_trans(uint32_t x) {
  uint32_t y;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(y) : "r"(x));
  return y;
}

__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// BF16 pair 1 + code/128 from two bytes of a word: (x & mask) | 0x3F803F80 in one lop3.
template <uint32_t MASK>
__device__ __forceinline__ uint32_t operand_pair(uint32_t x) {
  uint32_t r;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;\n" : "=r"(r) : "r"(x), "n"(MASK), "n"(0x3F803F80));
  return r;
}

// Per-value reconstruction (the ablation baseline, DESIGN §4): convert each code, then
// s * code + z, then round the pair to BF16. Codes at bits 0.. and 16.. of x.
template <uint32_t MASK>
__device__ __forceinline__ uint32_t dequant_pair(uint32_t x, float s_lo, float z_lo, float s_hi, float z_hi) {
  constexpr uint32_t ONE = MASK & 0xFFFFu;
  const float lo = fmaf(s_lo, __uint2float_rn(x & ONE), z_lo);
  const float hi = fmaf(s_hi, __uint2float_rn((x >> 16) & ONE), z_hi);
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
__device__ __forceinline__ float bf16_lo(uint32_t x) { return __uint_as_float(x << 16); }
__device__ __forceinline__ float bf16_hi(uint32_t x) { return __uint_as_float(x & 0xFFFF0000u); }

__device__ __forceinline__ float warp_max_over_rows(float v) {  // over the 8 lanes sharing lane % 4
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 4));
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 8));
  v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 16));
  return v;
}
__device__ __forceinline__ float warp_sum_over_rows(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 4);
  v += __shfl_xor_sync(0xffffffffu, v, 8);
  v += __shfl_xor_sync(0xffffffffu, v, 16);
  return v;
}

struct Params {
  const __nv_bfloat16* q;  // [batch, num_qo_heads, HEAD_DIM]
  const uint8_t* k_codes;  // [batch, num_kv_heads, max_seq_len, RB]
  const uint8_t* v_codes;
  const float* k_scale;  // [batch, num_kv_heads, max_seq_len, NG]
  const float* k_offset;
  const float* v_scale;
  const float* v_offset;
  const int* seq_lens;  // [batch]
  float* o_part;        // [batch, num_qo_heads, num_splits, HEAD_DIM]
  float* lse_part;      // [batch, num_qo_heads, num_splits], base 2
  int num_kv_heads, gqa, max_seq_len, num_splits, tokens_per_split;
  int scales_aligned;  // (max_seq_len * NG) % 4 == 0: each (sequence, head) row of scales starts 16-byte aligned
  long long q_stride_b, q_stride_h;
  float qk_scale_log2;  // sm_scale * log2(e)
};

// PER_VALUE = false: the folded kernel. PER_VALUE = true: the same kernel (tiling,
// pipeline, split-KV, softmax, merge) with only the operand construction swapped for
// per-value reconstruction: K and V operands are bf16(s * code + z), the query and the
// probabilities enter the mma unscaled, and there is no offset/bias correction.
template <int BITS, int HEAD_DIM, int GROUP, bool PER_VALUE>
__global__ void FOSCAR_LAUNCH_BOUNDS folded_decode_kernel(const Params p) {
  using F = Fmt<BITS, HEAD_DIM, GROUP>;
  constexpr int RB = F::RB, NCH = F::NCH, NG = F::NG, P = F::P, KSTEPS = F::KSTEPS;
  extern __shared__ __align__(128) uint8_t smem[];

  const int bh = blockIdx.x;
  const int split = blockIdx.y;
  const int b = bh / p.num_kv_heads, hkv = bh % p.num_kv_heads;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, tig = lane % 4;
  const int seq_len = p.seq_lens[b];
  const int start = split * p.tokens_per_split;
  const int end = min(start + p.tokens_per_split, seq_len);

  const long long row0 = (long long)bh * p.max_seq_len;  // first token of this (sequence, KV head)
  const uint8_t* kc = p.k_codes + row0 * RB;
  const uint8_t* vc = p.v_codes + row0 * RB;
  const float* ks_g = p.k_scale + row0 * NG;
  const float* kz_g = p.k_offset + row0 * NG;
  const float* vs_g = p.v_scale + row0 * NG;
  const float* vz_g = p.v_offset + row0 * NG;

  // ---- query fragments (B of QK), head n = g; k order of step (c, pl): bytes 4tig + {0, 2} | {1, 3}
  uint32_t qf[KSTEPS][2];
  {
    const __nv_bfloat16* qh = p.q + b * p.q_stride_b + (long long)(hkv * p.gqa + g) * p.q_stride_h;
    const bool live = g < p.gqa;
#pragma unroll
    for (int c = 0; c < NCH; ++c)
#pragma unroll
      for (int pl = 0; pl < P; ++pl) {
        const int ch = pl * RB + 16 * c + 4 * tig;
        __nv_bfloat16 x0 = live ? qh[ch + 0] : __float2bfloat16(0.f);
        __nv_bfloat16 x1 = live ? qh[ch + 1] : __float2bfloat16(0.f);
        __nv_bfloat16 x2 = live ? qh[ch + 2] : __float2bfloat16(0.f);
        __nv_bfloat16 x3 = live ? qh[ch + 3] : __float2bfloat16(0.f);
        qf[c * P + pl][0] = (uint32_t)__bfloat16_as_ushort(x0) | ((uint32_t)__bfloat16_as_ushort(x2) << 16);
        qf[c * P + pl][1] = (uint32_t)__bfloat16_as_ushort(x1) | ((uint32_t)__bfloat16_as_ushort(x3) << 16);
      }
  }
  // sums of the BF16 query per group, for the heads of this lane's accumulator columns (2tig, 2tig+1)
  float qsum[NG][2];
#pragma unroll
  for (int gr = 0; gr < NG; ++gr) {
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < KSTEPS; ++k) {
      const int c = k / P, pl = k % P;
      if ((pl * RB + 16 * c) / GROUP == gr)
        s += bf16_lo(qf[k][0]) + bf16_hi(qf[k][0]) + bf16_lo(qf[k][1]) + bf16_hi(qf[k][1]);
    }
    s += __shfl_xor_sync(0xffffffffu, s, 1);
    s += __shfl_xor_sync(0xffffffffu, s, 2);  // lanes of row g hold sum(Q_gr) of head g
    qsum[gr][0] = __shfl_sync(0xffffffffu, s, (2 * tig) * 4);
    qsum[gr][1] = __shfl_sync(0xffffffffu, s, (2 * tig + 1) * 4);
  }

  float o_acc[KSTEPS][4];
#pragma unroll
  for (int k = 0; k < KSTEPS; ++k)
#pragma unroll
    for (int i = 0; i < 4; ++i) o_acc[k][i] = 0.f;
  float m_run[2] = {-INFINITY, -INFINITY};
  float l_part[2] = {0.f, 0.f};

  uint8_t* wsm = smem + warp * kStages * F::STAGE_BYTES;
  const int first = start + warp * kTileTokens;
  const int stride = kWarps * kTileTokens;
  const int iters = first < end ? (end - first + stride - 1) / stride : 0;

  auto issue = [&](int it) {  // cp.async one 64-token sub-tile into stage it % kStages (zero-fill past end)
    uint8_t* st = wsm + (it % kStages) * F::STAGE_BYTES;
    const int t0 = first + it * stride;
    constexpr int CODE_CHUNKS = kTileTokens * NCH;
#pragma unroll
    for (int i = lane; i < CODE_CHUNKS; i += 32) {
      const int tok = i / NCH, c = i % NCH;
      const int gt = t0 + tok;
      const int bytes = gt < end ? 16 : 0;
      const long long src = gt < end ? (long long)gt * RB + 16 * c : 0;
      const int dst = tok * RB + 16 * swz(tok, c, NCH, F::ROWS_PER_SWZ);
      cp_async16(st + dst, kc + src, bytes);
      cp_async16(st + F::CODE_BYTES + dst, vc + src, bytes);
    }
    const int valid = (end - t0) * NG;  // floats of this sub-tile before the end
    if (p.scales_aligned) {  // 16-byte copies: 4 floats each
      constexpr int SCALE_CHUNKS = F::SCALE_BYTES / 16;
      for (int i = lane; i < SCALE_CHUNKS; i += 32) {
        const int f0 = i * 4;
        const int left = valid - f0;
        const int bytes = left >= 4 ? 16 : (left > 0 ? left * 4 : 0);
        const long long src = bytes ? (long long)t0 * NG + f0 : 0;
        uint8_t* base = st + 2 * F::CODE_BYTES + f0 * 4;
        cp_async16(base, ks_g + src, bytes);
        cp_async16(base + F::SCALE_BYTES, kz_g + src, bytes);
        cp_async16(base + 2 * F::SCALE_BYTES, vs_g + src, bytes);
        cp_async16(base + 3 * F::SCALE_BYTES, vz_g + src, bytes);
      }
    } else {  // (sequence, head) rows not 16-byte aligned (max_seq_len * NG % 4 != 0): 4-byte copies
      for (int f0 = lane; f0 < kTileTokens * NG; f0 += 32) {
        const int bytes = f0 < valid ? 4 : 0;
        const long long src = bytes ? (long long)t0 * NG + f0 : 0;
        uint8_t* base = st + 2 * F::CODE_BYTES + f0 * 4;
        cp_async4(base, ks_g + src, bytes);
        cp_async4(base + F::SCALE_BYTES, kz_g + src, bytes);
        cp_async4(base + 2 * F::SCALE_BYTES, vs_g + src, bytes);
        cp_async4(base + 3 * F::SCALE_BYTES, vz_g + src, bytes);
      }
    }
  };

#pragma unroll
  for (int s0 = 0; s0 < kStages - 1; ++s0) {  // prologue: the first kStages - 1 sub-tiles in flight
    if (s0 < iters) issue(s0);
    cp_async_commit();
  }

  for (int it = 0; it < iters; ++it) {
    if (it + kStages - 1 < iters) issue(it + kStages - 1);
    cp_async_commit();
    cp_async_wait<kStages - 1>();  // sub-tile `it` has landed
    __syncwarp();
    const uint8_t* st = wsm + (it % kStages) * F::STAGE_BYTES;
    const uint8_t* ksm = st;
    const uint8_t* vsm = st + F::CODE_BYTES;
    const float* ks = reinterpret_cast<const float*>(st + 2 * F::CODE_BYTES);
    const float* kz = ks + kTileTokens * NG;
    const float* vs = kz + kTileTokens * NG;
    const float* vz = vs + kTileTokens * NG;
    const int t0 = first + it * stride;

    // ---- QK: 4 m16 token tiles, folded per group into log2-domain scores s[mt][i]
    float s[4][4];
#pragma unroll
    for (int mt = 0; mt < 4; ++mt) {
      float acc[NG][4];
#pragma unroll
      for (int gr = 0; gr < NG; ++gr)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[gr][i] = 0.f;
#pragma unroll
      for (int c = 0; c < NCH; ++c) {
        // words: token g / g+8 of this tile, chunk c: bytes 16c + 4tig .. +3
        uint32_t w[2];
        {
          const int tok = mt * 16 + (lane & 8) + (lane & 7);  // lanes 0-7: rows 0-7, 8-15: rows 8-15
          ldmatrix_x2(w, smem_u32(ksm + tok * RB + 16 * swz(tok, c, NCH, F::ROWS_PER_SWZ)));
        }
#pragma unroll
        for (int pl = 0; pl < P; ++pl) {
          const int sh = BITS * pl;
          const int k = c * P + pl;
          const int gr = (pl * RB + 16 * c) / GROUP;
          uint32_t a[4];
          if constexpr (PER_VALUE) {
            const int t_lo = mt * 16 + g, t_hi = t_lo + 8;
            const float s0 = ks[t_lo * NG + gr], z0 = kz[t_lo * NG + gr];
            const float s1 = ks[t_hi * NG + gr], z1 = kz[t_hi * NG + gr];
            a[0] = dequant_pair<F::MASK>(w[0] >> sh, s0, z0, s0, z0);
            a[1] = dequant_pair<F::MASK>(w[1] >> sh, s1, z1, s1, z1);
            a[2] = dequant_pair<F::MASK>(w[0] >> (sh + 8), s0, z0, s0, z0);
            a[3] = dequant_pair<F::MASK>(w[1] >> (sh + 8), s1, z1, s1, z1);
          } else {
            a[0] = operand_pair<F::MASK>(w[0] >> sh);        // row g,   k 2tig..: bytes 0, 2
            a[1] = operand_pair<F::MASK>(w[1] >> sh);        // row g+8
            a[2] = operand_pair<F::MASK>(w[0] >> (sh + 8));  // row g,   k 2tig+8..: bytes 1, 3
            a[3] = operand_pair<F::MASK>(w[1] >> (sh + 8));
          }
          mma_bf16(acc[gr], a, qf[k][0], qf[k][1]);
        }
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) s[mt][i] = 0.f;
#pragma unroll
      for (int half = 0; half < 2; ++half) {  // tokens g (half 0) and g+8 (half 1)
        const int tl = mt * 16 + g + 8 * half;
        const bool valid = t0 + tl < end;
#pragma unroll
        for (int gr = 0; gr < NG; ++gr) {
          if constexpr (PER_VALUE) {  // the mma already saw s * code + z
            s[mt][2 * half + 0] += acc[gr][2 * half + 0] * p.qk_scale_log2;
            s[mt][2 * half + 1] += acc[gr][2 * half + 1] * p.qk_scale_log2;
          } else {
            const float sc = ks[tl * NG + gr], zo = kz[tl * NG + gr];
            const float a_t = sc * (128.f * p.qk_scale_log2);
            const float b_t = (zo - 128.f * sc) * p.qk_scale_log2;
            s[mt][2 * half + 0] += acc[gr][2 * half + 0] * a_t + qsum[gr][0] * b_t;
            s[mt][2 * half + 1] += acc[gr][2 * half + 1] * a_t + qsum[gr][1] * b_t;
          }
        }
        if (!valid) s[mt][2 * half + 0] = s[mt][2 * half + 1] = -INFINITY;
      }
    }

    // ---- online softmax over the 64 tokens, per head (columns 2tig, 2tig+1)
    float alpha[2], m_use[2];
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      float mx = -INFINITY;
#pragma unroll
      for (int mt = 0; mt < 4; ++mt) mx = fmaxf(mx, fmaxf(s[mt][j], s[mt][j + 2]));
      mx = warp_max_over_rows(mx);
      const float m_new = fmaxf(m_run[j], mx);
      m_use[j] = m_new == -INFINITY ? 0.f : m_new;
      alpha[j] = fast_exp2(m_run[j] - m_use[j]);
      m_run[j] = m_new;
    }
    float pr[4][4];
#pragma unroll
    for (int mt = 0; mt < 4; ++mt)
#pragma unroll
      for (int i = 0; i < 4; ++i) pr[mt][i] = fast_exp2(s[mt][i] - m_use[i & 1]);
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      float sum = 0.f;
#pragma unroll
      for (int mt = 0; mt < 4; ++mt) sum += pr[mt][j] + pr[mt][j + 2];
      l_part[j] = l_part[j] * alpha[j] + sum;
    }

    // ---- P' = bf16(P * 128 s_v) per group as PV B fragments; correction = sum P z - sum P'
    uint32_t pb[NG][4][2];
    float corr[NG][2];
#pragma unroll
    for (int gr = 0; gr < NG; ++gr) {
      corr[gr][0] = corr[gr][1] = 0.f;
#pragma unroll
      for (int mt = 0; mt < 4; ++mt) {
        uint32_t x[2];
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int tl = mt * 16 + g + 8 * half;
          const float p0 = pr[mt][2 * half], p1 = pr[mt][2 * half + 1];
          if constexpr (PER_VALUE) {  // P itself is the operand
            x[half] = pack_bf16x2(p0, p1);
          } else {
            const float sv = 128.f * vs[tl * NG + gr], zv = vz[tl * NG + gr];
            x[half] = pack_bf16x2(p0 * sv, p1 * sv);
            corr[gr][0] += p0 * zv - bf16_lo(x[half]);
            corr[gr][1] += p1 * zv - bf16_hi(x[half]);
          }
        }
        pb[gr][mt][0] = movmatrix_trans(x[0]);  // k = tokens 2tig, 2tig+1 of the tile, n = head g
        pb[gr][mt][1] = movmatrix_trans(x[1]);  // tokens 2tig+8, 2tig+9
      }
      if constexpr (!PER_VALUE) {
        corr[gr][0] = warp_sum_over_rows(corr[gr][0]);
        corr[gr][1] = warp_sum_over_rows(corr[gr][1]);
      }
    }

    // ---- PV into a fresh accumulator per m16 channel block (chunk c, plane pl), then fold in
#pragma unroll
    for (int c = 0; c < NCH; ++c) {
      uint32_t vw[4][2];  // per token tile: tokens (2tig, 2tig+1) and (2tig+8, 2tig+9), bytes 16c+2g, +1
#pragma unroll
      for (int mt = 0; mt < 4; ++mt) {
        const int tok = mt * 16 + (lane & 8) + (lane & 7);
        ldmatrix_x2_trans(vw[mt], smem_u32(vsm + tok * RB + 16 * swz(tok, c, NCH, F::ROWS_PER_SWZ)));
      }
#pragma unroll
      for (int pl = 0; pl < P; ++pl) {
        const int gr = (pl * RB + 16 * c) / GROUP;
        const int sh = BITS * pl;
        float tmp[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
        for (int mt = 0; mt < 4; ++mt) {
          uint32_t a[4];
          if constexpr (PER_VALUE) {  // tokens 2tig, 2tig+1 (a[0], a[1]) and +8, +9 (a[2], a[3])
            const int t0 = mt * 16 + 2 * tig;
            const float s0 = vs[t0 * NG + gr], z0 = vz[t0 * NG + gr];
            const float s1 = vs[(t0 + 1) * NG + gr], z1 = vz[(t0 + 1) * NG + gr];
            const float s8 = vs[(t0 + 8) * NG + gr], z8 = vz[(t0 + 8) * NG + gr];
            const float s9 = vs[(t0 + 9) * NG + gr], z9 = vz[(t0 + 9) * NG + gr];
            a[0] = dequant_pair<F::MASK>(vw[mt][0] >> sh, s0, z0, s1, z1);
            a[1] = dequant_pair<F::MASK>(vw[mt][0] >> (sh + 8), s0, z0, s1, z1);
            a[2] = dequant_pair<F::MASK>(vw[mt][1] >> sh, s8, z8, s9, z9);
            a[3] = dequant_pair<F::MASK>(vw[mt][1] >> (sh + 8), s8, z8, s9, z9);
          } else {
            a[0] = operand_pair<F::MASK>(vw[mt][0] >> sh);        // row g:   channel byte 16c+2g,   tokens 2tig, +1
            a[1] = operand_pair<F::MASK>(vw[mt][0] >> (sh + 8));  // row g+8: channel byte 16c+2g+1
            a[2] = operand_pair<F::MASK>(vw[mt][1] >> sh);        // row g,   tokens 2tig+8, +9
            a[3] = operand_pair<F::MASK>(vw[mt][1] >> (sh + 8));
          }
          mma_bf16(tmp, a, pb[gr][mt][0], pb[gr][mt][1]);
        }
        const int k = c * P + pl;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          if constexpr (PER_VALUE)
            o_acc[k][i] = o_acc[k][i] * alpha[i & 1] + tmp[i];
          else
            o_acc[k][i] = o_acc[k][i] * alpha[i & 1] + (tmp[i] + corr[gr][i & 1]);
        }
      }
    }
    __syncwarp();  // every lane is done with this stage before it is refilled
  }

  // ---- merge the 4 warps through shared memory, write this split's partial
  cp_async_commit();
  asm volatile("cp.async.wait_all;\n" ::);
  __syncthreads();
  float* sm_o = reinterpret_cast<float*>(smem);           // [kWarps][8][HEAD_DIM]
  float* sm_m = sm_o + kWarps * 8 * HEAD_DIM;             // [kWarps][8]
  float* sm_l = sm_m + kWarps * 8;                        // [kWarps][8]
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const float l = warp_sum_over_rows(l_part[j]);
    if (g == 0) {
      sm_m[warp * 8 + 2 * tig + j] = m_run[j];
      sm_l[warp * 8 + 2 * tig + j] = l;
    }
  }
#pragma unroll
  for (int k = 0; k < KSTEPS; ++k) {
    const int c = k / P, pl = k % P;
    const int ch = pl * RB + 16 * c + 2 * g;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int head = 2 * tig + (i & 1);
      sm_o[(warp * 8 + head) * HEAD_DIM + ch + (i >> 1)] = o_acc[k][i];
    }
  }
  __syncthreads();
  for (int idx = threadIdx.x; idx < p.gqa * HEAD_DIM; idx += kWarps * 32) {
    const int head = idx / HEAD_DIM, ch = idx % HEAD_DIM;
    float mx = -INFINITY;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) mx = fmaxf(mx, sm_m[w * 8 + head]);
    const float m_safe = mx == -INFINITY ? 0.f : mx;
    float num = 0.f, den = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const float e = fast_exp2(sm_m[w * 8 + head] - m_safe);  // 0 for a warp that saw no token
      num += e * sm_o[(w * 8 + head) * HEAD_DIM + ch];
      den += e * sm_l[w * 8 + head];
    }
    const long long row = (long long)b * p.num_kv_heads * p.gqa + hkv * p.gqa + head;  // (batch, qo head)
    const long long o = (row * p.num_splits + split);
    p.o_part[o * HEAD_DIM + ch] = den > 0.f ? num / den : 0.f;
    if (ch == 0) p.lse_part[o] = den > 0.f ? mx + log2f(den) : -INFINITY;
  }
}

template <int BITS, int HEAD_DIM, int GROUP, bool PER_VALUE>
cudaError_t launch(const Params& p, int batch, cudaStream_t stream) {
  using F = Fmt<BITS, HEAD_DIM, GROUP>;
  constexpr int merge_bytes = (kWarps * 8 * HEAD_DIM + 2 * kWarps * 8) * 4;
  constexpr int smem = F::SMEM_BYTES > merge_bytes ? F::SMEM_BYTES : merge_bytes;
  auto kernel = folded_decode_kernel<BITS, HEAD_DIM, GROUP, PER_VALUE>;
  cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (err != cudaSuccess) return err;
  dim3 grid(batch * p.num_kv_heads, p.num_splits);
  kernel<<<grid, kWarps * 32, smem, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace foscar

// C entry point for the torch binding (and anything else): dispatch on the format and
// on per_value (0: folded, 1: per-value reconstruction). Returns cudaErrorInvalidValue
// for an unsupported (bits, head_dim, group_size, gqa).
extern "C" cudaError_t foscar_folded_decode_sm90(
    const void* q, const void* k_codes, const void* v_codes, const float* k_scale, const float* k_offset,
    const float* v_scale, const float* v_offset, const int* seq_lens, float* o_part, float* lse_part, int batch,
    int num_kv_heads, int gqa, int max_seq_len, int num_splits, int tokens_per_split, long long q_stride_b,
    long long q_stride_h, float qk_scale_log2, int bits, int head_dim, int group_size, int per_value,
    cudaStream_t stream) {
  using namespace foscar;
  if (gqa < 1 || gqa > 8) return cudaErrorInvalidValue;
  Params p{static_cast<const __nv_bfloat16*>(q), static_cast<const uint8_t*>(k_codes),
           static_cast<const uint8_t*>(v_codes), k_scale, k_offset, v_scale, v_offset, seq_lens, o_part, lse_part,
           num_kv_heads, gqa, max_seq_len, num_splits, tokens_per_split,
           (max_seq_len * (head_dim / group_size)) % 4 == 0, q_stride_b, q_stride_h, qk_scale_log2};
#define FOSCAR_CASE(B, D, G)                                       \
  if (bits == B && head_dim == D && group_size == G)               \
    return per_value ? launch<B, D, G, true>(p, batch, stream) : launch<B, D, G, false>(p, batch, stream);
  FOSCAR_CASE(2, 128, 128) FOSCAR_CASE(2, 128, 64) FOSCAR_CASE(2, 128, 32)
  FOSCAR_CASE(4, 128, 128) FOSCAR_CASE(4, 128, 64) FOSCAR_CASE(4, 128, 32)
  FOSCAR_CASE(2, 64, 64) FOSCAR_CASE(2, 64, 32) FOSCAR_CASE(4, 64, 64) FOSCAR_CASE(4, 64, 32)
  FOSCAR_CASE(2, 256, 128) FOSCAR_CASE(2, 256, 64) FOSCAR_CASE(2, 256, 32)
  FOSCAR_CASE(4, 256, 128) FOSCAR_CASE(4, 256, 64) FOSCAR_CASE(4, 256, 32)
#undef FOSCAR_CASE
  return cudaErrorInvalidValue;
}
