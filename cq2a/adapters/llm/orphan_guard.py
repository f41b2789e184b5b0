"""Run a command, and stop it when the process that started this guard is gone.

``python -m cq2a.adapters.llm.orphan_guard COMMAND ARGS...`` is how cq2a starts the local llama.cpp
server: the server normally stops with cq2a (``atexit``), but a cq2a killed by SIGKILL or the
OOM killer runs no exit handlers, and an orphaned server would keep its cores and gigabytes of
model weights busy. The guard starts COMMAND as its child, polls its own parent's pid, and
when the parent is gone (or the guard gets SIGTERM or SIGINT) it terminates the child, kills it
if it lingers, and exits with the child's code.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from types import FrameType

POLL_S = 1.0
GRACE_S = 10.0


def stop(child: subprocess.Popen[bytes]) -> None:
    """SIGTERM (llama-server shuts down gracefully), then SIGKILL after ``GRACE_S``."""
    if child.poll() is None:
        child.terminate()
        try:
            child.wait(timeout=GRACE_S)
        except subprocess.TimeoutExpired:
            child.kill()


def watch_parent(parent: int, child: subprocess.Popen[bytes]) -> None:
    while os.getppid() == parent and child.poll() is None:
        time.sleep(POLL_S)
    stop(child)


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: python -m cq2a.adapters.llm.orphan_guard COMMAND [ARGS...]")
    child = subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL)

    def on_signal(signum: int, frame: FrameType | None) -> None:
        threading.Thread(target=stop, args=(child,), daemon=True).start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    threading.Thread(target=watch_parent, args=(os.getppid(), child), daemon=True).start()
    sys.exit(child.wait())


if __name__ == "__main__":
    main()
