// Launch arguments of the issue-12 lever-4 prototype (imma_qk.cuh), plain C++: shared by the kernels
// (imma_qk_kernels.cu, nvcc) and the torch binding (imma_qk.cpp, the host compiler).
#pragma once

#include <stdint.h>

namespace imma_proto {

constexpr int kHeadDim = 128, kTileTokens = 64, kWarps = 4, kTiles = 4, kCols = 8;

// Pointers of one launch. Codes [chunks * kTiles * 64, RB] uint8 (plane-split rows), ks / kz
// [same tokens, NG] fp32. Query operands, [kCols, 128] row-major per column (head):
//   BF16: q0 = bf16 query (plane pl's channels times 2^-E), f0 = -sum(Q'_g), f1 = sum(Q_g)   ([kCols, NG])
//   IMMA: q0 = s8 hi, q1 = s8 lo, f0 = qscale (Q ~ qscale * (256 hi + lo)), f1 = sum(Q_g)    ([kCols, NG])
//   IMMA, one scale per head (path 2): f0 = that scale in every group, f1 = sum(Q_g) / qscale
// out: WRITE: scores [tokens, kCols] fp32; else one float per thread (a checksum that keeps the work live).
struct Args {
  const uint8_t* codes;
  const float* ks;
  const float* kz;
  const void* q0;
  const void* q1;
  const float* f0;
  const float* f1;
  float* out;
  int chunks;  // data chunks of kTiles sub-tiles; CTA b uses chunk b % chunks
  int iters;   // sub-tiles per warp
};

// Launch one instance: path 0 = folded BF16, 1 = IMMA, 2 = IMMA with one query scale per head; bits 2 or 4; group 32 or 128; write: scores to
// a.out (else a checksum per thread); grid CTAs of 128 threads with smem_bytes of dynamic shared memory
// (at least the format's need; more caps CTAs per SM); stream: a cudaStream_t. Returns a cudaError_t
// (cudaErrorInvalidValue for an unknown instance or too little shared memory).
int launch_any(int path, int bits, int group, bool write, const Args& a, int grid, int smem_bytes, void* stream);

}  // namespace imma_proto
