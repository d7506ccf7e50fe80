"""Session 38 probe (issue 12): how fast can a kernel with the decode's grid and copy pattern stream, with no compute?

A CUDA kernel (load_inline) with the decode kernel's shape: grid (num_kv_heads, batch x chunks), 4 warps a CTA, each
warp taking every 4th 64-token sub-tile of its CTA's chunk, copying it with 16-byte cp.async.cg into its own two
shared-memory stages (one sub-tile in flight while one is "used"), the regions of a sub-tile as the cache lays them out:
one contiguous stream per (sequence, KV head) and region. Variants by bytes per token of each region:
  int2   [32, 32, 4, 4, 4, 4]  FOSCAR's INT2 G=128: K codes, V codes, k_scale, k_offset, v_scale, v_offset
  int2s  [32, 32, 16]          the four scale arrays interleaved into one stream
  int2c  [80]                  one stream per (sequence, head)
  int4   [64, 64, 4, 4, 4, 4]  INT4 G=128
`delay` cycles of clock64 spinning after each sub-tile's wait stand for the loop's compute (latency, not issue).
Each point: 3 rotating buffer sets (past the 60 MB L2), CUDA events around 20 back-to-back launches, median of 5.
Also the bench's HBM ceiling (bench.hbm.measure_hbm_tbps)."""
import sys, json, statistics
import torch
from torch.utils.cpp_extension import load_inline

SRC = r'''
#include <torch/extension.h>
#include <cuda_runtime.h>
#include <c10/cuda/CUDAStream.h>
struct Regions { const uint8_t* base[6]; int bpt[6]; int n; int tile_bytes; };
__device__ __forceinline__ void cp16(unsigned s, const void* g) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" :: "r"(s), "l"(g));
}
__global__ void __launch_bounds__(128, 1) stream_kernel(Regions R, int H, int T, int chunks, int delay, float* out) {
  extern __shared__ __align__(16) uint8_t smem[];
  const int head = blockIdx.x, slot = blockIdx.y, seq = slot / chunks, c = slot % chunks;
  const int ctoks = T / chunks, t0 = c * ctoks, ntiles = ctoks / 64;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  uint8_t* wsm = smem + warp * 2 * R.tile_bytes;
  const size_t stream = (size_t)seq * H + head;
  auto issue = [&](int it) {
    const int tile = warp + it * 4;
    if (tile < ntiles) {
      const unsigned dst = (unsigned)__cvta_generic_to_shared(wsm + (it & 1) * R.tile_bytes);
      int off = 0;
      for (int r = 0; r < R.n; ++r) {
        const int bytes = 64 * R.bpt[r];
        const uint8_t* src = R.base[r] + (stream * T + t0 + (size_t)tile * 64) * R.bpt[r];
        for (int i = lane * 16; i < bytes; i += 512) cp16(dst + off + i, src + i);
        off += bytes;
      }
    }
    asm volatile("cp.async.commit_group;\n" ::);
  };
  const int iters = (ntiles - warp + 3) / 4;
  float acc = 0.f;
  issue(0);
  for (int it = 0; it < iters; ++it) {
    issue(it + 1);
    asm volatile("cp.async.wait_group 1;\n" ::);
    __syncwarp();
    acc += reinterpret_cast<const float*>(wsm + (it & 1) * R.tile_bytes)[lane];
    if (delay) { const long long s = clock64(); while (clock64() - s < delay) {} }
    __syncwarp();
  }
  if (acc == 12345.f) out[0] = acc;
}
void run(std::vector<torch::Tensor> bufs, std::vector<int64_t> bpt, int64_t H, int64_t T, int64_t batch, int64_t chunks,
         int64_t delay, torch::Tensor out) {
  Regions R{}; R.n = (int)bufs.size(); int tb = 0;
  for (int r = 0; r < R.n; ++r) { R.base[r] = (const uint8_t*)bufs[r].data_ptr(); R.bpt[r] = (int)bpt[r]; tb += 64 * (int)bpt[r]; }
  R.tile_bytes = tb;
  const int smem = 4 * 2 * tb;
  cudaFuncSetAttribute(stream_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  stream_kernel<<<dim3(H, batch * chunks), 128, smem, c10::cuda::getCurrentCUDAStream()>>>(R, (int)H, (int)T, (int)chunks, (int)delay, out.data_ptr<float>());
}
'''
CPP = "void run(std::vector<torch::Tensor> bufs, std::vector<int64_t> bpt, int64_t H, int64_t T, int64_t batch, int64_t chunks, int64_t delay, torch::Tensor out);"
mod = load_inline("stream_probe", cpp_sources=CPP, cuda_sources=SRC, functions=["run"],
                  extra_cuda_cflags=["-O3", "-gencode=arch=compute_90a,code=sm_90a"], verbose=False)
LAYOUTS = {"int2": [32, 32, 4, 4, 4, 4], "int2s": [32, 32, 16], "int2c": [80], "int4": [64, 64, 4, 4, 4, 4]}
POINTS = [(8, 32768, 4), (32, 8192, 1), (8, 131072, 4), (64, 32768, 1)]  # batch, context, chunks (the plans')
H = 8
dev = torch.device("cuda")
from bench.hbm import measure_hbm_tbps
ceiling = measure_hbm_tbps(dev)
print(f"ceiling {ceiling:.3f} TB/s", flush=True)
out = torch.zeros(1, device=dev)
rows = []
delays = [int(a) for a in sys.argv[1:]] or [0, 1250, 2500]
for batch, T, chunks in POINTS:
    for name, bpt in LAYOUTS.items():
        sets = [[torch.empty(batch * H * T * b, dtype=torch.uint8, device=dev).random_(0, 255) for b in bpt] for _ in range(3)]
        nbytes = batch * H * T * sum(bpt)
        for delay in delays:
            for s in sets:
                mod.run(s, bpt, H, T, batch, chunks, delay, out)
            torch.cuda.synchronize()
            meds = []
            for _ in range(5):
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                for i in range(21):
                    mod.run(sets[i % 3], bpt, H, T, batch, chunks, delay, out)
                b.record(); b.synchronize()
                meds.append(a.elapsed_time(b) * 1e3 / 21)
            us = statistics.median(meds)
            tbps = nbytes / us / 1e6
            rows.append(dict(batch=batch, context=T, chunks=chunks, layout=name, delay=delay, us=us, tbps=tbps, frac=tbps / ceiling))
            print(f"{batch:3d} x {T:6d} chunks {chunks} {name:6s} delay {delay:5d}: {us:8.2f} us {tbps:.3f} TB/s {tbps / ceiling:.3f}", flush=True)
        del sets
        torch.cuda.empty_cache()
json.dump(dict(ceiling=ceiling, rows=rows), open("/tmp/o/stream_probe.json", "w"), indent=1)
