"""The row layout every backend shares: the stored fields in one order, written and read back alike."""

from __future__ import annotations

from anvil.ledger.base import ROW_FIELDS, LedgerRow, row_from_values, row_values


def test_row_values_follow_the_row_fields_order_and_read_back_to_the_same_row() -> None:
    row = LedgerRow(
        status="completed",
        fingerprint="f" * 64,
        version="v1",
        reservation_id="r",
        started_at=1.5,
        operation_id="payments.refunds.create",
        trace_id="trace_1",
        result_json='{"id":1}',
        response_status=201,
        expires_at=2.5,
        retain_until=3.5,
    )
    values = row_values(row)
    assert values == tuple(getattr(row, name) for name in ROW_FIELDS)
    assert row_from_values("v1", values) == row
