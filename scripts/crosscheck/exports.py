"""Reads udgam-ci's exports with the reference tools' own code (issue 52).

  exports.py CARD.md RESULTS.json

CARD.md is a model card whose front matter is `udgam-ci export --format
model-index`; huggingface_hub parses it twice, as the hub's model card
(ModelCard.load: ModelCardData and its eval_results) and through
metadata_load and model_index_to_eval_results. RESULTS.json is `udgam-ci
export --format lm-eval`, read by lm-eval's own table writer (make_table),
its results-file finder and against its declared schema's keys. Prints one
JSON object of what they read; the Go test compares it with the runs.
"""

import dataclasses
import json
import sys

from huggingface_hub import ModelCard
from huggingface_hub.repocard import metadata_load
from huggingface_hub.repocard_data import model_index_to_eval_results
from lm_eval.result_schema import EvalResults
from lm_eval.utils import get_results_filenames, make_table


def main(card_path, results_path):
    card = ModelCard.load(card_path, ignore_metadata_errors=False)
    name, evals = model_index_to_eval_results(metadata_load(card_path)["model-index"])
    from_card = [dataclasses.asdict(e) for e in card.data.eval_results]
    from_meta = [dataclasses.asdict(e) for e in evals]
    if from_card != from_meta or card.data.model_name != name:
        raise SystemExit("ModelCard and metadata_load read the model-index differently")

    with open(results_path, encoding="utf-8") as f:
        results = json.load(f)
    unknown = sorted(set(results) - set(EvalResults.__annotations__))
    out = {
        "model_name": name,
        "eval_results": from_meta,
        "lm_eval": {
            "table": make_table(results),
            "found": get_results_filenames([results_path]),
            "unknown_keys": unknown,
            "results": results["results"],
        },
    }
    json.dump(out, sys.stdout, sort_keys=True, default=str)


if __name__ == "__main__":
    main(*sys.argv[1:3])
