"""Rows a user job reads through `ray.train.get_dataset_shard`, recorded.

With `workload.row_id` naming a column that holds each row's id, the shard a
worker gets is wrapped so that every pass over it (an `iter_batches`,
`iter_torch_batches`, `iter_rows` or `materialize`) counts as one epoch and
the ids of the rows it yields are handed to the recorder, which puts them on
the next step (a step of a user job is one `ray.train.report`). The
`shard_reassignment` property then judges the job as it judges the reference
workload on Ray Data: no row read twice by the ranks within an epoch.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, List


def ids_of(batch: Any, column: str) -> List[Any]:
    """The ids of a batch in any of Ray Data's formats (dict of arrays or
    tensors, pandas, pyarrow) or of one row (a dict of scalars)."""
    if isinstance(batch, dict):
        values = batch[column]
    elif hasattr(batch, "column_names") and hasattr(batch, "column"):      # pyarrow.Table
        return batch.column(column).to_pylist()
    else:                                                                   # pandas.DataFrame
        values = batch[column]
    if hasattr(values, "tolist"):
        out = values.tolist()
        return out if isinstance(out, list) else [out]
    return list(values) if isinstance(values, (list, tuple)) else [values]


class RecordedShard:
    """A DataIterator that reports the row ids it yields; everything else is the shard's own."""

    def __init__(self, inner: Any, column: str, new_pass: Callable[[], int],
                 consume: Callable[[List[Any], int], None]):
        self._inner, self._column, self._new_pass, self._consume = inner, column, new_pass, consume

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def _recorded(self, batches: Iterable[Any]) -> Iterator[Any]:
        epoch = self._new_pass()
        for b in batches:
            self._consume(ids_of(b, self._column), epoch)
            yield b

    def iter_batches(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        return self._recorded(self._inner.iter_batches(*args, **kwargs))

    def iter_torch_batches(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        return self._recorded(self._inner.iter_torch_batches(*args, **kwargs))

    def iter_rows(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        return self._recorded(self._inner.iter_rows(*args, **kwargs))

    def materialize(self, *args: Any, **kwargs: Any) -> Any:
        ds = self._inner.materialize(*args, **kwargs)
        self._consume(ds.select_columns([self._column]).to_pandas()[self._column].tolist(), self._new_pass())
        return ds
