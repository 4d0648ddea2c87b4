"""The gRPC client of the context service (port 8002, gRPC over HTTP/2 cleartext).

RequestContext answers refusals in-band (`success` false, `error_code`, `error_message`),
so `request_context` returns the response either way; a transport failure (the server is
down, UNAVAILABLE, INTERNAL) raises grpc.RpcError. Subscribe yields the stream's messages;
its failures (UNAUTHENTICATED, PERMISSION_DENIED, NOT_FOUND, ...) raise grpc.RpcError from
the iteration.
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import grpc

from . import context_pb2, context_pb2_grpc


class Subscription:
    """An open Subscribe stream: iterate for ContextMessages; `cancel()` (or leaving the
    `with` block) ends it."""

    def __init__(self, call: Any) -> None:
        self._call = call

    def __iter__(self) -> Iterator[context_pb2.ContextMessage]:
        return self

    def __next__(self) -> context_pb2.ContextMessage:
        return next(self._call)

    def cancel(self) -> None:
        self._call.cancel()

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cancel()


class SvcContextClient:
    """Client of ContextService on `target` (`host:port`, plaintext HTTP/2).

    `api_key` is the agent's key (`sk_...`); it travels in the request messages (`api_key`
    of RequestContextRequest, `auth_token` of SubscribeRequest unless a token is given).
    The channel is opened here and held until `close()` (or the end of a `with` block).
    """

    def __init__(self, target: str, api_key: str | None = None, *, timeout: float | None = 30.0, options: list[tuple[str, Any]] | None = None) -> None:
        self.api_key = api_key
        self.timeout = timeout
        self._channel = grpc.insecure_channel(target, options=options or [])
        self._stub = context_pb2_grpc.ContextServiceStub(self._channel)

    def __enter__(self) -> SvcContextClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Closes the channel and its connection, cancelling any open stream."""
        self._channel.close()

    def request_context(
        self,
        task_type: str,
        params: Mapping[str, str] | None = None,
        *,
        chain_id: str = "",
        parent_request_id: str = "",
        explain: bool = False,
        at_least_revision: int | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
    ) -> context_pb2.RequestContextResponse:
        """The context for one task; check `success` (refusals are in-band). `explain` adds
        `explanation`; `at_least_revision` (a write's `content_revision`) waits up to 2 s for
        that content, else the call fails with grpc.StatusCode.ABORTED."""
        req = context_pb2.RequestContextRequest(
            api_key=api_key if api_key is not None else (self.api_key or ""),
            task_type=task_type,
            params=dict(params or {}),
            chain_id=chain_id,
            parent_request_id=parent_request_id,
            explain=explain,
        )
        if at_least_revision is not None:
            req.at_least_revision = at_least_revision
        return self._stub.RequestContext(req, timeout=timeout if timeout is not None else self.timeout)

    def subscribe(self, tag: str, agent_id: str, *, auth_token: str | None = None, timeout: float | None = None) -> Subscription:
        """Opens a Subscribe stream on `tag` as `agent_id`, authenticated with `auth_token`
        (a token from `POST /api/context/token`) or else the client's API key. No deadline
        unless `timeout` is given: a stream lives until cancelled."""
        token = auth_token if auth_token is not None else (self.api_key or "")
        req = context_pb2.SubscribeRequest(tag=tag, agent_id=agent_id, auth_token=token)
        return Subscription(self._stub.Subscribe(req, timeout=timeout))
