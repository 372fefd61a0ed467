"""The A2A Agent Card: the 1.0 card, with the 0.3 connection keys merged in."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["build_agent_card"]


def _skill_fields(skill: Any) -> tuple[str, str | None]:
    if isinstance(skill, Mapping):
        return str(skill["name"]), skill.get("description")
    return str(skill.name), getattr(skill, "description", None)


def build_agent_card(
    cfg: Mapping[str, Any] | None,
    skills: Iterable[Any],
    url: str,
    *,
    auth: bool = False,
    oauth: Mapping[str, Mapping[str, Any]] | None = None,
    oauth_scopes: Sequence[str] = (),
) -> dict[str, Any]:
    """The Agent Card every A2A client accepts: the 1.0 card (interfaces for 1.0 and 0.3) with
    the 0.3 connection keys merged in.

    `skills` are objects or dicts with `name`/`description` (or a name→skill mapping), `url`
    the endpoint's base URL, `auth` whether a bearer token guards the agent. `oauth` holds the
    security schemes (by name) of an agent that takes OAuth access tokens: each is one way in,
    listed before the bearer and needing `oauth_scopes`.
    """
    cfg = cfg or {}
    if isinstance(skills, Mapping):
        skills = skills.values()

    def text(key: str, default: str) -> str:
        got = cfg.get(key)
        return got if isinstance(got, str) and got else default

    description = text("description", "A toolnexus agent.")
    listed = cfg.get("skills")
    wanted = None if listed is None else set(listed)
    entries = []
    for skill in skills:
        name, skill_description = _skill_fields(skill)
        if wanted is None or name in wanted:
            entries.append(
                {"id": name, "name": name, "description": skill_description or name, "tags": [name]}
            )
    if not entries:
        entries = [
            {"id": "general", "name": "general", "description": description, "tags": ["general"]}
        ]
    endpoint = url if url.endswith("/") else url + "/"
    card: dict[str, Any] = {
        "name": text("name", "toolnexus-agent"),
        "description": description,
        "version": text("version", "0.1.0"),
    }
    if cfg.get("provider") is not None:
        card["provider"] = cfg["provider"]
    card["supportedInterfaces"] = [
        {"url": endpoint, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        {"url": endpoint, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
    ]
    card["capabilities"] = {"streaming": True, "pushNotifications": False}
    schemes: dict[str, Any] = {}
    requirements: list[dict[str, Any]] = []
    legacy_requirements: list[dict[str, Any]] = []
    if auth:
        schemes["bearer"] = {
            "httpAuthSecurityScheme": {"scheme": "Bearer"},
            "type": "http",
            "scheme": "Bearer",
        }
    scopes = list(oauth_scopes)
    for name, scheme in (oauth or {}).items():
        schemes[name] = dict(scheme)
        requirements.append({"schemes": {name: {"list": scopes} if scopes else {}}})
        legacy_requirements.append({name: scopes})
    if auth:
        requirements.append({"schemes": {"bearer": {}}})
        legacy_requirements.append({"bearer": []})
    if schemes:
        card["securitySchemes"] = schemes
        card["securityRequirements"] = requirements
    card["defaultInputModes"] = ["text/plain"]
    card["defaultOutputModes"] = ["text/plain"]
    card["skills"] = entries
    card["url"] = endpoint
    card["preferredTransport"] = "JSONRPC"
    card["protocolVersion"] = "0.3.0"
    if legacy_requirements:
        card["security"] = legacy_requirements
    return card
