"""Azure OpenAI: a deployment's ``chat/completions``, keyed by the ``api-key`` header.

``POST {endpoint}/openai/deployments/{deployment}/chat/completions?api-version=…`` takes
and answers the OpenAI format (:class:`~knowhub.providers.llms.openai.ChatCompletionsLLM`);
the deployment, not a ``model`` field, picks the model. Microsoft Entra ID tokens are
not supported: use a resource key. (Azure's newer ``/openai/v1`` API is plain
OpenAI-compatible: the ``openai`` provider with that base_url.)
"""

from __future__ import annotations

from urllib.parse import quote

from knowhub.config import Settings
from knowhub.errors import ConfigError
from knowhub.providers.jsonhttp import Transport, api_key
from knowhub.providers.llms.base import require_setting, require_url
from knowhub.providers.llms.openai import ChatCompletionsLLM

__all__ = ["AzureChat", "create"]


class AzureChat(ChatCompletionsLLM):
    """One Azure OpenAI deployment.

    Args:
        endpoint: the resource root, e.g. ``https://my-resource.openai.azure.com``.
        deployment: the deployment name (chosen when deploying, not the model name).
        api_key: the resource key, sent as ``api-key``.
        api_version: the ``api-version`` query parameter.
    """

    def __init__(
        self,
        endpoint: str,
        deployment: str,
        *,
        api_key: str,
        api_version: str = "2024-10-21",
        timeout_s: float = 60.0,
        max_retries: int = 2,
        backoff_s: float = 0.5,
        temperature: float = 0.1,
        max_tokens: int = 800,
    ) -> None:
        url = (
            f"{endpoint.rstrip('/')}/openai/deployments/{quote(deployment, safe='')}"
            f"/chat/completions?api-version={quote(api_version, safe='')}"
        )
        hints = {
            401: "check the key (llm.api_key_env names its variable; a key of this resource)",
            404: "check llm.azure.endpoint, llm.azure.deployment and llm.azure.api_version",
        }
        transport = Transport(
            "llm azure",
            timeout_s=timeout_s,
            max_retries=max_retries,
            backoff_s=backoff_s,
            hints=hints,
        )
        super().__init__(
            url,
            deployment,
            {"api-key": api_key},
            transport,
            model_id=f"azure:{deployment}",
            temperature=temperature,
            max_tokens=max_tokens,
            send_model=False,
        )
        self.deployment = deployment
        self.api_version = api_version


def create(settings: Settings) -> AzureChat:
    opts = settings.llm
    endpoint = require_url(
        "azure", "llm.azure.endpoint", opts.azure.endpoint, "https://my-resource.openai.azure.com"
    )
    if "/openai/" in endpoint + "/":
        raise ConfigError(
            f"llm.azure.endpoint {endpoint!r} should be the resource root only, "
            f"e.g. {endpoint.split('/openai', 1)[0]!r}; the deployment goes in "
            "llm.azure.deployment"
        )
    deployment = require_setting(
        "azure", "llm.azure.deployment", opts.azure.deployment, "gpt-4o-mini (your deployment name)"
    )
    key_env = require_setting("azure", "llm.api_key_env", opts.api_key_env, "AZURE_OPENAI_API_KEY")
    key = api_key(settings, key_env, "llm.api_key_env")
    if key is None:  # unreachable: api_key() raises when the named variable is unset
        raise ConfigError(f"llm.api_key_env names ${key_env}, which is not set")
    return AzureChat(
        endpoint,
        deployment,
        api_key=key,
        api_version=opts.azure.api_version,
        timeout_s=opts.timeout_s,
        max_retries=opts.max_retries,
        backoff_s=opts.backoff_s,
        temperature=opts.temperature,
        max_tokens=opts.max_tokens,
    )
