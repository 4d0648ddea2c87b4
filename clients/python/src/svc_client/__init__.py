"""Python client of svc: the context service over gRPC (SvcContextClient) and the
control-plane REST API (ControlPlaneClient). See clients/python/README.md.

The gRPC part is imported on first use, so the REST client works where grpcio is missing.
"""
from typing import Any

from .control_plane import ApiError, ControlPlaneClient

__all__ = ["ApiError", "ControlPlaneClient", "Subscription", "SvcContextClient"]


def __getattr__(name: str) -> Any:
    if name in ("SvcContextClient", "Subscription"):
        from . import context_client

        return getattr(context_client, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
