"""`foscar bench` with FlashInfer's programmatic dependent launch off (session 14, NOTES §45).

FlashInfer 0.6.13's decode entry points take ``enable_pdl=None`` and then turn PDL on wherever the device
supports it (``device_support_pdl``: sm_90+). This runs the `foscar` CLI with ``enable_pdl=False`` forced into
``BatchDecodeWithPagedKVCacheWrapper.run`` (fa2, fa2-tc) and ``trtllm_batch_decode_with_kv_cache`` (XQA), to
measure what PDL is worth to FlashInfer in the bench's back-to-back CUDA-graph replays. Usage: as `foscar`.
"""
import sys

import flashinfer.decode as d

_run = d.BatchDecodeWithPagedKVCacheWrapper.run
_xqa = d.trtllm_batch_decode_with_kv_cache


def run(self, *args, **kwargs):
    kwargs["enable_pdl"] = False
    return _run(self, *args, **kwargs)


def xqa(*args, **kwargs):
    kwargs["enable_pdl"] = False
    return _xqa(*args, **kwargs)


d.BatchDecodeWithPagedKVCacheWrapper.run = run
d.trtllm_batch_decode_with_kv_cache = xqa

from foscar_cli import main  # noqa: E402

sys.exit(main())
