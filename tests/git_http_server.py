"""A git smart-HTTP server for tests: Debian's ``git http-backend`` (CGI) behind Basic
authentication, as a hosting service asks for a token.

Run: ``python -m tests.git_http_server ROOT PORT USER PASSWORD``; the repositories under
``ROOT/repos`` are served at ``http://127.0.0.1:PORT/git/backend/NAME.git`` to requests with
the credentials, and every other request is answered 401.
"""

from __future__ import annotations

import base64
import os
import sys
from http.server import CGIHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

BACKEND = "#!/bin/sh\nGIT_PROJECT_ROOT={root} GIT_HTTP_EXPORT_ALL=1 exec git http-backend\n"


def main() -> None:
    root, port, user, password = sys.argv[1:5]
    backend = Path(root) / "git" / "backend"
    backend.parent.mkdir(parents=True, exist_ok=True)
    backend.write_text(BACKEND.format(root=Path(root) / "repos"), encoding="utf-8")
    backend.chmod(0o755)
    expected = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")

    class Handler(CGIHTTPRequestHandler):
        cgi_directories = ["/git"]  # noqa: RUF012 - the stdlib's class attribute
        # Forking, as root, the handler runs CGI scripts as nobody, who may not read the
        # test's folders (root's, mode 700); without, they run as this process's user.
        have_fork = False

        def do_GET(self) -> None:
            if self._allowed():
                super().do_GET()

        def do_POST(self) -> None:
            if self._allowed():
                super().do_POST()

        def _allowed(self) -> bool:
            if self.headers.get("Authorization") == expected:
                return True
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="git"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return False

    os.chdir(root)  # CGI scripts are found under the working directory
    ThreadingHTTPServer(("127.0.0.1", int(port)), Handler).serve_forever()


if __name__ == "__main__":
    main()
