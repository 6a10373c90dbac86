"""Downloads from a hub at HF_ENDPOINT with huggingface_hub itself: the judge
of hub/hubtest's fake hub (hub's TestHuggingFaceHubReference).

Reads a JSON list of cases on stdin, each {"name", "repo", "revision",
"token", and "filename" for one file or none for the whole snapshot}, and
writes one JSON object per case to stdout: {"name", "commit", "files":
{path: sha256 of the bytes}} when the download worked, {"name", "error":
the exception's class, "status": the HTTP status} when it failed.
"""

import hashlib
import json
import os
import sys
import tempfile

from huggingface_hub import hf_hub_download, snapshot_download
from huggingface_hub.errors import HfHubHTTPError


def digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def run(case, cache):
    kw = dict(repo_id=case["repo"], revision=case["revision"], cache_dir=cache, token=case.get("token") or False)
    if case.get("filename"):
        path = hf_hub_download(filename=case["filename"], **kw)
        # .../snapshots/COMMIT/FILENAME
        root = path[: -len(case["filename"]) - 1]
        return {"commit": os.path.basename(root), "files": {case["filename"]: digest(path)}}
    root = snapshot_download(**kw)
    files = {}
    for d, _, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            files[os.path.relpath(p, root)] = digest(p)
    return {"commit": os.path.basename(root), "files": files}


def main():
    cases = json.load(sys.stdin)
    for case in cases:
        # Each case gets its own cache: nothing one download leaves may help another.
        with tempfile.TemporaryDirectory() as cache:
            try:
                out = run(case, cache)
            except HfHubHTTPError as e:
                status = e.response.status_code if e.response is not None else None
                out = {"error": type(e).__name__, "status": status, "message": str(e).splitlines()[0]}
            except Exception as e:  # the client refused the answer itself
                out = {"error": type(e).__name__, "message": str(e)[:500]}
        out["name"] = case["name"]
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
