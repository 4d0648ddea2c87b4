"""The Python client against a running svc (run by test/clients/python-client.test.ts).

Environment (set by the TypeScript test, which boots the stack and deploys the content):
  SVC_API_URL          control-plane base URL (http://127.0.0.1:<port>)
  SVC_CONTEXT_TARGET   gRPC target of the context service (127.0.0.1:<port>)
  SVC_ADMIN_KEY        the stack's admin key
  SVC_AGENT_ID         an active agent whose role the deployed bundle applies to
  SVC_API_KEY          that agent's key
  SVC_TASK_TYPE        an intent the agent is allowed
  SVC_SCD_IDS          the SCD ids its context must hold, comma-separated, in order
  SVC_TAG              a tag on SVC_BUNDLE_ID at 1.0.0
  SVC_BUNDLE_ID        a bundle with versions 1.0.0 and 1.1.0

Run: PYTHONPATH=clients/python/src python3 -m unittest discover -s clients/python/tests -v
"""
from __future__ import annotations

import os
import unittest
import uuid

import grpc

from svc_client import ApiError, ControlPlaneClient, SvcContextClient
from svc_client import context_pb2

ENV = os.environ
SNAPSHOT = context_pb2.CONTEXT_MESSAGE_TYPE_SNAPSHOT
UPDATE = context_pb2.CONTEXT_MESSAGE_TYPE_UPDATE


def admin() -> ControlPlaneClient:
    return ControlPlaneClient(ENV["SVC_API_URL"], admin_key=ENV["SVC_ADMIN_KEY"], timeout=20)


def uid() -> str:
    return uuid.uuid4().hex[:10]


def concern_bundle(bundle_id: str, version: str, role: str, scd_names: list[str]) -> dict:
    provenance = {"created_by": "python-client-test", "created_at": "2026-01-01T00:00:00Z"}
    docs = [
        {
            "id": f"scd:project:{n}",
            "type": "concern",
            "title": f"SCD {n}",
            "version": "1.0.0",
            "description": f"SCD {n} of the Python client test",
            "content": {"rule": f"rule {n} at {version}"},
            "provenance": provenance,
        }
        for n in scd_names
    ]
    return {
        "id": bundle_id,
        "type": "concern",
        "version": version,
        "title": f"Bundle {bundle_id}",
        "description": "Published by the Python client test",
        "imports": [],
        "scds": [d["id"] for d in docs],
        "applies_to": {"roles": [role]},
        "provenance": provenance,
        "documents": docs,
    }


class RequestContextTest(unittest.TestCase):
    def test_served_with_the_deployed_scds(self) -> None:
        with SvcContextClient(ENV["SVC_CONTEXT_TARGET"], api_key=ENV["SVC_API_KEY"]) as client:
            res = client.request_context(ENV["SVC_TASK_TYPE"], {"ticket": "T-1"}, chain_id=f"chain-{uid()}")
        self.assertTrue(res.success, res.error_message)
        self.assertEqual(res.error_code, "")
        self.assertEqual(res.agent_id, ENV["SVC_AGENT_ID"])
        self.assertEqual(res.task_type, ENV["SVC_TASK_TYPE"])
        self.assertNotEqual(res.request_id, "")
        self.assertEqual(list(res.scd_ids), ENV["SVC_SCD_IDS"].split(","))
        for scd in res.scd_ids:
            self.assertIn(f"id: {scd}", res.scd_content[scd])
        self.assertEqual(list(res.context_bundle_ids), [f"{ENV['SVC_BUNDLE_ID']}:1.0.0"])
        self.assertGreater(res.content_revision, 0)
        self.assertFalse(res.HasField("explanation"))

    def test_explained_and_no_older_than_a_revision(self) -> None:
        with SvcContextClient(ENV["SVC_CONTEXT_TARGET"], api_key=ENV["SVC_API_KEY"]) as client:
            first = client.request_context(ENV["SVC_TASK_TYPE"])
            res = client.request_context(ENV["SVC_TASK_TYPE"], explain=True, at_least_revision=first.content_revision)
            self.assertTrue(res.success, res.error_message)
            self.assertGreaterEqual(res.content_revision, first.content_revision)
            self.assertEqual(sorted(res.explanation.selected.keys()), sorted(res.scd_ids))
            for scd in res.scd_ids:
                self.assertIn(res.explanation.selected[scd].reason, ("role", "all_roles", "governs", "override"))
            with self.assertRaises(grpc.RpcError) as refused:
                client.request_context(ENV["SVC_TASK_TYPE"], at_least_revision=first.content_revision + 1000)
            self.assertEqual(refused.exception.code(), grpc.StatusCode.ABORTED)

    def test_wrong_key_is_refused_in_band(self) -> None:
        with SvcContextClient(ENV["SVC_CONTEXT_TARGET"], api_key="sk_" + "0" * 48) as client:
            res = client.request_context(ENV["SVC_TASK_TYPE"])
        self.assertFalse(res.success)
        self.assertEqual(res.error_code, "AUTH_FAILED")
        self.assertNotEqual(res.error_message, "")
        self.assertEqual(list(res.scd_ids), [])
        self.assertNotEqual(res.request_id, "")  # the refusal is audited too

    def test_intent_not_allowed_is_refused_in_band(self) -> None:
        with SvcContextClient(ENV["SVC_CONTEXT_TARGET"], api_key=ENV["SVC_API_KEY"]) as client:
            res = client.request_context("not_an_allowed_intent")
        self.assertFalse(res.success)
        self.assertEqual(res.error_code, "INTENT_NOT_ALLOWED")

    def test_a_closed_client_refuses_calls(self) -> None:
        client = SvcContextClient(ENV["SVC_CONTEXT_TARGET"], api_key=ENV["SVC_API_KEY"])
        self.assertTrue(client.request_context(ENV["SVC_TASK_TYPE"]).success)
        client.close()
        with self.assertRaises(ValueError):  # grpc: "Cannot invoke RPC on closed channel!"
            client.request_context(ENV["SVC_TASK_TYPE"])


class SubscribeTest(unittest.TestCase):
    def test_snapshot_then_update_when_the_tag_moves(self) -> None:
        tag, bundle_id = ENV["SVC_TAG"], ENV["SVC_BUNDLE_ID"]
        with SvcContextClient(ENV["SVC_CONTEXT_TARGET"], api_key=ENV["SVC_API_KEY"]) as client:
            with client.subscribe(tag, ENV["SVC_AGENT_ID"], timeout=20) as stream:
                first = next(stream)
                self.assertEqual(first.type, SNAPSHOT)
                self.assertEqual(first.sequence, 1)
                self.assertEqual((first.tag, first.bundle_id, first.bundle_version), (tag, bundle_id, "1.0.0"))
                self.assertEqual(len(first.scd_ids), 2)
                self.assertEqual(sorted(first.scd_content), sorted(first.scd_ids))
                with admin() as api:
                    api.move_tag(tag, bundle_id, "1.1.0")
                nxt = next(stream)
                self.assertEqual(nxt.type, UPDATE)
                self.assertEqual(nxt.sequence, 2)
                self.assertEqual(nxt.bundle_version, "1.1.0")
                self.assertEqual(len(nxt.scd_ids), 3)

    def test_a_minted_token_opens_the_stream(self) -> None:
        with ControlPlaneClient(ENV["SVC_API_URL"], api_key=ENV["SVC_API_KEY"]) as api:
            token = api.mint_subscribe_token(ttl_seconds=60)
        self.assertEqual(token["agent_id"], ENV["SVC_AGENT_ID"])
        with SvcContextClient(ENV["SVC_CONTEXT_TARGET"]) as client:
            with client.subscribe(ENV["SVC_TAG"], ENV["SVC_AGENT_ID"], auth_token=token["token"], timeout=20) as stream:
                self.assertEqual(next(stream).type, SNAPSHOT)

    def test_a_bad_token_ends_the_stream_unauthenticated(self) -> None:
        with SvcContextClient(ENV["SVC_CONTEXT_TARGET"], api_key="sk_" + "0" * 48) as client:
            with client.subscribe(ENV["SVC_TAG"], ENV["SVC_AGENT_ID"], timeout=20) as stream:
                with self.assertRaises(grpc.RpcError) as caught:
                    next(stream)
        self.assertEqual(caught.exception.code(), grpc.StatusCode.UNAUTHENTICATED)


class ControlPlaneTest(unittest.TestCase):
    def test_agent_key_bundle_deploy_tag_then_context(self) -> None:
        u = uid()
        role, agent_id, bundle_id = f"role:py-{u}", f"agent:py-{u}", f"bundle:py-{u}"
        with admin() as api:
            created = api.create_agent({"agent_id": agent_id, "name": "Python agent", "role_id": role, "allowed_intents": ["triage"]})
            self.assertEqual((created["agent_id"], created["status"]), (agent_id, "active"))
            key = api.issue_api_key(agent_id, {"name": "python"})
            self.assertTrue(key["api_key"].startswith("sk_"))
            detail = api.get_agent(agent_id)
            self.assertEqual([k["key_id"] for k in detail["api_keys"]], [key["key_id"]])
            self.assertNotIn("api_key", detail["api_keys"][0])  # the plaintext is shown once
            rotated = api.rotate_api_key(agent_id, key["key_id"], grace_seconds=60)
            self.assertEqual((rotated["rotated_from"], rotated["name"]), (key["key_id"], "python"))
            self.assertTrue(rotated["api_key"].startswith("sk_"))
            with self.assertRaises(ApiError) as bad:
                api.rotate_api_key(agent_id, key["key_id"], grace_seconds=86_401)
            self.assertEqual(bad.exception.status, 400)
            listed = api.list_agents(role_id=role)
            self.assertEqual(([a["agent_id"] for a in listed["agents"]], listed["total"]), ([agent_id], 1))

            published = api.publish_bundle(concern_bundle(bundle_id, "1.0.0", role, [f"py-{u}-a", f"py-{u}-b"]))
            self.assertEqual((published["bundle_id"], published["version"], published["status"]), (bundle_id, "1.0.0", "published"))
            api.publish_bundle(concern_bundle(bundle_id, "1.1.0", role, [f"py-{u}-a", f"py-{u}-b", f"py-{u}-c"]))
            deployment = api.deploy([(bundle_id, "1.0.0")])
            self.assertEqual(deployment["status"], "active")
            self.assertEqual(api.get_deployment(deployment["deployment_id"])["project_bundles"], [f"{bundle_id}:1.0.0"])

            tag = f"py-{u}:prod"
            self.assertEqual(api.create_tag(tag, bundle_id, "1.0.0")["bundle_version"], "1.0.0")
            self.assertEqual(api.move_tag(tag, bundle_id, "1.1.0")["bundle_version"], "1.1.0")
            self.assertEqual(api.get_tag(tag)["bundle_version"], "1.1.0")

        with SvcContextClient(ENV["SVC_CONTEXT_TARGET"], api_key=key["api_key"]) as client:
            res = client.request_context("triage")
        self.assertTrue(res.success, res.error_message)
        self.assertEqual(list(res.scd_ids), [f"scd:project:py-{u}-a", f"scd:project:py-{u}-b"])

    def test_errors_carry_the_spec_body(self) -> None:
        with admin() as api:
            with self.assertRaises(ApiError) as caught:
                api.get_agent(f"agent:missing-{uid()}")
            self.assertEqual((caught.exception.status, caught.exception.error), (404, "not_found"))
            self.assertNotEqual(caught.exception.message, "")

            with self.assertRaises(ApiError) as caught:
                api.create_agent({"agent_id": "not-an-agent-id", "name": "x", "role_id": "role:x", "allowed_intents": ["triage"]})  # type: ignore[typeddict-item]
            self.assertEqual((caught.exception.status, caught.exception.error), (400, "validation_error"))
            self.assertIsInstance(caught.exception.details["errors"], list)

        with ControlPlaneClient(ENV["SVC_API_URL"], admin_key="wrong") as api:
            with self.assertRaises(ApiError) as caught:
                api.list_agents()
            self.assertEqual((caught.exception.status, caught.exception.error), (401, "auth_failed"))

    def test_audit_verify_ok(self) -> None:
        with SvcContextClient(ENV["SVC_CONTEXT_TARGET"], api_key=ENV["SVC_API_KEY"]) as client:
            self.assertTrue(client.request_context(ENV["SVC_TASK_TYPE"]).success)  # a record to verify
        with admin() as api:
            result = api.verify_audit()
        self.assertEqual(result["status"], "ok")
        self.assertGreaterEqual(result["record_count"], 1)
        self.assertIsNone(result["tampered_at_sequence"])


if __name__ == "__main__":
    unittest.main()
