"""Every error ftharness raises on purpose, under one root.

A front end catches `FtharnessError` and prints its message as one line (exit 2
for input and cluster errors); anything else is a bug and exits 4 with a
traceback file. The messages are written for the user: they name the field or
the thing and what is allowed.
"""

import threading


class FtharnessError(Exception):
    """Root of ftharness's own errors."""


class ScenarioError(FtharnessError, ValueError):
    """A scenario that cannot run; the message is one line for the user."""


class ClusterError(FtharnessError, RuntimeError):
    """The cluster could not be started or reached; one line for the user."""


class FaultSkipped(FtharnessError):
    """A fault could not be done (its target is gone); recorded, not raised."""


class NoSession(FtharnessError, RuntimeError):
    """A Chaos Toolkit activity ran outside an ftharness control session."""


class ChaosCrash(FtharnessError, RuntimeError):
    """Raised inside the train function by a crash_worker fault (the user-bug class)."""


class InputError(FtharnessError, ValueError):
    """A path or argument that cannot be used (it does not exist, it cannot be read); one line for the user."""


#: set when ftharness is told to stop (the SIGTERM handler of a cluster it started): an interrupt
#: raised inside Ray's calls can come out as another error, and a loop that goes on anyway
#: (Hypothesis's, in explore) reads this to stop
STOP_REQUESTED = threading.Event()
