// Session 53's clock probe (bench/NOTES.md §97): does clock64 over %globaltimer read the SM clock, and does the clock
// drop under a decode? One thread a CTA spins on clock64 for a set number of cycles; it stamps %globaltimer before
// and after, in the order the timeline build does (the ns interval encloses the cycle interval).
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>

__device__ __forceinline__ unsigned long long gtimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// out[5 * cta]: globaltimer at entry, at exit, clock64 at entry, at exit, %smid
__global__ void spin_kernel(long long cycles, unsigned long long* out) {
  if (threadIdx.x != 0) return;
  unsigned long long t0 = gtimer();
  long long c0 = clock64(), c1;
  do {
    c1 = clock64();
  } while (c1 - c0 < cycles);
  unsigned long long t1 = gtimer();
  unsigned smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  unsigned long long* r = out + 5 * blockIdx.x;
  r[0] = t0;
  r[1] = t1;
  r[2] = (unsigned long long)c0;
  r[3] = (unsigned long long)c1;
  r[4] = smid;
}

// one thread: the first n changes of %globaltimer, as (ns step, clock64 cycles since the previous change)
__global__ void timer_steps_kernel(unsigned long long* out, int n) {
  unsigned long long prev = gtimer();
  long long cprev = clock64();
  for (int i = 0; i < n;) {
    unsigned long long t = gtimer();
    if (t != prev) {
      long long c = clock64();
      out[2 * i] = t - prev;
      out[2 * i + 1] = (unsigned long long)(c - cprev);
      prev = t;
      cprev = c;
      ++i;
    }
  }
}

void spin(int64_t cycles, int64_t grid, torch::Tensor out) {
  TORCH_CHECK(out.is_cuda() && out.dtype() == torch::kInt64 && out.numel() >= 5 * grid, "out: int64 CUDA, 5 x grid");
  spin_kernel<<<(unsigned)grid, 32, 0, c10::cuda::getCurrentCUDAStream()>>>(
      (long long)cycles, reinterpret_cast<unsigned long long*>(out.data_ptr<int64_t>()));
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

void timer_steps(torch::Tensor out, int64_t n) {
  TORCH_CHECK(out.is_cuda() && out.dtype() == torch::kInt64 && out.numel() >= 2 * n, "out: int64 CUDA, 2 x n");
  timer_steps_kernel<<<1, 1, 0, c10::cuda::getCurrentCUDAStream()>>>(
      reinterpret_cast<unsigned long long*>(out.data_ptr<int64_t>()), (int)n);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}
