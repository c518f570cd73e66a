"""What a shell needs of the running process, re-exported by what it is: logging and request ids
(observability), the Prometheus counters (metrics), the line a server announces itself with (serve_link), the
models a config chooses (model_choices), what the CPU runs natively (cpu_runtime) and how an original file is opened as the readers
open it (documents.file_access)."""

from __future__ import annotations

from ragstream import metrics as metrics
from ragstream import serve_link as serve_link
from ragstream.cpu_runtime import detect_cpu_features as detect_cpu_features
from ragstream.cpu_runtime import native_bf16 as native_bf16
from ragstream.documents.file_access import open_document as open_document
from ragstream.model_choices import model_choices as model_choices
from ragstream.observability import configure_logging as configure_logging
from ragstream.observability import current_request_id as current_request_id
from ragstream.observability import request_id_scope as request_id_scope
