#!/usr/bin/env bash
# Session 68, call 5 (run inline on the warm machine, as below; no expectations were written before it: it looked for
# where the room stops winning, between call 3's one-long 16 (won) and 32 (lost) at one KV head, and at two KV heads
# between batch 4 (won, call 1) and 16 (lost, call 3)).
LIMIT=240
. scripts/probe_preamble.sh /tmp/s68c5
python -m bench.ab_rounds $W/ab --variant "old:" --variant "room:" --run-env room:FOSCAR_LONG_CHUNK_ROOM=1 \
  --order "old room room old" --point 2x12x524288:one-long:h8-1 --point 2x24x524288:one-long:h8-1 \
  --point 2x8x524288:one-long:h16-2 --point 2x8x262144:one-long:h16-2 --point 4x16x524288:one-long:h8-1 \
  --limit-s 190 --round-s 10 > $W/ab_rounds.log 2>&1
echo rc=$?; tail -24 $W/ab_rounds.log; cp $W/ab_rounds.log $OUT/ab_rounds.txt
probe_end s68c5
