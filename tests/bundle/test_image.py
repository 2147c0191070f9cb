"""The generated image's Python layer, built for real: offline, from the build context alone, then served.

No Docker here, so the test plays the Dockerfile's part itself: the build context is the bundle directory
filtered by ``deploy/Dockerfile.dockerignore`` (Docker's matching rules), each ``COPY`` copies from that
context into a scratch root, and each ``RUN`` line's ``pip`` commands run, as written, in a fresh virtual
environment. The one substitution is the package index: the dependency install reads a local wheelhouse
instead of PyPI (``ANVIL_TEST_IMAGE_WHEELHOUSE``, filled by ``.ci/services.sh`` from the lock Anvil ships),
so the hashes pinned in ``deploy/image/requirements.txt`` are checked against the very wheels PyPI serves.
The Anvil wheel itself comes from the context with ``--no-index``, as in the image.
"""

from __future__ import annotations

import json
import os
import select
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from anvil.bundle.container import DOCKERFILE_PATH, DOCKERIGNORE_PATH, RUNTIME_REQUIREMENT_PATH, WHEEL_PATH
from anvil.bundle.hash import bundle_files
from anvil.cli.compile import compile_bundle
from tests.bundle.dockerfile import dockerignore_admits, instructions
from tests.conftest import EXAMPLES, REPO, missing

JSON_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
pytestmark = pytest.mark.slow


def test_the_dockerignore_matcher_follows_dockers_last_match_and_parent_rules() -> None:
    text = "*\n!keep.json\n!deploy/\ndeploy/*\n!deploy/image/\ndeploy/image/*\n!deploy/image/a.whl\n"
    assert dockerignore_admits(text, "keep.json") and dockerignore_admits(text, "deploy/image/a.whl")
    for path in ("tools.json", "deploy/Dockerfile", "deploy/image/b.whl", "skill/SKILL.md"):
        assert not dockerignore_admits(text, path), path


def _inside(root: Path, absolute: str) -> Path:
    return root / absolute.lstrip("/")


def _clean_env(**extra: str) -> dict[str, str]:
    """No PYTHONPATH (the venv runs its own Anvil), no machine pip configuration, no inherited ANVIL_*."""
    keep = {key: os.environ[key] for key in ("HOME", "LANG", "TMPDIR") if key in os.environ}
    return {**keep, "PATH": "/usr/bin:/bin", "PIP_CONFIG_FILE": os.devnull, "PIP_NO_INPUT": "1", **extra}


def _build_python_layer(bundle: Path, wheelhouse: Path, root: Path) -> Path:
    """Play the Dockerfile's COPY and RUN lines into ``root``; return the virtual environment's bin folder."""
    files = bundle_files(bundle)
    ignore = files[DOCKERIGNORE_PATH].decode()
    context = {path: data for path, data in files.items() if dockerignore_admits(ignore, path)}
    venv = root / "usr" / "local"
    python = venv / "bin" / "python"
    env = _clean_env(PIP_DISABLE_PIP_VERSION_CHECK="1")
    for word, args in instructions(files[DOCKERFILE_PATH].decode()):
        if word == "COPY":
            *sources, target = [arg for arg in shlex.split(args) if not arg.startswith("--")]
            for source in sources:
                assert source in context, f"{source} is not in the build context the dockerignore admits"
                destination = _inside(root, target) / Path(source).name
                destination.parent.mkdir(parents=True, exist_ok=True)
                destination.write_bytes(context[source])
        elif word == "RUN":
            if not python.exists():
                subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=_clean_env(), timeout=300)
            for command in args.split("&&"):
                words = shlex.split(command)
                if words[0] == "useradd":
                    continue
                assert words[0] == "pip", command
                words = [_inside(root, w).as_posix() if w.startswith("/") else w for w in words[1:]]
                if words[0] == "install" and "--no-index" not in words:
                    words[1:1] = ["--no-index", "--find-links", str(wheelhouse)]  # the offline stand-in for PyPI
                done = subprocess.run(
                    [str(python), "-m", "pip", *words], env=env, capture_output=True, text=True, timeout=600
                )
                assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
    return venv / "bin"


def _wheelhouse() -> Path:
    folder = os.environ.get("ANVIL_TEST_IMAGE_WHEELHOUSE", "")
    if not folder or not Path(folder).is_dir():
        missing("ANVIL_TEST_IMAGE_WHEELHOUSE (the image's pinned wheels; .ci/services.sh fills it)")
    return Path(folder)


def test_the_images_python_layer_installs_offline_from_the_build_context_and_serves(tmp_path: Path) -> None:
    wheelhouse = _wheelhouse()
    bundle = tmp_path / "generated" / "payments"
    outcome = compile_bundle(
        EXAMPLES / "payments" / "openapi.yaml",
        out=bundle,
        manifest=EXAMPLES / "payments" / "anvil.yaml",
        service_id="payments",
        root=REPO,
    )
    assert outcome.bundle_hash is not None
    root = tmp_path / "image"
    bin_dir = _build_python_layer(bundle, wheelhouse, root)
    pinned = (bundle / RUNTIME_REQUIREMENT_PATH).read_text(encoding="utf-8")
    assert "anvil-python[firestore,otel]==" in pinned
    helped = subprocess.run(
        [str(bin_dir / "anvil"), "serve", "--help"], env=_clean_env(), capture_output=True, text=True, timeout=120
    )
    assert helped.returncode == 0 and "--http" in helped.stdout, helped.stderr
    # The image's Anvil is the compiler's: it rebuilds the same wheel, so it finds the bundle fresh.
    ledger = ["deploy", "ledger", str(bundle), "--project", "acme-prod-1", "--database", "bank-shared-ledger"]
    checked = subprocess.run(
        [str(bin_dir / "anvil"), *ledger, "--json"],
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert checked.returncode == 0, checked.stderr
    assert json.loads(checked.stdout)["contract"]["state"] == "fresh"
    served = _inside(root, "/srv/bundle")
    assert sorted(p.name for p in served.iterdir()) == ["air.json", "generation.json"]
    command = [str(bin_dir / "anvil"), "serve", str(served), "--http", "127.0.0.1:0", "--allow-remote"]
    env = _clean_env(ANVIL_ENV="prod", ANVIL_LEDGER=f"sqlite:///{tmp_path / 'ledger.db'}")
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    try:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], 120)
        assert ready, "the gateway did not announce its URL"
        url = json.loads(process.stdout.readline())["url"]
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        with httpx.Client(timeout=30) as client:
            listed = client.post(url, json=body, headers=JSON_HEADERS)
            health = client.get(url.removesuffix("/mcp") + "/healthz")
    finally:
        process.send_signal(signal.SIGTERM)
        _, errors = process.communicate(timeout=60)
    assert listed.status_code == 200, errors
    names = {tool["name"] for tool in listed.json()["result"]["tools"]}
    assert "payments_create_refund" in names
    assert health.status_code == 200
    assert process.returncode == 0, errors


def test_a_context_without_the_runtime_files_cannot_build_the_layer(tmp_path: Path) -> None:
    bundle = tmp_path / "payments"
    outcome = compile_bundle(
        EXAMPLES / "payments" / "openapi.yaml",
        out=bundle,
        manifest=EXAMPLES / "payments" / "anvil.yaml",
        service_id="payments",
        root=REPO,
    )
    assert outcome.bundle_hash is not None
    ignore = bundle / DOCKERIGNORE_PATH
    ignore.write_text("*\n!air.json\n!generation.json\n", encoding="utf-8")  # what the context used to admit
    with pytest.raises(AssertionError, match="is not in the build context"):
        _build_python_layer(bundle, tmp_path / "no-wheelhouse", tmp_path / "image")
    assert (bundle / WHEEL_PATH).is_file()  # the wheel is in the bundle; the old context just never sent it
