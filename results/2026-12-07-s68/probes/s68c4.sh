#!/usr/bin/env bash
# Session 68, call 4: why the room lost at one-long 32 (1.128) and at 16 query heads over 2 KV heads one-long 16
# (1.210) but won at one-long 64 (0.894) (call 3): bench.timeline in both settings at those points. At most LIMIT s.
LIMIT="${LIMIT:-300}"
. scripts/probe_preamble.sh /tmp/s68c4
for pt in 2x32x524288:one-long:h8-1 2x64x524288:one-long:h8-1 2x16x524288:one-long:h16-2; do
  for room in 0 1; do
    [ $(left) -lt 30 ] && break
    f=$W/timeline-$(echo $pt | tr ':' '_')-room$room.txt
    FOSCAR_LONG_CHUNK_ROOM=$room timeout $(( $(left) - 10 )) python -m bench.timeline --point $pt > $f 2>&1
    echo "$pt room=$room rc=$? left=$(left)"; tail -7 $f | cut -c1-200
  done
done
probe_end s68c4
