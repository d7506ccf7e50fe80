#!/usr/bin/env bash
# Session 63, call 2, after call 1 (an H100): two programs an SM for long chunks (FOSCAR_LONG_CHUNK_PROGRAMS=2) took
# 1.07-1.17 of the time at 2 x 512K (one and two KV heads, contiguous and paged, INT2 and INT4), where 0.75-0.95 was
# written. One reading: the in-kernel merge runs on the sequence's last CTA alone, in rounds of 16 chunks (each an L2
# round trip), so 128 chunks a sequence pay 8 serial rounds after the loop where 64 pay 4. At most LIMIT (default
# 420) s. A head_dim-128 build, then on either GPU:
#   M: old = the default (fused merge), mk = FOSCAR_MERGE=kernel (the merge kernel: many programs, one launch more,
#   PDL), mk2 = FOSCAR_MERGE=kernel and FOSCAR_LONG_CHUNK_PROGRAMS=2; 8 query heads over 1 KV head.
#   Expected (written before), if the one-CTA merge's serial rounds hold these points: mk / old 0.85-0.95 at INT2
#   1 x 512K (128 chunks), 0.90-0.97 at 2 x 512K contiguous and paged (64 chunks a sequence), INT4 2 x 512K paged
#   0.92-1.00, INT2 1 x 256K (64) 0.95-1.02, one 512K among seven 4K 0.95-1.02; mk2 / old 0.85-0.95 at the 2 x 512K
#   points. If mk >= 1.0 everywhere, the merge is not what holds them. max_rel_err <= 2e-3.
LIMIT="${LIMIT:-420}"
. scripts/probe_preamble.sh /tmp/s63c2  # T0, LIMIT, left(), gpu.csv, commit.txt, W, probe_end
HD="FOSCAR_ONLY_HEAD_DIM=128"
FOSCAR_NVCC_DEFINES="$HD" MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' \
  > $W/build.log 2>&1
echo "built rc=$? left=$(left): $(tail -1 $W/build.log)"
python -m bench.ab_rounds $W/ab --variant "old:$HD" --variant "mk:$HD" --variant "mk2:$HD" \
  --run-env mk:FOSCAR_MERGE=kernel --run-env mk2:FOSCAR_MERGE=kernel --run-env mk2:FOSCAR_LONG_CHUNK_PROGRAMS=2 \
  --order "old mk mk2 mk2 mk old" --point 2x1x524288:h8-1 --point 2x2x524288:h8-1 --point 2x2x524288:paged:h8-1 \
  --point 4x2x524288:paged:h8-1 --point 2x1x262144:h8-1 --point 2x8x524288:one-long:h8-1 \
  --limit-s $(( $(left) - 10 )) --round-s 10 > $W/ab_rounds.log 2>&1
echo "M: ab_rounds rc=$? left=$(left)"; tail -24 $W/ab_rounds.log
cp $W/ab_rounds.log $OUT/ab_rounds.txt
probe_end s63c2
