// Torch binding of the issue-12 lever-4 prototype (imma_qk.cuh, instances in imma_qk_kernels.cu).
// Built by scripts/prototypes/imma_qk.py with torch.utils.cpp_extension.load; no CUDA header here.
#include <torch/extension.h>

#include "imma_qk_args.h"

namespace {

// path 0 = folded BF16, 1 = IMMA, 2 = IMMA with one query scale per head; shapes and meanings in imma_qk_args.h (struct Args; q1 unused by
// path 0); stream: torch.cuda.current_stream().cuda_stream.
void launch(int64_t path, int64_t bits, int64_t group, bool write, torch::Tensor codes, torch::Tensor ks,
            torch::Tensor kz, torch::Tensor q0, torch::Tensor q1, torch::Tensor f0, torch::Tensor f1,
            torch::Tensor out, int64_t chunks, int64_t iters, int64_t grid, int64_t smem, int64_t stream) {
  for (auto* t : {&codes, &ks, &kz, &q0, &q1, &f0, &f1, &out})
    TORCH_CHECK(t->is_cuda() && t->is_contiguous(), "imma_qk: every tensor must be a contiguous CUDA tensor");
  TORCH_CHECK(codes.scalar_type() == torch::kUInt8, "imma_qk: codes must be uint8, got ", codes.scalar_type());
  for (auto* t : {&ks, &kz, &f0, &f1, &out})
    TORCH_CHECK(t->scalar_type() == torch::kFloat, "imma_qk: ks, kz, f0, f1 and out must be float32");
  TORCH_CHECK(chunks > 0 && iters > 0 && grid > 0, "imma_qk: chunks, iters and grid must be positive");
  TORCH_CHECK(path >= 0 && path <= 2, "imma_qk: path must be 0 (bf16), 1 (imma) or 2 (imma-h), got ", path);
  const imma_proto::Args a{codes.data_ptr<uint8_t>(), ks.data_ptr<float>(), kz.data_ptr<float>(), q0.data_ptr(),
                           q1.data_ptr(), f0.data_ptr<float>(), f1.data_ptr<float>(), out.data_ptr<float>(),
                           (int)chunks, (int)iters};
  const int e = imma_proto::launch_any((int)path, (int)bits, (int)group, write, a, (int)grid, (int)smem,
                                       reinterpret_cast<void*>(stream));
  TORCH_CHECK(e == 0, "imma_qk: launch failed with cudaError_t ", e,
              " (bits must be 2 or 4 and group 32 or 128; smem at least the format's need)");
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("launch", &launch, "launch one prototype QK kernel instance"); }
