"""The harness recipes, by name: one module per harness (`base` says what a recipe holds)."""

from __future__ import annotations

from . import claude_code, codex, gemini_cli, mini_swe_agent, opencode, pi
from .base import HarnessRecipe

RECIPES: dict[str, HarnessRecipe] = {
    recipe.name: recipe
    for recipe in (
        mini_swe_agent.RECIPE,
        claude_code.RECIPE,
        codex.RECIPE,
        opencode.RECIPE,
        pi.RECIPE,
        gemini_cli.RECIPE,
    )
}

__all__ = ["RECIPES", "HarnessRecipe"]
