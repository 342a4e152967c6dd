"""The Gemini API dialect (orchestrator/model_server/gemini_api.py) over HTTP, as Gemini CLI
calls it: streamed and non-streamed text and function calls, the function's result going back,
token counts, faults in Google's error shape, the ``x-goog-api-key`` header. Gemini CLI itself
runs against it in tests/e2e/test_acp_agents.py."""

from __future__ import annotations

import json
from typing import Any

import httpx2

from orchestrator.model_server import ModelServer, serve_model_server

SHELL = {"name": "run_shell_command", "input": {"command": "ls"}}
TOOLS = [
    {"functionDeclarations": [{"name": "run_shell_command", "parameters": {"type": "OBJECT"}}]}
]
SCRIPT: dict[str, Any] = {
    "api_key": "g-key-123",
    "conversations": [
        {
            "name": "tool",
            "marker": "[[tool]]",
            "turns": [
                {"text": "Looking.", "tool_calls": [SHELL], "chunk_chars": 4},
                {"text": "Two files.", "usage": {"input_tokens": 40, "output_tokens": 4}},
            ],
        },
        {
            "name": "flaky",
            "marker": "[[flaky]]",
            "turns": [{"fault": {"kind": "rate_limit", "times": 1}, "text": "later"}],
        },
    ],
}


def url(server: ModelServer, method: str, model: str = "gemini-2.5-flash") -> str:
    return f"{server.url}/v1beta/models/{model}:{method}"


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"text": text}]}


def events(raw: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in raw.splitlines() if line.startswith("data: ")]


async def test_a_streamed_function_call_then_its_result_then_text() -> None:
    headers = {"x-goog-api-key": "g-key-123"}
    async with serve_model_server(SCRIPT) as server, httpx2.AsyncClient() as http:
        first = await http.post(
            url(server, "streamGenerateContent") + "?alt=sse",
            headers=headers,
            json={"contents": [user("[[tool]] list")], "tools": TOOLS},
        )
        assert first.status_code == 200
        assert first.headers["content-type"].startswith("text/event-stream")
        frames = events(first.text)
        parts = [p for f in frames for p in f["candidates"][0]["content"]["parts"]]
        assert "".join(p.get("text", "") for p in parts) == "Looking."
        call = next(p["functionCall"] for p in parts if "functionCall" in p)
        assert call["name"] == "run_shell_command" and call["args"] == {"command": "ls"}
        last = frames[-1]
        assert last["candidates"][0]["finishReason"] == "STOP"
        assert last["usageMetadata"]["promptTokenCount"] == 10
        assert all("finishReason" not in f["candidates"][0] for f in frames[:-1])
        result = {"name": call["name"], "id": call["id"], "response": {"output": "a b"}}
        second = await http.post(
            url(server, "generateContent"),
            headers=headers,
            json={
                "contents": [
                    user("[[tool]] list"),
                    {"role": "model", "parts": [{"functionCall": call}]},
                    {"role": "user", "parts": [{"functionResponse": result}]},
                ],
                "tools": TOOLS,
            },
        )
    body = second.json()
    assert body["candidates"][0]["content"]["parts"] == [{"text": "Two files."}]
    assert body["usageMetadata"] == {
        "promptTokenCount": 40,
        "candidatesTokenCount": 4,
        "totalTokenCount": 44,
    }
    logged = server.requests_for("tool")
    assert [r.turn for r in logged] == [0, 1] and logged[0].api == "gemini"
    assert logged[1].roles == ["user", "model", "user"] and logged[0].tools == ["run_shell_command"]


async def test_faults_auth_counts_and_unknown_methods_answer_in_googles_shape() -> None:
    async with serve_model_server(SCRIPT) as server, httpx2.AsyncClient() as http:
        good = {"x-goog-api-key": "g-key-123"}
        limited = await http.post(
            url(server, "generateContent"), headers=good, json={"contents": [user("[[flaky]]")]}
        )
        assert limited.status_code == 429
        assert limited.json()["error"]["status"] == "RESOURCE_EXHAUSTED"
        again = await http.post(
            url(server, "generateContent"), headers=good, json={"contents": [user("[[flaky]]")]}
        )
        assert again.json()["candidates"][0]["content"]["parts"] == [{"text": "later"}]
        denied = await http.post(
            url(server, "generateContent"),
            headers={"x-goog-api-key": "wrong"},
            json={"contents": [user("[[flaky]]")]},
        )
        assert denied.status_code == 401 and denied.json()["error"]["code"] == 401
        counted = await http.post(
            url(server, "countTokens"), headers=good, json={"contents": [user("x" * 40)]}
        )
        assert counted.json() == {"totalTokens": 10}
        unknown = await http.post(url(server, "embedContent"), headers=good, json={})
        assert unknown.status_code == 404 and unknown.json()["error"]["status"] == "NOT_FOUND"
        empty = await http.post(url(server, "generateContent"), headers=good, json={})
        assert empty.status_code == 400
        assert empty.json()["error"]["status"] == "INVALID_ARGUMENT"
