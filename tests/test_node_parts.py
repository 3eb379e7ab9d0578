"""The node's parts that need no node: image names on the mirror, what the live run changes in a
chart, the cluster DNS's answers, stand-in layers byte-for-byte reproducible."""

from __future__ import annotations

import socket
import struct

import yaml

from olares_pack.cluster import dns, images, mirror
from olares_pack.rehearse import fit


def test_the_mirror_serves_the_chart_s_own_image_names() -> None:
    assert mirror.split("docker.io/beclab/llm-init:v1.3.8") == ("beclab/llm-init", "v1.3.8")
    assert mirror.split("registry.k8s.io/pause:3.10") == ("pause", "3.10")  # library/ is Docker Hub's alone
    assert mirror.split("busybox") == ("library/busybox", "latest")
    assert mirror.split("ghcr.io/olares/busybox:v2") == ("olares/busybox", "v2")


def test_fit_lowers_requests_and_keeps_limits_gpu_and_strategy() -> None:
    doc = {"kind": "Deployment", "spec": {"strategy": {"type": "RollingUpdate"}, "template": {"spec": {"containers": [
        {"name": "e", "resources": {"requests": {"cpu": "4", "memory": "20Gi", "nvidia.com/gpumem": 23552},
                                    "limits": {"cpu": "16", "memory": "40Gi", "nvidia.com/gpumem": 23552}},
         "env": [{"name": "MODEL_FILES", "value": "a.gguf|||u/a.gguf\nb.gguf|12|ab|u/b.gguf"}]}]}}}}
    out = yaml.safe_load(fit.fitted(yaml.safe_dump(doc), "5|ff"))
    c = out["spec"]["template"]["spec"]["containers"][0]
    assert c["resources"]["requests"] == {"cpu": "50m", "memory": "64Mi", "nvidia.com/gpumem": 23552}
    assert c["resources"]["limits"] == doc["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert out["spec"]["strategy"] == {"type": "RollingUpdate"}
    # a recorded size|sha256 becomes the stand-in model's; an unrecorded one stays unrecorded
    assert c["env"][0]["value"] == "a.gguf|||u/a.gguf\nb.gguf|5|ff|u/b.gguf"


def _query(name: str, qtype: int = 1) -> bytes:
    labels = b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\0"
    return struct.pack("!HHHHHH", 7, 0x0100, 1, 0, 0, 0) + labels + struct.pack("!HH", qtype, 1)


def test_the_cluster_dns_answers_services_by_name() -> None:
    services = {("apps-shared", "engine"): "10.96.3.4"}

    def lookup(ns: str, svc: str) -> str | None:
        return services.get((ns, svc))

    out = dns.answer(_query("engine.apps-shared.svc.cluster.local"), lookup)
    assert out is not None and out[3] & 0x0F == 0 and struct.unpack("!H", out[6:8])[0] == 1
    assert socket.inet_ntoa(out[-4:]) == "10.96.3.4"
    # a search-path miss (<svc>.<ns>.<pod ns>.svc...) and an outside name: NXDOMAIN
    assert dns.answer(_query("engine.apps-shared.alice.svc.cluster.local"), lookup)[3] & 0x0F == 3  # type: ignore[index]
    assert dns.answer(_query("huggingface.co"), lookup)[3] & 0x0F == 3  # type: ignore[index]
    # AAAA of a Service: no records, not an error (the resolver then uses the A record)
    aaaa = dns.answer(_query("engine.apps-shared.svc.cluster.local", 28), lookup)
    assert aaaa is not None and aaaa[3] & 0x0F == 0 and struct.unpack("!H", aaaa[6:8])[0] == 0


def test_a_stand_in_layer_is_the_same_bytes_every_time(tmp_path) -> None:  # noqa: ANN001
    f = tmp_path / "tool"
    f.write_bytes(b"#!/bin/sh\necho hi\n")
    f.chmod(0o755)
    files = {"bin/tool": f, "bin/alias": "link:tool", "etc/conf": b"x=1\n"}
    assert images.layer(files) == images.layer(dict(reversed(list(files.items()))))
    assert images.kind_of("docker.io/beclab/aboveos-busybox:1.37.0") == "busybox"
    assert images.kind_of("docker.io/beclab/aboveos-bitnami-openresty:1.25.3-2") == "proxy"
    assert images.kind_of("docker.io/aamsellem/llama-cpp-mtp:master-ad27757", "llamacpp") == "llama-server"
    assert images.kind_of("docker.io/aamsellem/vllm-qwen36-blackwell:0.20.0-genesis-v3") is None
