"""The reference benchmark job: one node of an AWS Batch (multi-node parallel) job.

It trains a data-parallel MLP on scikit-learn's bundled digits (no download), either
collectively (DDP) or with parameter servers (torch.distributed.rpc), logs MLPerf
:::MLLOG lines, samples GPU memory with nvidia-smi when there is a GPU, and uploads its
logs and then its node manifest to the run folder in S3.
"""
