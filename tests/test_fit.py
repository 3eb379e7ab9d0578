"""The node's post-renderer (rehearse/fit.py) shortens the probes' waits and nothing they check."""

from __future__ import annotations

import yaml

from olares_pack.rehearse import fit


def test_probes_answer_sooner_but_a_container_keeps_the_charts_time_to_start() -> None:
    engine = {"name": "engine",
              "startupProbe": {"httpGet": {"path": "/health", "port": 8000}, "initialDelaySeconds": 60,
                               "periodSeconds": 15, "failureThreshold": 120},
              "livenessProbe": {"httpGet": {"path": "/health", "port": 8000}, "initialDelaySeconds": 600,
                                "periodSeconds": 30, "failureThreshold": 5},
              "readinessProbe": {"httpGet": {"path": "/livez", "port": 8090}, "initialDelaySeconds": 3,
                                 "periodSeconds": 5, "failureThreshold": 3}}
    doc = {"kind": "Deployment", "spec": {"template": {"spec": {"containers": [engine]}}}}
    out = yaml.safe_load(fit.fitted(yaml.safe_dump(doc), None))["spec"]["template"]["spec"]["containers"][0]
    start = out["startupProbe"]
    assert start["httpGet"] == {"path": "/health", "port": 8000}  # what it checks is the chart's
    assert start["initialDelaySeconds"] <= 1 and start["periodSeconds"] <= 1
    # the chart gives the engine 60 + 15 x 120 s to start: the fitted probe gives no less
    assert start["initialDelaySeconds"] + start["periodSeconds"] * start["failureThreshold"] >= 60 + 15 * 120
    assert out["livenessProbe"] == engine["livenessProbe"]  # a restart is the chart's own timing
    ready = out["readinessProbe"]
    assert ready["periodSeconds"] <= 1 and ready["failureThreshold"] == 3 and ready["httpGet"]["port"] == 8090


def test_the_engine_wrapper_looks_for_the_sentinel_every_second() -> None:
    wrapped = {"name": "llamacpp", "command": ["/bin/sh", fit.WRAPPER], "env": [{"name": "ENGINE_KIND", "value": "llamacpp"}]}
    other = {"name": "llm-init", "env": [{"name": "PORT", "value": "8090"}]}
    doc = {"kind": "Deployment", "spec": {"template": {"spec": {"containers": [wrapped, other]}}}}
    out = yaml.safe_load(fit.fitted(yaml.safe_dump(doc), None))["spec"]["template"]["spec"]["containers"]
    assert {"name": "WAIT_INTERVAL", "value": "1"} in out[0]["env"] and out[0]["env"][0]["name"] == "ENGINE_KIND"
    assert out[1]["env"] == other["env"]


def test_a_device_slot_renames_the_gpu_and_the_shared_namespaces_it_names_and_nothing_else() -> None:
    """Slot 2 of a run side by side: its GPU is `nvidia.com/gpu-s2`, the shared engine it reaches is
    in `llama-shared-s2`; cpu, memory and names that only start alike are the chart's."""
    engine = {"name": "engine", "resources": {"limits": {"nvidia.com/gpu": 1, "nvidia.com/gpumem": "20000", "cpu": "4"},
                                              "requests": {"nvidia.com/gpu": 1, "memory": "32Mi"}}}
    deploy = {"kind": "Deployment", "metadata": {"namespace": "llama-shared-s2"},
              "spec": {"template": {"spec": {"containers": [engine]}}}}
    proxy = {"kind": "ConfigMap", "metadata": {"namespace": "llama-alice-s2"},
             "data": {"nginx.conf": "proxy_pass http://engine.llama-shared:8080;\n# llama-shared-cache llama-shared2"}}
    docs = yaml.safe_load_all(fit.fitted(yaml.safe_dump_all([deploy, proxy]), None, 2, ("llama-shared",)))
    out, conf = list(docs)
    res = out["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert res["limits"] == {"nvidia.com/gpu-s2": 1, "nvidia.com/gpumem-s2": "20000", "cpu": "4"}
    assert res["requests"] == {"nvidia.com/gpu-s2": 1, "memory": "32Mi"}
    assert out["metadata"]["namespace"] == "llama-shared-s2"  # already the slot's: not renamed twice
    assert conf["data"]["nginx.conf"] == "proxy_pass http://engine.llama-shared-s2:8080;\n# llama-shared-cache llama-shared2"
    # slot 0 is the node as it is
    same = yaml.safe_load(fit.fitted(yaml.safe_dump(deploy), None, 0, ("llama-shared",)))
    assert same["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 1
