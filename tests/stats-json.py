#!/usr/bin/env python3
"""The stats-json-* tests' reader of --stats=json output (ferry(1), STATISTICS).

The lines of FILE that begin with '{' are --stats=json's objects (the rest
are -v's lines); each must parse as one JSON object, or this exits 1.

  stats-json.py count FILE                 how many objects
  stats-json.py get FILE INDEX PATH...     each PATH (a.b.0.c) of object INDEX
                                           (0 the first, -1 the last), one a line
"""
import json
import sys


def objects(path):
    found = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.startswith("{"):
                continue
            try:
                obj = json.loads(line)
            except ValueError as e:
                sys.exit(f"{path}:{n}: not JSON ({e}): {line!r}")
            if not isinstance(obj, dict):
                sys.exit(f"{path}:{n}: not an object: {line!r}")
            found.append(obj)
    return found


def get(obj, path):
    for key in path.split("."):
        if isinstance(obj, list):
            obj = obj[int(key)]
        elif isinstance(obj, dict) and key in obj:
            obj = obj[key]
        else:
            sys.exit(f"no {path} in {json.dumps(obj)}")
    return obj


def main():
    cmd, path = sys.argv[1], sys.argv[2]
    objs = objects(path)
    if cmd == "count":
        print(len(objs))
    elif cmd == "get":
        if not objs:
            sys.exit(f"{path}: no JSON object")
        obj = objs[int(sys.argv[3])]
        for p in sys.argv[4:]:
            v = get(obj, p)
            print(json.dumps(v) if isinstance(v, (dict, list, bool)) or v is None else v)
    else:
        sys.exit(__doc__)


main()
