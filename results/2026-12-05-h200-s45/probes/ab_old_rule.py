"""`python .ab/ab_old_rule.py ARGS` = `python -m bench.ab ARGS` with the two-CTAs rule before session 45's change
(LARGE_GRID_MAX_CHUNK_TOKENS_CONTIGUOUS set back to the paged bound, 8192: the old rule exactly)."""
import runpy
import sys

import foscar.kernels.splits as s

s.LARGE_GRID_MAX_CHUNK_TOKENS_CONTIGUOUS = s.LARGE_GRID_MAX_CHUNK_TOKENS
sys.argv = ["bench.ab", *sys.argv[1:]]
runpy.run_module("bench.ab", run_name="__main__", alter_sys=True)
