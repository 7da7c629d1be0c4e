"""One JSON question to a language model through litellm: timeout, retries, schema validation.
Any failure is answered with None, so callers fall back instead of failing; the model out of
reach is logged once per outage, when it begins and when it ends."""

from __future__ import annotations

import json
import logging
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from engram.litellm_offline import litellm as offline_litellm
from engram.observability.outages import Outage
from engram.settings import LLMSettings

log = logging.getLogger(__name__)
T = TypeVar("T", bound=BaseModel)


class JsonChat:
    def __init__(self, llm: LLMSettings) -> None:
        if not llm.model:
            raise ValueError("no LLM model is configured")
        self.model = llm.model
        self._api_base = llm.api_base
        self._api_key = llm.api_key.get_secret_value() if llm.api_key else None
        self._timeout = llm.timeout_seconds
        self._retries = llm.retries
        self.failures = 0  # how often a caller had to fall back
        self._outage = _outage_of(self.model, self._api_base)

    async def ask(self, system: str, user: str, schema: type[T]) -> T | None:
        litellm = offline_litellm()
        prompt = system.format(schema=json.dumps(schema.model_json_schema()))
        try:
            response = await litellm.acompletion(
                model=self.model,
                messages=[{"role": "system", "content": prompt}, {"role": "user", "content": user}],
                api_base=self._api_base,
                api_key=self._api_key,
                timeout=self._timeout,
                num_retries=self._retries,
                temperature=0,
                response_format={"type": "json_object"},
            )
            content = response.choices[0].message.content or ""
        except Exception as exc:  # litellm raises provider-specific types (timeouts, HTTP errors)
            self._outage.began(exc)  # logged once per outage, not per call
            self.failures += 1
            return None
        self._outage.ended()
        try:
            return schema.model_validate(_json_object(content))
        except (ValidationError, ValueError) as exc:
            log.warning("LLM answer unusable (%s); falling back", exc)
        self.failures += 1
        return None


# One per model and address: the judge and the query rewriter each ask it, and its outage is one.
_OUTAGES: dict[tuple[str, str | None], Outage] = {}


def _outage_of(model: str, api_base: str | None) -> Outage:
    meanwhile = "the rules stand in (queries are searched as they are) until it is back"
    return _OUTAGES.setdefault((model, api_base), Outage(log, f"LLM {model}", meanwhile))


def _json_object(text: str) -> Any:
    """The JSON object in a reply, tolerating a ```json fence around it."""
    text = text.strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    return json.loads(text)
