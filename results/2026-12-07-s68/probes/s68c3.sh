#!/usr/bin/env bash
# Session 68, call 3. At most LIMIT (default 420) s. Run from the repository root through scripts/gpu_offline.sh
# (carry .offline). Returns gpu.csv, commit.txt, ab_rounds.txt and s68c3.tgz.
#   R2: FOSCAR_LONG_CHUNK_ROOM=1 (room) against the default (old) where the room changes the plan at larger batches
#      (call 1 timed batches 4-8 only: room/old 0.83-0.96). The mirror (splits.schedule) gives, at one KV head in a
#      512K cache: one-long 16: 143 -> 129 CTAs, long chunk 4096 -> 4608; 32: 159 -> 129, 5376; 64: 191 -> 132, 7680;
#      100: 227 -> 132, 16128; lognormal 16: 254 CTAs and 6400-token chunks either way; lognormal 64: 1046 -> 874,
#      6400 -> 7680; at 16 query heads over 2 KV heads: one-long 16 158 -> 130 CTAs, 8192 -> 10496; lognormal 8
#      180 -> 176, 8192 -> 8448. Expected room / old (written before the run): one-long 16 0.85-0.92; 32 0.85-1.00;
#      64 0.90-1.05; 100 1.3-1.9 (slower: one CTA streams 16128 tokens where the old plan's SMs ran at most two of
#      4096); lognormal 16 0.98-1.02 (the same schedule); lognormal 64 0.95-1.10; h16-2 one-long 16 0.85-0.95;
#      h16-2 lognormal 8 0.97-1.03; INT4 one-long 32 0.90-1.00. max_rel_err the same to two figures, no NaN.
LIMIT="${LIMIT:-420}"
. scripts/probe_preamble.sh /tmp/s68c3
MAX_JOBS=16 python -c 'from foscar.kernels import decode_cuda as d; print(d.extension().__name__)' > $W/build.log 2>&1
echo "built rc=$? left=$(left): $(tail -1 $W/build.log)"
python -m bench.ab_rounds $W/ab --variant "old:" --variant "room:" --run-env room:FOSCAR_LONG_CHUNK_ROOM=1 \
  --order "old room room old" --point 2x16x524288:one-long:h8-1 --point 2x32x524288:one-long:h8-1 \
  --point 2x64x524288:one-long:h8-1 --point 2x100x524288:one-long:h8-1 --point 2x16x524288:lognormal:h8-1 \
  --point 2x64x524288:lognormal:h8-1 --point 2x16x524288:one-long:h16-2 --point 2x8x524288:lognormal:h16-2 \
  --point 4x32x524288:one-long:h8-1 \
  --limit-s $(( $(left) > 120 ? $(left) - 30 : 60 )) --round-s 10 > $W/ab_rounds.log 2>&1
echo "R2: ab_rounds rc=$? left=$(left)"; tail -32 $W/ab_rounds.log; cp $W/ab_rounds.log $OUT/ab_rounds.txt
probe_end s68c3
