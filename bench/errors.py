"""The harness's one error type and its exit codes.

Anything the user can fix (a bad flag, a missing file, the wrong GPU) raises
:class:`FoscarError` with a one-line message that says what was found and what is
needed; ``foscar_cli.main`` prints it and exits with :data:`EXIT_USAGE`.

Exit codes of the ``foscar`` commands:

* :data:`EXIT_OK` (0): done, nothing to report;
* :data:`EXIT_REGRESSION` (1): ``foscar compare`` found a regression (or, with
  ``--strict``, an unmatched row);
* :data:`EXIT_USAGE` (2): a bad input, refused before any work (one line on stderr;
  ``foscar --debug ...`` or ``FOSCAR_DEBUG=1`` shows the traceback);
* :data:`EXIT_RUN_PROBLEM` (3): ``foscar bench`` ran and wrote all its files, but its
  numbers need a look: a row's time was invalid (zero, negative, NaN, Inf), or no
  FOSCAR row was timed at all. ``summary.json`` lists the reasons under ``problems``.
"""

EXIT_OK = 0
EXIT_REGRESSION = 1
EXIT_USAGE = 2
EXIT_RUN_PROBLEM = 3


class FoscarError(Exception):
    """A user-facing error: one line, says what to do next."""
