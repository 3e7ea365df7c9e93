"""``python -m a3c`` and the installed ``a3c-train`` command: ``run_a3c.py`` for a user who
installed the package without this repository's scripts."""
import gc
import sys
from pathlib import Path


def command_name() -> str:
    """How the user started the command, for its usage and errors: ``run_a3c.py``,
    ``a3c-train`` or ``python -m a3c``."""
    name = Path(sys.argv[0]).name
    return "python -m a3c" if name == "__main__.py" else name


def train() -> None:
    """Parse the command line, run, and exit with the run's code (0, 1, 2, 130 or 143).

    The learner's imports wait until here: spawned workers re-import the script that started
    them (``run_a3c.py`` or the ``a3c-train`` wrapper) and should not pay for tensorboardX and
    the training loop.

    The working folder is searched for the user's modules (``search_working_folder``)."""
    from a3c.lifecycle.signals import keep_early_signals

    keep_early_signals()  # before the heavy imports: a signal during them is kept, not lost
    from a3c.cli import main
    from a3c.lib.user_envs import search_working_folder

    search_working_folder()
    exit_code = main(prog=command_name())
    # The run is saved and its files closed; frozen objects are left out of the collection
    # at interpreter exit, which walks every object torch created (about 0.7 s on 2 cores).
    gc.freeze()
    sys.exit(exit_code)


if __name__ == "__main__":
    train()
