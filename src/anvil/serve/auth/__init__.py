"""Inbound authentication: who is calling and what they may reach.

Static bearer principals (:mod:`.principals`), JWTs checked against a JWKS (:mod:`.tokens`,
:mod:`.jwks`), grant decisions (:mod:`.grants`), connector and fleet names (:mod:`.naming`) and the
ASGI middleware that puts them in front of the listener (:mod:`.middleware`).

May import :mod:`anvil.serve.mcp` (the tool-provider protocol), never the gateway above it.
"""
