"""The node's fake GPU, and one more per device slot when a live run installs several versions side
by side (rehearse/live.py): each slot's charts ask for resources named after the slot (the
post-renderer renames them, rehearse/fit.py), and the node has one GPU of each name. So every slot
is a one-GPU device of its own: a RollingUpdate GPU Deployment still cannot start its second pod,
whatever the other slots run. Kept apart from node.py: the post-render process imports this only."""

from __future__ import annotations

# what an Olares One's GPU offers the scheduler here: one card, its memory in MiB (HAMi's gpumem)
GPU = {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "24000"}


def slot_name(slot: int) -> str:
    """The suffix of slot N's names (its users, shared namespaces, GPU resources); slot 0 has none."""
    return f"s{slot}" if slot else ""


def slot_resource(resource: str, slot: int) -> str:
    """The name a GPU resource of the chart gets in slot N (`nvidia.com/gpu` -> `nvidia.com/gpu-s1`)."""
    return f"{resource}-{slot_name(slot)}" if slot and resource in GPU else resource


def slot_capacity(slot: int) -> dict[str, str]:
    return {slot_resource(name, slot): value for name, value in GPU.items()}
