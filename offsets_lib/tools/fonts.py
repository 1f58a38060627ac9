"""Fallback fonts so that charts draw every group id: CJK and emoji as well as Latin.

Matplotlib's own DejaVu Sans covers Latin, Greek, Cyrillic and Arabic (drawn unshaped), but no
CJK ideograph, kana, hangul or emoji: those come out as empty boxes with a "Glyph ... missing
from font(s)" warning. Two small Debian font packages (about 3 MB together) fill the gap and
need no root: ``apt-get download`` fetches the ``.deb`` files and ``dpkg -x`` unpacks them into
a cache folder outside git. Symbola is an outline (monochrome) emoji font: matplotlib cannot
draw colour-bitmap emoji fonts such as Noto Color Emoji.

``make setup`` runs this module (a no-op when the cache is complete); a notebook calls
:func:`use_fallback_fonts` before it plots.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class FontPackage:
    """One Debian font package: the file it ships and the family name matplotlib reads from it."""

    package: str
    file_name: str
    family: str
    covers: str


# In the order matplotlib tries them after the default family.
FALLBACK_FONTS = (
    FontPackage(
        "fonts-wqy-microhei", "wqy-microhei.ttc", "WenQuanYi Micro Hei", "CJK, kana, hangul"
    ),
    FontPackage("fonts-symbola", "Symbola_hint.ttf", "Symbola", "monochrome emoji, symbols"),
)


def font_cache() -> Path:
    """Where the fonts live (outside the repository); ``OFFSETS_FONTS_DIR`` overrides."""
    default = Path.home() / ".cache" / "kafka-offsets-audit" / "fonts"
    return Path(os.environ.get("OFFSETS_FONTS_DIR", default))


def _missing(folder: Path) -> list[FontPackage]:
    return [font for font in FALLBACK_FONTS if not (folder / font.file_name).is_file()]


def fetch(folder: Path | None = None) -> list[FontPackage]:
    """Download and unpack the fallback fonts that ``folder`` lacks; returns those fetched.

    Each font's Debian ``copyright`` file is kept beside it as ``<package>.copyright``."""
    folder = folder or font_cache()
    wanted = _missing(folder)
    if not wanted:
        return []
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="offsets-fonts-") as scratch:
        work = Path(scratch)
        download([font.package for font in wanted], work)
        for font in wanted:
            (deb,) = work.glob(f"{font.package}_*.deb")
            unpacked = work / font.package
            subprocess.run(["dpkg", "-x", str(deb), str(unpacked)], check=True)
            (font_file,) = unpacked.rglob(font.file_name)
            copyright_file = unpacked / "usr/share/doc" / font.package / "copyright"
            shutil.copyfile(copyright_file, folder / f"{font.package}.copyright")
            shutil.copyfile(font_file, folder / font.file_name)
    return wanted


def download(packages: list[str], folder: Path) -> None:
    """``apt-get download`` into ``folder``; once more after ``apt-get update`` (as root) when
    the machine's package lists are missing or stale (a fresh image may ship none)."""
    command = ["apt-get", "download", *packages]
    try:
        subprocess.run(command, cwd=folder, check=True, capture_output=True)
    except subprocess.CalledProcessError:
        if os.geteuid() != 0:
            raise
        subprocess.run(["apt-get", "update", "-qq"], check=True, capture_output=True)
        subprocess.run(command, cwd=folder, check=True, capture_output=True)


def use_fallback_fonts(folder: Path | None = None) -> list[str]:
    """Register the cached fallback fonts with matplotlib and append them to its font family
    list, so a glyph the default font lacks is drawn from the first fallback that has it.
    Returns the packages still missing (``make setup`` fetches them); idempotent."""
    import matplotlib as mpl
    from matplotlib import font_manager

    folder = folder or font_cache()
    missing = _missing(folder)
    families = list(mpl.rcParams["font.family"])
    for font in FALLBACK_FONTS:
        if font in missing:
            continue
        font_manager.fontManager.addfont(str(folder / font.file_name))
        if font.family not in families:
            families.append(font.family)
    mpl.rcParams["font.family"] = families
    return [font.package for font in missing]


def main() -> int:
    """`make setup`'s step: fetch what is missing, once; silent when cached. Exit 2 without apt."""
    folder = font_cache()
    wanted = _missing(folder)
    if not wanted:
        return 0
    names = ", ".join(f"{font.package} ({font.covers})" for font in wanted)
    print(
        f"fonts: fetching {names} from Debian's packages into {folder} (a 3 MB download, once), "
        "so the notebook's charts draw CJK and emoji group ids"
    )
    if not (shutil.which("apt-get") and shutil.which("dpkg")):
        print(
            "fonts: apt-get and dpkg are needed to fetch the chart fonts (Debian or Ubuntu); "
            f"or copy {', '.join(f.file_name for f in wanted)} into {folder}",
            file=sys.stderr,
        )
        return 2
    try:
        fetch(folder)
    except subprocess.CalledProcessError as error:
        detail = (error.stderr or b"").decode(errors="replace").strip().splitlines()
        print(
            f"fonts: {' '.join(error.cmd)} failed: {detail[-1] if detail else error}",
            file=sys.stderr,
        )
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
