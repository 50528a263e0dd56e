"""The stream's item images, in the store's wire form, and the codec that reads them.

Images arrive in the store's wire form and stay in it: the diff compares them without converting
(equal wire values are equal items) and the audit log stores them verbatim. The use case reads
them only through an :class:`ImageCodec`, so it never knows the wire format;
:mod:`mcp_platform.adapters.dynamodb.stream_images` is the DynamoDB JSON one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

WireValue = Mapping[str, Any]
"""One attribute value of an item image, as the stream delivered it (opaque to the use case)."""
WireImage = Mapping[str, WireValue]
"""An item image: attribute name -> wire value."""


class ImageCodec(Protocol):
    """Reading wire values: decoding, list structure and type, and which lists grow unbounded."""

    @property
    def summarised_lists(self) -> frozenset[str]:
        """Attributes whose list changes are summarised (appends counted), never copied whole."""
        ...

    def to_plain(self, value: WireValue) -> Any:
        """The value as Python (numbers as Decimal, sets as sets; binary is bytes-convertible)."""
        ...

    def list_items(self, value: WireValue) -> Sequence[WireValue] | None:
        """The items of a list value; None when the value is not a list."""
        ...

    def kind(self, value: WireValue) -> str:
        """A short name of the value's type, kept in summaries of values too large to copy."""
        ...
