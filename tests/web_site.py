"""A real web server for the crawl's tests: Debian's nginx on 127.0.0.1 serving a copy of
python3-doc's tutorial (ETags on), a robots.txt, a sitemap and redirects to addresses the
crawl must refuse. ``make test`` installs nginx and python3.11-doc (the Makefile's
``$(NGINX)`` rule)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.helpers import WAIT_S, free_port, spawned
from tests.web_tls import Certificates, issue

NGINX = Path("/usr/sbin/nginx")
PYTHON_DOCS = Path("/usr/share/doc/python3.11-doc/html")
TUTORIAL_PAGES = ("index.html", "appetite.html", "interpreter.html", "controlflow.html")


@dataclass
class Site:
    root: Path  # what nginx serves
    port: int
    logs: Path
    tls_port: int = 0  # the same site over TLS, its certificate for `localhost` only
    certificates: Certificates | None = None

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}/{path.lstrip('/')}"

    def access_statuses(self) -> list[tuple[str, int]]:
        """``(path, status)`` of each request nginx logged, in order."""
        return [(path, int(status)) for _, path, status, _, _ in self.access_log()]

    def access_log(self) -> list[list[str]]:
        """Each request nginx logged: method, path, status, host, X-Token header (``-``)."""
        lines = (self.logs / "access.log").read_text(encoding="utf-8").splitlines()
        return [line.split() for line in lines if line.strip()]


def _required() -> None:
    missing = [str(p) for p in (NGINX, PYTHON_DOCS) if not p.exists()]
    if missing:
        raise AssertionError(
            f"{', '.join(missing)} missing: `make test` installs nginx and python3.11-doc "
            "(or: apt-get install nginx python3.11-doc)"
        )


def _tls_server(site: Path, tls: Certificates | None, port: int) -> str:
    if tls is None:
        return ""
    return f"""
  server {{
    listen 127.0.0.1:{port} ssl;
    ssl_certificate {tls.cert}; ssl_certificate_key {tls.key};
    root {site};
  }}"""


def _config(site: Path, logs: Path, port: int, tls: Certificates | None, tls_port: int) -> str:
    user = "user root root;" if os.geteuid() == 0 else ""
    temp = " ".join(
        f"{kind}_temp_path {logs / kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return f"""
daemon off; {user} worker_processes 1; pid {logs / "nginx.pid"};
error_log {logs / "error.log"};
events {{ worker_connections 64; }}
http {{
  include /etc/nginx/mime.types;
  types {{ text/markdown md; }}
  log_format short '$request_method $uri $status $host $http_x_token';
  access_log {logs / "access.log"} short;
  {temp}
  server {{
    listen 127.0.0.1:{port};
    listen 127.0.0.2:{port};
    root {site};
    etag on;
    location = /docs/tutorial/metadata.html {{ return 302 http://169.254.169.254/latest/; }}
    location = /docs/tutorial/intranet.html {{ return 302 http://10.0.0.1/secret.html; }}
    # Down for maintenance while the file `down` exists beside the site: a 503.
    location = /docs/tutorial/interpreter.html {{
      if (-f {site.parent / "down"}) {{ return 503; }}
    }}
    location = /docs/tutorial/hop.html {{ return 302 /docs/tutorial/controlflow.html; }}
    location = /docs/tutorial/away.html {{
      return 302 http://127.0.0.2:{port}/docs/tutorial/appetite.html;
    }}
  }}{_tls_server(site, tls, tls_port)}
}}
"""


def _site(root: Path, port: int, traps: bool) -> None:
    tutorial = root / "docs" / "tutorial"
    tutorial.mkdir(parents=True)
    for page in TUTORIAL_PAGES:
        shutil.copy(PYTHON_DOCS / "tutorial" / page, tutorial / page)
    extra = (
        '<a href="private/secret.html">secret</a> <a href="big.html">big</a> '
        '<a href="metadata.html">m</a> <a href="intranet.html">i</a> '
        '<a href="notes.md">notes</a> <a href="hop.html">hop</a>'
    )
    index = tutorial / "index.html"
    if traps:  # pages that fail or are refused: a crawl of the site then exits 1
        index.write_text(index.read_text(encoding="utf-8").replace("</body>", extra + "</body>"))
    (tutorial / "private").mkdir()
    (tutorial / "private" / "secret.html").write_text(
        "<html><body><h1>Secret</h1><p>The wombatquartz is hidden.</p></body></html>"
    )
    (tutorial / "big.html").write_text(
        "<html><body><p>" + "big words " * 60_000 + "</p></body></html>"
    )
    (tutorial / "notes.md").write_text(
        "# Notes\n\n## Ferries\n\nThe axolotlferry leaves at noon.\n"
    )
    base = f"http://127.0.0.1:{port}"
    (root / "robots.txt").write_text(
        f"User-agent: *\nDisallow: /docs/tutorial/private/\nSitemap: {base}/sitemap.xml\n"
    )
    urls = "".join(
        f"<url><loc>{base}/docs/tutorial/{p}</loc></url>"
        for p in ("interpreter.html", "private/secret.html")
    )
    (root / "sitemap.xml").write_text(
        '<?xml version="1.0" encoding="UTF-8"?>'
        f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>'
    )


def _listening(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        assert process.poll() is None, "nginx exited as it started"
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"nginx did not listen on {port} within {WAIT_S} s")


@contextmanager
def nginx_site(tmp: Path, traps: bool = True, tls: bool = False) -> Iterator[Site]:
    """nginx serving the site under ``tmp/site`` for the block; with ``traps``, its index
    links to a page robots.txt disallows, a page too large, redirects to private addresses;
    with ``tls``, it is served over TLS too, on ``tls_port``."""
    _required()
    port = free_port()
    root, logs = tmp / "site", tmp / "nginx"
    logs.mkdir(parents=True)
    _site(root, port, traps)
    conf = logs / "nginx.conf"
    certificates = issue(logs / "tls", "localhost") if tls else None
    tls_port = free_port() if tls else 0
    conf.write_text(_config(root, logs, port, certificates, tls_port))
    argv = [str(NGINX), "-c", str(conf), "-p", str(logs), "-e", str(logs / "error.log")]
    with spawned(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as process:
        _listening(port, process)
        yield Site(root, port, logs, tls_port, certificates)
