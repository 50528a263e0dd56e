"""Everything a server offers, discovered from feature packages: tools, resources, resource
templates and prompts.

Discovery is explicit: :meth:`Catalog.discover` imports every module of the packages it is
given and collects the module-level specs it finds; nothing registers itself by import side
effect, and a module that defines no feature is reported, not ignored.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from mcp_platform.mcp.prompts import PromptSpec
from mcp_platform.mcp.resources import ResourceSpec, ResourceTemplateSpec
from mcp_platform.mcp.tools import ToolCatalog, ToolSpec, iter_feature_modules

FEATURE_TYPES = (ToolSpec, ResourceSpec, ResourceTemplateSpec, PromptSpec)


@dataclass
class Catalog:
    tools: ToolCatalog = field(default_factory=ToolCatalog)
    resources: dict[str, ResourceSpec] = field(default_factory=dict)
    templates: dict[str, ResourceTemplateSpec] = field(default_factory=dict)
    prompts: dict[str, PromptSpec] = field(default_factory=dict)

    def add(self, spec: Any) -> None:
        if isinstance(spec, ToolSpec):
            self.tools.add(spec)
        elif isinstance(spec, ResourceSpec):
            _add_unique(self.resources, spec.uri, spec, "resource")
        elif isinstance(spec, ResourceTemplateSpec):
            _add_unique(self.templates, spec.name, spec, "resource template")
        elif isinstance(spec, PromptSpec):
            _add_unique(self.prompts, spec.name, spec, "prompt")
        else:
            raise TypeError(f"not a feature spec: {spec!r}")

    @classmethod
    def of(cls, specs: Iterable[Any]) -> Catalog:
        catalog = cls()
        for spec in specs:
            catalog.add(spec)
        return catalog

    @classmethod
    def discover(cls, *packages: ModuleType) -> Catalog:
        """Import every module of each package and collect its module-level feature specs."""
        catalog = cls()
        for module in (module for package in packages for module in iter_feature_modules(package)):
            specs = [value for value in vars(module).values() if isinstance(value, FEATURE_TYPES)]
            if not specs:
                raise ValueError(f"feature module {module.__name__} defines no tool, resource or prompt")
            for spec in specs:
                catalog.add(spec)
        return catalog

    def find_template(self, uri: str) -> tuple[ResourceTemplateSpec, dict[str, str]] | None:
        """The first template (by name) whose pattern matches ``uri``, with its variables."""
        for name in sorted(self.templates):
            variables = self.templates[name].match(uri)
            if variables is not None:
                return self.templates[name], variables
        return None

    @property
    def has_completions(self) -> bool:
        return any(p.completions for p in self.prompts.values()) or any(t.completions for t in self.templates.values())


def _add_unique(registry: dict[str, Any], key: str, spec: Any, kind: str) -> None:
    if key in registry:
        raise ValueError(f"duplicate {kind} {key!r}")
    registry[key] = spec
