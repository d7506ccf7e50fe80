"""The harness's one error type and its exit codes.

Anything the user can fix (a bad flag, a missing file, the wrong GPU) raises
:class:`FoscarError` with a one-line message that says what was found and what is
needed; ``foscar_cli.main`` prints it and exits with :data:`EXIT_USAGE`.

Exit codes of the ``foscar`` commands:

* :data:`EXIT_OK` (0): done, nothing to report;
* :data:`EXIT_REGRESSION` (1): ``foscar compare`` found a regression (or, with
  ``--strict``, a row timed in one run only);
* :data:`EXIT_USAGE` (2): a bad input, refused before any work (one line on stderr;
  ``foscar --debug ...`` or ``FOSCAR_DEBUG=1`` shows the traceback); also ``foscar compare``
  of two runs that share no row (verdict ``none``: nothing was compared);
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


def check_choices(name: str, given, allowed, unavailable: dict | None = None) -> None:
    """Refuse the first value of ``given`` that is not in ``allowed``, in the one wording
    every command uses: ``--kernel 'x': expected one of a, b, c`` (``name`` is the flag,
    or the config key for a config file).

    Args:
        name: the flag (``--group-size``) or config key (``group_size``).
        given: the values to check (an iterable; ``None`` checks nothing).
        allowed: the values that can run.
        unavailable: values that are known but can never run here, mapped to why (e.g.
            ``{"fp4": "needs sm_100 ..."}``); their message gives the reason first.

    Raises:
        FoscarError: the first value not allowed.
    """
    choices = ", ".join(str(a) for a in allowed)
    for value in given or ():
        if value in allowed:
            continue
        try:
            why = (unavailable or {}).get(value)
        except TypeError:  # an unhashable value (a list where one value belongs) is simply not allowed
            why = None
        if why:
            raise FoscarError(f"{name} {value!r}: {why}; expected one of {choices}")
        raise FoscarError(f"{name} {value!r}: expected one of {choices}")
