"""Git specs told from paths: the forms git takes, a ref as pip writes it, credentials kept
out of what is shown, cited and named, and malformed specs refused naming the fix."""

from __future__ import annotations

import re

import pytest

from knowhub.errors import IngestError
from knowhub.ingest.gitspec import GitSpec, parse_git_spec


@pytest.mark.parametrize(
    ("spec", "url", "repo", "ref"),
    [
        (
            "git+https://git.example.org/team/handbook.git",
            "https://git.example.org/team/handbook.git",
            "git+https://git.example.org/team/handbook.git",
            None,
        ),
        (
            "git+http://host:8080/r.git@v1.2",
            "http://host:8080/r.git",
            "git+http://host:8080/r.git",
            "v1.2",
        ),
        (
            "git+ssh://git@host/o/r.git@main",
            "ssh://git@host/o/r.git",
            "git+ssh://git@host/o/r.git",
            "main",
        ),
        (
            "git+file:///srv/git/r.git@feature/x",
            "file:///srv/git/r.git",
            "git+file:///srv/git/r.git",
            "feature/x",
        ),
        (
            "git://127.0.0.1:9418/repo.git",
            "git://127.0.0.1:9418/repo.git",
            "git://127.0.0.1:9418/repo.git",
            None,
        ),
        (
            "git@github.com:owner/repo.git@v2",
            "git@github.com:owner/repo.git",
            "git@github.com:owner/repo.git",
            "v2",
        ),
    ],
)
def test_each_form_git_takes_is_a_spec_with_its_ref(
    spec: str, url: str, repo: str, ref: str | None
) -> None:
    parsed = parse_git_spec(spec)
    assert parsed is not None
    assert (parsed.url, parsed.repo, parsed.ref) == (url, repo, ref)


@pytest.mark.parametrize(
    "path",
    ["docs", "./docs/guide.md", "/srv/git/handbook", "notes:draft.md", "a@b", "https://x.org/"],
)
def test_a_path_or_a_web_url_is_no_git_spec(path: str) -> None:
    assert parse_git_spec(path) is None


def test_credentials_reach_git_and_are_never_shown_cited_or_named() -> None:
    parsed = parse_git_spec("git+https://reader:s3cr3t@git.example.org/r.git@v1")
    assert parsed is not None
    assert parsed.url == "https://reader:s3cr3t@git.example.org/r.git"
    assert parsed.shown == "git+https://git.example.org/r.git@v1"
    assert "s3cr3t" not in parsed.slug and "reader" not in parsed.slug
    said = "fatal: unable to access 'https://reader:s3cr3t@git.example.org/r.git/': 403 s3cr3t"
    assert "s3cr3t" not in parsed.masked(said)
    token = parse_git_spec("git+https://ghp_0123456789@github.com/o/r.git")
    assert token is not None and token.repo == "git+https://github.com/o/r.git"
    assert token.masked("token ghp_0123456789 refused") == "token *** refused"


def test_an_ssh_user_is_shown_and_its_password_is_not() -> None:
    parsed = parse_git_spec("git+ssh://deploy:hunter22@host/r.git")
    assert parsed is not None
    assert parsed.repo == "git+ssh://deploy@host/r.git"
    assert "hunter22" not in parsed.masked("Permission denied for deploy:hunter22")


def test_one_repository_at_two_refs_has_two_mirrors() -> None:
    main = parse_git_spec("git+https://host/r.git")
    tag = parse_git_spec("git+https://host/r.git@v1")
    assert main is not None and tag is not None
    assert main.slug != tag.slug
    assert main.slug == GitSpec("other", main.repo, None).slug  # named by what is shown


@pytest.mark.parametrize(
    ("spec", "fix"),
    [
        ("git+ftp://host/r.git", "not a git URL knowhub reads"),
        ("git+https://host/r.git#main", "takes no ?query or #fragment"),
        ("git+https://host/r.git@-x", "no branch, tag or commit name"),
        ("git+https://host/r.git@a..b", "no branch, tag or commit name"),
        ("git+file://relative/r.git", "git+file:///abs/path/to/repo"),
        ("git+https://host", "no repository path after the host"),
        ("git+https://host:port/r.git", "not a URL"),
    ],
)
def test_a_malformed_spec_is_refused_naming_the_fix(spec: str, fix: str) -> None:
    with pytest.raises(IngestError, match=re.escape(fix)):
        parse_git_spec(spec)


def test_a_malformed_spec_never_shows_its_credentials() -> None:
    with pytest.raises(IngestError) as refused:
        parse_git_spec("git+https://u:s3cr3t@host/r.git#x")
    assert "s3cr3t" not in str(refused.value)


def test_a_ref_given_as_an_option_stands_for_the_spec_s_own() -> None:
    parsed = parse_git_spec("git+https://host/r.git", ref="v2.0")
    assert parsed is not None and (parsed.ref, parsed.shown) == (
        "v2.0",
        "git+https://host/r.git@v2.0",
    )
    with pytest.raises(IngestError, match="the ref is named twice"):
        parse_git_spec("git+https://host/r.git@v1", ref="v2.0")
    with pytest.raises(IngestError, match="no branch, tag or commit name"):
        parse_git_spec("git+https://host/r.git", ref="--upload-pack=touch /tmp/x")
    assert parse_git_spec("docs", ref="v1") is None
