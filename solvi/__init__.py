"""solvi: asyncio-first decision flows over facts that are slow or costly to fetch."""

from __future__ import annotations

from solvi.catalog import Catalog, Part
from solvi.costs import CostBook, PartCost
from solvi.errors import CatalogError, PlanError, RecordError, SolviError
from solvi.flow import Flow
from solvi.question import UNSET, Question
from solvi.response import Answer, Response, Safeguard, Step, Trace
from solvi.serve import asgi
from solvi.strategy import DeterministicStrategist, Strategist
from solvi.system import System

__all__ = [
    "UNSET",
    "Answer",
    "Catalog",
    "CatalogError",
    "CostBook",
    "DeterministicStrategist",
    "Flow",
    "Part",
    "PartCost",
    "PlanError",
    "Question",
    "RecordError",
    "Response",
    "Safeguard",
    "SolviError",
    "Step",
    "Strategist",
    "System",
    "Trace",
    "asgi",
]
