"""The model server process of ``llm.provider = "local"``: llama.cpp's own OpenAI-compatible HTTP server (from the
prebuilt ``xllamacpp`` wheel, ``pip install 'ragstream[local]'``) on one GGUF file, bound to 127.0.0.1.

Started by :mod:`ragstream.providers.local_llm` as ``python -m ragstream.providers.local_llm_child --model PATH
--context N --threads T --parallel P --alias NAME [--embedding POOLING]``; ragstream itself never imports this module or xllamacpp. It
binds a port the OS picks, loads the model, prints one line ``READY http://127.0.0.1:PORT`` on stdout, and serves
until its stdin closes (the process that started it is gone, however it ended) or it gets SIGTERM or SIGINT.
A model that cannot load exits with status 1 and says why on stderr.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from types import FrameType

from ragstream.child_process import until_parent_gone

READY_PREFIX = "READY "
"""The line the child prints on stdout once it listens with the model loaded, followed by its base address."""
LOOPBACK = "127.0.0.1"
POOLING = {"mean": "LLAMA_POOLING_TYPE_MEAN", "cls": "LLAMA_POOLING_TYPE_CLS", "last": "LLAMA_POOLING_TYPE_LAST"}
"""``--embedding`` pooling names and llama.cpp's ``llama_pooling_type`` members."""


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m ragstream.providers.local_llm_child", description=__doc__)
    parser.add_argument("--model", required=True, help="The GGUF file.")
    parser.add_argument("--context", type=int, required=True, help="Context size in tokens, shared by the slots.")
    parser.add_argument("--threads", type=int, default=0, help="CPU threads; 0: llama.cpp's choice.")
    parser.add_argument("--parallel", type=int, default=1, help="Requests decoded at once (slots).")
    parser.add_argument("--alias", default="", help="The model name the server reports.")
    parser.add_argument("--port", type=int, default=0, help="Port on 127.0.0.1; 0: one the OS picks.")
    parser.add_argument("--embedding", choices=sorted(POOLING), default=None,
                        help="Serve embeddings pooled this way (one text per batch of --context tokens), not chat.")
    return parser.parse_args(argv)


def _stop(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


def main(argv: list[str] | None = None) -> None:
    """Serve the model until stdin closes or a SIGTERM/SIGINT arrives."""
    args = _arguments(argv)
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.n_ctx = args.context
    params.n_parallel = args.parallel
    if args.threads > 0:
        params.cpuparams.n_threads = args.threads
        params.cpuparams_batch.n_threads = args.threads
    params.hostnames = [LOOPBACK]
    params.port = args.port
    params.ui = False
    if args.alias:
        params.model_alias = {args.alias}
    if args.embedding:
        params.embedding = True
        params.pooling_type = getattr(xllamacpp.llama_pooling_type, POOLING[args.embedding])
        params.n_batch = params.n_ubatch = args.context  # llama.cpp embeds a text in one physical batch
    try:
        server = xllamacpp.Server(params)  # returns once the model is loaded and the port listens
    except RuntimeError as error:
        print(f"the model server could not start on {args.model}: {error}", file=sys.stderr, flush=True)
        sys.exit(1)
    # llama.cpp installed its own SIGINT/SIGTERM handlers (they stop its loop but not this process): take them back.
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    print(f"{READY_PREFIX}{server.listening_address}", flush=True)
    try:
        until_parent_gone()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)  # the OS frees the model at once; llama.cpp's own teardown waits on its threads


if __name__ == "__main__":
    main()
