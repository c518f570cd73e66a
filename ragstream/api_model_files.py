"""Where the model files a config runs are found (what ``ragstream doctor`` reports), re-exported for the CLI."""

from __future__ import annotations

from ragstream.providers.embedders.onnx_runtime import resolve_onnx_file as resolve_onnx_file
from ragstream.providers.packaged_models import is_available_locally as is_available_locally
from ragstream.providers.packaged_models import locate_onnx_model as locate_onnx_model
from ragstream.providers.packaged_models import resolve_model_path as resolve_model_path
