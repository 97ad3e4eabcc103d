"""Records (gligabao/base/record.py): the classes a `gb search` loads are no dataclasses,
yet each keeps what its dataclass gave: its fields (those its class declares, in that
order, each holding what its parameter was given), equality, hashing and repr by them,
frozen where it was, `replace`, copies."""

from __future__ import annotations

import copy
import inspect
import pickle

import pytest

from gligabao.base.record import Frozen, Record
from gligabao.config import Config, Price, Setting
from gligabao.llm.endpoint import Crew, Endpoints, Failure, Flight, TooLarge
from gligabao.search.hybrid import Candidates, Fusion, Hit
from gligabao.store.datasets import Dataset
from gligabao.store.vector_rows import VectorRow

RECORDS = [
    Setting,
    Price,
    Config,
    Dataset,
    VectorRow,
    Fusion,
    Hit,
    Candidates,
    Endpoints,
    Flight,
    Crew,
    Failure,
    TooLarge,
]
# Values that __init__ checks: any others are taken as given.
_CHECKED = {Fusion: {"method": "rrf", "vector_weight": 0.25, "rrf_k": 7, "guard": False}}


def _hit(**changes: object) -> Hit:
    fields = (1.0, {"bm25": 1}, 7, 3, "notes.md", 0, 10, 1, 2, None, "text", None)
    return Hit(*fields).replace(**changes) if changes else Hit(*fields)


@pytest.mark.parametrize("cls", RECORDS, ids=lambda c: c.__name__)
def test_its_fields_are_those_its_class_declares(cls: type[Record]) -> None:
    assert cls._fields == tuple(inspect.get_annotations(cls))


@pytest.mark.parametrize("cls", RECORDS, ids=lambda c: c.__name__)
def test_each_field_holds_what_its_parameter_was_given(cls: type[Record]) -> None:
    given = _CHECKED.get(cls) or {name: object() for name in cls._fields}
    made = cls(**given)
    assert all(getattr(made, name) is value for name, value in given.items())
    assert made.as_dict() == given


def test_equal_hashed_and_shown_by_its_fields_as_a_dataclass() -> None:
    one = Dataset(1, "default", "m", 8, "2026-01-01")
    assert one == Dataset(1, "default", "m", 8, "2026-01-01", None)
    assert hash(one) == hash(Dataset(1, "default", "m", 8, "2026-01-01"))
    assert one != Dataset(2, "default", "m", 8, "2026-01-01")
    assert one != (1, "default", "m", 8, "2026-01-01", None)  # another class: never equal
    assert repr(one) == (
        "Dataset(id=1, name='default', embedding_model='m', embedding_dimensions=8, "
        "created_at='2026-01-01', search_settings=None)"
    )
    assert repr(Price(0.15, 0.6)) == "Price(input=0.15, output=0.6, cached_input=None)"


def test_a_frozen_record_cannot_change() -> None:
    price = Price(0.15, 0.6)
    with pytest.raises(AttributeError):
        price.input = 1.0  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del price.output
    with pytest.raises(AttributeError):
        Config({}, {}).extra = 1  # type: ignore[attr-defined]
    assert isinstance(price, Frozen) and not hasattr(price, "__dict__")  # slots kept


def test_replace_copy_and_pickle_make_an_equal_record() -> None:
    hit = _hit()
    moved = hit.replace(ranks={"bm25": 1, "rerank": 2})
    assert moved.ranks == {"bm25": 1, "rerank": 2} and moved.text == hit.text
    assert hit.ranks == {"bm25": 1}  # the original as it was
    price = Price(0.15, 0.6, 0.075)
    assert copy.copy(price) == price and copy.deepcopy(hit) == hit
    assert pickle.loads(pickle.dumps(price)) == price
    assert pickle.loads(pickle.dumps(Dataset(1, "d", None, None, "t"))).name == "d"


def test_a_hits_line_map_is_neither_compared_nor_shown() -> None:
    assert _hit(line_map=[[1, 2]]) == _hit()
    assert "line_map" not in repr(_hit(line_map=[[1, 2]]))
    assert _hit().locations == {} and _hit().line_map == []  # each its own
    assert _hit().locations is not _hit().locations


def test_a_mutable_record_is_unhashable_and_a_call_is_itself() -> None:
    with pytest.raises(TypeError):
        hash(Candidates("bm25", {}, {}))
    failure = Failure("HTTP 500")
    failure.retryable = True
    assert failure == Failure("HTTP 500", retryable=True)
    first, second = Flight(), Flight()
    assert first != second and first == first and len({first, second}) == 2
    crew = Crew()
    assert crew.flights == set() and crew.flights is not Crew().flights
    assert "crew" not in repr(Flight(crew=crew))
