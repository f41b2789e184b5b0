"""A QA system behind an HTTP endpoint as the software under test.

Per query: POST ``{"question", "context"}`` and read ``{"answer"}``. In batches: POST
``{"items": [{"question", "context"}, ...]}`` and read ``{"answers": [...]}``. ``mode="auto"``
tries a batch first and falls back to per-query requests when the server does not take one.

With ``sut.input = "question"`` the queries carry no ``context`` (``{"question"}``): the
system answers from its own index. A retrieval system may say what it retrieved: a reply
``{"answer", "contexts": [passage, ...]}``, and in a batch each answer a string or such an
object; the passages then tell a retrieval miss from a reader error.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any, Literal

from cq2a.adapters.fanout import parallel_map
from cq2a.adapters.sut.base import SUTAnswer, SUTError, SUTQuery, check_answers

HTTPMode = Literal["auto", "batch", "single"]
_BATCH_REFUSED = {400, 404, 405, 415, 422, 501}


class _BatchRefused(Exception):
    """The server does not take ``{"items": [...]}`` requests."""


class HTTPSUT:
    """POSTs queries as JSON; ``batch_size`` caps a batch and the parallel per-query requests."""

    def __init__(
        self,
        url: str,
        *,
        mode: HTTPMode = "auto",
        batch_size: int = 16,
        timeout_s: float = 60.0,
        api_key: str | None = None,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise SUTError(f"HTTP SUT needs an http(s) URL, got {url!r}")
        self.name = f"http:{url}"
        self.url = url
        self.mode: HTTPMode = mode
        self.batch_size = batch_size
        self.timeout_s = timeout_s
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"

    def answer(self, items: list[SUTQuery]) -> list[str | SUTAnswer]:
        if not items:
            return []
        if self.mode != "single":
            try:
                return self._answer_batches(items)
            except _BatchRefused as refusal:
                if self.mode == "batch":
                    raise SUTError(f"{self.name} refused a batch request: {refusal}") from None
                self.mode = "single"
        answers = parallel_map(self._answer_one, items, self.batch_size)
        return check_answers(self.name, answers, len(items))

    def _answer_batches(self, items: list[SUTQuery]) -> list[str | SUTAnswer]:
        answers: list[str | SUTAnswer] = []
        for start in range(0, len(items), self.batch_size):
            chunk = items[start : start + self.batch_size]
            payload = {"items": [item.model_dump(exclude_none=True) for item in chunk]}
            reply = self._post(payload, batch=True)
            if not isinstance(reply, dict) or "answers" not in reply:
                raise _BatchRefused(f"reply has no 'answers': {reply!r:.200}")
            answers.extend(check_answers(self.name, reply["answers"], len(chunk)))
        self.mode = "batch"
        return answers

    def _answer_one(self, item: SUTQuery) -> dict[str, Any]:
        """The reply, ``{"answer"}`` with maybe ``"contexts"``, for ``check_answers``."""
        reply = self._post(item.model_dump(exclude_none=True), batch=False)
        if not isinstance(reply, dict) or not isinstance(reply.get("answer"), str):
            raise SUTError(f"{self.name} reply has no string 'answer': {reply!r:.200}")
        return {key: reply[key] for key in ("answer", "contexts") if key in reply}

    def _post(self, payload: dict[str, Any], *, batch: bool) -> Any:
        request = urllib.request.Request(
            self.url, data=json.dumps(payload).encode(), headers=self._headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                body = response.read()
        except urllib.error.HTTPError as error:
            if batch and error.code in _BATCH_REFUSED:
                raise _BatchRefused(f"HTTP {error.code}") from error
            detail = error.read()[:200].decode(errors="replace")
            raise SUTError(f"{self.name} answered HTTP {error.code}: {detail}") from error
        except (urllib.error.URLError, TimeoutError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise SUTError(
                f"cannot reach {self.name} (timeout {self.timeout_s}s): {reason}"
            ) from error
        try:
            return json.loads(body)
        except json.JSONDecodeError as error:
            if batch:
                raise _BatchRefused("reply is not JSON") from error
            raise SUTError(f"{self.name} replied with non-JSON: {body[:200]!r}") from error
