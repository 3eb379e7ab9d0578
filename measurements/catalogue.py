"""A synthetic catalogue of N apps x V published versions, for the scale benchmarks.

    .venv/bin/python measurements/catalogue.py OUT N V

Apps are varied the way real sources are: llama.cpp and vLLM engines (2 : 1), one or both
targets, a CPU mode on some, per-locale texts on a third, different models, contexts, cache
types, resources and changelog lengths; each version changes something a maintainer would
(the context, the quant file, the image tag, the resources). Every version is published the way
`release` publishes it (rendered, packaged, recorded), without the lint step, so that a
200 x 10 catalogue takes a minute rather than an hour. Catalogues are cached under
$TMPDIR/olares-pack-bench/ keyed by N, V and olares-pack's sources.
"""

from __future__ import annotations

import copy
import datetime as dt
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from olares_pack.apps.load import validate_data  # noqa: E402
from olares_pack.catalogue import checks as catalogue  # noqa: E402
from olares_pack.catalogue import offer, records, releases  # noqa: E402
from olares_pack.catalogue.repo import OFFER_FILE, Repo  # noqa: E402
from olares_pack.render import generation  # noqa: E402

QUANTS = ["UD-Q2_K_XL", "UD-Q3_K_XL", "Q4_K_M", "UD-Q4_K_XL", "Q5_K_M", "Q6_K", "Q8_0"]
MODELS = ["Qwen3.6-27B", "Qwen3.6-35B-A3B", "Gemma-4-27B", "Llama-4-Scout-17B", "Mistral-Small-4-24B", "GLM-5-Air"]
CACHE = ["f16", "q8_0", "q4_0"]
NOTES = ("Measured on an Olares One: {tps} tokens/s mean over 10 runs, {acc} % draft acceptance. "
         "The context fits with {head} MiB of headroom at full length.\n")


def _base(kind: str) -> dict[str, Any]:
    name = "llamacppqwen36mtpone" if kind == "llamacpp" else "vllmqwen36turbo27bone"
    data = yaml.load((ROOT / "apps" / name / "app.yaml").read_text(), Loader=yaml.CSafeLoader)
    data.pop("changelog")
    return data


def app_versions(i: int, n_versions: int) -> list[dict[str, Any]]:
    """The app.yaml data of each published version of app i, oldest first (each with its whole
    changelog so far, as app.yaml holds it)."""
    kind = "vllm" if i % 3 == 2 else "llamacpp"
    base = _base(kind)
    model = MODELS[i % len(MODELS)]
    base["name"] = f"benchapp{i:04d}"
    base["title"] = f"{model.split('-')[0]} {i}"[:30]
    base["description"] = f"{model} served by {kind} for the 24 GB GPU of an Olares One (app {i})"
    base["full_description"] = f"**{model}**\n\n" + "A long-context local LLM server.\n" * (1 + i % 5)
    base["targets"] = ["current", "legacy"] if i % 2 == 0 and kind == "llamacpp" else ["current"]
    if kind == "llamacpp" and i % 7 == 3:
        base["modes"] = ["nvidia", "cpu"]
    if i % 3 == 0:
        base["locales"] = {"zh-CN": {"title": f"模型 {i}", "description": f"{model} 本地推理服务"}}
    base["entrance"]["title"] = base["title"]
    log: list[dict[str, Any]] = []
    out = []
    for k in range(n_versions):
        v = copy.deepcopy(base)
        version = f"1.{k // 5}.{k % 5}"
        v["version"] = version
        v["engine"]["image"]["tag"] = f"b{11000 + 17 * k + i}"
        if kind == "llamacpp":
            v["engine"].pop("build", None)
            v["model"]["repo"] = f"bench-org/{model}-GGUF"
            v["model"]["file"] = f"{model}-{QUANTS[(i + k) % len(QUANTS)]}.gguf"
            v["server"]["ctx_size"] = [32768, 65536, 131072, 196608, 262144][(i + k) % 5]
            c = CACHE[(i + 2 * k) % 3]
            v["server"]["cache_type"] = {"k": c, "v": c}
            v["server"]["speculative"] = {"type": "draft-mtp", "draft_n_max": 2 + (k % 4)} if i % 4 else None
            if v["server"]["speculative"] is None:
                v["server"].pop("speculative")
        else:
            v["model"]["repo"] = f"bench-org/{model}-int4"
            v["server"]["max_model_len"] = 32768 + 4096 * ((i + k) % 16)
        v["resources"]["gpu_memory_mib"] = 16384 + 512 * ((i + k) % 14)
        v["resources"]["memory"] = {"request": f"{16 + k % 8}Gi", "limit": "40Gi"}
        log.append({"version": version, "date": dt.date(2026, 1, 5) + dt.timedelta(days=7 * k),
                    "summary": f"version {version}: context and quant retuned",
                    "changes": [{"kind": "model", "text": f"{v['model'].get('file', v['model']['repo'])}"},
                                {"kind": "engine-args", "text": "context retuned"}],
                    "notes": NOTES.format(tps=60 + (i + k) % 30, acc=60 + (i * k) % 35, head=500 + 97 * k)})
        v["changelog"] = copy.deepcopy(log)
        out.append(v)
    return out


def generate(root: Path, n_apps: int, n_versions: int) -> None:
    repo = Repo.at(root)
    for i in range(n_apps):
        versions = app_versions(i, n_versions)
        name = versions[0]["name"]
        for data in versions:
            app = validate_data(data, name)
            built = releases.build_packages(app, repo)
            rec = releases.make_record(app, built, repo, [app.changelog[-1]], {})
            for b in built:
                b.path.parent.mkdir(parents=True, exist_ok=True)
                b.path.write_bytes(b.data)
            path = records.path_of(repo, name, app.version)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(records.dumps(rec))
        text = yaml.safe_dump(versions[-1], sort_keys=False, allow_unicode=True, width=4096)
        (root / "apps" / name / "app.yaml").write_text(text)
    recs = catalogue.load_records(repo)
    (root / "market-index.json").write_text(catalogue.ledger_text(recs))
    (root / OFFER_FILE).write_text(offer.text(repo, recs))  # as release writes it: serve reads no Helm


def cached(n_apps: int, n_versions: int) -> Path:
    """A generated catalogue for these sizes (generated once per olares-pack source state)."""
    base = Path(tempfile.gettempdir()) / "olares-pack-bench"
    path = base / f"{n_apps}x{n_versions}-{generation.fingerprint()[:12]}"
    if not (path / "market-index.json").exists():
        shutil.rmtree(path, ignore_errors=True)
        tmp = base / f".{path.name}.partial"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        generate(tmp, n_apps, n_versions)
        tmp.rename(path)
    return path


def copy_of(n_apps: int, n_versions: int, dest: Path) -> Path:
    shutil.copytree(cached(n_apps, n_versions), dest, ignore=shutil.ignore_patterns(".olares-pack"))
    return dest


if __name__ == "__main__":
    out, n, v = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    generate(out, n, v)
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"{n} apps x {v} versions in {out} ({size / 1e6:.1f} MB, {len(list(out.rglob('*.tgz')))} packages)")
