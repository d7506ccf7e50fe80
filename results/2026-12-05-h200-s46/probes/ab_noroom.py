"""`python .ab/ab_noroom.py ARGS` = `python -m bench.ab ARGS` with plans of one chunk a sequence kept to one slot a
sequence: where plan_work gives the room (num_slots = 2 x batch, target_chunks = batch), the plan becomes
(batch, 1, 1), i.e. no empty CTAs and the one-chunk fixed path of find_work, as 32 x 8K already has. Every other plan
is plan_work's."""
import runpy
import sys

import foscar.kernels.decode_cuda as d
import foscar.kernels.splits as s

_plan = s.plan_work


def plan_noroom(batch, *args, **kwargs):
    slots, fixed, target = _plan(batch, *args, **kwargs)
    if fixed == 0 and target == batch and slots == 2 * batch:
        return batch, 1, 1
    return slots, fixed, target


s.plan_work = d.plan_work = plan_noroom
sys.argv = ["bench.ab", *sys.argv[1:]]
runpy.run_module("bench.ab", run_name="__main__", alter_sys=True)
