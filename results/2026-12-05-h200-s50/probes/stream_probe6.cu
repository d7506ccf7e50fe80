// Session 50's copy of session 49's stream probe (bench/NOTES.md §93, §94) with one more copy path, MODE 4 (below).
// Session 49's text: how fast a one-wave grid of 128-thread CTAs reads its bytes with
// nothing else to do, or with a fixed spin per stage, when each stage is copied into shared memory by (0) every
// thread's 16-byte cp.async (the decode's way: 10 per warp for a 20 KiB stage of 4 warps) or (1) one thread's bulk
// copies (cp.async.bulk, the TMA engine's 1D form) completing on an mbarrier. Each CTA streams its own contiguous
// bytes in stages of `stage_bytes`, STAGES deep, reads every byte of a stage from shared memory (an xor), spins
// `spin` clock cycles, and writes its xor so that nothing is optimised away.
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <cstdint>

__device__ __forceinline__ uint32_t smem_u32(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }

template <int MODE, int STAGES>
__global__ void __launch_bounds__(128) stream_kernel(const unsigned char* __restrict__ src, long long per_cta_bytes,
                                                     int stage_bytes, int ncopy, long long spin, uint32_t* out) {
  // MODE 0 / 1: the CTA's stage filled by all 128 threads' cp.async / one thread's bulk copies, a __syncthreads a
  // stage. MODE 2 / 3: as the decode, each warp its own quarter of every stage (a 5 KiB sub-tile at 20 KiB) with its
  // own cp.async groups / its own mbarrier and one lane's bulk copies, and no CTA barrier in the loop.
  // MODE 4: MODE 2 with the decode's six streams (INT2 D=128 G=128): the buffer holds N tokens as six arrays, K codes
  // and V codes 32 B a token, then four scale arrays of 4 B a token; the CTA's tokens are a contiguous range of each,
  // and warp q's sub-tile of stage it is tokens (4 it + q) * 64 .. + 63 of that range, as the decode's warps take
  // theirs: 2 KiB of K codes, 2 KiB of V codes and four 256-byte runs, 10 16-byte cp.async a lane.
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ __align__(8) uint64_t bar[STAGES * 4];
  constexpr bool WARP = MODE >= 2, BULK = MODE == 1 || MODE == 3, SIX = MODE == 4;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int part = WARP ? stage_bytes / 4 : stage_bytes;      // bytes one pipeline moves a stage
  const int nthr = WARP ? 32 : 128, me = WARP ? lane : tid;   // its threads
  const int q = WARP ? warp : 0;                              // its pipeline
  const unsigned char* base = src + (long long)blockIdx.x * per_cta_bytes + (long long)q * part;
  const int n_iter = (int)(per_cta_bytes / stage_bytes);
  if (BULK) {
    if (tid == 0) {
      for (int s = 0; s < STAGES * 4; ++s) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(smem_u32(&bar[s])));
      asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    }
    __syncthreads();
  }
  auto slot = [&](int it) { return smem + (it % STAGES) * stage_bytes + q * part; };
  auto issue = [&](int it) {
    unsigned char* dst = slot(it);
    const unsigned char* s = base + (long long)it * stage_bytes;
    if (SIX) {  // stage_bytes = 256 tokens x 80 B (checked by the host)
      if (it < n_iter) {
        const long long n_tok = per_cta_bytes / 80 * gridDim.x;                      // N
        const long long tok0 = blockIdx.x * (per_cta_bytes / 80) + (4LL * it + q) * 64;  // the sub-tile's first token
        for (int c = me; c < 320; c += 32) {
          long long off;  // byte of the buffer
          if (c < 128) off = tok0 * 32 + 16 * c;                                  // K codes
          else if (c < 256) off = n_tok * 32 + tok0 * 32 + 16 * (c - 128);        // V codes
          else off = n_tok * 64 + ((c - 256) / 16) * n_tok * 4 + tok0 * 4 + 16 * ((c - 256) % 16);  // scales
          asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_u32(dst + 16 * c)), "l"(src + off)
                       : "memory");
        }
      }
      asm volatile("cp.async.commit_group;\n" ::: "memory");
    } else if (!BULK) {
      if (it < n_iter)
        for (int off = me * 16; off < part; off += nthr * 16)
          asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_u32(dst + off)), "l"(s + off)
                       : "memory");
      asm volatile("cp.async.commit_group;\n" ::: "memory");
    } else if (me == 0 && it < n_iter) {
      const uint32_t b = smem_u32(&bar[(it % STAGES) * 4 + q]);
      asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(b), "r"(part) : "memory");
      const int cb = part / ncopy;
      for (int c = 0; c < ncopy; ++c)
        asm volatile(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                smem_u32(dst + c * cb)),
            "l"(s + (long long)c * cb), "r"(cb), "r"(b)
            : "memory");
    }
  };
  uint32_t acc = 0;
  for (int it = 0; it < STAGES - 1; ++it) issue(it);
  for (int it = 0; it < n_iter; ++it) {
    if (!BULK) {
      asm volatile("cp.async.wait_group %0;\n" ::"n"(STAGES - 2) : "memory");
    } else {
      const uint32_t b = smem_u32(&bar[(it % STAGES) * 4 + q]);
      const uint32_t parity = (uint32_t)(it / STAGES) & 1u;
      asm volatile(
          "{\n .reg .pred P1;\n WAIT:\n mbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n @P1 bra DONE;\n"
          " bra WAIT;\n DONE:\n}\n" ::"r"(b),
          "r"(parity)
          : "memory");
    }
    if (WARP) __syncwarp(); else __syncthreads();  // the slot consumed last iteration may be refilled
    issue(it + STAGES - 1);
    const uint4* st = reinterpret_cast<const uint4*>(slot(it));
    for (int j = me; j < part / 16; j += nthr) {
      const uint4 v = st[j];
      acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (spin > 0) {
      const long long t0 = clock64();
      while (clock64() - t0 < spin) {
      }
    }
  }
  out[blockIdx.x * 128 + tid] = acc;
}

template <int MODE, int STAGES>
void launch_t(const torch::Tensor& src, long long per_cta_bytes, int stage_bytes, int ncopy, long long spin,
              torch::Tensor& out, int grid, cudaStream_t stream) {
  auto k = stream_kernel<MODE, STAGES>;
  const int smem = STAGES * stage_bytes;
  static bool set = false;  // per instantiation
  if (!set) {
    cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024);
    set = true;
  }
  k<<<grid, 128, smem, stream>>>(src.data_ptr<unsigned char>(), per_cta_bytes, stage_bytes,
                                                            ncopy, spin, (uint32_t*)out.data_ptr<int>());
}

void stream_read(torch::Tensor src, int64_t per_cta_bytes, int64_t stage_bytes, int64_t stages, int64_t mode,
                 int64_t ncopy, int64_t spin, torch::Tensor out, int64_t grid,
                 int64_t stream) {
  TORCH_CHECK(src.is_cuda() && src.scalar_type() == torch::kUInt8, "src: a CUDA uint8 tensor");
  TORCH_CHECK(per_cta_bytes % stage_bytes == 0 && stage_bytes % (64 * ncopy) == 0, "bad sizes");
  TORCH_CHECK(src.numel() >= per_cta_bytes * grid, "src too small");
  TORCH_CHECK(out.numel() >= grid * 128, "out too small");
#define L(M, S) \
  if (mode == M && stages == S) return launch_t<M, S>(src, per_cta_bytes, (int)stage_bytes, (int)ncopy, spin, out, (int)grid, \
                                (cudaStream_t)stream);
  TORCH_CHECK(mode != 4 || stage_bytes == 20480, "mode 4: stages of 256 tokens x 80 B");
  L(0, 2) L(0, 3) L(0, 4) L(1, 2) L(1, 3) L(1, 4) L(2, 2) L(2, 3) L(2, 4) L(3, 2) L(3, 3) L(3, 4) L(4, 2) L(4, 3) L(4, 4)
#undef L
  TORCH_CHECK(false, "mode 0-4, stages 2/3/4");
}
