"""Shared helpers for tests that drive the ``foscar`` CLI in-process."""

from __future__ import annotations

from bench.arch import DeviceInfo

H200 = DeviceInfo(name="NVIDIA H200", capability=(9, 0), sm_count=132, total_memory=141 << 30)


def render_table(table) -> str:
    """A rich table (or any renderable) as the plain text a 200-column console prints."""
    from rich.console import Console

    console = Console(width=200, record=True)
    console.print(table)
    return console.export_text()


def run_main(capsys, *args) -> tuple[int, str, str]:
    """Call ``foscar_cli.main`` in-process; return (exit code, stdout, stderr)."""
    import foscar_cli

    code = 0
    try:
        foscar_cli.main([str(a) for a in args])
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    captured = capsys.readouterr()
    return code, captured.out, captured.err
