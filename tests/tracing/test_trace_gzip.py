"""Compressed traces: `qpn build run.jsonl.gz` reads a gzip file as its text (the magic
bytes decide, not the name); a damaged or cut-short one is a located error, and in
lenient mode the events before the damage are kept."""
import gzip

import pytest

from qpn.frontends.analyze.synth import batch_trace, write
from qpn.frontends.trace import TraceError, read_trace


@pytest.fixture
def plain(tmp_path):
    path = tmp_path / "b.jsonl"
    write(batch_trace(tasks=400, workers=2), str(path))
    return path


def test_a_gzip_trace_reads_as_its_text(plain, tmp_path):
    gz = tmp_path / "b.trace"                      # any name: the magic bytes decide
    gz.write_bytes(gzip.compress(plain.read_bytes()))
    a, b = read_trace(str(plain)), read_trace(str(gz))
    assert len(a.events) > 400 and b.events == a.events and b.header == a.header


def test_a_cut_short_gzip_trace_is_a_located_error(plain, tmp_path):
    data = gzip.compress(plain.read_bytes())
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(data[:len(data) * 2 // 3])
    with pytest.raises(TraceError, match=r"cut\.jsonl\.gz:\d+: error: the compressed trace is "
                                         r"damaged or cut short"):
        read_trace(str(cut))
    tr = read_trace(str(cut), strict=False)
    assert 0 < len(tr.events) < len(read_trace(str(plain)).events)
    assert not tr.complete and "damaged or cut short" in tr.warnings[-1]
