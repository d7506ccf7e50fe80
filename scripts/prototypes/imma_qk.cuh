// Prototype for issue 12, lever 4: the QK scores of one decode step on BF16 tensor cores (today's folded
// path, rewritten minimally) and on integer tensor cores (mma.sync m16n8k32 u8 x s8 -> s32). Not part of
// the production kernel (foscar/kernels/csrc/folded_decode_sm90.cuh); scripts/prototypes/imma_qk.py
// builds, checks and times it, and bench/NOTES.md ("Integer tensor cores: a prototype") explains it.
//
// Tile layout as in the production kernel: head_dim 128, token-wise groups of G channels (G = 32 or
// 128), plane-split packed INT2 / INT4 codes (foscar/quant.py pack_codes), 64-token sub-tiles per warp
// in shared memory with the production swizzle of 16-byte chunks, GQA heads as the mma N dimension
// (N = 8 columns, 4 live heads here). Each CTA holds NT = 4 sub-tiles of codes and scales/offsets in
// shared memory; warp w reads sub-tile (w + it) % NT at iteration it, so the loop moves no HBM data.
//
// (a) qk_bf16_kernel: operand 1 + code 2^E / 128 from one lop3 per pair of codes (INT2 planes 0-2 in
//     place, E = 2p, their query times 2^-E), m16n8k16 bf16, the accumulator starting at -sum(Q'_g),
//     fold S = 128 s acc + z sum(Q_g) (DESIGN §3-§5, NOTES §12).
// (b) qk_imma_kernel: the codes as u8 lanes, one lop3 (and one shift unless the plane sits in place) per
//     4 codes; the query per (head, group) as a signed 16-bit fixed point qi = hi * 256 + lo, hi and lo
//     in s8; two m16n8k32 IMMAs per k-step (hi, lo), exact s32 sums; fold in fp32:
//     S = s (qscale * (256 acc_hi + acc_lo)) + z sum(Q_g). Plane p in place (codes * 2^(BITS p), still
//     a u8) where every group lies in one plane (G <= bytes per row): its factor 2^-(BITS p) goes into
//     that group's qscale, so no shift at all.
//
// Fragment layouts (PTX ISA, mma.m16n8k32 .u8/.s8): A a0 = row g, k 4tig..+3; a1 = row g+8; a2 = row g,
// k 16 + 4tig..+3; a3 = row g+8. B b0 = k 4tig..+3, column g; b1 = k 16 + 4tig..+3. C c0, c1 = row g,
// columns 2tig, 2tig+1; c2, c3 = row g+8. ldmatrix.x4 of (rows 0-15, chunk c | c+1) gives the words
// (row g c, row g+8 c, row g c+1, row g+8 c+1) = the 4 bytes 4tig..+3 of each, exactly a0..a3, so the
// k-step (chunk pair cp, plane p) covers channels p * RB + 32 cp + [0, 32): contiguous, one group.

#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "imma_qk_args.h"

namespace imma_proto {


template <int BITS, int GROUP>
struct Fmt {
  static constexpr int G = GROUP;
  static constexpr int B = BITS;
  static constexpr int P = 8 / BITS;                  // planes (codes per byte)
  static constexpr int RB = kHeadDim * BITS / 8;      // packed bytes per token row
  static constexpr int NCH = RB / 16;                 // 16-byte chunks per row
  static constexpr int NG = kHeadDim / GROUP;         // groups per row
  static constexpr int KSTEPS = NCH * P;              // k16 steps (BF16)
  static constexpr int KSTEPS32 = NCH / 2 * P;        // k32 steps (IMMA)
  static constexpr uint32_t MASK = BITS == 2 ? 0x00030003u : 0x000F000Fu;   // two codes (BF16 pair)
  static constexpr uint32_t MASK4 = BITS == 2 ? 0x03030303u : 0x0F0F0F0Fu;  // four codes (u8 lanes)
  static constexpr int ROWS_PER_SWZ = NCH >= 8 ? 1 : 8 / NCH;
  static constexpr int CODE_BYTES = kTileTokens * RB;
  static constexpr int SCALES = kTileTokens * NG;     // floats of ks (and of kz) per sub-tile
  static constexpr int SMEM_BYTES = kTiles * (CODE_BYTES + 2 * SCALES * 4);
  // BF16: plane pl in place where its bits sit in the BF16 mantissa (bits 0..6): E = BITS pl
  __host__ __device__ static constexpr int pexp(int pl) { return BITS * pl + BITS <= 7 ? BITS * pl : 0; }
  // IMMA: every group inside one plane, so a per-group factor 2^-(BITS p) can absorb the in-place plane
  static constexpr bool IMMA_IN_PLACE = GROUP <= RB;
  static_assert(GROUP == 32 || GROUP == 64 || GROUP == 128, "group 32, 64 or 128");
};

__device__ __forceinline__ int swz(int token, int chunk, int nch, int rows_per_swz) {
  return chunk ^ ((token / rows_per_swz) & (nch - 1));
}
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void ldmatrix_x2(uint32_t (&r)[2], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
// (x & MASK) | 0x3F803F80 in one lop3: two codes at bits e.. of each half -> BF16 1 + code 2^e / 128
template <uint32_t MASK>
__device__ __forceinline__ uint32_t operand_pair_at(uint32_t x, int e) {
  uint32_t r;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;\n" : "=r"(r) : "r"(x), "r"(MASK << e), "n"(0x3F803F80));
  return r;
}
// d = a . b + c, bf16 in, fp32 accumulate
__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1,
                                         const float (&c)[4]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%11,%12,%13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
}
// d = a . b + c, A u8 (codes), B s8 (query part), exact s32 accumulate
__device__ __forceinline__ void mma_u8s8(int (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1,
                                         const int (&c)[4]) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%11,%12,%13};\n"
      : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]));
}

// shared memory: the chunk's codes (swizzled as the production kernel stores them), ks, kz
template <class F>
__device__ __forceinline__ void load_chunk(const Args& a, int chunk, uint8_t* codes, float* ks, float* kz) {
  const int tokens = kTiles * kTileTokens;
  const uint8_t* gc = a.codes + (size_t)chunk * tokens * F::RB;
  for (int i = threadIdx.x; i < tokens * F::NCH; i += blockDim.x) {
    const int tok = i / F::NCH, c = i % F::NCH, tl = tok % kTileTokens, tile = tok / kTileTokens;
    *reinterpret_cast<uint4*>(codes + tile * F::CODE_BYTES + tl * F::RB + 16 * swz(tl, c, F::NCH, F::ROWS_PER_SWZ)) =
        *reinterpret_cast<const uint4*>(gc + (size_t)tok * F::RB + 16 * c);
  }
  for (int i = threadIdx.x; i < tokens * F::NG; i += blockDim.x) {
    ks[i] = a.ks[(size_t)chunk * tokens * F::NG + i];
    kz[i] = a.kz[(size_t)chunk * tokens * F::NG + i];
  }
  __syncthreads();
}

// Is step (c, pl) of width W channels (chunk c of W / 16 chunks) the first of its group in the (c, pl) order?
template <class F, int W>
__host__ __device__ constexpr bool first_step_of_group(int c, int pl) {
  const int gr = (pl * F::RB + W * c) / F::G;
  for (int c2 = 0; c2 <= c; ++c2)
    for (int p2 = 0; p2 < F::P; ++p2) {
      if (c2 == c && p2 == pl) return true;
      if ((p2 * F::RB + W * c2) / F::G == gr) return false;
    }
  return true;
}

// IMMA, plane in place: group gr lies in plane (gr * GROUP) / RB, whose codes arrive times 2^(BITS p)
template <class F>
__device__ __forceinline__ constexpr float inplace_factor(int gr) {
  return F::IMMA_IN_PLACE ? 1.f / (1 << (F::B * ((gr * F::G) / F::RB))) : 1.f;
}

// (a) folded BF16
template <int BITS, int GROUP, bool WRITE>
__global__ void __launch_bounds__(kWarps * 32) qk_bf16_kernel(Args a) {
  using F = Fmt<BITS, GROUP>;
  constexpr int RB = F::RB, NCH = F::NCH, NG = F::NG, P = F::P;
  extern __shared__ uint4 smem_raw[];
  uint8_t* codes = reinterpret_cast<uint8_t*>(smem_raw);
  float* ks_all = reinterpret_cast<float*>(codes + kTiles * F::CODE_BYTES);
  float* kz_all = ks_all + kTiles * F::SCALES;
  const int chunk = blockIdx.x % a.chunks;
  load_chunk<F>(a, chunk, codes, ks_all, kz_all);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, tig = lane & 3;

  // B fragments, column g: k order of step (c, pl) = bytes 4tig + {0, 2} | {1, 3} of chunk c
  uint32_t qf[F::KSTEPS][2];
  const uint16_t* qb = reinterpret_cast<const uint16_t*>(a.q0) + g * kHeadDim;
#pragma unroll
  for (int c = 0; c < NCH; ++c)
#pragma unroll
    for (int pl = 0; pl < P; ++pl) {
      const int ch = pl * RB + 16 * c + 4 * tig;
      qf[c * P + pl][0] = (uint32_t)qb[ch + 0] | ((uint32_t)qb[ch + 2] << 16);
      qf[c * P + pl][1] = (uint32_t)qb[ch + 1] | ((uint32_t)qb[ch + 3] << 16);
    }
  float nqs[NG][4], qsum[NG][2];  // accumulator start (columns 2tig, 2tig+1 in rows g and g+8), sum(Q_g)
#pragma unroll
  for (int gr = 0; gr < NG; ++gr)
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      nqs[gr][j] = nqs[gr][2 + j] = a.f0[(2 * tig + j) * NG + gr];
      qsum[gr][j] = a.f1[(2 * tig + j) * NG + gr];
    }

  float sink = 0.f;
#pragma unroll 1
  for (int it = 0; it < a.iters; ++it) {
    const int tile = (warp + it) % kTiles;
    const uint8_t* ksm = codes + tile * F::CODE_BYTES;
    const float* ks = ks_all + tile * F::SCALES;
    const float* kz = kz_all + tile * F::SCALES;
#pragma unroll
    for (int mt = 0; mt < kTileTokens / 16; ++mt) {
      float acc[NG][4];
#pragma unroll
      for (int c = 0; c < NCH; ++c) {
        uint32_t w[2];  // words of tokens g, g+8: bytes 16c + 4tig .. +3
        const int tok = mt * 16 + (lane & 15);
        ldmatrix_x2(w, smem_u32(ksm + tok * RB + 16 * swz(tok, c, NCH, F::ROWS_PER_SWZ)));
#pragma unroll
        for (int pl = 0; pl < P; ++pl) {
          const int sh = BITS * pl, e = F::pexp(pl), k = c * P + pl, gr = (pl * RB + 16 * c) / GROUP;
          uint32_t op[4];
          op[0] = operand_pair_at<F::MASK>(w[0] >> (sh - e), e);      // row g,   k 2tig..: bytes 0, 2
          op[1] = operand_pair_at<F::MASK>(w[1] >> (sh - e), e);      // row g+8
          op[2] = operand_pair_at<F::MASK>(w[0] >> (sh - e + 8), e);  // row g,   k 2tig+8..: bytes 1, 3
          op[3] = operand_pair_at<F::MASK>(w[1] >> (sh - e + 8), e);
          if (first_step_of_group<F, 16>(c, pl))
            mma_bf16(acc[gr], op, qf[k][0], qf[k][1], nqs[gr]);
          else
            mma_bf16(acc[gr], op, qf[k][0], qf[k][1], acc[gr]);
        }
      }
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int tl = mt * 16 + g + 8 * half;
        float s[2] = {0.f, 0.f};
#pragma unroll
        for (int gr = 0; gr < NG; ++gr) {  // acc = sum(code Q') / 128 (it started at -sum(Q'))
          const float a_t = ks[tl * NG + gr] * 128.f, zo = kz[tl * NG + gr];
#pragma unroll
          for (int j = 0; j < 2; ++j) s[j] = fmaf(acc[gr][2 * half + j], a_t, fmaf(qsum[gr][j], zo, s[j]));
        }
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          if constexpr (WRITE)
            a.out[((size_t)(chunk * kTiles + tile) * kTileTokens + tl) * kCols + 2 * tig + j] = s[j];
          else
            sink += s[j];
        }
      }
    }
  }
  if constexpr (!WRITE) a.out[blockIdx.x * blockDim.x + threadIdx.x] = sink;
}

// (b) integer tensor cores
// HEAD_SCALE (path 2, "imma-h"): one qscale per head for all groups (f0 holds it in every group, f1 holds
// sum(Q_g) / qscale), so the fold per group is two FFMAs like BF16's: S' = s dot + z sum(Q_g) / qscale,
// and S = qscale S' is left to the consumer (the production softmax would take exp2(qscale (S' - m'))
// in the FFMA that replaces its FADD (S - m); here only the WRITE path multiplies).
template <int BITS, int GROUP, bool WRITE, bool HEAD_SCALE>
__global__ void __launch_bounds__(kWarps * 32) qk_imma_kernel(Args a) {
  using F = Fmt<BITS, GROUP>;
  constexpr int RB = F::RB, NCH = F::NCH, NG = F::NG, P = F::P;
  extern __shared__ uint4 smem_raw[];
  uint8_t* codes = reinterpret_cast<uint8_t*>(smem_raw);
  float* ks_all = reinterpret_cast<float*>(codes + kTiles * F::CODE_BYTES);
  float* kz_all = ks_all + kTiles * F::SCALES;
  const int chunk = blockIdx.x % a.chunks;
  load_chunk<F>(a, chunk, codes, ks_all, kz_all);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, tig = lane & 3;

  // B fragments, column g, step (cp, pl): channels pl * RB + 32 cp + 4tig + {0..3} | + 16
  uint32_t qh[F::KSTEPS32][2], ql[F::KSTEPS32][2];
  const uint8_t* hi = reinterpret_cast<const uint8_t*>(a.q0) + g * kHeadDim;
  const uint8_t* lo = reinterpret_cast<const uint8_t*>(a.q1) + g * kHeadDim;
#pragma unroll
  for (int cp = 0; cp < NCH / 2; ++cp)
#pragma unroll
    for (int pl = 0; pl < P; ++pl) {
      const int ch = pl * RB + 32 * cp + 4 * tig, k = cp * P + pl;
      qh[k][0] = *reinterpret_cast<const uint32_t*>(hi + ch);
      qh[k][1] = *reinterpret_cast<const uint32_t*>(hi + ch + 16);
      ql[k][0] = *reinterpret_cast<const uint32_t*>(lo + ch);
      ql[k][1] = *reinterpret_cast<const uint32_t*>(lo + ch + 16);
    }
  float qsc[NG][2], qsum[NG][2];
#pragma unroll
  for (int gr = 0; gr < NG; ++gr) {
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      qsc[gr][j] = a.f0[(2 * tig + j) * NG + gr] * (HEAD_SCALE ? 1.f : inplace_factor<F>(gr));
      qsum[gr][j] = a.f1[(2 * tig + j) * NG + gr];
    }
  }
  const int zero[4] = {0, 0, 0, 0};

  float sink = 0.f;
#pragma unroll 1
  for (int it = 0; it < a.iters; ++it) {
    const int tile = (warp + it) % kTiles;
    const uint8_t* ksm = codes + tile * F::CODE_BYTES;
    const float* ks = ks_all + tile * F::SCALES;
    const float* kz = kz_all + tile * F::SCALES;
#pragma unroll
    for (int mt = 0; mt < kTileTokens / 16; ++mt) {
      int ah[NG][4], al[NG][4];
#pragma unroll
      for (int cp = 0; cp < NCH / 2; ++cp) {
        uint32_t w[4];  // (row g, chunk 2cp), (row g+8, 2cp), (row g, 2cp+1), (row g+8, 2cp+1)
        const int tok = mt * 16 + (lane & 15), c = 2 * cp + (lane >> 4);
        ldmatrix_x4(w, smem_u32(ksm + tok * RB + 16 * swz(tok, c, NCH, F::ROWS_PER_SWZ)));
#pragma unroll
        for (int pl = 0; pl < P; ++pl) {
          const int k = cp * P + pl, gr = (pl * RB + 32 * cp) / GROUP;
          uint32_t op[4];
#pragma unroll
          for (int i = 0; i < 4; ++i)
            op[i] = F::IMMA_IN_PLACE ? w[i] & (F::MASK4 << (BITS * pl)) : (w[i] >> (BITS * pl)) & F::MASK4;
          if (first_step_of_group<F, 32>(cp, pl)) {
            mma_u8s8(ah[gr], op, qh[k][0], qh[k][1], zero);
            mma_u8s8(al[gr], op, ql[k][0], ql[k][1], zero);
          } else {
            mma_u8s8(ah[gr], op, qh[k][0], qh[k][1], ah[gr]);
            mma_u8s8(al[gr], op, ql[k][0], ql[k][1], al[gr]);
          }
        }
      }
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int tl = mt * 16 + g + 8 * half;
        float s[2] = {0.f, 0.f};
#pragma unroll
        for (int gr = 0; gr < NG; ++gr) {  // 256 hi + lo = sum(code qi), exact; Q ~ qscale qi
          const float st = ks[tl * NG + gr] * (HEAD_SCALE ? inplace_factor<F>(gr) : 1.f), zo = kz[tl * NG + gr];
#pragma unroll
          for (int j = 0; j < 2; ++j) {
            const float dot = (float)(ah[gr][2 * half + j] * 256 + al[gr][2 * half + j]);
            s[j] = fmaf(HEAD_SCALE ? dot : dot * qsc[gr][j], st, fmaf(qsum[gr][j], zo, s[j]));
          }
        }
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          if constexpr (WRITE)
            a.out[((size_t)(chunk * kTiles + tile) * kTileTokens + tl) * kCols + 2 * tig + j] =
                HEAD_SCALE ? s[j] * qsc[0][j] : s[j];
          else
            sink += s[j];
        }
      }
    }
  }
  if constexpr (!WRITE) a.out[blockIdx.x * blockDim.x + threadIdx.x] = sink;
}

// Host launcher: PATH 0 = BF16, 1 = IMMA (qscale per head and group), 2 = IMMA (qscale per head). smem_bytes >= Fmt::SMEM_BYTES (more caps CTAs per SM).
template <int PATH, int BITS, int GROUP, bool WRITE>
cudaError_t launch(const Args& a, int grid, int smem_bytes, cudaStream_t stream) {
  auto kern = PATH == 0 ? qk_bf16_kernel<BITS, GROUP, WRITE>
              : PATH == 1 ? qk_imma_kernel<BITS, GROUP, WRITE, false> : qk_imma_kernel<BITS, GROUP, WRITE, true>;
  if (smem_bytes < Fmt<BITS, GROUP>::SMEM_BYTES) return cudaErrorInvalidValue;
  cudaError_t e = cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes);
  if (e != cudaSuccess) return e;
  kern<<<grid, kWarps * 32, smem_bytes, stream>>>(a);
  return cudaGetLastError();
}

}  // namespace imma_proto
