"""Run a Python module as ``python -m`` would, and stop it when its parent process is gone.

``python -m cq2a.llm.orphan_guard MODULE ARGS...`` is how cq2a starts the local llama.cpp
server: the server normally stops with cq2a (``atexit``), but a cq2a killed by SIGKILL or the
OOM killer runs no exit handlers, and an orphaned server would keep its cores and gigabytes of
model weights busy. A daemon thread polls the parent pid; when the parent is gone it sends this
process SIGTERM (uvicorn's graceful shutdown) and exits hard if that has not ended it in time.
"""

from __future__ import annotations

import os
import runpy
import signal
import sys
import threading
import time

POLL_S = 1.0
GRACE_S = 10.0


def watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(POLL_S)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(GRACE_S)
    os._exit(1)


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit("usage: python -m cq2a.llm.orphan_guard MODULE [ARGS...]")
    module = sys.argv[1]
    threading.Thread(target=watch_parent, args=(os.getppid(),), daemon=True).start()
    sys.argv = [module, *sys.argv[2:]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
