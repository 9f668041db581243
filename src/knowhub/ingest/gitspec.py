"""What names a git repository to ingest: a spec told from a path, its ref, its name without
credentials.

Specs, as pip writes them (``git+https://host/repo.git@v1.2``)::

    git+https://host/owner/repo.git[@ref]   git+http://…   git+ssh://[user@]host/path[@ref]
    git+file:///abs/path/repo[@ref]         git://host[:port]/repo[@ref]
    user@host:owner/repo.git[@ref]          (scp-like, as ``git clone`` takes it)

A plain path is never a spec: a folder is ingested as files, a working tree with them (its
untracked files too); ``git+file://`` names a local repository's tracked files at a ref.
A URL's user name and password are credentials: they reach git and nothing else (messages,
sources and mirror names show the URL without them).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, replace
from urllib.parse import SplitResult, urlsplit

from knowhub.errors import IngestError

__all__ = ["GitSpec", "parse_git_spec"]

# The schemes of a git URL as a spec writes them, and what git is given.
_SCHEMES = {
    "git+https": "https",
    "git+http": "http",
    "git+ssh": "ssh",
    "git+file": "file",
    "git+git": "git",
    "git": "git",
}
# user@host:path, as ``git clone`` reads it: a user is required, so that a file named
# ``notes:draft.md`` stays a file; a path starting with ``-`` could be read as an option.
_SCP = re.compile(r"(?P<user>[A-Za-z0-9._-]+)@(?P<host>[A-Za-z0-9.-]+):(?P<path>[^-:\s][^\s]*)")
# A branch or tag name, or a commit hash: no option, range, reflog or glob syntax.
_REF = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._/+-]*")
_FORMS = "git+https://host/repo.git, git+ssh://…, git+file:///abs/path, git://…, user@host:repo"


@dataclass(frozen=True)
class GitSpec:
    """A parsed spec: ``url`` (given to git, credentials and all), ``repo`` (the spec as
    written, without credentials nor ref: shown and cited), ``ref`` (None: the remote's
    HEAD) and ``secrets`` (the credentials a message must never show)."""

    url: str
    repo: str
    ref: str | None
    secrets: tuple[str, ...] = ()

    @property
    def shown(self) -> str:
        """The spec as messages show it: ``repo`` and its ref."""
        return f"{self.repo}@{self.ref}" if self.ref else self.repo

    @property
    def plain(self) -> str:
        """The URL as git takes it, without credentials (for a command to suggest)."""
        return self.repo.removeprefix("git+")

    @property
    def slug(self) -> str:
        """The mirror folder's name: readable, and one per repository and ref."""
        readable = re.sub(r"[^A-Za-z0-9._-]+", "-", self.shown).strip("-.")[-60:]
        digest = hashlib.sha256(self.shown.encode("utf-8", "surrogateescape")).hexdigest()
        return f"{readable}-{digest[:12]}"

    def masked(self, text: str) -> str:
        """``text`` (git's own words, say) with every credential of the spec, and any
        ``scheme://user:password@`` it holds, replaced by ``***``."""
        for secret in self.secrets:
            text = text.replace(secret, "***")
        return re.sub(r"(\w+://)[^/@\s]+@", r"\1***@", text)


def parse_git_spec(spec: str, ref: str | None = None) -> GitSpec | None:
    """The repository ``spec`` names, or None when it is no git spec (a path). ``ref`` (a
    ``sources:`` entry's option) stands for a ref the spec does not name.

    Raises:
        IngestError: a git spec that is malformed (naming it, masked, and the forms), or
            that names a ref besides ``ref``.
    """
    parsed = _parsed(spec)
    if parsed is None or ref is None:
        return parsed
    if parsed.ref is not None:
        raise IngestError(
            f"{parsed.shown}: the ref is named twice ({parsed.ref} in the spec, {ref} as its "
            "option): keep one"
        )
    _split_ref(f"@{ref}", spec)  # checked as a spec's would be
    return replace(parsed, ref=ref)


def _parsed(spec: str) -> GitSpec | None:
    scheme = spec.split("://", 1)[0].lower() if "://" in spec else ""
    if scheme in _SCHEMES:
        return _url_spec(spec, _SCHEMES[scheme])
    if scheme.startswith("git+"):
        raise IngestError(f"{_hidden(spec)}: not a git URL knowhub reads; write {_FORMS}")
    if not scheme and (scp := _SCP.fullmatch(spec)) is not None:
        path, ref = _split_ref(scp["path"], spec)
        url = f"{scp['user']}@{scp['host']}:{path}"
        return GitSpec(url, url, ref)
    return None


def _url_spec(spec: str, scheme: str) -> GitSpec:
    try:
        parts = urlsplit(spec)
        parts.port  # noqa: B018 - a port that is no number raises here, not in git
    except ValueError as exc:
        raise IngestError(f"{_hidden(spec)}: not a URL ({exc}); write {_FORMS}") from exc
    if parts.query or parts.fragment:
        raise IngestError(
            f"{_hidden(spec)}: a git URL takes no ?query or #fragment: name a branch or tag "
            "as URL@ref (git+https://host/repo.git@v1.2)"
        )
    path, ref = _split_ref(parts.path, spec)
    if scheme == "file" and (parts.netloc not in ("", "localhost") or not path.startswith("/")):
        raise IngestError(
            f"{_hidden(spec)}: a local repository is named by its absolute path: "
            "git+file:///abs/path/to/repo"
        )
    if not path.strip("/") and scheme != "file":
        raise IngestError(f"{_hidden(spec)}: no repository path after the host; write {_FORMS}")
    secrets, netloc = _credentials(parts, scheme)
    # Not urlunsplit: it writes git+file:/path, one slash pair short.
    return GitSpec(
        f"{scheme}://{parts.netloc}{path}", f"{parts.scheme}://{netloc}{path}", ref, secrets
    )


def _credentials(parts: SplitResult, scheme: str) -> tuple[tuple[str, ...], str]:
    """The URL's credentials and its host part as shown: an SSH user name is no secret
    (``git@host``) and stays; a password is a credential, and so is a user given alone
    (a token often is: ``https://TOKEN@host``). The user part is never shown."""
    userinfo, at, host = parts.netloc.rpartition("@")
    if not at:
        return (), parts.netloc
    user, _, password = userinfo.partition(":")
    if scheme == "ssh":
        return ((password,) if password else ()), f"{user}@{host}"
    # Masked wherever it appears; a word so short would garble messages more than hide it.
    secret = password or user
    return tuple(s for s in dict.fromkeys((userinfo, secret)) if len(s) >= 3), host


def _split_ref(path: str, spec: str) -> tuple[str, str | None]:
    """``path@ref`` → (path, ref), split at the last ``@`` as pip does (a ref may hold a
    ``/``: ``@feature/x``), the ref checked: a branch, a tag or a commit hash."""
    if "@" not in path:
        return path, None
    path, _, ref = path.rpartition("@")
    if not _REF.fullmatch(ref) or ".." in ref or ref.endswith((".lock", "/", ".")):
        raise IngestError(
            f"{_hidden(spec)}: {ref!r} is no branch, tag or commit name: write the ref after "
            "the last @ (git+https://host/repo.git@v1.2), or leave it out for the default branch"
        )
    return path, ref


def _hidden(spec: str) -> str:
    """A malformed spec as an error shows it: no ``user:password@`` of a URL."""
    return re.sub(r"(\w+://)[^/@\s]+@", r"\1***@", spec)
