"""The harness's one error type.

Anything the user can fix (a bad flag, a missing file, the wrong GPU) raises
:class:`FoscarError` with a one-line message that says what was found and what is
needed; ``foscar_cli.main`` prints it and exits with :data:`EXIT_USAGE`.
"""

EXIT_USAGE = 2


class FoscarError(Exception):
    """A user-facing error: one line, says what to do next."""
