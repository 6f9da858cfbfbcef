"""Where `adws serve` may listen: loopback by default, another host only with TLS or said plainly."""

from __future__ import annotations

from adws.serve.server import Listening, listening


def test_loopback_listens_over_http() -> None:
    assert listening("127.0.0.1", 8765, (None, None), insecure_http=False) == Listening(
        "127.0.0.1", 8765
    )
    assert Listening("::1", 80).url == "http://[::1]:80/"


def test_another_host_needs_tls_or_insecure_http() -> None:
    assert listening("0.0.0.0", 8765, (None, None), insecure_http=False) == (  # noqa: S104
        "--host 0.0.0.0 is reachable from other machines: give --tls-cert and --tls-key, "
        "or --insecure-http to send the session in clear"
    )
    tls = listening("10.0.0.5", 443, ("c.pem", "k.pem"), insecure_http=False)
    assert tls == Listening("10.0.0.5", 443, ("c.pem", "k.pem"))
    assert Listening("10.0.0.5", 443, ("c.pem", "k.pem")).url == "https://10.0.0.5:443/"
    assert listening("box", 80, (None, None), insecure_http=True) == Listening("box", 80)


def test_half_a_tls_pair_or_a_port_out_of_range_is_refused() -> None:
    assert listening("127.0.0.1", 1, ("c.pem", None), insecure_http=False) == (
        "--tls-cert and --tls-key go together: give both, or neither"
    )
    assert listening("127.0.0.1", 70_000, (None, None), insecure_http=False) == (
        "--port 70000 is not a TCP port (1 to 65535)"
    )
