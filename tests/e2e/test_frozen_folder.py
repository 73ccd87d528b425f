"""What the frozen folder a game ships holds, and what it must not (docs/shipping.md)."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest
from launchers import require_frozen

ROOT = Path(__file__).resolve().parents[2]
#: Dev and build tools: never in a game (issue 12).
DEV_TOOLS = ("pytest", "_pytest", "hypothesis", "mypy", "ruff", "grpc_tools", "PyInstaller", "pip")


@pytest.fixture(scope="module")
def folder() -> Path:
    return require_frozen().parent


def archived_modules(exe: Path) -> set[str]:
    """Top-level names of the modules in the executable's embedded PYZ archive."""
    from PyInstaller.archive.readers import CArchiveReader, ZlibArchiveReader

    archive = CArchiveReader(str(exe))
    pyz = archive.open_embedded_archive("PYZ.pyz")
    assert isinstance(pyz, ZlibArchiveReader)
    return {name.split(".")[0] for name in pyz.toc}


def test_no_dev_tools_and_no_gpl_readline(folder: Path) -> None:
    modules = archived_modules(folder / "game-sidecar")
    assert {"sidecar", "litellm", "grpc", "tiktoken", "llama_cpp"} <= modules  # the reader works
    assert not modules & set(DEV_TOOLS)
    internal = folder / "_internal"
    assert not [name for name in DEV_TOOLS if (internal / name).exists()]
    assert not list(internal.rglob("libreadline*")), "GNU readline is GPL and only serves an interactive prompt"


def test_llama_cpp_libraries_once_each_under_their_loader_names(folder: Path) -> None:
    lib = folder / "_internal" / "llama_cpp" / "lib"
    files = [p for p in lib.iterdir() if p.is_file() and not p.is_symlink()]
    digests = [hashlib.sha256(p.read_bytes()).hexdigest() for p in files]
    assert len(digests) == len(set(digests)), f"a library is there twice: {sorted(p.name for p in files)}"
    assert (lib / "libllama.so").is_symlink() and (lib / "libllama.so").resolve().is_file()
    # PyInstaller links SONAMEs into _internal/ for the loader's search path: links, not copies.
    for outside in (folder / "_internal").glob("lib*ggml*"), (folder / "_internal").glob("libllama*"):
        for path in outside:
            assert path.is_symlink() and path.resolve().parent == lib.resolve(), f"a second copy: {path}"
    # The one left out: multimodal input, which the sidecar never sends.
    assert not list(lib.glob("libmtmd*"))


def test_data_files_the_sidecar_reads_at_run_time_are_inside(folder: Path) -> None:
    internal = folder / "_internal"
    assert (internal / "litellm" / "model_prices_and_context_window_backup.json").is_file()
    # tiktoken's cl100k_base, cached under the hash of its download URL (no download on a player's machine).
    assert (internal / "litellm" / "litellm_core_utils" / "tokenizers" / "9b5ad71b2ce5302211f9c61530b329a4922fc6a4"
            ).is_file()


@pytest.mark.slow
@pytest.mark.timeout(1800)  # objdump of ~150 MB of native code; cached per file once scripts/test ran it
def test_cpu_level_check_passes_on_the_folder_and_fails_when_the_table_allows_less(folder: Path,
                                                                                     tmp_path: Path) -> None:
    script = ROOT / "scripts" / "check" / "check_cpu_level.py"
    ok = subprocess.run([sys.executable, str(script), str(folder)], capture_output=True, text=True, timeout=1800)
    assert ok.returncode == 0, ok.stderr[-3000:]
    strict = tmp_path / "strict.md"
    strict.write_text("<!-- cpu-requirements:begin -->\n| Files | Level | Why |\n| --- | --- | --- |\n"
                      "| `*` | x86-64 | everything |\n<!-- cpu-requirements:end -->\n")
    bad = subprocess.run([sys.executable, str(script), str(folder), "--table", str(strict)], capture_output=True,
                         text=True, timeout=1800)
    assert bad.returncode == 1
    # The pinned wheel's one CPU backend, or the portable runtime's AVX2 one (scripts/build_llama_runtime).
    portable = any((folder / "_internal" / "llama_cpp" / "lib").glob("libggml-cpu-*.so"))
    backend = "libggml-cpu-haswell.so" if portable else "libggml-cpu.so.0"
    assert f"llama_cpp/lib/{backend}: needs x86-64-v3" in bad.stderr


def _check_frozen_litellm():  # scripts/ is not a package: loaded by path
    import importlib.util

    path = ROOT / "scripts" / "check" / "check_frozen_litellm.py"
    spec = importlib.util.spec_from_file_location("check_frozen_litellm", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_litellm_import_check_sees_a_module_the_archive_lacks(folder: Path) -> None:
    # With the archive's litellm modules importable, litellm.accounting.snapshot imports; take its
    # package out of the list and the check's blocked run must report the module as lost.
    check = _check_frozen_litellm()
    module = "litellm.accounting.snapshot"
    archive = [name for name in check.archive_modules(folder / "game-sidecar") if name.startswith("litellm.")]
    assert check.import_failures([module], archive, block=False) == {}
    failed = check.import_failures([module], [name for name in archive if name != "litellm.accounting"], block=True,
                                   internal=folder / "_internal")
    assert "not in the frozen build: litellm.accounting" in failed[module]


@pytest.mark.slow
@pytest.mark.timeout(1800)  # imports every litellm module of the archive twice
def test_left_out_proxy_modules_break_no_other_litellm_import(folder: Path) -> None:
    script = ROOT / "scripts" / "check" / "check_frozen_litellm.py"
    proc = subprocess.run([sys.executable, str(script), str(folder / "game-sidecar")], capture_output=True,
                          text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def test_libraries_are_stripped_and_the_left_out_parts_are_out(folder: Path) -> None:
    # packaging/strip_libs.py: every shared object loses its symbol table, except those that no
    # longer load stripped (numpy.libs' auditwheel-repaired OpenBLAS and libgfortran).
    internal = folder / "_internal"
    with_symtab = []
    for path in internal.rglob("*.so*"):
        if path.is_symlink() or not path.is_file() or path.read_bytes()[:4] != b"\x7fELF":
            continue
        sections = subprocess.run(["readelf", "-S", "-W", str(path)], capture_output=True, text=True).stdout
        if " .symtab " in sections:
            with_symtab.append(str(path.relative_to(internal)))
    assert all(name.startswith("numpy.libs/") for name in with_symtab), with_symtab
    assert not list(internal.glob("*.dist-info/RECORD"))
    modules = archived_modules(folder / "game-sidecar")
    assert "pygments" not in modules
