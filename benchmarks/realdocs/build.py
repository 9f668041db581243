"""The real-document corpus of the answer golden sets: third-party documentation from Debian.

    python -m benchmarks.realdocs.build --out data/realdocs [--only en/man,ru/man/signal.7.txt]

Downloads the packages of :data:`SOURCES` with ``apt-get download`` (into ``--cache``, kept
between runs), unpacks them with ``dpkg-deb -x`` and writes the chosen files under
``<out>/corpus/<language>/<name>/``, as a user would collect them: HTML and PDF as shipped, man
pages rendered and saved with ``man -l PAGE | col -b`` (80 columns; ``col -b`` turns runs of
spaces into tabs). ``<out>/corpus`` is ingested as one mixed collection; the golden sets in
``benchmarks/realdocs/golden/`` name their sources relative to it (``en/man/at.1.txt``).
``<out>/manifest.json`` records each package's version and the files written.

The packages are English (python3.11-doc, postgresql-doc-15, the man pages of at, findutils,
less, debianutils and time), Chinese (debian-edu-doc-zh-cn's PDF manual, manpages-zh,
lilypond-doc-html-zh) and Russian (manpages-ru, doublecmd-help-ru). The packages the project
holds out for independent checks (the developers' brief names them) are never added here.
Needs apt (with package lists: ``apt-get update``), dpkg-deb, man-db and
col (bsdextrautils); ``make eval`` runs it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["SOURCES", "Source", "build"]

_PY = "usr/share/doc/python3.11/html/"
_PG = "usr/share/doc/postgresql-doc-15/html/"
_ZH = "usr/share/man/zh_CN/"
_RU = "usr/share/man/ru/"
_LY = "usr/share/doc/lilypond/html/Documentation/web/"


@dataclass(frozen=True)
class Source:
    """Files of one package: ``files`` are paths inside it; each is written to
    ``<language>/<name>/`` under its path less ``strip``; ``man`` pages are rendered to text."""

    package: str
    language: str
    name: str
    strip: str
    files: tuple[str, ...]
    man: bool = False


def _paths(prefix: str, names: str, suffix: str) -> tuple[str, ...]:
    return tuple(f"{prefix}{name}{suffix}" for name in names.split())


SOURCES: tuple[Source, ...] = (
    Source(
        "python3.11-doc",
        "en",
        "python",
        _PY,
        _paths(
            _PY + "library/",
            "argparse subprocess logging sqlite3 pathlib datetime json re venv zipfile shutil "
            "csv itertools functools collections tarfile hashlib os.path tempfile glob",
            ".html",
        )
        + _paths(_PY + "howto/", "logging sorting argparse regex", ".html"),
    ),
    Source(
        "postgresql-doc-15",
        "en",
        "postgresql",
        _PG,
        _paths(
            _PG,
            "backup-dump continuous-archiving sql-createindex sql-vacuum routine-vacuuming "
            "app-pgdump app-pgrestore auth-pg-hba-conf sql-createrole sql-grant indexes-types "
            "ddl-partitioning datatype-json textsearch-intro logical-replication warm-standby "
            "runtime-config-connection runtime-config-resource sql-copy using-explain "
            "transaction-iso sql-altertable ssl-tcp auth-password app-initdb",
            ".html",
        ),
    ),
    Source("at", "en", "man", "usr/share/man/man1/", ("usr/share/man/man1/at.1.gz",), True),
    Source(
        "findutils",
        "en",
        "man",
        "usr/share/man/man1/",
        _paths("usr/share/man/man1/", "find xargs", ".1.gz"),
        True,
    ),
    Source("less", "en", "man", "usr/share/man/man1/", ("usr/share/man/man1/less.1.gz",), True),
    Source(
        "debianutils",
        "en",
        "man",
        "usr/share/man/man1/",
        ("usr/share/man/man1/which.debianutils.1.gz",),
        True,
    ),
    Source("time", "en", "man", "usr/share/man/man1/", ("usr/share/man/man1/time.1.gz",), True),
    Source(
        "debian-edu-doc-zh-cn",
        "zh",
        "debian-edu",
        "usr/share/doc/debian-edu-doc-zh-cn/",
        ("usr/share/doc/debian-edu-doc-zh-cn/debian-edu-bookworm-manual.pdf",),
    ),
    Source(
        "manpages-zh",
        "zh",
        "man",
        _ZH,
        _paths(
            _ZH + "man1/",
            "ls cp mv rm tar grep chmod chown date du find gzip head tail kill killall ln "
            "mkdir sed sort ssh scp systemctl journalctl hostnamectl timedatectl uname wc xargs "
            "at nohup timeout md5sum split tee dd free uptime cut diff",
            ".1.gz",
        )
        + _paths(
            _ZH + "man8/",
            "fdisk mkfs ping route netstat iptables edquota quotacheck quotaon repquota "
            "setquota cron shutdown swapon umount tcpdump ifconfig",
            ".8.gz",
        ),
        True,
    ),
    Source(
        "lilypond-doc-html-zh",
        "zh",
        "lilypond",
        _LY,
        _paths(
            _LY,
            "index introduction features background productions reviews text-input "
            "easier-editing download manuals learning usage help-us community contact "
            "bug-reports development authors publications faq",
            ".zh.html",
        ),
    ),
    Source(
        "manpages-ru",
        "ru",
        "man",
        _RU,
        _paths(_RU + "man1/", "ls cat getent iconv ldd locale", ".1.gz")
        + _paths(
            _RU + "man5/",
            "hosts resolv.conf nsswitch.conf group services protocols shells motd issue "
            "securetty nologin tmpfs filesystems host.conf locale",
            ".5.gz",
        )
        + _paths(
            _RU + "man7/",
            "signal tcp udp ip ipv6 socket unix capabilities cgroups namespaces inotify epoll "
            "pipe fifo hier locale time random utf-8 symlink pthreads",
            ".7.gz",
        )
        + _paths(_RU + "man8/", "ld.so zdump iconvconfig", ".8.gz"),
        True,
    ),
    Source(
        "doublecmd-help-ru",
        "ru",
        "doublecmd",
        "usr/share/doublecmd/doc/ru/",
        (),  # every page of the help: see _chosen
    ),
)


def _chosen(source: Source, root: Path) -> list[Path]:
    """The files of ``source`` inside its unpacked package ``root`` (a missing one stops the
    build: the golden sets name them)."""
    if not source.files:
        return sorted((root / source.strip).glob("*.html"))
    found = [root / name for name in source.files]
    missing = [str(p.relative_to(root)) for p in found if not p.is_file()]
    if missing:
        raise SystemExit(f"{source.package}: missing {', '.join(missing)} (a newer package?)")
    return found


# troff loops forever on some pages (manpages-zh's df.1): no page takes this long otherwise.
_TIMEOUT_S = 120


def _run(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(  # type: ignore[call-overload,no-any-return]
            command, check=True, capture_output=True, timeout=_TIMEOUT_S, **kwargs
        )
    except subprocess.TimeoutExpired as exc:
        raise SystemExit(f"{' '.join(command)} took over {_TIMEOUT_S} s: drop it") from exc
    except FileNotFoundError as exc:
        raise SystemExit(f"{command[0]} is not installed: {exc}") from exc
    except subprocess.CalledProcessError as exc:
        said = exc.stderr.decode(errors="replace").strip()
        raise SystemExit(f"{' '.join(command)} failed: {said}") from exc


def _unpacked(package: str, cache: Path) -> tuple[Path, str]:
    """``package`` downloaded (once) and unpacked under ``cache``; its root and version."""
    debs = cache / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    have = sorted(debs.glob(f"{package}_*.deb"))
    if not have:
        print(f"downloading {package}", file=sys.stderr)
        try:
            _run(["apt-get", "download", package], cwd=debs)
        except SystemExit as exc:
            raise SystemExit(f"{exc} (run `sudo apt-get update` first?)") from exc
        have = sorted(debs.glob(f"{package}_*.deb"))
    deb = have[-1]
    version = deb.name.split("_")[1]
    root = cache / "root" / f"{package}_{version}"
    if not root.is_dir():
        partial = root.with_name(root.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.parent.mkdir(parents=True, exist_ok=True)
        _run(["dpkg-deb", "-x", str(deb), str(partial)])
        partial.rename(root)
    return root, version


def _render_man(page: Path) -> bytes:
    """``page`` as ``man -l PAGE | col -b`` saves it, 80 columns wide, in UTF-8."""
    env = {**os.environ, "MANWIDTH": "80", "LC_ALL": "C.UTF-8", "MANPAGER": "cat"}
    env.pop("MAN_KEEP_FORMATTING", None)
    shown = _run(["man", "-l", str(page)], env=env).stdout
    return _run(["col", "-b"], input=shown, env=env).stdout


def _target(source: Source, root: Path, path: Path) -> Path:
    inner = path.relative_to(root / source.strip)
    if source.man:
        inner = inner.with_name(inner.name.removesuffix(".gz") + ".txt")
        inner = Path(inner.name.replace(".debianutils", ""))  # which.debianutils.1 is which(1)
    return Path(source.language) / source.name / inner


def _wanted(path: str, only: Sequence[str] | None) -> bool:
    """Whether the corpus path ``path`` (or a folder of one, ``en/man``) is under one of
    ``only`` (None: everything)."""
    return only is None or any(
        path == part or path.startswith(part.rstrip("/") + "/") or part.startswith(path + "/")
        for part in only
    )


def build(out: Path, cache: Path, only: Sequence[str] | None = None) -> dict[str, object]:
    """Write the corpus under ``out/corpus`` (replacing it) and return its manifest; ``only``:
    the corpus paths or folders to write (``en/man``, ``ru/man/signal.7.txt``)."""
    corpus = out / "corpus"
    shutil.rmtree(corpus, ignore_errors=True)
    manifest: dict[str, object] = {}
    for source in SOURCES:
        if not _wanted(f"{source.language}/{source.name}", only):
            continue
        root, version = _unpacked(source.package, cache)
        written: list[str] = []
        for path in _chosen(source, root):
            inner = _target(source, root, path)
            if not _wanted(inner.as_posix(), only):
                continue
            target = corpus / inner
            target.parent.mkdir(parents=True, exist_ok=True)
            if source.man:
                target.write_bytes(_render_man(path))
            else:
                shutil.copyfile(path, target)
            written.append(str(target.relative_to(corpus)))
        entry = manifest.setdefault(source.package, {"version": version, "files": []})
        assert isinstance(entry, dict)
        entry["files"] += written
        print(f"{source.package} {version}: {len(written)} files", file=sys.stderr)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False))
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("data/realdocs"))
    parser.add_argument("--cache", type=Path, default=Path(".cache/realdocs"))
    parser.add_argument(
        "--only", help="comma-separated corpus folders or files to build (default: all)"
    )
    args = parser.parse_args(argv)
    only = args.only.split(",") if args.only else None
    manifest = build(args.out, args.cache, only)
    files = sum(len(e["files"]) for e in manifest.values() if isinstance(e, dict))
    print(f"{files} files in {args.out / 'corpus'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
