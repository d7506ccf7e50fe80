"""The base of the CLI's choice types (``--arch``, ``--bits``, ``--format``, ...).

typer maps a parsed option to its ``Enum`` annotation by ``str(value)``. For a plain ``(str, Enum)`` member that is
``"Bits.int2"``, not ``"2"``, so typer 0.26-0.28 (no pydantic; the GPU machine's image) turned every value that
:func:`bench.cli.options.enum_parser` had already parsed into ``None``: ``foscar bench --bits 2`` failed and ``--arch``
and ``--format`` fell back to their defaults (session 79). A :class:`Choice` member's ``str`` is its value, which
every typer version maps back to the member.
"""

from __future__ import annotations

from enum import Enum


class Choice(str, Enum):
    """A ``str`` Enum whose ``str()`` and ``format()`` are its value (``str(Bits.int2) == "2"``), as Python 3.11's
    ``StrEnum`` (this project supports 3.10). Functional form: ``Choice("Rotation", {"none": "none", ...})``."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)
