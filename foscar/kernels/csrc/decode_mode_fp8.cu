// Instantiates the fp8 operand mode of the sm_90 decode kernel (all formats).
#include "folded_decode_sm90.cuh"

namespace foscar {
template cudaError_t launch_mode<kFoldedFp8>(const Params&, int, int, int, int, cudaStream_t);
}  // namespace foscar
