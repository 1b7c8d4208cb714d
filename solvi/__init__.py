"""solvi: asyncio-first decision flows over facts that are slow or costly to fetch."""

from __future__ import annotations

from solvi.audit import AuditReport, verify
from solvi.batch import Failed, aask_many, ask_many
from solvi.catalog import Catalog, Part
from solvi.compose import Cascade, Composite, Route, Vote
from solvi.costs import CostBook, MeasuredCosts, PartCost
from solvi.errors import (
    CatalogError,
    CheckpointError,
    PlanError,
    RecordError,
    RequestError,
    RequestIdTaken,
    RouteError,
    SolviError,
)
from solvi.flow import Flow
from solvi.hooks import Hook, RequestEvent, StepEvent, StructlogHook
from solvi.journal import PostgresJournal, SQLiteJournal
from solvi.mistakes import SolviWarning
from solvi.order import FastHead, Head, OrderModel
from solvi.question import UNSET, Fail, Question
from solvi.recovery import Recovery, ResumeRefused
from solvi.replay import ReplayResult, replay
from solvi.response import Answer, Response, Safeguard, Step, Trace
from solvi.serve import asgi
from solvi.storage import PostgresStore, SQLiteStore, Store, open_store
from solvi.strategy import (
    CostStrategist,
    DeterministicStrategist,
    ModelStrategist,
    Strategist,
)
from solvi.system import System

__all__ = [
    "UNSET",
    "Answer",
    "AuditReport",
    "Cascade",
    "Catalog",
    "CatalogError",
    "CheckpointError",
    "Composite",
    "CostBook",
    "CostStrategist",
    "DeterministicStrategist",
    "Fail",
    "Failed",
    "FastHead",
    "Flow",
    "Head",
    "Hook",
    "MeasuredCosts",
    "ModelStrategist",
    "OrderModel",
    "Part",
    "PartCost",
    "PlanError",
    "PostgresJournal",
    "PostgresStore",
    "Question",
    "RecordError",
    "Recovery",
    "ReplayResult",
    "RequestError",
    "RequestEvent",
    "RequestIdTaken",
    "Response",
    "ResumeRefused",
    "Route",
    "RouteError",
    "SQLiteJournal",
    "SQLiteStore",
    "Safeguard",
    "SolviError",
    "SolviWarning",
    "Step",
    "StepEvent",
    "Store",
    "Strategist",
    "StructlogHook",
    "System",
    "Trace",
    "Vote",
    "aask_many",
    "asgi",
    "ask_many",
    "open_store",
    "replay",
    "verify",
]
