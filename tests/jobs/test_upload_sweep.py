"""Uploads in flight stay in the app's own folder, and stale ones are swept at start-up
and by ``manage.py sweep_uploads`` (issue 10, item 7)."""

from __future__ import annotations

import importlib
import io
import os
import time
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from jobs.uploads import sweep_uploads
from judgments.api import uploads


@pytest.fixture
def upload_dir(settings, tmp_path) -> Path:
    folder = tmp_path / "uploads"
    folder.mkdir()
    settings.FILE_UPLOAD_TEMP_DIR = str(folder)
    settings.VERITY_UPLOAD_STALE_SECONDS = 3600
    return folder


def _aged(path: Path, seconds: float) -> Path:
    when = time.time() - seconds
    os.utime(path, (when, when))
    return path


def _leftovers(folder: Path) -> tuple[Path, Path, Path]:
    """A killed upload (a 2-hour-old file), a killed import's folder, a fresh upload."""
    old_file = folder / "tmpabc.upload.trec"
    old_file.write_bytes(b"x" * 1000)
    _aged(old_file, 7200)
    old_dir = folder / "verity-upload-1234"
    old_dir.mkdir()
    (old_dir / "run.trec").write_bytes(b"y" * 500)
    _aged(old_dir, 7200)
    fresh = folder / "tmpdef.upload.trec"
    fresh.write_bytes(b"z")
    return old_file, old_dir, fresh


def test_the_default_upload_folder_is_under_the_apps_data_directory():
    assert Path(django_settings.FILE_UPLOAD_TEMP_DIR) == django_settings.VAR_DIR / "uploads"


def test_an_upload_is_staged_inside_the_upload_folder(upload_dir):
    seen = {}
    with uploads.staged_upload(SimpleUploadedFile("run.trec", b"q Q0 d 1 1 t\n")) as path:
        seen["path"] = path
        assert path.is_file()
    assert seen["path"].parent.parent == upload_dir
    assert list(upload_dir.iterdir()) == []  # removed on exit


def test_the_sweep_removes_stale_uploads_and_keeps_fresh_ones(upload_dir):
    old_file, old_dir, fresh = _leftovers(upload_dir)
    swept = sweep_uploads()
    assert (swept.removed, swept.bytes, swept.kept) == (2, 1500, 1)
    assert not old_file.exists() and not old_dir.exists()
    assert fresh.exists()


def test_the_command_sweeps_and_says_what_it_removed(upload_dir):
    _leftovers(upload_dir)
    out = io.StringIO()
    call_command("sweep_uploads", stdout=out)
    assert "removed 2 stale upload(s) (1,500 bytes); kept 1 younger one(s)" in out.getvalue()
    call_command("sweep_uploads", "--older-than", "0", stdout=out)
    assert list(upload_dir.iterdir()) == []


def test_a_web_process_sweeps_when_it_starts(upload_dir):
    old_file, _, fresh = _leftovers(upload_dir)
    import config.wsgi

    importlib.reload(config.wsgi)
    assert not old_file.exists() and fresh.exists()
