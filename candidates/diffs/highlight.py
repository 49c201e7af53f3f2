"""Syntax highlighting of tests and scripts for the pages (Pygments)."""

from django.utils.safestring import SafeString, mark_safe
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import BashLexer, PythonLexer

_FORMATTER = HtmlFormatter(cssclass="code", linenos="table", wrapcode=True)


def python_html(source: str) -> SafeString:
    return mark_safe(highlight(source, PythonLexer(), _FORMATTER))  # Pygments escapes the source.


def bash_html(source: str) -> SafeString:
    return mark_safe(highlight(source, BashLexer(), _FORMATTER))


def stylesheet() -> str:
    return _FORMATTER.get_style_defs(".code")
