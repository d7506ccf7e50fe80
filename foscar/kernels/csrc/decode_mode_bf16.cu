// Instantiates the bf16 contiguous-cache variant (token-wise K) of the sm_90 decode kernel (all formats).
#include "folded_decode_sm90.cuh"

namespace foscar {
template cudaError_t launch_mode<kFoldedBf16, false, false>(const Params&, int, int, int, int, cudaStream_t);
}  // namespace foscar
