"""``foscar dump-kv``: a model's per-layer post-RoPE queries, keys and values, to safetensors.

The model runs one forward pass (no cache) over the text's first ``max_tokens`` tokens;
the attention function records what it is given (after RoPE, before GQA expansion):

    layers.<i>.q   [batch, num_qo_heads, seq_len, head_dim]  bfloat16
    layers.<i>.k   [batch, num_kv_heads, seq_len, head_dim]  bfloat16
    layers.<i>.v   [batch, num_kv_heads, seq_len, head_dim]  bfloat16

File metadata (strings): ``format`` (``"foscar-kv/1"``), ``model``, ``text``, ``layers``
(comma-separated), ``sm_scale``, ``random_weights``.

``foscar accuracy --kv-file FILE`` reads it back (:func:`load_kv_file`): each layer is a
decode problem, the query of the last position over all ``seq_len`` keys and values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.errors import FoscarError

FORMAT = "foscar-kv/1"


def dump_kv(model: str | None, random_init: Path | None, text_path: Path | None, out: Path,
            layers: list[int] | None = None, max_tokens: int = 512, seed: int = 0) -> Path:  # fmt: skip
    """Write the safetensors file; return its path.

    Raises:
        FoscarError: a model that cannot be loaded, a layer index out of range, a bad
            ``max_tokens``, an ``out`` that is a directory or cannot be written, a chosen layer whose
            attention did not run through the capture.
    """
    from bench.hf_model import load_model, read_text, tokenize, torch_device

    if max_tokens < 2:
        raise FoscarError(f"--max-tokens: expected at least 2, got {max_tokens}")
    if Path(out).is_dir():
        raise FoscarError(f"--out {out}: a directory; expected the path of the safetensors file to write")
    device = torch_device()
    loaded = load_model(model, random_init, device, seed=seed)
    import torch
    from safetensors.torch import save_file
    from transformers import AttentionInterface

    import foscar.hf as fh

    num_layers = fh.attention_shape(loaded.model.config)[0]
    chosen = sorted(set(layers)) if layers else list(range(num_layers))
    bad = [i for i in chosen if not 0 <= i < num_layers]
    if bad:
        raise FoscarError(f"--layers {bad[0]}: the model has layers 0..{num_layers - 1}")
    text, text_source = read_text(text_path)
    ids = tokenize(loaded, text)[:, :max_tokens].to(device)
    tensors: dict[str, Any] = {}
    scales: list[float] = []

    def capture(module, query, key, value, attention_mask, scaling=None, **kwargs):
        i = module.layer_idx
        if i in chosen:
            for name, x in (("q", query), ("k", key), ("v", value)):
                tensors[f"layers.{i}.{name}"] = x.detach().to(torch.bfloat16).contiguous().cpu()
            scales.append(float(scaling if scaling is not None else query.shape[-1] ** -0.5))
        return fh.foscar_attention_forward(module, query, key, value, attention_mask, scaling=scaling, **kwargs)

    AttentionInterface.register(fh.ATTN_IMPLEMENTATION, capture)
    try:
        with torch.no_grad():
            loaded.model(input_ids=ids, use_cache=False, logits_to_keep=1)
    finally:
        fh.register()
    missing = [i for i in chosen if f"layers.{i}.q" not in tensors]
    if missing:  # a layer whose attention did not go through the hook (another attention implementation)
        raise FoscarError(f"--layers: layer(s) {', '.join(map(str, missing))} of the model were not captured (their "
                          "attention did not run through foscar's attention interface); nothing written")
    out = Path(out)
    meta = {"format": FORMAT, "model": loaded.source, "text": text_source, "layers": ",".join(map(str, chosen)),
            "sm_scale": repr(scales[0]) if scales else "", "random_weights": str(loaded.random_weights)}  # fmt: skip
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        save_file(tensors, str(out), metadata=meta)
    except OSError as e:
        raise FoscarError(f"cannot write {out}: {e.strerror}") from None
    except Exception as e:  # safetensors' own error type (e.g. an I/O error it wraps)
        raise FoscarError(f"cannot write {out}: {str(e).splitlines()[0][:200]}") from None
    return out


def load_kv_file(path: Path | str, device) -> tuple[list[Any], dict[str, str]]:
    """Read a ``dump-kv`` file as decode problems, one per layer.

    Returns:
        ``([foscar.data.KVData named "real-L<i>"], metadata)``: ``q [batch, num_qo_heads,
        head_dim]`` the last position's query, ``k, v [batch, num_kv_heads, seq_len,
        head_dim]`` bfloat16, ``seq_lens`` all ``seq_len``, ``sm_scale`` the model's attention scale as
        captured (``None`` in a file that has none).

    Raises:
        FoscarError: the file is missing, not safetensors, not a ``dump-kv`` file, or lists a layer
            without its tensors.
    """
    import torch

    from foscar.data import KVData

    path = Path(path)
    try:
        from safetensors import safe_open
    except ImportError:
        raise FoscarError("--kv-file needs safetensors: pip install -e '.[hf]'") from None
    try:
        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata() or {}
            if meta.get("format") != FORMAT:
                raise FoscarError(f"--kv-file {path}: not a `foscar dump-kv` file (format {meta.get('format')!r})")
            tensors = {k: f.get_tensor(k) for k in f.keys()}
    except FoscarError:
        raise
    except Exception as e:  # safetensors raises its own error types for a bad header
        raise FoscarError(f"--kv-file {path}: cannot read it as safetensors ({str(e).splitlines()[0][:200]})") from None
    try:
        layers = [int(x) for x in meta.get("layers", "").split(",") if x]
        sm_scale = float(meta["sm_scale"]) if meta.get("sm_scale") else None
    except ValueError:
        raise FoscarError(f"--kv-file {path}: its metadata's layers {meta.get('layers')!r} or sm_scale "
                          f"{meta.get('sm_scale')!r} is not what `foscar dump-kv` writes") from None
    out = []
    for i in layers:
        names = [f"layers.{i}.{n}" for n in ("q", "k", "v")]
        if any(n not in tensors for n in names):
            raise FoscarError(f"--kv-file {path}: lists layer {i} but lacks "
                              f"{', '.join(n for n in names if n not in tensors)}; write it again with foscar dump-kv")
        q, k, v = (tensors[n].to(device) for n in names)
        seq_lens = torch.full((k.shape[0],), k.shape[2], dtype=torch.int32, device=device)
        label = f"{meta['model']} layer {i}, post-RoPE, {k.shape[2]} tokens"
        out.append(KVData(f"real-L{i}", label, q[:, :, -1].contiguous(), k.contiguous(), v.contiguous(), seq_lens,
                          sm_scale=sm_scale))
    return out, meta
