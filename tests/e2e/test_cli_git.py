"""``knowhub ingest`` of git repositories as docs/sources.md shows it: its commands run
against a bare repository served by a real ``git daemon`` (the doc's host swapped for it),
and its sample output is what a first run and a re-run after a commit print."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from knowhub.ingest.gitspec import parse_git_spec
from tests.git_helpers import commit_all, git, git_daemon, new_repository, published, push
from tests.helpers import ROOT, free_port, knowhub, write

# The git section of the sources page (from its heading to the next section's).
DOC = (ROOT / "docs" / "sources.md").read_text(encoding="utf-8").split("\n## Git repositories\n")[1]
DOC = DOC.split("\n## ")[0]
HTTPS = "git+https://git.example.org/team/handbook.git"
SCP = "git@git.example.org:team/handbook.git"
LOCAL = "git+file:///srv/git/handbook.git"


def _block(language: str, index: int = 0) -> str:
    blocks = re.findall(rf"```{language}\n(.*?)```", DOC, flags=re.S)
    assert len(blocks) > index, f"docs/sources.md lost its {language} block"
    return str(blocks[index])


def _normal(text: str, served: str) -> list[str]:
    """Lines as the doc shows them: its host for the test's, commits and times alike."""
    text = text.replace(served, HTTPS)
    text = re.sub(r"\b[0-9a-f]{12}\b", "<commit>", text)
    return [re.sub(r" in \d+\.\d s$", " in <s>", line) for line in text.splitlines()]


def _handbook(tmp_path: Path) -> tuple[Path, Path]:
    work = new_repository(
        tmp_path / "work",
        {
            "docs/guide.md": "# Guide\n\nInstall the quokkabeam package first.\n",
            "docs/faq.md": "# FAQ\n\nAsk the zebrafinch team.\n",
            "docs/old.md": "# Old\n\nThe retired narwhal process.\n",
        },
    )
    commit_all(work, "first")
    git(work, "tag", "v2.0")
    return work, published(work, tmp_path / "served" / "team", "handbook.git")


def test_the_sample_run_and_rerun_are_what_ingest_prints(tmp_path: Path) -> None:
    work, bare = _handbook(tmp_path)
    transcript = _block("text")
    runs = re.findall(r"^\$ knowhub (.*)$", transcript, flags=re.M)
    assert len(runs) == 2, "docs/sources.md lost its sample run and re-run"
    with git_daemon(tmp_path / "served") as host:
        served = f"{host}/team/handbook.git"
        outputs = []
        for number, command in enumerate(runs):
            if number == 1:
                write(work / "docs/faq.md", "# FAQ\n\nAsk the zebrafinch team on Fridays.\n")
                write(work / "docs/new.md", "# New\n\nThe okapi schedule.\n")
                git(work, "rm", "--quiet", "docs/old.md")
                commit_all(work, "second")
                push(work, bare)
            args = shlex.split(command.replace(HTTPS, served))
            done = knowhub("--data-dir", str(tmp_path / "data"), *args, cwd=tmp_path)
            assert done.returncode == 0, done.stderr
            outputs += [*_normal(done.stderr, served), *_normal(done.stdout, served)]
    shown = [line for line in transcript.splitlines() if not line.startswith("$ ")]
    assert outputs == _normal("\n".join(shown), served)


def test_every_command_of_the_doc_ingests_its_repository(tmp_path: Path) -> None:
    _, bare = _handbook(tmp_path)
    commands = [line for line in _block("bash").splitlines() if line.startswith("knowhub ")]
    assert len(commands) == 4, "docs/sources.md lost its commands"
    with git_daemon(tmp_path / "served") as host:
        served = f"{host}/team/handbook.git"
        for command in commands:
            args = shlex.split(command)[1:]
            assert parse_git_spec(args[1]) is not None, args[1]  # each form is a spec
            swapped = [
                arg.replace(HTTPS, served).replace(SCP, served).replace(LOCAL, f"git+file://{bare}")
                for arg in args
            ]
            done = knowhub("--data-dir", str(tmp_path / "data"), *swapped, cwd=tmp_path)
            assert done.returncode == 0, done.stderr
            assert re.search(r": 3 added, .* 0 failed", done.stdout), done.stdout


def test_a_token_in_the_url_reaches_no_message_of_a_failed_ingest(tmp_path: Path) -> None:
    spec = f"git+http://reader:s3cr3t-t0ken@127.0.0.1:{free_port()}/team/handbook.git"
    done = knowhub("--data-dir", str(tmp_path / "data"), "ingest", spec, cwd=tmp_path)
    assert done.returncode != 0
    assert "git+http://127.0.0.1:" in done.stderr and "is unreachable" in done.stderr
    assert "s3cr3t" not in done.stdout + done.stderr
    written = [p for p in (tmp_path / "data").rglob("*")]
    assert written, "the mirror was not even made: nothing was checked"
    for path in written:
        assert "s3cr3t" not in str(path)
        assert not path.is_file() or b"s3cr3t" not in path.read_bytes(), path
