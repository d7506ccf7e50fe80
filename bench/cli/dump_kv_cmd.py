"""``foscar dump-kv``: a model's per-layer post-RoPE q/k/v to a safetensors file (:func:`bench.dump_kv.dump_kv`;
the `hf` extra)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from bench.cli.app import app
from bench.cli.options import DebugOpt, DumpRandomInitOpt, DumpSeedOpt, HfModelOpt, TextOpt


@app.command("dump-kv")
def dump_kv(
    out: Annotated[Path, typer.Option("--out", help="The safetensors file to write.")],
    model: HfModelOpt = None,
    random_init: DumpRandomInitOpt = None,
    text: TextOpt = None,
    layers: Annotated[Optional[list[int]], typer.Option("--layers", help="Layer index (repeat; default all).")] = None,
    max_tokens: Annotated[int, typer.Option("--max-tokens", min=2, help="Tokens of the text to run.")] = 512,
    seed: DumpSeedOpt = 0,
    debug: DebugOpt = False,
) -> None:
    """Write a model's per-layer post-RoPE queries, keys and values to a safetensors file.

    Keys layers.<i>.q/k/v: (batch, heads, seq_len, head_dim) bfloat16 (bench/dump_kv.py);
    `foscar accuracy --kv-file FILE` measures every kernel variant on them.
    """
    from bench.dump_kv import dump_kv as run_dump

    typer.echo(f"wrote {run_dump(model, random_init, text, out, layers, max_tokens, seed)}")
