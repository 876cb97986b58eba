"""The OpenAPI document's board reads, one path per board kind (a drf-spectacular postprocessing
hook, wired in settings).

The views serve `/boards/{board}/...` for every kind, but what a read accepts depends on the kind:
`daily` takes a day as its period, `weekly` an ISO week, `monthly` a month, and the season boards
none. So the document lists each kind's paths with its own `period` (or none), and a client that
sends only what the document allows never gets a 400.
"""

import copy
from typing import Any

from .kinds import KINDS


def board_paths_per_kind(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    paths: dict[str, Any] = result.get("paths", {})
    for path in [p for p in paths if "{board}" in p]:
        item = paths.pop(path)
        for kind in KINDS.values():
            concrete = copy.deepcopy(item)
            for operation in concrete.values():
                if not isinstance(operation, dict) or "operationId" not in operation:
                    continue
                operation["operationId"] = f"{operation['operationId']}_{kind.name}"
                params = []
                for param in operation.get("parameters", []):
                    if param.get("in") == "path" and param.get("name") == "board":
                        continue
                    if param.get("in") == "query" and param.get("name") == "period":
                        if kind.period is None:
                            continue
                        param["schema"] = kind.period.schema()
                        param["description"] = (
                            f"The {kind.period.name}, e.g. `{kind.period.example}`; default: the current one."
                        )
                    params.append(param)
                operation["parameters"] = params
            paths[path.replace("{board}", kind.name)] = concrete
    result["paths"] = dict(sorted(paths.items()))
    return result
