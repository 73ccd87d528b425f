"""The Unity sample's scene (clients/unity/Samples~/Narration/Narration.unity): Unity is
not on this machine, so this checks what can be checked without it. The file is
Unity's YAML (one document per object, `--- !u!<class> &<fileID>`); every reference
inside it resolves to an object of the scene; the scripts are referenced by the GUIDs
of their .meta files (fileID 11500000) and ugui's Text by its package GUID; each
serialized field the scene sets exists in the script; the hierarchy is consistent."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

yaml = pytest.importorskip("yaml")  # PyYAML: litellm's dependency, in constraints.txt
ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "clients" / "unity" / "Samples~" / "Narration"
SCENE = SAMPLE / "Narration.unity"
UGUI_TEXT = "5f7201a12d95ffc409449d95f23cf332"
HOST = ROOT / "clients" / "unity" / "Runtime" / "Unity" / "SidecarHost.cs"
HEADER = re.compile(r"^--- !u!(\d+) &(\d+)$", re.M)


def _objects() -> dict[int, tuple[int, str, dict[str, Any]]]:
    text = SCENE.read_text()
    assert text.startswith("%YAML 1.1\n%TAG !u! tag:unity3d.com,2011:\n")
    heads = list(HEADER.finditer(text))
    objects: dict[int, tuple[int, str, dict[str, Any]]] = {}
    for i, head in enumerate(heads):
        body = text[head.end() : heads[i + 1].start() if i + 1 < len(heads) else len(text)]
        (kind, fields), = yaml.safe_load(body).items()
        file_id = int(head.group(2))
        assert file_id not in objects, f"fileID {file_id} twice"
        objects[file_id] = (int(head.group(1)), kind, fields)
    return objects


def _guid(meta: Path) -> str:
    found = re.search(r"^guid: ([0-9a-f]{32})$", meta.read_text(), re.M)
    assert found, meta
    return found.group(1)


def _refs(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        if "fileID" in value:
            return [value]
        return [r for v in value.values() for r in _refs(v)]
    if isinstance(value, list):
        return [r for v in value for r in _refs(v)]
    return []


def test_the_scene_holds_a_canvas_text_narration_view_and_sidecar_host() -> None:
    objects = _objects()
    scripts = {
        _guid(HOST.with_name(HOST.name + ".meta")): HOST,
        _guid(SAMPLE / "NarrationView.cs.meta"): SAMPLE / "NarrationView.cs",
    }
    used = set()
    for class_id, kind, fields in objects.values():
        for ref in _refs(fields):
            if ref.get("guid") is None and ref["fileID"] != 0:
                assert ref["fileID"] in objects, f"{kind} points at missing fileID {ref['fileID']}"
        if kind != "MonoBehaviour":
            continue
        assert class_id == 114
        script = fields["m_Script"]
        assert script["fileID"] == 11500000 and script["type"] == 3
        used.add(script["guid"])
        if script["guid"] == UGUI_TEXT:
            continue
        source = scripts[script["guid"]].read_text()
        for name in fields:
            if not name.startswith("m_"):
                field = rf"\[SerializeField\] private [^;]* {name}\b"
                assert re.search(field, source), f"{name} is not a field of {script}"
    assert used == set(scripts) | {UGUI_TEXT}
    kinds = sorted(kind for _, kind, _ in objects.values())
    assert kinds.count("Canvas") == 1 and kinds.count("CanvasRenderer") == 1


def test_the_hierarchy_is_consistent() -> None:
    objects = _objects()
    for file_id, (_, kind, fields) in objects.items():
        if kind == "GameObject":
            for entry in fields["m_Component"]:
                owner = objects[entry["component"]["fileID"]][2]["m_GameObject"]["fileID"]
                assert owner == file_id
        if kind in ("Transform", "RectTransform"):
            for child in fields["m_Children"]:
                assert objects[child["fileID"]][2]["m_Father"]["fileID"] == file_id
    view = next(f for _, k, f in objects.values() if k == "MonoBehaviour" and "host" in f)
    assert objects[view["host"]["fileID"]][2]["m_Script"]["guid"] == _guid(HOST.with_name(HOST.name + ".meta"))
    assert objects[view["output"]["fileID"]][2]["m_Script"]["guid"] == UGUI_TEXT


def test_the_scene_has_the_meta_unity_gives_a_scene() -> None:
    meta = (SCENE.parent / (SCENE.name + ".meta")).read_text()
    assert "DefaultImporter:" in meta  # what Unity writes for a .unity file
