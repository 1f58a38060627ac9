"""The notebook's charts draw non-Latin and emoji group ids with real glyphs, not empty boxes.

Matplotlib says "Glyph N (...) missing from font(s) ..." for every character no font in its
family list has; the fallback fonts of `make setup` (offsets_lib.tools.fonts) must leave none.
"""

from __future__ import annotations

import io
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from offsets_lib.tools import fonts

GROUP_IDS = ["订单-消费者", "платежи-группа", "مجموعة-الطلبات", "orders-🚀-✅", "plain-latin"]


def _glyph_warnings() -> list[str]:
    """Draw the notebook's lag chart shape with GROUP_IDS as bar labels; the glyph warnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig, ax = plt.subplots(figsize=(9, 3))
        ax.barh(GROUP_IDS, [5, 4, 3, 2, 1], color="tab:red")
        ax.set_title(f"Lag by group: {GROUP_IDS[0]}")
        fig.savefig(io.BytesIO(), format="png", dpi=90, bbox_inches="tight")
        plt.close(fig)
    return sorted({str(w.message) for w in caught if "missing from font" in str(w.message)})


def test_without_fallbacks_cjk_and_emoji_are_missing() -> None:
    """The check below can fail: DejaVu Sans alone lacks the CJK and emoji glyphs."""
    with matplotlib.rc_context({"font.family": ["DejaVu Sans"]}):
        missing = _glyph_warnings()
    missing_chars = {m.split("(")[1].split(")")[0] for m in missing}
    assert missing_chars == {
        "\\N{CJK UNIFIED IDEOGRAPH-8BA2}",
        "\\N{CJK UNIFIED IDEOGRAPH-5355}",
        "\\N{CJK UNIFIED IDEOGRAPH-6D88}",
        "\\N{CJK UNIFIED IDEOGRAPH-8D39}",
        "\\N{CJK UNIFIED IDEOGRAPH-8005}",
        "\\N{ROCKET}",
        "\\N{WHITE HEAVY CHECK MARK}",
    }


def test_fallback_fonts_draw_cjk_arabic_cyrillic_and_emoji() -> None:
    with matplotlib.rc_context({"font.family": ["DejaVu Sans"]}):
        assert fonts.use_fallback_fonts() == [], "run `make setup` (it fetches the chart fonts)"
        assert matplotlib.rcParams["font.family"] == [
            "DejaVu Sans",
            "WenQuanYi Micro Hei",
            "Symbola",
        ]
        assert _glyph_warnings() == []


def test_use_fallback_fonts_names_what_is_missing(tmp_path) -> None:
    with matplotlib.rc_context({"font.family": ["DejaVu Sans"]}):
        assert fonts.use_fallback_fonts(tmp_path) == ["fonts-wqy-microhei", "fonts-symbola"]
        assert matplotlib.rcParams["font.family"] == ["DejaVu Sans"]


def test_download_updates_the_package_lists_once_when_they_are_missing(
    tmp_path, monkeypatch
) -> None:
    import subprocess

    calls: list[list[str]] = []

    def run(command: list[str], **_: object) -> None:
        calls.append(command)
        if command[:2] == ["apt-get", "download"] and len(calls) == 1:
            raise subprocess.CalledProcessError(100, command, stderr=b"E: Unable to locate")

    monkeypatch.setattr(fonts.subprocess, "run", run)
    monkeypatch.setattr(fonts.os, "geteuid", lambda: 0)
    fonts.download(["fonts-symbola"], tmp_path)
    assert calls == [
        ["apt-get", "download", "fonts-symbola"],
        ["apt-get", "update", "-qq"],
        ["apt-get", "download", "fonts-symbola"],
    ]
