"""The listings `serve` prepares once per catalogue generation (market.prepared): a later start
answers the same bytes without reading a package, and never hides a package changed since."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from olares_pack.market import payloads, prepared

VERSIONS = ("1.12.3", "1.12.5", "1.12.6", "1.12.7")


def bodies(cat: payloads.Catalogue) -> list[bytes]:
    out = []
    for v in VERSIONS:
        view = cat.view(v)
        out += [view.hash_body(v), view.info_body(v), view.details_body(sorted(view.fragments), v),
                view.v2.catalog_body("s"), view.v2.taxonomy_body("s"), view.v2.applications_body(1, 0)]
    return out


def test_a_second_start_answers_the_same_bytes_without_reading_a_package(repo: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    first = bodies(payloads.load(repo))
    assert (repo / prepared.STORE).is_file()

    def no_parsing(*_: object) -> None:
        raise AssertionError("a package was opened and parsed on a start with its listing prepared")

    monkeypatch.setattr(payloads.package, "read_archive_split", no_parsing)
    assert bodies(payloads.load(repo)) == first


def test_a_package_changed_in_place_is_verified_again(repo: Path) -> None:
    cat = payloads.load(repo)
    shown = cat.view("1.12.6").charts
    victim = next(iter(shown.values()))
    data = bytearray(victim.path.read_bytes())
    data[-1] ^= 0xFF  # the same size: only the bytes tell
    victim.path.write_bytes(bytes(data))
    again = payloads.load(repo)
    assert [c.file_name for c in again.problems] == [victim.file_name]
    assert "sha256" in again.problems[0].problem
    assert again.view("1.12.6").charts[victim.name].file_name != victim.file_name


def test_a_release_recomputes_only_what_changed_and_matches_a_first_start(repo: Path) -> None:
    from olares_pack.cli import main

    payloads.load(repo)
    name = "llamacppqwen36mtpone"
    assert main(["release", name, "--apps-dir", str(repo / "apps"), "--bump", "patch", "--summary", "x",
                 "--date", "2026-06-01"]) == 0
    warm = bodies(payloads.load(repo))
    (repo / prepared.STORE).unlink()
    assert warm == bodies(payloads.load(repo))


def test_a_store_that_cannot_be_written_or_read_only_costs_time(repo: Path) -> None:
    (repo / prepared.STORE).mkdir(parents=True)  # a folder where the file would go
    first = bodies(payloads.load(repo))
    os.rmdir(repo / prepared.STORE)
    (repo / prepared.STORE).write_bytes(b"{not json")
    assert bodies(payloads.load(repo)) == first


def test_the_first_start_after_build_reads_no_package(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`build` prepares the listings where it finds the catalogue consistent: the first start
    after it answers what a start with nothing prepared answers, without parsing a package."""
    from olares_pack.cli import main

    assert not (repo / prepared.STORE).exists()
    assert main(["build", "--apps-dir", str(repo / "apps"), "--out", str(tmp_path / "charts")]) == 0
    assert (repo / prepared.STORE).is_file()

    def no_parsing(*_: object) -> None:
        raise AssertionError("a package was opened and parsed on the first start after build")

    with monkeypatch.context() as m:
        m.setattr(payloads.package, "read_archive_split", no_parsing)
        after_build = bodies(payloads.load(repo))
    (repo / prepared.STORE).unlink()
    assert after_build == bodies(payloads.load(repo))
