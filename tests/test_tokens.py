"""Token counting: the embedded server's tokenizer, its cache, and the fallback estimate."""

from __future__ import annotations

import httpx
import pytest

from lossgate.corpus import code_context
from lossgate.serving.embedded import free_port
from lossgate.tokens import (
    CharEstimate,
    EndpointTokenizer,
    calibrated,
    parse_int_list,
    server_root,
    token_counter,
)


def test_server_root_drops_the_api_prefix():
    assert server_root("http://127.0.0.1:8000/v1/") == "http://127.0.0.1:8000"
    assert server_root("http://host:1") == "http://host:1"


def test_no_endpoint_falls_back_to_the_estimate():
    counter = token_counter(f"http://127.0.0.1:{free_port()}/v1")
    assert isinstance(counter, CharEstimate)
    assert token_counter(None).name == "char-estimate"


@pytest.mark.embedded
def test_endpoint_count_matches_the_servers_token_list(embedded_f16):
    counter = token_counter(embedded_f16.base_url)
    assert isinstance(counter, EndpointTokenizer)
    text = code_context(20_000, seed=5)
    tokens = httpx.post(
        server_root(embedded_f16.base_url) + "/extras/tokenize", json={"input": text}, timeout=60
    ).json()["tokens"]
    assert counter.count(text) == len(tokens)
    calls = counter.calls
    assert counter.count(text) == len(tokens)
    assert counter.calls == calls, "a repeated text is answered from the cache"


@pytest.mark.embedded
def test_calibrated_estimate_tracks_the_real_tokenizer_on_other_code(embedded_f16):
    counter = EndpointTokenizer(embedded_f16.base_url).probe()
    estimate = calibrated(counter, code_context(50_000, seed=1))
    other = code_context(50_000, seed=2)
    assert estimate.count(other) == pytest.approx(counter.count(other), rel=0.15)
    assert estimate.name == f"char-estimate({counter.name})"


def test_token_counts_parse_as_every_suite_takes_them():
    assert parse_int_list("0, 4000,16000") == (0, 4000, 16000)
    assert parse_int_list("1k,128k") == (1024, 131072)
    assert parse_int_list(4000) == (4000,)
    assert parse_int_list([0, 4000, 4000]) == (0, 4000)  # repeats would repeat sample ids


@pytest.mark.parametrize("bad", ["-1", "4k4", "", "lots"])
def test_a_bad_token_count_names_the_setting(bad):
    with pytest.raises(ValueError, match="context_tokens"):
        parse_int_list(bad, "context_tokens")
