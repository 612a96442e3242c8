"""Help pages whose lines can be copied: the wrapping never breaks a word at a hyphen.

click wraps help text with Python's textwrap, which breaks `--xla-flag=--xla_dump_hlo_pass_re=.*` into
`--xla-` and `flag=...`, and `--bad-exit` into `--bad-` and `exit`: a copied line no longer works. The
formatter below hands the wrapper every hyphen as U+2011 (a non-breaking hyphen, one column wide like `-`),
so a word moves to the next line whole, and turns them back into `-` when the page is read out.
"""

from __future__ import annotations

from typing import Sequence

from typer.core import TyperCommand

_HYPHEN, _KEPT = "-", "\u2011"


def _keep(text: str) -> str:
    return text.replace(_HYPHEN, _KEPT)


def _formatter_class():
    base = TyperCommand.context_class.formatter_class

    class UnbrokenWords(base):
        keeps_hyphens = True

        def write_usage(self, prog: str, args: str = "", prefix: str | None = None) -> None:
            super().write_usage(_keep(prog), _keep(args), prefix)

        def write_text(self, text: str) -> None:
            super().write_text(_keep(text))

        def write_dl(self, rows: Sequence[tuple[str, str]], col_max: int = 30, col_spacing: int = 2) -> None:
            super().write_dl([(_keep(a), _keep(b)) for a, b in rows], col_max, col_spacing)

        def getvalue(self) -> str:
            return super().getvalue().replace(_KEPT, _HYPHEN)

    return UnbrokenWords


def install() -> None:
    """Every help page of this process (click's one formatter hook: the context's formatter_class)."""
    context = TyperCommand.context_class
    if not getattr(context.formatter_class, "keeps_hyphens", False):
        context.formatter_class = _formatter_class()
