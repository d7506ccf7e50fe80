"""Session 28: make .ab/tl_csrc, a copy of foscar/kernels/csrc with per-CTA timeline stamps (FOSCAR_TIMELINE)
in the contiguous folded-BF16 instances (decode_mode_bf16.cu's TU) and a binding `timeline_read(reset)`.
Record (thread 0 of each CTA, 10 u64): 0 globaltimer at entry, 1 globaltimer at exit, 2 clock64 entry,
3 after find_work, 4 before the loops, 5 after step 0's wait (warp 0), 6 after the loops, 7 after the epilogue,
8 meta: smid | blockIdx.x << 8 | work.b << 24 | iters << 40, 9 start | end << 32 (work's token range)."""
import pathlib, re, shutil
import sys
src = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "foscar/kernels/csrc"); dst = pathlib.Path(sys.argv[2] if len(sys.argv) > 2 else ".ab/tl_csrc")
shutil.rmtree(dst, ignore_errors=True); shutil.copytree(src, dst)
h = dst / "folded_decode_sm90.cuh"; s = h.read_text()
def rep(old, new, count=1):
    global s
    assert s.count(old) == count, (old, s.count(old)); s = s.replace(old, new)
rep("namespace foscar {\n", """namespace foscar {
#define FOSCAR_TL_MAX 65536
static __device__ unsigned long long foscar_tl_buf[FOSCAR_TL_MAX * 10];
static __device__ unsigned int foscar_tl_n;
__device__ __forceinline__ unsigned long long tl_gt() { unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
__device__ __forceinline__ unsigned tl_smid() { unsigned r; asm volatile("mov.u32 %0, %%smid;" : "=r"(r)); return r; }
#define TLS(k, v) do { if (TL_ON && threadIdx.x == 0) foscar_tl_buf[(size_t)tl_rec * 10 + (k)] = (unsigned long long)(v); } while (0)
""")
rep("""  const int slot = blockIdx.x / p.num_kv_heads;
  asm volatile("griddepcontrol.wait;\\n" ::: "memory");  // PDL: the previous grid's writes are visible
  const Work work = find_work<PAGED>(p, slot);
  if (work.count == 0) {
""", """  const int slot = blockIdx.x / p.num_kv_heads;
  constexpr bool TL_ON = MODE == kFoldedBf16 && !PAGED && !CH;
  unsigned tl_rec = 0;
  if (TL_ON && threadIdx.x == 0) tl_rec = atomicAdd(&foscar_tl_n, 1u) % FOSCAR_TL_MAX;
  TLS(0, tl_gt());
  TLS(2, clock64());
  asm volatile("griddepcontrol.wait;\\n" ::: "memory");  // PDL: the previous grid's writes are visible
  const Work work = find_work<PAGED>(p, slot);
  TLS(3, clock64());
  if (work.count == 0) {
    TLS(7, clock64());
    TLS(1, tl_gt());
    TLS(8, tl_smid() | ((unsigned long long)blockIdx.x << 8));
""")
rep("""    __syncwarp();
    const uint8_t* st = wsm + (it % kStages) * STAGE_BYTES;
""", """    __syncwarp();
    if (it == 0) TLS(5, clock64());
    const uint8_t* st = wsm + (it % kStages) * STAGE_BYTES;
""")

rep("""  int it = 0;
  for (; it < full_steps; ++it) step(it, std::true_type{});
""", """  int it = 0;
  TLS(4, clock64());
  TLS(8, tl_smid() | ((unsigned long long)blockIdx.x << 8) | ((unsigned long long)(b & 0xFFFF) << 24) | ((unsigned long long)iters << 40));
  TLS(9, (unsigned)start | ((unsigned long long)(unsigned)end << 32));
  for (; it < full_steps; ++it) step(it, std::true_type{});
""")
rep("""  asm volatile("griddepcontrol.launch_dependents;\\n" ::);

  // ---- merge the 4 warps""", """  asm volatile("griddepcontrol.launch_dependents;\\n" ::);
  TLS(6, clock64());

  // ---- merge the 4 warps""")
rep("""  epilogue<BITS, HEAD_DIM, GROUP, MODE, CH, PK>(p, smem, s_work, o_acc, m_run, l_part, hkv, warp, g, tig);
}
""", """  epilogue<BITS, HEAD_DIM, GROUP, MODE, CH, PK>(p, smem, s_work, o_acc, m_run, l_part, hkv, warp, g, tig);
  TLS(7, clock64());
  TLS(1, tl_gt());
}
""")
h.write_text(s)
m = dst / "decode_mode_bf16.cu"; t = m.read_text()
t = t.replace("}  // namespace foscar", """}  // namespace foscar

// the timeline of this TU's instances: copies min(n, max_records) records into dst; reset: n = 0 after
int foscar_timeline_copy(unsigned long long* dst, int max_records, int reset) {
  unsigned n = 0;
  cudaDeviceSynchronize();
  cudaMemcpyFromSymbol(&n, foscar::foscar_tl_n, sizeof n);
  int k = (int)(n < (unsigned)max_records ? n : (unsigned)max_records);
  if (k > FOSCAR_TL_MAX) k = FOSCAR_TL_MAX;
  if (k > 0) cudaMemcpyFromSymbol(dst, foscar::foscar_tl_buf, (size_t)k * 10 * sizeof(unsigned long long));
  if (reset) { unsigned z = 0; cudaMemcpyToSymbol(foscar::foscar_tl_n, &z, sizeof z); }
  return (int)n;
}
""")
m.write_text(t)
b = dst / "binding.cpp"; t = b.read_text()
t = t.replace("PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {", """int foscar_timeline_copy(unsigned long long* dst, int max_records, int reset);
torch::Tensor timeline_read(int64_t reset) {
  auto out = torch::zeros({65536, 10}, torch::kInt64);
  int n = foscar_timeline_copy(reinterpret_cast<unsigned long long*>(out.data_ptr<int64_t>()), 65536, (int)reset);
  return out.narrow(0, 0, n < 65536 ? n : 65536);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("timeline_read", &timeline_read, "session 28 probe: per-CTA timeline records [n, 10] int64");""")
b.write_text(t)
print("ok")
