"""One JSON question to a language model through litellm: timeout, retries, schema validation.
Any failure is logged and answered with None, so callers fall back instead of failing."""

from __future__ import annotations

import json
import logging
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from engram.litellm_offline import litellm as offline_litellm
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
            return schema.model_validate(_json_object(response.choices[0].message.content or ""))
        except (ValidationError, ValueError) as exc:
            log.warning("LLM answer unusable (%s); falling back", exc)
        except Exception as exc:  # litellm raises provider-specific types (timeouts, HTTP errors)
            log.warning("LLM call failed (%s: %s); falling back", type(exc).__name__, exc)
        self.failures += 1
        return None


def _json_object(text: str) -> Any:
    """The JSON object in a reply, tolerating a ```json fence around it."""
    text = text.strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    return json.loads(text)
