"""Test support: local AWS (moto) and loopback servers. Network traffic stays on 127.0.0.1."""
