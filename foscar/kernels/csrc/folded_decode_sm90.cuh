// FOSCAR folded INT2/INT4 split-KV decode attention for sm_90 (mma.sync; BF16 or FP8 operands).
//
// One CTA = one (KV head, work slot); a slot is one chunk of one sequence's tokens (length-aware split-KV, find_work
// below: chunks sized from the actual lengths so that every SM gets about the same number of tokens, DESIGN §10). 4
// warps, each streaming its own 64-token sub-tiles (tokens [start + (4 * it + warp) * 64, +64)) through a private
// two-stage cp.async pipeline in shared memory, with its own online softmax; the 4 warps are merged through shared
// memory at the end. A sequence of one chunk writes its output directly; otherwise each chunk writes a normalized fp32
// partial and base-2 LSE, merged by default by the last CTA of the sequence (an atomic counter per (sequence, KV head),
// reset by that CTA; plans' default since session 37, bench/NOTES.md §79-§80: faster than the merge kernel at batch 8
// and for empty sequences, slower at batch 1 with 32 chunks a sequence; §17, §29: its earlier forms, slower), or by
// foscar/kernels/merge_triton.py merge_slots (FOSCAR_MERGE=kernel, and one-shot foscar.decode calls). The merge kernel
// is launched with programmatic dependent launch (FOSCAR_MERGE_PDL, default on; NOTES §43): its launch overlaps this
// kernel's tail, as every CTA executes griddepcontrol.launch_dependents once its main loop is done (where no merge
// kernel follows, token-wise instances that prefetch before the wait, built with FOSCAR_PREWAIT_PREFETCH, and
// FOSCAR_EARLY_TRIGGER, its default, trigger at their start). This kernel is launched with PDL too where Params::pdl is
// set (FOSCAR_PDL, on by default on sm_90: griddepcontrol.wait before any value that reaches the outputs is read, so
// that its launch overlaps the tail of the kernel before it; NOTES §73: §17 and §45 had measured it slower, one cause
// being the grid's CTAs piling three on the SMs left free, which plans now avoid by an even spread). Before the wait,
// in builds with FOSCAR_PREWAIT_PREFETCH (off by default), a contiguous token-wise CTA of the first wave (paged too,
// with FOSCAR_PREWAIT_PAGED) asks L2 for its chunk's first steps (lengths and page ids read relaxed for the addresses
// only; NOTES §99, §100).
//
// Tensor-core shapes (mma.sync.m16n8k16, bf16 in, fp32 accumulate):
//   QK:  S^T[token, head] = K[token, :] . Q[head, :]   M = 16 tokens, N = 8 query heads
//   PV:  O^T[chan, head]  = V^T[chan, :] . P'^T[:, head] M = 16 channels, K = 16 tokens
// so GQA <= 8 heads pad to N = 8 (Triton's 16-row minimum would pad to 16).
//
// Operands from packed codes (plane-split packing, foscar/quant.py): a 32-bit word
// holds 4 bytes = 4 x (8 / BITS) codes. For plane p the BF16 operand 1 + code/128 of
// two bytes is one lop3: ((w >> (BITS * p)) & 0x00030003) | 0x3F803F80 yields bytes 0
// and 2, and the same on (w >> (BITS * p + 8)) bytes 1 and 3. The k (QK) and m (PV)
// orderings are chosen so that these pairs land exactly where the mma fragments want
// them, and the query / output channel orders follow (no data moves between lanes).
// QK words come from ldmatrix (token rows); PV words from ldmatrix.trans (token
// pairs per register). P^T goes from the QK accumulator layout to the PV B-fragment
// layout with movmatrix.trans.
//
// Planes in place: where a plane's bits already sit in the BF16 mantissa (INT2 planes 0-2 at
// bits 2p..2p+1) the lop3 takes them there, operand 1 + code * 2^E / 128 with E = 2p, and
// skips the shift (Fmt::pexp); that plane's query is Q * 2^-E (exact) and its output block
// is accumulated as 2^E O and scaled back at the end.
//
// Folding (DESIGN §3), token-wise groups, a = 1/128, c = 1:
//   S_t  = 128 s_tg * acc_g + z_tg * sum(Q_g)                           (times sm_scale log2 e)
//          acc_g = sum_c (1 + code 2^E / 128) Q_c 2^-E - sum(Q'_g) = sum_c code Q_c / 128
//   O_h  = sum_t P'_th v_t - sum_t P'_th + sum_t P_th z_t,   P' = bf16(P * 128 s_t)
// Both bias terms enter as the start value of the accumulator (the C operand of the first
// mma): QK starts at -sum(Q'_g) of the BF16 query the mma reads; PV, per 64-token tile in a
// fresh accumulator, at 2^E sum P z - sum P' with the BF16-rounded P' the mma consumed
// (DESIGN §9, rules 1 and 2).
//
// Integer QK (FOSCAR_IMMA_QK, on by default; FOSCAR_IMMA_QK_INT4=0 keeps INT4 on the BF16 QK; NOTES §24;
// folded BF16 mode, token-wise K; DESIGN §5.1): QK on
// mma.sync.m16n8k32.s32.u8.s8.s32 (native IMMA on sm_90a) with the codes as u8 lanes (one lop3 per
// 4 codes) and the query as a 16-bit fixed point per head, qi = rint(Q / d_h) = 256 hi + lo, two
// exact s32 mmas per step (hi, lo); S' = s dot + z sum(qi_g 2^hexp) (the rounded query's), and the head's d_h joins
// sm_scale log2(e) in the softmax's exp2 (an FFMA in place of the FADD; qk_h = sm_scale log2(e) d_h
// a power of two, so that FFMA is exact where it matters).
//
// Integer PV (FOSCAR_IMMA_PV, on by default for INT2 and INT4 at head_dim <= 128; NOTES §46, §102, §104; DESIGN
// §5.2): PV on
// mma.sync.m16n8k32 with the V codes in place as u8 lanes (code 2^(BITS p): one lop3 per 4 codes, no
// shift) and P' = P s_v as a 16-bit fixed point per (tile, group, head), x = rint(P s_v f) from the low
// bits of an FFMA with 1.5 2^23, split into an s8 high and a u8 low byte: two exact s32 mmas per 32
// tokens, O += (256 hi_dot + lo_dot) 2^-(BITS p) / f + sum P z. With at most 4 query heads a KV head (PK,
// pv_packable; NOTES §62) the 8 columns hold the heads twice, high bytes in 0-3 and low bytes (s8) in 4-7: one mma.
//
// This header includes no torch header: CI compiles the .cu files with nvcc alone.
// One translation unit per operand mode and cache kind (decode_mode_*.cu) so that ninja builds them in
// parallel; folded_decode_sm90.cu holds the C entry point.

#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <atomic>
#include <mutex>
#include <type_traits>

namespace foscar {

// Tuning knobs, overridable with -D for experiments (bench/NOTES.md records what was tried).
#ifndef FOSCAR_STAGES
#define FOSCAR_STAGES 2
#endif
#ifndef FOSCAR_MERGE_WARP  // 1 (default): the in-kernel merge of 17-32 chunks at head_dim 128 in one round of loads
#define FOSCAR_MERGE_WARP 1  // (merge_rows_warp; bench/NOTES.md §83); 0 (FOSCAR_NVCC_DEFINES="FOSCAR_MERGE_WARP=0", a
                             // build setting, not read at plan time): two rounds of 16 (merge_rows)
#endif
#ifndef FOSCAR_TILE_PROBE  // 1: a probe build (session 43) whose contiguous token-wise instances read K and V from one
#define FOSCAR_TILE_PROBE 0  // buffer of 64-token blocks at p.k_codes (scripts/tile_layout_probe.py); 0: none of it
#endif
#ifndef FOSCAR_PAGE_CHECK  // 1: an A/B build (sessions 79-80) whose paged warps read their sub-tiles' page ids once,
#define FOSCAR_PAGE_CHECK 0  // before the loop, and on an id outside 0 .. num_pages - 1 read no token; the rows are NaN
#endif                       // (output and LSE) instead of reads past the pool; 0: the ids are trusted
#ifndef FOSCAR_L2_ONLY  // 1: a probe build (session 50) whose contiguous instances copy every full sub-tile's codes
#define FOSCAR_L2_ONLY 0  // and token-wise scales from the warp's first sub-tile (L2 hits after the first step; the
#endif                    // outputs are wrong): the decode's time with its loads out of DRAM's way (bench/NOTES.md §94;
                          // channel-wise K's scale rows still stream); 0: none of it is compiled
// N > 0: before griddepcontrol.wait, a contiguous token-wise CTA places its chunk from the lengths read with
// ld.relaxed.gpu (a stale value moves only the hint; every line touched holds a byte of the cache) and asks L2 for the
// chunk's first N steps (prefetch.global.L2: a hint, no value read after the wait changes). With PDL the next call's
// CTAs start while this one's last CTAs run, and their first sub-tiles come from DRAM then, not after the wait
// (bench/NOTES.md §99, §100: on an H100, N = 4 with the trigger at the start, INT2 8 x 32K 2.8% and a ragged batch
// 12% faster behind a kernel that triggers, up to 6.8% slower behind one that does not). 0 (default: a serving step
// whose kernel before the attention does not trigger pays that, §100): none of it is compiled
#ifndef FOSCAR_PREWAIT_PREFETCH
#define FOSCAR_PREWAIT_PREFETCH 0
#endif
// 1 (default; acts with FOSCAR_PREWAIT_PREFETCH): only the CTAs of the launch's first wave (cta_index() < SMs x CTAs an
// SM) prefetch: a later wave's CTAs start after this grid's own, when the wait no longer waits and a prefetch would
// run just ahead of their copies (a guess at why 2 steps made an H100's 64 x 8K 2% slower; untested, §99); 0: every
// CTA
#ifndef FOSCAR_PREWAIT_WAVE
#define FOSCAR_PREWAIT_WAVE 1
#endif
// 1 (default; acts with FOSCAR_PREWAIT_PREFETCH): in the instances that prefetch before the wait, and where no merge
// kernel follows (fuse_merge), griddepcontrol.launch_dependents at the kernel's start, so that the next call's CTAs
// take the SMs this call's early CTAs leave (its tail) and prefetch there; 0, and elsewhere: after the main loop
// (bench/NOTES.md §43, §99)
#ifndef FOSCAR_EARLY_TRIGGER
#define FOSCAR_EARLY_TRIGGER 1
#endif
// 1 (acts with FOSCAR_PREWAIT_PREFETCH): paged token-wise instances prefetch before the wait too, the chunk's pages
// read from kv_indptr / kv_indices with ld.relaxed.gpu (a stale id moves only the hint; ids at or past the pool's
// num_pages are skipped), and trigger at their start as the contiguous ones do (bench/NOTES.md §100); 0 (default):
// paged instances keep the plain path (their trigger after the main loop)
#ifndef FOSCAR_PREWAIT_PAGED
#define FOSCAR_PREWAIT_PAGED 0
#endif
#ifndef FOSCAR_TIMELINE  // 1: a profiling build whose CTAs write a timeline of their phases into Params::timeline
#define FOSCAR_TIMELINE 0  // (python -m bench.timeline; bench/NOTES.md §66); 0: none of it is compiled
#endif
// FOSCAR_MIN_BLOCKS (undefined by default): cap registers so that this many CTAs fit on an SM, every instance
// (launch_min_blocks; without it, each instance's min_blocks)

#ifndef FOSCAR_FUSED_MERGE  // 1 (default): compile the in-kernel split merge (plans take it unless FOSCAR_MERGE=kernel;
#define FOSCAR_FUSED_MERGE 1  // NOTES §79); 0: only the merge kernel (foscar/kernels/merge_triton.py) can merge
#endif

#ifndef FOSCAR_PLANE_SCALE  // 0: every plane shifted down to bits 0.. (the layout before 2026-11-30 session 3)
#define FOSCAR_PLANE_SCALE 1
#endif

// 1 (default): folded BF16, token-wise K: QK on integer tensor cores (DESIGN §5.1, NOTES §24); 0: BF16
// HMMA. 5-10% faster at the large INT2 points. (Session 8's build gave non-finite output for K near the
// documented largest magnitude, 1e30: exp2 of an unrounded FFMA in the softmax; fixed, qk_h a power of two.)
#ifndef FOSCAR_IMMA_QK
#define FOSCAR_IMMA_QK 1
#endif
// With FOSCAR_IMMA_QK: 0 keeps INT4 on the BF16 QK (INT2 alone on integers). 1 (default): INT4 too (at
// 64 x 8K INT4 measured 4-10% slower with it, faster at the other large points; NOTES §24).
#ifndef FOSCAR_IMMA_QK_INT4
#define FOSCAR_IMMA_QK_INT4 1
#endif
// 1: folded BF16: PV on integer tensor cores too (DESIGN §5.2, NOTES §46): the V codes in place as u8
// lanes (one lop3 per 4 codes, no shift), P' = P s_v as a 16-bit fixed point per (tile, group, head),
// two exact s32 mmas per 32 tokens (hi byte s8, lo byte u8). 0: BF16 HMMA with 1 + code / 128 operands.
// INT2 at the large points 5-8% faster, max_rel_err 4-5e-3 -> 1.7e-3 (NOTES §46). head_dim <= 128 (at 256
// ptxas spills).
#ifndef FOSCAR_IMMA_PV
#define FOSCAR_IMMA_PV 1
#endif
// With FOSCAR_IMMA_PV: 2 (default) puts INT4 on the integer PV's two-mma form where the packed columns do not apply
// (gqa 5-8, FOSCAR_PV_PACK=0, and channel-wise K at any gqa). Token-wise K at 8 query heads over 1 KV head: 0.5-1.3%
// faster, max_rel_err 6.4e-3 -> 1.8e-3 on an H100 (NOTES §102; at gqa 4, before the packed form, §46 measured it no
// faster, 7% slower at 64 x 8K where ptxas spilled). Channel-wise K: 0.989-1.003 of the time, max_rel_err 4.9-5.9e-3 ->
// 1.8e-3 at gqa 4 and 8 (NOTES §104; ptxas spills 4-12 bytes at G=64-128). 1: token-wise K only (channel-wise K on the
// BF16 PV, sessions 58-59); 0: INT4 on the BF16 PV wherever the packed columns do not apply.
#ifndef FOSCAR_IMMA_PV_INT4
#define FOSCAR_IMMA_PV_INT4 2
#endif
// 1: build the integer PV's packed-column instances (gqa <= 4, pv_packable below); the C entry point's pv_pack
// argument chooses them per launch (foscar/kernels/decode_cuda.py pv_pack_choice: FOSCAR_PV_PACK when the plan is
// made, default 1)
#ifndef FOSCAR_PV_PACK
#define FOSCAR_PV_PACK 1
#endif
// 1: INT4 too (NOTES §62); 0: INT2 only (INT4 then takes the two-mma integer PV at every gqa, FOSCAR_IMMA_PV_INT4)
#ifndef FOSCAR_PV_PACK_INT4
#define FOSCAR_PV_PACK_INT4 1
#endif
// 1 (default): in the packed-column instances (PK, gqa <= 4) the QK's columns 4-7 hold another m16 token tile
// instead of repeating heads 0-3 (pk_tokens below): a sub-tile's fold, softmax and P' take 8 scores a lane where 16
// ran, half of them copies; 0: columns 4-7 repeat heads 0-3 (bench/NOTES.md §62)
#ifndef FOSCAR_PK_TOKENS
#define FOSCAR_PK_TOKENS 1
#endif
// 1 (default): the integer QK where a K group spans several planes (INT2, G > packed bytes per row: the planes
// cannot be folded out through the group's scale, Fmt::IMMA_IN_PLACE false) and the row is an even number of 16-byte
// chunks (head_dim >= 128; Fmt::IMMA_HALF) keeps INT2's odd planes at bits 2..3 of each byte (code 4, mask
// 0x0C0C0C0C) and gives their channels a query fixed point a quarter as fine (|qi| <= 8160, 13 bits): planes 2 and 3
// share one shift per word, 16 SHF a tile where 48 ran (Fmt::hexp, bench/NOTES.md §63); 0: every plane shifted down
// to bits 0..1
#ifndef FOSCAR_QK_HALF
#define FOSCAR_QK_HALF 1
#endif
// 1 (default): find_work's fixed path with one chunk a sequence (fixed_splits == 1: every 16-token bench point and
// every plan of one chunk a sequence) takes slot b as sequence b, tokens [0, len), without the general fixed path's
// run-time divisions (bench/NOTES.md §75); token-wise K only; 0: the general fixed path (the same Work)
#ifndef FOSCAR_ONE_CHUNK_PATH
#define FOSCAR_ONE_CHUNK_PATH 1
#endif
// 1 (default): the length-aware schedule gives no sequence more than kMaxSeqChunks chunks, or only chunks of at least
// p.long_chunk (longest_chunk_floor; bench/NOTES.md §101, §106); 0: the kernel's schedule before session 57, without that floor (for A/B; the plans keep
// their cap, and read the chunk table: decode_cuda.SEQ_CHUNK_CAP_BUILT)
#ifndef FOSCAR_SEQ_CHUNK_CAP
#define FOSCAR_SEQ_CHUNK_CAP 1
#endif
// 0 (default): a short batch cut in chunks of 256 (p.short_tokens) cuts every sequence in it, those of 257 .. min_chunk
// tokens too; 1: those stay one chunk (aware_chunks), an A/B build whose plans read the chunk table
// (decode_cuda.KEEP_SHORT_BUILT): on an H100 it was 7-12% slower on lognormal batches and at one sequence past 512
// among 7-15 in a 128K cache, 6-9% faster where one sat among 31-63 of 512 (bench/NOTES.md §119)
#ifndef FOSCAR_KEEP_SHORT
#define FOSCAR_KEEP_SHORT 0
#endif
// 0 (default): the length-aware chunks fill the grid's num_slots slots (find_work); 1, an A/B build whose plans read
// the chunk table (decode_cuda.WAVE_FIT_BUILT): where those chunks make more CTAs than the SMs but at most twice as
// many (some SMs run two chunks, others one), and chunks grown until one CTA an SM holds them all are at most 1.7 times
// as long, the grown chunks (wave_fit_may_take; splits.schedule's wave_slots mirrors it). On an H200 it was 4.5% faster
// at 8 lognormal lengths in 512K (165 -> 129 CTAs) but 1.38x slower at one 8K sequence among 31 of 4K (197 -> 131): two
// CTAs on one SM run side by side, so the longer chunks cost more than the second wave (bench/NOTES.md §121)
#ifndef FOSCAR_WAVE_FIT
#define FOSCAR_WAVE_FIT 0
#endif
// 1 (default): the decode grid is num_kv_heads x num_slots (blockIdx.x the KV head, blockIdx.y the slot; the same
// block order as one dimension), so a CTA finds its slot and KV head without the integer division by num_kv_heads
// (~20 dependent instructions right after griddepcontrol.wait, before the length's load: bench/NOTES.md §77); token-wise
// K only (grid_2d); a grid of more than 65535 slots (gridDim.y's limit) stays one-dimensional; 0: one dimension always
#ifndef FOSCAR_GRID_2D
#define FOSCAR_GRID_2D 1
#endif
// > 0: instantiate the formats of this head_dim only (the other head_dims' launches return
// cudaErrorInvalidValue). For the CPU CI's compile test (tests/test_decode_cuda.py), which checks the
// head_dim 128 instances in a third of the nvcc time; the extension is always built with 0 (all).
#ifndef FOSCAR_ONLY_HEAD_DIM
#define FOSCAR_ONLY_HEAD_DIM 0
#endif

// 0 (default): the 16-byte cp.async copies of K/V codes and scales carry no L2 prefetch-size hint; 64, 128 or 256:
// they carry `.L2::<N>B` (each copy asks L2 to fetch the N-byte block around it from DRAM; CUTLASS's SM80 copies
// use 128). A probe knob for issue 12's one-wave points (bench/NOTES.md §84)
#ifndef FOSCAR_CP_L2_PREFETCH
#define FOSCAR_CP_L2_PREFETCH 0
#endif
#if FOSCAR_CP_L2_PREFETCH == 0
#define FOSCAR_CP_L2_HINT ""
#elif FOSCAR_CP_L2_PREFETCH == 64
#define FOSCAR_CP_L2_HINT ".L2::64B"
#elif FOSCAR_CP_L2_PREFETCH == 128
#define FOSCAR_CP_L2_HINT ".L2::128B"
#elif FOSCAR_CP_L2_PREFETCH == 256
#define FOSCAR_CP_L2_HINT ".L2::256B"
#else
#error "FOSCAR_CP_L2_PREFETCH: 0, 64, 128 or 256"
#endif

constexpr int kWarps = 4;

// Integer-QK instances held to 3 CTAs per SM (<= 168 registers) by their launch bounds besides
// min_blocks' own: INT2 G=64 at head_dim 128 (186 registers unbounded; bench/NOTES.md §24).
template <int MODE, bool CH, int BITS, int HEAD_DIM, int GROUP>
__host__ __device__ constexpr int imma_min_blocks() {
  return MODE == 0 && !CH && FOSCAR_IMMA_QK && BITS == 2 && HEAD_DIM == 128 && GROUP == 64 ? 3 : 0;
}
constexpr int kTileTokens = 64;  // tokens per warp per iteration (4 m16 tiles)
constexpr int kStages = FOSCAR_STAGES;

template <int BITS, int HEAD_DIM, int GROUP>
struct Fmt {
  static constexpr int G = GROUP;
  static constexpr int P = 8 / BITS;               // planes (codes per byte)
  static constexpr int RB = HEAD_DIM * BITS / 8;   // packed bytes per token row
  static constexpr int NCH = RB / 16;              // 16-byte chunks per row
  static constexpr int NG = HEAD_DIM / GROUP;      // groups per row
  static constexpr int KSTEPS = NCH * P;           // k16 steps of QK = m16 blocks of PV
  static constexpr uint32_t MASK = BITS == 2 ? 0x00030003u : 0x000F000Fu;
  static constexpr uint32_t MASK4 = BITS == 2 ? 0x03030303u : 0x0F0F0F0Fu;  // FP8: four codes per word
  static constexpr int KSTEPS8 = NCH / 2 * P;      // FP8: k32 steps of QK (chunk pair, plane)
  static constexpr float C0 = ((1 << BITS) - 1) * 0.5f;  // FP8: mid code, centres the rounding corrections

  // shared memory of one warp-stage: K codes, V codes, then ks, kz (KM_BYTES each), vs, vz
  // (SCALE_BYTES each). Token-wise K: ks, kz per token and group like V's. Channel-wise K
  // (CH): the rows of HEAD_DIM scales / offsets of the (at most 2) K blocks of the sub-tile.
  static constexpr int CODE_BYTES = kTileTokens * RB;
  static constexpr int SCALE_BYTES = kTileTokens * NG * 4;
  template <bool CH> static constexpr int KM_BYTES = CH ? 2 * HEAD_DIM * 4 : SCALE_BYTES;
  template <bool CH> static constexpr int STAGE_BYTES = 2 * CODE_BYTES + 2 * KM_BYTES<CH> + 2 * SCALE_BYTES;
  template <bool CH> static constexpr int SMEM_BYTES = kStages * kWarps * STAGE_BYTES<CH>;
  // paged: after the stages, each warp's ring of kStages page-id slots (a sub-tile's 64 ids, 4 bytes each)
  static constexpr int ID_SLOT_BYTES = kTileTokens * 4;
  template <bool PAGED, bool CH>
  static constexpr int KERNEL_SMEM_BYTES = SMEM_BYTES<CH> + (PAGED ? kStages * kWarps * ID_SLOT_BYTES : 0);
  // Folded BF16: plane pl is used in place (no shift) where its bits already sit in the BF16
  // mantissa (bits 0..6 of each half): operand 1 + code * 2^E / 128, E = PEXP(pl) = BITS * pl;
  // INT2 planes 0, 1, 2 (INT4 plane 1 would reach the exponent bit: shifted, E = 0). The
  // factor 2^-E goes into the query of that plane and into that channel block's output.
  __host__ __device__ static constexpr int pexp(int pl) { return FOSCAR_PLANE_SCALE && BITS * pl + BITS <= 7 ? BITS * pl : 0; }
  static constexpr bool SCALED_PLANES = FOSCAR_PLANE_SCALE && BITS == 2;
  // Integer QK (FOSCAR_IMMA_QK, folded BF16, token-wise K): m16n8k32 steps of 32 contiguous channels.
  // Even NCH: step k = (chunk pair cp, plane pl), k = cp * P + pl, channels pl * RB + 32 cp + [0, 32)
  // (ldmatrix.x4 of chunks 2cp, 2cp+1 is the A fragment). NCH = 1 (INT2 D=64): step k = planes 2k,
  // 2k+1 of the one chunk, channels 32k + [0, 32) (ldmatrix.x2; plane 2k in a0/a1, 2k+1 in a2/a3).
  // Every step lies in one group (G >= 32). In place (no shift) where every group lies in one
  // step's factor region: the codes arrive times 2^IEXP(k), folded out through the group's K scale.
  static constexpr int KSTEPS32 = NCH % 2 == 0 ? NCH / 2 * P : P / 2;
  __host__ __device__ static constexpr int ibase(int k) { return NCH % 2 == 0 ? (k % P) * RB + 32 * (k / P) : 32 * k; }
  static constexpr bool IMMA_IN_PLACE = NCH % 2 == 0 ? GROUP <= RB : GROUP <= 32;
  __host__ __device__ static constexpr int iexp(int k) {
    return !IMMA_IN_PLACE ? 0 : NCH % 2 == 0 ? BITS * (k % P) : 2 * BITS * k;
  }
  // FOSCAR_QK_HALF: step k's codes arrive times 2^hexp(k) (INT2 odd planes at bits 2..3), and its channels'
  // query fixed point is qi = rint(Q / (d 2^hexp(k))), so code 2^hexp qi ~ code Q / d as for the other steps
  static constexpr bool IMMA_HALF = FOSCAR_QK_HALF && BITS == 2 && !IMMA_IN_PLACE && NCH % 2 == 0;
  __host__ __device__ static constexpr int hexp(int k) { return IMMA_HALF ? BITS * ((k % P) % 2) : 0; }
  __host__ __device__ static constexpr bool ifirst(int k) {  // first step of its group in step order
    for (int k2 = 0; k2 < k; ++k2)
      if (ibase(k2) / GROUP == ibase(k) / GROUP) return false;
    return true;
  }
  __host__ __device__ static constexpr bool ilast(int k) {  // last step of its group in step order
    for (int k2 = k + 1; k2 < KSTEPS32; ++k2)
      if (ibase(k2) / GROUP == ibase(k) / GROUP) return false;
    return true;
  }
  __host__ __device__ static constexpr int igexp(int gr) {  // in-place exponent of group gr's steps
    for (int k = 0; k < KSTEPS32; ++k)
      if (ibase(k) / GROUP == gr) return iexp(k);
    return 0;
  }
  // swizzle of 16-byte chunks so an 8-row ldmatrix hits 8 distinct bank groups
  static constexpr int ROWS_PER_SWZ = NCH >= 8 ? 1 : 8 / NCH;
  static_assert(HEAD_DIM % GROUP == 0 && GROUP % 16 == 0, "group must be a multiple of 16 dividing head_dim");
  static_assert(RB % 16 == 0, "packed row must be a multiple of 16 bytes");
};

// Is QK step (chunk c, plane pl) the first of its group in the kernel's (c, pl) loop order?
template <class F>
__host__ __device__ constexpr bool first_step_of_group(int c, int pl) {
  const int gr = (pl * F::RB + 16 * c) / F::G;
  for (int c2 = 0; c2 <= c; ++c2)
    for (int p2 = 0; p2 < F::P; ++p2) {
      if (c2 == c && p2 == pl) return true;
      if ((p2 * F::RB + 16 * c2) / F::G == gr) return false;
    }
  return true;
}

__host__ __device__ constexpr int swz(int token, int chunk, int nch, int rows_per_swz) {
  return chunk ^ ((token / rows_per_swz) & (nch - 1));
}

// ---- Full-tile copies (the fast path of the kernel's `issue`), proved at compile time.
// `issue` copies 16-byte chunk i = lane + 32 jj of a sub-tile's codes (token i / NCH, chunk i % NCH)
// from byte 16 i of the sub-tile's rows (a sub-tile's RB-byte rows are adjacent: contiguous caches,
// and paged ones whose pages hold whole sub-tiles) to the swizzled place code_dst(lane, jj). The fast
// path keeps code_dst(lane, jj % SWZ_PERIOD) per lane across the loop and adds the constant
// (jj - jj % SWZ_PERIOD) * 512 bytes: the same chunk to the same byte, with no index arithmetic per pass.
template <class F>
__host__ __device__ constexpr int code_dst(int lane, int jj) {
  const int i = lane + 32 * jj, tok = i / F::NCH, c = i % F::NCH;
  return tok * F::RB + 16 * swz(tok, c, F::NCH, F::ROWS_PER_SWZ);
}
// the smallest period (1, 2, 4, .. in jj) of the swizzle over whole 32-chunk rounds, 0 if none
template <class F>
__host__ __device__ constexpr int code_swizzle_period() {
  constexpr int JJ = kTileTokens * F::NCH / 32;
  for (int per = 1; per <= JJ; per *= 2) {
    bool ok = true;
    for (int lane = 0; lane < 32; ++lane)
      for (int jj = 0; jj < JJ; ++jj) {
        // source side: chunk i sits at byte 16 i of the sub-tile (token i / NCH's row, chunk i % NCH)
        const int i = lane + 32 * jj;
        ok = ok && (i / F::NCH) * F::RB + 16 * (i % F::NCH) == 16 * i;
        ok = ok && code_dst<F>(lane, jj) == code_dst<F>(lane, jj % per) + (jj - jj % per) * 512;
      }
    if (ok) return per;
  }
  return 0;
}

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, int src_bytes) {
  asm volatile("cp.async.cg.shared.global" FOSCAR_CP_L2_HINT " [%0], [%1], 16, %2;\n" ::"r"(smem_u32(smem)), "l"(gmem),
               "r"(src_bytes));
}
__device__ __forceinline__ void cp_async16_full(uint32_t smem, const void* gmem) {  // all 16 bytes
  asm volatile("cp.async.cg.shared.global" FOSCAR_CP_L2_HINT " [%0], [%1], 16;\n" ::"r"(smem), "l"(gmem));
}
__device__ __forceinline__ void cp_async4(void* smem, const void* gmem, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_u32(smem)), "l"(gmem), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x2(uint32_t (&r)[2], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x2_trans(uint32_t (&r)[2], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1]) : "r"(addr));
}
// A fragment of a k32 QK step (integer and FP8 QK) from the K codes of one stage: ldmatrix.x4 of m16
// tile mt's tokens g, g+8 of chunk 2cp, then of chunk 2cp+1, so lane word w[i] holds bytes 4tig .. +3
// (k 4tig.., k 16+4tig..) of row g (w[0], w[2]) / g+8 (w[1], w[3]), each byte 4 / 2 codes (planes).
template <class F>
__device__ __forceinline__ void ldmatrix_k32(uint32_t (&w)[4], const uint8_t* ksm, int mt, int cp, int lane) {
  const int tok = mt * 16 + (lane & 15);
  const int c = 2 * cp + (lane >> 4);
  ldmatrix_x4(w, smem_u32(ksm + tok * F::RB + 16 * swz(tok, c, F::NCH, F::ROWS_PER_SWZ)));
}
__device__ __forceinline__ uint32_t movmatrix_trans(uint32_t x) {
  uint32_t y;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(y) : "r"(x));
  return y;
}

__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// d = a . b + c with c in other registers (the first mma of an accumulator that starts at c)
__device__ __forceinline__ void mma_bf16_c(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1, float c0,
                                           float c1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%10,%11,%10,%11};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(c0), "f"(c1));
}

// FP16 operands (channel-wise K's QK: the query scaled per K block, the codes as FP16 subnormals)
__device__ __forceinline__ void mma_f16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ uint32_t pack_f16x2(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

// d = a . b (+ d unless FIRST) on m16n8k32, A u8 (codes), exact s32: mma_u8s8 with B s8 (a part of the
// fixed-point query, or the high byte of the fixed-point P'), mma_u8u8 with B u8 (the low byte of P')
#define FOSCAR_MMA_K32_U8(NAME, BTYPE)                                                                    \
  template <bool FIRST>                                                                                   \
  __device__ __forceinline__ void NAME(int (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {   \
    if constexpr (FIRST)                                                                                  \
      asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.u8." BTYPE ".s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, " \
                   "{%8,%9}, {%10,%10,%10,%10};\n"                                                       \
                   : "=r"(d[0]), "=r"(d[1]), "=r"(d[2]), "=r"(d[3])                                        \
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "r"(0));                \
    else                                                                                                  \
      asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.u8." BTYPE ".s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, " \
                   "{%8,%9}, {%0,%1,%2,%3};\n"                                                           \
                   : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])                                        \
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));                        \
  }
FOSCAR_MMA_K32_U8(mma_u8s8, "s8")
FOSCAR_MMA_K32_U8(mma_u8u8, "u8")
#undef FOSCAR_MMA_K32_U8

// FP8 (e4m3) operands, sm_89+: m16n8k32, four e4m3 values per 32-bit register.
__device__ __forceinline__ void mma_fp8(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}
template <uint32_t SEL>
__device__ __forceinline__ uint32_t prmt(uint32_t lo, uint32_t hi) {  // bytes of {hi:lo} picked by SEL
  uint32_t r;
  asm("prmt.b32 %0, %1, %2, %3;\n" : "=r"(r) : "r"(lo), "r"(hi), "n"(SEL));
  return r;
}

// A fragments of the k32 PV steps (FP8 and integer PV) of 16-byte chunk c of one stage's V codes, per
// 32-token block kb: channel byte 2g (rows g) / 2g+1 (rows g+8) of tokens 2tig, 2tig+1, 8+2tig, 9+2tig
// (xw[kb][0], xw[kb][1]) and of the same +16 (xw[kb][2], xw[kb][3]); each byte 4 / 2 codes (planes).
template <class F>
__device__ __forceinline__ void ldmatrix_pv_k32(uint32_t (&xw)[2][4], const uint8_t* vsm, int c, int lane) {
#pragma unroll
  for (int kb = 0; kb < 2; ++kb) {
    uint32_t r[4];
    const int tok = kb * 32 + lane;
    ldmatrix_x4_trans(r, smem_u32(vsm + tok * F::RB + 16 * swz(tok, c, F::NCH, F::ROWS_PER_SWZ)));
    xw[kb][0] = prmt<0x6420>(r[0], r[1]);
    xw[kb][1] = prmt<0x7531>(r[0], r[1]);
    xw[kb][2] = prmt<0x6420>(r[2], r[3]);
    xw[kb][3] = prmt<0x7531>(r[2], r[3]);
  }
}
// f32 pair -> e4m3x2 (16 bits, round to nearest, saturating) -> back to the exact f16x2
// of those e4m3 values: the operand the mma will consume, still in f16 (for movmatrix).
__device__ __forceinline__ uint32_t round_to_e4m3_as_f16x2(float lo, float hi) {
  uint32_t h;
  asm("{\n .reg .b16 t;\n cvt.rn.satfinite.e4m3x2.f32 t, %1, %2;\n cvt.rn.f16x2.e4m3x2 %0, t;\n}\n"
      : "=r"(h) : "f"(hi), "f"(lo));
  return h;
}
__device__ __forceinline__ uint32_t f16x2_to_e4m3x2(uint32_t h) {  // exact when h holds e4m3 values
  uint16_t t;
  asm("cvt.rn.satfinite.e4m3x2.f16x2 %0, %1;\n" : "=h"(t) : "r"(h));
  return t;
}
__device__ __forceinline__ float f16_lo(uint32_t x) { return __half2float(__ushort_as_half((unsigned short)(x & 0xFFFFu))); }
__device__ __forceinline__ float f16_hi(uint32_t x) { return __half2float(__ushort_as_half((unsigned short)(x >> 16))); }

// BF16 pair from two bytes of a word in one lop3, (x & (MASK << e)) | 0x3F803F80: with the codes at
// bits e.. of each half, 1 + code * 2^e / 128 (e + BITS <= 7; e = 0: 1 + code / 128).
template <uint32_t MASK>
__device__ __forceinline__ uint32_t operand_pair_at(uint32_t x, int e) {  // e: a constant after unrolling
  uint32_t r;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;\n" : "=r"(r) : "r"(x), "r"(MASK << e), "n"(0x3F803F80));
  return r;
}

// FP16 pair from two bytes of a word in one and: with the codes at bits e.. of each half (e + BITS
// <= 8), the FP16 subnormals code * 2^(e - 24), exact and unbiased (channel-wise K's QK operand).
template <uint32_t MASK>
__device__ __forceinline__ uint32_t subnormal_pair_at(uint32_t x, int e) {  // e: a constant after unrolling
  return x & (MASK << e);
}

// Per-value reconstruction (the ablation baseline, DESIGN §4): convert each code, then
// s * code + z, then round the pair to BF16. Codes at bits 0.. and 16.. of x.
template <uint32_t MASK>
__device__ __forceinline__ uint32_t dequant_pair(uint32_t x, float s_lo, float z_lo, float s_hi, float z_hi) {
  constexpr uint32_t ONE = MASK & 0xFFFFu;
  const float lo = fmaf(s_lo, __uint2float_rn(x & ONE), z_lo);
  const float hi = fmaf(s_hi, __uint2float_rn((x >> 16) & ONE), z_hi);
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// 1 / x, MUFU.RCP alone (rcp.approx.ftz): for x in [2^-126, 2^126] the reciprocal that __fdividef(a, x) multiplies a
// by, without __fdividef's range tests
__device__ __forceinline__ float rcp_approx(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// log2(x), MUFU.LG2 (lg2.approx.f32, subnormals kept; PTX ISA: maximum absolute error 2^-22 over [0.5, 2], relative
// 2^-22 elsewhere)
__device__ __forceinline__ float fast_log2(float x) {
  float y;
  asm("lg2.approx.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
__device__ __forceinline__ float bf16_lo(uint32_t x) { return __uint_as_float(x << 16); }
__device__ __forceinline__ float bf16_hi(uint32_t x) { return __uint_as_float(x & 0xFFFF0000u); }

__device__ __forceinline__ float fmax_nan(float a, float b) {  // max, NaN if either is (fmaxf drops a NaN)
  float r;
  asm("max.NaN.f32 %0, %1, %2;\n" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
// max over the 8 lanes sharing lane % 4; PROPAGATE_NAN: NaN if any lane's is (fmax_nan), else fmaxf (which drops a NaN)
template <bool PROPAGATE_NAN = false>
__device__ __forceinline__ float warp_max_over_rows(float v) {
#pragma unroll
  for (int d = 4; d <= 16; d *= 2) {
    const float o = __shfl_xor_sync(0xffffffffu, v, d);
    v = PROPAGATE_NAN ? fmax_nan(v, o) : fmaxf(v, o);
  }
  return v;
}
__device__ __forceinline__ float warp_sum_over_rows(float v) {
  v += __shfl_xor_sync(0xffffffffu, v, 4);
  v += __shfl_xor_sync(0xffffffffu, v, 8);
  v += __shfl_xor_sync(0xffffffffu, v, 16);
  return v;
}

// The V scales of group gr of this lane's 8 tokens of a 64-token tile (rows g, g + 8 of m16 tile mt: sv[mt][half])
// and the largest over the tile (zero-filled tokens past the end have s_v = 0). ABS_NAN: the largest |s_v|, NaN
// if any is (the integer PV); else the largest s_v (FP8 PV: quantize_kv's scales are >= 0).
// TP (pk_tokens): the lane's 4 tokens of the two tile pairs, 32 mt + 16 (tig >> 1) + g + 8 half (sv[mt][half]).
template <int NG, bool ABS_NAN, int NT = 4, bool TP = false>
__device__ __forceinline__ float tile_v_scales(float (&sv)[NT][2], const float* vs, int gr, int g, int tig = 0) {
  float smax = 0.f;
#pragma unroll
  for (int mt = 0; mt < NT; ++mt)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int tl = TP ? 32 * mt + 16 * (tig >> 1) + g + 8 * half : mt * 16 + g + 8 * half;
      sv[mt][half] = vs[tl * NG + gr];
      smax = ABS_NAN ? fmax_nan(smax, fabsf(sv[mt][half])) : fmaxf(smax, sv[mt][half]);
    }
  smax = warp_max_over_rows<ABS_NAN>(smax);
  if constexpr (TP) {
    const float o = __shfl_xor_sync(0xffffffffu, smax, 2);
    smax = ABS_NAN ? fmax_nan(smax, o) : fmaxf(smax, o);
  }
  return smax;
}

struct Params {
  const __nv_bfloat16* q;  // [batch, num_qo_heads, HEAD_DIM]
  const uint8_t* k_codes;  // [batch, num_kv_heads, max_seq_len, RB]; paged: [num_pages, num_kv_heads, page, RB]
  const uint8_t* v_codes;
  const float* k_scale;  // [batch, num_kv_heads, max_seq_len, NG]; paged: [num_pages, num_kv_heads, page, NG]
  const float* k_offset;  // channel-wise K: [batch, num_kv_heads, k_blocks, HEAD_DIM]; paged: [num_pages, num_kv_heads, k_blocks, HEAD_DIM]
  const float* v_scale;
  const float* v_offset;
  const int* lens;  // [batch]: contiguous, the sequences' lengths; paged, kv_last_page_len
  const int* kv_indptr;   // paged: [batch + 1], pages of sequence b: kv_indices[kv_indptr[b] ..]; else nullptr
  const int* kv_indices;  // paged: page ids in token order; else nullptr
  int page_shift;         // paged: log2(page size)
  int k_block_shift;      // channel-wise K: log2(tokens per K block), 5..7; else 0
  int k_blocks;           // channel-wise K: K blocks per (sequence, KV head) row, ceil(max_seq_len / k_block);
                          // paged: per page, page / k_block (pages hold whole blocks)
  float* o_part;        // [num_slots, num_qo_heads, HEAD_DIM]: partials of sequences of several chunks
  float* lse_part;      // [num_slots, num_qo_heads], base 2
  __nv_bfloat16* out;   // [batch, num_qo_heads, HEAD_DIM]
  float* lse;           // [batch, num_qo_heads], natural log
  int* counters;        // [batch, num_kv_heads, 1 + merge_groups], zero between launches (each merging CTA resets
                        // the counter it arrived at last)
  int merge_groups;     // group counters a (sequence, KV head) after its own: a sequence of more than kMaxSeqChunks
                        // chunks, at most merge_groups * kMergeGroup, merges in two levels (merge_tree); 0: none
  int fuse_merge;       // 1: the last CTA of a sequence merges (counters); 0: seq_chunks for the merge kernel
  int* seq_chunks;      // [batch, 2]: first slot and chunk count of each sequence (fuse_merge 0)
  int fixed_window;     // 1 (fixed path, fixed_splits >= 2): every slot's partial written, a sequence of one chunk's
                        // too and an empty chunk's as LSE -inf, so that the merge kernel reads no table (its
                        // chunks are slots b * fixed_splits ..): merge_triton.merge_slots(fixed=True)
  int batch, num_kv_heads, gqa, max_seq_len;
  int num_slots;        // work slots per KV head (the grid is num_slots x num_kv_heads CTAs)
  int fixed_splits;     // > 0: every sequence in this many equal chunks (slot = b * fixed_splits + i);
                        // 0: length-aware chunks, about target_chunks of them per KV head (find_work)
  int target_chunks;
  int min_chunk;        // length-aware chunks: at least this many tokens, kMinChunk or kShortChunk (the host's plan)
  int short_tokens;     // length-aware chunks: at least kShortChunk where the batch's tokens are at most this and
                        // its longest sequence is past min_chunk (0: never; the host's plan: splits.plan_short_tokens)
  int long_chunk;       // fixed path past kMaxSeqChunks chunks: chunks of at least min(long_chunk, ceil(len /
                        // kMaxSeqChunks)) tokens; length-aware: the floor of ceil(longest / kMaxSeqChunks) at most
                        // this (longest_chunk_floor) (the host's plan: splits.plan_long_chunk); 0: neither
  int num_indices;      // paged: kv_indices.numel() (page-table reads are clamped to it)
#if FOSCAR_WAVE_FIT
  int wave_slots;       // length-aware chunks: slots a KV head that fill each SM with one CTA, SMs / num_kv_heads (set
                        // by foscar_folded_decode_sm90; 0: no wave fit)
#endif
  int scales_aligned;  // (max_seq_len * NG) % 4 == 0 (paged: page * NG % 4 == 0): 16-byte scale copies stay in one row / page
  long long q_stride_b, q_stride_h;
  float qk_scale_log2;  // sm_scale * log2(e)
  int pv_pack;          // host dispatch only: 1 lets gqa <= 4 take the packed integer PV's instances (pv_packable)
  int max_ctas_per_sm;  // host launch only: 0 as many CTAs an SM as fit; k > 0 at most k (launch() pads the dynamic
                        // shared memory where more would fit; bench/NOTES.md §67)
  int pdl;              // host launch only: 1 launches with programmatic dependent launch (bench/NOTES.md §73)
#if FOSCAR_PAGE_CHECK || (FOSCAR_PREWAIT_PREFETCH > 0 && FOSCAR_PREWAIT_PAGED)
  int num_pages;        // paged: the pool's pages (k_codes' first dimension); the page check (FOSCAR_PAGE_CHECK) and
                        // the prefetch before the wait (FOSCAR_PREWAIT_PAGED) take ids at or past it as bad
#endif
#if FOSCAR_PREWAIT_PREFETCH > 0
  int prewait_ctas;     // set by launch(): CTAs cta_index() < this prefetch before the wait (FOSCAR_PREWAIT_WAVE: the
                        // launch's first wave, SMs x CTAs an SM; else all); 0 where the launch has no PDL
#endif
#if FOSCAR_TIMELINE
  // [1 + kTimelineFields * timeline_records] or nullptr: a record counter, then one record a CTA (the layout below)
  unsigned long long* timeline;
  int timeline_records;
#endif
};

// FOSCAR_TIMELINE builds: thread 0 of each CTA takes record i = atomicAdd(timeline[0], 1) (none past
// timeline_records) and writes, as u64: 0 %globaltimer (ns) at entry, 1 %globaltimer at exit, 2 clock64 at entry,
// 3 after find_work, 4 before the loops, 5 after step 0's wait (its first sub-tile landed; warp 0), 6 after the loops,
// 7 after the epilogue (a CTA with no work: 3, then 7 and 1), 8 %smid | cta_index() << 8 | (b & 0xFFFF) << 24 | iters
// << 40 (warp 0's sub-tiles), 9 start | end << 32 (the chunk's tokens), 10-12 clock64 inside the epilogue
// (FOSCAR_TL_CUT 1-3: its first barrier passed, the 4 warps' rows stored and the second barrier passed, the output or
// partial written; a CTA with no work: 0). bench/timeline.py reads them (bench/NOTES.md §66, §72).
constexpr int kTimelineFields = 13;
#if FOSCAR_TIMELINE
__device__ __forceinline__ unsigned long long global_timer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
__device__ __forceinline__ unsigned sm_id() {
  unsigned r;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
  return r;
}
#define FOSCAR_TL(k, v)                                                           \
  do {                                                                            \
    if (tl_rec != nullptr && threadIdx.x == 0) tl_rec[k] = (unsigned long long)(v); \
  } while (0)
#else  // the stamps' arguments are not compiled either
#define FOSCAR_TL(k, v) \
  do {                  \
  } while (0)
#endif
#if FOSCAR_TIMELINE
// thread 0's clock at the epilogue's cuts 1-3, in shared memory (the epilogue has no record pointer; stamps 10-12)
__device__ __forceinline__ unsigned long long* tl_epilogue_cuts() {
  __shared__ unsigned long long clk[3];
  return clk;
}
#define FOSCAR_TL_CUT(n)                                                   \
  do {                                                                     \
    if (threadIdx.x == 0) tl_epilogue_cuts()[(n) - 1] = clock64();         \
  } while (0)
#else
#define FOSCAR_TL_CUT(n) \
  do {                   \
  } while (0)
#endif

// ---- Length-aware split-KV (DESIGN §10): which chunk of which sequence a CTA decodes.
constexpr int kChunkAlign = kWarps * kTileTokens;  // 256 tokens: one CTA iteration
// (the host mirror, foscar/kernels/splits.py, has these four as CHUNK_ALIGN_TOKENS, MIN_CHUNK_TOKENS,
// SHORT_CHUNK_TOKENS and MAX_SPLIT_TOKENS; tests/test_splits.py reads the values here)
constexpr int kMinChunk = 512;                     // at least two iterations per chunk (Params::min_chunk) ...
constexpr int kShortChunk = 256;                   // ... or one, where the host's plan says so (SHORT_CHUNK_TOKENS)
constexpr int kMaxChunk = 32768;                   // first choice of chunk at most this (bench/NOTES.md §14)
static_assert(kChunkAlign == 256 && kMinChunk == 2 * kChunkAlign && kShortChunk == kChunkAlign,
              "splits.py mirrors these values");
constexpr int kMaxLength = 1 << 30;                // tokens per sequence, at most (chunk arithmetic stays in int)
// length-aware chunks: no sequence in more than this many (MAX_CHUNKS_PER_SEQUENCE in splits.py), unless each is at
// least the plan's long_chunk (one or two KV heads, bench/NOTES.md §106): the in-kernel
// merge takes up to 32 in one round of loads at head_dim 128 and more in rounds of 16, each an L2 round trip on the
// sequence's last CTA; at one KV head, 128 chunks of 256 tokens took INT2 1 x 32K 20.5 us where 32 of 1K took 9.6
// (bench/NOTES.md §101)
constexpr int kMaxSeqChunks = 32;
// chunks a group of merge_tree (a sequence of more than kMaxSeqChunks, bench/NOTES.md §108-§109): its last CTA merges
// them into the group's first chunk's partial. Here, not under FOSCAR_FUSED_MERGE: the C entry reads kMaxGqa in
// every build.
constexpr int kMergeGroup = 16;
constexpr int kMaxGqa = 8;  // query heads a KV head, at most (foscar_folded_decode_sm90 refuses more)

struct Work {
  int b;       // sequence
  int index;   // chunk index within the sequence
  int count;   // chunks of the sequence (0: this slot has no work)
  int first;   // slot of the sequence's chunk 0
  int start, end;  // token range [start, end) of this chunk
  int page0;   // paged: kv_indptr[b] (clamped)
};

// Length of sequence b, clamped to what the cache holds: contiguous, 0..max_seq_len; paged, the
// pages in kv_indptr[b]..kv_indptr[b + 1] clipped to kv_indices, and kv_last_page_len to 0..page.
// clamp_length / paged_length do the clamping on values already loaded (find_work's one pass issues
// all of a lane's loads first).
__device__ __forceinline__ int clamp_length(const Params& p, int len) {
  return min(max(len, 0), min(p.max_seq_len, kMaxLength));
}

// a length or a page-table entry: RELAXED (before griddepcontrol.wait, FOSCAR_PREWAIT_PREFETCH), ld.relaxed.gpu: a
// strong read that never enters L1 (the read after the wait must not hit a stale line); the value, which the previous
// grid may still be writing, may be stale and only places the prefetch; else a plain load
template <bool RELAXED>
__device__ __forceinline__ int load_len(const int* ptr) {
  if constexpr (RELAXED) {
    int v;
    asm volatile("ld.relaxed.gpu.global.s32 %0, [%1];\n" : "=r"(v) : "l"(ptr));
    return v;
  } else {
    return *ptr;
  }
}

// lo_raw, hi_raw: kv_indptr[b], kv_indptr[b + 1]; last_raw: kv_last_page_len[b]
__device__ __forceinline__ int paged_length(const Params& p, int lo_raw, int hi_raw, int last_raw, int& page0) {
  const int lo = min(max(lo_raw, 0), p.num_indices);
  const int hi = min(max(hi_raw, lo), p.num_indices);
  page0 = lo;
  const int last = min(max(last_raw, 0), 1 << p.page_shift);
  // FlashInfer's rule, in 64 bits and at most 2^30 tokens (a garbage kv_indptr cannot overflow it)
  const int pages = min(hi - lo, (kMaxLength >> p.page_shift) + 1);  // at most ~2^30 tokens: no int overflow
  return pages > 0 ? ((pages - 1) << p.page_shift) + last : 0;
}

template <bool PAGED, bool RELAXED = false>
__device__ __forceinline__ int seq_length(const Params& p, int b, int* page0 = nullptr) {
  if constexpr (PAGED) {
    int lo;
    const int len = paged_length(p, load_len<RELAXED>(p.kv_indptr + b), load_len<RELAXED>(p.kv_indptr + b + 1),
                                 load_len<RELAXED>(p.lens + b), lo);
    if (page0) *page0 = lo;
    return len;
  } else {
    return clamp_length(p, load_len<RELAXED>(p.lens + b));
  }
}

// Whether an instance's grid may be two-dimensional (FOSCAR_GRID_2D): token-wise K only; with it ptxas spilled 56
// bytes in the FP8 paged channel-wise INT2 G=32 instance (bench/NOTES.md §77)
template <bool CH>
__host__ __device__ constexpr bool grid_2d() { return FOSCAR_GRID_2D && !CH; }

// The CTA's slot and KV head: blockIdx.y and blockIdx.x in a two-dimensional grid (launch(), G2D = grid_2d; its
// gridDim.x is num_kv_heads), else blockIdx.x / num_kv_heads and its remainder (a one-dimensional grid: the same
// order, block slot * num_kv_heads + hkv)
template <bool G2D>
__device__ __forceinline__ bool launched_2d(const Params& p) {
  return G2D && gridDim.x == (unsigned)p.num_kv_heads;
}
template <bool G2D>
__device__ __forceinline__ int cta_slot(const Params& p) {
  return launched_2d<G2D>(p) ? (int)blockIdx.y : (int)(blockIdx.x / p.num_kv_heads);
}
template <bool G2D>
__device__ __forceinline__ int cta_kv_head(const Params& p) {
  return launched_2d<G2D>(p) ? (int)blockIdx.x : (int)(blockIdx.x % p.num_kv_heads);
}
// the CTA's block index in launch order (slot * num_kv_heads + hkv; the timeline's records)
__device__ __forceinline__ unsigned long long cta_index() {
  return blockIdx.x + (unsigned long long)blockIdx.y * gridDim.x;
}

template <bool G2D>
__device__ __forceinline__ bool slot_is_first(const Params& p, int first_slot) {
  return cta_slot<G2D>(p) == first_slot;
}

__device__ __forceinline__ int chunks_of(int len, int chunk) { return len > 0 ? (len + chunk - 1) / chunk : 1; }

// Length-aware chunks: ceil(len / chunk), 1 for an empty sequence (chunks_of); in a FOSCAR_KEEP_SHORT=1 build 1 for
// any sequence of at most min_chunk tokens. The chunk is at least min_chunk except in a short batch cut in chunks of
// kShortChunk, so only there do the two differ (one sequence of 1024 among 63 of 512 over 1 KV head: 130 -> 67 CTAs,
// 64 -> 1 merged sequences; bench/NOTES.md §119)
__device__ __forceinline__ int aware_chunks(int len, int chunk, int min_chunk) {
  return FOSCAR_KEEP_SHORT && len <= min_chunk ? 1 : chunks_of(len, chunk);
}

// The least chunk of a batch whose longest sequence has `longest` tokens (0 .. kMaxLength): ceil(longest /
// kMaxSeqChunks) rounded up to kChunkAlign, at most kMaxChunk, so that no sequence takes more than kMaxSeqChunks
// chunks, or chunks of kMaxChunk past kMaxSeqChunks * kMaxChunk tokens (as the host's plan_work caps its counts);
// where the plan has a long chunk (p.long_chunk, one or two KV heads: splits.plan_long_chunk), at most that, so a long
// sequence takes more than kMaxSeqChunks chunks, each of at least long_chunk tokens (splits.first_chunk mirrors this;
// bench/NOTES.md §106)
__device__ __forceinline__ int longest_chunk_floor(const Params& p, int longest) {
  if (!FOSCAR_SEQ_CHUNK_CAP) return 0;
  const int least =
      min(((longest + kMaxSeqChunks - 1) / kMaxSeqChunks + kChunkAlign - 1) / kChunkAlign * kChunkAlign, kMaxChunk);
  return p.long_chunk ? min(least, p.long_chunk) : least;
}

// FOSCAR_WAVE_FIT: whether length-aware chunks of `chunk` tokens, `n` of them a KV head over a batch of `total` tokens,
// make more CTAs than one an SM and at most two an SM (p.wave_slots: slots a KV head at one CTA an SM) while a chunk
// grown until one CTA an SM holds them all may be at most 1.7 times as long: its least is ceil(total / wave_slots)
// rounded up to kChunkAlign (c tokens a chunk take at least total / c chunks). The one-pass path leaves such a batch to
// the general path, which grows the chunk (splits.schedule's wave_slots; bench/NOTES.md §121)
__device__ __forceinline__ bool wave_fit_may_take(const Params& p, int n, int chunk, long long total) {
#if FOSCAR_WAVE_FIT
  if (p.wave_slots <= 0 || p.wave_slots < p.batch || n <= p.wave_slots || n > 2 * p.wave_slots) return false;
  const long long least = (total + p.wave_slots - 1) / p.wave_slots;
  return (least + kChunkAlign - 1) / kChunkAlign * kChunkAlign * 10 <= (long long)chunk * 17;
#else
  return false;
#endif
}

// Every CTA of the launch derives the same schedule from the lengths (no host sync, no extra kernel; the plan depends
// on shapes only). Length-aware mode: total tokens T over the batch, chunk C = min(T / target_chunks, 32768), at
// least p.min_chunk (512, or 256 where the host's plan fits one CTA an SM: splits.plan_min_chunk; 256 too where T <=
// p.short_tokens and the longest sequence is past p.min_chunk, splits.plan_short_tokens), rounded up to 256, at
// least min(the longest sequence's length / kMaxSeqChunks, 32768) or of p.long_chunk where that is less
// (longest_chunk_floor), then grown until the chunks fit in the num_slots slots (>= batch; the host sets num_slots =
// target_chunks = batch x the fitted split count, so a uniform batch fits at once); sequence b in ceil(len_b / C)
// chunks (aware_chunks; 1 for an empty sequence, which writes a zero row and LSE -inf), slots in sequence order.
// ONE_CHUNK: fixed_splits == 1 takes the one-chunk path below.
template <bool PAGED, bool ONE_CHUNK, bool RELAXED = false>
__device__ Work find_work(const Params& p, int slot) {
  Work w{0, 0, 0, 0, 0, 0, 0};
  if (ONE_CHUNK && p.fixed_splits == 1) {  // one chunk a sequence: slot b is sequence b's tokens [0, len), no division
    // (the lines below give the same Work: a chunk of len rounded up to 256, at least 256, so one chunk; the
    // run-time divisions by fixed_splits and by the chunk were ~75 dependent instructions around the length's
    // load, bench/NOTES.md §74, §75)
    if (slot >= p.batch) return w;
    w.end = seq_length<PAGED, RELAXED>(p, slot, &w.page0);
    w.b = slot; w.count = 1; w.first = slot;
    return w;
  }
  if (p.fixed_splits > 0) {
    const int b = slot / p.fixed_splits, i = slot % p.fixed_splits;
    if (b >= p.batch) return w;
    const int len = seq_length<PAGED, RELAXED>(p, b, &w.page0);
    int chunk = (len + p.fixed_splits - 1) / p.fixed_splits;
    if (p.long_chunk && p.fixed_splits > kMaxSeqChunks) {
      // a plan past kMaxSeqChunks chunks (a batch of one) was sized at the capacity: a shorter length keeps the bound
      // of kMaxSeqChunks unless its chunks stay long_chunk long (splits.schedule mirrors this; bench/NOTES.md §105)
      chunk = max(chunk, min(p.long_chunk, (len + kMaxSeqChunks - 1) / kMaxSeqChunks));
    }
    chunk = max(kChunkAlign, (chunk + kChunkAlign - 1) / kChunkAlign * kChunkAlign);
    const int n = chunks_of(len, chunk);
    if (i >= n) return w;
    w.b = b; w.index = i; w.count = n; w.first = b * p.fixed_splits;
    w.start = i * chunk; w.end = min(w.start + chunk, len);
    return w;
  }
  // every warp derives the schedule on its own (shuffles only, no block barrier): lane l holds the
  // sequences l, l + 32, ...; one round of independent length loads, then L1 hits
  const int lane = threadIdx.x % 32;
  // C from the batch's T tokens (before any growing); total: T, the same on every lane
  auto chunk_of_total = [&](long long total, int longest) {
    int chunk;
    if (total < (1ll << 31)) {  // 32-bit divisions (64-bit ones are a long software routine)
      const unsigned t = (unsigned)total;
      chunk = (int)min((t + p.target_chunks - 1) / (unsigned)p.target_chunks, (unsigned)kMaxChunk);
    } else {
      chunk = (int)min((total + p.target_chunks - 1) / p.target_chunks, (long long)kMaxChunk);
    }
    // a short batch (T at most the plan's bound) whose longest sequence is past min_chunk: chunks of one iteration.
    // A batch of sequences of at most min_chunk tokens keeps one CTA a sequence and no merge (64 x 512 over 1 KV
    // head measured 1.30x slower cut in chunks of 256, bench/NOTES.md §118). A bound of 0: never (an empty batch
    // has longest 0)
    const int least = total <= p.short_tokens && longest > p.min_chunk ? kShortChunk : p.min_chunk;
    return (max(chunk, least) + kChunkAlign - 1) / kChunkAlign * kChunkAlign;
  };
  auto first_chunk = [&](long long total, int longest) {  // total: this lane's tokens; longest: the batch's
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) total += __shfl_xor_sync(0xffffffffu, total, d);
    return chunk_of_total(total, longest);
  };
  // the sequence whose n chunks start at slot `first` on the lanes of `hit` (its lowest lane), found
  auto take = [&](unsigned hit, int b, int first, int n, int len, int chunk) {
    const int src = __ffs(hit) - 1;
    w.b = __shfl_sync(0xffffffffu, b, src);
    w.first = __shfl_sync(0xffffffffu, first, src);
    w.count = __shfl_sync(0xffffffffu, n, src);
    const int blen = __shfl_sync(0xffffffffu, len, src);
    w.index = slot - w.first;
    w.start = w.index * chunk;
    w.end = w.index + 1 < w.count ? w.start + chunk : blen;  // the last chunk (a short sequence's only one) ends at len
    // (paged: reloaded, an L1 hit; a shuffle of it moved the register allocation of the paged main loops)
    if constexpr (PAGED) w.page0 = min(max(load_len<RELAXED>(p.kv_indptr + w.b), 0), p.num_indices);
  };
  // One pass, for up to 32 x K sequences whose first chunk fits the slots (every uniform batch; the host
  // sizes num_slots for it): lane l holds the K sequences K*l .. K*l + K - 1 (slot order = sequence order
  // = lane order), their lengths loaded in one round and kept in registers; one reduction and one
  // division for the chunk, one warp scan over the lanes' chunk counts, and the lane whose slots hold
  // `slot` walks its K sequences. The same Work as the general path below (bench/NOTES.md §30: its
  // three passes cost ~0.7 us at 1 x 8K; §39: up to 128 sequences). false: the chunks do not fit at
  // the first chunk size, the general path grows it.
  auto one_pass = [&](auto per_lane) -> bool {
    constexpr int K = decltype(per_lane)::value;
    const int b0 = lane * K;
    int len[K];
    if constexpr (PAGED) {  // every load first: K + 1 kv_indptr entries and K last-page lengths
      int ptr[K + 1], last[K];
#pragma unroll
      for (int j = 0; j <= K; ++j) ptr[j] = b0 + j <= p.batch ? load_len<RELAXED>(p.kv_indptr + b0 + j) : 0;
#pragma unroll
      for (int j = 0; j < K; ++j) last[j] = b0 + j < p.batch ? load_len<RELAXED>(p.lens + b0 + j) : 0;
#pragma unroll
      for (int j = 0; j < K; ++j) {
        int page0;  // (take reloads it for the slot's sequence)
        len[j] = paged_length(p, ptr[j], ptr[j + 1], last[j], page0);
        if (b0 + j >= p.batch) len[j] = 0;
      }
    } else {
#pragma unroll
      for (int j = 0; j < K; ++j) len[j] = b0 + j < p.batch ? load_len<RELAXED>(p.lens + b0 + j) : 0;
#pragma unroll
      for (int j = 0; j < K; ++j) len[j] = clamp_length(p, len[j]);
    }
    // T over the warp: K <= 4 lengths of up to 2^30 a lane, summed as 16-bit halves with two independent
    // warp reductions (redux.sync, one instruction each; sums below 2^23 per half), exactly
    unsigned lo = 0, hi = 0;
#pragma unroll
    for (int j = 0; j < K; ++j) {
      lo += (unsigned)len[j] & 0xffffu;
      hi += (unsigned)len[j] >> 16;
    }
    lo = __reduce_add_sync(0xffffffffu, lo);
    hi = __reduce_add_sync(0xffffffffu, hi);
    int longest = 0;  // the batch's longest sequence (one redux.sync): at most kMaxSeqChunks chunks a sequence
#pragma unroll
    for (int j = 0; j < K; ++j) longest = max(longest, len[j]);
    longest = (int)__reduce_max_sync(0xffffffffu, (unsigned)longest);
    const int chunk = max(chunk_of_total(((long long)hi << 16) + lo, longest), longest_chunk_floor(p, longest));
    // K chunk counts ceil(len / chunk): one reciprocal m = floor((2^32 - 1) / chunk) for all of them;
    // for x = len + chunk - 1 < 2^31, umulhi(x, m) is floor(x / chunk) or one less (the error of m is
    // below x / 2^32 < 1/2 plus x / (chunk 2^32)), so one correction step makes it exact
    const unsigned m = K > 1 ? 0xffffffffu / (unsigned)chunk : 0u;
    int n[K], lane_n = 0;
#pragma unroll
    for (int j = 0; j < K; ++j) {
      const unsigned x = (unsigned)(len[j] + chunk - 1);
      unsigned q;
      if constexpr (K > 1) {
        q = __umulhi(x, m);
        if (x - q * (unsigned)chunk >= (unsigned)chunk) ++q;
      } else {
        q = x / (unsigned)chunk;
      }
      n[j] = b0 + j >= p.batch ? 0 : len[j] > (FOSCAR_KEEP_SHORT ? p.min_chunk : 0) ? (int)q : 1;  // (aware_chunks)
      lane_n += n[j];
    }
    // the total (one redux.sync) does not wait for the scan
    if (__reduce_add_sync(0xffffffffu, lane_n) > p.num_slots) return false;
#if FOSCAR_WAVE_FIT
    if (wave_fit_may_take(p, __reduce_add_sync(0xffffffffu, lane_n), chunk, ((long long)hi << 16) + lo)) return false;
#endif
    int incl = lane_n;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const int v = __shfl_up_sync(0xffffffffu, incl, d);
      if (lane >= d) incl += v;
    }
    // this lane's sequence that holds `slot`, if its slots do: past a sequence's last slot, the next
    int first = incl - lane_n, nb = n[0], lb = len[0], bb = b0;
    const unsigned hit = __ballot_sync(0xffffffffu, lane_n > 0 && slot >= first && slot < first + lane_n);
#pragma unroll
    for (int j = 1; j < K; ++j) {
      if (slot >= first + nb) {
        first += nb; nb = n[j]; lb = len[j]; bb = b0 + j;
      }
    }
    if (hit) take(hit, bb, first, nb, lb, chunk);
    return true;  // no hit: past the last chunk, no work
  };
  if (p.batch <= 32) {
    if (one_pass(std::integral_constant<int, 1>{})) return w;
  } else if (p.batch <= 128) {
    if (one_pass(std::integral_constant<int, 4>{})) return w;
  }
  long long total = 0;
  int longest = 0;
  for (int b = lane; b < p.batch; b += 32) {
    const int len = seq_length<PAGED, RELAXED>(p, b);
    total += len;
    longest = max(longest, len);
  }
  longest = (int)__reduce_max_sync(0xffffffffu, (unsigned)longest);
  int chunk = max(first_chunk(total, longest), longest_chunk_floor(p, longest));
  // the chunks must fit in the grid's num_slots (>= batch): grow the chunk until they do (uniform
  // batches fit at once; a ragged one takes a step or two, over lengths already in L1)
  for (;;) {
    int n = 0;
    for (int b = lane; b < p.batch; b += 32) n += aware_chunks(seq_length<PAGED, RELAXED>(p, b), chunk, p.min_chunk);
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) n += __shfl_xor_sync(0xffffffffu, n, d);
    if (n <= p.num_slots || chunk >= (1 << 30)) break;
    const long long grown = (long long)chunk * n / p.num_slots + kChunkAlign;
    chunk = (int)min(grown / kChunkAlign * kChunkAlign, (long long)(1 << 30));
  }
#if FOSCAR_WAVE_FIT
  {  // more CTAs than SMs, at most two an SM: chunks grown to one CTA an SM where at most 1.7 times as long
    auto count = [&](int c) {
      int n = 0;
      for (int b = lane; b < p.batch; b += 32) n += aware_chunks(seq_length<PAGED, RELAXED>(p, b), c, p.min_chunk);
#pragma unroll
      for (int d = 16; d > 0; d >>= 1) n += __shfl_xor_sync(0xffffffffu, n, d);
      return n;
    };
    long long all = total;
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) all += __shfl_xor_sync(0xffffffffu, all, d);
    if (wave_fit_may_take(p, count(chunk), chunk, all)) {
      int wide = chunk;
      for (;;) {
        const int n = count(wide);
        if (n <= p.wave_slots || wide >= (1 << 30)) break;
        const long long grown = (long long)wide * n / p.wave_slots + kChunkAlign;
        wide = (int)min(grown / kChunkAlign * kChunkAlign, (long long)(1 << 30));
      }
      if ((long long)wide * 10 <= (long long)chunk * 17) chunk = wide;
    }
  }
#endif
  // slots in sequence order: walk the batch 32 sequences at a time, a warp scan per round
  int base = 0;
  for (int b0 = 0; b0 < p.batch; b0 += 32) {
    const int b = b0 + lane;
    const int len = b < p.batch ? seq_length<PAGED, RELAXED>(p, b) : 0;
    const int n = b < p.batch ? aware_chunks(len, chunk, p.min_chunk) : 0;
    int incl = n;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const int v = __shfl_up_sync(0xffffffffu, incl, d);
      if (lane >= d) incl += v;
    }
    const int first = base + incl - n;
    const unsigned hit = __ballot_sync(0xffffffffu, n > 0 && slot >= first && slot < first + n);
    if (hit) {
      take(hit, b, first, n, len, chunk);
      return w;
    }
    base = __shfl_sync(0xffffffffu, incl, 31) + base;
    if (slot < base) break;  // (not reached: the slot would have been found)
  }
  return w;  // past the last chunk: no work
}

// Final output of V channels of one (sequence, query head) from the merged numerators / denominator / base-2
// max: den 0 (no token): zero row, LSE -inf; NaN (a NaN in the query or the cache): NaN, LSE NaN. One IEEE
// reciprocal per row and V products (V divisions were V reciprocals with their range checks, each in its own
// branch region, one after another on the epilogue's chain: bench/NOTES.md §72); the LSE's log2 by MUFU.LG2
// (lg2.approx, absolute error ~2^-22; log2f was a ~25-instruction dependent polynomial). Not bit-identical to
// num / den: within 1 ulp of fp32 before the output's rounding.
template <int V>
__device__ __forceinline__ void finalize_row(const float (&num)[V], float den, float mx, float (&o)[V], float& lse2) {
  if (den > 0.f) {
    const float inv = 1.f / den;
#pragma unroll
    for (int v = 0; v < V; ++v) o[v] = num[v] * inv;
    lse2 = mx + fast_log2(den);
  } else if (den == 0.f) {
#pragma unroll
    for (int v = 0; v < V; ++v) o[v] = 0.f;
    lse2 = -INFINITY;
  } else {
#pragma unroll
    for (int v = 0; v < V; ++v) o[v] = __int_as_float(0x7fffffff);
    lse2 = __int_as_float(0x7fffffff);
  }
}

constexpr float kLn2 = 0.6931471805599453f;

// 4 output values, rounded to BF16, as one 8-byte store at dst (8-byte aligned: 4 adjacent channels of a row)
__device__ __forceinline__ void store_bf16x4(__nv_bfloat16* dst, const float (&o)[4]) {
  const __nv_bfloat162 lo = __floats2bfloat162_rn(o[0], o[1]), hi = __floats2bfloat162_rn(o[2], o[3]);
  *reinterpret_cast<uint2*>(dst) =
      make_uint2(*reinterpret_cast<const uint32_t*>(&lo), *reinterpret_cast<const uint32_t*>(&hi));
}

#if FOSCAR_FUSED_MERGE
// Split-KV merge inside the decode kernel (flash-decoding's second pass, fused; FOSCAR_MERGE=fused,
// bench/NOTES.md §17 and §29): every CTA of a sequence of several chunks has written its partial; the CTA
// that arrives last at an atomic counter per (sequence, KV head) merges them for its query heads:
//   m = max_i lse_i,  w_i = 2^(lse_i - m),  out = sum_i w_i o_i / sum_i w_i,  lse = m + log2(sum_i w_i)
// (empty chunks carry lse -inf and weigh 0; a NaN LSE makes the row NaN). The counter wraps back to 0
// on the last arrival (atom.inc), so the counters stay zero between launches.
//
// Not inlined (__noinline__, arguments by value): inlined, its code moved ptxas's register allocation of
// the main loops (NOTES §17: spills in three channel-wise instances); called, it moves them less (NOTES
// §29: 110 of 184 loop counts identical, the bench's D=128 G=128 folded instances in every number).
//
// One L2 round a batch of 8 or 16 chunks (merge_rows), straight into registers: each thread owns 4 adjacent outputs (a
// float4) of the gqa x HEAD_DIM block, loads its head's LSE and its float4 of every chunk of the batch at once (__ldcg,
// 2 x 8 or 2 x 16 loads in flight), and keeps the merge's running max, denominator and sums itself, rescaled between
// batches as in the online softmax. No shared memory, no barrier, no division: session 10's form staged every partial
// in shared memory with cp.async (a runtime division per 16-byte piece), took each head's weights with warp
// reductions, then summed one output per thread from shared memory, ~1000 dependent instructions a thread after the
// last chunk, which made every split decode 2.4-5 us slower at batch 1 than the merge kernel (bench/NOTES.md §78,
// §79).
//
// Ordering (PTX ISA, "Memory Consistency Model": "Release and Acquire Patterns", "Causality Order",
// and bar.sync's "Memory ordering"): each thread's partial stores precede, in program order, its
// bar.sync, which synchronizes with thread 0's; thread 0's atom.acq_rel.gpu is a release at gpu scope,
// so those stores precede it in causality order. The last CTA's atom.acq_rel.gpu reads the value
// written by (the release sequence of) every other CTA's atom and is an acquire, so it synchronizes with
// each of them; its bar.red then orders every thread's reads after it. That is the message-passing
// pattern the model guarantees without a fence.sc (the two __threadfence() of session 6, MEMBAR.SC.GPU
// each). The partials are read with ld.global.cg (L2, not L1) besides.
struct MergeArgs {        // one (sequence, KV head), by value: no reference to the kernel's parameters
  float* o_part;          // chunk 0's [gqa, HEAD_DIM] block; chunk i at + i * row_stride * HEAD_DIM (merge_tree
                          // writes a group's merged partial over its first chunk's)
  float* lse_part;        // chunk 0's [gqa] base-2 LSEs; chunk i at + i * row_stride
  __nv_bfloat16* out;     // [gqa, HEAD_DIM]: the sequence's rows of this KV head's query heads
  float* lse;             // [gqa], natural log
  unsigned* counter;      // arrivals of this (sequence, KV head) in this launch (merge_tree: its group counters follow)
  int row_stride;         // num_qo_heads (rows of o_part / lse_part per slot)
  int gqa, count;         // query heads per KV head; chunks of the sequence (>= 2)
};
// chunks a thread loads at once: 8 where a sequence has at most 8 chunks (16 measured 2-3% slower at uniform batches
// of 8, its weights and sums for 16 slots), else 16 (one L2 round trip fewer a batch: 2-3% faster at batch 1, 16-32
// chunks, ~1% on ragged batches of 8; bench/NOTES.md §79). 17-32 chunks at head_dim 128 take merge_rows_warp where the
// instance allows it (merge_chunks).
constexpr int kMergeBatchSmall = 8, kMergeBatchLarge = 16;

// A merged row's 4 channels from float idx of the [gqa, HEAD_DIM] block (bf16) and, at channel 0 of query head
// head (idx / HEAD_DIM), its LSE (natural log): finalize_row over the weighted sums num, den with the max m; nan (a NaN LSE among the chunks) makes
// the row and its LSE NaN. merge_rows' and merge_rows_warp's end.
template <int HEAD_DIM>
__device__ __forceinline__ void write_merged(const MergeArgs& a, int idx, int head, const float (&num)[4], float den,
                                             float m, bool nan) {
  float o[4], lse2;
  finalize_row<4>(num, nan ? __int_as_float(0x7fffffff) : den, m, o, lse2);
  store_bf16x4(a.out + idx, o);
  if (idx % HEAD_DIM == 0) a.lse[head] = lse2 * kLn2;
}

// One thread's float4 at idx (head idx / HEAD_DIM) of the gqa x HEAD_DIM block over a.count chunks, BATCH loads in
// flight a round: the running max m, the denominator den and the weighted sums num of the online softmax, nan where
// a chunk's LSE is NaN (merge_rows, merge_group)
template <int HEAD_DIM, int BATCH>
__device__ __forceinline__ void merge_float4(const MergeArgs& a, int idx, int head, float (&num)[4], float& den,
                                             float& m, bool& nan) {
  const long long chunk_floats = (long long)a.row_stride * HEAD_DIM;
  const float* lp = a.lse_part + head;
  const float* op = a.o_part + idx;
  m = -INFINITY, den = 0.f, num[0] = num[1] = num[2] = num[3] = 0.f;
  nan = false;
  for (int i0 = 0; i0 < a.count; i0 += BATCH) {
    float l[BATCH];
    float4 o[BATCH];
#pragma unroll
    for (int u = 0; u < BATCH; ++u) {  // past the last chunk: weight 0 (lse -inf), zeros
      const bool live = i0 + u < a.count;
      const long long i = live ? i0 + u : 0;
      l[u] = live ? __ldcg(lp + i * a.row_stride) : -INFINITY;
      o[u] = live ? __ldcg(reinterpret_cast<const float4*>(op + i * chunk_floats)) : make_float4(0.f, 0.f, 0.f, 0.f);
    }
    float mx = m;
#pragma unroll
    for (int u = 0; u < BATCH; ++u) {
      nan |= l[u] != l[u];
      mx = fmaxf(mx, l[u]);
    }
    const float m_safe = mx == -INFINITY ? 0.f : mx;
    const float alpha = fast_exp2(m - m_safe);  // 0 while nothing was accumulated (m -inf)
    den *= alpha;
#pragma unroll
    for (int c = 0; c < 4; ++c) num[c] *= alpha;
#pragma unroll
    for (int u = 0; u < BATCH; ++u) {
      const float w = fast_exp2(l[u] - m_safe);  // 0 for an empty chunk (-inf)
      den += w;
      num[0] = fmaf(w, o[u].x, num[0]);
      num[1] = fmaf(w, o[u].y, num[1]);
      num[2] = fmaf(w, o[u].z, num[2]);
      num[3] = fmaf(w, o[u].w, num[3]);
    }
    m = mx;
  }
}

// The merge of one (sequence, KV head) by the last CTA (merge_chunks): BATCH chunks a thread in flight
template <int HEAD_DIM, int BATCH>
__device__ __forceinline__ void merge_rows(const MergeArgs& a) {
  static_assert(HEAD_DIM % 4 == 0, "merge_rows: float4 units of a head's row");
  constexpr int kThreads = kWarps * 32;
  const int row = a.gqa * HEAD_DIM;  // floats of one chunk's block
  for (int idx = 4 * threadIdx.x; idx < row; idx += 4 * kThreads) {
    const int head = idx / HEAD_DIM;
    float m, den, num[4];
    bool nan;
    merge_float4<HEAD_DIM, BATCH>(a, idx, head, num, den, m, nan);
    write_merged<HEAD_DIM>(a, idx, head, num, den, m, nan);
  }
}


// merge_tree's first level: a.count (<= kMergeGroup) chunks merged into chunk 0's partial, in place: each thread
// overwrites only the float4s it read itself, and a head's LSE (read by every thread of the head's row) after a
// barrier. A NaN LSE among the chunks makes the group's partial and LSE NaN (finalize_row), an all-empty group's LSE
// is -inf (weight 0). The idx steps are not unrolled: unrolled, their loads overlapped and the FP8 channel-wise
// G=32 instance spilled 56 bytes at 168 registers.
template <int HEAD_DIM>
__device__ __forceinline__ void merge_group(const MergeArgs& a) {
  constexpr int kThreads = kWarps * 32;
  static_assert((4 * kThreads) % HEAD_DIM == 0,  // a head over two steps would read its LSE after the first's write
                "merge_group: every idx step must hold whole heads (a head's LSE is overwritten at its step's end)");
  constexpr int kIters = (kMaxGqa * HEAD_DIM + 4 * kThreads - 1) / (4 * kThreads);  // idx steps a thread, at most
  const int row = a.gqa * HEAD_DIM;
#pragma unroll 1
  for (int it = 0; it < kIters; ++it) {  // the same count in every thread: the barrier below is uniform
    const int idx = 4 * threadIdx.x + it * 4 * kThreads;
    float lse2 = 0.f;
    if (idx < row) {
      float m, den, num[4], o[4];
      bool nan;
      merge_float4<HEAD_DIM, kMergeGroup>(a, idx, idx / HEAD_DIM, num, den, m, nan);
      finalize_row<4>(num, nan ? __int_as_float(0x7fffffff) : den, m, o, lse2);
      *reinterpret_cast<float4*>(a.o_part + idx) = make_float4(o[0], o[1], o[2], o[3]);
    }
    __syncthreads();  // every read of this step's heads' LSEs before chunk 0's are overwritten
    if (idx < row && idx % HEAD_DIM == 0) a.lse_part[idx / HEAD_DIM] = lse2;
  }
}

// Arrival at a counter of `count` arrivals (atom.acq_rel.gpu, wrapping to 0 on the last: atom.inc, old >= count - 1
// -> 0): whether this CTA arrived last. Every thread's stores before it (the barrier; ordering: merge_chunks).
__device__ __forceinline__ bool arrive_last(unsigned* counter, int count) {
  __syncthreads();
  int last = 0;
  if (threadIdx.x == 0) {
    unsigned old;
    asm volatile("atom.acq_rel.gpu.global.inc.u32 %0, [%1], %2;\n"
                 : "=r"(old) : "l"(counter), "r"((unsigned)(count - 1)) : "memory");
    last = old == (unsigned)(count - 1);
  }
  return __syncthreads_or(last);
}

// A sequence of more than kMaxSeqChunks chunks merged in two levels (bench/NOTES.md §108): the last CTA of each group
// of kMergeGroup chunks (chunk index / kMergeGroup, its own counter after the sequence's) merges the group into its
// first chunk's partial (merge_group), and the last of those merges the groups' partials (slots kMergeGroup apart).
// One CTA merging 128 chunks of gqa 8 x 128 floats read 512 KB from L2 in 16 dependent rounds after the loop; here
// the groups merge while other CTAs stream, and the last reads at most ceil(count / 16) partials. Same ordering as
// merge_chunks at each level (the group's partial stores precede its arrival at the sequence's counter).
// Called in place of merge_chunks (__noinline__ as it is) where Params::merge_groups covers the sequence's chunks:
// `index` this CTA's chunk of the sequence; instances of BF16 operands only (the call site says why).
template <int HEAD_DIM>
__device__ __noinline__ void merge_tree(MergeArgs a, int index) {
  const int g = index / kMergeGroup, first = g * kMergeGroup;
  const int groups = (a.count + kMergeGroup - 1) / kMergeGroup;
  MergeArgs ga = a;
  ga.o_part += (long long)first * a.row_stride * HEAD_DIM;
  ga.lse_part += (long long)first * a.row_stride;
  ga.count = min(kMergeGroup, a.count - first);
  if (!arrive_last(a.counter + 1 + g, ga.count)) return;
  merge_group<HEAD_DIM>(ga);
  if (!arrive_last(a.counter, groups)) return;
  MergeArgs ta = a;
  ta.row_stride = a.row_stride * kMergeGroup;  // group j's partial: chunk j * kMergeGroup's rows
  ta.count = groups;
  if (groups <= kMergeBatchSmall)
    merge_rows<HEAD_DIM, kMergeBatchSmall>(ta);
  else
    merge_rows<HEAD_DIM, kMergeBatchLarge>(ta);
}

// The same merge in one round of loads for kMergeBatchLarge < count <= 32 at head_dim 128, where merge_rows takes two
// (bench/NOTES.md §83): a warp's 32 lanes hold one head's row (a float4 each; the loop's idx / HEAD_DIM is uniform
// over a warp, as rows of 128 floats are 32 lanes' float4s), each lane loads the head's LSE of chunk `lane` beside
// its float4 of all chunks, the warp takes the max and the weights' sum by shuffles, and each chunk's weight goes to
// the lanes from the lane that computed it. The sums run in another order than merge_rows' (fp32 rounding).
template <int HEAD_DIM>
__device__ __forceinline__ void merge_rows_warp(const MergeArgs& a) {
  static_assert(HEAD_DIM == 128, "merge_rows_warp: one float4 a lane over a 128-float row");
  constexpr int kThreads = kWarps * 32, kMax = 32;
  const int lane = threadIdx.x % 32;
  const int row = a.gqa * HEAD_DIM;
  const long long chunk_floats = (long long)a.row_stride * HEAD_DIM;
  for (int idx = 4 * threadIdx.x; idx < row; idx += 4 * kThreads) {  // warp-uniform: row is a multiple of 128
    const int head = idx / HEAD_DIM;
    const float l = lane < a.count ? __ldcg(a.lse_part + head + (long long)lane * a.row_stride) : -INFINITY;
    float4 o[kMax];
#pragma unroll
    for (int u = 0; u < kMax; ++u)  // past the last chunk: zeros (weight 0 below)
      o[u] = u < a.count ? __ldcg(reinterpret_cast<const float4*>(a.o_part + idx + u * chunk_floats))
                         : make_float4(0.f, 0.f, 0.f, 0.f);
    const bool nan = __any_sync(0xffffffffu, l != l);
    float mx = l;
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, d));
    const float w = fast_exp2(l - (mx == -INFINITY ? 0.f : mx));  // 0 for an empty or absent chunk (-inf)
    float den = w;
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) den += __shfl_xor_sync(0xffffffffu, den, d);
    float num[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int u = 0; u < kMax; ++u) {
      const float wu = __shfl_sync(0xffffffffu, w, u);
      num[0] = fmaf(wu, o[u].x, num[0]);
      num[1] = fmaf(wu, o[u].y, num[1]);
      num[2] = fmaf(wu, o[u].z, num[2]);
      num[3] = fmaf(wu, o[u].w, num[3]);
    }
    write_merged<HEAD_DIM>(a, idx, head, num, den, mx, nan);
  }
}

// MW: the instance may take merge_rows_warp (its 32 float4 a thread in flight): those compiled with a bound of 3
// CTAs an SM, 168 registers (launch_min_blocks 3), where it changed no register count and added no spill (two FP8
// channel-wise loops moved by register allocation, bench/NOTES.md §83); in an unbounded instance of 128 registers
// (INT4 G=64) it raised the kernel's count to 168 (a noinline callee's registers count against its caller's) and
// moved its loop
template <int HEAD_DIM, bool MW>
__device__ __noinline__ void merge_chunks(MergeArgs a) {
  // every thread's partial (and its reads of the 4-warp staging) before the arrival; the last arrival merges
  if (!arrive_last(a.counter, a.count)) return;

  if (a.count <= kMergeBatchSmall) {
    merge_rows<HEAD_DIM, kMergeBatchSmall>(a);
    return;
  }
  if constexpr (HEAD_DIM == 128 && MW && FOSCAR_MERGE_WARP) {
    if (a.count > kMergeBatchLarge && a.count <= 32) {
      merge_rows_warp<HEAD_DIM>(a);
      return;
    }
  }
  merge_rows<HEAD_DIM, kMergeBatchLarge>(a);
}
#endif  // FOSCAR_FUSED_MERGE

// Operand modes (the MODE template argument):
//  kFoldedBf16: the folded kernel, BF16 operands 1 + code/128 (m16n8k16).
//  kPerValue:   the same kernel (tiling, pipeline, split-KV, softmax, merge) with only the
//               operand construction swapped for per-value reconstruction: K and V operands
//               are bf16(s * code + z), the query and the probabilities enter the mma
//               unscaled, and there is no offset/bias correction. The ablation baseline.
//  kFoldedFp8:  folded, FP8 e4m3 operands (m16n8k32; on sm_90 ptxas lowers this mma.sync to
//               F2FP e4m3->f16 unpacks + HMMA.16816.F16, so it is correct but not faster there): the codes' bytes (w >> BITS*p) &
//               0x03030303 (INT4: 0x0F0F0F0F) are e4m3 values code * 2^-9 exactly, four per
//               instruction; the query enters as e4m3(q * sigma_h), sigma_h = 448 / max|q_h|
//               per head; the probabilities as e4m3(P * s_v * f), f = 448 / max s_v over the
//               warp's 64-token tile per group. The rounding of q and of P' is cancelled to
//               first order around the mid code C0 (DESIGN §9 rule 2, generalised):
//                 S_t = sum_g s_tg (acc_g 2^9 / sigma - C0 sum_c (q8_c / sigma - q_c)) + z_tg sum(Q_g)
//                 O   = sum_t (P'8_t / f) code_t - (C0 / f) sum_t (P'8_t - P'_t) + sum_t P_t z_t
//               Needs an even number of 16-byte chunks per row (head_dim 128/256, or INT4 at 64).
enum Mode : int { kFoldedBf16 = 0, kPerValue = 1, kFoldedFp8 = 2 };

// PV on integer tensor cores (FOSCAR_IMMA_PV): folded BF16 mode, head_dim <= 128, INT2, and INT4 (FOSCAR_IMMA_PV_INT4:
// 2, the default, with either K layout; 1 token-wise K only)
template <int MODE, int BITS, int HEAD_DIM, bool CH>
__host__ __device__ constexpr bool imma_pv() {
  return MODE == kFoldedBf16 && FOSCAR_IMMA_PV && HEAD_DIM <= 128 &&
         (BITS == 2 || (FOSCAR_IMMA_PV_INT4 && (!CH || FOSCAR_IMMA_PV_INT4 >= 2)));
}
// its fixed point: |x| = |rint(P s_v f)| <= kIpvMax < 2^15 (a margin for ex2.approx's rounding), x read
// from the low 16 bits of fma(P, s_v f, kIpvMagic) = 1.5 2^23 + x (exact integer in the mantissa)
constexpr float kIpvMax = 32512.f;
constexpr float kIpvMagic = 12582912.f;
// The integer PV with packed columns (PK, gqa <= 4; bench/NOTES.md §62; DESIGN §5.2): N = 8 columns hold 4 query
// heads twice, the high bytes of P''s fixed point x + 128 in columns 0-3 and the low bytes of x (as s8) in 4-7
// (x = 256 hi + lo, both s8), so one u8.s8 mma per 32 tokens
// does what two did. The query's columns 4-7 repeat heads 0-3, so every column's scores, softmax and P' are its
// head's (with pk_tokens, the default: another m16 token tile's); each output column accumulates its part (hi: 256
// dot_hi / f + sum P z, lo: dot_lo / f), and the epilogue
// adds column h + 4 to column h. Only where the QK is integer and token-wise (the query's columns are built there).
// INT4 takes this form where it applies (FOSCAR_PV_PACK_INT4), its two-mma form elsewhere (FOSCAR_IMMA_PV_INT4).
template <int MODE, int BITS, int HEAD_DIM, bool CH>
__host__ __device__ constexpr bool pv_packable() {
  return MODE == kFoldedBf16 && FOSCAR_IMMA_PV && HEAD_DIM <= 128 && !CH && FOSCAR_IMMA_QK && FOSCAR_PV_PACK &&
         (BITS == 2 || (FOSCAR_PV_PACK_INT4 && FOSCAR_IMMA_QK_INT4));
}
// Token pairs in the packed QK (PK and FOSCAR_PK_TOKENS; bench/NOTES.md §86). With columns 4-7 repeating heads 0-3,
// the lanes that hold them (tig 2, 3) folded, exponentiated and scaled copies of columns 0-3: half of every score's
// work. Instead, m16 token tiles 2pt and 2pt + 1 share one s32 accumulator: tile 2pt's mma reads a query that is zero
// in columns 4-7, tile 2pt + 1's one that is zero in columns 0-3, so column h holds tile 2pt's score of head h and
// column h + 4 tile 2pt + 1's (the same integers; two mma as before, one accumulator). A lane (g, tig) then holds the
// scores of tokens 32pt + 16 (tig >> 1) + g (+ 8) for heads 2 (tig & 1) + {0, 1}: 8 where 16 were, every one its own.
// Each head's tokens lie on lanes tig and tig ^ 2, so its sums and maxima take one shuffle more. P' reaches the PV's B
// layout (column h: high bytes of x + 128 of tile 2pt and 2pt + 1; column h + 4: their low bytes of x) by one
// movmatrix per 8 x 8 block and one exchange between lanes g and g ^ 4 (lane ^ 16).
template <bool PK>
__host__ __device__ constexpr bool pk_tokens() {
  return PK && FOSCAR_PK_TOKENS;
}

// Whether an instance holds the in-kernel split merge (Params::fuse_merge): every instance of a build with
// FOSCAR_FUSED_MERGE but INT2 D=128 G=32 folded BF16 on a paged cache with token-wise K. The merge's call
// there moved ptxas's register allocation of the main loop (182 registers and 1363 SASS instructions a
// sub-tile, 236 and 1333 without it), and the instance ran 5-7% slower at batch 8 and 64 whichever merge ran
// (bench/NOTES.md §80, §81); its plans take the merge kernel. One rule for the kernel (the epilogue, the
// launch's check) and the host (foscar_fused_merge_in, which plan_decode asks).
__host__ __device__ constexpr bool fused_merge_in(int bits, int head_dim, int group_size, int mode, bool paged, bool ch) {
  return FOSCAR_FUSED_MERGE && !(mode == kFoldedBf16 && bits == 2 && head_dim == 128 && group_size == 32 && paged && !ch);
}

// Channel-wise K (CH; KIVI style, foscar/quant.py): K's scale s_c and offset z_c per channel c and
// block of 2^k_block_shift tokens (32, 64 or 128; V stays token-wise). A 64-token sub-tile starts
// at a multiple of 64, so it lies in one block, or in two (m16 tiles 0-1 and 2-3) at k_block 32;
// the query is rebuilt once per block, S = sum_c (Q_c s_c) code_c + sum_c Q_c z_c:
//  kFoldedBf16: QK on FP16 operands (as the Triton kernel's, decode_triton.py): the codes of plane
//               pl, kept at bits E = BITS * pl of each half (one and), are the FP16 subnormals
//               code 2^(E - 24) (exact, no bias); the query is fp16(Q s 2^-E / f), f per head
//               bringing max |Q s| to 2^14 (FP16's 11-bit significand: BF16's 8 bits moved the LSE
//               by ~7e-3 in the Triton kernel); S = 2^24 f acc + Q . z.
//  kPerValue:   the K operand is bf16(s_c code + z_c) per value, the query unscaled.
//  kFoldedFp8:  the FP8 mode's formula with Q s in place of Q and Q . z in place of z sum(Q),
//               sigma per (head, block).

// PAGED: token rows through the page table (p.kv_indptr / p.kv_indices), else contiguous.
// CH: channel-wise K (above), else token-wise.
// CTAs per SM that ptxas must leave registers for (<= 168 each for 3): the folded head_dim 128 group
// 128 instances, which fit 3 CTAs per SM in shared memory and registers. With the full-tile loop and
// the general loop both in the kernel, ptxas left some of them at 128 registers with spills in the
// loop (INT4 folded BF16, FP8 paged) and one at 178 (INT2 paged channel-wise K); the bound keeps them
// at <= 168 (bench/NOTES.md §23; at group 64 it spilled 76 bytes); and imma_min_blocks. Paged INT2 G=32
// folded FP8 and INT4 G=64 folded BF16 (D=128): 2, where ptxas, unbounded, took 168 / 128 registers and
// spilled 52 / 4 bytes once the page ids went through shared memory (204 / 192 with the bound, no
// spill; shared memory and registers held them at 2 CTAs per SM before too; bench/NOTES.md §38).
// 0: no bound.
template <int BITS, int HEAD_DIM, int GROUP, int MODE, bool CH, bool PAGED = false>
__host__ __device__ constexpr int min_blocks() {
  return (HEAD_DIM == 128 && GROUP == 128 && MODE != kPerValue) || imma_min_blocks<MODE, CH, BITS, HEAD_DIM, GROUP>() ? 3
         : PAGED && HEAD_DIM == 128 && !CH && ((BITS == 2 && GROUP == 32 && MODE == kFoldedFp8) || (BITS == 4 && GROUP == 64 && MODE == kFoldedBf16)) ? 2 : 0;
}

// The bound the kernel is compiled with (its __launch_bounds__' min-blocks; 0: none, which is not the same as 1:
// ptxas then used 167 registers instead of 128): FOSCAR_MIN_BLOCKS where a build defines it, else min_blocks
template <int BITS, int HEAD_DIM, int GROUP, int MODE, bool CH, bool PAGED = false>
__host__ __device__ constexpr int launch_min_blocks() {
#ifdef FOSCAR_MIN_BLOCKS
  return FOSCAR_MIN_BLOCKS;
#else
  return min_blocks<BITS, HEAD_DIM, GROUP, MODE, CH, PAGED>();
#endif
}

// ---- Phase: online softmax of one 64-token sub-tile, per head (the lane's columns 2tig, 2tig+1), from
// its log2-domain scores s (IMMA: in units of d, times qkh = qk_h per column head): the warp's running
// max m_run and denominator l_part, alpha = 2^(m_old - m_new) (the rescale of the output accumulator),
// and the probabilities pr = 2^(s - m) in the QK accumulator layout; PTILE: ptile = the tile's largest P
// per head (the integer PV's fixed-point range). A max of -inf (no token yet) is taken as 0, so that exp2
// gives 0, not NaN. FULL (a sub-tile of 64 tokens of the sequence, none masked): the tile's max is a score, finite
// for finite data, so the running max after it is too and the test for -inf is left out (a row of -inf scores, which
// finite data within the documented magnitude cannot give, then makes the output NaN while the running max is still
// -inf, where the test dropped the tile; a NaN score gives NaN either way). NT: score tiles (4 m16 tiles, or TP's 2
// pairs, pk_tokens); TP: a head's tokens also lie on lane tig ^ 2 (its max takes one shuffle more; l_part stays
// per lane, summed in the epilogue).
template <bool IMMA, bool PTILE = false, bool FULL = false, int NT = 4, bool TP = false>
__device__ __forceinline__ void softmax_update(const float (&s)[NT][4], const float (&qkh)[2], float (&m_run)[2],
                                               float (&l_part)[2], float (&alpha)[2], float (&pr)[NT][4],
                                               float (&ptile)[2]) {
  float m_use[2];
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    // the first pair starts the max (a start at -inf is one FMNMX more; it differs only where all 8 are NaN,
    // whose probabilities are NaN either way)
    float mx = fmaxf(s[0][j], s[0][j + 2]);
#pragma unroll
    for (int mt = 1; mt < NT; ++mt) mx = fmaxf(mx, fmaxf(s[mt][j], s[mt][j + 2]));
    mx = warp_max_over_rows(mx);
    if constexpr (TP) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    if constexpr (IMMA) mx *= qkh[j];  // IMMA: s in units of d, qk_h > 0 a power of two: exact (-inf stays -inf)
    const float m_new = fmaxf(m_run[j], mx);
    m_use[j] = (FULL || m_new != -INFINITY) ? m_new : 0.f;
    alpha[j] = fast_exp2(m_run[j] - m_use[j]);
    // PTILE: the tile's largest P, the same rounding as its token's pr below (mx exact); 0 if all masked
    if constexpr (PTILE) ptile[j] = fast_exp2(mx - m_use[j]);
    m_run[j] = m_new;
  }
#pragma unroll
  for (int mt = 0; mt < NT; ++mt)
#pragma unroll
    for (int i = 0; i < 4; ++i)
      pr[mt][i] = fast_exp2(IMMA ? fmaf(s[mt][i], qkh[i & 1], -m_use[i & 1]) : s[mt][i] - m_use[i & 1]);
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    float sum = 0.f;
#pragma unroll
    for (int mt = 0; mt < NT; ++mt) sum += pr[mt][j] + pr[mt][j + 2];
    l_part[j] = l_part[j] * alpha[j] + sum;
  }
}

// The epilogue's rows of the 4 warps' outputs in shared memory, floats: HEAD_DIM + 4 (16-byte aligned rows for its
// float4 reads; 4 mod 16 spreads its 8-byte stores over all banks, bench/NOTES.md §69)
template <int HEAD_DIM>
__host__ __device__ constexpr int merge_row_floats() {
  static_assert(HEAD_DIM % 16 == 0, "merge rows: HEAD_DIM a multiple of 16");
  return HEAD_DIM + 4;
}

// ---- Phase: epilogue. The 4 warps merged through shared memory (the stages reused: all copies waited
// for first), per (query head, channel) of this CTA: the output and LSE of a sequence of one chunk, else
// this chunk's normalized partial and base-2 LSE in row `slot`; the sequence's chunk range for the merge
// kernel (FOSCAR_FUSED_MERGE: the last CTA of the sequence merges). o_acc: this warp's output
// accumulators (folded BF16: 2^E O for planes in place; O with the integer PV), m_run / l_part: its running max and denominator
// (per lane, before the sum over rows); s_work: the work's (b, first slot, count, this CTA's slot), parked in shared
// memory across the loop (FOSCAR_PAGE_CHECK builds: [4 + w] nonzero where warp w met a page id outside the
// pool). PK: columns h and h + 4 hold two parts of head h's output (pv_packable), added here.
// FM: the instance holds the in-kernel merge (fused_merge_in); MW: its merge may take merge_rows_warp (merge_chunks).
template <int BITS, int HEAD_DIM, int GROUP, int MODE, bool CH, bool PK, bool FM, bool MW>
__device__ __forceinline__ void epilogue(const Params& p, uint8_t* smem, const int* s_work,
                                         const float (&o_acc)[Fmt<BITS, HEAD_DIM, GROUP>::KSTEPS][4],
                                         const float (&m_run)[2], const float (&l_part)[2], int hkv, int warp, int g,
                                         int tig) {
  using F = Fmt<BITS, HEAD_DIM, GROUP>;
  constexpr int RB = F::RB, P = F::P, KSTEPS = F::KSTEPS;
  cp_async_commit();
  asm volatile("cp.async.wait_all;\n" ::);
  __syncthreads();
  FOSCAR_TL_CUT(1);
  constexpr int OROW = merge_row_floats<HEAD_DIM>();
  float* sm_o = reinterpret_cast<float*>(smem);           // [kWarps][8][OROW]: rows of HEAD_DIM + 4
  float* sm_m = sm_o + kWarps * 8 * OROW;                 // [kWarps][8]
  float* sm_l = sm_m + kWarps * 8;                        // [kWarps][8]
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    float l = warp_sum_over_rows(l_part[j]);
    if constexpr (pk_tokens<PK>()) l += __shfl_xor_sync(0xffffffffu, l, 2);  // the head's other lanes (tig ^ 2)
    if (g == 0) {
      sm_m[warp * 8 + 2 * tig + j] = m_run[j];
      sm_l[warp * 8 + 2 * tig + j] = l;
    }
  }
  // accumulator i of step k: head 2tig + (i & 1), channel ch + (i >> 1); channels ch and ch + 1 of a head as one
  // 8-byte store. Lanes (g, tig) of a store write floats (warp 8 + 2tig + j) OROW + ch0 + 2g + {0, 1}: with rows of
  // HEAD_DIM floats (a multiple of 32) every tig hit the same 8 banks (4-way conflicts, 32 stores a lane); with
  // OROW = 4 mod 16, tig t starts at bank 8t and a warp's 64 floats take the two wavefronts that 8-byte stores need
#pragma unroll
  for (int k = 0; k < KSTEPS; ++k) {
    const int c = k / P, pl = k % P;
    const int ch = pl * RB + 16 * c + 2 * g;
    // folded BF16: o_acc holds 2^E O (the integer PV folds its planes' factors per tile: O)
    const float unscale = MODE == kFoldedBf16 && !imma_pv<MODE, BITS, HEAD_DIM, CH>() && !PK ? 1.f / (1 << F::pexp(pl)) : 1.f;
#pragma unroll
    for (int j = 0; j < 2; ++j)
      *reinterpret_cast<float2*>(sm_o + (warp * 8 + 2 * tig + j) * OROW + ch) =
          make_float2(o_acc[k][j] * unscale, o_acc[k][j + 2] * unscale);
  }
  __syncthreads();
  FOSCAR_TL_CUT(2);
  const int num_qo_heads = p.num_kv_heads * p.gqa;
  // (after __syncthreads above; one LDS.128; the slot parked too: blockIdx.x / num_kv_heads again was an integer
  // division, ~20 instructions on the partial's chain)
  const int eb = s_work[0], first_slot = s_work[1], count = s_work[2], slot = s_work[3];
  // per thread and step: V = 4 adjacent channels of one head (16-byte shared loads; the head's warp weights
  // once for its V channels; 8 / 16-byte global stores: the plan's out and o_part rows, 16-byte aligned, checked
  // in the binding). The sums run over the warps in the same order as per channel, so the results are
  // bit-identical to one channel per step (bench/NOTES.md §48: that loop was ~380 of a 16-token CTA's ~1490
  // instructions per warp).
  constexpr int V = 4, HV = HEAD_DIM / V;
  for (int idx = threadIdx.x; idx < p.gqa * HV; idx += kWarps * 32) {
    const int head = idx / HV, ch = (idx % HV) * V;
    float mx = -INFINITY;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) mx = fmaxf(mx, sm_m[w * 8 + head]);
    const float m_safe = mx == -INFINITY ? 0.f : mx;
    float num[V] = {}, den = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const float e = fast_exp2(sm_m[w * 8 + head] - m_safe);  // 0 for a warp that saw no token
      float4 o4 = *reinterpret_cast<const float4*>(sm_o + (w * 8 + head) * OROW + ch);
      if constexpr (PK) {  // the low bytes' part of the integer PV, column head + 4 (same m and l)
        const float4 l4 = *reinterpret_cast<const float4*>(sm_o + (w * 8 + head + 4) * OROW + ch);
        o4 = make_float4(o4.x + l4.x, o4.y + l4.y, o4.z + l4.z, o4.w + l4.w);
      }
      num[0] += e * o4.x;
      num[1] += e * o4.y;
      num[2] += e * o4.z;
      num[3] += e * o4.w;
      den += e * sm_l[w * 8 + head];
    }
    float o[V], lse2;
#if FOSCAR_PAGE_CHECK
    bool bad_pages = false;  // a warp met a page id outside the pool and read no token: the row is NaN
#pragma unroll
    for (int w = 0; w < kWarps; ++w) bad_pages |= s_work[4 + w] != 0;
    if (bad_pages) den = __int_as_float(0x7fffffff);
#endif
    finalize_row<V>(num, den, mx, o, lse2);
    const int hq = hkv * p.gqa + head;
    if (count == 1 && !p.fixed_window) {  // the whole sequence: final output
      const long long row = (long long)eb * num_qo_heads + hq;
      store_bf16x4(p.out + row * HEAD_DIM + ch, o);
      if (ch == 0) p.lse[row] = lse2 * kLn2;
    } else {  // this chunk's partial, in row `slot` (= first_slot + chunk index)
      const long long row = (long long)slot * num_qo_heads + hq;
      *reinterpret_cast<float4*>(p.o_part + row * HEAD_DIM + ch) = make_float4(o[0], o[1], o[2], o[3]);
      if (ch == 0) p.lse_part[row] = lse2;
    }
  }
  FOSCAR_TL_CUT(3);
  if (count > 1) {
#if FOSCAR_FUSED_MERGE
    if (FM && p.fuse_merge) {
      const long long row0 = (long long)first_slot * num_qo_heads + hkv * p.gqa;  // slot first, head 0
      const long long out0 = (long long)eb * num_qo_heads + hkv * p.gqa;
      if constexpr (MODE == kFoldedBf16) {  // the (sequence, KV head)'s counter, then its group counters
        unsigned* counter = reinterpret_cast<unsigned*>(p.counters) + (eb * p.num_kv_heads + hkv) * (1 + p.merge_groups);
        const MergeArgs args{p.o_part + row0 * HEAD_DIM, p.lse_part + row0, p.out + out0 * HEAD_DIM, p.lse + out0,
                             counter, num_qo_heads, p.gqa, count};
        if (count > kMaxSeqChunks && p.merge_groups * kMergeGroup >= count)  // the plan gave the groups' counters
          merge_tree<HEAD_DIM>(args, slot - first_slot);
        else
          merge_chunks<HEAD_DIM, MW>(args);
      } else {  // the FP8 and per-value modes: one merging CTA, this call as before merge_tree (any other form of
                // it moved ptxas's register allocation: FP8 channel-wise INT2 G=32 spilled 56 bytes, none before)
        merge_chunks<HEAD_DIM, MW>(MergeArgs{p.o_part + row0 * HEAD_DIM, p.lse_part + row0, p.out + out0 * HEAD_DIM,
                                         p.lse + out0, reinterpret_cast<unsigned*>(p.counters) + eb * p.num_kv_heads + hkv,
                                         num_qo_heads, p.gqa, count});
      }
    } else
#endif
    if (slot_is_first<grid_2d<CH>()>(p, first_slot) && hkv == 0 && threadIdx.x == 0) {  // for the merge kernel
      p.seq_chunks[2 * eb] = first_slot;
      p.seq_chunks[2 * eb + 1] = count;
    }
  } else if (!p.fuse_merge && hkv == 0 && threadIdx.x == 0) {
    p.seq_chunks[2 * eb] = first_slot;
    p.seq_chunks[2 * eb + 1] = 1;  // written here: the merge kernel skips the sequence
  }
}

// max of t[i0 .. i0 + N), N a power of two, as a tree of depth log2(N) (every index a constant once inlined)
template <int N, int M>
__device__ __forceinline__ float tree_max(const float (&t)[M], int i0) {
  static_assert(N >= 1 && (N & (N - 1)) == 0, "tree_max: N must be a power of two");
  if constexpr (N == 1)
    return t[i0];
  else
    return fmaxf(tree_max<N / 2>(t, i0), tree_max<N / 2>(t, i0 + N / 2));
}

template <int BITS, int HEAD_DIM, int GROUP, int MODE, bool PAGED, bool CH, bool PK = false>
__global__ void __launch_bounds__(kWarps * 32, (launch_min_blocks<BITS, HEAD_DIM, GROUP, MODE, CH, PAGED>()))
    folded_decode_kernel(const Params p) {
  using F = Fmt<BITS, HEAD_DIM, GROUP>;
  constexpr int RB = F::RB, NCH = F::NCH, NG = F::NG, P = F::P, KSTEPS = F::KSTEPS;
  constexpr bool PER_VALUE = MODE == kPerValue;
  constexpr bool FP8 = MODE == kFoldedFp8;
  constexpr int KS8 = FP8 ? F::KSTEPS8 : 1;
  constexpr int KM_BYTES = F::template KM_BYTES<CH>, STAGE_BYTES = F::template STAGE_BYTES<CH>;
  constexpr int KG = CH ? 1 : NG;  // QK accumulators per m16 tile: one per K group; channel-wise K: one
  constexpr bool IMMA = MODE == kFoldedBf16 && !CH && FOSCAR_IMMA_QK && (BITS == 2 || FOSCAR_IMMA_QK_INT4);  // QK on integer tensor cores
  constexpr int KS32 = IMMA ? F::KSTEPS32 : 1;
  constexpr bool IPV = imma_pv<MODE, BITS, HEAD_DIM, CH>() || PK;  // PV on integer tensor cores
  static_assert(!PK || (pv_packable<MODE, BITS, HEAD_DIM, CH>() && IMMA), "PK: integer token-wise QK only");
  // IMMA: fold each group right after its last step (fewer accumulators live) where that spilled less,
  // head_dim 256 at G=64; elsewhere after all steps, which measured shorter loops (NOTES §24)
  constexpr bool EARLY_FOLD = IMMA && HEAD_DIM == 256 && GROUP == 64;
  constexpr bool TP = pk_tokens<PK>();  // token pairs in the packed QK's columns (pk_tokens)
  constexpr int NT = TP ? 2 : 4;        // score tiles a sub-tile: m16 tiles, or TP's pairs of them
  // (TP excludes channel-wise K too, pv_packable: the QK loop's krow and EARLY_FOLD's fold assume 4 m16 tiles)
  static_assert(!TP || !EARLY_FOLD, "TP: the fold after all steps");
  static_assert(!FP8 || NCH % 2 == 0, "FP8 operands need an even number of 16-byte chunks per packed row");
  extern __shared__ __align__(128) uint8_t smem[];

  // slot-major order: the chunks of all KV heads come first, empty slots (exiting at once) last
  const int hkv = cta_kv_head<grid_2d<CH>()>(p);
  const int slot = cta_slot<grid_2d<CH>()>(p);
#if FOSCAR_TIMELINE
  // before griddepcontrol.wait, on purpose: the entry stamps; the counter is only ever touched by atomics and each
  // record by its own CTA, and with PDL every CTA of the previous call has started (taken its record) before this
  // call's CTAs are scheduled (they trigger after their loop, or after this record where FOSCAR_EARLY_TRIGGER acts),
  // so records stay in call order (bench/timeline.py)
  unsigned long long* tl_rec = nullptr;
  if (p.timeline != nullptr && threadIdx.x == 0) {
    const unsigned long long i = atomicAdd(p.timeline, 1ull);
    if (i < (unsigned long long)p.timeline_records) tl_rec = p.timeline + 1 + kTimelineFields * i;
  }
  FOSCAR_TL(0, global_timer());
  FOSCAR_TL(2, clock64());
#endif
  // before the wait (FOSCAR_PREWAIT_PREFETCH): no value read here reaches the outputs
  constexpr bool PREWAIT =
      FOSCAR_PREWAIT_PREFETCH > 0 && (!PAGED || FOSCAR_PREWAIT_PAGED) && !CH && !FOSCAR_TILE_PROBE;
  constexpr bool EARLY = PREWAIT && FOSCAR_EARLY_TRIGGER;  // the trigger at the start where p.fuse_merge
  if (EARLY && p.fuse_merge) asm volatile("griddepcontrol.launch_dependents;\n" ::);
#if FOSCAR_PREWAIT_PREFETCH > 0
  // the chunk's first FOSCAR_PREWAIT_PREFETCH steps (kWarps sub-tiles of kTileTokens each) of K / V codes and the four
  // scale arrays, as 128-byte lines spread over the CTA's threads; a CTA past prewait_ctas (a later wave, or a launch
  // without PDL) goes straight to the wait
  if constexpr (PREWAIT) {
    const Work pw = cta_index() < (unsigned long long)p.prewait_ctas
                        ? find_work<PAGED, FOSCAR_ONE_CHUNK_PATH, true>(p, slot) : Work{0, 0, 0, 0, 0, 0, 0};
    if (pw.count > 0 && pw.end > pw.start) {
      constexpr int RB = Fmt<BITS, HEAD_DIM, GROUP>::RB, NG = Fmt<BITS, HEAD_DIM, GROUP>::NG;
      const int n = min(pw.end - pw.start, FOSCAR_PREWAIT_PREFETCH * kWarps * kTileTokens);
      // the lines of rows [r0, r0 + m) of the six arrays, from the s-th on, every step-th
      auto prefetch_rows = [&](long long r0, int m, int s, int step) {
        const char* base[6] = {reinterpret_cast<const char*>(p.k_codes) + r0 * RB,
                               reinterpret_cast<const char*>(p.v_codes) + r0 * RB,
                               reinterpret_cast<const char*>(p.k_scale + r0 * NG),
                               reinterpret_cast<const char*>(p.k_offset + r0 * NG),
                               reinterpret_cast<const char*>(p.v_scale + r0 * NG),
                               reinterpret_cast<const char*>(p.v_offset + r0 * NG)};
        const long long bytes[6] = {(long long)m * RB, (long long)m * RB, m * NG * 4ll, m * NG * 4ll,
                                    m * NG * 4ll, m * NG * 4ll};
#pragma unroll
        for (int a = 0; a < 6; ++a) {
          const uintptr_t lo = reinterpret_cast<uintptr_t>(base[a]) & ~(uintptr_t)127;
          const uintptr_t hi = reinterpret_cast<uintptr_t>(base[a]) + bytes[a];
          for (uintptr_t l = lo + 128u * s; l < hi; l += 128u * step)
            asm volatile("prefetch.global.L2 [%0];\n" ::"l"(l));
        }
      };
      if constexpr (!PAGED) {
        prefetch_rows((long long)(pw.b * p.num_kv_heads + hkv) * p.max_seq_len + pw.start, n, threadIdx.x, blockDim.x);
      } else {
#if FOSCAR_PREWAIT_PAGED
        // the chunk's pages j0 .. j0 + npg - 1 (of the sequence's), tpp threads a page: each reads its page's id
        // (relaxed; an id outside the pool is skipped) and takes every tpp-th line of the page's rows
        const int page = 1 << p.page_shift;
        const int j0 = pw.start >> p.page_shift, npg = ((pw.start + n - 1) >> p.page_shift) - j0 + 1;
        const int tpp = max(1, (int)blockDim.x / npg), groups = (int)blockDim.x / tpp;
        if ((int)threadIdx.x / tpp < groups) {
          for (int j = threadIdx.x / tpp; j < npg; j += groups) {
            const int idx = pw.page0 + j0 + j;
            if (idx >= p.num_indices) break;
            const int id = load_len<true>(p.kv_indices + idx);
            if (id < 0 || id >= p.num_pages) continue;
            const int t_lo = max(pw.start, (j0 + j) << p.page_shift);
            const int t_hi = min(pw.start + n, (j0 + j + 1) << p.page_shift);
            prefetch_rows(((long long)id * p.num_kv_heads + hkv) * page + (t_lo & (page - 1)), t_hi - t_lo,
                          threadIdx.x % tpp, tpp);
          }
        }
#endif
      }
    }
  }
#endif
  asm volatile("griddepcontrol.wait;\n" ::: "memory");  // PDL: the previous grid's writes are visible
  // (channel-wise K keeps the general fixed path: with the one-chunk path ptxas spilled 64 bytes in its FP8 INT2 G=32
  // instance, bench/NOTES.md §75)
  const Work work = find_work<PAGED, FOSCAR_ONE_CHUNK_PATH && !CH>(p, slot);
  FOSCAR_TL(3, clock64());
  if (work.count == 0) {
    FOSCAR_TL(7, clock64());
    FOSCAR_TL(1, global_timer());
    FOSCAR_TL(8, sm_id() | (cta_index() << 8));
    for (int c = 0; c < 3; ++c) FOSCAR_TL(10 + c, 0);
    if (p.fixed_window && (int)threadIdx.x < p.gqa)  // an empty chunk of a fixed-path sequence: LSE -inf
      p.lse_part[(long long)slot * p.num_kv_heads * p.gqa + hkv * p.gqa + threadIdx.x] = -INFINITY;
    return;
  }
  // what the epilogue needs of the work, parked in shared memory instead of registers across the loop
  // (kept there, they pushed the channel-wise instances into spills)
  __shared__ __align__(16) int s_work[FOSCAR_PAGE_CHECK ? 4 + kWarps : 4];  // FOSCAR_PAGE_CHECK: [4 + w] warp w met a
  // page id outside the pool (below)
  if (threadIdx.x == 0) {
    s_work[0] = work.b;
    s_work[1] = work.first;
    s_work[2] = work.count;
    s_work[3] = slot;
  }
  const int b = work.b, bh = b * p.num_kv_heads + hkv;
  const int start = work.start, end = work.end;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, tig = lane % 4;
  const bool kb32 = CH && p.k_block_shift == 5;  // channel-wise K blocks of 32 tokens: two per sub-tile

  // token rows: row index of token gt of this (sequence, KV head) in the [rows, RB] code and [rows, NG]
  // scale views from the bases below, 64-bit (caches past 2^31 bytes); paged: from the page table,
  // whose ids are copied into shared memory kStages sub-tiles ahead (copy_ids below), read back with
  // LDS and turned into rows (id_row) in the copies.
  // A paged row, (id * num_kv_heads + hkv) * page + (gt & (page - 1)), is a 32-bit unsigned integer:
  // the binding checks num_pages * num_kv_heads * page_size <= 2^32 (folded_decode_sm90.h); byte and
  // float offsets from it are 64-bit (IMAD.WIDE.U32)
  const long long row0 = PAGED ? 0 : (long long)bh * p.max_seq_len;  // contiguous: first token of (sequence, KV head)
  const int* pages = PAGED ? p.kv_indices + work.page0 : nullptr;
  const int page_mask = (1 << p.page_shift) - 1;
  const uint32_t page_rows = (uint32_t)p.num_kv_heads << p.page_shift;  // rows per page id
  const uint32_t head_row = (uint32_t)hkv << p.page_shift;  // row of this KV head's first token in a page
  const uint8_t* kc = p.k_codes + row0 * RB;
  const uint8_t* vc = p.v_codes + row0 * RB;
  const float* ks_g = p.k_scale + row0 * NG;
  const float* kz_g = p.k_offset + row0 * NG;
  const float* vs_g = p.v_scale + row0 * NG;
  const float* vz_g = p.v_offset + row0 * NG;
  // FOSCAR_TILE_PROBE: the cache of a contiguous token-wise instance is one buffer at p.k_codes of 64-token blocks,
  // block (row0 + row) >> 6 = [K codes 64 RB | V codes 64 RB | ks | kz | vs | vz, 64 NG floats each] (needs max_seq_len
  // a multiple of 64); il(row, a, off): byte off of token row's row in array a (0 K codes, 1 V codes, 2-5 the scales)
  constexpr bool IL = FOSCAR_TILE_PROBE && !PAGED && !CH;
  auto il = [&](long long row, int a, int off) -> const void* {
    constexpr long long BB = 64LL * (2 * RB + 16 * NG);
    const long long R = row0 + row;
    const int r = (int)(R & 63);
    const int aoff = a < 2 ? a * 64 * RB + r * RB : 128 * RB + (a - 2) * 256 * NG + r * 4 * NG;
    return p.k_codes + (R >> 6) * BB + aoff + off;
  };

  uint8_t* wsm = smem + warp * kStages * STAGE_BYTES;
  const int first = start + warp * kTileTokens;
  const int stride = kWarps * kTileTokens;
#if FOSCAR_PAGE_CHECK
  // paged: each warp's lanes read the page ids of the warp's own sub-tiles (first, first + stride, ... < end). A
  // sub-tile's 64 tokens start on a multiple of 64 (every chunk starts on a multiple of 256), so they span
  // 2^tile_shift whole pages, or lie in one page of 64 tokens or more: one load a lane for each 512 tokens of the
  // warp's share at 16-token pages. On an id outside 0 .. num_pages - 1 the warp reads no token, and its flag,
  // s_work[4 + warp], makes the epilogue write the rows NaN (output and LSE; a NaN partial makes the merged row NaN).
  // Per warp, with no block barrier: the CTA-wide form (every thread over the chunk's ids, __syncthreads_or) spilled
  // up to 44 B in the paged channel-wise instances, this one at most 28 B (bench/NOTES.md §125).
  // tests/test_decode_cuda.py mirrors the enumeration (every page of the chunk, none outside it).
  bool bad_pages = false;
  if constexpr (PAGED) {
    unsigned bad = 0;
    const int tile_shift = max(6 - p.page_shift, 0);
    // the warp's (sub-tile, page) pairs, i -> sub-tile i >> tile_shift, its page i & (2^tile_shift - 1)
    const int n = first < end ? ((end - first + stride - 1) / stride) << tile_shift : 0;
    for (int i = lane; i < n; i += 32) {
      const int t = first + (i >> tile_shift) * stride + ((i & ((1 << tile_shift) - 1)) << p.page_shift);
      if (t < end) bad |= (unsigned)__ldg(pages + (t >> p.page_shift)) >= (unsigned)p.num_pages;
    }
    bad_pages = __any_sync(0xffffffffu, bad);
  }
  if (lane == 0) s_work[4 + warp] = bad_pages;  // read by the epilogue, after its __syncthreads (no register across)
  const int iters = first < end && !bad_pages ? (end - first + stride - 1) / stride : 0;
#else
  const int iters = first < end ? (end - first + stride - 1) / stride : 0;
#endif

  // paged: the page ids of a sub-tile's 64 tokens (0 past the end) in this warp's ring of kStages slots
  // after the stages (slot it % kStages), copied by 4-byte cp.async in the commit group of sub-tile
  // it - kStages, so that the wait before computing that sub-tile also completes them (and the
  // __syncwarp after it makes them visible to every lane) one step before sub-tile it is issued. The
  // copies then read any token's id with LDS. Page ids in registers instead (loaded with __ldg two
  // sub-tiles ahead, handed over from one register pair to the next) let ptxas load them into
  // temporaries and move them into place a dozen instructions later, so that every iteration waited on
  // the page table: paged 4-11% slower (bench/NOTES.md §37, §38).
  uint32_t* const ids_ring =
      reinterpret_cast<uint32_t*>(smem + F::template SMEM_BYTES<CH> + warp * kStages * F::ID_SLOT_BYTES);
  auto ids_of = [&](int it) -> const uint32_t* { return ids_ring + (it % kStages) * kTileTokens; };
  auto copy_ids = [&](int it) {  // cp.async the ids of sub-tile it into its slot (no commit)
    if constexpr (PAGED) {
      const int t0 = first + it * stride;
      uint32_t* slot = ids_ring + (it % kStages) * kTileTokens;
#pragma unroll
      for (int a = 0; a < 2; ++a) {
        const int gt = t0 + 32 * a + lane;
        const bool live = gt < end;  // (false past iters: t0 >= end there)
        cp_async4(slot + 32 * a + lane, pages + (live ? (uint32_t)gt >> p.page_shift : 0u), live ? 4 : 0);
      }
    }
  };
  auto id_row = [&](uint32_t id, int gt) -> uint32_t {  // row of token gt in page id (32-bit, see above)
    return id * page_rows + (head_row | (uint32_t)(gt & page_mask));
  };
  // row of tile token tok (0..63, may differ per lane) at gt: contiguous gt; paged from ids (ids_of)
  auto row_at = [&](const uint32_t* ids, int tok, int gt) -> long long {
    if constexpr (!PAGED) {
      return gt;
    } else {
      return id_row(ids[tok], gt);
    }
  };

  // cp.async one 64-token sub-tile into stage it % kStages (zero-fill past end); ids: its page ids (ids_of)
  auto issue = [&](int it, const uint32_t* ids) {
    uint8_t* st = wsm + (it % kStages) * STAGE_BYTES;
    const int t0 = first + it * stride;
    constexpr int CODE_CHUNKS = kTileTokens * NCH;
    // paged: the ids of this lane's chunks first (see issue_full's)
    uint32_t idc[CODE_CHUNKS / 32] = {};
    if constexpr (PAGED) {
#pragma unroll
      for (int jj = 0; jj < CODE_CHUNKS / 32; ++jj) idc[jj] = ids[(lane + 32 * jj) / NCH];
    }
#pragma unroll
    for (int jj = 0; jj < CODE_CHUNKS / 32; ++jj) {
      const int i = lane + 32 * jj;
      const int tok = i / NCH, c = i % NCH;
      const int gt = t0 + tok;
      const bool live = gt < end;
      const long long row = PAGED ? (long long)id_row(idc[jj], gt) : (long long)gt;
      const long long src = live ? row * RB + 16 * c : 0;
      const int dst = tok * RB + 16 * swz(tok, c, NCH, F::ROWS_PER_SWZ);
      if constexpr (IL) {
        cp_async16(st + dst, il(live ? row : 0, 0, live ? 16 * c : 0), live ? 16 : 0);
        cp_async16(st + F::CODE_BYTES + dst, il(live ? row : 0, 1, live ? 16 * c : 0), live ? 16 : 0);
      } else {
        cp_async16(st + dst, kc + src, live ? 16 : 0);
        cp_async16(st + F::CODE_BYTES + dst, vc + src, live ? 16 : 0);
      }
    }
    const int valid = (end - t0) * NG;  // floats of this sub-tile before the end
    if (p.scales_aligned) {  // 16-byte copies: 4 floats each
      constexpr int SCALE_CHUNKS = F::SCALE_BYTES / 16;
      for (int i0 = 0; i0 < SCALE_CHUNKS; i0 += 32) {
        const int i = i0 + lane;
        const int f0 = i * 4;
        const int tok = min(f0 / NG, kTileTokens - 1);
        const long long row = row_at(ids, tok, t0 + tok);
        if (i < SCALE_CHUNKS) {
          const int left = valid - f0;
          const int bytes = left >= 4 ? 16 : (left > 0 ? left * 4 : 0);
          const long long src = bytes ? row * NG + f0 % NG : 0;
          uint8_t* base = st + 2 * F::CODE_BYTES + f0 * 4;
          if constexpr (IL) {
            const long long rr = bytes ? row : 0;
            const int off = bytes ? 4 * (f0 % NG) : 0;
            cp_async16(base, il(rr, 2, off), bytes);
            cp_async16(base + KM_BYTES, il(rr, 3, off), bytes);
            cp_async16(base + 2 * KM_BYTES, il(rr, 4, off), bytes);
            cp_async16(base + 2 * KM_BYTES + F::SCALE_BYTES, il(rr, 5, off), bytes);
            continue;
          }
          if constexpr (!CH) {
            cp_async16(base, ks_g + src, bytes);
            cp_async16(base + KM_BYTES, kz_g + src, bytes);
          }
          cp_async16(base + 2 * KM_BYTES, vs_g + src, bytes);
          cp_async16(base + 2 * KM_BYTES + F::SCALE_BYTES, vz_g + src, bytes);
        }
      }
    } else {  // rows (pages) of scales not 16-byte aligned: 4-byte copies
      for (int f0 = lane; f0 < kTileTokens * NG; f0 += 32) {
        const int tok = f0 / NG;
        const long long row = row_at(ids, tok, t0 + tok);
        const int bytes = f0 < valid ? 4 : 0;
        const long long src = bytes ? row * NG + f0 % NG : 0;
        uint8_t* base = st + 2 * F::CODE_BYTES + f0 * 4;
        if constexpr (!CH) {
          cp_async4(base, ks_g + src, bytes);
          cp_async4(base + KM_BYTES, kz_g + src, bytes);
        }
        cp_async4(base + 2 * KM_BYTES, vs_g + src, bytes);
        cp_async4(base + 2 * KM_BYTES + F::SCALE_BYTES, vz_g + src, bytes);
      }
    }
    if constexpr (CH) {  // the K blocks of tokens t0 and (k_block 32) t0 + 32: rows of HEAD_DIM floats
      constexpr int ROW_CHUNKS = HEAD_DIM / 4;
      const int rows = kb32 ? 2 : 1;
      uint32_t rws[2] = {0, 0};
      if constexpr (PAGED) {  // K block row (id * num_kv_heads + hkv) * k_blocks + ((gt & page_mask) >> kbs)
        // of token gt is its row >> kbs, as k_blocks = page >> kbs (the entry point)
        rws[0] = id_row(ids[0], t0);  // row of token t0
        rws[1] = id_row(ids[32], t0 + 32);  // of token t0 + 32
      }
      for (int i = lane; i < rows * ROW_CHUNKS; i += 32) {
        const int r = i / ROW_CHUNKS, cc = i % ROW_CHUNKS;
        const int gt = t0 + 32 * r;
        const bool live = gt < end;
        const long long krow =
            PAGED ? (long long)((r ? rws[1] : rws[0]) >> p.k_block_shift)
                  : (long long)bh * p.k_blocks + (gt >> p.k_block_shift);
        const long long src = live ? krow * HEAD_DIM + 4 * cc : 0;
        uint8_t* dst = st + 2 * F::CODE_BYTES + (r * HEAD_DIM + 4 * cc) * 4;
        cp_async16(dst, p.k_scale + src, live ? 16 : 0);
        cp_async16(dst + KM_BYTES, p.k_offset + src, live ? 16 : 0);
      }
    }
  };
  // The same copies for a full sub-tile (all 64 tokens before `end`) whose rows are adjacent in the
  // cache (contiguous; paged channel-wise K, whose pages hold >= 64 tokens: a sub-tile starts at a
  // multiple of 64, so it lies in one page) and whose scales take 16-byte copies (p.scales_aligned):
  // byte-identical shared memory with no per-chunk index, liveness, select or multiply. Why each copy is
  // the same as `issue`'s:
  //  - codes: issue's chunk i = lane + 32 jj comes from byte (t0 + i / NCH) * RB + 16 (i % NCH) =
  //    t0 * RB + 16 i of the rows (RB = 16 NCH) and goes to code_dst(lane, jj); code_swizzle_period
  //    checks both identities at compile time (the static_assert below), so per lane: one loop-invariant
  //    code_dst(lane, jj % SWZ_PERIOD) plus constants;
  //  - scales: float f0 = 4 i goes from row t0 + f0 / NG, float f0 % NG, i.e. float t0 * NG + 4 i of
  //    the adjacent rows, to byte 16 i of its array in the stage (all SCALE_CHUNKS = 16 NG chunks are
  //    whole: valid - f0 >= 4); at NG = 1 (16 chunks an array) lanes 16-31 copy the second array of a
  //    pair (kz, vz) in the same instruction, at its own stage offset;
  //  - channel-wise K rows: chunk i = r * HEAD_DIM / 4 + cc of K block row r (token t0 + 32 r) comes
  //    from float krow_r * HEAD_DIM + 4 cc with krow_r = krow_0 + r (t0 is a multiple of 64; k_block 32
  //    is the only case with r = 1, and the page holds t0 + 32 too), i.e. krow_0 * HEAD_DIM + 4 i, and
  //    goes to byte 16 i (paged: krow_0 = row(t0) >> k_block_shift, with k_blocks = page >> it);
  //  - paged rows: row(t0 + tok) = row(t0) + tok within one page.
  constexpr int SWZ_PERIOD = code_swizzle_period<F>();
  static_assert(SWZ_PERIOD == 1 || SWZ_PERIOD == 2, "code chunks: swizzle not periodic over 32-chunk rounds");
  constexpr int SCALE_CHUNKS = F::SCALE_BYTES / 16;  // 16 NG
  static_assert(SCALE_CHUNKS == 16 || SCALE_CHUNKS % 32 == 0, "scale chunks per sub-tile: 16 or a multiple of 32");
  int code_dst_lane[SWZ_PERIOD];
#pragma unroll
  for (int q = 0; q < SWZ_PERIOD; ++q) code_dst_lane[q] = code_dst<F>(lane, q);
  // paged, token-wise K, any page size the fast path takes (FlashInfer's usual 16 among them): a
  // sub-tile may span pages, but a 32-chunk round of codes (32 / NCH tokens from a multiple of 32 / NCH)
  // lies in one page when page >= 32 / NCH (as a 4-float scale chunk in one when page * NG >= 4,
  // implied): issue_full then takes the row of each round's first token from its id (one LDS of the
  // slot, the same address on every lane; no liveness or select; its other tokens' rows follow it,
  // row(tj + k) = row(tj) + k) and the scales' rows per lane as `issue` does. One path for every page
  // size: with a second one for pages >= 64 (adjacent rows) behind a runtime branch, the INT2 D=128 G=128 loop was 946
  // instructions, 866 without it (bench/NOTES.md §37). Channel-wise K: pages >= 64 only, adjacent rows.
  constexpr bool round_rows = PAGED && !CH;
  // an int: as a bool (i8 in cicc's IR) its phi became a predicate or a u16 depending on the rest of the
  // kernel, so that moving the epilogue into a function moved every instance's SASS; with `&` / `|`
  // instead of the branch, paged loops moved by up to 3% (bench/NOTES.md §20, session 11)
  const int fast_copies =
      p.scales_aligned ? (int)(!PAGED || p.page_shift >= 6 || (!CH && (NCH << p.page_shift) >= 32)) : 0;
  auto issue_full = [&](int it, const uint32_t* ids) {
    const uint32_t st = smem_u32(wsm) + (it % kStages) * STAGE_BYTES;
    const int t0 = first + it * stride;
    // row of token t0 (contiguous: from row0, where kc and the scale bases start; FOSCAR_L2_ONLY: the warp's first)
    long long trow = FOSCAR_L2_ONLY && !PAGED ? first : t0;
    if constexpr (PAGED && CH) trow = id_row(ids[0], t0);  // (its page holds the whole sub-tile)
    const uint32_t sst = st + 2 * F::CODE_BYTES;
    if constexpr (!round_rows) {  // the sub-tile's rows are adjacent
      const uint8_t* ksrc = IL ? (const uint8_t*)il(trow, 0, 16 * lane) : kc + trow * RB + 16 * lane;
      const uint8_t* vsrc = IL ? (const uint8_t*)il(trow, 1, 16 * lane) : vc + trow * RB + 16 * lane;
#pragma unroll
      for (int jj = 0; jj < kTileTokens * NCH / 32; ++jj) {
        const uint32_t dst = st + code_dst_lane[jj % SWZ_PERIOD] + (jj - jj % SWZ_PERIOD) * 512;
        cp_async16_full(dst, ksrc + 512 * jj);
        cp_async16_full(dst + F::CODE_BYTES, vsrc + 512 * jj);
      }
      const long long srow = trow * NG;  // float of token t0 in the scale rows
      if constexpr (IL) {  // each array's 64 NG floats adjacent in the block
#pragma unroll
        for (int q = 0; q < (SCALE_CHUNKS + 31) / 32; ++q) {
          const int i = lane + 32 * q;
          if (i < SCALE_CHUNKS) {
            const uint8_t* sb = (const uint8_t*)il(trow, 2, 16 * i);
            cp_async16_full(sst + 16 * i, sb);
            cp_async16_full(sst + KM_BYTES + 16 * i, sb + 256 * NG);
            cp_async16_full(sst + 2 * KM_BYTES + 16 * i, sb + 512 * NG);
            cp_async16_full(sst + 2 * KM_BYTES + F::SCALE_BYTES + 16 * i, sb + 768 * NG);
          }
        }
      } else if constexpr (SCALE_CHUNKS == 16) {  // lanes 0-15: ks, vs; lanes 16-31: kz, vz
        const int h = lane / 16, i = lane % 16;
        if constexpr (!CH) cp_async16_full(sst + h * KM_BYTES + 16 * i, (h ? kz_g : ks_g) + srow + 4 * i);
        cp_async16_full(sst + 2 * KM_BYTES + h * F::SCALE_BYTES + 16 * i, (h ? vz_g : vs_g) + srow + 4 * i);
      } else {
#pragma unroll
        for (int q = 0; q < SCALE_CHUNKS / 32; ++q) {
          const int i = lane + 32 * q;
          if constexpr (!CH) {
            cp_async16_full(sst + 16 * i, ks_g + srow + 4 * i);
            cp_async16_full(sst + KM_BYTES + 16 * i, kz_g + srow + 4 * i);
          }
          cp_async16_full(sst + 2 * KM_BYTES + 16 * i, vs_g + srow + 4 * i);
          cp_async16_full(sst + 2 * KM_BYTES + F::SCALE_BYTES + 16 * i, vz_g + srow + 4 * i);
        }
      }
    } else {  // paged, token-wise K, pages of >= 32 / NCH tokens: one page per round
      // every id first: ptxas keeps an LDS of the slot after a cp.async issued before it (both shared
      // memory), so ids read between the copies cost an LDS round trip each
      constexpr int ROUNDS = kTileTokens * NCH / 32;
      constexpr int SQ = SCALE_CHUNKS == 16 ? 1 : SCALE_CHUNKS / 32;
      uint32_t idj[ROUNDS], ids_q[SQ];
#pragma unroll
      for (int jj = 0; jj < ROUNDS; ++jj) idj[jj] = ids[32 * jj / NCH];  // first token of round jj
#pragma unroll
      for (int q = 0; q < SQ; ++q) ids_q[q] = ids[4 * (SCALE_CHUNKS == 16 ? lane % 16 : lane + 32 * q) / NG];
#pragma unroll
      for (int jj = 0; jj < ROUNDS; ++jj) {
        const int tj = 32 * jj / NCH;  // first token of round jj, its page that of the whole round
        const uint32_t rowj = id_row(idj[jj], t0 + tj);
        const long long src = (long long)rowj * RB + 16 * lane;  // = issue's row * RB + 16 c
        const uint32_t dst = st + code_dst_lane[jj % SWZ_PERIOD] + (jj - jj % SWZ_PERIOD) * 512;
        cp_async16_full(dst, kc + src);
        cp_async16_full(dst + F::CODE_BYTES, vc + src);
      }
      if constexpr (SCALE_CHUNKS == 16) {  // issue's chunk i = lane % 16, rows per lane (row_at)
        const int h = lane / 16, i = lane % 16, tok = 4 * i / NG;
        const long long src = (long long)id_row(ids_q[0], t0 + tok) * NG + 4 * i % NG;
        cp_async16_full(sst + h * KM_BYTES + 16 * i, (h ? kz_g : ks_g) + src);
        cp_async16_full(sst + 2 * KM_BYTES + h * F::SCALE_BYTES + 16 * i, (h ? vz_g : vs_g) + src);
      } else {
#pragma unroll
        for (int q = 0; q < SCALE_CHUNKS / 32; ++q) {
          const int i = lane + 32 * q, tok = 4 * i / NG;
          const long long src = (long long)id_row(ids_q[q], t0 + tok) * NG + 4 * i % NG;
          cp_async16_full(sst + 16 * i, ks_g + src);
          cp_async16_full(sst + KM_BYTES + 16 * i, kz_g + src);
          cp_async16_full(sst + 2 * KM_BYTES + 16 * i, vs_g + src);
          cp_async16_full(sst + 2 * KM_BYTES + F::SCALE_BYTES + 16 * i, vz_g + src);
        }
      }
    }
    if constexpr (CH) {
      constexpr int ROW_CHUNKS = HEAD_DIM / 4;
      const int chunks = (kb32 ? 2 : 1) * ROW_CHUNKS;
      // K block row of token t0; paged: (id * num_kv_heads + hkv) * k_blocks + ((t0 & page_mask) >> kbs)
      // is trow >> kbs, as k_blocks = page >> kbs there (the entry point)
      const long long krow = PAGED ? trow >> p.k_block_shift : (long long)bh * p.k_blocks + (t0 >> p.k_block_shift);
      const float* ksc = p.k_scale + krow * HEAD_DIM;
      const float* kof = p.k_offset + krow * HEAD_DIM;
#pragma unroll
      for (int q = 0; q < (2 * ROW_CHUNKS + 31) / 32; ++q) {
        const int i = lane + 32 * q;
        if (i < chunks) {
          cp_async16_full(sst + 16 * i, ksc + 4 * i);
          cp_async16_full(sst + KM_BYTES + 16 * i, kof + 4 * i);
        }
      }
    }
  };
  // issue sub-tiles in order; paged: the copies of sub-tile it read its ids from slot it % kStages,
  // which then takes the ids of sub-tile it + kStages (in it's commit group, completed by the wait of
  // step it, before step it + 1 issues sub-tile it + kStages). The __syncwarp: every lane has read the
  // slot before any lane refills it. FULL: the sub-tile is full and fast_copies holds (issue_full)
  auto issue_next = [&](int it, auto full) {  // sub-tile it, the one after the last issued
    if constexpr (decltype(full)::value)
      issue_full(it, ids_of(it));
    else
      issue(it, ids_of(it));
    if constexpr (PAGED) {
      __syncwarp();
      copy_ids(it + kStages);
    }
  };

  // ---- the integer QK's query, loaded before the prologue's copies: issued after them, at a one-wave point its loads
  // waited behind every CTA's first sub-tile in the memory system (~2 us from find_work to the loop at INT2 8 x 32K
  // against 0.75 at 1 x 16, bench/NOTES.md §66). The lane's 8 x KS32 query values, each loaded once (they were loaded
  // twice, as 2-byte loads: NOTES §48): groups of 4 adjacent channels F::ibase(k) + 4tig + 16r + {0..3} (F::ibase a
  // multiple of 4), one 8-byte load each where the head's row starts 8-byte aligned (every row of a contiguous query
  // with an 8-byte aligned base), else four 2-byte loads (a view at a 2-byte offset, rows of head_dim + 2 elements,
  // ...); converted to fp32 below
  const int gh = PK ? g & 3 : g;  // PK: columns 4-7 repeat heads 0-3 (gqa <= 4)
  const bool qlive = gh < p.gqa;
  uint2 qraw[KS32][2];
  if constexpr (IMMA) {
    const __nv_bfloat16* qh = p.q + b * p.q_stride_b + (long long)(hkv * p.gqa + gh) * p.q_stride_h;
    if (qlive && (reinterpret_cast<uintptr_t>(qh) & 7u) == 0) {
#pragma unroll
      for (int k = 0; k < KS32; ++k)
#pragma unroll
        for (int r = 0; r < 2; ++r) qraw[k][r] = *reinterpret_cast<const uint2*>(qh + F::ibase(k) + 4 * tig + 16 * r);
    } else {
      const unsigned short* qs16 = reinterpret_cast<const unsigned short*>(qh);
#pragma unroll
      for (int k = 0; k < KS32; ++k)
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const int c = F::ibase(k) + 4 * tig + 16 * r;
          qraw[k][r] = qlive ? make_uint2((uint32_t)qs16[c] | ((uint32_t)qs16[c + 1] << 16),
                                          (uint32_t)qs16[c + 2] | ((uint32_t)qs16[c + 3] << 16))
                             : make_uint2(0u, 0u);
        }
    }
  }

  // prologue: the ids of sub-tiles 0 .. kStages - 1 (a group of their own, waited for here), then the
  // first kStages - 1 sub-tiles in flight while the query (the integer QK's: loaded above) is loaded and folded
  // (filling every stage here, with each step issuing at its end, measured slower: bench/NOTES.md §66)
  if constexpr (PAGED) {
#pragma unroll
    for (int s0 = 0; s0 < kStages; ++s0) copy_ids(s0);
    cp_async_commit();
    cp_async_wait<0>();
    __syncwarp();
  }
#pragma unroll
  for (int s0 = 0; s0 < kStages - 1; ++s0) {
    if (s0 < iters) issue_next(s0, std::false_type{});
    cp_async_commit();
  }

  // ---- query fragments (B of QK), head n = g; k order of step (c, pl): bytes 4tig + {0, 2} | {1, 3}
  // (channel-wise K: the raw query, scaled per K block into qc below)
  uint32_t qf[(FP8 && !CH) || IMMA ? 1 : KSTEPS][2];
  if constexpr ((!FP8 || CH) && !IMMA) {
    const __nv_bfloat16* qh = p.q + b * p.q_stride_b + (long long)(hkv * p.gqa + g) * p.q_stride_h;
    const bool live = g < p.gqa;
#pragma unroll
    for (int c = 0; c < NCH; ++c)
#pragma unroll
      for (int pl = 0; pl < P; ++pl) {
        const int ch = pl * RB + 16 * c + 4 * tig;
        // folded: plane pl's query times 2^-E (exact in BF16), E = F::pexp(pl)
        const float sc = PER_VALUE || CH ? 1.f : 1.f / (1 << F::pexp(pl));
        __nv_bfloat16 x0 = __float2bfloat16(live ? __bfloat162float(qh[ch + 0]) * sc : 0.f);
        __nv_bfloat16 x1 = __float2bfloat16(live ? __bfloat162float(qh[ch + 1]) * sc : 0.f);
        __nv_bfloat16 x2 = __float2bfloat16(live ? __bfloat162float(qh[ch + 2]) * sc : 0.f);
        __nv_bfloat16 x3 = __float2bfloat16(live ? __bfloat162float(qh[ch + 3]) * sc : 0.f);
        qf[c * P + pl][0] = (uint32_t)__bfloat16_as_ushort(x0) | ((uint32_t)__bfloat16_as_ushort(x2) << 16);
        qf[c * P + pl][1] = (uint32_t)__bfloat16_as_ushort(x1) | ((uint32_t)__bfloat16_as_ushort(x3) << 16);
      }
  }
  // sums of the BF16 query per group, for the heads of this lane's accumulator columns (2tig, 2tig+1):
  // qsum = sum(Q_g); folded BF16: nqs = -sum(Q'_g) of the plane-scaled query the mma reads, where
  // the QK accumulators start (so they end at sum(code * Q) / 128), and qsum is premultiplied by
  // sm_scale log2(e)
  float qsum[NG][2], nqs[NG][2];
  if constexpr (!FP8 && !CH && !IMMA) {
#pragma unroll
  for (int gr = 0; gr < NG; ++gr) {
    float s = 0.f, sq = 0.f;
#pragma unroll
    for (int k = 0; k < KSTEPS; ++k) {
      const int c = k / P, pl = k % P;
      if ((pl * RB + 16 * c) / GROUP == gr) {
        const float x = bf16_lo(qf[k][0]) + bf16_hi(qf[k][0]) + bf16_lo(qf[k][1]) + bf16_hi(qf[k][1]);
        sq += x;
        s += PER_VALUE ? x : x * (1 << F::pexp(pl));
      }
    }
    s += __shfl_xor_sync(0xffffffffu, s, 1);
    s += __shfl_xor_sync(0xffffffffu, s, 2);  // lanes of row g hold sum(Q_gr) of head g
    sq += __shfl_xor_sync(0xffffffffu, sq, 1);
    sq += __shfl_xor_sync(0xffffffffu, sq, 2);
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      qsum[gr][j] = __shfl_sync(0xffffffffu, s, (2 * tig + j) * 4) * (PER_VALUE ? 1.f : p.qk_scale_log2);
      nqs[gr][j] = -__shfl_sync(0xffffffffu, sq, (2 * tig + j) * 4);
    }
  }
  }
  // ---- integer QK (IMMA): per head the softmax factor qk_h = sm_scale log2(e) d > 0 is the smallest
  // power of two >= |sm_scale log2(e)| max|Q_h| / 32639, and the query's fixed-point scale d = qk_h /
  // (sm_scale log2(e)) (the sign of sm_scale; |d| in [1, 2) max|Q_h| / 32639): qi = rint(Q / d),
  // |qi| <= 32639, split into s8 parts qi = 256 hi + lo (lo = qi's low byte as s8); B fragments
  // qih / qil of step k: channels F::ibase(k) + 4tig + {0..3} | + 16 (byte i = channel + i).
  // qsum = sum(qi 2^hexp) over group g (sum(Q_g) / d up to the rounding: S' is the dot of the dequantized K with the
  // rounded query), and per column head qk_h: scores stay in units of d (S = qk_h S') until the softmax. sm_scale 0:
  // qi = 0, qsum = 0 (a NaN in Q kept), qk_h = 1: every score 0 as in BF16.
  // Why a power of two: the softmax takes the max of S' times qk_h (m) and exp2(fmaf(S', qk_h, -m)),
  // whose product is not rounded: for the winning token that is the rounding error of m, up to half an
  // ulp of the score (1e22 at a score of 1e29, K near the documented 1e30: exp2 gave inf; bench/NOTES.md
  // §24, tests/test_imma_fold_range.py). A power of two makes both products exact (the winner's exponent
  // is 0, as the BF16 path's s - m), for at most one bit of the fixed point's resolution.
  // Range (K, V up to the documented 1e30; mirrored in tests/test_imma_fold_range.py): the fold's
  // products and partial sums are |S'| <~ 1e30 * 32639 * head_dim <= 8.4e36 (each |s code 2^-e dot|,
  // |z sum(Q_g) / d| <= 2e30 * 32639 * G); fp32 ends at 3.4e38. The scores S'qk_h are the BF16 path's.
  uint32_t qih[KS32][2], qil[KS32][2];
  float qkh[2];
  if constexpr (IMMA) {
    float qv[KS32][2][4];
#pragma unroll
    for (int k = 0; k < KS32; ++k)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        qv[k][r][0] = __uint_as_float(qraw[k][r].x << 16);
        qv[k][r][1] = __uint_as_float(qraw[k][r].x & 0xFFFF0000u);
        qv[k][r][2] = __uint_as_float(qraw[k][r].y << 16);
        qv[k][r][3] = __uint_as_float(qraw[k][r].y & 0xFFFF0000u);
      }
    // max |Q| of the lane's values as a tree of depth log2(8 KS32), not a chain of 4 KS32 dependent FMNMX (fmaxf is
    // exact: the same value in any order; bench/NOTES.md §54)
    float t[KS32 * 8];
#pragma unroll
    for (int k = 0; k < KS32; ++k)
#pragma unroll
      for (int r = 0; r < 2; ++r)
#pragma unroll
        for (int j = 0; j < 4; ++j) t[(2 * k + r) * 4 + j] = fabsf(qv[k][r][j]);
    float amax = fmaxf(0.f, tree_max<KS32 * 8>(t, 0));
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 2));  // row g: max |Q| of head g
    const float qk = p.qk_scale_log2;
    // |qk| max|Q_h| / 32639 (max|Q| at least 2^-90 and the result at least 2^-126: 1 / d stays finite),
    // rounded up to a power of two (a normal x: add the largest mantissa, clear the mantissa); then
    // |Q / d| = |Q qk| / qk_h <= 32639 (1 + 4 2^-24) rounds to <= 32639. (Valid while |qk| max|Q_h| <
    // 2^127 32639: any BF16 query with |sm_scale| <= 11000.)
    const float x = fmaxf(fmaxf(amax, 0x1p-90f) * (1.f / 32639.f) * fabsf(qk), 0x1p-126f);
    const float qk_h = qk == 0.f ? 1.f : __uint_as_float((__float_as_uint(x) + 0x7FFFFFu) & 0xFF800000u);
    // 1 / d = qk / qk_h, exact (qk times a power of two), as (qk 2^(1 - e)) / 2 for qk_h = 2^e, e in [-126, 127]:
    // 2^(1 - e) is a normal float whose bits are 0x7F800000 - qk_h's, a power of two scales qk exactly (a subnormal
    // qk too: there qk_h = 2^-126), and |qk / qk_h| in [2^-115, 2^106) is normal, so both products are exact and
    // inv is the division's value (whose ~12-instruction IEEE sequence was on the query's chain, NOTES §74)
    const float inv = qk == 0.f ? 0.f : (qk * __uint_as_float(0x7F800000u - __float_as_uint(qk_h))) * 0.5f;
    float qs[NG];
#pragma unroll
    for (int gr = 0; gr < NG; ++gr) qs[gr] = 0.f;
#pragma unroll
    for (int k = 0; k < KS32; ++k) {
      const int gr = F::ibase(k) / GROUP;
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        // qi = 256 hi + lo, lo = qi's low byte as s8: hi = (qi + 128) >> 8, whose low byte is byte 1 of qi + 128;
        // bytes gathered with prmt (lo: byte 0 of each qi, hi: byte 1 of each qi + 128)
        // rint on the FMA pipe instead of F2I: Q / d rounded to fp32 first (__fmul_rn: never contracted), then
        // 1.5 2^23 added, which rounds to the nearest integer, ties to even, as __float2int_rn does (1.5 2^23 is
        // even, and |Q / d| <= 32640 < 2^22 keeps the sum in [2^23, 2^24), where the fp32 ulp is 1): the sum's
        // bits are 0x4B400000 + qi, whose two low bytes, the only ones used, are qi's. A NaN in Q (or an infinite
        // one, whose max makes 1 / d zero and its product NaN) gives other bytes than __float2int_rn's 0, but makes
        // its group's qsum, and so every score of the head, NaN anyway
        int qi[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          // (F::hexp(k) > 0: Q / (d 2^hexp), |qi| <= 8160; inv 2^-hexp is exact, a power of two times qk)
          const float y = __fadd_rn(__fmul_rn(qv[k][r][j], inv * (1.f / (1 << F::hexp(k)))), 0x1.8p23f);
          qi[j] = (int)__float_as_uint(y);
          // the group's sum of the rounded query, qi 2^hexp (y - 1.5 2^23 = qi exactly; the sums are integers below
          // 2^23, exact in fp32), not of Q / d: then z sum + s dot is the dot of the dequantized K with the rounded
          // query, and the query's rounding error meets k = s code + z, not s code alone (whose mean, s (2^b - 1) / 2,
          // turned the errors' sum into an LSE shift; bench/NOTES.md §63). A NaN in Q: y NaN, so qs NaN as before
          qs[gr] = fmaf(y - 0x1.8p23f, (float)(1 << F::hexp(k)), qs[gr]);
        }
        const uint32_t l01 = __byte_perm(qi[0], qi[1], 0x0040), l23 = __byte_perm(qi[2], qi[3], 0x0040);
        const uint32_t h01 = __byte_perm(qi[0] + 128, qi[1] + 128, 0x0051);
        const uint32_t h23 = __byte_perm(qi[2] + 128, qi[3] + 128, 0x0051);
        qil[k][r] = __byte_perm(l01, l23, 0x5410);
        qih[k][r] = __byte_perm(h01, h23, 0x5410);
      }
    }
#pragma unroll
    for (int gr = 0; gr < NG; ++gr) {
      float a = qs[gr];
      a += __shfl_xor_sync(0xffffffffu, a, 1);
      a += __shfl_xor_sync(0xffffffffu, a, 2);
      // a: sum(qi 2^hexp) over group g of head g, = sum(Q_g) / d up to the query's rounding
#pragma unroll
      for (int j = 0; j < 2; ++j) qsum[gr][j] = __shfl_sync(0xffffffffu, a, (2 * tig + j) * 4);
    }
#pragma unroll
    for (int j = 0; j < 2; ++j) qkh[j] = __shfl_sync(0xffffffffu, qk_h, (2 * tig + j) * 4);
  }
  // TP: the query of a pair's first tile (qth[0], qtl[0]: columns 0-3, zero in 4-7) and of its second (qth[1],
  // qtl[1]: columns 4-7); column n = g of the B layout
  uint32_t qth[TP ? 2 : 1][TP ? KS32 : 1][2], qtl[TP ? 2 : 1][TP ? KS32 : 1][2];
  if constexpr (TP) {
    // (volatile: built here once; as plain selects, cicc moved 32 of them into the loop, one per use)
    const uint32_t m0 = g < 4 ? 0xFFFFFFFFu : 0u, m1 = ~m0;
    auto masked = [](uint32_t x, uint32_t m) {
      uint32_t r;
      asm volatile("and.b32 %0, %1, %2;\n" : "=r"(r) : "r"(x), "r"(m));
      return r;
    };
#pragma unroll
    for (int k = 0; k < KS32; ++k)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        qth[0][k][r] = masked(qih[k][r], m0);
        qtl[0][k][r] = masked(qil[k][r], m0);
        qth[1][k][r] = masked(qih[k][r], m1);
        qtl[1][k][r] = masked(qil[k][r], m1);
      }
  }
  // FP8: query fragments (B of QK, k32 step (cp, pl): channels pl*RB + 32cp + 4tig + {0..3} | +16),
  // per head sigma; per group and column head: sum(Q) * qk, C0 * sum(q8/sigma - q) * qk; 2^9/sigma * qk
  uint32_t qf8[KS8][2];
  float qerr[FP8 ? NG : 1][2], cq[2];
  if constexpr (FP8 && !CH) {
    const __nv_bfloat16* qh = p.q + b * p.q_stride_b + (long long)(hkv * p.gqa + g) * p.q_stride_h;
    const bool live = g < p.gqa;
    auto qv = [&](int ch) { return live ? __bfloat162float(qh[ch]) : 0.f; };
    float amax = 0.f;
#pragma unroll
    for (int k = 0; k < KS8; ++k) {
      const int base = (k % P) * RB + 32 * (k / P) + 4 * tig;
#pragma unroll
      for (int j = 0; j < 4; ++j) amax = fmaxf(amax, fmaxf(fabsf(qv(base + j)), fabsf(qv(base + 16 + j))));
    }
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
    const float sigma = amax > 0.f ? 448.f / amax : 1.f;
    const float inv_sigma = 1.f / sigma;
    float qs[NG], qe[NG];
#pragma unroll
    for (int gr = 0; gr < NG; ++gr) qs[gr] = qe[gr] = 0.f;
#pragma unroll
    for (int k = 0; k < KS8; ++k) {
      const int base = (k % P) * RB + 32 * (k / P) + 4 * tig;
      const int gr = ((k % P) * RB + 32 * (k / P)) / GROUP;
      float x[8];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        x[j] = qv(base + j);
        x[4 + j] = qv(base + 16 + j);
      }
      // e4m3 pairs as their exact f16x2, packed to bytes from there (not read back from the bytes
      // with e4m3_to_f32: ptxas 13.0 at -O3 miscompiled that pattern in the channel-wise rebuild)
      uint32_t h[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) h[j] = round_to_e4m3_as_f16x2(x[2 * j] * sigma, x[2 * j + 1] * sigma);
      qf8[k][0] = f16x2_to_e4m3x2(h[0]) | (f16x2_to_e4m3x2(h[1]) << 16);
      qf8[k][1] = f16x2_to_e4m3x2(h[2]) | (f16x2_to_e4m3x2(h[3]) << 16);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        qs[gr] += x[2 * j] + x[2 * j + 1];
        qe[gr] += (f16_lo(h[j]) * inv_sigma - x[2 * j]) + (f16_hi(h[j]) * inv_sigma - x[2 * j + 1]);
      }
    }
    const float cq_g = 512.f * inv_sigma * p.qk_scale_log2;
#pragma unroll
    for (int j = 0; j < 2; ++j) cq[j] = __shfl_sync(0xffffffffu, cq_g, (2 * tig + j) * 4);
#pragma unroll
    for (int gr = 0; gr < NG; ++gr) {
      float a = qs[gr], e = qe[gr];
      a += __shfl_xor_sync(0xffffffffu, a, 1);
      a += __shfl_xor_sync(0xffffffffu, a, 2);
      e += __shfl_xor_sync(0xffffffffu, e, 1);
      e += __shfl_xor_sync(0xffffffffu, e, 2);
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        qsum[gr][j] = __shfl_sync(0xffffffffu, a, (2 * tig + j) * 4) * p.qk_scale_log2;
        qerr[gr][j] = __shfl_sync(0xffffffffu, e, (2 * tig + j) * 4) * (F::C0 * p.qk_scale_log2);
      }
    }
  }

  // ---- channel-wise K: the query of one K block (rows sr, zr of its scales and offsets in shared
  // memory) as B fragments qc (FP16, or e4m3 in qc[k8] for FP8), and per column head (2tig + j) the
  // score of a token, acc * cs[j] + cb[j] (log2 domain)
  uint32_t qc[CH && !PER_VALUE ? (FP8 ? KS8 : KSTEPS) : 1][2];
  float cs[2], cb[2];
  auto build_channel_query = [&](const float* sr, const float* zr) {
    if constexpr (CH && !PER_VALUE) {
      // the raw query of channel pl * RB + 16c + 4tig + j, step k = c * P + pl (qf is built in every CH mode)
      auto q_raw = [&](int k, int j) -> float {
        return j == 0 ? bf16_lo(qf[k][0]) : j == 1 ? bf16_lo(qf[k][1]) : j == 2 ? bf16_hi(qf[k][0]) : bf16_hi(qf[k][1]);
      };
      float y[KSTEPS][4];  // Q s
      float amax = 0.f, qz = 0.f;
#pragma unroll
      for (int k = 0; k < KSTEPS; ++k) {
        const int ch = (k % P) * RB + 16 * (k / P) + 4 * tig;
        const float4 s4 = *reinterpret_cast<const float4*>(sr + ch);
        const float4 z4 = *reinterpret_cast<const float4*>(zr + ch);
        const float sv[4] = {s4.x, s4.y, s4.z, s4.w}, zv[4] = {z4.x, z4.y, z4.z, z4.w};
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const float q = q_raw(k, j);
          y[k][j] = q * sv[j];
          amax = fmaxf(amax, fabsf(y[k][j]));
          qz = fmaf(q, zv[j], qz);
        }
      }
      amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
      amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
      qz += __shfl_xor_sync(0xffffffffu, qz, 1);
      qz += __shfl_xor_sync(0xffffffffu, qz, 2);
      float scale, bias;  // of head g: score = acc * scale + bias
      if constexpr (!FP8) {  // fp16(Q s 2^-E / f), f = max |Q s| / 2^14
        const float f = amax > 0.f ? amax * (1.f / 16384.f) : 1.f;
        const float inv = 1.f / f;
#pragma unroll
        for (int k = 0; k < KSTEPS; ++k) {
          const float m = inv * (1.f / (1 << (BITS * (k % P))));  // plane pl's codes sit at bits E = BITS pl
          qc[k][0] = pack_f16x2(y[k][0] * m, y[k][2] * m);
          qc[k][1] = pack_f16x2(y[k][1] * m, y[k][3] * m);
        }
        scale = f * 16777216.f * p.qk_scale_log2;
        bias = qz * p.qk_scale_log2;
      } else {  // e4m3(Q s sigma), sigma = 448 / max |Q s|; rounding corrected around C0 as in the prologue
        const float sigma = amax > 0.f ? 448.f / amax : 1.f;
        const float inv_sigma = 1.f / sigma;
        float qe = 0.f;
#pragma unroll
        for (int k8 = 0; k8 < KS8; ++k8) {
#pragma unroll
          for (int r = 0; r < 2; ++r) {  // chunks 2cp, 2cp + 1 of plane pl; bytes = channels ch + 0..3
            const int k = (2 * (k8 / P) + r) * P + k8 % P;
            // e4m3 pairs as their exact f16x2 (as P' below). (Reading the bytes back with e4m3_to_f32,
            // as the prologue does, gave a wrong qe in this second-block rebuild on the H200.)
            const uint32_t h01 = round_to_e4m3_as_f16x2(y[k][0] * sigma, y[k][1] * sigma);
            const uint32_t h23 = round_to_e4m3_as_f16x2(y[k][2] * sigma, y[k][3] * sigma);
            qc[k8][r] = f16x2_to_e4m3x2(h01) | (f16x2_to_e4m3x2(h23) << 16);
            qe += (f16_lo(h01) * inv_sigma - y[k][0]) + (f16_hi(h01) * inv_sigma - y[k][1]) +
                  (f16_lo(h23) * inv_sigma - y[k][2]) + (f16_hi(h23) * inv_sigma - y[k][3]);
          }
        }
        qe += __shfl_xor_sync(0xffffffffu, qe, 1);
        qe += __shfl_xor_sync(0xffffffffu, qe, 2);
        scale = 512.f * inv_sigma * p.qk_scale_log2;
        bias = (qz - F::C0 * qe) * p.qk_scale_log2;
      }
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        cs[j] = __shfl_sync(0xffffffffu, scale, (2 * tig + j) * 4);
        cb[j] = __shfl_sync(0xffffffffu, bias, (2 * tig + j) * 4);
      }
    }
  };

  float o_acc[KSTEPS][4];
#pragma unroll
  for (int k = 0; k < KSTEPS; ++k)
#pragma unroll
    for (int i = 0; i < 4; ++i) o_acc[k][i] = 0.f;
  float m_run[2] = {-INFINITY, -INFINITY};
  float l_part[2] = {0.f, 0.f};


  // One step: issue sub-tile it + kStages - 1, compute sub-tile it. FULL: both are full and the copies
  // take issue_full, and sub-tile it needs no token mask.
  auto step = [&](int it, auto full) {
    constexpr bool FULL = decltype(full)::value;
    if (FULL || it + kStages - 1 < iters) issue_next(it + kStages - 1, full);
    cp_async_commit();
    cp_async_wait<kStages - 1>();  // sub-tile `it` has landed
    __syncwarp();
    if (it == 0) FOSCAR_TL(5, clock64());
    const uint8_t* st = wsm + (it % kStages) * STAGE_BYTES;
    const uint8_t* ksm = st;
    const uint8_t* vsm = st + F::CODE_BYTES;
    const float* ks = reinterpret_cast<const float*>(st + 2 * F::CODE_BYTES);  // channel-wise K: 2 rows of HEAD_DIM
    const float* kz = ks + KM_BYTES / 4;
    const float* vs = ks + 2 * KM_BYTES / 4;
    const float* vz = vs + kTileTokens * NG;
    const int t0 = first + it * stride;

    // ---- QK: 4 m16 token tiles, folded per group into log2-domain scores s[mt][i] (TP: mt a pair of m16 tiles,
    // 2mt and 2mt + 1, in columns 0-3 and 4-7)
    float s[NT][4];
#pragma unroll
    for (int mt = 0; mt < NT; ++mt) {
      // channel-wise K: this m16 tile's K block rows (the second at k_block 32 for tiles 2, 3)
      [[maybe_unused]] const int krow = CH && kb32 && mt >= 2 ? HEAD_DIM : 0;
      if constexpr (CH && !PER_VALUE) {
        if (mt == 0 || (kb32 && mt == 2)) build_channel_query(ks + krow, kz + krow);
      }
      float acc[KG][4];  // folded BF16: starts at nqs (in the group's first mma)
#pragma unroll
      for (int gr = 0; gr < KG; ++gr)
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[gr][i] = 0.f;
      // IMMA: sum(code 2^iexp qi) = 256 ah + al, exact in int32: code 2^iexp <= 240 (u8 lanes: INT4 in
      // place 15 << 4, INT2 3 << 6), |hi|, |lo| <= 128, |qi| <= 32639, at most GROUP <= 128 channels per
      // group, so |ah|, |al| <= 240 128 128 < 2^22, |256 ah| and |256 ah + al| <= 240 32639 128 < 2^30
      int ah[IMMA ? NG : 1][4], al[IMMA ? NG : 1][4];
      if constexpr (IMMA) {
        // one step: the A fragment's codes (4 per word, u8 lanes), hi and lo mma of its group, then
        // (EARLY_FOLD, after the group's last step) its fold, as below
        if constexpr (EARLY_FOLD) {
#pragma unroll
          for (int i = 0; i < 4; ++i) s[mt][i] = 0.f;
        }
        // the B fragments of step k (TP: of the pair's tile sub)
        auto qb = [&](int sub, int k, int r, bool hi) -> uint32_t {
          if constexpr (TP)
            return hi ? qth[sub][k][r] : qtl[sub][k][r];
          else
            return hi ? qih[k][r] : qil[k][r];
        };
        auto imma_step = [&](int k, const uint32_t (&a)[4], int sub) {
          const int gr = F::ibase(k) / GROUP;
          if (F::ifirst(k) && sub == 0) {
            mma_u8s8<true>(ah[gr], a, qb(sub, k, 0, true), qb(sub, k, 1, true));
            mma_u8s8<true>(al[gr], a, qb(sub, k, 0, false), qb(sub, k, 1, false));
          } else {
            mma_u8s8<false>(ah[gr], a, qb(sub, k, 0, true), qb(sub, k, 1, true));
            mma_u8s8<false>(al[gr], a, qb(sub, k, 0, false), qb(sub, k, 1, false));
          }
          if (EARLY_FOLD && F::ilast(k)) {
#pragma unroll
            for (int half = 0; half < 2; ++half) {
              const int tl = mt * 16 + g + 8 * half;
              const float a_t = ks[tl * NG + gr] * (1.f / (1 << F::iexp(k))), zo = kz[tl * NG + gr];
#pragma unroll
              for (int j = 0; j < 2; ++j) {
                const float dot = (float)(ah[gr][2 * half + j] * 256 + al[gr][2 * half + j]);
                s[mt][2 * half + j] = fmaf(dot, a_t, fmaf(qsum[gr][j], zo, s[mt][2 * half + j]));
              }
            }
          }
        };
        constexpr uint32_t M4 = F::MASK4;
#pragma unroll
        for (int sub = 0; sub < (TP ? 2 : 1); ++sub) {
        const int mtk = TP ? 2 * mt + sub : mt;  // the m16 tile of these codes
        if constexpr (NCH % 2 == 0) {
#pragma unroll
          for (int cp = 0; cp < NCH / 2; ++cp) {
            uint32_t w[4];  // the A fragment's bytes (4 codes each)
            ldmatrix_k32<F>(w, ksm, mtk, cp, lane);
#pragma unroll
            for (int pl = 0; pl < P; ++pl) {
              const int k = cp * P + pl, sh = BITS * pl;
              uint32_t a[4];
#pragma unroll
              for (int i = 0; i < 4; ++i)
                a[i] = F::IMMA_IN_PLACE ? w[i] & (M4 << sh) : (w[i] >> (sh - F::hexp(k))) & (M4 << F::hexp(k));
              imma_step(k, a, sub);
            }
          }
        } else {  // one chunk: step k = planes 2k (a0, a1) and 2k + 1 (a2, a3)
          uint32_t w[2];
          {
            const int tok = mtk * 16 + (lane & 15);
            ldmatrix_x2(w, smem_u32(ksm + tok * RB + 16 * swz(tok, 0, NCH, F::ROWS_PER_SWZ)));
          }
#pragma unroll
          for (int k = 0; k < KS32; ++k) {
            const int e = F::iexp(k), sh = 2 * BITS * k;
            uint32_t a[4];
            a[0] = F::IMMA_IN_PLACE ? w[0] & (M4 << e) : (w[0] >> sh) & M4;
            a[1] = F::IMMA_IN_PLACE ? w[1] & (M4 << e) : (w[1] >> sh) & M4;
            a[2] = F::IMMA_IN_PLACE ? (w[0] >> BITS) & (M4 << e) : (w[0] >> (sh + BITS)) & M4;
            a[3] = F::IMMA_IN_PLACE ? (w[1] >> BITS) & (M4 << e) : (w[1] >> (sh + BITS)) & M4;
            imma_step(k, a, sub);
          }
        }
        }
      } else if constexpr (FP8) {
#pragma unroll
        for (int cp = 0; cp < NCH / 2; ++cp) {
          uint32_t w[4];
          ldmatrix_k32<F>(w, ksm, mt, cp, lane);
#pragma unroll
          for (int pl = 0; pl < P; ++pl) {
            const int sh = BITS * pl;
            const uint32_t a[4] = {(w[0] >> sh) & F::MASK4, (w[1] >> sh) & F::MASK4, (w[2] >> sh) & F::MASK4,
                                   (w[3] >> sh) & F::MASK4};
            if constexpr (CH)
              mma_fp8(acc[0], a, qc[cp * P + pl][0], qc[cp * P + pl][1]);
            else
              mma_fp8(acc[(pl * RB + 32 * cp) / GROUP], a, qf8[cp * P + pl][0], qf8[cp * P + pl][1]);
          }
        }
      } else {
#pragma unroll
      for (int c = 0; c < NCH; ++c) {
        // words: token g / g+8 of this tile, chunk c: bytes 16c + 4tig .. +3
        uint32_t w[2];
        {
          const int tok = mt * 16 + (lane & 8) + (lane & 7);  // lanes 0-7: rows 0-7, 8-15: rows 8-15
          ldmatrix_x2(w, smem_u32(ksm + tok * RB + 16 * swz(tok, c, NCH, F::ROWS_PER_SWZ)));
        }
#pragma unroll
        for (int pl = 0; pl < P; ++pl) {
          const int sh = BITS * pl;
          const int k = c * P + pl;
          const int gr = (pl * RB + 16 * c) / GROUP;
          uint32_t a[4];
          if constexpr (CH && PER_VALUE) {  // s, z per channel: ch, ch + 2 (a[0], a[1]); ch + 1, ch + 3
            const int ch = pl * RB + 16 * c + 4 * tig;
            const float4 s4 = *reinterpret_cast<const float4*>(ks + krow + ch);
            const float4 z4 = *reinterpret_cast<const float4*>(kz + krow + ch);
            a[0] = dequant_pair<F::MASK>(w[0] >> sh, s4.x, z4.x, s4.z, z4.z);
            a[1] = dequant_pair<F::MASK>(w[1] >> sh, s4.x, z4.x, s4.z, z4.z);
            a[2] = dequant_pair<F::MASK>(w[0] >> (sh + 8), s4.y, z4.y, s4.w, z4.w);
            a[3] = dequant_pair<F::MASK>(w[1] >> (sh + 8), s4.y, z4.y, s4.w, z4.w);
          } else if constexpr (CH) {  // FP16 subnormals code 2^(sh - 24): plane pl stays at bits sh
            constexpr uint32_t M = F::MASK;
            a[0] = subnormal_pair_at<M>(w[0], sh);      // row g,   k 2tig..: bytes 0, 2
            a[1] = subnormal_pair_at<M>(w[1], sh);      // row g+8
            a[2] = subnormal_pair_at<M>(w[0] >> 8, sh);  // row g,   k 2tig+8..: bytes 1, 3
            a[3] = subnormal_pair_at<M>(w[1] >> 8, sh);
          } else if constexpr (PER_VALUE) {
            const int t_lo = mt * 16 + g, t_hi = t_lo + 8;
            const float s0 = ks[t_lo * NG + gr], z0 = kz[t_lo * NG + gr];
            const float s1 = ks[t_hi * NG + gr], z1 = kz[t_hi * NG + gr];
            a[0] = dequant_pair<F::MASK>(w[0] >> sh, s0, z0, s0, z0);
            a[1] = dequant_pair<F::MASK>(w[1] >> sh, s1, z1, s1, z1);
            a[2] = dequant_pair<F::MASK>(w[0] >> (sh + 8), s0, z0, s0, z0);
            a[3] = dequant_pair<F::MASK>(w[1] >> (sh + 8), s1, z1, s1, z1);
          } else {  // plane pl in place at bits E.. (shift sh - E = 0 for E > 0)
            constexpr uint32_t M = F::MASK;
            const int e = F::pexp(pl);
            a[0] = operand_pair_at<M>(w[0] >> (sh - e), e);      // row g,   k 2tig..: bytes 0, 2
            a[1] = operand_pair_at<M>(w[1] >> (sh - e), e);      // row g+8
            a[2] = operand_pair_at<M>(w[0] >> (sh - e + 8), e);  // row g,   k 2tig+8..: bytes 1, 3
            a[3] = operand_pair_at<M>(w[1] >> (sh - e + 8), e);
          }
          if constexpr (CH && !PER_VALUE)
            mma_f16(acc[0], a, qc[k][0], qc[k][1]);
          else if constexpr (CH)
            mma_bf16(acc[0], a, qf[k][0], qf[k][1]);
          else if (!PER_VALUE && first_step_of_group<F>(c, pl))
            mma_bf16_c(acc[gr], a, qf[k][0], qf[k][1], nqs[gr][0], nqs[gr][1]);
          else
            mma_bf16(acc[gr], a, qf[k][0], qf[k][1]);
        }
      }
      }
      if constexpr (!EARLY_FOLD) {
#pragma unroll
        for (int i = 0; i < 4; ++i) s[mt][i] = 0.f;
      }
#pragma unroll
      for (int half = 0; half < 2; ++half) {  // tokens g (half 0) and g+8 (half 1) (TP: of tile 2mt + (tig >> 1))
        const int tl = TP ? 32 * mt + 16 * (tig >> 1) + g + 8 * half : mt * 16 + g + 8 * half;
        const bool valid = t0 + tl < end;
        if constexpr (CH) {  // one accumulator; per-value: the mma saw s code + z, else acc * cs + cb
#pragma unroll
          for (int j = 0; j < 2; ++j)
            s[mt][2 * half + j] = PER_VALUE ? acc[0][2 * half + j] * p.qk_scale_log2 : fmaf(acc[0][2 * half + j], cs[j], cb[j]);
        }
#pragma unroll
        for (int gr = 0; gr < (CH || EARLY_FOLD ? 0 : NG); ++gr) {
          if constexpr (PER_VALUE) {  // the mma already saw s * code + z
            s[mt][2 * half + 0] += acc[gr][2 * half + 0] * p.qk_scale_log2;
            s[mt][2 * half + 1] += acc[gr][2 * half + 1] * p.qk_scale_log2;
          } else if constexpr (FP8) {
            const float sc = ks[tl * NG + gr], zo = kz[tl * NG + gr];
#pragma unroll
            for (int j = 0; j < 2; ++j) {
              const float t = fmaf(acc[gr][2 * half + j], cq[j], -qerr[gr][j]);
              s[mt][2 * half + j] = fmaf(qsum[gr][j], zo, fmaf(t, sc, s[mt][2 * half + j]));
            }
          } else if constexpr (IMMA) {  // S' = s 2^-e dot + z sum(qi_g 2^hexp), dot = sum(code 2^e qi) (S = qk_h S')
            const float a_t = ks[tl * NG + gr] * (1.f / (1 << F::igexp(gr))), zo = kz[tl * NG + gr];
#pragma unroll
            for (int j = 0; j < 2; ++j) {
              const float dot = (float)(ah[gr][2 * half + j] * 256 + al[gr][2 * half + j]);
              s[mt][2 * half + j] = fmaf(dot, a_t, fmaf(qsum[gr][j], zo, s[mt][2 * half + j]));
            }
          } else {  // acc = sum(code * Q) / 128 (it started at -sum(Q')); qsum carries sm_scale log2(e)
            const float a_t = ks[tl * NG + gr] * (128.f * p.qk_scale_log2), zo = kz[tl * NG + gr];
            s[mt][2 * half + 0] = fmaf(acc[gr][2 * half + 0], a_t, fmaf(qsum[gr][0], zo, s[mt][2 * half + 0]));
            s[mt][2 * half + 1] = fmaf(acc[gr][2 * half + 1], a_t, fmaf(qsum[gr][1], zo, s[mt][2 * half + 1]));
          }
        }
        if (!FULL && !valid) s[mt][2 * half + 0] = s[mt][2 * half + 1] = -INFINITY;
      }
    }

    // ---- online softmax over the 64 tokens, per head (columns 2tig, 2tig+1)
    float alpha[2], pr[NT][4], ptile[2];
    softmax_update<IMMA, IPV, FULL, NT, TP>(s, qkh, m_run, l_part, alpha, pr, ptile);

    if constexpr (FP8) {
      // ---- P' = e4m3(P * s_v * f) per group as PV B fragments (k32: 32-token block kb, tokens
      // 2tig, 2tig+1, 8+2tig, 9+2tig | +16 of the block); correction = sum P z - C0/f sum (P'8 - P')
      uint32_t pb8[NG][2][2];
      float corr[NG][2], fsc[NG];
#pragma unroll
      for (int gr = 0; gr < NG; ++gr) {
        float sv[4][2];
        const float smax = tile_v_scales<NG, false>(sv, vs, gr, g);
        const float f = smax > 0.f ? 448.f / smax : 0.f;
        fsc[gr] = smax * (512.f / 448.f);  // 2^9 / f
        float cz[2] = {0.f, 0.f}, dr[2] = {0.f, 0.f};
        uint32_t t[4][2];
#pragma unroll
        for (int mt = 0; mt < 4; ++mt) {
#pragma unroll
          for (int half = 0; half < 2; ++half) {
            const float zv = vz[(mt * 16 + g + 8 * half) * NG + gr];
            const float p0 = pr[mt][2 * half], p1 = pr[mt][2 * half + 1];
            const float x0 = p0 * (sv[mt][half] * f), x1 = p1 * (sv[mt][half] * f);
            const uint32_t h = round_to_e4m3_as_f16x2(x0, x1);
            cz[0] = fmaf(p0, zv, cz[0]);
            cz[1] = fmaf(p1, zv, cz[1]);
            dr[0] += f16_lo(h) - x0;
            dr[1] += f16_hi(h) - x1;
            t[mt][half] = movmatrix_trans(h);  // head g, tokens 8 half + 2tig, +1 of tile mt
          }
        }
#pragma unroll
        for (int kb = 0; kb < 2; ++kb)
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            const int mt = 2 * kb + r;
            pb8[gr][kb][r] = f16x2_to_e4m3x2(t[mt][0]) | (f16x2_to_e4m3x2(t[mt][1]) << 16);
          }
        const float cf = f > 0.f ? F::C0 / f : 0.f;
#pragma unroll
        for (int j = 0; j < 2; ++j) corr[gr][j] = warp_sum_over_rows(cz[j]) - cf * warp_sum_over_rows(dr[j]);
      }
      // ---- PV (m16n8k32) per m16 channel block (chunk c, plane pl) in a fresh accumulator
#pragma unroll
      for (int c = 0; c < NCH; ++c) {
        uint32_t xw[2][4];
        ldmatrix_pv_k32<F>(xw, vsm, c, lane);
#pragma unroll
        for (int pl = 0; pl < P; ++pl) {
          const int gr = (pl * RB + 16 * c) / GROUP;
          const int sh = BITS * pl;
          float tmp[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
          for (int kb = 0; kb < 2; ++kb) {
            const uint32_t a[4] = {(xw[kb][0] >> sh) & F::MASK4, (xw[kb][1] >> sh) & F::MASK4,
                                   (xw[kb][2] >> sh) & F::MASK4, (xw[kb][3] >> sh) & F::MASK4};
            mma_fp8(tmp, a, pb8[gr][kb][0], pb8[gr][kb][1]);
          }
          const int k = c * P + pl;
#pragma unroll
          for (int i = 0; i < 4; ++i) o_acc[k][i] = fmaf(o_acc[k][i], alpha[i & 1], fmaf(tmp[i], fsc[gr], corr[gr][i & 1]));
        }
      }
    } else if constexpr (IPV) {
      // ---- P' = P s_v f as a 16-bit fixed point x = rint(P s_v f), f = kIpvMax / (max P max |s_v|, >= 2^-112) per
      // (group, head) over this tile, so |x| <= kIpvMax; its hi (s8) and lo (u8) bytes as PV B fragments
      // (k32: 32-token block kb, tokens 2tig, 2tig+1, 8+2tig, 9+2tig | +16, as the FP8 mode's); pz = sum P z
      // PK (pv_packable): B's columns 0-3 (lanes g < 4 in the B layout) take the high bytes of x + 128, the s8 part of
      // x = 256 hi + lo with lo = x's low byte as s8; columns 4-7 the low bytes: pbh alone, one mma. Without token
      // pairs lanes tig < 2 here compute columns 0-3's x + 128 and lanes tig >= 2 columns 4-7's x; with them (TP)
      // every lane computes both bytes of its own tokens' x (below). pk_hi then names the PV's output columns 0-3.
      uint32_t pbh[NG][2][2];
      [[maybe_unused]] uint32_t pbl[PK ? 1 : NG][2][2];
      float pz[NG][2], wsc[NG][2];
      const bool pk_hi = tig < 2;
      // TP: every lane's x + 128 (each x gives both bytes; the low byte's 128 is flipped out below)
      const float magic = TP || (PK && pk_hi) ? kIpvMagic + 128.f : kIpvMagic;
#pragma unroll
      for (int gr = 0; gr < NG; ++gr) {
        float sv[NT][2];
        // a NaN scale reaches the output (wsc)
        const float smax = tile_v_scales<NG, true, NT, TP>(sv, vs, gr, g, tig);
        // max |s_v| past 2^126: NaN (there the reciprocal below flushes to 0, so f = 0 would drop the codes' term;
        // the kernel's documented magnitude is 1e30, and there the BF16 PV's P' overflows too)
        const float sm = smax <= 0x1p126f ? smax : __int_as_float(0x7fffffff);
        float f[2];
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          // max P max |s_v| (<= 2^126, ptile <= 1) at least 2^-112, so f <= kIpvMax 2^112 < 2^127 stays finite:
          // a tile of no token (ptile 0) or of zero scales gets x = 0; full precision down to max P max |s_v| =
          // 2^-112 (1.9e-34), coarser below
          const float mx = fmax_nan(ptile[j] * sm, 0x1p-112f);
          f[j] = kIpvMax * rcp_approx(mx);  // __fdividef's value for mx in [2^-126, 2^126], without its range tests
          wsc[gr][j] = mx * (1.f / kIpvMax);  // 1 / f
          pz[gr][j] = 0.f;
        }
        uint32_t t[NT][2];
#pragma unroll
        for (int mt = 0; mt < NT; ++mt) {
#pragma unroll
          for (int half = 0; half < 2; ++half) {
            const int tl = TP ? 32 * mt + 16 * (tig >> 1) + g + 8 * half : mt * 16 + g + 8 * half;
            const float zv = vz[tl * NG + gr];
            const float p0 = pr[mt][2 * half], p1 = pr[mt][2 * half + 1];
            const float y0 = fmaf(p0, sv[mt][half] * f[0], magic), y1 = fmaf(p1, sv[mt][half] * f[1], magic);
            pz[gr][0] = fmaf(p0, zv, pz[gr][0]);
            pz[gr][1] = fmaf(p1, zv, pz[gr][1]);
            // x0 | x1 << 16 (the low 16 bits of each), then head g, tokens 8 half + 2tig, +1 of tile mt (TP: column
            // g of the pair: tile 2mt's head g for g < 4, tile 2mt + 1's head g - 4 else). TP: x + 128 with bit 7
            // flipped, so that the high byte is x + 128's and the low byte x's (adding 128 flips a byte's bit 7)
            uint32_t v = prmt<0x5410>(__float_as_uint(y0), __float_as_uint(y1));
            if constexpr (TP) v ^= 0x00800080u;
            t[mt][half] = movmatrix_trans(v);
          }
        }
        if constexpr (TP) {
          // B of the pair's 32 tokens (r = 0: tile 2kb, r = 1: tile 2kb + 1), column g: lane g < 4 holds tile 2kb's
          // head g and needs its high bytes and tile 2kb + 1's (from lane g + 4); lane g + 4 needs the low bytes of
          // both, holding tile 2kb + 1's. Each lane keeps its part and swaps the other with lane ^ 16.
          const bool hi_col = g < 4;
#pragma unroll
          for (int kb = 0; kb < 2; ++kb) {
            const uint32_t keep = __byte_perm(t[kb][0], t[kb][1], hi_col ? 0x7531 : 0x6420);
            const uint32_t give = __byte_perm(t[kb][0], t[kb][1], hi_col ? 0x6420 : 0x7531);
            const uint32_t got = __shfl_xor_sync(0xffffffffu, give, 16);
            pbh[gr][kb][0] = hi_col ? keep : got;
            pbh[gr][kb][1] = hi_col ? got : keep;
          }
        } else {
#pragma unroll
          for (int kb = 0; kb < 2; ++kb)
#pragma unroll
            for (int r = 0; r < 2; ++r) {
              const int mt = 2 * kb + r;
              if constexpr (PK) {  // B layout: column g; high bytes of x + 128 (g < 4) or low bytes of x
                pbh[gr][kb][r] = __byte_perm(t[mt][0], t[mt][1], g < 4 ? 0x7531 : 0x6420);
              } else {
                pbl[gr][kb][r] = prmt<0x6420>(t[mt][0], t[mt][1]);  // low bytes: x mod 256
                pbh[gr][kb][r] = prmt<0x7531>(t[mt][0], t[mt][1]);  // high bytes: x >> 8 (signed)
              }
            }
        }
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          pz[gr][j] = warp_sum_over_rows(pz[gr][j]);
          if constexpr (TP) pz[gr][j] += __shfl_xor_sync(0xffffffffu, pz[gr][j], 2);  // the head's lanes tig ^ 2
          if constexpr (PK) {  // the high bytes' columns carry 256 dot_hi and sum P z, the low bytes' dot_lo
            wsc[gr][j] *= pk_hi ? 256.f : 1.f;
            pz[gr][j] = pk_hi ? pz[gr][j] : 0.f;
          }
        }
      }
      // ---- PV (m16n8k32, exact s32) per m16 channel block (chunk c, plane pl): the codes in place,
      // code 2^(BITS pl) in u8 lanes (one lop3 per 4 codes), dot = 256 hi + lo = sum x code 2^(BITS pl);
      // O += dot 2^-(BITS pl) / f + sum P z. |dot| <= 64 tokens * 240 * 32512 < 2^29 (INT2: 192 for 240).
#pragma unroll
      for (int c = 0; c < NCH; ++c) {
        uint32_t xw[2][4];
        ldmatrix_pv_k32<F>(xw, vsm, c, lane);
#pragma unroll
        for (int pl = 0; pl < P; ++pl) {
          const int gr = (pl * RB + 16 * c) / GROUP;
          const int sh = BITS * pl;
          int dh[4];
          [[maybe_unused]] int dl[4];
#pragma unroll
          for (int kb = 0; kb < 2; ++kb) {
            const uint32_t a[4] = {xw[kb][0] & (F::MASK4 << sh), xw[kb][1] & (F::MASK4 << sh),
                                   xw[kb][2] & (F::MASK4 << sh), xw[kb][3] & (F::MASK4 << sh)};
            if constexpr (PK) {
              if (kb == 0)
                mma_u8s8<true>(dh, a, pbh[gr][kb][0], pbh[gr][kb][1]);
              else
                mma_u8s8<false>(dh, a, pbh[gr][kb][0], pbh[gr][kb][1]);
            } else if (kb == 0) {
              mma_u8s8<true>(dh, a, pbh[gr][kb][0], pbh[gr][kb][1]);
              mma_u8u8<true>(dl, a, pbl[gr][kb][0], pbl[gr][kb][1]);
            } else {
              mma_u8s8<false>(dh, a, pbh[gr][kb][0], pbh[gr][kb][1]);
              mma_u8u8<false>(dl, a, pbl[gr][kb][0], pbl[gr][kb][1]);
            }
          }
          const int k = c * P + pl;
          const float e = 1.f / (1 << sh);
#pragma unroll
          for (int i = 0; i < 4; ++i) {
            const float dot = PK ? (float)dh[i] : (float)(dh[i] * 256 + dl[i]);  // PK: wsc carries the 256
            o_acc[k][i] = fmaf(o_acc[k][i], alpha[i & 1], fmaf(dot, wsc[gr][i & 1] * e, pz[gr][i & 1]));
          }
        }
      }
    } else {
    // ---- P' = bf16(P * 128 s_v) per group as PV B fragments; pz = sum P z - sum P' (with planes
    // in place, F::SCALED_PLANES: pz = sum P z and pp = sum P', combined per plane below)
    uint32_t pb[NG][4][2];
    float pz[NG][2], pp[NG][2];
#pragma unroll
    for (int gr = 0; gr < NG; ++gr) {
      pz[gr][0] = pz[gr][1] = pp[gr][0] = pp[gr][1] = 0.f;
#pragma unroll
      for (int mt = 0; mt < 4; ++mt) {
        uint32_t x[2];
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int tl = mt * 16 + g + 8 * half;
          const float p0 = pr[mt][2 * half], p1 = pr[mt][2 * half + 1];
          if constexpr (PER_VALUE) {  // P itself is the operand
            x[half] = pack_bf16x2(p0, p1);
          } else {
            const float sv = 128.f * vs[tl * NG + gr], zv = vz[tl * NG + gr];
            x[half] = pack_bf16x2(p0 * sv, p1 * sv);
            if constexpr (F::SCALED_PLANES) {
              pz[gr][0] = fmaf(p0, zv, pz[gr][0]);
              pz[gr][1] = fmaf(p1, zv, pz[gr][1]);
              pp[gr][0] += bf16_lo(x[half]);
              pp[gr][1] += bf16_hi(x[half]);
            } else {
              pz[gr][0] += p0 * zv - bf16_lo(x[half]);
              pz[gr][1] += p1 * zv - bf16_hi(x[half]);
            }
          }
        }
        pb[gr][mt][0] = movmatrix_trans(x[0]);  // k = tokens 2tig, 2tig+1 of the tile, n = head g
        pb[gr][mt][1] = movmatrix_trans(x[1]);  // tokens 2tig+8, 2tig+9
      }
      if constexpr (!PER_VALUE) {
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          pz[gr][j] = warp_sum_over_rows(pz[gr][j]);
          if constexpr (F::SCALED_PLANES) pp[gr][j] = warp_sum_over_rows(pp[gr][j]);
        }
      }
    }

    // ---- PV into a fresh accumulator per m16 channel block (chunk c, plane pl), then fold in.
    // Folded: the accumulator starts at 2^E sum P z - sum P' (its first mma), so it ends at
    // 2^E (sum P z + sum P' code / 128): o_acc of a plane with E > 0 holds 2^E O until the end.
#pragma unroll
    for (int c = 0; c < NCH; ++c) {
      uint32_t vw[4][2];  // per token tile: tokens (2tig, 2tig+1) and (2tig+8, 2tig+9), bytes 16c+2g, +1
#pragma unroll
      for (int mt = 0; mt < 4; ++mt) {
        const int tok = mt * 16 + (lane & 8) + (lane & 7);
        ldmatrix_x2_trans(vw[mt], smem_u32(vsm + tok * RB + 16 * swz(tok, c, NCH, F::ROWS_PER_SWZ)));
      }
#pragma unroll
      for (int pl = 0; pl < P; ++pl) {
        const int gr = (pl * RB + 16 * c) / GROUP;
        const int sh = BITS * pl;
        float tmp[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
        for (int mt = 0; mt < 4; ++mt) {
          uint32_t a[4];
          if constexpr (PER_VALUE) {  // tokens 2tig, 2tig+1 (a[0], a[1]) and +8, +9 (a[2], a[3])
            const int t0 = mt * 16 + 2 * tig;
            const float s0 = vs[t0 * NG + gr], z0 = vz[t0 * NG + gr];
            const float s1 = vs[(t0 + 1) * NG + gr], z1 = vz[(t0 + 1) * NG + gr];
            const float s8 = vs[(t0 + 8) * NG + gr], z8 = vz[(t0 + 8) * NG + gr];
            const float s9 = vs[(t0 + 9) * NG + gr], z9 = vz[(t0 + 9) * NG + gr];
            a[0] = dequant_pair<F::MASK>(vw[mt][0] >> sh, s0, z0, s1, z1);
            a[1] = dequant_pair<F::MASK>(vw[mt][0] >> (sh + 8), s0, z0, s1, z1);
            a[2] = dequant_pair<F::MASK>(vw[mt][1] >> sh, s8, z8, s9, z9);
            a[3] = dequant_pair<F::MASK>(vw[mt][1] >> (sh + 8), s8, z8, s9, z9);
          } else {
            constexpr uint32_t M = F::MASK;
            const int e = F::pexp(pl);
            a[0] = operand_pair_at<M>(vw[mt][0] >> (sh - e), e);      // row g:   channel byte 16c+2g,   tokens 2tig, +1
            a[1] = operand_pair_at<M>(vw[mt][0] >> (sh - e + 8), e);  // row g+8: channel byte 16c+2g+1
            a[2] = operand_pair_at<M>(vw[mt][1] >> (sh - e), e);      // row g,   tokens 2tig+8, +9
            a[3] = operand_pair_at<M>(vw[mt][1] >> (sh - e + 8), e);
          }
          if (!PER_VALUE && mt == 0) {
            const float ez = (float)(1 << F::pexp(pl));
            const float c0 = F::SCALED_PLANES ? fmaf(pz[gr][0], ez, -pp[gr][0]) : pz[gr][0];
            const float c1 = F::SCALED_PLANES ? fmaf(pz[gr][1], ez, -pp[gr][1]) : pz[gr][1];
            mma_bf16_c(tmp, a, pb[gr][mt][0], pb[gr][mt][1], c0, c1);
          } else {
            mma_bf16(tmp, a, pb[gr][mt][0], pb[gr][mt][1]);
          }
        }
        const int k = c * P + pl;
#pragma unroll
        for (int i = 0; i < 4; ++i) o_acc[k][i] = fmaf(o_acc[k][i], alpha[i & 1], tmp[i]);
      }
    }
    }
    __syncwarp();  // every lane is done with this stage before it is refilled
  };
  // Sub-tiles 0 .. iters - 2 are full (each starts stride = 256 tokens before the next, which starts
  // before end); the last is full when end - its start >= 64. Step it is FULL when sub-tiles it and
  // it + kStages - 1 are full and fast_copies holds: steps 0 .. full_steps - 1, one loop; the other
  // steps (at most kStages, or all of them) take the general path in a second loop.
  const bool last_full = iters > 0 && end - (first + (iters - 1) * stride) >= kTileTokens;
  const int full_tiles = iters > 0 && !last_full ? iters - 1 : iters;
  const int full_steps = fast_copies != 0 ? max(0, full_tiles - (kStages - 1)) : 0;
  int it = 0;
  FOSCAR_TL(4, clock64());
  FOSCAR_TL(8, sm_id() | (cta_index() << 8) | ((unsigned long long)(b & 0xFFFF) << 24) |
                   ((unsigned long long)iters << 40));
  FOSCAR_TL(9, (unsigned)start | ((unsigned long long)(unsigned)end << 32));
  for (; it < full_steps; ++it) step(it, std::true_type{});
  for (; it < iters; ++it) step(it, std::false_type{});

  // PDL: the next grid (the merge kernel, launched with PDL: FOSCAR_MERGE_PDL) may be scheduled once every CTA
  // is here. Here, not at the kernel's start: the merge's programs waiting on the SMs from the start made
  // batch 8 2% slower (bench/NOTES.md §43); EARLY instances without a merge kernel after them triggered at the start
  if (!(EARLY && p.fuse_merge)) asm volatile("griddepcontrol.launch_dependents;\n" ::);
  FOSCAR_TL(6, clock64());

  // ---- merge the 4 warps through shared memory, write the output (one chunk) or this chunk's partial
  epilogue<BITS, HEAD_DIM, GROUP, MODE, CH, PK, fused_merge_in(BITS, HEAD_DIM, GROUP, MODE, PAGED, CH),
           launch_min_blocks<BITS, HEAD_DIM, GROUP, MODE, CH, PAGED>() == 3>(p, smem, s_work, o_acc, m_run, l_part, hkv,
                                                                            warp, g, tig);
  FOSCAR_TL(7, clock64());
#if FOSCAR_TIMELINE
  for (int c = 0; c < 3; ++c) FOSCAR_TL(10 + c, tl_epilogue_cuts()[c]);
#endif
  FOSCAR_TL(1, global_timer());
}

// What launch() has done to one kernel instance, per device (index = device ordinal; devices past kMaxDevices are
// not cached): the max-dynamic-shared-memory attribute as last raised, and the padded launch size per k (0: not
// computed yet). The attribute is only ever raised, never set back down, so that no thread's unpadded launch lowers
// it between another thread's raise and padded launch, and so that a padded launch captured in a CUDA graph stays
// within it (lowering it did not break such a replay on driver 580, bench/NOTES.md §74, but nothing documents that it
// may not); the cache spares eager launches the ~8 runtime calls of the occupancy search. It assumes the device's
// context lives as long as the process (a cudaDeviceReset would leave it stale; torch never resets).
constexpr int kMaxDevices = 64;
constexpr int kMaxCtasPerSm = 32;  // FOSCAR_MAX_CTAS_PER_SM's largest value (foscar/kernels/splits.py)
struct LaunchCache {
  std::atomic<int> attr[kMaxDevices];
  std::atomic<int> padded[kMaxDevices][kMaxCtasPerSm + 1];
#if FOSCAR_PREWAIT_PREFETCH > 0
  std::atomic<int> wave[kMaxDevices][kMaxCtasPerSm + 1];  // CTAs of one wave (SMs x CTAs an SM), 0: not computed
#endif
};
// one cache per instance and per shared library: internal linkage, so that two builds of the extension loaded in one
// process (each its own kernels) do not share it, as a function-local static of launch() would (a GNU unique symbol)
template <int BITS, int HEAD_DIM, int GROUP, int MODE, bool PAGED, bool CH, bool PK>
static LaunchCache& launch_cache() {
  static LaunchCache cache;  // zero-initialised: nothing raised, nothing computed
  return cache;
}

// Raise `kernel`'s max-dynamic-shared-memory attribute on `dev` to at least `bytes` (never lowers it; see LaunchCache).
template <typename Kernel>
cudaError_t raise_smem_attribute(Kernel kernel, LaunchCache& cache, int dev, int bytes) {
  const bool cached = dev >= 0 && dev < kMaxDevices;
  if (cached && cache.attr[dev].load(std::memory_order_acquire) >= bytes) return cudaSuccess;
  static std::mutex lock;  // one raise at a time: the cached value is never above the attribute
  std::lock_guard<std::mutex> guard(lock);
  int now = 0;
  if (cached) {
    now = cache.attr[dev].load(std::memory_order_acquire);
  } else {  // not cached: read the attribute back
    cudaFuncAttributes attrs;
    cudaError_t err = cudaFuncGetAttributes(&attrs, kernel);
    if (err != cudaSuccess) return err;
    now = attrs.maxDynamicSharedSizeBytes;
  }
  if (now >= bytes) return cudaSuccess;
  cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (err == cudaSuccess && cached) cache.attr[dev].store(bytes, std::memory_order_release);
  return err;
}

// The dynamic shared memory that holds `kernel` (128 threads a CTA, `smem` bytes its need, the attribute already
// raised to that) to at most k CTAs an SM: `smem` where no more than k fit by registers and shared memory already,
// else enough that k + 1 CTAs' shared memory (each with the runtime's reserve per CTA) exceeds the SM's, checked with
// the occupancy calculator; the kernel's attribute raised to it. Computed once per (device, k) and cached. Why:
// where a grid's working CTAs are one wave at 3 an SM and a second of at most one an SM, SMs with one CTA each end
// the decode; at 2 an SM both waves are pairs (the host decides where: foscar/kernels/splits.py holds_two_ctas;
// bench/NOTES.md §67). The kernel does not read the padding.
template <typename Kernel>
cudaError_t occupancy_limited_smem(Kernel kernel, LaunchCache& cache, int dev, int smem, int k, int& dyn) {
  const bool cached = dev >= 0 && dev < kMaxDevices && k <= kMaxCtasPerSm;
  if (cached && (dyn = cache.padded[dev][k].load(std::memory_order_acquire)) > 0) return cudaSuccess;
  dyn = smem;
  int fit = 0;
  cudaError_t err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, kernel, kWarps * 32, smem);
  if (err != cudaSuccess) return err;
  if (fit > k) {
    int per_sm = 0, reserved = 0, opt_in = 0;
    if ((err = cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev)) != cudaSuccess)
      return err;
    if ((err = cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, dev)) != cudaSuccess)
      return err;
    if ((err = cudaDeviceGetAttribute(&opt_in, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev)) != cudaSuccess)
      return err;
    int want = (per_sm / (k + 1) + 1 - reserved + 127) / 128 * 128;  // (k + 1) (want + reserved) > per_sm
    if (want <= opt_in) {  // else it cannot be held below `fit` this way: as many as fit
      if ((err = raise_smem_attribute(kernel, cache, dev, want)) != cudaSuccess) return err;
      if ((err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, kernel, kWarps * 32, want)) != cudaSuccess)
        return err;
      if (fit <= k) dyn = want;
    }
  }
  if (cached) cache.padded[dev][k].store(dyn, std::memory_order_release);
  return cudaSuccess;
}

template <int BITS, int HEAD_DIM, int GROUP, int MODE, bool PAGED, bool CH, bool PK = false>
cudaError_t launch(const Params& p, int batch, cudaStream_t stream) {
  using F = Fmt<BITS, HEAD_DIM, GROUP>;
  constexpr int merge_bytes = (kWarps * 8 * merge_row_floats<HEAD_DIM>() + 2 * kWarps * 8) * 4;
  constexpr int tiles = F::template KERNEL_SMEM_BYTES<PAGED, CH>;
  constexpr int smem = tiles > merge_bytes ? tiles : merge_bytes;
  auto kernel = folded_decode_kernel<BITS, HEAD_DIM, GROUP, MODE, PAGED, CH, PK>;
  LaunchCache& cache = launch_cache<BITS, HEAD_DIM, GROUP, MODE, PAGED, CH, PK>();
  int dev = 0;
  cudaError_t err = cudaGetDevice(&dev);
  if (err != cudaSuccess) return err;
  if (p.fuse_merge && !fused_merge_in(BITS, HEAD_DIM, GROUP, MODE, PAGED, CH))  // the merge kernel's seq_chunks needed
    return cudaErrorInvalidValue;
  if ((err = raise_smem_attribute(kernel, cache, dev, smem)) != cudaSuccess) return err;
  if (p.num_slots * p.num_kv_heads == 0) return cudaSuccess;  // nothing to decode (batch 0)
  int dyn = smem;
  if (p.max_ctas_per_sm > 0) {
    err = occupancy_limited_smem(kernel, cache, dev, smem, p.max_ctas_per_sm, dyn);
    if (err != cudaSuccess) return err;
  }
#if FOSCAR_PREWAIT_PREFETCH > 0
  Params lp = p;  // with prewait_ctas
  lp.prewait_ctas = p.pdl ? 1 << 30 : 0;  // without PDL this CTA starts after the previous grid: nothing to overlap
  if (FOSCAR_PREWAIT_WAVE && p.pdl) {
    const int k = min(max(p.max_ctas_per_sm, 0), kMaxCtasPerSm);
    const bool cached = dev >= 0 && dev < kMaxDevices;
    int wave = cached ? cache.wave[dev][k].load(std::memory_order_acquire) : 0;
    if (wave == 0) {
      int fit = 0, sms = 0;
      if ((err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, kernel, kWarps * 32, dyn)) != cudaSuccess)
        return err;
      if ((err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) != cudaSuccess) return err;
      wave = max(1, fit * sms);
      if (cached) cache.wave[dev][k].store(wave, std::memory_order_release);
    }
    lp.prewait_ctas = wave;
  }
#else
  const Params& lp = p;
#endif
  cudaLaunchConfig_t cfg = {};
  // num_kv_heads x num_slots (FOSCAR_GRID_2D: no division in the kernel, cta_slot), one dimension past gridDim.y's
  // limit; either way block slot * num_kv_heads + hkv in launch order
  cfg.gridDim = grid_2d<CH>() && p.num_slots <= 65535 ? dim3(p.num_kv_heads, p.num_slots)
                                                       : dim3(p.num_slots * p.num_kv_heads);
  cfg.blockDim = dim3(kWarps * 32);
  cfg.dynamicSmemBytes = dyn;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;  // PDL (griddepcontrol in the kernel)
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = p.pdl ? 1 : 0;
  return cudaLaunchKernelEx(&cfg, kernel, lp);
}

// All formats of one operand mode: cudaErrorInvalidValue for an unsupported
// (bits, head_dim, group_size), or FP8 where a row has an odd number of 16-byte chunks. gqa <= 4 takes the
// packed integer PV where the format has it (pv_packable) and p.pv_pack is set.
template <int MODE, bool PAGED, bool CH>
cudaError_t launch_mode(const Params& p, int bits, int head_dim, int group_size, int batch, cudaStream_t stream) {
#define FOSCAR_CASE(B, D, G)                                                   \
  if (bits == B && head_dim == D && group_size == G) {                         \
    if constexpr ((MODE != kFoldedFp8 || Fmt<B, D, G>::NCH % 2 == 0) &&          \
                  (FOSCAR_ONLY_HEAD_DIM == 0 || FOSCAR_ONLY_HEAD_DIM == D)) {      \
      if constexpr (pv_packable<MODE, B, D, CH>()) {                             \
        if (p.pv_pack && p.gqa <= 4) return launch<B, D, G, MODE, PAGED, CH, true>(p, batch, stream); \
      }                                                                          \
      return launch<B, D, G, MODE, PAGED, CH>(p, batch, stream);               \
    }                                                                          \
    return cudaErrorInvalidValue;                                              \
  }
  FOSCAR_CASE(2, 128, 128) FOSCAR_CASE(2, 128, 64) FOSCAR_CASE(2, 128, 32)
  FOSCAR_CASE(4, 128, 128) FOSCAR_CASE(4, 128, 64) FOSCAR_CASE(4, 128, 32)
  FOSCAR_CASE(2, 64, 64) FOSCAR_CASE(2, 64, 32) FOSCAR_CASE(4, 64, 64) FOSCAR_CASE(4, 64, 32)
  FOSCAR_CASE(2, 256, 128) FOSCAR_CASE(2, 256, 64) FOSCAR_CASE(2, 256, 32)
  FOSCAR_CASE(4, 256, 128) FOSCAR_CASE(4, 256, 64) FOSCAR_CASE(4, 256, 32)
#undef FOSCAR_CASE
  return cudaErrorInvalidValue;
}
// instantiated once each, in decode_mode_{bf16,per_value,fp8}{,_paged}{,_channel}.cu
#define FOSCAR_MODES(X)                                                                                         \
  X(kFoldedBf16, false, false) X(kFoldedBf16, true, false) X(kPerValue, false, false) X(kPerValue, true, false) \
  X(kFoldedFp8, false, false) X(kFoldedFp8, true, false) X(kFoldedBf16, false, true) X(kFoldedBf16, true, true) \
  X(kPerValue, false, true) X(kPerValue, true, true) X(kFoldedFp8, false, true) X(kFoldedFp8, true, true)
#define FOSCAR_EXTERN(M, PG, CH) \
  extern template cudaError_t launch_mode<M, PG, CH>(const Params&, int, int, int, int, cudaStream_t);
FOSCAR_MODES(FOSCAR_EXTERN)
#undef FOSCAR_EXTERN

}  // namespace foscar
