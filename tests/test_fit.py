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
