#!/usr/bin/env bash
# Session 64, call 3 (the same warm H100; the command as it ran): the whole GPU suite, call 2's having been cut.
timeout 420 python -m pytest -m gpu -n 4 -q -p no:cacheprovider -rfE --tb=short --durations=15 tests \
  > $OUT/pytest_full2.txt 2>&1
echo pytest rc=$?; tail -30 $OUT/pytest_full2.txt
