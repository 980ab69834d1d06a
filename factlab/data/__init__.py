"""The data layer: case files, public-dataset loaders, splits and the views each consumer reads.

- `cases`: load and validate case JSONL files (schema: datasets/README.md); `validate`: the CLI around it.
- `loaders/`: one module per upstream format family, configured by conf/dataset/<name>.yaml.
- `registry`: `load_dataset(cfg) -> Dataset(name, cases, content_hash)`.
- `splits`: seeded, stratified, leak-free train / val / test; `prepare`: the prepare_data job.
- `views`: DSPy stage examples, classifier rows, SFT and RL rows.
"""
