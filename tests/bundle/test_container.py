"""``deploy/Dockerfile``, linted structurally: pinned base, non-root, `anvil serve` on $PORT, only AIR copied."""

from __future__ import annotations

import json
import re
import shlex

from anvil import __version__
from anvil.air.model import Document
from anvil.bundle.container import BASE_IMAGE, RUNTIME_ARTIFACT_FILES, runtime_artifact_hash
from anvil.bundle.emit import emit_bundle


def _instructions(text: str) -> list[tuple[str, str]]:
    """``(INSTRUCTION, arguments)`` with continuation lines joined and comments dropped."""
    joined = re.sub(r" *\\\n\s*", " ", text)
    out = []
    for line in joined.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            word, _, rest = line.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def test_the_base_image_is_pinned_by_an_exact_version(payments_doc: Document) -> None:
    instructions = _instructions(emit_bundle(payments_doc)["deploy/Dockerfile"].decode())
    froms = [args for word, args in instructions if word == "FROM"]
    assert froms == [BASE_IMAGE]
    image, _, tag = BASE_IMAGE.partition(":")
    assert image == "python" and re.fullmatch(r"3\.\d+\.\d+-slim-[a-z]+", tag)
    assert "latest" not in BASE_IMAGE


def test_it_runs_anvil_serve_on_port_as_a_non_root_user(payments_doc: Document) -> None:
    instructions = _instructions(emit_bundle(payments_doc)["deploy/Dockerfile"].decode())
    users = [args for word, args in instructions if word == "USER"]
    assert users and users[-1].split(":")[0] not in ("0", "root")
    cmd = json.loads(next(args for word, args in instructions if word == "CMD"))
    assert cmd[:2] == ["sh", "-c"]
    words = shlex.split(cmd[2])
    assert words[:4] == ["exec", "anvil", "serve", "/srv/bundle"]
    assert words[words.index("--http") + 1] == "0.0.0.0:${PORT:-8080}"
    assert (
        "ENV",
        "PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PORT=8080",
    ) in instructions
    assert ("EXPOSE", "8080") in instructions
    run = next(args for word, args in instructions if word == "RUN")
    assert f'"anvil-python[firestore]=={__version__}"' in run


def test_it_copies_only_the_bundle_files_the_gateway_reads(payments_doc: Document) -> None:
    files = emit_bundle(payments_doc)
    instructions = _instructions(files["deploy/Dockerfile"].decode())
    copies = [args for word, args in instructions if word == "COPY"]
    assert copies == ["--chown=root:root air.json generation.json /srv/bundle/"]
    ignore = files["deploy/Dockerfile.dockerignore"].decode().splitlines()
    assert [line for line in ignore if not line.startswith("#")] == ["*", "!air.json", "!generation.json"]


def test_the_runtime_artifact_hash_covers_the_dockerfile_and_what_it_copies(payments_doc: Document) -> None:
    files = emit_bundle(payments_doc)
    assert RUNTIME_ARTIFACT_FILES == ("deploy/Dockerfile", "air.json", "generation.json")
    before = runtime_artifact_hash(files)
    changed = {**files, "deploy/Dockerfile": files["deploy/Dockerfile"] + b"# edited\n"}
    assert runtime_artifact_hash(changed) != before
    assert runtime_artifact_hash({**files, "tools.json": b"{}"}) == before
