"""A plain, non-editable install gives a working `dro`, with the schemas inside the wheel."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_wheel_ships_schemas_and_runs(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--wheel-dir",
            str(wheels),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = wheels.glob("dro-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    shipped = {Path(n).name for n in names if n.startswith("reconciler/schemas/")}
    in_repo = {p.name for p in (ROOT / "schemas").glob("*.json")}
    assert in_repo, "the repo has no schemas"
    assert in_repo <= shipped
    # the web view's templates and style sheet are package data
    web = ROOT / "reconciler" / "web"
    files = {p.relative_to(ROOT).as_posix() for p in web.glob("templates/*.html")}
    files |= {p.relative_to(ROOT).as_posix() for p in web.glob("static/*")}
    assert "reconciler/web/templates/fleet.html" in files
    assert files <= set(names)

    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        capture_output=True,
    )
    # Run from an unrelated directory so the source tree cannot be imported by accident.
    env = {"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"}
    probe = subprocess.run(
        [sys.executable, "-c", "import reconciler, sys; print(reconciler.__file__)"],
        cwd=tmp_path,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    assert probe.stdout.startswith(str(target))
    page = subprocess.run(
        [
            sys.executable,
            "-c",
            "from reconciler.web import pages; "
            "print(pages.environment().get_template('missing.html').render("
            "login=False, section='', title='<x>', what='gone'))",
        ],
        cwd=tmp_path,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    assert "<h1>&lt;x&gt;</h1>" in page.stdout  # loaded from the wheel, autoescaped
    done = subprocess.run(
        [sys.executable, "-m", "reconciler.cli", "validate", str(ROOT / "example-repo")],
        check=False,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
