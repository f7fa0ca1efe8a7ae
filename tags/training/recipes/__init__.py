"""Training recipes, selected by ``recipe:`` in the config (timm-style registry)."""

from tags.training.recipes.base import (
    Recipe,
    StepContext,
    StepOutput,
    get_recipe,
    list_recipes,
    register_recipe,
)
from tags.training.recipes.pretrain import PretrainRecipe
from tags.training.recipes.tags_dc import TagsDCRecipe
from tags.training.recipes.vse import VSERecipe

__all__ = [
    "PretrainRecipe",
    "Recipe",
    "StepContext",
    "StepOutput",
    "TagsDCRecipe",
    "VSERecipe",
    "get_recipe",
    "list_recipes",
    "register_recipe",
]
