"""Everything a server offers, discovered from feature packages: tools, resources, resource
templates and prompts.

Discovery is explicit: :meth:`Catalog.discover` imports every module of the packages it is
given and collects the decorated functions it finds; nothing registers itself by import side
effect, and a module that defines no feature is reported, not ignored. A feature is registered
where it is defined: a module that imports another's tool (to call it, or re-export it) does not
register it a second time, while two different features of one name are refused.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from mcp_platform.protocol.apps import check_views
from mcp_platform.protocol.decorated import attached, defined_at
from mcp_platform.protocol.prompts import PromptSpec
from mcp_platform.protocol.resources import ResourceSpec, ResourceTemplateSpec
from mcp_platform.protocol.tools import ToolCatalog, ToolSpec, iter_feature_modules

FEATURE_TYPES = (ToolSpec, ResourceSpec, ResourceTemplateSpec, PromptSpec)
FeatureSpec = ToolSpec | ResourceSpec | ResourceTemplateSpec | PromptSpec


def spec_of(value: object) -> FeatureSpec | None:
    """The spec of a decorated feature function (a spec is its own), else None."""
    if isinstance(value, FEATURE_TYPES):
        return value
    spec = attached(value)
    return spec if isinstance(spec, FEATURE_TYPES) else None


@dataclass
class Catalog:
    tools: ToolCatalog = field(default_factory=ToolCatalog)
    resources: dict[str, ResourceSpec] = field(default_factory=dict)
    templates: dict[str, ResourceTemplateSpec] = field(default_factory=dict)
    prompts: dict[str, PromptSpec] = field(default_factory=dict)

    def add(self, value: Any) -> None:
        """A feature: the decorated function, or its spec."""
        spec = spec_of(value)
        if isinstance(spec, ToolSpec):
            self.tools.add(spec)
        elif isinstance(spec, ResourceSpec):
            _add_unique(self.resources, spec.uri, spec, "resource")
        elif isinstance(spec, ResourceTemplateSpec):
            _add_unique(self.templates, spec.name, spec, "resource template")
        elif isinstance(spec, PromptSpec):
            _add_unique(self.prompts, spec.name, spec, "prompt")
        else:
            raise TypeError(f"not a feature (a function decorated with @tool, @resource, @prompt...): {value!r}")

    @classmethod
    def of(cls, features: Iterable[Any]) -> Catalog:
        catalog = cls()
        for feature in features:
            catalog.add(feature)
        catalog.check_views()
        return catalog

    @classmethod
    def discover(cls, *packages: ModuleType) -> Catalog:
        """Import every module of each package and collect its module-level features, each
        once: where it is defined, when that module is one of the packages' too."""
        catalog = cls()
        modules = [module for package in packages for module in iter_feature_modules(package)]
        discovered = {module.__name__ for module in modules}
        registered: set[int] = set()
        for module in modules:
            specs = [spec for spec in map(spec_of, vars(module).values()) if spec is not None]
            if not specs:
                raise ValueError(f"feature module {module.__name__} defines no tool, resource or prompt")
            for spec in specs:
                defined_in = getattr(spec.function, "__module__", module.__name__)
                if (defined_in != module.__name__ and defined_in in discovered) or id(spec) in registered:
                    continue  # imported from another feature module: registered there
                registered.add(id(spec))
                catalog.add(spec)
        catalog.check_views()
        return catalog

    def find_template(self, uri: str) -> tuple[ResourceTemplateSpec, dict[str, str]] | None:
        """The first template (by name) whose pattern matches ``uri``, with its variables."""
        for name in sorted(self.templates):
            variables = self.templates[name].match(uri)
            if variables is not None:
                return self.templates[name], variables
        return None

    @property
    def views(self) -> list[str]:
        """The MCP Apps views served: the ``ui://`` resources, by URI."""
        return sorted(uri for uri, spec in self.resources.items() if spec.is_view)

    def check_views(self) -> None:
        """MCP Apps: ValueError naming each tool whose ``ui://`` view the catalog does not serve
        (checked once every feature is in: a view may be defined in a later module)."""
        specs = [self.tools.get(name) for name in self.tools.names()]
        named = {spec.name: spec.ui.resource_uri for spec in specs if spec is not None and spec.ui is not None}
        check_views(named, self.views)

    @property
    def has_completions(self) -> bool:
        return any(p.completions for p in self.prompts.values()) or any(t.completions for t in self.templates.values())


def _add_unique(registry: dict[str, Any], key: str, spec: Any, kind: str) -> None:
    known = registry.get(key)
    if known is not None:
        raise ValueError(f"duplicate {kind} {key!r}: {defined_at(known.function)} and {defined_at(spec.function)}")
    registry[key] = spec
