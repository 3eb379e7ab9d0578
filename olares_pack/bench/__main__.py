"""`python3 -m olares_pack.bench URL [options]`: the harness alone, standard library only (plus
nvidia-ml-py for --gpu), for a machine without olares-pack's dependencies. Writes what
`olares-pack bench --format json` writes; `olares-pack bench APP --from-json FILE --record` records it."""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import nullcontext
from pathlib import Path

from olares_pack.bench import harness
from olares_pack.bench.method import Method
from olares_pack.bench.report import result_json
from olares_pack.common.errors import OlaresPackError


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m olares_pack.bench")
    ap.add_argument("endpoint")
    ap.add_argument("--runs", type=int, default=Method.runs)
    ap.add_argument("--warmups", type=int, default=Method.warmups)
    ap.add_argument("--max-tokens", type=int, default=Method.max_tokens)
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--json", type=Path, help="write the result here (else stdout)")
    args = ap.parse_args(argv)
    try:
        method = Method(runs=args.runs, warmups=args.warmups, max_tokens=args.max_tokens)
        client = harness.Client(args.endpoint)
        sampler = None
        if args.gpu:
            from olares_pack.bench.gpu import GpuSampler

            sampler = GpuSampler()
        with sampler or nullcontext():
            result = harness.bench(client, method, lambda m: print(m, file=sys.stderr, flush=True))
    except OlaresPackError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return int(exc.exit_code)
    doc = result_json(result, sampler.peak_mib if sampler else None, sampler.name if sampler else None)
    text = json.dumps(doc, indent=2, sort_keys=True) + "\n"
    if args.json:
        args.json.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
