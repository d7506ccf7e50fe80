// The instances of the issue-12 lever-4 prototype (imma_qk.cuh) and their dispatch; no torch header, so
// nvcc builds this file quickly and imma_qk.py's `sass` command compiles the same instances alone.
#include "imma_qk.cuh"

namespace imma_proto {
namespace {

template <int PATH, int BITS, int GROUP>
cudaError_t by_write(bool write, const Args& a, int grid, int smem, cudaStream_t s) {
  return write ? launch<PATH, BITS, GROUP, true>(a, grid, smem, s) : launch<PATH, BITS, GROUP, false>(a, grid, smem, s);
}
template <int PATH>
cudaError_t by_format(int bits, int group, bool write, const Args& a, int grid, int smem, cudaStream_t s) {
  if (bits == 2 && group == 128) return by_write<PATH, 2, 128>(write, a, grid, smem, s);
  if (bits == 2 && group == 32) return by_write<PATH, 2, 32>(write, a, grid, smem, s);
  if (bits == 4 && group == 128) return by_write<PATH, 4, 128>(write, a, grid, smem, s);
  if (bits == 4 && group == 32) return by_write<PATH, 4, 32>(write, a, grid, smem, s);
  return cudaErrorInvalidValue;
}

}  // namespace

int launch_any(int path, int bits, int group, bool write, const Args& a, int grid, int smem_bytes, void* stream) {
  const cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (path == 0) return by_format<0>(bits, group, write, a, grid, smem_bytes, s);
  if (path == 1) return by_format<1>(bits, group, write, a, grid, smem_bytes, s);
  if (path == 2) return by_format<2>(bits, group, write, a, grid, smem_bytes, s);
  return cudaErrorInvalidValue;
}

}  // namespace imma_proto
