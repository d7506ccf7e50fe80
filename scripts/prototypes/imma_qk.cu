// Torch binding of the issue-12 lever-4 prototype (imma_qk.cuh): one entry point, the instance picked by
// (path, bits, group, write). Built by scripts/prototypes/imma_qk.py with torch.utils.cpp_extension.load.
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

#include "imma_qk.cuh"

namespace {

using imma_proto::Args;

template <int PATH, int BITS, int GROUP>
cudaError_t dispatch_write(bool write, const Args& a, int grid, int smem, cudaStream_t s) {
  return write ? imma_proto::launch<PATH, BITS, GROUP, true>(a, grid, smem, s)
               : imma_proto::launch<PATH, BITS, GROUP, false>(a, grid, smem, s);
}
template <int PATH>
cudaError_t dispatch(int bits, int group, bool write, const Args& a, int grid, int smem, cudaStream_t s) {
  if (bits == 2 && group == 128) return dispatch_write<PATH, 2, 128>(write, a, grid, smem, s);
  if (bits == 2 && group == 32) return dispatch_write<PATH, 2, 32>(write, a, grid, smem, s);
  if (bits == 4 && group == 128) return dispatch_write<PATH, 4, 128>(write, a, grid, smem, s);
  if (bits == 4 && group == 32) return dispatch_write<PATH, 4, 32>(write, a, grid, smem, s);
  TORCH_CHECK(false, "imma_qk: bits must be 2 or 4 and group 32 or 128, got bits=", bits, " group=", group);
}

// path 0 = folded BF16, 1 = IMMA. Shapes and meanings in imma_qk.cuh (struct Args); q1 is unused by path 0.
void launch(int64_t path, int64_t bits, int64_t group, bool write, torch::Tensor codes, torch::Tensor ks,
            torch::Tensor kz, torch::Tensor q0, torch::Tensor q1, torch::Tensor f0, torch::Tensor f1,
            torch::Tensor out, int64_t chunks, int64_t iters, int64_t grid, int64_t smem) {
  for (auto* t : {&codes, &ks, &kz, &q0, &q1, &f0, &f1, &out})
    TORCH_CHECK(t->is_cuda() && t->is_contiguous(), "imma_qk: every tensor must be a contiguous CUDA tensor");
  TORCH_CHECK(codes.scalar_type() == torch::kUInt8, "imma_qk: codes must be uint8");
  TORCH_CHECK(ks.scalar_type() == torch::kFloat && kz.scalar_type() == torch::kFloat && f0.scalar_type() == torch::kFloat &&
                  f1.scalar_type() == torch::kFloat && out.scalar_type() == torch::kFloat,
              "imma_qk: ks, kz, f0, f1 and out must be float32");
  TORCH_CHECK(chunks > 0 && iters > 0 && grid > 0, "imma_qk: chunks, iters and grid must be positive");
  const Args a{codes.data_ptr<uint8_t>(), ks.data_ptr<float>(), kz.data_ptr<float>(), q0.data_ptr(), q1.data_ptr(),
               f0.data_ptr<float>(), f1.data_ptr<float>(), out.data_ptr<float>(), (int)chunks, (int)iters};
  const cudaStream_t s = c10::cuda::getCurrentCUDAStream();
  const cudaError_t e = path == 0 ? dispatch<0>(bits, group, write, a, grid, smem, s)
                                  : dispatch<1>(bits, group, write, a, grid, smem, s);
  TORCH_CHECK(e == cudaSuccess, "imma_qk: launch failed: ", cudaGetErrorString(e));
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("launch", &launch, "launch one prototype QK kernel instance"); }
