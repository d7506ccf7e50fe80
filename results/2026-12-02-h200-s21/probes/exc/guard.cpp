// Does a failed TORCH_CHECK raise, or crash, in a torch extension built like foscar's binding?
// GUARD_FIRST: a c10::cuda::CUDAGuard is alive when the check fails (as at binding.cpp's fixed_window check).
#include <torch/extension.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
void f(torch::Tensor q, std::optional<torch::Tensor> o, int64_t x) {
  TORCH_CHECK(q.is_cuda(), "q must be CUDA");
#ifdef GUARD_FIRST
  const c10::cuda::CUDAGuard guard(q.device());
#endif
  TORCH_CHECK(x == 0, "x: expected 0, got ", x);
}
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("f", &f, "f"); }
