"""A small documentation set in the shape of the FastAPI tutorial (MkDocs Markdown, written for these tests).

Two pages speak of credentials: the CORS page (``allow_credentials``: cookies and authorization
headers on cross-origin requests) and the HTTP Basic page (a username and password). A follow-up
"and credentials?" after a CORS question must find the first; on its own it finds the second.
"""

from __future__ import annotations

from pathlib import Path

CORS_CREDENTIALS_SECTION = "Credentials in cross-origin requests"
PAGES = {
    "tutorial/cors.md": """# CORS (Cross-Origin Resource Sharing) { #cors }

CORS is the browser mechanism that decides whether JavaScript served from one origin may call an API
on another origin. An origin is the combination of protocol, domain and port.

## Use CORSMiddleware { #use-corsmiddleware }

Add `CORSMiddleware` to the application and list the origins that may call it in `allow_origins`.
Use `allow_methods` and `allow_headers` to restrict the methods and headers a browser may send.

```python
app.add_middleware(CORSMiddleware, allow_origins=["https://example.com"], allow_methods=["*"])
```

## Credentials in cross-origin requests { #credentials }

A browser sends a CORS request without cookies unless the server allows it: set `allow_credentials=True`
so that cross-origin requests may carry cookies and authorization headers.
With credentials allowed, none of `allow_origins`, `allow_methods` or `allow_headers` may be the
wildcard `["*"]`: the browser rejects the response unless each is listed explicitly.
""",
    "tutorial/security/http-basic-auth.md": """# HTTP Basic Auth { #http-basic-auth }

The simplest authentication scheme: the client sends a username and a password in the
`Authorization` header, and the application checks them.

## Check the credentials { #check-credentials }

Declare a dependency on `HTTPBasic` and receive an `HTTPBasicCredentials` object with the username
and password credentials. Compare them with `secrets.compare_digest` to resist timing attacks, and answer
401 with a `WWW-Authenticate` header when the credentials are wrong.
""",
    "tutorial/request-files.md": """# Request Files { #request-files }

Receive uploaded files with `File` and `UploadFile`. `UploadFile` spools large files to disk and
exposes an async interface: `read`, `write`, `seek` and `close`.

## Multiple files { #multiple-files }

Declare a list of `UploadFile` to accept several files in one multipart request.
""",
    "tutorial/middleware.md": """# Middleware { #middleware }

A middleware runs for every request before the path operation and for every response after it.
Create one with the `@app.middleware("http")` decorator on a function that receives the request and
a `call_next` function.

## Order of middleware { #order }

Middleware added last runs first. Timing headers such as `X-Process-Time` are a common example.
""",
    "tutorial/cookies.md": """# Cookie Parameters { #cookie-parameters }

Declare cookie parameters with `Cookie`, the same way as query and path parameters. A browser sends
cookies only to the origin that set them.
""",
    "advanced/settings.md": """# Settings and Environment Variables { #settings }

Read configuration from environment variables with Pydantic Settings: declare a `BaseSettings`
class and create it once, for example in a dependency cached with `lru_cache`.
""",
}


def write_corpus(root: Path) -> Path:
    """Write the pages under ``root`` (created) and return it."""
    for relative, text in PAGES.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root
