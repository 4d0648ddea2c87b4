"""A thin REST client of the control-plane API (port 8000), on the standard library.

Bodies and answers are the spec's JSON as dicts, typed with the TypedDicts generated from
spec/openapi-control-plane.yaml (control_plane_types.py). Any answer outside 2xx raises
ApiError carrying the spec's error body (`error`, `message`, `details`).
"""
from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, cast

from .control_plane_types import (
    Agent,
    AgentCreate,
    AgentDetail,
    AgentList,
    ApiKeyIssueRequest,
    AuditVerifyResult,
    BundleCreate,
    BundleCreated,
    BundleVersionDetail,
    Deployment,
    IssuedApiKey,
    RotatedApiKey,
    SubscribeToken,
    Tag,
)


class ApiError(Exception):
    """A non-2xx answer: `status` and the spec's error body (`error`, `message`, `details`)."""

    def __init__(self, status: int, error: str, message: str, details: Any = None) -> None:
        super().__init__(f"{status} {error}: {message}")
        self.status = status
        self.error = error
        self.message = message
        self.details = details


def _seg(value: str) -> str:
    """A path segment: ids contain `:`, which the API accepts percent-encoded."""
    return urllib.parse.quote(value, safe="")


class ControlPlaneClient:
    """Admin and agent calls of the control-plane API.

    `admin_key` is sent as `X-Admin-Key` on admin routes, `api_key` as `X-API-Key` on the
    agent's own routes (the Subscribe token). Each call opens and closes its own connection
    (urllib sends `Connection: close`), so the client holds nothing between calls; `close()`
    exists for symmetry with SvcContextClient and the context manager.
    """

    def __init__(self, base_url: str, *, admin_key: str | None = None, api_key: str | None = None, timeout: float = 30.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.admin_key = admin_key
        self.api_key = api_key
        self.timeout = timeout

    def __enter__(self) -> ControlPlaneClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Nothing to release: every request closes its connection."""

    # -- agents and keys ---------------------------------------------------------------

    def create_agent(self, body: AgentCreate) -> Agent:
        return cast(Agent, self._call("POST", "/api/agents", body))

    def get_agent(self, agent_id: str) -> AgentDetail:
        return cast(AgentDetail, self._call("GET", f"/api/agents/{_seg(agent_id)}"))

    def list_agents(self, *, role_id: str | None = None, status: str | None = None, limit: int | None = None, offset: int | None = None) -> AgentList:
        query = {"role_id": role_id, "status": status, "limit": limit, "offset": offset}
        return cast(AgentList, self._call("GET", "/api/agents", query=query))

    def issue_api_key(self, agent_id: str, body: ApiKeyIssueRequest | None = None) -> IssuedApiKey:
        """A new key; its plaintext (`api_key`) is in this answer only."""
        return cast(IssuedApiKey, self._call("POST", f"/api/agents/{_seg(agent_id)}/api-keys", body or {}))

    def rotate_api_key(self, agent_id: str, key_id: str, grace_seconds: int | None = None) -> RotatedApiKey:
        """A successor of the key (plaintext in this answer only); the old key works `grace_seconds` more (default 0)."""
        body = {} if grace_seconds is None else {"grace_seconds": grace_seconds}
        return cast(RotatedApiKey, self._call("POST", f"/api/agents/{_seg(agent_id)}/api-keys/{_seg(key_id)}/rotate", body))

    def mint_subscribe_token(self, ttl_seconds: int | None = None) -> SubscribeToken:
        """A Subscribe token for the agent of `api_key`."""
        body = {} if ttl_seconds is None else {"ttl_seconds": ttl_seconds}
        return cast(SubscribeToken, self._call("POST", "/api/context/token", body, admin=False))

    # -- bundles, tags, deployments ------------------------------------------------------

    def publish_bundle(self, body: BundleCreate) -> BundleCreated:
        return cast(BundleCreated, self._call("POST", "/api/bundles", body))

    def get_bundle_version(self, bundle_id: str, version: str) -> BundleVersionDetail:
        return cast(BundleVersionDetail, self._call("GET", f"/api/bundles/{_seg(bundle_id)}/versions/{_seg(version)}"))

    def create_tag(self, tag: str, bundle_id: str, bundle_version: str, description: str | None = None) -> Tag:
        body: dict[str, Any] = {"tag": tag, "bundle_id": bundle_id, "bundle_version": bundle_version}
        if description is not None:
            body["description"] = description
        return cast(Tag, self._call("POST", "/api/tags", body))

    def move_tag(self, tag: str, bundle_id: str, bundle_version: str) -> Tag:
        return cast(Tag, self._call("PUT", f"/api/tags/{_seg(tag)}", {"bundle_id": bundle_id, "bundle_version": bundle_version}))

    def get_tag(self, tag: str) -> Tag:
        return cast(Tag, self._call("GET", f"/api/tags/{_seg(tag)}"))

    def deploy(self, project_bundles: list[tuple[str, str]], deployment_id: str | None = None) -> Deployment:
        """Deploys project bundles given as (bundle_id, version) pairs."""
        body: dict[str, Any] = {"project_bundles": [{"id": i, "version": v} for i, v in project_bundles]}
        if deployment_id is not None:
            body["deployment_id"] = deployment_id
        return cast(Deployment, self._call("POST", "/api/deploy", body))

    def get_deployment(self, deployment_id: str) -> Deployment:
        return cast(Deployment, self._call("GET", f"/api/deployments/{_seg(deployment_id)}"))

    # -- audit -----------------------------------------------------------------------------

    def verify_audit(self) -> AuditVerifyResult:
        """Recomputes the audit chain on the server; `status` is `ok` or `tampered`."""
        return cast(AuditVerifyResult, self._call("GET", "/api/audit/verify"))

    # -- transport -------------------------------------------------------------------------

    def _call(self, method: str, path: str, body: Any = None, *, query: dict[str, Any] | None = None, admin: bool = True) -> Any:
        url = self.base_url + path
        if query:
            pairs = {k: str(v) for k, v in query.items() if v is not None}
            if pairs:
                url += "?" + urllib.parse.urlencode(pairs)
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if admin and self.admin_key:
            headers["X-Admin-Key"] = self.admin_key
        if not admin and self.api_key:
            headers["X-API-Key"] = self.api_key
        req = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as res:
                raw = res.read()
        except urllib.error.HTTPError as e:
            with e:
                raise _api_error(e.code, e.read()) from None
        return json.loads(raw) if raw else None


def _api_error(status: int, raw: bytes) -> ApiError:
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    if not isinstance(body, dict):
        return ApiError(status, "http_error", raw[:200].decode("utf-8", "replace"))
    return ApiError(status, str(body.get("error", "http_error")), str(body.get("message", "")), body.get("details"))
