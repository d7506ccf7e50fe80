#!/usr/bin/env bash
# session 27, call 2 (one H200): page size x page order (shuffled / in order) on main's kernel, then ncu of the decode
# kernel at INT2 32 x 32K, page 16 shuffled / page 1 shuffled / page 1 in order.
nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv > $OUT/gpu.csv 2>&1
mkdir -p /tmp/o
MAX_JOBS=16 python -c "from foscar.kernels import decode_cuda as d; print(d.extension().__name__)" > /tmp/o/build.log 2>&1; tail -1 /tmp/o/build.log; echo "built t=$SECONDS"
timeout 200 python .ab/probe_ps.py /tmp/o/ps.csv > /tmp/o/ps.log 2>&1; echo "probe rc=$? t=$SECONDS"; cat /tmp/o/ps.log | cut -c1-200
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sector_op_read_hit_rate.pct,lts__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,sm__inst_executed.avg.per_cycle_active,smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts.sum
timeout $((560 - SECONDS)) ncu --clock-control none --nvtx --nvtx-include "ps16-shuf/" --nvtx-include "ps1-shuf/" --nvtx-include "ps1-seq/" -k regex:folded_decode_kernel --metrics $M --csv python .ab/probe_ps.py /tmp/o/ps-ncu.csv ncu > /tmp/o/ncu.csv 2> /tmp/o/ncu.err; echo "ncu rc=$? t=$SECONDS"
grep -v "^==PROF==" /tmp/o/ncu.csv | python -c "
import sys, csv, collections
r = list(csv.reader(sys.stdin))
h = r[0] if r else []
agg = collections.defaultdict(list)
for row in r[1:]:
    d = dict(zip(h, row))
    lab = next((v for v in row if 'ps1' in v and len(v) < 60), '?')
    agg[(lab, d.get('Metric Name'))].append(d.get('Metric Value'))
for k, v in sorted(agg.items()): print(k[0][:30], k[1], v)
" 2>&1 | head -60
tail -5 /tmp/o/ncu.err
tar -czf $OUT/c2.tgz -C /tmp/o .
