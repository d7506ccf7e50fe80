"""Loading a transformers model for ``foscar eval-model`` / ``dump-kv`` / the model-speed script.

Nothing is ever downloaded: ``--model`` is a local directory (``config.json`` plus the
weights), or ``--random-init CONFIG.json`` builds the architecture of a transformers
``config.json`` with random weights (for speed runs; no accuracy claim comes from it).
``HF_HUB_OFFLINE=1`` is set before transformers is imported.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.errors import FoscarError

SAMPLE_TEXT = Path(__file__).parent / "data" / "sample.txt"
SAMPLE_TEXT_SOURCE = ("public-domain sample shipped with foscar: the Gettysburg Address (1863), the Preamble "
                      "of the US Constitution (1787), parts of the Declaration of Independence (1776)")  # fmt: skip


@dataclass
class LoadedModel:
    model: Any  # transformers PreTrainedModel, eval mode, bfloat16
    source: str  # the path, or "random-init:<config>"
    tokenizer: Any | None  # None: text is tokenized as UTF-8 bytes (see tokenize)
    random_weights: bool


def import_transformers():
    """Import transformers offline; a missing ``hf`` extra becomes a :class:`FoscarError`."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    try:
        import transformers
    except ImportError:
        raise FoscarError("transformers is not installed: pip install -e '.[hf]'") from None
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    import foscar.hf

    foscar.hf.register()
    return transformers


def load_model(model: str | Path | None, random_init: str | Path | None, device, *, seed: int = 0,
               num_layers: int | None = None) -> LoadedModel:  # fmt: skip
    """Load a local checkpoint or build a random-weight model, bfloat16, ``attn_implementation="foscar"``.

    Args:
        model: a local directory with ``config.json`` and the weights.
        random_init: a transformers ``config.json`` file (``model_type`` required); weights random (seed ``seed``).
            A path under ``configs/`` that is not there is read from the shipped presets
            (:func:`bench.config.shipped_file`).
        device: torch device to load onto.
        num_layers: with ``random_init``, override ``num_hidden_layers``.

    Raises:
        FoscarError: neither or both given; the path does not exist, has no ``config.json``,
            or its weights are not on disk (one line, no traceback).
    """
    if (model is None) == (random_init is None):
        raise FoscarError("pass exactly one of --model DIR (local weights) and --random-init CONFIG.json")
    transformers = import_transformers()
    import torch

    if random_init is not None:
        from bench.config import shipped_file

        path = shipped_file(random_init)  # configs/hf/*.json from any directory
        try:
            cfg_dict = json.loads(path.read_text())
            model_type = cfg_dict.pop("model_type")
        except (OSError, ValueError, KeyError) as e:
            raise FoscarError(f"--random-init {path}: expected a transformers config.json with a model_type ({e})") from None
        if num_layers:
            cfg_dict["num_hidden_layers"] = num_layers
        cfg = transformers.AutoConfig.for_model(model_type, **cfg_dict)
        cfg._attn_implementation = "foscar"
        torch.manual_seed(seed)
        with torch.device(device):
            m = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16, attn_implementation="foscar")
        return LoadedModel(m.eval(), f"random-init:{path}", None, True)

    path = Path(model)
    if not path.exists():
        raise FoscarError(f"--model {path}: no such directory; FOSCAR loads local weights only and downloads nothing "
                          "(pass a directory with config.json and the *.safetensors weights)")  # fmt: skip
    if not (path / "config.json").is_file():
        raise FoscarError(f"--model {path}: no config.json there; a hub name or an empty directory would need a "
                          "download, which FOSCAR never does: pass the directory the model was saved to")  # fmt: skip
    try:
        m = transformers.AutoModelForCausalLM.from_pretrained(
            path, local_files_only=True, dtype=torch.bfloat16, attn_implementation="foscar"
        )
    except (OSError, ValueError, EnvironmentError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise FoscarError(f"--model {path}: cannot load it from disk ({first[:200]}); its weights must be local, "
                          "nothing is downloaded") from None  # fmt: skip
    tokenizer = None
    if any((path / f).is_file() for f in ("tokenizer.json", "tokenizer.model", "tokenizer_config.json")):
        try:
            tokenizer = transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)
        except (OSError, ValueError):
            tokenizer = None
    return LoadedModel(m.to(device).eval(), str(path), tokenizer, False)


def tokenize(loaded: LoadedModel, text: str):
    """``[1, n]`` int64 token ids: the model's tokenizer, or without one the text's UTF-8
    bytes modulo the vocabulary size (deterministic; for models without a tokenizer)."""
    import torch

    if loaded.tokenizer is not None:
        ids = loaded.tokenizer(text, return_tensors="pt", add_special_tokens=True)["input_ids"]
        return ids.to(torch.int64)
    vocab = loaded.model.config.get_text_config().vocab_size
    return torch.tensor([[b % vocab for b in text.encode("utf-8")]], dtype=torch.int64)


def read_text(path: Path | None) -> tuple[str, str]:
    """``(text, description)`` of ``path``, default the shipped sample.

    Raises:
        FoscarError: the file cannot be read.
    """
    p = Path(path) if path is not None else SAMPLE_TEXT
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise FoscarError(f"--text {p}: cannot read it ({e})") from None
    return text, (SAMPLE_TEXT_SOURCE if path is None else str(p))


def torch_device():
    """The CUDA device if there is one, else CPU with the Triton interpreter enabled."""
    import torch

    if torch.cuda.is_available():
        return torch.device("cuda", torch.cuda.current_device())
    from bench.engine import enable_interpreter

    enable_interpreter()
    return torch.device("cpu")
