"""Run one of the reference evaluator's entry scripts (preprocess.py, eval.py or
summarize_results.py) unchanged, with each of its modules' judge clients pointed at
the comparison mock under a path naming the module (/ref/<module>/v1), so the mock
knows which metric a request is for without reading the reference's prompts.
Usage: run_reference.py BENCHMARK_DIR SCRIPT [ARGS...]   (mock address: COMPARE_MOCK_URL)"""
import importlib
import os
import runpy
import sys

bench, script = os.path.abspath(sys.argv[1]), sys.argv[2]
base = os.environ["COMPARE_MOCK_URL"].rstrip("/")
os.chdir(bench)
sys.path.insert(0, bench)
from openai import OpenAI  # noqa: E402

for pkg in ("scripts.preprocess", "scripts.evaluation"):
    folder = os.path.join(bench, *pkg.split("."))
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".py") or name == "__init__.py":
            continue
        module = importlib.import_module(f"{pkg}.{name[:-3]}")
        if hasattr(module, "client"):
            module.client = OpenAI(api_key="mock", base_url=f"{base}/ref/{name[:-3]}/v1")
sys.argv = [script] + sys.argv[3:]
runpy.run_path(script, run_name="__main__")
