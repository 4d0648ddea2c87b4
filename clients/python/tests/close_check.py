"""Proves that SvcContextClient.close() ends its connection while the process lives on.

Run by test/clients/python-client.test.ts, which counts the context service's open
connections at each step (a process that exits closes its sockets anyway, so the unittest
suite alone cannot tell a working close() from a no-op): it prints OPEN once a call has
gone through the channel, waits for a line on stdin, closes the client, prints CLOSED and
waits for another line before it exits.
"""
from __future__ import annotations

import os
import sys

from svc_client import SvcContextClient


def step(word: str) -> None:
    print(word, flush=True)
    if not sys.stdin.readline():
        raise SystemExit(f"stdin closed after {word}")


def main() -> None:
    client = SvcContextClient(os.environ["SVC_CONTEXT_TARGET"], api_key=os.environ["SVC_API_KEY"])
    res = client.request_context(os.environ["SVC_TASK_TYPE"])
    if not res.success:
        raise SystemExit(f"request_context refused: {res.error_code} {res.error_message}")
    step("OPEN")
    client.close()
    step("CLOSED")


if __name__ == "__main__":
    main()
